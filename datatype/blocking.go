package datatype

import (
	"bytes"
	"errors"
	"math"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
)

// The pops from the first of several keys (LMPOP, ZMPOP) and the blocking commands
// (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP). A blocking
// command first tries as its non-blocking form; when every key is empty it sets
// command.Ctx.Block, whose Serve retries it on the one key a write made ready, and the
// server parks the client until then (server/blocking.go). In a transaction or a script
// (Ctx.NoBlock) it replies at once as on its timeout: a null array.

func (dt *Family) blockingCommands() []*command.Spec {
	popSpecs := []command.KeySpec{{Begin: 1, Flags: "RW access delete"}}
	moveSpecs := []command.KeySpec{{Begin: 1, Flags: "RW access delete"}, {Begin: 2, Flags: "RW insert"}}
	return []*command.Spec{
		{Name: "lmpop", Arity: -4, Flags: "write movablekeys", KeySpecs: popSpecs, KeysOf: mpopKeys(1), Group: "list", Since: "7.0.0", Summary: "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", Syntax: "numkeys key [key ...] LEFT|RIGHT [COUNT count]", Handler: dt.lmpopHandler(false)},
		{Name: "zmpop", Arity: -4, Flags: "write movablekeys", KeySpecs: popSpecs, KeysOf: mpopKeys(1), Group: "sorted-set", Since: "7.0.0", Summary: "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", Syntax: "numkeys key [key ...] MIN|MAX [COUNT count]", Handler: dt.zmpopHandler(false)},
		{Name: "blpop", Arity: -3, Flags: "write noscript blocking", FirstKey: 1, LastKey: -2, KeySpecs: popSpecs, Group: "list", Since: "2.0.0", Summary: "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Syntax: "key [key ...] timeout", Handler: dt.blpopHandler(true)},
		{Name: "brpop", Arity: -3, Flags: "write noscript blocking", FirstKey: 1, LastKey: -2, KeySpecs: popSpecs, Group: "list", Since: "2.0.0", Summary: "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Syntax: "key [key ...] timeout", Handler: dt.blpopHandler(false)},
		{Name: "blmove", Arity: 6, Flags: "write denyoom noscript blocking", FirstKey: 1, LastKey: 2, KeySpecs: moveSpecs, Group: "list", Since: "6.2.0", Summary: "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", Syntax: "source destination LEFT|RIGHT LEFT|RIGHT timeout", Handler: dt.cmdBLMove},
		{Name: "brpoplpush", Arity: 4, Flags: "write denyoom noscript blocking", FirstKey: 1, LastKey: 2, KeySpecs: moveSpecs, Group: "list", Since: "2.2.0", Summary: "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", Syntax: "source destination timeout", Handler: dt.cmdBRPopLPush},
		{Name: "blmpop", Arity: -5, Flags: "write blocking movablekeys", KeySpecs: []command.KeySpec{{Begin: 2, Flags: "RW access delete"}}, KeysOf: mpopKeys(2), Group: "list", Since: "7.0.0", Summary: "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", Syntax: "timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]", Handler: dt.lmpopHandler(true)},
		{Name: "bzpopmin", Arity: -3, Flags: "write noscript blocking fast", FirstKey: 1, LastKey: -2, KeySpecs: popSpecs, Group: "sorted-set", Since: "5.0.0", Summary: "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", Syntax: "key [key ...] timeout", Handler: dt.bzpopHandler(false)},
		{Name: "bzpopmax", Arity: -3, Flags: "write noscript blocking fast", FirstKey: 1, LastKey: -2, KeySpecs: popSpecs, Group: "sorted-set", Since: "5.0.0", Summary: "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", Syntax: "key [key ...] timeout", Handler: dt.bzpopHandler(true)},
		{Name: "bzmpop", Arity: -5, Flags: "write blocking movablekeys", KeySpecs: []command.KeySpec{{Begin: 2, Flags: "RW access delete"}}, KeysOf: mpopKeys(2), Group: "sorted-set", Since: "7.0.0", Summary: "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.", Syntax: "timeout numkeys key [key ...] MIN|MAX [COUNT count]", Handler: dt.zmpopHandler(true)},
	}
}

var (
	// errTimeoutFloat is a blocking command's timeout that is not a number.
	errTimeoutFloat = errors.New("timeout is not a float or out of range")
	// errTimeoutNegative is a timeout below 0 (or past what milliseconds hold, as Redis's cast makes it).
	errTimeoutNegative = errors.New("timeout is negative")
	// errCountPositive is an MPOP's COUNT that is no integer of at least 1.
	errCountPositive = errors.New("count should be greater than 0")
)

// parseTimeout reads a blocking command's timeout, seconds as a double, into ns; 0 is
// forever. As Redis it counts whole milliseconds, rounded up.
func parseTimeout(b []byte) (int64, error) {
	f, ok := collection.ParseScore(b)
	if !ok || math.IsNaN(f) {
		return 0, errTimeoutFloat
	}
	ms := math.Ceil(f * 1000)
	if ms < 0 || ms >= math.MaxInt64 || math.IsInf(ms, 0) {
		return 0, errTimeoutNegative
	}
	if ms >= math.MaxInt64/1e6 {
		return 0, nil // past any wait that matters: forever
	}
	return int64(ms) * 1e6, nil
}

// mpopKeys returns the KeysOf of an MPOP whose numkeys is at numIdx.
func mpopKeys(numIdx int) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		if len(args) <= numIdx {
			return nil
		}
		n, ok := command.ParseInt(args[numIdx])
		if !ok || n <= 0 || n > int64(len(args)-numIdx-1) {
			return nil
		}
		return args[numIdx+1 : numIdx+1+int(n)]
	}
}

