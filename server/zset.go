package server

import (
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/resp"
)

// Sorted sets, as Redis 7.0 answers them. The pack and its operations are package
// collection's (zset.go there); here the arguments are parsed, the key's shard locked and
// the reply written.

func zsetCommands() []*command {
	return []*command{
		{name: "zadd", arity: -4, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "1.2.0", summary: "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", syntax: "key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]", handler: cmdZAdd},
		{name: "zincrby", arity: 4, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "1.2.0", summary: "Increments the score of a member in a sorted set.", syntax: "key increment member", handler: cmdZIncrBy},
		{name: "zrem", arity: -3, flags: "write fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "1.2.0", summary: "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", syntax: "key member [member ...]", handler: cmdZRem},
		{name: "zcard", arity: 2, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "1.2.0", summary: "Returns the number of members in a sorted set.", syntax: "key", handler: cmdZCard},
		{name: "zcount", arity: 4, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "2.0.0", summary: "Returns the count of members in a sorted set that have scores within a range.", syntax: "key min max", handler: cmdZCount},
		{name: "zlexcount", arity: 4, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "2.8.9", summary: "Returns the number of members in a sorted set within a lexicographical range.", syntax: "key min max", handler: cmdZLexCount},
		{name: "zscore", arity: 3, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "1.2.0", summary: "Returns the score of a member in a sorted set.", syntax: "key member", handler: cmdZScore},
		{name: "zmscore", arity: -3, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "6.2.0", summary: "Returns the score of one or more members in a sorted set.", syntax: "key member [member ...]", handler: cmdZMScore},
		{name: "zrank", arity: 3, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "2.0.0", summary: "Returns the index of a member in a sorted set ordered by ascending scores.", syntax: "key member", handler: zrankHandler(false)},
		{name: "zrevrank", arity: 3, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "2.0.0", summary: "Returns the index of a member in a sorted set ordered by descending scores.", syntax: "key member", handler: zrankHandler(true)},
		{name: "zrange", arity: -4, flags: "readonly", firstKey: 1, lastKey: 1, group: "sorted-set", since: "1.2.0", summary: "Returns members in a sorted set within a range of indexes.", syntax: "key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]", handler: zrangeHandler(zrangeAuto, false)},
		{name: "zrevrange", arity: -4, flags: "readonly", firstKey: 1, lastKey: 1, group: "sorted-set", since: "1.2.0", summary: "Returns members in a sorted set within a range of indexes in reverse order.", syntax: "key start stop [WITHSCORES]", handler: zrangeHandler(zrangeRank, true)},
		{name: "zrangebyscore", arity: -4, flags: "readonly", firstKey: 1, lastKey: 1, group: "sorted-set", since: "1.0.5", summary: "Returns members in a sorted set within a range of scores.", syntax: "key min max [WITHSCORES] [LIMIT offset count]", handler: zrangeHandler(zrangeScore, false)},
		{name: "zrevrangebyscore", arity: -4, flags: "readonly", firstKey: 1, lastKey: 1, group: "sorted-set", since: "2.2.0", summary: "Returns members in a sorted set within a range of scores in reverse order.", syntax: "key max min [WITHSCORES] [LIMIT offset count]", handler: zrangeHandler(zrangeScore, true)},
		{name: "zrangebylex", arity: -4, flags: "readonly", firstKey: 1, lastKey: 1, group: "sorted-set", since: "2.8.9", summary: "Returns members in a sorted set within a lexicographical range.", syntax: "key min max [LIMIT offset count]", handler: zrangeHandler(zrangeLex, false)},
		{name: "zrevrangebylex", arity: -4, flags: "readonly", firstKey: 1, lastKey: 1, group: "sorted-set", since: "2.8.9", summary: "Returns members in a sorted set within a lexicographical range in reverse order.", syntax: "key max min [LIMIT offset count]", handler: zrangeHandler(zrangeLex, true)},
		{name: "zremrangebyrank", arity: 4, flags: "write", firstKey: 1, lastKey: 1, group: "sorted-set", since: "2.0.0", summary: "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", syntax: "key start stop", handler: zremrangeHandler(zrangeRank)},
		{name: "zremrangebyscore", arity: 4, flags: "write", firstKey: 1, lastKey: 1, group: "sorted-set", since: "1.2.0", summary: "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", syntax: "key min max", handler: zremrangeHandler(zrangeScore)},
		{name: "zremrangebylex", arity: 4, flags: "write", firstKey: 1, lastKey: 1, group: "sorted-set", since: "2.8.9", summary: "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", syntax: "key min max", handler: zremrangeHandler(zrangeLex)},
		{name: "zpopmin", arity: -2, flags: "write fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "5.0.0", summary: "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", syntax: "key [count]", handler: zpopHandler(false)},
		{name: "zpopmax", arity: -2, flags: "write fast", firstKey: 1, lastKey: 1, group: "sorted-set", since: "5.0.0", summary: "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", syntax: "key [count]", handler: zpopHandler(true)},
		{name: "zscan", arity: -3, flags: "readonly", firstKey: 1, lastKey: 1, group: "sorted-set", since: "2.8.0", summary: "Iterates over members and scores of a sorted set.", syntax: "key cursor [MATCH pattern] [COUNT count]", handler: cmdZScan},
	}
}

var (
	// errZNotFloat is a score or increment that is not a number as Redis reads one.
	errZNotFloat = errors.New("value is not a valid float")
	// errZNaN is an increment that makes a score NaN (inf plus -inf).
	errZNaN = errors.New("resulting score is not a number (NaN)")
	// errZScoreRange is a ZRANGEBYSCORE bound that does not parse.
	errZScoreRange = errors.New("min or max is not a float")
	// errZLexRange is a ZRANGEBYLEX bound that does not parse.
	errZLexRange = errors.New("min or max not valid string range item")
	// errZXXNX is ZADD with both XX and NX.
	errZXXNX = errors.New("XX and NX options at the same time are not compatible")
	// errZGTLTNX is ZADD with two of GT, LT and NX.
	errZGTLTNX = errors.New("GT, LT, and/or NX options at the same time are not compatible")
	// errZIncrPair is ZADD INCR with more than one score and member.
	errZIncrPair = errors.New("INCR option supports a single increment-element pair")
	// errZLimit is ZRANGE's LIMIT on a range of indexes.
	errZLimit = errors.New("syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
	// errZWithScoresLex is ZRANGE's WITHSCORES on a lexicographical range.
	errZWithScoresLex = errors.New("syntax error, WITHSCORES not supported in combination with BYLEX")
	// errZNotPositive is ZPOPMIN's or ZPOPMAX's count below 0 or not an integer.
	errZNotPositive = errors.New("value is out of range, must be positive")
	// errZCursor is a ZSCAN cursor that is not a number.
	errZCursor = errors.New("invalid cursor")
)

// zsetLocked returns the sorted set at key, false when there is none. The shard is locked.
func zsetLocked(c *client, sh *keyspace.Shard, key []byte) (keyspace.Value, bool, error) {
	return c.kindLocked(sh, key, keyspace.ZSet, c.now())
}

// zsetOf reads v, a sorted set.
func zsetOf(v keyspace.Value) collection.ZSet {
	return collection.ZSetOf(v.Bytes, v.Num2&indexedPack != 0)
}

// zeditor starts editing v, the sorted set at a key (zero when there is none), in c's scratch.
func zeditor(c *client, v keyspace.Value) collection.ZEditor {
	return collection.NewZEditor(zsetOf(v), v.Num, v.Num2&bigEncoding != 0,
		c.s.listpack.zsetEntries.Load(), c.s.listpack.zsetValue.Load(), c.scratch)
}

// zstoreLocked stores what ed built at key, keeping v's expiry, and takes back the scratch.
func zstoreLocked(c *client, sh *keyspace.Shard, key []byte, v keyspace.Value, ed *collection.ZEditor) {
	if ed.Changed() {
		var num2 int64
		if ed.Big {
			num2 = bigEncoding | indexedPack
		}
		storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.ZSet, Num: ed.Num, Num2: num2, Bytes: ed.Bytes(), Expire: v.Expire})
	}
	c.scratch = ed.Buf()
}

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
func cmdZAdd(c *client, args [][]byte) error { return zadd(c, args, false) }

// ZINCRBY key increment member
func cmdZIncrBy(c *client, args [][]byte) error { return zadd(c, args, true) }

// zadd is ZADD, and ZINCRBY as ZADD INCR: Redis reads ZINCRBY's arguments as ZADD's, so
// that an increment spelt like an option ("nx") is a syntax error there too.
func zadd(c *client, args [][]byte, incr bool) error {
	f := collection.ZAddFlags{Incr: incr}
	ch := false
	i := 2
options:
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case equalFold(a, "nx"):
			f.NX = true
		case equalFold(a, "xx"):
			f.XX = true
		case equalFold(a, "ch"):
			ch = true
		case equalFold(a, "incr"):
			f.Incr = true
		case equalFold(a, "gt"):
			f.GT = true
		case equalFold(a, "lt"):
			f.LT = true
		default:
			break options
		}
	}
	pairs := args[i:]
	switch {
	case len(pairs) == 0 || len(pairs)%2 != 0:
		return errSyntax
	case f.NX && f.XX:
		return errZXXNX
	case f.NX && (f.GT || f.LT) || f.GT && f.LT:
		return errZGTLTNX
	case f.Incr && len(pairs) > 2:
		return errZIncrPair
	}
	// Every score is checked before anything changes: the command does all or nothing.
	for j := 0; j < len(pairs); j += 2 {
		if _, ok := collection.ParseScore(pairs[j]); !ok {
			return errZNotFloat
		}
	}
	key := args[1]
	sh := c.s.ks.Shard(key)
	sh.Lock()
	defer sh.Unlock()
	v, exists, err := zsetLocked(c, sh, key)
	if err != nil {
		return err
	}
	var added, updated int64
	processed := false
	var score float64
	if exists || !f.XX {
		ed := zeditor(c, v)
		for j := 0; j < len(pairs); j += 2 {
			s, _ := collection.ParseScore(pairs[j])
			var out collection.ZAddOutcome
			score, out = ed.Add(pairs[j+1], s, f)
			switch out {
			case collection.ZNaN:
				c.scratch = ed.Buf()
				return errZNaN
			case collection.ZAdded:
				added++
			case collection.ZUpdated:
				updated++
			}
			processed = processed || out != collection.ZNop
		}
		zstoreLocked(c, sh, key, v, &ed)
	}
	switch {
	case !f.Incr && ch:
		c.w.Int(added + updated)
	case !f.Incr:
		c.w.Int(added)
	case processed:
		c.w.Double(score)
	default:
		c.w.Null()
	}
	return nil
}

