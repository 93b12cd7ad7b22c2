package datatype

import (
	"errors"
	"math"
	"math/rand/v2"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
)

// The set commands. A set is a keyspace.Value of Kind Set: Num its members, Bytes package
// collection's set in the encoding Num2 says: none for an intset, BigEncoding once it has
// left it (OBJECT ENCODING hashtable, as Redis 7.0 names every set that is no intset), and
// IndexedPack too when it has passed set-max-listpack-entries or -value and its bytes start
// with an index (collection.Set).

func (dt *Family) setCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "sadd", Arity: -3, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW insert"}}, Group: "set", Since: "1.0.0", Summary: "Adds one or more members to a set. Creates the key if it doesn't exist.", Syntax: "key member [member ...]", Handler: dt.setEditHandler("sadd", (*collection.SetEditor).Add)},
		{Name: "srem", Arity: -3, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW delete"}}, Group: "set", Since: "1.0.0", Summary: "Removes one or more members from a set. Deletes the set if the last member was removed.", Syntax: "key member [member ...]", Handler: dt.setEditHandler("srem", (*collection.SetEditor).Remove)},
		{Name: "sismember", Arity: 3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO"}}, Group: "set", Since: "1.0.0", Summary: "Determines whether a member belongs to a set.", Syntax: "key member", Handler: dt.cmdSIsMember},
		{Name: "smismember", Arity: -3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "set", Since: "6.2.0", Summary: "Determines whether multiple members belong to a set.", Syntax: "key member [member ...]", Handler: dt.cmdSMIsMember},
		{Name: "smembers", Arity: 2, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "set", Since: "1.0.0", Summary: "Returns all members of a set.", Syntax: "key", Handler: dt.cmdSMembers},
		{Name: "scard", Arity: 2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO"}}, Group: "set", Since: "1.0.0", Summary: "Returns the number of members in a set.", Syntax: "key", Handler: dt.cmdSCard},
		{Name: "spop", Arity: -2, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access delete"}}, Group: "set", Since: "1.0.0", Summary: "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.", Syntax: "key [count]", Handler: dt.cmdSPop},
		{Name: "srandmember", Arity: -2, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "set", Since: "1.0.0", Summary: "Get one or multiple random members from a set", Syntax: "key [count]", Handler: dt.cmdSRandMember},
		{Name: "smove", Arity: 4, Flags: "write fast", FirstKey: 1, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access delete"}, {Begin: 2, Flags: "RW insert"}}, Group: "set", Since: "1.0.0", Summary: "Moves a member from one set to another.", Syntax: "source destination member", Handler: dt.cmdSMove},
		{Name: "sinter", Arity: -2, Flags: "readonly", FirstKey: 1, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "set", Since: "1.0.0", Summary: "Returns the intersect of multiple sets.", Syntax: "key [key ...]", Handler: dt.setOpHandler(setInter, false)},
		{Name: "sintercard", Arity: -3, Flags: "readonly movablekeys", KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "set", Since: "7.0.0", Summary: "Returns the number of members of the intersect of multiple sets.", Syntax: "numkeys key [key ...] [LIMIT limit]", Handler: dt.cmdSInterCard, KeysOf: sintercardKeys},
		{Name: "sunion", Arity: -2, Flags: "readonly", FirstKey: 1, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "set", Since: "1.0.0", Summary: "Returns the union of multiple sets.", Syntax: "key [key ...]", Handler: dt.setOpHandler(setUnion, false)},
		{Name: "sdiff", Arity: -2, Flags: "readonly", FirstKey: 1, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "set", Since: "1.0.0", Summary: "Returns the difference of multiple sets.", Syntax: "key [key ...]", Handler: dt.setOpHandler(setDiff, false)},
		{Name: "sinterstore", Arity: -3, Flags: "write denyoom", FirstKey: 1, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}, {Begin: 2, Flags: "RO access"}}, Group: "set", Since: "1.0.0", Summary: "Stores the intersect of multiple sets in a key.", Syntax: "destination key [key ...]", Handler: dt.setOpHandler(setInter, true)},
		{Name: "sunionstore", Arity: -3, Flags: "write denyoom", FirstKey: 1, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "OW update"}, {Begin: 2, Flags: "RO access"}}, Group: "set", Since: "1.0.0", Summary: "Stores the union of multiple sets in a key.", Syntax: "destination key [key ...]", Handler: dt.setOpHandler(setUnion, true)},
		{Name: "sdiffstore", Arity: -3, Flags: "write denyoom", FirstKey: 1, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "OW update"}, {Begin: 2, Flags: "RO access"}}, Group: "set", Since: "1.0.0", Summary: "Stores the difference of multiple sets in a key.", Syntax: "destination key [key ...]", Handler: dt.setOpHandler(setDiff, true)},
		{Name: "sscan", Arity: -3, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "set", Since: "2.8.0", Summary: "Iterates over members of a set.", Syntax: "key cursor [MATCH pattern] [COUNT count]", Handler: dt.cmdSScan},
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
	case num2&IndexedPack != 0:
		return collection.BigSet
	case num2&BigEncoding != 0:
		return collection.SmallSet
	}
	return collection.Intset
}

