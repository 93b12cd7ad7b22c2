package server

import (
	"errors"
	"strings"

	"github.com/throttledhq/throttled/gcra"
	"github.com/throttledhq/throttled/keyspace"
)

// codedError is an error whose reply starts with its own code instead of ERR.
type codedError struct{ code, msg string }

func (e *codedError) Error() string { return e.code + " " + e.msg }

var (
	// errNoAuth is a command before AUTH on a server with requirepass.
	errNoAuth = &codedError{"NOAUTH", "Authentication required."}
	// errWrongPass is AUTH with the wrong password.
	errWrongPass = &codedError{"WRONGPASS", "invalid username-password pair or user is disabled."}
	// errNoProto is HELLO with a protocol version other than 2 or 3.
	errNoProto = &codedError{"NOPROTO", "unsupported protocol version"}
	// errSyntax is an argument list that does not parse.
	errSyntax = errors.New("syntax error")
	// errNotInteger is an argument or value that is not a 64-bit integer.
	errNotInteger = errors.New("value is not an integer or out of range")
	// errNoSuchKey is RENAME's missing source, LSET's missing list.
	errNoSuchKey = errors.New("no such key")
	// errOverflow is an increment that leaves int64.
	errOverflow = errors.New("increment or decrement would overflow")
	// errNotFloat is an argument or value that is not a number as Redis's string2ld reads one.
	errNotFloat = errors.New("value is not a valid float")
	// errFloatOverflow is a float increment whose result is infinite or not a number.
	errFloatOverflow = errors.New("increment would produce NaN or Infinity")
)

// errorText turns a handler's error into the RESP error line's text; the
// one place where Go errors become what clients read.
func errorText(err error) string {
	var ge *gcra.Error
	var ce *codedError
	switch {
	case errors.Is(err, keyspace.ErrWrongType):
		return "WRONGTYPE Operation against a key holding the wrong kind of value"
	case errors.As(err, &ge):
		return ge.Text
	case errors.As(err, &ce):
		return ce.Error()
	}
	return "ERR " + err.Error()
}

// unknownCommand is Redis's error for a name not in the table.
func unknownCommand(args [][]byte) error {
	var b strings.Builder
	b.WriteString("unknown command '")
	b.WriteString(truncate(args[0], 128))
	b.WriteString("', with args beginning with: ")
	for _, a := range args[1:] {
		if b.Len() > 1024 {
			break
		}
		b.WriteString("'")
		b.WriteString(truncate(a, 128))
		b.WriteString("' ")
	}
	return errors.New(b.String())
}

// unknownSubcommand is Redis's error for CLIENT, CONFIG or COMMAND with an unknown subcommand.
func unknownSubcommand(sub []byte, parent string) error {
	return errors.New("unknown subcommand '" + truncate(sub, 128) + "'. Try " + parent + " HELP.")
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return sanitize(string(b))
}

// sanitize keeps a client's bytes from breaking a reply line.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}
