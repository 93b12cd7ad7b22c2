package datatype

import (
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
)

// notifyRemoved fires a removal's keyspace events as Redis's handlers do: event (class
// class) when it removed anything, then "del" when it removed all had elements, which
// deleted the key.
func notifyRemoved(c *command.Ctx, class notify.Class, event string, key []byte, removed, had int64) {
	if removed > 0 {
		c.Notify(class, event, key)
		if removed >= had {
			c.Notify(notify.Generic, "del", key)
		}
	}
}

// notifyIf fires event, of class class, on key when changed: a write's event, which Redis
// fires only when the command changed something.
func notifyIf(c *command.Ctx, changed bool, class notify.Class, event string, key []byte) {
	if changed {
		c.Notify(class, event, key)
	}
}

// The sorted-set events, as Redis names them: ZADD's (INCR: zincr), by b2i(incr);
// ZREMRANGEBY*'s, by zrangeKind; ZPOPMIN's and ZPOPMAX's, by b2i(fromMax).
var (
	zaddEvents      = [2]string{"zadd", "zincr"}
	zremrangeEvents = [...]string{zrangeRank: "zremrangebyrank", zrangeScore: "zremrangebyscore", zrangeLex: "zremrangebylex"}
	zpopEvents      = [2]string{"zpopmin", "zpopmax"}
)

// The list events by end, indexed by b2i(head): a push's and a pop's.
var (
	pushEvents = [2]string{"rpush", "lpush"}
	popEvents  = [2]string{"rpop", "lpop"}
)

// notifyMoved fires LMOVE's events as Redis's lmoveGenericCommand: the push on dst (at its
// head when to), then the pop from src (from its head when from), then "del" when src,
// left with left elements, was deleted.
func notifyMoved(c *command.Ctx, src, dst []byte, from, to bool, left int64) {
	c.Notify(notify.List, pushEvents[b2i(to)], dst)
	c.Notify(notify.List, popEvents[b2i(from)], src)
	if left == 0 {
		c.Notify(notify.Generic, "del", src)
	}
}

// notifyStored fires the events of a STORE form (SINTERSTORE, ...), as Redis's: event
// when it stored a non-empty result, else "del" when it deleted the destination that
// existed.
func notifyStored(c *command.Ctx, class notify.Class, event string, key []byte, n int64, existed bool) {
	switch {
	case n > 0:
		c.Notify(class, event, key)
	case existed:
		c.Notify(notify.Generic, "del", key)
	}
}

// setStoreEvents are the set operations' STORE events, by setOp.
var setStoreEvents = [...]string{setInter: "sinterstore", setUnion: "sunionstore", setDiff: "sdiffstore"}

// incrEvents are INCREX's events, as INCRBY's and INCRBYFLOAT's, by b2i(float).
var incrEvents = [2]string{"incrby", "incrbyfloat"}

// notifyMiss fires "keymiss" on key unless found: for a lookup that Redis makes with
// lookupKeyRead in a command that does not count its lookups (GETDEL, SET's GET, the
// source of COPY, DUMP, the sources of SINTERSTORE...), where kindLocked fires nothing.
func notifyMiss(c *command.Ctx, key []byte, found bool) {
	if !found {
		c.Notify(notify.KeyMiss, "keymiss", key)
	}
}

// countRead is Redis's lookupKeyRead of key by a command with patterns or several keys
// (SORT, LCS): a keyspace hit or miss for a read-only command, a "keymiss" event for any.
func countRead(c *command.Ctx, sh *keyspace.Shard, key []byte, found bool) {
	if c.Reading {
		c.CountLookup(sh, key, found)
		return
	}
	notifyMiss(c, key, found)
}
