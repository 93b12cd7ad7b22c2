package datatype

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
	"github.com/throttledhq/throttled/resp"
)

// The sorted-set commands that read several keys or make a new set: ZUNION, ZINTER, ZDIFF
// and their STORE forms, ZINTERCARD, ZRANGESTORE and ZRANDMEMBER. They compute their result
// in Go maps and slices (they are O(n) or worse on Redis too, and no limiter's hot path),
// then either reply it or pack it as a new set (zbuild), as Redis's zset_max_listpack
// thresholds say.

func (dt *Family) zsetOpCommands() []*command.Spec {
	storeSpecs := []command.KeySpec{{Begin: 1, Flags: "OW update"}, {Begin: 2, Flags: "RO access"}}
	readSpecs := []command.KeySpec{{Begin: 1, Flags: "RO access"}}
	return []*command.Spec{
		{Name: "zunionstore", Arity: -4, Flags: "write denyoom movablekeys", FirstKey: 1, LastKey: 1, KeySpecs: storeSpecs, KeysOf: zsetOpKeys(2), Group: "sorted-set", Since: "2.0.0", Summary: "Stores the union of multiple sorted sets in a key.", Syntax: "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX]", Handler: dt.zsetOpHandler(zsetUnion, true)},
		{Name: "zinterstore", Arity: -4, Flags: "write denyoom movablekeys", FirstKey: 1, LastKey: 1, KeySpecs: storeSpecs, KeysOf: zsetOpKeys(2), Group: "sorted-set", Since: "2.0.0", Summary: "Stores the intersect of multiple sorted sets in a key.", Syntax: "destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX]", Handler: dt.zsetOpHandler(zsetInter, true)},
		{Name: "zdiffstore", Arity: -4, Flags: "write denyoom movablekeys", FirstKey: 1, LastKey: 1, KeySpecs: storeSpecs, KeysOf: zsetOpKeys(2), Group: "sorted-set", Since: "6.2.0", Summary: "Stores the difference of multiple sorted sets in a key.", Syntax: "destination numkeys key [key ...]", Handler: dt.zsetOpHandler(zsetDiff, true)},
		{Name: "zunion", Arity: -3, Flags: "readonly movablekeys", KeySpecs: readSpecs, KeysOf: zsetOpKeys(1), Group: "sorted-set", Since: "6.2.0", Summary: "Returns the union of multiple sorted sets.", Syntax: "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]", Handler: dt.zsetOpHandler(zsetUnion, false)},
		{Name: "zinter", Arity: -3, Flags: "readonly movablekeys", KeySpecs: readSpecs, KeysOf: zsetOpKeys(1), Group: "sorted-set", Since: "6.2.0", Summary: "Returns the intersect of multiple sorted sets.", Syntax: "numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]", Handler: dt.zsetOpHandler(zsetInter, false)},
		{Name: "zintercard", Arity: -3, Flags: "readonly movablekeys", KeySpecs: readSpecs, KeysOf: zsetOpKeys(1), Group: "sorted-set", Since: "7.0.0", Summary: "Returns the number of members of the intersect of multiple sorted sets.", Syntax: "numkeys key [key ...] [LIMIT limit]", Handler: dt.zsetOpHandler(zsetInterCard, false)},
		{Name: "zdiff", Arity: -3, Flags: "readonly movablekeys", KeySpecs: readSpecs, KeysOf: zsetOpKeys(1), Group: "sorted-set", Since: "6.2.0", Summary: "Returns the difference between multiple sorted sets.", Syntax: "numkeys key [key ...] [WITHSCORES]", Handler: dt.zsetOpHandler(zsetDiff, false)},
		{Name: "zrangestore", Arity: -5, Flags: "write denyoom", FirstKey: 1, LastKey: 2, KeySpecs: storeSpecs, Group: "sorted-set", Since: "6.2.0", Summary: "Stores a range of members from sorted set in a key.", Syntax: "dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]", Handler: dt.cmdZRangeStore},
		{Name: "zrandmember", Arity: -2, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: readSpecs, Group: "sorted-set", Since: "6.2.0", Summary: "Returns one or more random members from a sorted set.", Syntax: "key [count [WITHSCORES]]", Handler: dt.cmdZRandMember},
	}
}

