package server

import (
	"errors"
	"math"
	"math/rand/v2"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/keyspace"
)

// The set commands. A set is a keyspace.Value of Kind Set: Num its members, Bytes package
// collection's set in the encoding Num2 says: none for an intset, bigEncoding once it has
// left it (OBJECT ENCODING hashtable, as Redis 7.0 names every set that is no intset), and
// indexedPack too when it has passed set-max-listpack-entries or -value and its bytes start
// with an index (collection.Set).

func setCommands() []*command {
	return []*command{
		{name: "sadd", arity: -3, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "set", since: "1.0.0", summary: "Adds one or more members to a set. Creates the key if it doesn't exist.", syntax: "key member [member ...]", handler: setEditHandler((*collection.SetEditor).Add)},
		{name: "srem", arity: -3, flags: "write fast", firstKey: 1, lastKey: 1, group: "set", since: "1.0.0", summary: "Removes one or more members from a set. Deletes the set if the last member was removed.", syntax: "key member [member ...]", handler: setEditHandler((*collection.SetEditor).Remove)},
		{name: "sismember", arity: 3, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "set", since: "1.0.0", summary: "Determines whether a member belongs to a set.", syntax: "key member", handler: cmdSIsMember},
		{name: "smismember", arity: -3, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "set", since: "6.2.0", summary: "Determines whether multiple members belong to a set.", syntax: "key member [member ...]", handler: cmdSMIsMember},
		{name: "smembers", arity: 2, flags: "readonly", firstKey: 1, lastKey: 1, group: "set", since: "1.0.0", summary: "Returns all members of a set.", syntax: "key", handler: cmdSMembers},
		{name: "scard", arity: 2, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "set", since: "1.0.0", summary: "Returns the number of members in a set.", syntax: "key", handler: cmdSCard},
		{name: "spop", arity: -2, flags: "write fast", firstKey: 1, lastKey: 1, group: "set", since: "1.0.0", summary: "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", syntax: "key [count]", handler: cmdSPop},
		{name: "srandmember", arity: -2, flags: "readonly", firstKey: 1, lastKey: 1, group: "set", since: "1.0.0", summary: "Get one or multiple random members from a set", syntax: "key [count]", handler: cmdSRandMember},
		{name: "smove", arity: 4, flags: "write fast", firstKey: 1, lastKey: 2, group: "set", since: "1.0.0", summary: "Moves a member from one set to another.", syntax: "source destination member", handler: cmdSMove},
		{name: "sinter", arity: -2, flags: "readonly", firstKey: 1, lastKey: -1, group: "set", since: "1.0.0", summary: "Returns the intersect of multiple sets.", syntax: "key [key ...]", handler: setOpHandler(setInter, false)},
		{name: "sintercard", arity: -3, flags: "readonly movablekeys", group: "set", since: "7.0.0", summary: "Returns the number of members of the intersect of multiple sets.", syntax: "numkeys key [key ...] [LIMIT limit]", handler: cmdSInterCard, keysOf: sintercardKeys},
		{name: "sunion", arity: -2, flags: "readonly", firstKey: 1, lastKey: -1, group: "set", since: "1.0.0", summary: "Returns the union of multiple sets.", syntax: "key [key ...]", handler: setOpHandler(setUnion, false)},
		{name: "sdiff", arity: -2, flags: "readonly", firstKey: 1, lastKey: -1, group: "set", since: "1.0.0", summary: "Returns the difference of multiple sets.", syntax: "key [key ...]", handler: setOpHandler(setDiff, false)},
		{name: "sinterstore", arity: -3, flags: "write denyoom", firstKey: 1, lastKey: -1, group: "set", since: "1.0.0", summary: "Stores the intersect of multiple sets in a key.", syntax: "destination key [key ...]", handler: setOpHandler(setInter, true)},
		{name: "sunionstore", arity: -3, flags: "write denyoom", firstKey: 1, lastKey: -1, group: "set", since: "1.0.0", summary: "Stores the union of multiple sets in a key.", syntax: "destination key [key ...]", handler: setOpHandler(setUnion, true)},
		{name: "sdiffstore", arity: -3, flags: "write denyoom", firstKey: 1, lastKey: -1, group: "set", since: "1.0.0", summary: "Stores the difference of multiple sets in a key.", syntax: "destination key [key ...]", handler: setOpHandler(setDiff, true)},
		{name: "sscan", arity: -3, flags: "readonly", firstKey: 1, lastKey: 1, group: "set", since: "2.8.0", summary: "Iterates over members of a set.", syntax: "key cursor [MATCH pattern] [COUNT count]", handler: cmdSScan},
	}
}

