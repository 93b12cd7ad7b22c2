package datatype

import (
	"errors"
	"math"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
)

// listCommands returns the list commands.
func (dt *Family) listCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "lpush", Arity: -3, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW insert"}}, Group: "list", Since: "1.0.0", Summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist.", Syntax: "key element [element ...]", Handler: dt.pushHandler(true, false)},
		{Name: "rpush", Arity: -3, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW insert"}}, Group: "list", Since: "1.0.0", Summary: "Appends one or more elements to a list. Creates the key if it doesn't exist.", Syntax: "key element [element ...]", Handler: dt.pushHandler(false, false)},
		{Name: "lpushx", Arity: -3, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW insert"}}, Group: "list", Since: "2.2.0", Summary: "Prepends one or more elements to a list only when the list exists.", Syntax: "key element [element ...]", Handler: dt.pushHandler(true, true)},
		{Name: "rpushx", Arity: -3, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW insert"}}, Group: "list", Since: "2.2.0", Summary: "Appends one or more elements to a list only when the list exists.", Syntax: "key element [element ...]", Handler: dt.pushHandler(false, true)},
		{Name: "lpop", Arity: -2, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access delete"}}, Group: "list", Since: "1.0.0", Summary: "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", Syntax: "key [count]", Handler: dt.popHandler(true)},
		{Name: "rpop", Arity: -2, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access delete"}}, Group: "list", Since: "1.0.0", Summary: "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", Syntax: "key [count]", Handler: dt.popHandler(false)},
		{Name: "llen", Arity: 2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO"}}, Group: "list", Since: "1.0.0", Summary: "Returns the length of a list.", Syntax: "key", Handler: dt.cmdLLen},
		{Name: "lrange", Arity: 4, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "list", Since: "1.0.0", Summary: "Returns a range of elements from a list.", Syntax: "key start stop", Handler: dt.cmdLRange},
		{Name: "lindex", Arity: 3, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "list", Since: "1.0.0", Summary: "Returns an element from a list by its index.", Syntax: "key index", Handler: dt.cmdLIndex},
		{Name: "ltrim", Arity: 4, Flags: "write", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW delete"}}, Group: "list", Since: "1.0.0", Summary: "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", Syntax: "key start stop", Handler: dt.cmdLTrim},
		{Name: "lrem", Arity: 4, Flags: "write", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW delete"}}, Group: "list", Since: "1.0.0", Summary: "Removes elements from a list. Deletes the list if the last element was removed.", Syntax: "key count element", Handler: dt.cmdLRem},
		{Name: "lset", Arity: 4, Flags: "write denyoom", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}}, Group: "list", Since: "1.0.0", Summary: "Sets the value of an element in a list by its index.", Syntax: "key index element", Handler: dt.cmdLSet},
		{Name: "lpos", Arity: -3, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "list", Since: "6.0.6", Summary: "Returns the index of matching elements in a list.", Syntax: "key element [RANK rank] [COUNT num-matches] [MAXLEN len]", Handler: dt.cmdLPos},
		{Name: "linsert", Arity: 5, Flags: "write denyoom", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW insert"}}, Group: "list", Since: "2.2.0", Summary: "Inserts an element before or after another element in a list.", Syntax: "key BEFORE|AFTER pivot element", Handler: dt.cmdLInsert},
		{Name: "lmove", Arity: 5, Flags: "write denyoom", FirstKey: 1, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access delete"}, {Begin: 2, Flags: "RW insert"}}, Group: "list", Since: "6.2.0", Summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", Syntax: "source destination LEFT|RIGHT LEFT|RIGHT", Handler: dt.cmdLMove},
		{Name: "rpoplpush", Arity: 3, Flags: "write denyoom", FirstKey: 1, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access delete"}, {Begin: 2, Flags: "RW insert"}}, Group: "list", Since: "1.2.0", Summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", Syntax: "source destination", Handler: dt.cmdRPopLPush},
	}
}

var (
	// errNotPositive is a count that is negative or not an integer (LPOP, RPOP).
	errNotPositive = errors.New("value is out of range, must be positive")
	// errIndexRange is LSET past either end of the list.
	errIndexRange = errors.New("index out of range")
	// errRankZero is LPOS's RANK 0.
	errRankZero = errors.New("RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
	// errCountNegative is LPOS's COUNT below 0 or not an integer.
	errCountNegative = errors.New("COUNT can't be negative")
	// errMaxlenNegative is LPOS's MAXLEN below 0 or not an integer.
	errMaxlenNegative = errors.New("MAXLEN can't be negative")
)

// storeList writes pack, a list of n elements, at key with expire, or deletes the key when
// n is 0; a list past its small size (collection.ListIsBig) becomes a BigList. The shard
// is locked.
func (dt *Family) storeList(sh *keyspace.Shard, key []byte, pack []byte, n, expire int64) {
	if size := dt.cfg.Limits.ListSize.Load(); collection.ListIsBig(n, len(pack), size) {
		l := collection.NewBigList(pack, collection.ListNodeEntries(size))
		storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.List, Num: n, Obj: l, Expire: expire})
		return
	}
	storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.List, Num: n, Bytes: pack, Expire: expire})
}

// bigListOf returns the collection.BigList that v, a list, holds by reference, nil when
// it is bytes.
func bigListOf(v keyspace.Value) *collection.BigList {
	l, _ := v.Obj.(*collection.BigList)
	return l
}

// storeBigListLocked notes the write of l, the big list at key that v was, changed in
// place, or deletes the key when l is empty.
func storeBigListLocked(sh *keyspace.Shard, key []byte, v keyspace.Value, l *collection.BigList) {
	storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.List, Num: int64(l.Len()), Obj: l, Expire: v.Expire})
}

