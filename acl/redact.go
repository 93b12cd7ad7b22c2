package acl

import "bytes"

// redactedArg stands in SLOWLOG and MONITOR for an argument that holds a secret.
var redactedArg = []byte("(redacted)")

// sensitiveConfig are the parameters whose values CONFIG SET hides, as Redis 7.0's
// SENSITIVE_CONFIG ones.
var sensitiveConfig = map[string]bool{"requirepass": true, "masterauth": true, "masteruser": true}

// Redact returns args with the arguments Redis 7.0 redacts from SLOWLOG and MONITOR replaced
// by "(redacted)", and no others: AUTH's arguments, HELLO's AUTH username and password,
// ACL SETUSER's from the user's name on, the values of CONFIG SET's sensitive parameters,
// and MIGRATE's AUTH and AUTH2 credentials. (Redis leaves an AUTH of more than two
// arguments, a syntax error, unredacted; here it is redacted all the same.) args is
// returned itself when nothing is hidden, else a copy.
func Redact(args [][]byte) [][]byte {
	var hide func(i int) bool
	switch {
	case equalFold(args[0], "auth"):
		hide = func(i int) bool { return i >= 1 }
	case equalFold(args[0], "hello"):
		hide = helloSecrets(args)
	case equalFold(args[0], "acl") && len(args) >= 3 && equalFold(args[1], "setuser"):
		hide = func(i int) bool { return i >= 2 }
	case equalFold(args[0], "config") && len(args) >= 2 && equalFold(args[1], "set"):
		hide = func(i int) bool {
			return i >= 3 && i%2 == 1 && sensitiveConfig[string(bytes.ToLower(args[i-1]))]
		}
	case equalFold(args[0], "migrate"):
		hide = migrateSecrets(args)
	default:
		return args
	}
	var out [][]byte
	for i := range args {
		if hide(i) {
			if out == nil {
				out = append([][]byte(nil), args...)
			}
			out[i] = redactedArg
		}
	}
	if out == nil {
		return args
	}
	return out
}

// helloSecrets returns which arguments of HELLO [protover [AUTH username password]
// [SETNAME name]] are AUTH's, read as Redis reads the options.
func helloSecrets(args [][]byte) func(int) bool {
	hidden := map[int]bool{}
	for j := 2; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case equalFold(args[j], "auth") && more >= 2:
			hidden[j+1], hidden[j+2] = true, true
			j += 2
		case equalFold(args[j], "setname") && more >= 1:
			j++
		default:
			return func(i int) bool { return hidden[i] }
		}
	}
	return func(i int) bool { return hidden[i] }
}

// migrateSecrets returns which arguments of MIGRATE host port key db timeout [COPY]
// [REPLACE] [AUTH password | AUTH2 username password] [KEYS key ...] are credentials.
func migrateSecrets(args [][]byte) func(int) bool {
	hidden := map[int]bool{}
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case equalFold(args[j], "auth") && more >= 1:
			hidden[j+1] = true
			j++
		case equalFold(args[j], "auth2") && more >= 2:
			hidden[j+1], hidden[j+2] = true, true
			j += 2
		case equalFold(args[j], "keys"):
			j = len(args)
		}
	}
	return func(i int) bool { return hidden[i] }
}

// equalFold reports whether b is the lower-case word, ignoring ASCII case.
func equalFold(b []byte, lower string) bool { return bytes.EqualFold(b, []byte(lower)) }