var (
	// errPositive is SPOP's count that is no integer of at least 0.
	errPositive = errors.New("value is out of range, must be positive")
	// errNumKeys is SINTERCARD's numkeys that is no integer of at least 1.
	errNumKeys = errors.New("numkeys should be greater than 0")
	// errLimitNegative is SINTERCARD's LIMIT that is no integer of at least 0.
	errLimitNegative = errors.New("LIMIT can't be negative")
)

// setEncoding is the encoding a set's Value.Num2 says.
func setEncoding(num2 int64) collection.SetEncoding {
	switch {
	case num2&indexedPack != 0:
		return collection.BigSet
	case num2&bigEncoding != 0:
		return collection.SmallSet
	}
	return collection.Intset
}

// setFlags is the Value.Num2 of a set in enc.
func setFlags(enc collection.SetEncoding) int64 {
	switch enc {
	case collection.BigSet:
		return bigEncoding | indexedPack
	case collection.SmallSet:
		return bigEncoding
	}
	return 0
}

// setOf reads v, a set.
func setOf(v keyspace.Value) collection.Set {
	return collection.SetOf(v.Bytes, setEncoding(v.Num2))
}

// setLimits returns the set thresholds as configured now.
func (s *Server) setLimits() collection.SetLimits {
	l := &s.listpack
	return collection.SetLimits{IntsetEntries: l.setIntset.Load(), ListpackEntries: l.setEntries.Load(), ListpackValue: l.setValue.Load()}
}

// setLocked returns the set at key, a zero Value when there is none, or
// keyspace.ErrWrongType. The shard is locked.
func (c *client) setLocked(sh *keyspace.Shard, key []byte) (keyspace.Value, bool, error) {
	v, ok, err := c.kindLocked(sh, key, keyspace.Set, c.now())
	if !ok {
		v = keyspace.Value{}
	}
	return v, ok, err
}

// editSet starts editing the set v in the client's scratch.
func (c *client) editSet(v keyspace.Value) collection.SetEditor {
	return collection.NewSetEditor(setOf(v), v.Num, c.s.setLimits(), c.scratch)
}

// storeSetLocked stores what ed built at key, with expire, when it changed anything, and
// takes back the scratch.
func (c *client) storeSetLocked(sh *keyspace.Shard, key []byte, expire int64, ed *collection.SetEditor) {
	if ed.Changed() {
		storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.Set, Num: ed.Num, Num2: setFlags(ed.Enc), Bytes: ed.Bytes(), Expire: expire})
	}
	c.scratch = ed.Buf()
}

// SADD key member [member ...] and SREM key member [member ...]: edit is Add or Remove,
// and the reply counts the members it changed.
func setEditHandler(edit func(*collection.SetEditor, []byte) bool) handler {
	return func(c *client, args [][]byte) error {
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, _, err := c.setLocked(sh, args[1])
		if err != nil {
			return err
		}
		ed := c.editSet(v)
		changed := 0
		for _, m := range args[2:] {
			if edit(&ed, m) {
				changed++
			}
		}
		c.storeSetLocked(sh, args[1], v.Expire, &ed)
		c.w.Int(int64(changed))
		return nil
	}
}

// SISMEMBER key member
func cmdSIsMember(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.setLocked(sh, args[1])
	if err != nil {
		return err
	}
	c.w.Int(b2i(setOf(v).Has(args[2])))
	return nil
}

// SMISMEMBER key member [member ...]
func cmdSMIsMember(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.setLocked(sh, args[1])
	if err != nil {
		return err
	}
	c.w.Array(len(args) - 2)
	for _, m := range args[2:] {
		c.w.Int(b2i(setOf(v).Has(m)))
	}
	return nil
}

// SMEMBERS key: a set in RESP3.
func cmdSMembers(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.setLocked(sh, args[1])
	if err != nil {
		return err
	}
	c.w.SetHeader(int(v.Num))
	for m := range setOf(v).Members() {
		writeElem(&c.w, m)
	}
	return nil
}

// SCARD key
func cmdSCard(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.setLocked(sh, args[1])
	if err != nil {
		return err
	}
	c.w.Int(v.Num)
	return nil
}

