package difftest

import (
	"math/rand/v2"
	"strconv"
)

// listValue is an element: diffValue's, and now and then a string that looks like an
// integer but is not the canonical form of one, so that the pack's integer elements meet
// their look-alikes.
func listValue(r *rand.Rand) string {
	switch r.IntN(15) {
	case 0:
		return Pick(r, "01", "-0", "1", "-1", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "+1", "1.0")
	case 1, 2, 3, 4, 5, 6:
		return Pick(r, "a", "b", "c", "1") // few values, so that LPOS, LREM and LINSERT find many
	}
	return Value(r)
}

// listValues returns one to four elements.
func listValues(r *rand.Rand) []string {
	out := make([]string, 1+r.IntN(4))
	for i := range out {
		out[i] = listValue(r)
	}
	return out
}

// listIndex is an index or count: mostly within a few elements of either end.
func listIndex(r *rand.Rand) string { return Int(r, -12, 12) }

// List draws the list commands, with now and then a command of another type on the
// same keys (WRONGTYPE), DEL and EXPIRE.
func List(r *rand.Rand) Cmd {
	k := Key(r)
	switch r.IntN(35) {
	case 0, 1, 2:
		return cmd(append([]string{Pick(r, "RPUSH", "LPUSH")}, append([]string{k}, listValues(r)...)...)...)
	case 3:
		return cmd(append([]string{Pick(r, "RPUSHX", "LPUSHX")}, append([]string{k}, listValues(r)...)...)...)
	case 4, 5:
		return cmd(Pick(r, "LPOP", "RPOP"), k)
	case 6, 7:
		return cmd(Pick(r, "LPOP", "RPOP"), k, Int(r, -1, 5))
	case 8:
		return cmd(Pick(r, "LPOP", "RPOP"), k, "1", "2")
	case 9:
		return cmd("LLEN", k)
	case 10, 11:
		return cmd("LRANGE", k, listIndex(r), listIndex(r))
	case 12:
		return cmd("LINDEX", k, listIndex(r))
	case 13:
		return cmd("LTRIM", k, listIndex(r), listIndex(r))
	case 14:
		return cmd("LREM", k, Int(r, -3, 3), listValue(r))
	case 15:
		return cmd("LSET", k, listIndex(r), listValue(r))
	case 16, 17:
		args := []string{"LPOS", k, listValue(r)}
		for range r.IntN(4) {
			switch r.IntN(8) {
			case 0:
				args = append(args, Pick(r, "RANK", "rank"), Int(r, -4, 4))
			case 1:
				// -2^63 negates to itself in Redis: a case of its own.
				args = append(args, "RANK", Pick(r, "-1", "-9223372036854775808", "9223372036854775807"))
			case 2, 3:
				args = append(args, Pick(r, "COUNT", "count"), Int(r, -1, 4))
			case 4, 5:
				args = append(args, Pick(r, "MAXLEN", "maxlen"), Int(r, -1, 8))
			case 6:
				args = append(args, Pick(r, "RANK", "COUNT", "MAXLEN"))
			default:
				args = append(args, Pick(r, "FOO", "1"), "1")
			}
		}
		return cmd(args...)
	case 18:
		return cmd("LINSERT", k, Pick(r, "BEFORE", "AFTER", "after", "middle"), listValue(r), listValue(r))
	case 19, 20:
		return cmd("LMOVE", k, Key(r), Pick(r, "LEFT", "RIGHT", "left", "up"), Pick(r, "LEFT", "RIGHT", "right"))
	case 21:
		return cmd("RPOPLPUSH", k, Key(r))
	case 22:
		if r.IntN(5) == 0 { // rarely, or the keys would be strings much of the time
			return cmd("SET", k, Value(r))
		}
		return cmd("RPUSH", k, listValue(r), listValue(r), listValue(r), listValue(r), listValue(r))
	case 23, 29:
		return cmd("DEL", k)
	case 24:
		return cmd("EXPIRE", k, Int(r, 100, 1000))
	case 25:
		// The seconds left can differ by one where a second ends between the two servers'
		// answers (or between EXPIREAT in 2100 and now): compared as an error or not only.
		return Cmd{Args: []string{"TTL", k}, Skip: true}
	case 26:
		return cmd("TYPE", k)
	case 27:
		if r.IntN(3) == 0 {
			return cmd("GET", k)
		}
		return cmd("LPUSH", k, listValue(r), listValue(r), listValue(r), listValue(r))
	case 28:
		return cmd("LTRIM", k, "0", Int(r, 0, 6))
	case 31, 32:
		numkeys := 1 + r.IntN(3)
		args := []string{"LMPOP", Pick(r, strconv.Itoa(numkeys), strconv.Itoa(numkeys), "0", "x", "9")}
		for range numkeys {
			args = append(args, Key(r))
		}
		args = append(args, Pick(r, "LEFT", "RIGHT", "left", "x"))
		if r.IntN(2) == 0 {
			args = append(args, "COUNT", Pick(r, "1", "2", "5", "0", "-1", "x"))
		}
		if r.IntN(20) == 0 {
			args = append(args, Pick(r, "COUNT", "x"))
		}
		return cmd(args...)
	case 33, 34:
		// The blocking pops answer at once when a key has elements; on empty ones they
		// wait 1ms and time out (a null array). A bad timeout is an error.
		timeout := Pick(r, "0.001", "0.001", "0.001", "-1", "x", "nan", "inf", "0x0.1p-8")
		keys := []string{k}
		if r.IntN(2) == 0 {
			keys = append(keys, Key(r))
		}
		switch r.IntN(4) {
		case 0:
			return cmd("BLMOVE", k, Key(r), Pick(r, "LEFT", "RIGHT", "x"), Pick(r, "LEFT", "RIGHT"), timeout)
		case 1:
			return cmd("BRPOPLPUSH", k, Key(r), timeout)
		case 2:
			args := append([]string{"BLMPOP", timeout, strconv.Itoa(len(keys))}, keys...)
			args = append(args, Pick(r, "LEFT", "RIGHT"))
			if r.IntN(2) == 0 {
				args = append(args, "COUNT", Pick(r, "1", "3", "0"))
			}
			return cmd(args...)
		}
		return cmd(append(append([]string{Pick(r, "BLPOP", "BRPOP")}, keys...), timeout)...)
	}
	return cmd("LRANGE", k, "0", "-1")
}
