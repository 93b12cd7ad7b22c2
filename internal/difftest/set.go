package difftest

import (
	"math/rand/v2"
	"strconv"
)

// setMember returns a member: a few integers and strings, so that commands meet and sets
// go from intset to hashtable and back by SPOP's rebuilt rest; now and then an integer's
// look-alike or a long one.
func setMember(r *rand.Rand) string {
	switch r.IntN(12) {
	case 0:
		return Pick(r, "01", "-0", "+1", "1.0", " 1", "9223372036854775807", "9223372036854775808", "-9223372036854775808")
	case 1, 2, 3, 4, 5:
		return strconv.Itoa(r.IntN(12) - 2)
	case 6:
		return Value(r)
	}
	return string(rune('a' + r.IntN(8)))
}

// setMembers returns one to four members.
func setMembers(r *rand.Rand) []string {
	out := make([]string, 1+r.IntN(4))
	for i := range out {
		out[i] = setMember(r)
	}
	return out
}

// manyMembers returns enough members to pass set-max-listpack-entries (128) and now and
// then set-max-intset-entries (512): integers only, or with a string.
func manyMembers(r *rand.Rand) []string {
	n := 100 + r.IntN(60)
	if r.IntN(4) == 0 {
		n = 500 + r.IntN(30)
	}
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(r.IntN(2*n) - 20)
	}
	if r.IntN(3) == 0 {
		out[r.IntN(n)] = "s" + strconv.Itoa(r.IntN(5))
	}
	return out
}

// setKeys returns one to three keys.
func setKeys(r *rand.Rand) []string {
	out := make([]string, 1+r.IntN(3))
	for i := range out {
		out[i] = Key(r)
	}
	return out
}

// popKey holds a set only SPOP and SRANDMEMBER change and SCARD reads: their picks are
// random, so the members it keeps differ between the servers, but not how many.
const popKey = "sp"

// Set draws the set commands, with now and then another type's command, DEL or EXPIRE
// on the same keys (WRONGTYPE).
func Set(r *rand.Rand) Cmd {
	k := Key(r)
	switch r.IntN(41) {
	case 0, 1, 2, 3:
		return cmd(append([]string{"SADD", k}, setMembers(r)...)...)
	case 4:
		return cmd(append([]string{"SADD", k}, manyMembers(r)...)...)
	case 5, 6:
		return cmd(append([]string{"SREM", k}, setMembers(r)...)...)
	case 7, 8:
		return cmd("SISMEMBER", k, setMember(r))
	case 9:
		return cmd(append([]string{"SMISMEMBER", k}, setMembers(r)...)...)
	case 10, 11:
		return Cmd{Args: []string{"SMEMBERS", k}, Unordered: true}
	case 12:
		return cmd("SCARD", k)
	case 13:
		return cmd("SMOVE", k, Key(r), setMember(r))
	case 14, 15:
		return Cmd{Args: append([]string{Pick(r, "SINTER", "SUNION", "SDIFF")}, setKeys(r)...), Unordered: true}
	case 16, 17:
		return cmd(append([]string{Pick(r, "SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"), k}, setKeys(r)...)...)
	case 18:
		keys := setKeys(r)
		numkeys := strconv.Itoa(len(keys))
		switch r.IntN(8) {
		case 0:
			numkeys = Pick(r, "0", "-1", "abc", "4", "9223372036854775808")
		}
		args := append([]string{"SINTERCARD", numkeys}, keys...)
		switch r.IntN(4) {
		case 0:
			args = append(args, Pick(r, "LIMIT", "limit"), Int(r, 0, 3))
		case 1:
			args = append(args, Pick(r, "LIMIT", "LIMITS", "0"))
		}
		return cmd(args...)
	case 19, 20:
		// Every member at once: the reply is the whole set, and the key goes.
		return Cmd{Args: []string{"SPOP", k, Pick(r, "1000", "0")}, Unordered: true}
	case 21:
		return cmd("SPOP", k, Pick(r, "-1", "abc", "1.5", "9223372036854775808", ""))
	case 22:
		return cmd("SPOP", k, "1", "2")
	case 23, 24:
		args := []string{"SRANDMEMBER", k}
		if r.IntN(4) != 0 {
			args = append(args, randCount(r, false))
		}
		if r.IntN(20) == 0 {
			args = append(args, "1")
		}
		return Cmd{Args: args, Shape: true}
	case 25, 26:
		switch r.IntN(4) {
		case 0:
			return cmd(append([]string{"SUNIONSTORE", popKey}, setKeys(r)...)...)
		case 1:
			return cmd("SCARD", popKey)
		case 2:
			return Cmd{Args: []string{"SRANDMEMBER", popKey, randCount(r, false)}, Shape: true}
		}
		args := []string{"SPOP", popKey}
		if r.IntN(2) == 0 {
			args = append(args, strconv.Itoa(r.IntN(8)))
		}
		return Cmd{Args: args, Shape: true}
	case 27, 28:
		cursor, compare := scanCursor(r)
		args := []string{"SSCAN", k, cursor}
		var count bool
		for range r.IntN(3) {
			if r.IntN(2) == 0 {
				args = append(args, Pick(r, "MATCH", "match"), Pick(r, "a*", "*", "[a-c]", "?", "1*", "x*", "-*", "[", "\\a"))
			} else {
				args = append(args, Pick(r, "COUNT", "count"), Pick(r, "1000", "5000", "0", "-1", "abc"))
				count = true
			}
		}
		if r.IntN(20) == 0 {
			args = append(args, Pick(r, "COUNT", "TYPE", "NOVALUES", "MATCH"))
		}
		if !count {
			if r.IntN(10) == 0 {
				compare = false // Redis scans a hashtable 10 at a time
			} else {
				args = append(args, "COUNT", "5000") // a hashtable scanned whole, as a set here always is
			}
		}
		return Cmd{Args: args, Unordered: true, Scan: true, Skip: !compare}
	case 29:
		return cmd("OBJECT", "ENCODING", k)
	case 30:
		return cmd("SET", k, Value(r))
	case 31:
		return cmd("DEL", k)
	case 32:
		return cmd("EXPIRE", k, Int(r, 100, 1000))
	case 33:
		return cmd("TYPE", k)
	case 34:
		return diffOtherType(r, k)
	case 35:
		return cmd("SCAN", "0", "COUNT", "1000", "TYPE", "set", "MATCH", k)
	case 36:
		return cmd(Pick(r, "COPY", "RENAME"), k, Key(r))
	case 37:
		// Intsets cross their limit often at a small one.
		return cmd("CONFIG", "SET", "set-max-intset-entries", Pick(r, "0", "3", "8", "512"))
	}
	return cmd(Pick(r, "SADD", "SREM", "SISMEMBER", "SMISMEMBER", "SCARD", "SMOVE", "SINTERSTORE", "SINTERCARD", "SSCAN", "SCARD"), k) // arity errors, and SCARD
}
