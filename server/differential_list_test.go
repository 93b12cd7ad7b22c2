package server

import (
	"math/rand/v2"
	"testing"
)

// listValue is an element: diffValue's, and now and then a string that looks like an
// integer but is not the canonical form of one, so that the pack's integer elements meet
// their look-alikes.
func listValue(r *rand.Rand) string {
	switch r.IntN(15) {
	case 0:
		return pick(r, "01", "-0", "1", "-1", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "+1", "1.0")
	case 1, 2, 3, 4, 5, 6:
		return pick(r, "a", "b", "c", "1") // few values, so that LPOS, LREM and LINSERT find many
	}
	return diffValue(r)
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
func listIndex(r *rand.Rand) string { return diffInt(r, -12, 12) }

// genList draws the list commands, with now and then a command of another type on the
// same keys (WRONGTYPE), DEL and EXPIRE.
func genList(r *rand.Rand) diffCmd {
	k := diffKey(r)
	switch r.IntN(31) {
	case 0, 1, 2:
		return cmd(append([]string{pick(r, "RPUSH", "LPUSH")}, append([]string{k}, listValues(r)...)...)...)
	case 3:
		return cmd(append([]string{pick(r, "RPUSHX", "LPUSHX")}, append([]string{k}, listValues(r)...)...)...)
	case 4, 5:
		return cmd(pick(r, "LPOP", "RPOP"), k)
	case 6, 7:
		return cmd(pick(r, "LPOP", "RPOP"), k, diffInt(r, -1, 5))
	case 8:
		return cmd(pick(r, "LPOP", "RPOP"), k, "1", "2")
	case 9:
		return cmd("LLEN", k)
	case 10, 11:
		return cmd("LRANGE", k, listIndex(r), listIndex(r))
	case 12:
		return cmd("LINDEX", k, listIndex(r))
	case 13:
		return cmd("LTRIM", k, listIndex(r), listIndex(r))
	case 14:
		return cmd("LREM", k, diffInt(r, -3, 3), listValue(r))
	case 15:
		return cmd("LSET", k, listIndex(r), listValue(r))
	case 16, 17:
		args := []string{"LPOS", k, listValue(r)}
		for range r.IntN(4) {
			switch r.IntN(8) {
			case 0:
				args = append(args, pick(r, "RANK", "rank"), diffInt(r, -4, 4))
			case 1:
				// -2^63 negates to itself in Redis: a case of its own.
				args = append(args, "RANK", pick(r, "-1", "-9223372036854775808", "9223372036854775807"))
			case 2, 3:
				args = append(args, pick(r, "COUNT", "count"), diffInt(r, -1, 4))
			case 4, 5:
				args = append(args, pick(r, "MAXLEN", "maxlen"), diffInt(r, -1, 8))
			case 6:
				args = append(args, pick(r, "RANK", "COUNT", "MAXLEN"))
			default:
				args = append(args, pick(r, "FOO", "1"), "1")
			}
		}
		return cmd(args...)
	case 18:
		return cmd("LINSERT", k, pick(r, "BEFORE", "AFTER", "after", "middle"), listValue(r), listValue(r))
	case 19, 20:
		return cmd("LMOVE", k, diffKey(r), pick(r, "LEFT", "RIGHT", "left", "up"), pick(r, "LEFT", "RIGHT", "right"))
	case 21:
		return cmd("RPOPLPUSH", k, diffKey(r))
	case 22:
		if r.IntN(5) == 0 { // rarely, or the keys would be strings much of the time
			return cmd("SET", k, diffValue(r))
		}
		return cmd("RPUSH", k, listValue(r), listValue(r), listValue(r), listValue(r), listValue(r))
	case 23, 29:
		return cmd("DEL", k)
	case 24:
		return cmd("EXPIRE", k, diffInt(r, 100, 1000))
	case 25:
		// The seconds left can differ by one where a second ends between the two servers'
		// answers (or between EXPIREAT in 2100 and now): compared as an error or not only.
		return diffCmd{args: []string{"TTL", k}, skip: true}
	case 26:
		return cmd("TYPE", k)
	case 27:
		if r.IntN(3) == 0 {
			return cmd("GET", k)
		}
		return cmd("LPUSH", k, listValue(r), listValue(r), listValue(r), listValue(r))
	case 28:
		return cmd("LTRIM", k, "0", diffInt(r, 0, 6))
	}
	return cmd("LRANGE", k, "0", "-1")
}

func TestDifferentialList(t *testing.T) { runDifferential(t, genList) }