var (
	// errZWeight is a WEIGHTS value that is not a float.
	errZWeight = errors.New("weight value is not a float")
	// errZRandCount is ZRANDMEMBER's count of -2^63, whose negation does not exist.
	errZRandCount = errors.New("value is out of range, value must between -9223372036854775807 and 9223372036854775807")
	// errZRandRange is ZRANDMEMBER's count WITHSCORES past what its reply may hold.
	errZRandRange = errors.New("value is out of range")
)

// zsetOp is what ZUNION, ZINTER, ZDIFF or ZINTERCARD computes.
type zsetOp uint8

const (
	zsetUnion zsetOp = iota
	zsetInter
	zsetDiff
	zsetInterCard
)

// zsetOpKeys returns the KeysOf of a command whose numkeys is at numIdx, the keys after
// it (and the destination before it, at 1, when numIdx is 2); none when numkeys is bad.
func zsetOpKeys(numIdx int) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		if len(args) <= numIdx {
			return nil
		}
		n, ok := command.ParseInt(args[numIdx])
		if !ok || n <= 0 || n > int64(len(args)-numIdx-1) {
			return nil
		}
		keys := args[numIdx+1 : numIdx+1+int(n)]
		if numIdx == 2 {
			keys = append([][]byte{args[1]}, keys...)
		}
		return keys
	}
}

// zsrc is an input of a set operation: a sorted set, or a set whose members score 1.
type zsrc struct {
	v      keyspace.Value
	set    bool
	weight float64
	n      int64
	key    []byte
}

// each calls fn with every member and score of s, in order for a sorted set.
func (s *zsrc) each(fn func(m []byte, score float64) bool) {
	var buf [24]byte
	if s.n == 0 {
		return
	}
	if s.set {
		for m := range setOf(s.v).Members() {
			if !fn(m.Bytes(buf[:0]), 1) {
				return
			}
		}
		return
	}
	z := zsetOf(s.v).Pack
	for off := 0; off < len(z); {
		m, sc, k := collection.ZNext(z[off:])
		if k == 0 {
			return
		}
		off += k
		if !fn(m.Bytes(buf[:0]), sc) {
			return
		}
	}
}

// find returns member's score in s.
func (s *zsrc) find(member []byte) (float64, bool) {
	if s.n == 0 {
		return 0, false
	}
	if s.set {
		return 1, setOf(s.v).Has(member)
	}
	return zscore(s.v, member)
}

// zsrcLocked reads the input at key, whose shard is locked: a sorted set or a set, an
// empty input when missing, keyspace.ErrWrongType for another kind. Redis reads every
// input with lookupKeyRead, the STORE forms' too: a missing one fires "keymiss".
func (dt *Family) zsrcLocked(c *command.Ctx, key []byte, now int64) (zsrc, error) {
	sh := c.Keys.Shard(key)
	kind := keyspace.ZSet
	if v, ok := sh.GetLocked(key, now); ok && v.Kind == keyspace.Set {
		kind = keyspace.Set
	}
	v, ok, err := dt.kindLocked(c, sh, key, kind, now)
	if !c.Reading && err == nil {
		notifyMiss(c, key, ok)
	}
	if err != nil || !ok {
		return zsrc{weight: 1, key: key}, err
	}
	return zsrc{v: v, set: kind == keyspace.Set, weight: 1, n: v.Num, key: key}, nil
}

// zent is an entry of a computed sorted set.
type zent struct {
	m string
	s float64
}

// zsort orders entries as a sorted set holds them: by score, then member bytes.
func zsort(es []zent) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].s != es[j].s {
			return es[i].s < es[j].s
		}
		return es[i].m < es[j].m
	})
}

// zaggregate folds v into t as AGGREGATE says: 0 sum, 1 min, 2 max.
func zaggregate(t *float64, v float64, agg int) {
	switch agg {
	case 0:
		*t += v
		if math.IsNaN(*t) {
			*t = 0
		}
	case 1:
		if v < *t {
			*t = v
		}
	default:
		if v > *t {
			*t = v
		}
	}
}