// SPOP key [count]: without count a member or nil; with count that many distinct members
// (a set in RESP3), the whole set and the key gone when it has no more.
func cmdSPop(c *client, args [][]byte) error {
	if len(args) > 3 {
		return errSyntax
	}
	count := int64(-1)
	if len(args) == 3 {
		var ok bool
		if count, ok = parseInt(args[2]); !ok || count < 0 {
			return errPositive
		}
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.setLocked(sh, args[1])
	if err != nil {
		return err
	}
	if count < 0 {
		if !ok {
			c.w.Null()
			return nil
		}
		ed := c.editSet(v)
		var buf [64]byte
		c.w.Bulk(ed.Pop(rand.IntN(int(ed.Num)), buf[:0]))
		c.storeSetLocked(sh, args[1], v.Expire, &ed)
		return nil
	}
	if !ok || count == 0 {
		c.w.SetHeader(0)
		return nil
	}
	if count >= v.Num { // the whole set, as SUNION of it replies it
		c.replySet(setOf(v), v.Num)
		sh.DeleteLocked(args[1])
		return nil
	}
	c.w.SetHeader(int(count))
	ed := c.editSet(v)
	var buf []byte
	for range count {
		buf = ed.Pop(rand.IntN(int(ed.Num)), buf[:0])
		c.w.Bulk(buf)
	}
	if rest := v.Num - count; rest*5 > count {
		c.storeSetLocked(sh, args[1], v.Expire, &ed)
		return nil
	}
	// Few left: Redis moves them to a set made anew, which is an intset if it can be.
	nb := collection.NewSet(c.s.setLimits(), nil)
	nb.AddAll(ed.Set())
	c.scratch = ed.Buf()
	storeCollectionLocked(sh, args[1], keyspace.Value{Kind: keyspace.Set, Num: nb.Num, Num2: setFlags(nb.Enc), Bytes: nb.Bytes(), Expire: v.Expire})
	return nil
}

// replySet replies the set s of num members as Redis replies a set it has just built from
// it (SUNION of one set): an intset's members in order when they would make one.
func (c *client) replySet(s collection.Set, num int64) {
	if s.Enc != collection.Intset {
		nb := collection.NewSet(c.s.setLimits(), nil)
		nb.AddAll(s)
		s = nb.Set()
	}
	c.w.SetHeader(int(num))
	for m := range s.Members() {
		writeElem(&c.w, m)
	}
}

// SRANDMEMBER key [count]: without count a member or nil; with a positive count that many
// distinct members (all when there are fewer); with a negative count that many picks that
// may repeat.
func cmdSRandMember(c *client, args [][]byte) error {
	if len(args) > 3 {
		return errSyntax
	}
	count, withCount := int64(0), len(args) == 3
	if withCount {
		var ok bool
		if count, ok = parseInt(args[2]); !ok {
			return errNotInteger
		}
		if count == math.MinInt64 {
			return errRandCountRange
		}
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.setLocked(sh, args[1])
	if err != nil {
		return err
	}
	s := setOf(v)
	switch {
	case !withCount && !ok:
		c.w.Null()
	case !withCount:
		writeElem(&c.w, s.Nth(rand.IntN(int(v.Num))))
	case !ok || count == 0:
		c.w.Array(0)
	case count < 0 || count == 1: // picks that may repeat, as Redis makes a count of 1 too
		n := max(-count, 1)
		c.w.Array(int(n))
		if v.Num == 1 || n == 1 {
			for range n {
				writeElem(&c.w, s.Nth(rand.IntN(int(v.Num))))
			}
			return nil
		}
		offs := s.Offsets(nil)
		for range n {
			writeElem(&c.w, s.At(offs[rand.IntN(len(offs))]))
		}
	case count >= v.Num:
		c.w.Array(int(v.Num))
		for m := range s.Members() {
			writeElem(&c.w, m)
		}
	default: // count distinct members: each kept with the odds that leave count in the end
		c.w.Array(int(count))
		left, need := v.Num, count
		for m := range s.Members() {
			if rand.Int64N(left) < need {
				writeElem(&c.w, m)
				need--
			}
			left--
		}
	}
	return nil
}

// SMOVE source destination member
func cmdSMove(c *client, args [][]byte) error {
	src, dst, member := args[1], args[2], args[3]
	var buf [2]*keyspace.Shard
	shards := c.s.ks.LockKeys([][]byte{src, dst}, buf[:0])
	defer keyspace.UnlockShards(shards)
	ssh, dsh := c.s.ks.Shard(src), c.s.ks.Shard(dst)
	sv, ok, err := c.kindLocked(ssh, src, keyspace.Set, c.now())
	if err != nil && err != keyspace.ErrWrongType {
		return err
	}
	if !ok && err == nil {
		c.w.Int(0) // Redis answers a missing source before it looks at the destination's type
		return nil
	}
	dv, _, derr := c.setLocked(dsh, dst)
	switch {
	case err != nil:
		return err
	case derr != nil:
		return derr
	}
	if string(src) == string(dst) {
		c.w.Int(b2i(setOf(sv).Has(member)))
		return nil
	}
	ed := c.editSet(sv)
	if !ed.Remove(member) {
		c.w.Int(0)
		return nil
	}
	c.storeSetLocked(ssh, src, sv.Expire, &ed)
	// The destination's bytes stay valid while another key is written.
	ed = c.editSet(dv)
	ed.Add(member)
	c.storeSetLocked(dsh, dst, dv.Expire, &ed)
	c.w.Int(1)
	return nil
}

// setOp is what a set operation computes.
type setOp uint8

const (
	setInter setOp = iota
	setUnion
	setDiff
)

// setsLocked reads the sets at keys, whose shards are locked: a missing one is an empty
// set; a key of another type is keyspace.ErrWrongType, whichever comes first.
func (c *client) setsLocked(keys [][]byte, sets []keyspace.Value) ([]keyspace.Value, error) {
	now := c.now()
	for _, k := range keys {
		v, ok, err := c.kindLocked(c.s.ks.Shard(k), k, keyspace.Set, now)
		if err != nil {
			return nil, err
		}
		if !ok {
			v = keyspace.Value{}
		}
		sets = append(sets, v)
	}
	return sets, nil
}

// setsOf reads values, sets, with their counts of members.
func setsOf(values []keyspace.Value) ([]collection.Set, []int64) {
	sets, cards := make([]collection.Set, len(values)), make([]int64, len(values))
	for i, v := range values {
		sets[i], cards[i] = setOf(v), v.Num
	}
	return sets, cards
}

// setOpHandler makes SINTER, SUNION and SDIFF key [key ...], which reply the set (a set in
// RESP3), and, with store, their STORE forms destination key [key ...], which store it at
// destination (deleting it when the set is empty) and reply its size.
func setOpHandler(op setOp, store bool) handler {
	return func(c *client, args [][]byte) error {
		c.shards = c.s.ks.LockKeys(args[1:], c.shards[:0])
		defer keyspace.UnlockShards(c.shards)
		keys := args[1:]
		if store {
			keys = args[2:]
		}
		values, err := c.setsLocked(keys, nil)
		if err != nil {
			return err
		}
		nb := collection.NewSet(c.s.setLimits(), nil)
		switch sets, cards := setsOf(values); op {
		case setInter:
			var buf [24]byte
			collection.Inter(sets, cards, 0, func(m collection.Elem) bool {
				nb.Add(m.Bytes(buf[:0]))
				return true
			})
		case setUnion:
			nb.AddUnion(sets)
		default:
			nb.AddDiff(sets)
		}
		if store {
			storeCollectionLocked(c.s.ks.Shard(args[1]), args[1], keyspace.Value{Kind: keyspace.Set, Num: nb.Num, Num2: setFlags(nb.Enc), Bytes: nb.Bytes()})
			c.w.Int(nb.Num)
			return nil
		}
		c.w.SetHeader(int(nb.Num))
		for m := range nb.Set().Members() {
			writeElem(&c.w, m)
		}
		return nil
	}
}

// sintercardKeys are SINTERCARD's keys: numkeys of them after it, none when numkeys is bad.
func sintercardKeys(args [][]byte) [][]byte {
	if len(args) < 3 {
		return nil
	}
	n, ok := parseInt(args[1])
	if !ok || n <= 0 || n > int64(len(args)-2) {
		return nil
	}
	return args[2 : 2+n]
}

// SINTERCARD numkeys key [key ...] [LIMIT limit]
func cmdSInterCard(c *client, args [][]byte) error {
	numkeys, ok := parseInt(args[1])
	if !ok || numkeys < 1 {
		return errNumKeys
	}
	if numkeys > int64(len(args)-2) {
		return errKeysTooMany // EVAL's text, as Redis gives it
	}
	keys := args[2 : 2+numkeys]
	limit := int64(0)
	for i := 2 + int(numkeys); i < len(args); i++ {
		if !equalFold(args[i], "limit") || i+1 >= len(args) {
			return errSyntax
		}
		i++
		l, ok := parseInt(args[i])
		if !ok || l < 0 {
			return errLimitNegative
		}
		limit = l
	}
	c.shards = c.s.ks.LockKeys(keys, c.shards[:0])
	defer keyspace.UnlockShards(c.shards)
	values, err := c.setsLocked(keys, nil)
	if err != nil {
		return err
	}
	sets, cards := setsOf(values)
	c.w.Int(collection.Inter(sets, cards, limit, func(collection.Elem) bool { return true }))
	return nil
}

// SSCAN key cursor [MATCH pattern] [COUNT count]: a set is scanned whole in one call, as
// the other SCANs here scan theirs, so the cursor returned is always 0 and COUNT only
// checked.
func cmdSScan(c *client, args [][]byte) error {
	if !parseScanCursor(args[2]) {
		return errors.New("invalid cursor")
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.setLocked(sh, args[1])
	if err != nil {
		return err
	}
	if !ok { // Redis replies before it reads the options
		c.scanDone(c.scanStart(), 0)
		return nil
	}
	pattern, err := scanOptions(args[3:])
	if err != nil {
		return err
	}
	mark, n := c.scanStart(), 0
	var buf [24]byte
	for m := range setOf(v).Members() {
		if pattern == nil || glob.Match(pattern, m.Bytes(buf[:0])) {
			writeElem(&c.w, m)
			n++
		}
	}
	c.scanDone(mark, n)
	return nil
}