// pushHandler makes LPUSH, RPUSH, LPUSHX and RPUSHX key element [element ...]; with
// exists, a missing key is left missing.
func (dt *Family) pushHandler(head, exists bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		sh := c.Keys.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, ok, err := dt.kindLocked(c, sh, args[1], keyspace.List, c.Now())
		if err != nil {
			return err
		}
		if !ok && exists {
			c.W.Int(0)
			return nil
		}
		elems := args[2:]
		if l := bigListOf(v); l != nil {
			for _, e := range elems {
				l.Push(e, head)
			}
			storeBigListLocked(sh, args[1], v, l)
			c.Notify(notify.List, pushEvents[b2i(head)], args[1])
			c.W.Int(int64(l.Len()))
			return nil
		}
		c.Scratch = collection.ListPush(c.Scratch[:0], v.Bytes, head, elems)
		n := v.Num + int64(len(elems))
		dt.storeList(sh, args[1], c.Scratch, n, v.Expire)
		c.Notify(notify.List, pushEvents[b2i(head)], args[1])
		c.W.Int(n)
		return nil
	}
}

// popHandler makes LPOP key [count] and RPOP key [count].
func (dt *Family) popHandler(head bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		if len(args) > 3 {
			if head {
				return errors.New("wrong number of arguments for 'lpop' command")
			}
			return errors.New("wrong number of arguments for 'rpop' command")
		}
		count := int64(1)
		hasCount := len(args) == 3
		if hasCount {
			var ok bool
			if count, ok = command.ParseInt(args[2]); !ok || count < 0 {
				return errNotPositive
			}
		}
		sh := c.Keys.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, ok, err := dt.kindLocked(c, sh, args[1], keyspace.List, c.Now())
		switch {
		case err != nil:
			return err
		case !ok && hasCount:
			c.W.NullArray()
			return nil
		case !ok:
			c.W.Null()
			return nil
		}
		count = min(count, v.Num)
		if hasCount {
			c.W.Array(int(count))
		}
		if count == 0 {
			return nil
		}
		dt.listPopLocked(c, sh, args[1], v, count, head)
		return nil
	}
}

// listPopLocked pops count elements of v, the list at key, from its head or tail,
// replying each. The shard is locked.
func (dt *Family) listPopLocked(c *command.Ctx, sh *keyspace.Shard, key []byte, v keyspace.Value, count int64, head bool) {
	if l := bigListOf(v); l != nil {
		for i := count; i > 0; i-- {
			e, _ := collection.Read(l.End(head))
			writeElem(&c.W, e)
			l.Pop(head)
		}
		storeBigListLocked(sh, key, v, l)
		notifyRemoved(c, notify.List, popEvents[b2i(head)], key, count, v.Num)
		return
	}
	// The reply is written before the store replaces the bytes it is read from.
	pack := v.Bytes
	var rest []byte
	if head {
		off := collection.ListOffset(pack, count)
		for b := pack[:off]; len(b) > 0; {
			e, n := collection.Read(b)
			if n == 0 {
				break
			}
			writeElem(&c.W, e)
			b = b[n:]
		}
		rest = pack[off:]
	} else {
		off := collection.ListOffset(pack, v.Num-count)
		var buf [16]int
		offs := collection.ListOffsets(pack[off:], buf[:0])
		for i := len(offs) - 1; i >= 0; i-- {
			e, _ := collection.Read(pack[off+offs[i]:])
			writeElem(&c.W, e)
		}
		rest = pack[:off]
	}
	dt.storeList(sh, key, rest, v.Num-count, v.Expire) // SetLocked copies what aliases it
	notifyRemoved(c, notify.List, popEvents[b2i(head)], key, count, v.Num)
}