// zweighted is score times weight, 0 where that is NaN (0 times inf).
func zweighted(score, weight float64) float64 {
	if r := score * weight; !math.IsNaN(r) {
		return r
	}
	return 0
}

// zsetOpHandler makes ZUNION, ZINTER and ZDIFF numkeys key [key ...] [WEIGHTS weight ...]
// [AGGREGATE SUM|MIN|MAX] [WITHSCORES], their STORE forms destination numkeys key [key ...]
// [WEIGHTS ...] [AGGREGATE ...], and ZINTERCARD numkeys key [key ...] [LIMIT limit]. Like
// Redis it reads numkeys, then the keys' types, then the options.
func (dt *Family) zsetOpHandler(op zsetOp, store bool) command.Handler {
	numIdx := 1
	if store {
		numIdx = 2
	}
	return func(c *command.Ctx, args [][]byte) error {
		n, ok := command.ParseInt(args[numIdx])
		switch {
		case !ok:
			return command.ErrNotInteger
		case n < 1:
			return errors.New("at least 1 input key is needed for '" + lowerName(args[0]) + "' command")
		case n > int64(len(args)-numIdx-1):
			return command.ErrSyntax
		}
		keys := args[numIdx+1 : numIdx+1+int(n)]
		c.Shards = c.Keys.LockKeys(args[1:numIdx+1+int(n)], c.Shards[:0])
		defer keyspace.UnlockShards(c.Shards)
		now := c.Now()
		src := make([]zsrc, len(keys))
		for i, k := range keys {
			var err error
			if src[i], err = dt.zsrcLocked(c, k, now); err != nil {
				return err
			}
		}
		agg, withScores, limit := 0, false, int64(0)
		for j := numIdx + 1 + int(n); j < len(args); j++ {
			left := len(args) - j
			switch a := args[j]; {
			case op != zsetDiff && op != zsetInterCard && left >= len(src)+1 && command.EqualFold(a, "weights"):
				for i := range src {
					j++
					w, ok := collection.ParseScore(args[j])
					if !ok {
						return errZWeight
					}
					src[i].weight = w
				}
			case op != zsetDiff && op != zsetInterCard && left >= 2 && command.EqualFold(a, "aggregate"):
				j++
				switch b := args[j]; {
				case command.EqualFold(b, "sum"):
					agg = 0
				case command.EqualFold(b, "min"):
					agg = 1
				case command.EqualFold(b, "max"):
					agg = 2
				default:
					return command.ErrSyntax
				}
			case !store && op != zsetInterCard && command.EqualFold(a, "withscores"):
				withScores = true
			case op == zsetInterCard && left >= 2 && command.EqualFold(a, "limit"):
				j++
				l, ok := command.ParseInt(args[j])
				if !ok || l < 0 {
					return errLimitNegative
				}
				limit = l
			default:
				return command.ErrSyntax
			}
		}
		var out []zent
		switch op {
		case zsetUnion:
			out = zunion(src, agg)
		case zsetInter, zsetInterCard:
			out = zinter(src, agg, op == zsetInterCard, limit)
			if op == zsetInterCard {
				c.W.Int(int64(len(out)))
				return nil
			}
		default:
			out = zdiff(src)
		}
		zsort(out)
		if store {
			dt.zstoreEntriesLocked(c, c.Keys.Shard(args[1]), args[1], out, zsetStoreEvents[op])
			c.W.Int(int64(len(out)))
			return nil
		}
		zwriteEntries(&c.W, out, withScores)
		return nil
	}
}

// zsetStoreEvents are the sorted-set operations' STORE events, by zsetOp.
var zsetStoreEvents = [...]string{zsetUnion: "zunionstore", zsetInter: "zinterstore", zsetDiff: "zdiffstore"}

// lowerName is a command's name as Redis's errors give it.
func lowerName(b []byte) string {
	return string(bytes.ToLower(b))
}