// setFlags is the Value.Num2 of a set in enc.
func setFlags(enc collection.SetEncoding) int64 {
	switch enc {
	case collection.BigSet:
		return BigEncoding | IndexedPack
	case collection.SmallSet:
		return BigEncoding
	}
	return 0
}

// setOf reads v, a set.
func setOf(v keyspace.Value) collection.Set {
	if b := bigOf(v); b != nil {
		return collection.SetOfBig(b)
	}
	return collection.SetOf(v.Bytes, setEncoding(v.Num2))
}

// setLimits returns the set thresholds as configured now.
func (dt *Family) setLimits() collection.SetLimits {
	l := dt.cfg.Limits
	return collection.SetLimits{IntsetEntries: l.SetIntset.Load(), ListpackEntries: l.SetEntries.Load(), ListpackValue: l.SetValue.Load()}
}

// setLocked returns the set at key, a zero Value when there is none, or
// keyspace.ErrWrongType. The shard is locked.
func (dt *Family) setLocked(c *command.Ctx, sh *keyspace.Shard, key []byte) (keyspace.Value, bool, error) {
	v, ok, err := dt.kindLocked(c, sh, key, keyspace.Set, c.Now())
	if !ok {
		v = keyspace.Value{}
	}
	return v, ok, err
}

// editSet starts editing the set v in the client's scratch.
func (dt *Family) editSet(c *command.Ctx, v keyspace.Value) collection.SetEditor {
	return collection.NewSetEditor(setOf(v), v.Num, dt.setLimits(), c.Scratch)
}

// storeSetLocked stores what ed built at key, with expire, when it changed anything, and
// takes back the scratch.
func (dt *Family) storeSetLocked(c *command.Ctx, sh *keyspace.Shard, key []byte, expire int64, ed *collection.SetEditor) {
	switch {
	case ed.Changed() && ed.Big() != nil: // held in chunks, changed in place
		storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.Set, Num: ed.Num, Num2: setFlags(ed.Enc), Obj: ed.Big(), Expire: expire})
	case ed.Changed():
		storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.Set, Num: ed.Num, Num2: setFlags(ed.Enc), Bytes: ed.Bytes(), Expire: expire})
	}
	c.Scratch = ed.Buf()
}

// SADD key member [member ...] and SREM key member [member ...]: edit is Add or Remove,
// and the reply counts the members it changed; event is the keyspace event of a change.
func (dt *Family) setEditHandler(event string, edit func(*collection.SetEditor, []byte) bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		sh := c.Keys.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, _, err := dt.setLocked(c, sh, args[1])
		if err != nil {
			return err
		}
		ed := dt.editSet(c, v)
		changed := 0
		for _, m := range args[2:] {
			if edit(&ed, m) {
				changed++
			}
		}
		dt.storeSetLocked(c, sh, args[1], v.Expire, &ed)
		notifyRemoved(c, notify.Set, event, args[1], int64(changed), int64(changed)+ed.Num) // "del" when SREM left none
		c.W.Int(int64(changed))
		return nil
	}
}

// SISMEMBER key member
func (dt *Family) cmdSIsMember(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.setLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	c.W.Int(b2i(setOf(v).Has(args[2])))
	return nil
}

// SMISMEMBER key member [member ...]
func (dt *Family) cmdSMIsMember(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.setLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	c.W.Array(len(args) - 2)
	for _, m := range args[2:] {
		c.W.Int(b2i(setOf(v).Has(m)))
	}
	return nil
}

// SMEMBERS key: a set in RESP3.
func (dt *Family) cmdSMembers(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.setLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	c.W.SetHeader(int(v.Num))
	for m := range setOf(v).Members() {
		writeElem(&c.W, m)
	}
	return nil
}

// SCARD key
func (dt *Family) cmdSCard(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.setLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	c.W.Int(v.Num)
	return nil
}

