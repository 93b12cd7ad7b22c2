package ratelimit

import (
	"errors"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/gcra"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/resp"
)

func (rl *Family) throttleCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "cl.throttle", Arity: -5, Flags: "write denyoom fast ratelimit", FirstKey: 1, LastKey: 1, Group: "ratelimit", Since: "0.1.0",
			Summary: "GCRA rate limit, byte-compatible with redis-cell: [limited, limit, remaining, retry_after_s, reset_after_s].",
			Syntax:  "key max_burst count_per_period period [quantity]", Handler: rl.cmdCellThrottle, Upstream: int(CallCell)},
		{Name: "gcra", Arity: -5, Flags: "write denyoom fast ratelimit", FirstKey: 1, LastKey: 1, Group: "ratelimit", Since: "0.1.0",
			Summary: "GCRA rate limit as Redis's own GCRA command: [limited, limit, remaining, retry_after_s, reset_after_s].",
			Syntax:  "key max_burst tokens_per_period period [TOKENS n]", Handler: rl.cmdGCRA, Upstream: int(CallGCRA)},
	}
}

// errNotGCRA is a string key whose value is not a TAT that the GCRA verbs can read.
var errNotGCRA = errors.New("key holds a string that is not a GCRA state")

// tatOf reads the GCRA state in v: its TAT in Unix ns, or false when the
// key is missing. A string holding an integer is read as a TAT (redis-cell
// keeps its state that way), so state written by redis-cell carries over.
func tatOf(v keyspace.Value, exists bool) (int64, bool, error) {
	switch {
	case !exists:
		return 0, false, nil
	case v.Kind == keyspace.GCRA:
		return v.Num, true, nil
	case v.Kind == keyspace.String:
		tat, ok := command.ParseInt(v.Bytes)
		if !ok {
			return 0, false, errNotGCRA
		}
		return tat, true, nil
	}
	return 0, false, keyspace.ErrWrongType
}

// gcraValue is what a GCRA key holds after an evaluation r that stores.
func gcraValue(now int64, r gcra.Result) keyspace.Value {
	return keyspace.Value{Kind: keyspace.GCRA, Num: r.TAT, Expire: now + r.TTL}
}

// CL.THROTTLE key max_burst count_per_period period [quantity]
func (rl *Family) cmdCellThrottle(c *command.Ctx, args [][]byte) error {
	p, err := gcra.ParseCell(args[2:])
	if err != nil {
		return err
	}
	if c.ReadOnly && p.Quantity != 0 {
		return command.ErrReadOnly
	}
	if c.Fallback > 0 {
		shareCell(&p, c.Fallback)
	}
	return rl.gcraVerb(c, args[1], func(now, tat int64, ok bool) (gcra.Result, error) {
		return gcra.Cell(now, tat, ok, p)
	})
}

// GCRA key max_burst tokens_per_period period [TOKENS n]
func (rl *Family) cmdGCRA(c *command.Ctx, args [][]byte) error {
	p, err := gcra.ParseGCRA(args[2:])
	if err != nil {
		return err
	}
	if c.ReadOnly {
		return command.ErrReadOnly // GCRA has no probe: TOKENS is at least 1
	}
	if c.Fallback > 0 {
		shareGCRA(&p, c.Fallback)
	}
	return rl.gcraVerb(c, args[1], func(now, tat int64, ok bool) (gcra.Result, error) {
		return gcra.Redis(now, tat, ok, p)
	})
}

// gcraVerb runs one GCRA evaluation of a compatibility verb on key under its
// shard's lock, keeps the new state and writes the five integers.
func (rl *Family) gcraVerb(c *command.Ctx, key []byte, eval func(now, tat int64, ok bool) (gcra.Result, error)) error {
	now := c.Now()
	sh := c.LockShard(key) // or the one the server holds for the pipeline (Ctx.Held)
	defer c.UnlockShard(sh)
	v, exists := sh.GetLocked(key, now)
	tat, ok, err := tatOf(v, exists)
	if err != nil {
		return err
	}
	r, err := eval(now, tat, ok)
	if err != nil {
		return err
	}
	if r.Store && !c.ReadOnly && rl.roomFor(c, exists) {
		sh.SetLocked(key, gcraValue(now, r))
	}
	rl.cfg.Decided(c, r.Limited)
	if r.Limited {
		rl.cfg.Denied(c, key, secondsToMs(r.RetryAfter), now, BlockNone)
	}
	writeGCRA(&c.W, r)
	return nil
}

// gcra writes a compatibility verb's five integers.
func writeGCRA(w *resp.Writer, r gcra.Result) {
	limited := int64(0)
	if r.Limited {
		limited = 1
	}
	w.Array(5)
	w.Int(limited)
	w.Int(r.Limit)
	w.Int(r.Remaining)
	w.Int(r.RetryAfter)
	w.Int(r.ResetAfter)
}

// decision writes a native verb's decision: an array under RESP2, a map
// under RESP3; LEAKYBUCKET's has a sixth field, delay_ms.
func writeDecisionTo(w *resp.Writer, d decision) { writeDecisionStatus(w, d, "") }

// decisionStatus writes a decision with status, unless it is "", as its last element (a
// status field under RESP3): CHECK's.
func writeDecisionStatus(w *resp.Writer, d decision, status string) {
	limited := int64(0)
	if d.limited {
		limited = 1
	}
	n := 5
	if d.hasDelay {
		n++
	}
	if status != "" {
		n++
	}
	if w.Proto == 3 {
		w.Map(n)
	} else {
		w.Array(n)
	}
	field := func(name string, v int64) {
		if w.Proto == 3 {
			w.BulkString(name)
		}
		w.Int(v)
	}
	field("limited", limited)
	field("limit", d.limit)
	field("remaining", d.remaining)
	field("retry_after_ms", d.retry)
	field("reset_after_ms", d.resetM)
	if d.hasDelay {
		field("delay_ms", d.delay)
	}
	if status != "" {
		if w.Proto == 3 {
			w.BulkString("status")
		}
		w.BulkString(status)
	}
}

// secondsToMs turns a compatibility verb's retry_after in seconds into milliseconds, -1
// staying -1.
func secondsToMs(sec int64) int64 {
	if sec < 0 {
		return -1
	}
	return sec * 1000
}