// parseMPop reads an MPOP's numkeys key [key ...] LEFT|RIGHT (MIN|MAX) [COUNT count] from
// args[numIdx]: the keys, whether from the head (LEFT, MIN) and the count.
func parseMPop(args [][]byte, numIdx int, head, tail string) (keys [][]byte, fromHead bool, count int64, err error) {
	n, ok := command.ParseInt(args[numIdx])
	if !ok || n < 1 {
		return nil, false, 0, errNumKeys
	}
	if n >= int64(len(args)) { // more keys than arguments (and numIdx+n+1 not past int64)
		return nil, false, 0, command.ErrSyntax
	}
	where := int64(numIdx) + n + 1
	if where >= int64(len(args)) {
		return nil, false, 0, command.ErrSyntax
	}
	switch {
	case command.EqualFold(args[where], head):
		fromHead = true
	case command.EqualFold(args[where], tail):
	default:
		return nil, false, 0, command.ErrSyntax
	}
	count = -1
	for j := int(where) + 1; j < len(args); j++ {
		if count != -1 || !command.EqualFold(args[j], "count") || j+1 >= len(args) {
			return nil, false, 0, command.ErrSyntax
		}
		j++
		if count, ok = command.ParseInt(args[j]); !ok || count < 1 {
			return nil, false, 0, errCountPositive
		}
	}
	if count == -1 {
		count = 1
	}
	return args[numIdx+1 : where], fromHead, count, nil
}

// popStyle is how a pop from one of several keys replies.
type popStyle uint8

const (
	popPair  popStyle = iota // BLPOP: key, element; BZPOPMIN: key, member, score
	popMulti                 // LMPOP, ZMPOP: key, then an array of elements (member, score pairs)
)

// popFirstLocked pops from the first of keys that holds kind, whose shards are locked, as the
// multi-key pops do: a missing key is skipped, one of another kind before it is an error.
// It reports whether it found one and replied.
func (dt *Family) popFirstLocked(c *command.Ctx, keys [][]byte, kind keyspace.Kind, fromHead bool, count int64, style popStyle) (bool, error) {
	now := c.Now()
	for _, k := range keys {
		sh := c.Keys.Shard(k)
		v, ok, err := dt.kindLocked(c, sh, k, kind, now)
		if err != nil {
			return false, err
		}
		if !ok {
			continue
		}
		dt.popReplyLocked(c, sh, k, v, kind, fromHead, count, style)
		return true, nil
	}
	return false, nil
}

// popReplyLocked pops from v, the live collection at key, and replies in style.
func (dt *Family) popReplyLocked(c *command.Ctx, sh *keyspace.Shard, key []byte, v keyspace.Value, kind keyspace.Kind, fromHead bool, count int64, style popStyle) {
	n := min(count, v.Num)
	if kind == keyspace.List {
		c.W.Array(2)
		c.W.Bulk(key)
		if style == popMulti {
			c.W.Array(int(n))
		}
		dt.listPopLocked(c, sh, key, v, n, fromHead)
		return
	}
	if style == popMulti {
		c.W.Array(2)
		c.W.Bulk(key)
		c.W.Array(int(n))
		dt.zpopLocked(c, sh, key, v, n, !fromHead, true)
		return
	}
	c.W.Array(3)
	c.W.Bulk(key)
	dt.zpopLocked(c, sh, key, v, 1, !fromHead, false)
}

// servePop is a blocked pop's Serve: a pop from key alone, when it holds kind.
func (dt *Family) servePop(kind keyspace.Kind, fromHead bool, count int64, style popStyle) func(c *command.Ctx, key []byte) bool {
	return func(c *command.Ctx, key []byte) bool {
		sh := c.Keys.Shard(key)
		sh.Lock()
		defer sh.Unlock()
		v, ok, err := dt.kindLocked(c, sh, key, kind, c.Now())
		if err != nil || !ok {
			return false
		}
		dt.popReplyLocked(c, sh, key, v, kind, fromHead, count, style)
		return true
	}
}

