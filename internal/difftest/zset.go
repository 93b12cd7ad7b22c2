package difftest

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// The sorted set commands against redis-server. The keys play parts: k0 to k3 stay small
// (listpack on Redis: a few dozen short members), {k}4 and {k}5 grow past the listpack's
// limits (long members, ZADDs of many members). k0 and {k}4 only ever get score 0 (or -0),
// as the lexicographic commands assume; elsewhere the scores differ. Redis answers a
// lexicographic range over differing scores by walking its listpack, which throttled
// follows, but over a skip list by a descent that depends on random node levels, so those
// replies ({k}5's) are compared only for being errors, and ZREMRANGEBYLEX leaves {k}5
// alone. ZSCAN of a big set replies in hash table order with cursors of Redis's own:
// compared only for being an error too.

func zsetSmallKey(k string) bool { return k[0] == 'k' }
func zsetZeroKey(k string) bool  { return k == "k0" || k == "{k}4" }

// zsetMember returns a member for key: from a few dozen short ones for the small keys, some
// of them timestamps that zsetScore gives as scores (a small set writes such a member as its
// score); also wider integers and long strings for the big ones.
func zsetMember(r *rand.Rand, k string) string {
	if zsetSmallKey(k) {
		switch r.IntN(7) {
		case 0:
			return strconv.Itoa(r.IntN(24) - 3)
		case 1:
			return Pick(r, "", "ab", "abc", "b\x00", "-", "+", "[a", "(a", "A", "zz")
		case 2: // a sliding log's: its timestamp, which zsetScore gives too, alone or with a suffix
			return strconv.Itoa(1732512345000+r.IntN(6)) + Pick(r, "", "", "-1", "-12", ":a", "0", "-123456789012")
		}
		return string(rune('a' + r.IntN(12)))
	}
	switch r.IntN(12) {
	case 0:
		return strings.Repeat("x", 60+r.IntN(10))
	case 1, 2:
		return strconv.Itoa(r.IntN(400) - 100)
	case 3:
		return Pick(r, "", "ab", "abc", "A", "zz", "1732512345123")
	}
	return string(rune('a' + r.IntN(26)))
}

// zsetScore returns a score for key: 0 on the keys of the lexicographic commands; else
// small integers, fractions, millisecond timestamps, infinities and bad ones.
func zsetScore(r *rand.Rand, k string) string {
	if zsetZeroKey(k) {
		switch r.IntN(30) {
		case 0:
			return Pick(r, "abc", "nan", "", " 0")
		case 1, 2:
			return Pick(r, "-0", "+0", "0.0", "0e5", "-0.0", "0x0")
		}
		return "0"
	}
	switch r.IntN(10) {
	case 0:
		if r.IntN(2) == 0 { // one of zsetMember's timestamps
			return strconv.Itoa(1732512345000 + r.IntN(6))
		}
		return strconv.FormatInt(1732512345000+int64(r.IntN(5000)), 10)
	case 1:
		return Pick(r, "inf", "-inf", "+inf", "nan", "-nan", "abc", "", "1e400", "-1e400", "1e-400",
			"4.9e-324", "0x1p3", "0x10", "0x", " 1", "1 ", "1e", "1.5e2", ".5", "5.", "-0", "infinity",
			"-Infinity", "nan(1)", "1\x00", "0x1.8p1", "1e-310", "9007199254740993", "1e17", "0.1")
	}
	return Float(r)
}

// zsetBound returns a ZRANGEBYSCORE bound.
func zsetBound(r *rand.Rand) string {
	switch r.IntN(10) {
	case 0:
		return Pick(r, "-inf", "+inf", "inf", "(-inf", "(+inf")
	case 1:
		return Pick(r, "abc", "(", "", " 1", "1 ", "nan", "(nan", "[1", "((1", "1e400", "(1e-400", "1\x00x", "0x1p2", " ", "1e")
	case 2:
		return strconv.FormatInt(1732512345000+int64(r.IntN(5000)), 10)
	}
	b := strconv.Itoa(r.IntN(20) - 6)
	if r.IntN(3) == 0 {
		b = "(" + b
	}
	return b
}

