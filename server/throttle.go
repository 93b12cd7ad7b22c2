package server

import (
	"errors"

	"github.com/throttledhq/throttled/gcra"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/resp"
)

func throttleCommands() []*command {
	return []*command{
		{name: "cl.throttle", arity: -5, flags: "write denyoom fast ratelimit", firstKey: 1, lastKey: 1, group: "ratelimit", since: "0.1.0",
			summary: "GCRA rate limit, byte-compatible with redis-cell: [limited, limit, remaining, retry_after_s, reset_after_s].",
			syntax:  "key max_burst count_per_period period [quantity]", handler: cmdCellThrottle},
		{name: "gcra", arity: -5, flags: "write denyoom fast ratelimit", firstKey: 1, lastKey: 1, group: "ratelimit", since: "0.1.0",
			summary: "GCRA rate limit as Redis's own GCRA command: [limited, limit, remaining, retry_after_s, reset_after_s].",
			syntax:  "key max_burst tokens_per_period period [TOKENS n]", handler: cmdGCRA},
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
		tat, ok := parseInt(v.Bytes)
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
func cmdCellThrottle(c *client, args [][]byte) error {
	p, err := gcra.ParseCell(args[2:])
	if err != nil {
		return err
	}
	if c.readOnly && p.Quantity != 0 {
		return errReadOnly
	}
	if c.up.local {
		shareCell(&p, c.s.up.share)
	}
	return c.gcraVerb(args[1], func(now, tat int64, ok bool) (gcra.Result, error) {
		return gcra.Cell(now, tat, ok, p)
	})
}

// GCRA key max_burst tokens_per_period period [TOKENS n]
func cmdGCRA(c *client, args [][]byte) error {
	p, err := gcra.ParseGCRA(args[2:])
	if err != nil {
		return err
	}
	if c.readOnly {
		return errReadOnly // GCRA has no probe: TOKENS is at least 1
	}
	if c.up.local {
		shareGCRA(&p, c.s.up.share)
	}
	return c.gcraVerb(args[1], func(now, tat int64, ok bool) (gcra.Result, error) {
		return gcra.Redis(now, tat, ok, p)
	})
}

// gcraVerb runs one GCRA evaluation of a compatibility verb on key under its
// shard's lock, keeps the new state and writes the five integers.
func (c *client) gcraVerb(key []byte, eval func(now, tat int64, ok bool) (gcra.Result, error)) error {
	now := c.now()
	sh := c.s.ks.Shard(key)
	sh.Lock()
	defer sh.Unlock()
	v, ok := sh.GetLocked(key, now)
	tat, ok, err := tatOf(v, ok)
	if err != nil {
		return err
	}
	r, err := eval(now, tat, ok)
	if err != nil {
		return err
	}
	if r.Store && !c.readOnly {
		sh.SetLocked(key, gcraValue(now, r))
	}
	c.s.decided(c, r.Limited)
	if r.Limited {
		c.s.denial(c.lastCmd.Load(), key, secondsToMs(r.RetryAfter), now)
	}
	writeGCRA(&c.w, r)
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

// writeDecision writes a native verb's decision.
func (c *client) writeDecision(d decision) { writeDecisionTo(&c.w, d) }

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

// decided counts a rate-limit decision for INFO, in all and per verb.
func (s *Server) decided(c *client, limited bool) {
	s.count(c.lastCmd.Load(), limited)
	if c.door != doorRESP {
		s.stats.byDoor[c.door][b2i(limited)].Add(1)
	}
}

// refunded counts units a REFUND gave back, for INFO.
func (s *Server) refunded(n int64) {
	if n > 0 {
		s.stats.refunded.Add(n)
	}
}

// count counts a decision of cmd.
func (s *Server) count(cmd *command, limited bool) {
	if limited {
		s.stats.denied.Add(1)
		cmd.denied.Add(1)
	} else {
		s.stats.allowed.Add(1)
		cmd.allowed.Add(1)
	}
}