// block makes c wait on keys for timeout ns, serve serving it; in a transaction or a
// script it replies a null array at once, as on a timeout.
func block(c *command.Ctx, keys [][]byte, timeout int64, serve func(c *command.Ctx, key []byte) bool) error {
	if c.NoBlock {
		c.W.NullArray()
		return nil
	}
	own := make([][]byte, len(keys))
	for i, k := range keys {
		own[i] = bytes.Clone(k)
	}
	c.Block = &command.Block{Keys: own, Timeout: timeout, Serve: serve}
	return nil
}

// lmpopHandler makes LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count] and, with
// blocking, BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count].
func (dt *Family) lmpopHandler(blocking bool) command.Handler {
	return dt.mpopHandler(blocking, keyspace.List, "left", "right")
}

// zmpopHandler makes ZMPOP numkeys key [key ...] MIN|MAX [COUNT count] and, with
// blocking, BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count].
func (dt *Family) zmpopHandler(blocking bool) command.Handler {
	return dt.mpopHandler(blocking, keyspace.ZSet, "min", "max")
}

// mpopHandler makes an MPOP of kind, whose ends are named head and tail; blocking, the
// timeout first and numkeys at 2.
func (dt *Family) mpopHandler(blocking bool, kind keyspace.Kind, head, tail string) command.Handler {
	numIdx := 1
	if blocking {
		numIdx = 2
	}
	return func(c *command.Ctx, args [][]byte) error {
		keys, fromHead, count, err := parseMPop(args, numIdx, head, tail)
		if err != nil {
			return err
		}
		var timeout int64
		if blocking { // read after the rest, as Redis does
			if timeout, err = parseTimeout(args[1]); err != nil {
				return err
			}
		}
		c.Shards = c.Keys.LockKeys(keys, c.Shards[:0])
		served, err := dt.popFirstLocked(c, keys, kind, fromHead, count, popMulti)
		keyspace.UnlockShards(c.Shards)
		switch {
		case err != nil:
			return err
		case served:
			return nil
		case !blocking:
			c.W.NullArray()
			return nil
		}
		return block(c, keys, timeout, dt.servePop(kind, fromHead, count, popMulti))
	}
}

// blpopHandler makes BLPOP key [key ...] timeout (head) and BRPOP key [key ...] timeout.
func (dt *Family) blpopHandler(head bool) command.Handler {
	return dt.bpopHandler(keyspace.List, head)
}

// bzpopHandler makes BZPOPMIN key [key ...] timeout and BZPOPMAX key [key ...] timeout (fromMax).
func (dt *Family) bzpopHandler(fromMax bool) command.Handler {
	return dt.bpopHandler(keyspace.ZSet, !fromMax)
}

// bpopHandler makes a blocking pop of one element (member) from the first of its keys.
func (dt *Family) bpopHandler(kind keyspace.Kind, fromHead bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		timeout, err := parseTimeout(args[len(args)-1])
		if err != nil {
			return err
		}
		keys := args[1 : len(args)-1]
		c.Shards = c.Keys.LockKeys(keys, c.Shards[:0])
		served, err := dt.popFirstLocked(c, keys, kind, fromHead, 1, popPair)
		keyspace.UnlockShards(c.Shards)
		if err != nil || served {
			return err
		}
		return block(c, keys, timeout, dt.servePop(kind, fromHead, 1, popPair))
	}
}

// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
func (dt *Family) cmdBLMove(c *command.Ctx, args [][]byte) error {
	from, err := parseEnd(args[3])
	if err != nil {
		return err
	}
	to, err := parseEnd(args[4])
	if err != nil {
		return err
	}
	timeout, err := parseTimeout(args[5])
	if err != nil {
		return err
	}
	return dt.blmove(c, args[1], args[2], from, to, timeout)
}

// BRPOPLPUSH source destination timeout
func (dt *Family) cmdBRPopLPush(c *command.Ctx, args [][]byte) error {
	timeout, err := parseTimeout(args[3])
	if err != nil {
		return err
	}
	return dt.blmove(c, args[1], args[2], false, true, timeout)
}

// blmove is LMOVE, waiting for timeout ns while source is empty.
func (dt *Family) blmove(c *command.Ctx, src, dst []byte, from, to bool, timeout int64) error {
	mark := len(c.W.B)
	if err := dt.lmove(c, src, dst, from, to); err != nil {
		return err
	}
	if !isNullReply(c.W.B[mark:]) {
		return nil
	}
	c.W.B = c.W.B[:mark] // lmove's null: the source is empty
	dst = bytes.Clone(dst)
	return block(c, [][]byte{src}, timeout, func(c *command.Ctx, key []byte) bool {
		mark := len(c.W.B)
		if err := dt.lmove(c, key, dst, from, to); err != nil {
			c.W.B = c.W.B[:mark]
			c.W.ErrorText(command.ErrorText(err))
			return true
		}
		if isNullReply(c.W.B[mark:]) {
			c.W.B = c.W.B[:mark]
			return false
		}
		return true
	})
}

// isNullReply reports whether b is a null bulk reply, RESP2's or RESP3's.
func isNullReply(b []byte) bool {
	return string(b) == "$-1\r\n" || string(b) == "_\r\n"
}