// LLEN key
func (dt *Family) cmdLLen(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.kindLocked(c, sh, args[1], keyspace.List, c.Now())
	if err != nil {
		return err
	}
	c.W.Int(v.Num)
	return nil
}

// LRANGE key start stop
func (dt *Family) cmdLRange(c *command.Ctx, args [][]byte) error {
	start, ok1 := command.ParseInt(args[2])
	stop, ok2 := command.ParseInt(args[3])
	if !ok1 || !ok2 {
		return command.ErrNotInteger
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.kindLocked(c, sh, args[1], keyspace.List, c.Now())
	if err != nil {
		return err
	}
	from, to, ok := collection.IndexRange(v.Num, start, stop)
	if !ok {
		c.W.Array(0)
		return nil
	}
	c.W.Array(int(to - from + 1))
	if l := bigListOf(v); l != nil {
		l.Range(from, to, func(e collection.Elem) bool {
			writeElem(&c.W, e)
			return true
		})
		return nil
	}
	b := v.Bytes[collection.ListOffset(v.Bytes, from):]
	for i := from; i <= to; i++ {
		e, n := collection.Read(b)
		writeElem(&c.W, e)
		b = b[n:]
	}
	return nil
}

// LINDEX key index
func (dt *Family) cmdLIndex(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.kindLocked(c, sh, args[1], keyspace.List, c.Now())
	switch {
	case err != nil:
		return err
	case !ok:
		c.W.Null() // Redis looks the key up before it reads the index
		return nil
	}
	i, ok := command.ParseInt(args[2])
	if !ok {
		return command.ErrNotInteger
	}
	if l := bigListOf(v); l != nil {
		if e, ok := l.Index(i); ok {
			writeElem(&c.W, e)
		} else {
			c.W.Null()
		}
		return nil
	}
	if e, ok := collection.ListIndex(v.Bytes, v.Num, i); ok {
		writeElem(&c.W, e)
	} else {
		c.W.Null()
	}
	return nil
}

// LTRIM key start stop
func (dt *Family) cmdLTrim(c *command.Ctx, args [][]byte) error {
	start, ok1 := command.ParseInt(args[2])
	stop, ok2 := command.ParseInt(args[3])
	if !ok1 || !ok2 {
		return command.ErrNotInteger
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.kindLocked(c, sh, args[1], keyspace.List, c.Now())
	if err != nil {
		return err
	}
	c.W.OK()
	if !ok {
		return nil
	}
	from, to, keep := collection.IndexRange(v.Num, start, stop)
	if !keep {
		dt.storeList(sh, args[1], nil, 0, 0)
		notifyRemoved(c, notify.List, "ltrim", args[1], v.Num, v.Num)
		return nil
	}
	if l := bigListOf(v); l != nil {
		l.Trim(from, to)
		storeBigListLocked(sh, args[1], v, l)
		c.Notify(notify.List, "ltrim", args[1])
		return nil
	}
	off := collection.ListOffset(v.Bytes, from)
	end := off + collection.ListOffset(v.Bytes[off:], to-from+1)
	dt.storeList(sh, args[1], v.Bytes[off:end], to-from+1, v.Expire)
	c.Notify(notify.List, "ltrim", args[1])
	return nil
}

// LREM key count element
func (dt *Family) cmdLRem(c *command.Ctx, args [][]byte) error {
	count, ok := command.ParseInt(args[2])
	if !ok {
		return command.ErrNotInteger
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.kindLocked(c, sh, args[1], keyspace.List, c.Now())
	switch {
	case err != nil:
		return err
	case !ok:
		c.W.Int(0)
		return nil
	}
	var removed int64
	if l := bigListOf(v); l != nil {
		if removed = l.Remove(count, args[3]); removed > 0 {
			storeBigListLocked(sh, args[1], v, l)
		}
		notifyRemoved(c, notify.List, "lrem", args[1], removed, v.Num)
		c.W.Int(removed)
		return nil
	}
	c.Scratch, removed = collection.ListRemove(c.Scratch[:0], v.Bytes, count, args[3])
	if removed > 0 {
		dt.storeList(sh, args[1], c.Scratch, v.Num-removed, v.Expire)
	}
	notifyRemoved(c, notify.List, "lrem", args[1], removed, v.Num)
	c.W.Int(removed)
	return nil
}

// LSET key index element
func (dt *Family) cmdLSet(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.kindLocked(c, sh, args[1], keyspace.List, c.Now())
	switch {
	case err != nil:
		return err
	case !ok:
		return command.ErrNoSuchKey
	}
	i, ok := command.ParseInt(args[2])
	if !ok {
		return command.ErrNotInteger
	}
	if l := bigListOf(v); l != nil {
		if !l.Set(i, args[3]) {
			return errIndexRange
		}
		storeBigListLocked(sh, args[1], v, l)
		c.Notify(notify.List, "lset", args[1])
		c.W.OK()
		return nil
	}
	if c.Scratch, ok = collection.ListSet(c.Scratch[:0], v.Bytes, v.Num, i, args[3]); !ok {
		return errIndexRange
	}
	dt.storeList(sh, args[1], c.Scratch, v.Num, v.Expire)
	c.Notify(notify.List, "lset", args[1])
	c.W.OK()
	return nil
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
func (dt *Family) cmdLPos(c *command.Ctx, args [][]byte) error {
	rank, count, maxlen := int64(1), int64(-1), int64(0) // count -1: no COUNT, one index or null
	for i := 3; i < len(args); i += 2 {
		if i+1 == len(args) {
			return command.ErrSyntax
		}
		n, ok := command.ParseInt(args[i+1])
		switch {
		case command.EqualFold(args[i], "rank"):
			if !ok {
				return command.ErrNotInteger
			}
			if n == 0 {
				return errRankZero
			}
			rank = n
		case command.EqualFold(args[i], "count"):
			if !ok || n < 0 {
				return errCountNegative
			}
			count = n
		case command.EqualFold(args[i], "maxlen"):
			if !ok || n < 0 {
				return errMaxlenNegative
			}
			maxlen = n
		default:
			return command.ErrSyntax
		}
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.kindLocked(c, sh, args[1], keyspace.List, c.Now())
	switch {
	case err != nil:
		return err
	case !ok && count < 0:
		c.W.Null()
		return nil
	case !ok:
		c.W.Array(0)
		return nil
	}
	want := count // how many indices: 0 all
	if count < 0 {
		want = 1
	}
	if rank == math.MinInt64 {
		// Redis negates RANK to search from the tail, and -2^63 stays itself: every match
		// from the tail on is taken, and COUNT never stops it.
		rank, want = -1, 0
	}
	pack := v.Bytes
	if l := bigListOf(v); l != nil {
		// A walk of a copy of the pack: LPOS is O(n) on Redis too.
		c.Scratch = l.AppendEncoded(c.Scratch[:0])
		pack = c.Scratch
	}
	var buf [16]int64
	found := collection.ListPos(pack, v.Num, args[2], rank, want, maxlen, buf[:0])
	if count < 0 {
		if len(found) == 0 {
			c.W.Null()
		} else {
			c.W.Int(found[0])
		}
		return nil
	}
	c.W.Array(len(found))
	for _, i := range found {
		c.W.Int(i)
	}
	return nil
}

// LINSERT key BEFORE|AFTER pivot element
func (dt *Family) cmdLInsert(c *command.Ctx, args [][]byte) error {
	var before bool
	switch {
	case command.EqualFold(args[2], "before"):
		before = true
	case command.EqualFold(args[2], "after"):
	default:
		return command.ErrSyntax
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.kindLocked(c, sh, args[1], keyspace.List, c.Now())
	switch {
	case err != nil:
		return err
	case !ok:
		c.W.Int(0)
		return nil
	}
	var found bool
	if l := bigListOf(v); l != nil {
		if !l.Insert(before, args[3], args[4]) {
			c.W.Int(-1)
			return nil
		}
		storeBigListLocked(sh, args[1], v, l)
		c.Notify(notify.List, "linsert", args[1])
		c.W.Int(int64(l.Len()))
		return nil
	}
	if c.Scratch, found = collection.ListInsert(c.Scratch[:0], v.Bytes, before, args[3], args[4]); !found {
		c.W.Int(-1)
		return nil
	}
	dt.storeList(sh, args[1], c.Scratch, v.Num+1, v.Expire)
	c.Notify(notify.List, "linsert", args[1])
	c.W.Int(v.Num + 1)
	return nil
}

// parseEnd reads LMOVE's LEFT or RIGHT: true for LEFT, the head.
func parseEnd(b []byte) (head bool, err error) {
	switch {
	case command.EqualFold(b, "left"):
		return true, nil
	case command.EqualFold(b, "right"):
		return false, nil
	}
	return false, command.ErrSyntax
}

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
func (dt *Family) cmdLMove(c *command.Ctx, args [][]byte) error {
	from, err := parseEnd(args[3])
	if err != nil {
		return err
	}
	to, err := parseEnd(args[4])
	if err != nil {
		return err
	}
	return dt.lmove(c, args[1], args[2], from, to)
}

// RPOPLPUSH source destination
func (dt *Family) cmdRPopLPush(c *command.Ctx, args [][]byte) error {
	return dt.lmove(c, args[1], args[2], false, true)
}

// lmove pops an element from src's head (from) or tail and pushes it at dst's head (to)
// or tail, both keys locked together.
func (dt *Family) lmove(c *command.Ctx, src, dst []byte, from, to bool) error {
	var buf [2]*keyspace.Shard
	shards := c.Keys.LockKeys([][]byte{src, dst}, buf[:0])
	defer keyspace.UnlockShards(shards)
	now := c.Now()
	ssh, dsh := c.Keys.Shard(src), c.Keys.Shard(dst)
	sv, ok, err := dt.kindLocked(c, ssh, src, keyspace.List, now)
	switch {
	case err != nil:
		return err
	case !ok:
		c.W.Null()
		return nil
	}
	dv, _, err := dt.kindLocked(c, dsh, dst, keyspace.List, now)
	if err != nil {
		return err
	}
	// raw is the element as encoded, pushed as it is: a copy, as a list moved onto
	// itself changes under it.
	var rawBuf [64]byte
	var raw, rest []byte // rest: what a small src keeps
	sl := bigListOf(sv)
	if sl != nil {
		raw = append(rawBuf[:0], sl.End(from)...)
	} else {
		off := 0
		if !from {
			off = collection.ListOffset(sv.Bytes, sv.Num-1)
		}
		n := collection.Skip(sv.Bytes[off:])
		raw = append(rawBuf[:0], sv.Bytes[off:off+n]...)
		rest = sv.Bytes[n:]
		if !from {
			rest = sv.Bytes[:off]
		}
	}
	e, _ := collection.Read(raw)
	writeElem(&c.W, e)
	if string(src) == string(dst) {
		if sl != nil {
			sl.Pop(from)
			sl.PushRaw(raw, to)
			storeBigListLocked(ssh, src, sv, sl)
			notifyMoved(c, src, dst, from, to, sv.Num)
			return nil
		}
		c.Scratch = collection.ListPushRaw(c.Scratch[:0], rest, to, raw)
		dt.storeList(ssh, src, c.Scratch, sv.Num, sv.Expire)
		notifyMoved(c, src, dst, from, to, sv.Num)
		return nil
	}
	// dst first: src's bytes stay valid while another key is written.
	if dl := bigListOf(dv); dl != nil {
		dl.PushRaw(raw, to)
		storeBigListLocked(dsh, dst, dv, dl)
	} else {
		c.Scratch = collection.ListPushRaw(c.Scratch[:0], dv.Bytes, to, raw)
		dt.storeList(dsh, dst, c.Scratch, dv.Num+1, dv.Expire)
	}
	if sl != nil {
		sl.Pop(from)
		storeBigListLocked(ssh, src, sv, sl)
		notifyMoved(c, src, dst, from, to, sv.Num-1)
		return nil
	}
	dt.storeList(ssh, src, rest, sv.Num-1, sv.Expire)
	notifyMoved(c, src, dst, from, to, sv.Num-1)
	return nil
}