// zsetLexBound returns a ZRANGEBYLEX bound.
func zsetLexBound(r *rand.Rand, k string) string {
	switch r.IntN(10) {
	case 0:
		return Pick(r, "-", "+")
	case 1:
		return Pick(r, "a", "", "-a", "+a", "-\x00", "{a")
	}
	return Pick(r, "[", "(") + zsetMember(r, k)
}

// zsetLimit returns LIMIT offset count now and then, bad ones too.
func zsetLimit(r *rand.Rand) []string {
	if r.IntN(3) > 0 {
		return nil
	}
	return []string{Pick(r, "LIMIT", "limit"), Int(r, -1, 6), Int(r, -2, 6)}
}

// ZSet draws the sorted set commands.
func ZSet(r *rand.Rand) Cmd {
	k := Key(r)
	mixedBig := k == "{k}5" // lexicographic replies undefined once big
	switch r.IntN(50) {
	case 0, 1, 2, 3, 4, 5:
		args := []string{"ZADD", k}
		for _, opt := range []string{"NX", "XX", "GT", "LT", "CH", "INCR"} {
			if r.IntN(10) == 0 {
				args = append(args, opt)
			}
		}
		n, many := 1+r.IntN(3), false
		if !zsetSmallKey(k) && r.IntN(8) == 0 {
			n, many = 20+r.IntN(120), true // past the listpack's 128 entries now and then
		}
		for range n {
			m := zsetMember(r, k)
			if many && r.IntN(4) > 0 {
				m = "m" + strconv.Itoa(r.IntN(1000))
			}
			args = append(args, zsetScore(r, k), m)
		}
		if r.IntN(40) == 0 {
			args = args[:len(args)-1] // a score without its member
		}
		return cmd(args...)
	case 6:
		inc := zsetScore(r, k)
		if r.IntN(30) == 0 {
			inc = Pick(r, "nx", "INCR", "ch")
		}
		return cmd("ZINCRBY", k, inc, zsetMember(r, k))
	case 7, 8:
		args := []string{"ZREM", k}
		for range 1 + r.IntN(3) {
			args = append(args, zsetMember(r, k))
		}
		return cmd(args...)
	case 9:
		return cmd("ZCARD", k)
	case 10:
		return cmd("ZCOUNT", k, zsetBound(r), zsetBound(r))
	case 11:
		return cmd("ZSCORE", k, zsetMember(r, k))
	case 12:
		return cmd("ZMSCORE", k, zsetMember(r, k), zsetMember(r, k))
	case 13:
		return cmd(Pick(r, "ZRANK", "ZREVRANK"), k, zsetMember(r, k))
	case 14, 15, 16:
		args := []string{"ZRANGE", k}
		kind := r.IntN(3)
		switch kind {
		case 0:
			args = append(args, Int(r, -8, 8), Int(r, -8, 8))
		case 1:
			args = append(args, zsetBound(r), zsetBound(r), "BYSCORE")
		case 2:
			args = append(args, zsetLexBound(r, k), zsetLexBound(r, k), "BYLEX")
		}
		if r.IntN(3) == 0 {
			args = append(args, "REV")
		}
		args = append(args, zsetLimit(r)...)
		if r.IntN(2) == 0 {
			args = append(args, "WITHSCORES")
		}
		if r.IntN(20) == 0 {
			args = append(args, Pick(r, "BYSCORE", "REV", "LIMIT", "x"))
		}
		if r.IntN(20) == 0 && len(args) > 5 {
			i := 4 + r.IntN(len(args)-4) // options in another order
			args[4], args[i] = args[i], args[4]
		}
		return Cmd{Args: args, Skip: kind == 2 && mixedBig}
	case 17, 18:
		args := []string{Pick(r, "ZRANGEBYSCORE", "ZREVRANGEBYSCORE"), k, zsetBound(r), zsetBound(r)}
		if r.IntN(2) == 0 {
			args = append(args, "WITHSCORES")
		}
		args = append(args, zsetLimit(r)...)
		return cmd(args...)
	case 19:
		args := []string{"ZREVRANGE", k, Int(r, -8, 8), Int(r, -8, 8)}
		if r.IntN(2) == 0 {
			args = append(args, "WITHSCORES")
		}
		if r.IntN(15) == 0 {
			args = append(args, "LIMIT", "0", "1")
		}
		return cmd(args...)
	case 20, 21:
		return cmd("ZREMRANGEBYSCORE", k, zsetBound(r), zsetBound(r))
	case 22:
		return cmd("ZREMRANGEBYRANK", k, Int(r, -8, 8), Int(r, -8, 8))
	case 23, 24:
		args := []string{Pick(r, "ZPOPMIN", "ZPOPMAX"), k}
		if r.IntN(2) == 0 {
			args = append(args, Int(r, -1, 5))
		}
		if r.IntN(30) == 0 {
			args = append(args, "1")
		}
		return cmd(args...)
	case 25:
		args := []string{"ZSCAN", k, Pick(r, "0", "0", "0", "7", "", "-1", " 1", "abc", "+", "18446744073709551616")}
		if r.IntN(2) == 0 {
			args = append(args, "MATCH", Pick(r, "*", "a*", "[a-c]", "?", "1*", "*b*"))
		}
		if r.IntN(3) == 0 {
			args = append(args, "COUNT", Int(r, -1, 20))
		}
		if r.IntN(20) == 0 {
			args = append(args, Pick(r, "TYPE", "MATCH", "x"), "zset")
		}
		return Cmd{Args: args, Skip: !zsetSmallKey(k)}
	case 26, 27:
		args := []string{Pick(r, "ZRANGEBYLEX", "ZREVRANGEBYLEX"), k, zsetLexBound(r, k), zsetLexBound(r, k)}
		args = append(args, zsetLimit(r)...)
		if r.IntN(20) == 0 {
			args = append(args, "WITHSCORES")
		}
		return Cmd{Args: args, Skip: mixedBig}
	case 28:
		return Cmd{Args: []string{"ZLEXCOUNT", k, zsetLexBound(r, k), zsetLexBound(r, k)}, Skip: mixedBig}
	case 29:
		if mixedBig {
			k = "k1"
		}
		return cmd("ZREMRANGEBYLEX", k, zsetLexBound(r, k), zsetLexBound(r, k))
	case 30, 31:
		if !zsetSmallKey(k) && r.IntN(6) > 0 {
			return cmd("ZCARD", k) // big sets live longer
		}
		if r.IntN(2) == 0 {
			return cmd("SET", k, Value(r))
		}
		return cmd("DEL", k)
	case 32:
		return cmd("EXPIRE", k, Int(r, 100, 1000))
	case 33:
		return cmd("TYPE", k)
	case 34, 35:
		// The sliding log on {k}5: a millisecond timestamp as member and score, the
		// entries before a window cut, the count and the oldest entry.
		now := 1732512345000 + int64(r.IntN(5000))
		ts := strconv.FormatInt(now, 10)
		switch r.IntN(4) {
		case 0:
			return cmd("ZADD", "{k}5", ts, ts)
		case 1:
			return cmd("ZREMRANGEBYSCORE", "{k}5", "-inf", "("+strconv.FormatInt(now-1000, 10))
		case 2:
			return cmd("ZCARD", "{k}5")
		}
		return cmd("ZRANGE", "{k}5", "0", "0", "WITHSCORES")
	case 40, 41, 42, 43:
		return zsetOp(r)
	case 44:
		args := []string{"ZRANGESTORE", "{k}5", k} // the one key whose scores may mix once big
		switch r.IntN(3) {
		case 0:
			args = append(args, Int(r, -8, 8), Int(r, -8, 8))
		case 1:
			args = append(args, zsetBound(r), zsetBound(r), "BYSCORE")
		case 2:
			args = append(args, zsetLexBound(r, k), zsetLexBound(r, k), "BYLEX")
		}
		if r.IntN(3) == 0 {
			args = append(args, "REV")
		}
		args = append(args, zsetLimit(r)...)
		if r.IntN(20) == 0 {
			args = append(args, Pick(r, "WITHSCORES", "x", "BYSCORE"))
		}
		return Cmd{Args: args, Skip: mixedBig}
	case 45:
		args := []string{"ZRANDMEMBER", k}
		if r.IntN(4) > 0 {
			args = append(args, Pick(r, "0", "1", "-1", "2", "-5", "200", "-200", "x", "-9223372036854775808"))
			if r.IntN(2) == 0 {
				// RESP3's scores are doubles, which a shape keeps: compared as an error or not.
				args = append(args, Pick(r, "WITHSCORES", "WITHSCORES", "x"))
				return Cmd{Args: args, Skip: true}
			}
		}
		return Cmd{Args: args, Shape: true}
	case 46, 47:
		numkeys := 1 + r.IntN(3)
		args := []string{"ZMPOP", Pick(r, strconv.Itoa(numkeys), strconv.Itoa(numkeys), "0", "x", "9")}
		for range numkeys {
			args = append(args, Key(r))
		}
		args = append(args, Pick(r, "MIN", "MAX", "min", "x"))
		if r.IntN(2) == 0 {
			args = append(args, "COUNT", Pick(r, "1", "2", "5", "0", "-1", "x"))
		}
		if r.IntN(20) == 0 {
			args = append(args, Pick(r, "COUNT", "x"))
		}
		return cmd(args...)
	case 48:
		// The blocking pops answer at once when a key has members; an empty one waits
		// 1ms and times out (a null array). A bad timeout is an error.
		keys := []string{k}
		if r.IntN(2) == 0 {
			keys = append(keys, Key(r))
		}
		timeout := Pick(r, "0.001", "0.001", "0.001", "-1", "x", "nan", "inf")
		if r.IntN(3) == 0 {
			args := append([]string{"BZMPOP", timeout, strconv.Itoa(len(keys))}, keys...)
			args = append(args, Pick(r, "MIN", "MAX"))
			if r.IntN(2) == 0 {
				args = append(args, "COUNT", Pick(r, "1", "3", "0"))
			}
			return cmd(args...)
		}
		return cmd(append(append([]string{Pick(r, "BZPOPMIN", "BZPOPMAX")}, keys...), timeout)...)
	}
	return cmd("ZRANGE", k, "0", "-1", "WITHSCORES")
}

