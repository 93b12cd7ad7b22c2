package ratelimit

import (
	"encoding/binary"

	"github.com/throttledhq/throttled/algorithms"
	"github.com/throttledhq/throttled/keyspace"
)

// The penalty box (BLOCK duration). A call with BLOCK that its algorithm denies puts its key
// in the box: until the block ends, every call on the key is denied, with retry_after the
// rest of the block, even where the algorithm would admit again. The block is part of the
// key's value, so that it persists, replicates and reaches an upstream as the state does:
//
//	Bytes = blockMark, until (8 bytes, little-endian Unix ns), the algorithm's own Bytes
//
// Kind, Num and Num2 stay the algorithm's, and Expire is at least until. The mark cannot
// begin an algorithm's own Bytes: the fixed-size states (GCRA, the buckets, the windows)
// have none, and a sliding log's or a concurrency key's first byte is the uvarint of its
// first entry's delta from the base, which is 0 (so the byte is 0 or 1). A call without BLOCK
// pays one test of the first byte; the rest is takeRare's.
//
// What a block does not do: it is not extended by the calls it denies (a fixed sentence, as
// rate-limiter-flexible's blockDuration), it is not started by a call whose cost can never
// fit (retry -1: the caller's mistake, not its traffic) nor by a tier's call denied where its
// reserve was in the way (the key may have room for the tiers above), and REFUND gives units
// back to the algorithm's state but does not end it. DEL ends it with the key.
const (
	blockMark     = 0xb6
	blockMarkIdle = 0xb7 // the same, where the algorithm has no state (a REFUND made it idle)
	blockHeader   = 9
)

// hasBlock reports whether v may carry a block: one byte's test, for every call.
func hasBlock(v *keyspace.Value) bool {
	return len(v.Bytes) != 0 && v.Bytes[0]|1 == blockMarkIdle
}

// Block says what a denial has to do with the key's penalty box (decision.block).
type Block uint8

// The kinds of Block.
const (
	BlockNone    Block = iota // none: the algorithm denied
	BlockStarted              // the call was denied and put the key in its box
	BlockHeld                 // the call was denied by the box in force
)

// Shorter names inside the package.
const (
	blockNone    = BlockNone
	blockStarted = BlockStarted
	blockHeld    = BlockHeld
)

// blockOf splits v, of l's kind and with hasBlock, into the block's end and the
// algorithm's state (exists false: none), whose Bytes alias v's.
func blockOf(v *keyspace.Value) (until int64, inner keyspace.Value, exists bool, err error) {
	if len(v.Bytes) < blockHeader {
		return 0, *v, false, algorithms.ErrCorrupt
	}
	until = int64(binary.LittleEndian.Uint64(v.Bytes[1:]))
	if v.Bytes[0] == blockMarkIdle {
		return until, keyspace.Value{}, false, nil
	}
	inner = *v
	inner.Bytes = v.Bytes[blockHeader:]
	if len(inner.Bytes) == 0 {
		inner.Bytes = nil
	}
	return until, inner, true, nil
}

// appendBlock appends the header of a block until until to dst, marked for a state that
// exists or not.
func appendBlock(dst []byte, until int64, exists bool) []byte {
	mark := byte(blockMark)
	if !exists {
		mark = blockMarkIdle
	}
	return binary.LittleEndian.AppendUint64(append(dst, mark), uint64(until))
}

// blocks reports whether the call may start a block when its algorithm denies it (d): it
// has BLOCK, takes units, and its cost fits the limit some day.
func (l *limit) blocks(d *decision) bool {
	return l.opts.block > 0 && !l.opts.peek && l.opts.cost > 0 && !l.opts.refunding && d.limited && d.retry >= 0
}

// startBlock puts the key, whose state inner the call was just denied on (d), in the
// penalty box for l.opts.block: next is inner with the block, built in scratch.
func (l *limit) startBlock(now int64, inner *keyspace.Value, scratch []byte, d *decision, next *keyspace.Value) {
	until := now + l.opts.block
	b := append(appendBlock(scratch[:0], until, true), inner.Bytes...)
	*next = keyspace.Value{Kind: inner.Kind, Num: inner.Num, Num2: inner.Num2, Bytes: b, Expire: max(inner.Expire, until)}
	d.block, d.remaining = blockStarted, 0
	d.retry = max(d.retry, msCeil(l.opts.block))
	d.resetM = max(d.resetM, msCeil(l.opts.block))
}

// takeBlocked answers a call on a key in its penalty box until until, whose algorithm's
// state is inner: denied, with nothing left and retry_after the rest of the block. A REFUND
// still gives its units back to the state, which keeps the block; its decision is not a
// denial (a refund never is), with nothing left.
func (l *limit) takeBlocked(now int64, inner *keyspace.Value, exists bool, until int64, scratch []byte, d *decision, next *keyspace.Value) (store bool, err error) {
	rest := msCeil(until - now)
	if l.opts.refunding {
		store, err = l.giveBack(now, inner, exists, scratch, d, next)
		if err != nil {
			return false, err
		}
		if store {
			// The refunded state behind a new header: a buffer of its own, on this rare path.
			b := appendBlock(make([]byte, 0, blockHeader+len(next.Bytes)), until, next.Kind != keyspace.None)
			*next = keyspace.Value{Kind: l.kind, Num: next.Num, Num2: next.Num2, Bytes: append(b, next.Bytes...), Expire: max(next.Expire, until)}
		}
		d.remaining = 0
		d.resetM = max(d.resetM, rest)
		return store, nil
	}
	// The limit and the time to idle are the algorithm's: a probe asks it.
	opts := l.opts
	l.opts.rare, l.opts.cost, l.opts.peek = false, 0, true
	var none keyspace.Value
	_, err = l.take(now, inner, exists, scratch, d, &none)
	l.opts = opts
	if err != nil {
		return false, err
	}
	d.limited, d.remaining, d.retry, d.block = true, 0, rest, blockHeld
	d.resetM = max(d.resetM, rest)
	d.delay = 0
	return false, nil
}