// ZREM key member [member ...]
func cmdZRem(c *client, args [][]byte) error {
	key := args[1]
	sh := c.s.ks.Shard(key)
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := zsetLocked(c, sh, key)
	if err != nil {
		return err
	}
	if !ok {
		c.w.Int(0)
		return nil
	}
	ed := zeditor(c, v)
	var removed int64
	for _, m := range args[2:] {
		if ed.Remove(m) {
			removed++
		}
		if ed.Num == 0 {
			break
		}
	}
	zstoreLocked(c, sh, key, v, &ed)
	c.w.Int(removed)
	return nil
}

// ZCARD key
func cmdZCard(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	c.w.Int(v.Num)
	return nil
}

// ZCOUNT key min max
func cmdZCount(c *client, args [][]byte) error {
	r, ok := collection.ParseScoreRange(args[2], args[3])
	if !ok {
		return errZScoreRange
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	_, _, n, _ := zsetOf(v).ScoreSpan(r)
	c.w.Int(n)
	return nil
}

// ZLEXCOUNT key min max
func cmdZLexCount(c *client, args [][]byte) error {
	r, ok := collection.ParseLexRange(args[2], args[3])
	if !ok {
		return errZLexRange
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	_, _, n := collection.ZLexSpan(zsetOf(v).Pack, r)
	c.w.Int(n)
	return nil
}

// ZSCORE key member
func cmdZScore(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if loc := zsetOf(v).Find(args[2]); loc.Found {
		c.w.Double(loc.Score)
	} else {
		c.w.Null()
	}
	return nil
}

// ZMSCORE key member [member ...]
func cmdZMScore(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	c.w.Array(len(args) - 2)
	for _, m := range args[2:] {
		if loc := zsetOf(v).Find(m); loc.Found {
			c.w.Double(loc.Score)
		} else {
			c.w.Null()
		}
	}
	return nil
}

// zrankHandler makes ZRANK key member and ZREVRANK key member.
func zrankHandler(rev bool) handler {
	return func(c *client, args [][]byte) error {
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, _, err := zsetLocked(c, sh, args[1])
		if err != nil {
			return err
		}
		loc := zsetOf(v).Find(args[2])
		switch {
		case !loc.Found:
			c.w.Null()
		case rev:
			c.w.Int(v.Num - 1 - int64(loc.Rank))
		default:
			c.w.Int(int64(loc.Rank))
		}
		return nil
	}
}

// zrangeKind is what a ZRANGE's start and stop are.
type zrangeKind uint8

const (
	zrangeAuto  zrangeKind = iota // ZRANGE: indexes unless BYSCORE or BYLEX says otherwise
	zrangeRank                    // indexes
	zrangeScore                   // scores
	zrangeLex                     // members
)

// zrangeHandler makes ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count]
// [WITHSCORES] and the older commands it subsumes, whose kind of range and direction are
// fixed: ZREVRANGE, Z[REV]RANGEBYSCORE and Z[REV]RANGEBYLEX.
func zrangeHandler(fixedKind zrangeKind, fixedRev bool) handler {
	return func(c *client, args [][]byte) error {
		kind := fixedKind
		rev, revSet := fixedRev, fixedRev || kind != zrangeAuto
		withScores := false
		offset, limit := int64(0), int64(-1)
		for j := 4; j < len(args); j++ {
			switch a := args[j]; {
			case equalFold(a, "withscores"):
				withScores = true
			case equalFold(a, "limit") && len(args)-j-1 >= 2:
				var ok bool
				if offset, ok = parseInt(args[j+1]); !ok {
					return errNotInteger
				}
				if limit, ok = parseInt(args[j+2]); !ok {
					return errNotInteger
				}
				j += 2
			case !revSet && equalFold(a, "rev"):
				rev, revSet = true, true
			case kind == zrangeAuto && equalFold(a, "bylex"):
				kind = zrangeLex
			case kind == zrangeAuto && equalFold(a, "byscore"):
				kind = zrangeScore
			default:
				return errSyntax
			}
		}
		if kind == zrangeAuto {
			kind = zrangeRank
		}
		if limit != -1 && kind == zrangeRank {
			return errZLimit
		}
		if withScores && kind == zrangeLex {
			return errZWithScoresLex
		}
		lo, hi := args[2], args[3]
		if rev && kind != zrangeRank {
			lo, hi = hi, lo // the range is given as max, min
		}
		var start, stop int64
		var scores collection.ScoreRange
		var lex collection.LexRange
		switch kind {
		case zrangeRank:
			var ok1, ok2 bool
			start, ok1 = parseInt(lo)
			stop, ok2 = parseInt(hi)
			if !ok1 || !ok2 {
				return errNotInteger
			}
		case zrangeScore:
			var ok bool
			if scores, ok = collection.ParseScoreRange(lo, hi); !ok {
				return errZScoreRange
			}
		case zrangeLex:
			var ok bool
			if lex, ok = collection.ParseLexRange(lo, hi); !ok {
				return errZLexRange
			}
		}
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, ok, err := zsetLocked(c, sh, args[1])
		if err != nil {
			return err
		}
		if !ok {
			c.w.Array(0)
			return nil
		}
		switch kind {
		case zrangeRank:
			zrangeByRank(&c.w, v, start, stop, withScores, rev)
		case zrangeScore:
			zrangeByScore(&c.w, v, scores, offset, limit, withScores, rev)
		default:
			zrangeByLex(&c.w, v, lex, offset, limit, rev)
		}
		return nil
	}
}

// zentry writes one entry of a range: the member, and with scores its score, the two a
// pair of their own in RESP3.
func zentry(w *resp.Writer, m collection.Elem, score float64, withScores bool) {
	if !withScores {
		writeElem(w, m)
		return
	}
	if w.Proto == 3 {
		w.Array(2)
	}
	writeElem(w, m)
	w.Double(score)
}

// zentriesHeader starts an array of n entries.
func zentriesHeader(w *resp.Writer, n int64, withScores bool) {
	if withScores && w.Proto == 2 {
		n *= 2
	}
	w.Array(int(n))
}

// zentriesHeaderAt puts the header of n entries, written since mark, before them: ranges
// by score and by member know their length only once written.
func zentriesHeaderAt(w *resp.Writer, mark int, n int64, withScores bool) {
	if withScores && w.Proto == 2 {
		n *= 2
	}
	var buf [24]byte
	h := append(buf[:0], '*')
	h = strconv.AppendInt(h, n, 10)
	h = append(h, '\r', '\n')
	w.B = slices.Insert(w.B, mark, h...)
}

func zrangeByRank(w *resp.Writer, v keyspace.Value, start, stop int64, withScores, rev bool) {
	start, stop, ok := collection.IndexRange(v.Num, start, stop)
	if !ok {
		w.Array(0)
		return
	}
	n := stop - start + 1
	zentriesHeader(w, n, withScores)
	set := zsetOf(v)
	z := set.Pack
	if !rev {
		off := set.Seek(int(start))
		for ; n > 0; n-- {
			m, s, k := collection.ZNext(z[off:])
			zentry(w, m, s, withScores)
			off += k
		}
		return
	}
	var stack [128]int
	offs := collection.ZOffsets(stack[:0], z)
	for i := len(offs) - 1 - int(start); n > 0; i, n = i-1, n-1 {
		m, s, _ := collection.ZNext(z[offs[i]:])
		zentry(w, m, s, withScores)
	}
}

// zrangeByScore answers as Redis's listpack walk does: from the first entry in range
// (the last one when rev), offset entries skipped unchecked, then up to limit (all when
// negative) while in range.
func zrangeByScore(w *resp.Writer, v keyspace.Value, r collection.ScoreRange, offset, limit int64, withScores, rev bool) {
	if offset < 0 || offset > 0 && offset >= v.Num {
		w.Array(0)
		return
	}
	set := zsetOf(v)
	z := set.Pack
	mark := len(w.B)
	var n int64
	if !rev {
		from, _, count, _ := set.ScoreSpan(r)
		if count == 0 {
			w.Array(0)
			return
		}
		off := from
		for ; offset > 0 && off < len(z); offset-- {
			_, _, k := collection.ZNext(z[off:])
			off += k
		}
		for ; limit != 0 && off < len(z); limit-- {
			m, s, k := collection.ZNext(z[off:])
			if k == 0 || !r.LteMax(s) {
				break
			}
			zentry(w, m, s, withScores)
			n++
			off += k
		}
		zentriesHeaderAt(w, mark, n, withScores)
		return
	}
	var stack [128]int
	offs := collection.ZOffsets(stack[:0], z)
	i := len(offs) - 1
	for ; i >= 0; i-- {
		if _, s, _ := collection.ZNext(z[offs[i]:]); r.LteMax(s) {
			if !r.GteMin(s) || r.Empty() {
				i = -1
			}
			break
		}
	}
	for i -= int(min(offset, int64(len(offs)))); limit != 0 && i >= 0; i, limit = i-1, limit-1 {
		m, s, _ := collection.ZNext(z[offs[i]:])
		if !r.GteMin(s) {
			break
		}
		zentry(w, m, s, withScores)
		n++
	}
	zentriesHeaderAt(w, mark, n, withScores)
}

// zrangeByLex answers as Redis's listpack walk does (see zrangeByScore), members compared
// with the range; with scores that differ, what that walk finds.
func zrangeByLex(w *resp.Writer, v keyspace.Value, r collection.LexRange, offset, limit int64, rev bool) {
	if offset < 0 || offset > 0 && offset >= v.Num {
		w.Array(0)
		return
	}
	z := zsetOf(v).Pack
	mark := len(w.B)
	var n int64
	if !rev {
		off, _ := collection.ZLexFirst(z, r)
		if off < 0 {
			w.Array(0)
			return
		}
		for ; offset > 0 && off < len(z); offset-- {
			_, _, k := collection.ZNext(z[off:])
			off += k
		}
		for ; limit != 0 && off < len(z); limit-- {
			m, _, k := collection.ZNext(z[off:])
			if k == 0 || !r.LteMax(m) {
				break
			}
			writeElem(w, m)
			n++
			off += k
		}
		zentriesHeaderAt(w, mark, n, false)
		return
	}
	var stack [128]int
	offs := collection.ZOffsets(stack[:0], z)
	i := collection.ZLexLast(z, offs, r)
	if i < 0 {
		w.Array(0)
		return
	}
	for i -= int(min(offset, int64(len(offs)))); limit != 0 && i >= 0; i, limit = i-1, limit-1 {
		m, _, _ := collection.ZNext(z[offs[i]:])
		if !r.GteMin(m) {
			break
		}
		writeElem(w, m)
		n++
	}
	zentriesHeaderAt(w, mark, n, false)
}

// zremrangeHandler makes ZREMRANGEBYRANK key start stop, ZREMRANGEBYSCORE key min max and
// ZREMRANGEBYLEX key min max. A sliding log's ZREMRANGEBYSCORE key -inf (now-window) reads
// only the entries it removes and copies the rest once.
func zremrangeHandler(kind zrangeKind) handler {
	return func(c *client, args [][]byte) error {
		var start, stop int64
		var scores collection.ScoreRange
		var lex collection.LexRange
		switch kind {
		case zrangeRank:
			var ok1, ok2 bool
			start, ok1 = parseInt(args[2])
			stop, ok2 = parseInt(args[3])
			if !ok1 || !ok2 {
				return errNotInteger
			}
		case zrangeScore:
			var ok bool
			if scores, ok = collection.ParseScoreRange(args[2], args[3]); !ok {
				return errZScoreRange
			}
		default:
			var ok bool
			if lex, ok = collection.ParseLexRange(args[2], args[3]); !ok {
				return errZLexRange
			}
		}
		key := args[1]
		sh := c.s.ks.Shard(key)
		sh.Lock()
		defer sh.Unlock()
		v, ok, err := zsetLocked(c, sh, key)
		if err != nil {
			return err
		}
		if !ok {
			c.w.Int(0)
			return nil
		}
		set := zsetOf(v)
		z := set.Pack
		var from, to int
		var n int64
		switch kind {
		case zrangeRank:
			first, last, in := collection.IndexRange(v.Num, start, stop)
			if in {
				from = set.Seek(int(first))
				to = from + collection.ZSeek(z[from:], int(last-first+1))
				n = last - first + 1
			}
		case zrangeScore:
			from, to, n, _ = set.ScoreSpan(scores)
		default:
			from, to, n = collection.ZLexSpan(z, lex)
		}
		if n > 0 {
			ed := zeditor(c, v)
			ed.DeleteSpan(from, to, n)
			zstoreLocked(c, sh, key, v, &ed)
		}
		c.w.Int(n)
		return nil
	}
}

// zpopHandler makes ZPOPMIN key [count] and ZPOPMAX key [count]: a flat member, score
// array, except with a count in RESP3, an array of pairs.
func zpopHandler(fromMax bool) handler {
	return func(c *client, args [][]byte) error {
		if len(args) > 3 {
			return errSyntax
		}
		count := int64(-1)
		if len(args) == 3 {
			n, ok := parseInt(args[2])
			if !ok || n < 0 {
				return errZNotPositive
			}
			count = n
		}
		key := args[1]
		sh := c.s.ks.Shard(key)
		sh.Lock()
		defer sh.Unlock()
		v, ok, err := zsetLocked(c, sh, key)
		if err != nil {
			return err
		}
		if !ok || count == 0 {
			c.w.Array(0)
			return nil
		}
		pairs := c.w.Proto == 3 && count > 0
		n := min(max(count, 1), v.Num)
		if pairs {
			c.w.Array(int(n))
		} else {
			c.w.Array(int(2 * n))
		}
		entry := func(m collection.Elem, s float64) {
			if pairs {
				c.w.Array(2)
			}
			writeElem(&c.w, m)
			c.w.Double(s)
		}
		z := zsetOf(v).Pack
		var from, to int
		if fromMax {
			var stack [128]int
			offs := collection.ZOffsets(stack[:0], z)
			first := len(offs) - int(n)
			for i := len(offs) - 1; i >= first; i-- {
				m, s, _ := collection.ZNext(z[offs[i]:])
				entry(m, s)
			}
			from, to = offs[first], len(z)
		} else {
			for i := int64(0); i < n; i++ {
				m, s, k := collection.ZNext(z[to:])
				entry(m, s)
				to += k
			}
		}
		ed := zeditor(c, v)
		ed.DeleteSpan(from, to, n)
		zstoreLocked(c, sh, key, v, &ed)
		return nil
	}
}

// ZSCAN key cursor [MATCH pattern] [COUNT count]: the whole set at once, with cursor 0, as
// Redis answers for a listpack (the pack is one, whatever its size). Scores are bulk
// strings in RESP3 too.
func cmdZScan(c *client, args [][]byte) error {
	if !zscanCursor(args[2]) {
		return errZCursor
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if !ok {
		c.scanDone(c.scanStart(), 0)
		return nil
	}
	pattern, err := scanOptions(args[3:])
	if err != nil {
		return err
	}
	mark, n := c.scanStart(), 0
	z := zsetOf(v).Pack
	for off := 0; off < len(z); {
		m, s, k := collection.ZNext(z[off:])
		if k == 0 {
			break
		}
		off += k
		var buf [32]byte
		if pattern != nil {
			text := m.Str
			if m.Kind != collection.Str {
				text = m.Append(buf[:0])
			}
			if !glob.Match(pattern, text) {
				continue
			}
		}
		writeElem(&c.w, m)
		c.w.Bulk(zscanScore(buf[:0], s, v.Num2&bigEncoding != 0))
		n++
	}
	c.scanDone(mark, 2*n)
	return nil
}

// zscanScore appends a score as ZSCAN writes it: as its listpack holds it, in a small set,
// where Redis writes a whole score within 2^62 as an integer (1e17 is 100000000000000000);
// as a double (%.17g) in a big one.
func zscanScore(dst []byte, s float64, big bool) []byte {
	if !big && s == math.Trunc(s) && math.Abs(s) <= 1<<62 {
		return strconv.AppendInt(dst, int64(s), 10)
	}
	return collection.AppendScoreText(dst, s)
}

// zscanCursor reports whether a cursor is one Redis takes (strtoul's reading of a C
// string: no leading blank, an optional sign, decimal digits within 64 bits, then the end
// or a NUL byte; or nothing at all).
func zscanCursor(b []byte) bool {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	start := i
	var u uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if u > (1<<64-1-d)/10 {
			return false
		}
		u = u*10 + d
	}
	if i == start {
		return len(b) == 0 || b[0] == 0 // strtoul read nothing: it stopped at b[0]
	}
	return i == len(b) || b[i] == 0
}
