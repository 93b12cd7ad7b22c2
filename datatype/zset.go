package datatype

import (
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
	"github.com/throttledhq/throttled/resp"
)

// Sorted sets, as Redis 7.0 answers them. The pack and its operations are package
// collection's (zset.go there); here the arguments are parsed, the key's shard locked and
// the reply written.

func (dt *Family) zsetCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "zadd", Arity: -4, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}}, Group: "sorted-set", Since: "1.2.0", Summary: "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", Syntax: "key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]", Handler: dt.cmdZAdd},
		{Name: "zincrby", Arity: 4, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Group: "sorted-set", Since: "1.2.0", Summary: "Increments the score of a member in a sorted set.", Syntax: "key increment member", Handler: dt.cmdZIncrBy},
		{Name: "zrem", Arity: -3, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW delete"}}, Group: "sorted-set", Since: "1.2.0", Summary: "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", Syntax: "key member [member ...]", Handler: dt.cmdZRem},
		{Name: "zcard", Arity: 2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO"}}, Group: "sorted-set", Since: "1.2.0", Summary: "Returns the number of members in a sorted set.", Syntax: "key", Handler: dt.cmdZCard},
		{Name: "zcount", Arity: 4, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "2.0.0", Summary: "Returns the count of members in a sorted set that have scores within a range.", Syntax: "key min max", Handler: dt.cmdZCount},
		{Name: "zlexcount", Arity: 4, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "2.8.9", Summary: "Returns the number of members in a sorted set within a lexicographical range.", Syntax: "key min max", Handler: dt.cmdZLexCount},
		{Name: "zscore", Arity: 3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "1.2.0", Summary: "Returns the score of a member in a sorted set.", Syntax: "key member", Handler: dt.cmdZScore},
		{Name: "zmscore", Arity: -3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "6.2.0", Summary: "Returns the score of one or more members in a sorted set.", Syntax: "key member [member ...]", Handler: dt.cmdZMScore},
		{Name: "zrank", Arity: 3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "2.0.0", Summary: "Returns the index of a member in a sorted set ordered by ascending scores.", Syntax: "key member", Handler: dt.zrankHandler(false)},
		{Name: "zrevrank", Arity: 3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "2.0.0", Summary: "Returns the index of a member in a sorted set ordered by descending scores.", Syntax: "key member", Handler: dt.zrankHandler(true)},
		{Name: "zrange", Arity: -4, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "1.2.0", Summary: "Returns members in a sorted set within a range of indexes.", Syntax: "key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]", Handler: dt.zrangeHandler(zrangeAuto, false)},
		{Name: "zrevrange", Arity: -4, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "1.2.0", Summary: "Returns members in a sorted set within a range of indexes in reverse order.", Syntax: "key start stop [WITHSCORES]", Handler: dt.zrangeHandler(zrangeRank, true)},
		{Name: "zrangebyscore", Arity: -4, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "1.0.5", Summary: "Returns members in a sorted set within a range of scores.", Syntax: "key min max [WITHSCORES] [LIMIT offset count]", Handler: dt.zrangeHandler(zrangeScore, false)},
		{Name: "zrevrangebyscore", Arity: -4, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "2.2.0", Summary: "Returns members in a sorted set within a range of scores in reverse order.", Syntax: "key max min [WITHSCORES] [LIMIT offset count]", Handler: dt.zrangeHandler(zrangeScore, true)},
		{Name: "zrangebylex", Arity: -4, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "2.8.9", Summary: "Returns members in a sorted set within a lexicographical range.", Syntax: "key min max [LIMIT offset count]", Handler: dt.zrangeHandler(zrangeLex, false)},
		{Name: "zrevrangebylex", Arity: -4, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "2.8.9", Summary: "Returns members in a sorted set within a lexicographical range in reverse order.", Syntax: "key max min [LIMIT offset count]", Handler: dt.zrangeHandler(zrangeLex, true)},
		{Name: "zremrangebyrank", Arity: 4, Flags: "write", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW delete"}}, Group: "sorted-set", Since: "2.0.0", Summary: "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", Syntax: "key start stop", Handler: dt.zremrangeHandler(zrangeRank)},
		{Name: "zremrangebyscore", Arity: 4, Flags: "write", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW delete"}}, Group: "sorted-set", Since: "1.2.0", Summary: "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", Syntax: "key min max", Handler: dt.zremrangeHandler(zrangeScore)},
		{Name: "zremrangebylex", Arity: 4, Flags: "write", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW delete"}}, Group: "sorted-set", Since: "2.8.9", Summary: "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", Syntax: "key min max", Handler: dt.zremrangeHandler(zrangeLex)},
		{Name: "zpopmin", Arity: -2, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access delete"}}, Group: "sorted-set", Since: "5.0.0", Summary: "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", Syntax: "key [count]", Handler: dt.zpopHandler(false)},
		{Name: "zpopmax", Arity: -2, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access delete"}}, Group: "sorted-set", Since: "5.0.0", Summary: "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", Syntax: "key [count]", Handler: dt.zpopHandler(true)},
		{Name: "zscan", Arity: -3, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "sorted-set", Since: "2.8.0", Summary: "Iterates over members and scores of a sorted set.", Syntax: "key cursor [MATCH pattern] [COUNT count]", Handler: dt.cmdZScan},
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
func (dt *Family) zsetLocked(c *command.Ctx, sh *keyspace.Shard, key []byte) (keyspace.Value, bool, error) {
	return dt.kindLocked(c, sh, key, keyspace.ZSet, c.Now())
}

// zsetOf reads v, a sorted set: a big one as a copy of its pack, what the commands that
// have no walk of a collection.Big of their own read (by member: ZRANGEBYLEX and the like).
func zsetOf(v keyspace.Value) collection.ZSet {
	if b := bigOf(v); b != nil {
		return collection.ZSetOf(b.AppendEncoded(nil), false)
	}
	return collection.ZSetOf(v.Bytes, v.Num2&IndexedPack != 0)
}

// zeditor starts editing v, the sorted set at a key (zero when there is none), in c's scratch.
func (dt *Family) zeditor(c *command.Ctx, v keyspace.Value) collection.ZEditor {
	return collection.NewZEditor(zsetOf(v), v.Num, v.Num2&BigEncoding != 0,
		dt.cfg.Limits.ZsetEntries.Load(), dt.cfg.Limits.ZsetValue.Load(), c.Scratch)
}

// zstoreLocked stores what ed built at key, keeping v's expiry, and takes back the scratch.
func (dt *Family) zstoreLocked(c *command.Ctx, sh *keyspace.Shard, key []byte, v keyspace.Value, ed *collection.ZEditor) {
	switch {
	case ed.Changed() && ed.Big: // it just passed its listpack limits
		storeBigLocked(sh, key, keyspace.Value{Kind: keyspace.ZSet, Expire: v.Expire}, collection.NewBig(ed.Z, true))
	case ed.Changed():
		storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.ZSet, Num: ed.Num, Bytes: ed.Bytes(), Expire: v.Expire})
	}
	c.Scratch = ed.Buf()
}

// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
func (dt *Family) cmdZAdd(c *command.Ctx, args [][]byte) error { return dt.zadd(c, args, false) }

// ZINCRBY key increment member
func (dt *Family) cmdZIncrBy(c *command.Ctx, args [][]byte) error { return dt.zadd(c, args, true) }

// zadd is ZADD, and ZINCRBY as ZADD INCR: Redis reads ZINCRBY's arguments as ZADD's, so
// that an increment spelt like an option ("nx") is a syntax error there too.
func (dt *Family) zadd(c *command.Ctx, args [][]byte, incr bool) error {
	f := collection.ZAddFlags{Incr: incr}
	ch := false
	i := 2
options:
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case command.EqualFold(a, "nx"):
			f.NX = true
		case command.EqualFold(a, "xx"):
			f.XX = true
		case command.EqualFold(a, "ch"):
			ch = true
		case command.EqualFold(a, "incr"):
			f.Incr = true
		case command.EqualFold(a, "gt"):
			f.GT = true
		case command.EqualFold(a, "lt"):
			f.LT = true
		default:
			break options
		}
	}
	pairs := args[i:]
	switch {
	case len(pairs) == 0 || len(pairs)%2 != 0:
		return command.ErrSyntax
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
	sh := c.Keys.Shard(key)
	sh.Lock()
	defer sh.Unlock()
	v, exists, err := dt.zsetLocked(c, sh, key)
	if err != nil {
		return err
	}
	var added, updated int64
	processed := false
	var score float64
	if exists || !f.XX {
		b := bigOf(v)
		var ed collection.ZEditor
		if b == nil {
			ed = dt.zeditor(c, v)
		}
		for j := 0; j < len(pairs); j += 2 {
			s, _ := collection.ParseScore(pairs[j])
			var out collection.ZAddOutcome
			if b == nil && ed.Big { // it just passed its listpack limits: in chunks from here on
				b = collection.NewBig(ed.Z, true)
				c.Scratch = ed.Buf()
			}
			if b != nil {
				score, out = b.ZAdd(pairs[j+1], s, f)
			} else {
				score, out = ed.Add(pairs[j+1], s, f)
			}
			switch out {
			case collection.ZNaN: // INCR's single pair: nothing changed
				if b == nil {
					c.Scratch = ed.Buf()
				}
				return errZNaN
			case collection.ZAdded:
				added++
			case collection.ZUpdated:
				updated++
			}
			processed = processed || out != collection.ZNop
		}
		switch {
		case b == nil:
			dt.zstoreLocked(c, sh, key, v, &ed)
		case added+updated > 0 || !exists:
			storeBigLocked(sh, key, keyspace.Value{Kind: keyspace.ZSet, Expire: v.Expire}, b)
		}
	}
	notifyIf(c, added+updated > 0, notify.ZSet, zaddEvents[b2i(f.Incr)], key)
	switch {
	case !f.Incr && ch:
		c.W.Int(added + updated)
	case !f.Incr:
		c.W.Int(added)
	case processed:
		c.W.Double(score)
	default:
		c.W.Null()
	}
	return nil
}

// ZREM key member [member ...]
func (dt *Family) cmdZRem(c *command.Ctx, args [][]byte) error {
	key := args[1]
	sh := c.Keys.Shard(key)
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.zsetLocked(c, sh, key)
	if err != nil {
		return err
	}
	if !ok {
		c.W.Int(0)
		return nil
	}
	if b := bigOf(v); b != nil {
		var removed int64
		for _, m := range args[2:] {
			if b.ZRemove(m) {
				removed++
			}
		}
		if removed > 0 {
			storeBigLocked(sh, key, v, b)
		}
		notifyRemoved(c, notify.ZSet, "zrem", key, removed, v.Num)
		c.W.Int(removed)
		return nil
	}
	ed := dt.zeditor(c, v)
	var removed int64
	for _, m := range args[2:] {
		if ed.Remove(m) {
			removed++
		}
		if ed.Num == 0 {
			break
		}
	}
	dt.zstoreLocked(c, sh, key, v, &ed)
	notifyRemoved(c, notify.ZSet, "zrem", key, removed, v.Num)
	c.W.Int(removed)
	return nil
}

// ZCARD key
func (dt *Family) cmdZCard(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	c.W.Int(v.Num)
	return nil
}

// ZCOUNT key min max
func (dt *Family) cmdZCount(c *command.Ctx, args [][]byte) error {
	r, ok := collection.ParseScoreRange(args[2], args[3])
	if !ok {
		return errZScoreRange
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if b := bigOf(v); b != nil {
		c.W.Int(int64(b.ZCount(r)))
		return nil
	}
	_, _, n, _ := zsetOf(v).ScoreSpan(r)
	c.W.Int(n)
	return nil
}

// ZLEXCOUNT key min max
func (dt *Family) cmdZLexCount(c *command.Ctx, args [][]byte) error {
	r, ok := collection.ParseLexRange(args[2], args[3])
	if !ok {
		return errZLexRange
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	_, _, n := collection.ZLexSpan(zsetOf(v).Pack, r)
	c.W.Int(n)
	return nil
}

// ZSCORE key member
func (dt *Family) cmdZScore(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if s, ok := zscore(v, args[2]); ok {
		c.W.Double(s)
	} else {
		c.W.Null()
	}
	return nil
}

// zscore returns member's score in v, a sorted set.
func zscore(v keyspace.Value, member []byte) (float64, bool) {
	if b := bigOf(v); b != nil {
		return b.ZScore(member)
	}
	loc := zsetOf(v).Find(member)
	return loc.Score, loc.Found
}

// ZMSCORE key member [member ...]
func (dt *Family) cmdZMScore(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	c.W.Array(len(args) - 2)
	for _, m := range args[2:] {
		if s, ok := zscore(v, m); ok {
			c.W.Double(s)
		} else {
			c.W.Null()
		}
	}
	return nil
}

// zrankHandler makes ZRANK key member and ZREVRANK key member.
func (dt *Family) zrankHandler(rev bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		sh := c.Keys.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, _, err := dt.zsetLocked(c, sh, args[1])
		if err != nil {
			return err
		}
		var loc collection.ZLoc
		if b := bigOf(v); b != nil {
			loc.Score, loc.Rank, loc.Found = b.ZFind(args[2])
		} else {
			loc = zsetOf(v).Find(args[2])
		}
		switch {
		case !loc.Found:
			c.W.Null()
		case rev:
			c.W.Int(v.Num - 1 - int64(loc.Rank))
		default:
			c.W.Int(int64(loc.Rank))
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
func (dt *Family) zrangeHandler(fixedKind zrangeKind, fixedRev bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		return dt.zrange(c, args, fixedKind, fixedRev, false)
	}
}

// zrange is ZRANGE and the commands it subsumes; with store, ZRANGESTORE's selection
// (args from its src on, WITHSCORES refused), its shards locked by the caller.
func (dt *Family) zrange(c *command.Ctx, args [][]byte, fixedKind zrangeKind, fixedRev, store bool) error {
	kind := fixedKind
	rev, revSet := fixedRev, fixedRev || kind != zrangeAuto
	withScores := false
	offset, limit := int64(0), int64(-1)
	for j := 4; j < len(args); j++ {
		switch a := args[j]; {
		case !store && command.EqualFold(a, "withscores"):
			withScores = true
		case command.EqualFold(a, "limit") && len(args)-j-1 >= 2:
			var ok bool
			if offset, ok = command.ParseInt(args[j+1]); !ok {
				return command.ErrNotInteger
			}
			if limit, ok = command.ParseInt(args[j+2]); !ok {
				return command.ErrNotInteger
			}
			j += 2
		case !revSet && command.EqualFold(a, "rev"):
			rev, revSet = true, true
		case kind == zrangeAuto && command.EqualFold(a, "bylex"):
			kind = zrangeLex
		case kind == zrangeAuto && command.EqualFold(a, "byscore"):
			kind = zrangeScore
		default:
			return command.ErrSyntax
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
		start, ok1 = command.ParseInt(lo)
		stop, ok2 = command.ParseInt(hi)
		if !ok1 || !ok2 {
			return command.ErrNotInteger
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
	sh := c.Keys.Shard(args[1])
	if !store {
		sh.Lock()
		defer sh.Unlock()
	}
	v, ok, err := dt.zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if store { // ZRANGESTORE, a write, reads its source with lookupKeyRead too
		notifyMiss(c, args[1], ok)
	}
	if !ok {
		c.W.Array(0)
		return nil
	}
	switch kind {
	case zrangeRank:
		zrangeByRank(&c.W, v, start, stop, withScores, rev)
	case zrangeScore:
		zrangeByScore(&c.W, v, scores, offset, limit, withScores, rev)
	default:
		zrangeByLex(&c.W, v, lex, offset, limit, rev)
	}
	return nil
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
	if b := bigOf(v); b != nil {
		b.ZWalk(int(start), rev, func(m collection.Elem, s float64) bool {
			zentry(w, m, s, withScores)
			n--
			return n > 0
		})
		return
	}
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
	if b := bigOf(v); b != nil {
		zrangeBigByScore(w, b, r, offset, limit, withScores, rev)
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

// zrangeBigByScore is zrangeByScore of a big set: a walk from the first entry in range,
// or the last one when rev.
func zrangeBigByScore(w *resp.Writer, b *collection.Big, r collection.ScoreRange, offset, limit int64, withScores, rev bool) {
	rank, count := b.ZScoreRank(r)
	if count == 0 {
		w.Array(0)
		return
	}
	mark := len(w.B)
	var n int64
	from, in := rank+int(offset), r.LteMax
	if rev {
		from, in = b.Len()-rank-count+int(offset), r.GteMin
	}
	b.ZWalk(from, rev, func(m collection.Elem, s float64) bool {
		if limit == 0 || !in(s) {
			return false
		}
		zentry(w, m, s, withScores)
		n++
		limit--
		return true
	})
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
func (dt *Family) zremrangeHandler(kind zrangeKind) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		var start, stop int64
		var scores collection.ScoreRange
		var lex collection.LexRange
		switch kind {
		case zrangeRank:
			var ok1, ok2 bool
			start, ok1 = command.ParseInt(args[2])
			stop, ok2 = command.ParseInt(args[3])
			if !ok1 || !ok2 {
				return command.ErrNotInteger
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
		sh := c.Keys.Shard(key)
		sh.Lock()
		defer sh.Unlock()
		v, ok, err := dt.zsetLocked(c, sh, key)
		if err != nil {
			return err
		}
		if !ok {
			c.W.Int(0)
			return nil
		}
		if b := bigOf(v); b != nil {
			var n int
			switch kind {
			case zrangeRank:
				if first, last, in := collection.IndexRange(v.Num, start, stop); in {
					n = b.DeleteRanks(int(first), int(last-first+1))
				}
			case zrangeScore:
				n = b.ZDeleteScores(scores)
			default: // by member: found in a copy of the pack, by Redis's listpack walk
				z := b.AppendEncoded(nil)
				from, _, count := collection.ZLexSpan(z, lex)
				n = b.DeleteRanks(collection.Count(z[:from])/2, int(count))
			}
			if n > 0 {
				storeBigLocked(sh, key, v, b)
			}
			notifyRemoved(c, notify.ZSet, zremrangeEvents[kind], key, int64(n), v.Num)
			c.W.Int(int64(n))
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
			ed := dt.zeditor(c, v)
			ed.DeleteSpan(from, to, n)
			dt.zstoreLocked(c, sh, key, v, &ed)
		}
		notifyRemoved(c, notify.ZSet, zremrangeEvents[kind], key, n, v.Num)
		c.W.Int(n)
		return nil
	}
}

// zpopHandler makes ZPOPMIN key [count] and ZPOPMAX key [count]: a flat member, score
// array, except with a count in RESP3, an array of pairs.
func (dt *Family) zpopHandler(fromMax bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		if len(args) > 3 {
			return command.ErrSyntax
		}
		count := int64(-1)
		if len(args) == 3 {
			n, ok := command.ParseInt(args[2])
			if !ok || n < 0 {
				return errZNotPositive
			}
			count = n
		}
		key := args[1]
		sh := c.Keys.Shard(key)
		sh.Lock()
		defer sh.Unlock()
		v, ok, err := dt.zsetLocked(c, sh, key)
		if err != nil {
			return err
		}
		if !ok || count == 0 {
			c.W.Array(0)
			return nil
		}
		pairs := c.W.Proto == 3 && count > 0
		n := min(max(count, 1), v.Num)
		if pairs {
			c.W.Array(int(n))
		} else {
			c.W.Array(int(2 * n))
		}
		dt.zpopLocked(c, sh, key, v, n, fromMax, pairs)
		return nil
	}
}

// zpopLocked pops n of v's members, the sorted set at key, from its lowest or highest
// score on, replying each member and score (a pair of their own with pairs). The shard is
// locked.
func (dt *Family) zpopLocked(c *command.Ctx, sh *keyspace.Shard, key []byte, v keyspace.Value, n int64, fromMax, pairs bool) {
	entry := func(m collection.Elem, s float64) {
		if pairs {
			c.W.Array(2)
		}
		writeElem(&c.W, m)
		c.W.Double(s)
	}
	if b := bigOf(v); b != nil {
		left := n
		b.ZWalk(0, fromMax, func(m collection.Elem, s float64) bool {
			entry(m, s)
			left--
			return left > 0
		})
		first := 0
		if fromMax {
			first = b.Len() - int(n)
		}
		b.DeleteRanks(first, int(n))
		storeBigLocked(sh, key, v, b)
		notifyRemoved(c, notify.ZSet, zpopEvents[b2i(fromMax)], key, n, v.Num)
		return
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
	ed := dt.zeditor(c, v)
	ed.DeleteSpan(from, to, n)
	dt.zstoreLocked(c, sh, key, v, &ed)
	notifyRemoved(c, notify.ZSet, zpopEvents[b2i(fromMax)], key, n, v.Num)
}

// ZSCAN key cursor [MATCH pattern] [COUNT count]: the whole set at once, with cursor 0, as
// Redis answers for a listpack (the pack is one, whatever its size). Scores are bulk
// strings in RESP3 too.
func (dt *Family) cmdZScan(c *command.Ctx, args [][]byte) error {
	if !zscanCursor(args[2]) {
		return errZCursor
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.zsetLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if !ok {
		dt.scanDone(c, dt.scanStart(c), 0)
		return nil
	}
	pattern, err := scanOptions(args[3:])
	if err != nil {
		return err
	}
	mark, n := dt.scanStart(c), 0
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
		writeElem(&c.W, m)
		c.W.Bulk(zscanScore(buf[:0], s, v.Num2&BigEncoding != 0))
		n++
	}
	dt.scanDone(c, mark, 2*n)
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
