package server

import (
	"errors"
	"math"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/keyspace"
)

// listCommands returns the list commands.
func listCommands() []*command {
	return []*command{
		{name: "lpush", arity: -3, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "list", since: "1.0.0", summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist.", syntax: "key element [element ...]", handler: pushHandler(true, false)},
		{name: "rpush", arity: -3, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "list", since: "1.0.0", summary: "Appends one or more elements to a list. Creates the key if it doesn't exist.", syntax: "key element [element ...]", handler: pushHandler(false, false)},
		{name: "lpushx", arity: -3, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "list", since: "2.2.0", summary: "Prepends one or more elements to a list only when the list exists.", syntax: "key element [element ...]", handler: pushHandler(true, true)},
		{name: "rpushx", arity: -3, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "list", since: "2.2.0", summary: "Appends one or more elements to a list only when the list exists.", syntax: "key element [element ...]", handler: pushHandler(false, true)},
		{name: "lpop", arity: -2, flags: "write fast", firstKey: 1, lastKey: 1, group: "list", since: "1.0.0", summary: "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.", syntax: "key [count]", handler: popHandler(true)},
		{name: "rpop", arity: -2, flags: "write fast", firstKey: 1, lastKey: 1, group: "list", since: "1.0.0", summary: "Returns and removes the last elements of a list. Deletes the list if the last element was popped.", syntax: "key [count]", handler: popHandler(false)},
		{name: "llen", arity: 2, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "list", since: "1.0.0", summary: "Returns the length of a list.", syntax: "key", handler: cmdLLen},
		{name: "lrange", arity: 4, flags: "readonly", firstKey: 1, lastKey: 1, group: "list", since: "1.0.0", summary: "Returns a range of elements from a list.", syntax: "key start stop", handler: cmdLRange},
		{name: "lindex", arity: 3, flags: "readonly", firstKey: 1, lastKey: 1, group: "list", since: "1.0.0", summary: "Returns an element from a list by its index.", syntax: "key index", handler: cmdLIndex},
		{name: "ltrim", arity: 4, flags: "write", firstKey: 1, lastKey: 1, group: "list", since: "1.0.0", summary: "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", syntax: "key start stop", handler: cmdLTrim},
		{name: "lrem", arity: 4, flags: "write", firstKey: 1, lastKey: 1, group: "list", since: "1.0.0", summary: "Removes elements from a list. Deletes the list if the last element was removed.", syntax: "key count element", handler: cmdLRem},
		{name: "lset", arity: 4, flags: "write denyoom", firstKey: 1, lastKey: 1, group: "list", since: "1.0.0", summary: "Sets the value of an element in a list by its index.", syntax: "key index element", handler: cmdLSet},
		{name: "lpos", arity: -3, flags: "readonly", firstKey: 1, lastKey: 1, group: "list", since: "6.0.6", summary: "Returns the index of matching elements in a list.", syntax: "key element [RANK rank] [COUNT num-matches] [MAXLEN len]", handler: cmdLPos},
		{name: "linsert", arity: 5, flags: "write denyoom", firstKey: 1, lastKey: 1, group: "list", since: "2.2.0", summary: "Inserts an element before or after another element in a list.", syntax: "key BEFORE|AFTER pivot element", handler: cmdLInsert},
		{name: "lmove", arity: 5, flags: "write denyoom", firstKey: 1, lastKey: 2, group: "list", since: "6.2.0", summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", syntax: "source destination LEFT|RIGHT LEFT|RIGHT", handler: cmdLMove},
		{name: "rpoplpush", arity: 3, flags: "write denyoom", firstKey: 1, lastKey: 2, group: "list", since: "1.2.0", summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", syntax: "source destination", handler: cmdRPopLPush},
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
// n is 0. The shard is locked.
func storeList(sh *keyspace.Shard, key []byte, pack []byte, n, expire int64) {
	storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.List, Num: n, Bytes: pack, Expire: expire})
}

// pushHandler makes LPUSH, RPUSH, LPUSHX and RPUSHX key element [element ...]; with
// exists, a missing key is left missing.
func pushHandler(head, exists bool) handler {
	return func(c *client, args [][]byte) error {
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, ok, err := c.kindLocked(sh, args[1], keyspace.List, c.now())
		if err != nil {
			return err
		}
		if !ok && exists {
			c.w.Int(0)
			return nil
		}
		elems := args[2:]
		c.scratch = collection.ListPush(c.scratch[:0], v.Bytes, head, elems)
		n := v.Num + int64(len(elems))
		storeList(sh, args[1], c.scratch, n, v.Expire)
		c.w.Int(n)
		return nil
	}
}

// popHandler makes LPOP key [count] and RPOP key [count].
func popHandler(head bool) handler {
	return func(c *client, args [][]byte) error {
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
			if count, ok = parseInt(args[2]); !ok || count < 0 {
				return errNotPositive
			}
		}
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, ok, err := c.kindLocked(sh, args[1], keyspace.List, c.now())
		switch {
		case err != nil:
			return err
		case !ok && hasCount:
			c.w.NullArray()
			return nil
		case !ok:
			c.w.Null()
			return nil
		}
		count = min(count, v.Num)
		if hasCount {
			c.w.Array(int(count))
		}
		if count == 0 {
			return nil
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
				writeElem(&c.w, e)
				b = b[n:]
			}
			rest = pack[off:]
		} else {
			off := collection.ListOffset(pack, v.Num-count)
			var buf [16]int
			offs := collection.ListOffsets(pack[off:], buf[:0])
			for i := len(offs) - 1; i >= 0; i-- {
				e, _ := collection.Read(pack[off+offs[i]:])
				writeElem(&c.w, e)
			}
			rest = pack[:off]
		}
		storeList(sh, args[1], rest, v.Num-count, v.Expire) // SetLocked copies what aliases it
		return nil
	}
}

// LLEN key
func cmdLLen(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.kindLocked(sh, args[1], keyspace.List, c.now())
	if err != nil {
		return err
	}
	c.w.Int(v.Num)
	return nil
}

// LRANGE key start stop
func cmdLRange(c *client, args [][]byte) error {
	start, ok1 := parseInt(args[2])
	stop, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		return errNotInteger
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.kindLocked(sh, args[1], keyspace.List, c.now())
	if err != nil {
		return err
	}
	from, to, ok := collection.IndexRange(v.Num, start, stop)
	if !ok {
		c.w.Array(0)
		return nil
	}
	c.w.Array(int(to - from + 1))
	b := v.Bytes[collection.ListOffset(v.Bytes, from):]
	for i := from; i <= to; i++ {
		e, n := collection.Read(b)
		writeElem(&c.w, e)
		b = b[n:]
	}
	return nil
}

// LINDEX key index
func cmdLIndex(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.kindLocked(sh, args[1], keyspace.List, c.now())
	switch {
	case err != nil:
		return err
	case !ok:
		c.w.Null() // Redis looks the key up before it reads the index
		return nil
	}
	i, ok := parseInt(args[2])
	if !ok {
		return errNotInteger
	}
	if e, ok := collection.ListIndex(v.Bytes, v.Num, i); ok {
		writeElem(&c.w, e)
	} else {
		c.w.Null()
	}
	return nil
}

// LTRIM key start stop
func cmdLTrim(c *client, args [][]byte) error {
	start, ok1 := parseInt(args[2])
	stop, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		return errNotInteger
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.kindLocked(sh, args[1], keyspace.List, c.now())
	if err != nil {
		return err
	}
	c.w.OK()
	if !ok {
		return nil
	}
	from, to, keep := collection.IndexRange(v.Num, start, stop)
	if !keep {
		storeList(sh, args[1], nil, 0, 0)
		return nil
	}
	off := collection.ListOffset(v.Bytes, from)
	end := off + collection.ListOffset(v.Bytes[off:], to-from+1)
	storeList(sh, args[1], v.Bytes[off:end], to-from+1, v.Expire)
	return nil
}

// LREM key count element
func cmdLRem(c *client, args [][]byte) error {
	count, ok := parseInt(args[2])
	if !ok {
		return errNotInteger
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.kindLocked(sh, args[1], keyspace.List, c.now())
	switch {
	case err != nil:
		return err
	case !ok:
		c.w.Int(0)
		return nil
	}
	var removed int64
	c.scratch, removed = collection.ListRemove(c.scratch[:0], v.Bytes, count, args[3])
	if removed > 0 {
		storeList(sh, args[1], c.scratch, v.Num-removed, v.Expire)
	}
	c.w.Int(removed)
	return nil
}

// LSET key index element
func cmdLSet(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.kindLocked(sh, args[1], keyspace.List, c.now())
	switch {
	case err != nil:
		return err
	case !ok:
		return errNoSuchKey
	}
	i, ok := parseInt(args[2])
	if !ok {
		return errNotInteger
	}
	if c.scratch, ok = collection.ListSet(c.scratch[:0], v.Bytes, v.Num, i, args[3]); !ok {
		return errIndexRange
	}
	storeList(sh, args[1], c.scratch, v.Num, v.Expire)
	c.w.OK()
	return nil
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
func cmdLPos(c *client, args [][]byte) error {
	rank, count, maxlen := int64(1), int64(-1), int64(0) // count -1: no COUNT, one index or null
	for i := 3; i < len(args); i += 2 {
		if i+1 == len(args) {
			return errSyntax
		}
		n, ok := parseInt(args[i+1])
		switch {
		case equalFold(args[i], "rank"):
			if !ok {
				return errNotInteger
			}
			if n == 0 {
				return errRankZero
			}
			rank = n
		case equalFold(args[i], "count"):
			if !ok || n < 0 {
				return errCountNegative
			}
			count = n
		case equalFold(args[i], "maxlen"):
			if !ok || n < 0 {
				return errMaxlenNegative
			}
			maxlen = n
		default:
			return errSyntax
		}
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.kindLocked(sh, args[1], keyspace.List, c.now())
	switch {
	case err != nil:
		return err
	case !ok && count < 0:
		c.w.Null()
		return nil
	case !ok:
		c.w.Array(0)
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
	var buf [16]int64
	found := collection.ListPos(v.Bytes, v.Num, args[2], rank, want, maxlen, buf[:0])
	if count < 0 {
		if len(found) == 0 {
			c.w.Null()
		} else {
			c.w.Int(found[0])
		}
		return nil
	}
	c.w.Array(len(found))
	for _, i := range found {
		c.w.Int(i)
	}
	return nil
}

// LINSERT key BEFORE|AFTER pivot element
func cmdLInsert(c *client, args [][]byte) error {
	var before bool
	switch {
	case equalFold(args[2], "before"):
		before = true
	case equalFold(args[2], "after"):
	default:
		return errSyntax
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.kindLocked(sh, args[1], keyspace.List, c.now())
	switch {
	case err != nil:
		return err
	case !ok:
		c.w.Int(0)
		return nil
	}
	var found bool
	if c.scratch, found = collection.ListInsert(c.scratch[:0], v.Bytes, before, args[3], args[4]); !found {
		c.w.Int(-1)
		return nil
	}
	storeList(sh, args[1], c.scratch, v.Num+1, v.Expire)
	c.w.Int(v.Num + 1)
	return nil
}

// parseEnd reads LMOVE's LEFT or RIGHT: true for LEFT, the head.
func parseEnd(b []byte) (head bool, err error) {
	switch {
	case equalFold(b, "left"):
		return true, nil
	case equalFold(b, "right"):
		return false, nil
	}
	return false, errSyntax
}

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
func cmdLMove(c *client, args [][]byte) error {
	from, err := parseEnd(args[3])
	if err != nil {
		return err
	}
	to, err := parseEnd(args[4])
	if err != nil {
		return err
	}
	return lmove(c, args[1], args[2], from, to)
}

// RPOPLPUSH source destination
func cmdRPopLPush(c *client, args [][]byte) error {
	return lmove(c, args[1], args[2], false, true)
}

// lmove pops an element from src's head (from) or tail and pushes it at dst's head (to)
// or tail, both keys locked together.
func lmove(c *client, src, dst []byte, from, to bool) error {
	var buf [2]*keyspace.Shard
	shards := c.s.ks.LockKeys([][]byte{src, dst}, buf[:0])
	defer keyspace.UnlockShards(shards)
	now := c.now()
	ssh, dsh := c.s.ks.Shard(src), c.s.ks.Shard(dst)
	sv, ok, err := c.kindLocked(ssh, src, keyspace.List, now)
	switch {
	case err != nil:
		return err
	case !ok:
		c.w.Null()
		return nil
	}
	dv, _, err := c.kindLocked(dsh, dst, keyspace.List, now)
	if err != nil {
		return err
	}
	off := 0
	if !from {
		off = collection.ListOffset(sv.Bytes, sv.Num-1)
	}
	e, n := collection.Read(sv.Bytes[off:])
	raw := sv.Bytes[off : off+n] // the element as encoded: pushed as it is
	rest := sv.Bytes[n:]         // what src keeps
	if !from {
		rest = sv.Bytes[:off]
	}
	writeElem(&c.w, e)
	if string(src) == string(dst) {
		c.scratch = collection.ListPushRaw(c.scratch[:0], rest, to, raw)
		storeList(ssh, src, c.scratch, sv.Num, sv.Expire)
		return nil
	}
	// dst first: src's bytes stay valid while another key is written.
	c.scratch = collection.ListPushRaw(c.scratch[:0], dv.Bytes, to, raw)
	storeList(dsh, dst, c.scratch, dv.Num+1, dv.Expire)
	storeList(ssh, src, rest, sv.Num-1, sv.Expire)
	return nil
}