// zunion is ZUNION's result, unsorted: the sources taken smallest first, as Redis does,
// so that sums round as there.
func zunion(src []zsrc, agg int) []zent {
	sort.SliceStable(src, func(i, j int) bool { return src[i].n < src[j].n })
	at := map[string]int{}
	var out []zent
	for i := range src {
		s := &src[i]
		s.each(func(m []byte, score float64) bool {
			v := zweighted(score, s.weight)
			if k, ok := at[string(m)]; ok {
				zaggregate(&out[k].s, v, agg)
			} else {
				at[string(m)] = len(out)
				out = append(out, zent{m: string(m), s: v})
			}
			return true
		})
	}
	return out
}

// zinter is ZINTER's result, unsorted: the smallest source's members found in every other,
// their scores folded in the order of the sources' sizes, as Redis does (only the first
// product is 0 where it is NaN; a later NaN folds in as it is); with card, only
// up to limit of them (0: all), scores unset.
func zinter(src []zsrc, agg int, card bool, limit int64) []zent {
	sort.SliceStable(src, func(i, j int) bool { return src[i].n < src[j].n })
	var out []zent
	src[0].each(func(m []byte, score float64) bool {
		t := zweighted(score, src[0].weight)
		for j := 1; j < len(src); j++ {
			v, ok := src[j].find(m)
			if !ok {
				return true
			}
			zaggregate(&t, v*src[j].weight, agg) // a NaN (0 times inf) zeroes a SUM, as in Redis
		}
		if card {
			out = append(out, zent{})
			return limit == 0 || int64(len(out)) < limit
		}
		out = append(out, zent{m: string(m), s: t})
		return true
	})
	return out
}

// zdiff is ZDIFF's result, unsorted: the first source's members in none of the others,
// with their own scores.
func zdiff(src []zsrc) []zent {
	var out []zent
	src[0].each(func(m []byte, score float64) bool {
		for j := 1; j < len(src); j++ {
			if string(src[j].key) == string(src[0].key) {
				return false
			}
			if _, ok := src[j].find(m); ok {
				return true
			}
		}
		out = append(out, zent{m: string(m), s: score})
		return true
	})
	return out
}

// zwriteEntries replies es, an array of members (with scores: pairs in RESP3).
func zwriteEntries(w *resp.Writer, es []zent, withScores bool) {
	zentriesHeader(w, int64(len(es)), withScores)
	for _, e := range es {
		if withScores && w.Proto == 3 {
			w.Array(2)
		}
		w.Bulk([]byte(e.m))
		if withScores {
			w.Double(e.s)
		}
	}
}

// zstoreEntriesLocked stores es, sorted, as the sorted set at key (deleting the key when
// es is empty), without expiry: a listpack's pack while within zset-max-listpack-entries
// and -value, a collection.Big past them. The shard is locked.
func (dt *Family) zstoreEntriesLocked(c *command.Ctx, sh *keyspace.Shard, key []byte, es []zent, event string) {
	if len(es) == 0 {
		notifyStored(c, notify.ZSet, event, key, 0, sh.DeleteLocked(key))
		return
	}
	longest := 0
	for _, e := range es {
		longest = max(longest, len(e.m))
	}
	big := int64(len(es)) > dt.cfg.Limits.ZsetEntries.Load() || int64(longest) > dt.cfg.Limits.ZsetValue.Load()
	var pack []byte
	for _, e := range es {
		s := e.s
		if !big && s == 0 {
			s = 0 // a listpack holds -0 as 0
		}
		pack = collection.AppendString(pack, []byte(e.m))
		pack = collection.AppendScore(pack, s)
	}
	if big {
		storeBigLocked(sh, key, keyspace.Value{Kind: keyspace.ZSet}, collection.NewBig(pack, true))
	} else {
		storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.ZSet, Num: int64(len(es)), Bytes: pack})
	}
	c.Notify(notify.ZSet, event, key)
}

// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]: ZRANGE's
// selection, found by replying it into a scratch writer, stored at dst.
func (dt *Family) cmdZRangeStore(c *command.Ctx, args [][]byte) error {
	dst, src := args[1], args[2]
	var buf [2]*keyspace.Shard
	shards := c.Keys.LockKeys([][]byte{dst, src}, buf[:0])
	defer keyspace.UnlockShards(shards)
	saved := c.W
	c.W = resp.Writer{Proto: 2}
	err := dt.zrange(c, args[1:], zrangeAuto, false, true)
	out := c.W.B
	c.W = saved
	if err != nil {
		return err
	}
	members := parseBulks(out)
	var es []zent
	if len(members) > 0 {
		v, _, err := dt.zsetLocked(c, c.Keys.Shard(src), src)
		if err != nil {
			return err
		}
		// Redis adds them one by one to a listpack, which holds -0 as 0, until one is past
		// its limits; a range of indexes past them starts big.
		byRank := true
		for _, a := range args[5:] {
			if command.EqualFold(a, "byscore") || command.EqualFold(a, "bylex") {
				byRank = false
			}
		}
		maxEntries, maxValue := dt.cfg.Limits.ZsetEntries.Load(), dt.cfg.Limits.ZsetValue.Load()
		big := byRank && int64(len(members)) > maxEntries
		es = make([]zent, len(members))
		for i, m := range members {
			s, _ := zscore(v, m)
			big = big || int64(i+1) > maxEntries || int64(len(m)) > maxValue
			if !big && s == 0 {
				s = 0
			}
			es[i] = zent{m: string(m), s: s}
		}
	}
	zsort(es)
	dt.zstoreEntriesLocked(c, c.Keys.Shard(dst), dst, es, "zrangestore")
	c.W.Int(int64(len(es)))
	return nil
}

// parseBulks reads a RESP2 array of bulk strings, as the range writers wrote it.
func parseBulks(b []byte) [][]byte {
	var out [][]byte
	line := func() []byte {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			b = nil
			return nil
		}
		l := b[:i-1]
		b = b[i+1:]
		return l
	}
	if l := line(); len(l) == 0 || l[0] != '*' {
		return nil
	}
	for len(b) > 0 {
		l := line()
		if len(l) == 0 || l[0] != '$' {
			break
		}
		n, ok := command.ParseInt(l[1:])
		if !ok || n < 0 || int(n)+2 > len(b) {
			break
		}
		out = append(out, b[:n])
		b = b[n+2:]
	}
	return out
}

// ZRANDMEMBER key [count [WITHSCORES]]
func (dt *Family) cmdZRandMember(c *command.Ctx, args [][]byte) error {
	hasCount, withScores := len(args) >= 3, false
	var count int64
	if hasCount {
		var ok bool
		if count, ok = command.ParseInt(args[2]); !ok {
			return command.ErrNotInteger
		}
		if count == math.MinInt64 {
			return errZRandCount
		}
		if len(args) > 4 || len(args) == 4 && !command.EqualFold(args[3], "withscores") {
			return command.ErrSyntax
		}
		if len(args) == 4 {
			withScores = true
			if count < -math.MaxInt64/2 || count > math.MaxInt64/2 {
				return errZRandRange
			}
		}
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.zsetLocked(c, sh, args[1])
	switch {
	case err != nil:
		return err
	case !ok && hasCount:
		c.W.Array(0)
		return nil
	case !ok:
		c.W.Null()
		return nil
	}
	var all []zent
	z := zsetOf(v).Pack
	for off := 0; off < len(z); {
		m, s, k := collection.ZNext(z[off:])
		if k == 0 {
			break
		}
		var buf [24]byte
		all = append(all, zent{m: string(m.Bytes(buf[:0])), s: s})
		off += k
	}
	if len(all) == 0 {
		c.W.Array(0)
		return nil
	}
	if !hasCount {
		c.W.Bulk([]byte(all[rand.IntN(len(all))].m))
		return nil
	}
	var pick []zent
	switch {
	case count == 0:
	case count < 0: // with repeats: written as drawn
		zentriesHeader(&c.W, -count, withScores)
		for i := int64(0); i < -count; i++ {
			e := all[rand.IntN(len(all))]
			if withScores && c.W.Proto == 3 {
				c.W.Array(2)
			}
			c.W.Bulk([]byte(e.m))
			if withScores {
				c.W.Double(e.s)
			}
		}
		return nil
	case count >= int64(len(all)):
		pick = all
	default:
		perm := rand.Perm(len(all))[:count]
		pick = make([]zent, len(perm))
		for i, p := range perm {
			pick[i] = all[p]
		}
	}
	zwriteEntries(&c.W, pick, withScores)
	return nil
}
