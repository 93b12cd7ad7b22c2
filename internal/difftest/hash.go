package difftest

import (
	"math/rand/v2"
	"strconv"
)

// hashValue returns a hash value: a member-like string, now and then a float in any of the
// forms HINCRBYFLOAT reads, or one it refuses.
func hashValue(r *rand.Rand) string {
	if r.IntN(5) == 0 {
		return hashFloat(r)
	}
	return Value(r)
}

// hashFloat returns a HINCRBYFLOAT increment, now and then one at the edges of long double.
func hashFloat(r *rand.Rand) string {
	if r.IntN(8) == 0 {
		return Pick(r, "0.1", "0.2", "1e17", "3.0e3", "0x1p3", "0X.8P1", "1e4933", "1e4932", "-1e4932", "1e-5000",
			"1e-4940", "0e-5000", "infinity", "-INF", "nan(1)", "1e", "0x", "5.", "-.5e-2", "1e308", "123456789012345678",
			"9223372036854775807", "1.5e-18", " 2", "2 ", "1\x002", "1.00000000000000000555")
	}
	return Float(r)
}

// hashField returns a field: mostly of a dozen short ones, so that commands meet.
func hashField(r *rand.Rand) string {
	if r.IntN(10) == 0 {
		return Value(r)
	}
	return string(rune('a' + r.IntN(12)))
}

// randCount returns an HRANDFIELD count: small either way, now and then a bad or extreme
// one (never a huge negative one without WITHVALUES, which Redis would answer with that
// many picks).
func randCount(r *rand.Rand, withValues bool) string {
	switch r.IntN(20) {
	case 0:
		return Pick(r, "abc", "1.5", "", "-9223372036854775808", "9223372036854775807", "4611686018427387903",
			"4611686018427387904")
	case 1:
		if withValues {
			return Pick(r, "-4611686018427387904", "-9223372036854775807") // out of range: errors
		}
	}
	return strconv.Itoa(r.IntN(13) - 6)
}

// scanCursor returns an HSCAN cursor: 0 in one of its spellings, or one Redis refuses. A
// cursor other than 0 starts a hashtable's scan elsewhere: those replies are not compared.
func scanCursor(r *rand.Rand) (cursor string, compare bool) {
	switch r.IntN(10) {
	case 0:
		return Pick(r, "abc", " 0", "0x0", "18446744073709551616", "-", "+", "1.0", "-18446744073709551616"), true
	case 1:
		return Pick(r, "", "+0", "-0", "00", "0\x00x"), true
	case 2:
		return Pick(r, "1", "-1", "18446744073709551615", "+7"), false
	}
	return "0", true
}

// Hash draws the hash commands, with now and then another type's command, DEL or
// EXPIRE on the same keys.
func Hash(r *rand.Rand) Cmd {
	k := Key(r)
	switch r.IntN(30) {
	case 0, 1, 2:
		args := []string{"HSET", k}
		for range 1 + r.IntN(3) {
			args = append(args, hashField(r), hashValue(r))
		}
		if r.IntN(20) == 0 {
			args = args[:len(args)-1] // an odd number of arguments
		}
		return cmd(args...)
	case 3:
		// Many fields at once, to pass hash-max-listpack-entries now and then.
		args := []string{"HSET", k}
		for range 10 + r.IntN(30) {
			args = append(args, "n"+strconv.Itoa(r.IntN(200)), Value(r))
		}
		return cmd(args...)
	case 4:
		args := []string{"HMSET", k, hashField(r), hashValue(r)}
		if r.IntN(2) == 0 {
			args = append(args, hashField(r), hashValue(r))
		}
		if r.IntN(20) == 0 {
			args = args[:len(args)-1]
		}
		return cmd(args...)
	case 5:
		return cmd("HSETNX", k, hashField(r), hashValue(r))
	case 6, 7:
		return cmd("HGET", k, hashField(r))
	case 8:
		args := []string{"HMGET", k}
		for range 1 + r.IntN(4) {
			args = append(args, hashField(r))
		}
		return cmd(args...)
	case 9:
		return Cmd{Args: []string{"HGETALL", k}, Unordered: true, Pairs: true}
	case 10:
		return Cmd{Args: []string{Pick(r, "HKEYS", "HVALS"), k}, Unordered: true}
	case 11, 12:
		args := []string{"HDEL", k}
		for range 1 + r.IntN(3) {
			args = append(args, hashField(r))
		}
		return cmd(args...)
	case 13:
		return cmd("HEXISTS", k, hashField(r))
	case 14:
		return cmd("HLEN", k)
	case 15:
		return cmd("HSTRLEN", k, hashField(r))
	case 16, 17:
		return cmd("HINCRBY", k, hashField(r), Int(r, -5, 5))
	case 18, 19:
		return cmd("HINCRBYFLOAT", k, hashField(r), hashFloat(r))
	case 20:
		switch r.IntN(4) {
		case 0:
			return Cmd{Args: []string{"HRANDFIELD", k}, Shape: true}
		case 1:
			return Cmd{Args: []string{"HRANDFIELD", k, randCount(r, false)}, Shape: true}
		case 2:
			return Cmd{Args: []string{"HRANDFIELD", k, randCount(r, true), Pick(r, "WITHVALUES", "withvalues", "WITHVALUE")}, Shape: true}
		}
		return Cmd{Args: []string{"HRANDFIELD", k, randCount(r, true), "WITHVALUES", "x"}, Shape: true}
	case 21, 22:
		cursor, compare := scanCursor(r)
		args := []string{"HSCAN", k, cursor}
		var count bool
		for range r.IntN(3) {
			if r.IntN(2) == 0 {
				args = append(args, Pick(r, "MATCH", "match"), Pick(r, "a*", "*", "[a-c]", "?", "1*", "x*", "n1*", "[", "\\a"))
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
				args = append(args, "COUNT", "1000") // a hashtable scanned whole, as a pack always is
			}
		}
		return Cmd{Args: args, Unordered: true, Pairs: true, Scan: true, Skip: !compare}
	case 23:
		return cmd("SET", k, Value(r))
	case 24:
		return cmd("DEL", k)
	case 25:
		return cmd("EXPIRE", k, Int(r, 100, 1000))
	case 26:
		return cmd("TYPE", k)
	case 27:
		return cmd("PERSIST", k)
	case 28:
		return cmd("INCR", k)
	}
	return cmd(Pick(r, "HGET", "HLEN", "HDEL", "HINCRBY", "HSET"), k) // arity errors
}