// SPOP key [count]: without count a member or nil; with count that many distinct members
// (a set in RESP3), the whole set and the key gone when it has no more.
func (dt *Family) cmdSPop(c *command.Ctx, args [][]byte) error {
	if len(args) > 3 {
		return command.ErrSyntax
	}
	count := int64(-1)
	if len(args) == 3 {
		var ok bool
		if count, ok = command.ParseInt(args[2]); !ok || count < 0 {
			return errPositive
		}
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.setLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if count < 0 {
		if !ok {
			c.W.Null()
			return nil
		}
		ed := dt.editSet(c, v)
		var buf [64]byte
		c.W.Bulk(ed.Pop(rand.IntN(int(ed.Num)), buf[:0]))
		dt.storeSetLocked(c, sh, args[1], v.Expire, &ed)
		notifyRemoved(c, notify.Set, "spop", args[1], 1, v.Num)
		return nil
	}
	if !ok || count == 0 {
		c.W.SetHeader(0)
		return nil
	}
	if count >= v.Num { // the whole set, as SUNION of it replies it
		dt.replySet(c, setOf(v), v.Num)
		sh.DeleteLocked(args[1])
		notifyRemoved(c, notify.Set, "spop", args[1], v.Num, v.Num)
		return nil
	}
	c.W.SetHeader(int(count))
	c.Notify(notify.Set, "spop", args[1])
	ed := dt.editSet(c, v)
	var buf []byte
	for range count {
		buf = ed.Pop(rand.IntN(int(ed.Num)), buf[:0])
		c.W.Bulk(buf)
	}
	if rest := v.Num - count; rest*5 > count {
		dt.storeSetLocked(c, sh, args[1], v.Expire, &ed)
		return nil
	}
	// Few left: Redis moves them to a set made anew, which is an intset if it can be.
	nb := collection.NewSet(dt.setLimits(), nil)
	nb.AddAll(ed.Set())
	c.Scratch = ed.Buf()
	storeCollectionLocked(sh, args[1], keyspace.Value{Kind: keyspace.Set, Num: nb.Num, Num2: setFlags(nb.Enc), Bytes: nb.Bytes(), Expire: v.Expire})
	return nil
}

// replySet replies the set s of num members as Redis replies a set it has just built from
// it (SUNION of one set): an intset's members in order when they would make one.
func (dt *Family) replySet(c *command.Ctx, s collection.Set, num int64) {
	if s.Enc != collection.Intset {
		nb := collection.NewSet(dt.setLimits(), nil)
		nb.AddAll(s)
		s = nb.Set()
	}
	c.W.SetHeader(int(num))
	for m := range s.Members() {
		writeElem(&c.W, m)
	}
}

// SRANDMEMBER key [count]: without count a member or nil; with a positive count that many
// distinct members (all when there are fewer); with a negative count that many picks that
// may repeat.
func (dt *Family) cmdSRandMember(c *command.Ctx, args [][]byte) error {
	if len(args) > 3 {
		return command.ErrSyntax
	}
	count, withCount := int64(0), len(args) == 3
	if withCount {
		var ok bool
		if count, ok = command.ParseInt(args[2]); !ok {
			return command.ErrNotInteger
		}
		if count == math.MinInt64 {
			return errRandCountRange
		}
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.setLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	s := setOf(v)
	switch {
	case !withCount && !ok:
		c.W.Null()
	case !withCount:
		writeElem(&c.W, s.Nth(rand.IntN(int(v.Num))))
	case !ok || count == 0:
		c.W.Array(0)
	case count < 0 || count == 1: // picks that may repeat, as Redis makes a count of 1 too
		n := max(-count, 1)
		c.W.Array(int(n))
		if v.Num == 1 || n == 1 {
			for range n {
				writeElem(&c.W, s.Nth(rand.IntN(int(v.Num))))
			}
			return nil
		}
		offs := s.Offsets(nil)
		for range n {
			writeElem(&c.W, s.At(offs[rand.IntN(len(offs))]))
		}
	case count >= v.Num:
		c.W.Array(int(v.Num))
		for m := range s.Members() {
			writeElem(&c.W, m)
		}
	default: // count distinct members: each kept with the odds that leave count in the end
		c.W.Array(int(count))
		left, need := v.Num, count
		for m := range s.Members() {
			if rand.Int64N(left) < need {
				writeElem(&c.W, m)
				need--
			}
			left--
		}
	}
	return nil
}

// SMOVE source destination member
func (dt *Family) cmdSMove(c *command.Ctx, args [][]byte) error {
	src, dst, member := args[1], args[2], args[3]
	var buf [2]*keyspace.Shard
	shards := c.Keys.LockKeys([][]byte{src, dst}, buf[:0])
	defer keyspace.UnlockShards(shards)
	ssh, dsh := c.Keys.Shard(src), c.Keys.Shard(dst)
	sv, ok, err := dt.kindLocked(c, ssh, src, keyspace.Set, c.Now())
	if err != nil && err != keyspace.ErrWrongType {
		return err
	}
	if !ok && err == nil {
		c.W.Int(0) // Redis answers a missing source before it looks at the destination's type
		return nil
	}
	dv, _, derr := dt.setLocked(c, dsh, dst)
	switch {
	case err != nil:
		return err
	case derr != nil:
		return derr
	}
	if string(src) == string(dst) {
		c.W.Int(b2i(setOf(sv).Has(member)))
		return nil
	}
	ed := dt.editSet(c, sv)
	if !ed.Remove(member) {
		c.W.Int(0)
		return nil
	}
	dt.storeSetLocked(c, ssh, src, sv.Expire, &ed)
	notifyRemoved(c, notify.Set, "srem", src, 1, sv.Num)
	// The destination's bytes stay valid while another key is written.
	ed = dt.editSet(c, dv)
	added := ed.Add(member)
	dt.storeSetLocked(c, dsh, dst, dv.Expire, &ed)
	notifyIf(c, added, notify.Set, "sadd", dst)
	c.W.Int(1)
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
func (dt *Family) setsLocked(c *command.Ctx, keys [][]byte, sets []keyspace.Value) ([]keyspace.Value, error) {
	now := c.Now()
	for _, k := range keys {
		v, ok, err := dt.kindLocked(c, c.Keys.Shard(k), k, keyspace.Set, now)
		if err != nil {
			return nil, err
		}
		notifyMiss(c, k, ok || c.Reading) // a STORE form's read, which kindLocked does not count
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
func (dt *Family) setOpHandler(op setOp, store bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		c.Shards = c.Keys.LockKeys(args[1:], c.Shards[:0])
		defer keyspace.UnlockShards(c.Shards)
		keys := args[1:]
		if store {
			keys = args[2:]
		}
		values, err := dt.setsLocked(c, keys, nil)
		if err != nil {
			return err
		}
		nb := collection.NewSet(dt.setLimits(), nil)
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
			_, existed := c.Keys.Shard(args[1]).PeekLocked(args[1], c.Now())
			storeCollectionLocked(c.Keys.Shard(args[1]), args[1], keyspace.Value{Kind: keyspace.Set, Num: nb.Num, Num2: setFlags(nb.Enc), Bytes: nb.Bytes()})
			notifyStored(c, notify.Set, setStoreEvents[op], args[1], nb.Num, existed)
			c.W.Int(nb.Num)
			return nil
		}
		c.W.SetHeader(int(nb.Num))
		for m := range nb.Set().Members() {
			writeElem(&c.W, m)
		}
		return nil
	}
}

// sintercardKeys are SINTERCARD's keys: numkeys of them after it, none when numkeys is bad.
func sintercardKeys(args [][]byte) [][]byte {
	if len(args) < 3 {
		return nil
	}
	n, ok := command.ParseInt(args[1])
	if !ok || n <= 0 || n > int64(len(args)-2) {
		return nil
	}
	return args[2 : 2+n]
}

// SINTERCARD numkeys key [key ...] [LIMIT limit]
func (dt *Family) cmdSInterCard(c *command.Ctx, args [][]byte) error {
	numkeys, ok := command.ParseInt(args[1])
	if !ok || numkeys < 1 {
		return errNumKeys
	}
	if numkeys > int64(len(args)-2) {
		return command.ErrKeysTooMany
	}
	keys := args[2 : 2+numkeys]
	limit := int64(0)
	for i := 2 + int(numkeys); i < len(args); i++ {
		if !command.EqualFold(args[i], "limit") || i+1 >= len(args) {
			return command.ErrSyntax
		}
		i++
		l, ok := command.ParseInt(args[i])
		if !ok || l < 0 {
			return errLimitNegative
		}
		limit = l
	}
	c.Shards = c.Keys.LockKeys(keys, c.Shards[:0])
	defer keyspace.UnlockShards(c.Shards)
	values, err := dt.setsLocked(c, keys, nil)
	if err != nil {
		return err
	}
	sets, cards := setsOf(values)
	c.W.Int(collection.Inter(sets, cards, limit, func(collection.Elem) bool { return true }))
	return nil
}

// SSCAN key cursor [MATCH pattern] [COUNT count]: a set is scanned whole in one call, as
// the other SCANs here scan theirs, so the cursor returned is always 0 and COUNT only
// checked.
func (dt *Family) cmdSScan(c *command.Ctx, args [][]byte) error {
	if !parseScanCursor(args[2]) {
		return errors.New("invalid cursor")
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.setLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if !ok { // Redis replies before it reads the options
		dt.scanDone(c, dt.scanStart(c), 0)
		return nil
	}
	pattern, err := scanOptions(args[3:])
	if err != nil {
		return err
	}
	mark, n := dt.scanStart(c), 0
	var buf [24]byte
	for m := range setOf(v).Members() {
		if pattern == nil || glob.Match(pattern, m.Bytes(buf[:0])) {
			writeElem(&c.W, m)
			n++
		}
	}
	dt.scanDone(c, mark, n)
	return nil
}