// zsetOp draws ZUNION, ZINTER, ZDIFF, their STORE forms and ZINTERCARD, over sorted sets
// and the sets of the same keys, their options and errors.
func zsetOp(r *rand.Rand) Cmd {
	name := Pick(r, "ZUNION", "ZINTER", "ZDIFF", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZINTERCARD")
	store := strings.HasSuffix(name, "STORE")
	numkeys := 1 + r.IntN(3)
	args := []string{name}
	if store {
		args = append(args, "{k}5") // the one key whose scores may mix once big
	}
	args = append(args, Pick(r, strconv.Itoa(numkeys), strconv.Itoa(numkeys), strconv.Itoa(numkeys), "0", "-1", "x", "9"))
	for range numkeys {
		args = append(args, Key(r))
	}
	if name != "ZDIFF" && name != "ZDIFFSTORE" && name != "ZINTERCARD" && r.IntN(3) == 0 {
		args = append(args, "WEIGHTS")
		for range numkeys {
			args = append(args, Pick(r, "1", "2", "-1", "0", "0.5", "inf", "-inf", "x"))
		}
	}
	if name != "ZDIFF" && name != "ZDIFFSTORE" && name != "ZINTERCARD" && r.IntN(3) == 0 {
		args = append(args, "AGGREGATE", Pick(r, "SUM", "MIN", "MAX", "max", "x"))
	}
	if name == "ZINTERCARD" && r.IntN(2) == 0 {
		args = append(args, "LIMIT", Pick(r, "0", "1", "2", "-1", "x"))
	}
	if !store && r.IntN(2) == 0 {
		args = append(args, "WITHSCORES")
	}
	if r.IntN(25) == 0 {
		args = append(args, Pick(r, "WEIGHTS", "AGGREGATE", "LIMIT", "x"))
	}
	return cmd(args...)
}
