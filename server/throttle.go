package server

import (
	"errors"

	"throttled/gcra"
	"throttled/keyspace"
)

func throttleCommands() []*command {
	return []*command{
		{name: "cl.throttle", arity: -5, flags: "write denyoom fast ratelimit", firstKey: 1, lastKey: 1, group: "ratelimit", since: "0.1.0",
			summary: "GCRA rate limit, byte-compatible with redis-cell: [limited, limit, remaining, retry_after_s, reset_after_s].",
			syntax:  "key max_burst count_per_period period [quantity]", handler: cmdCellThrottle},
		{name: "gcra", arity: -5, flags: "write denyoom fast ratelimit", firstKey: 1, lastKey: 1, group: "ratelimit", since: "0.1.0",
			summary: "GCRA rate limit as Redis's own GCRA command: [limited, limit, remaining, retry_after_s, reset_after_s].",
			syntax:  "key max_burst tokens_per_period period [TOKENS n]", handler: cmdGCRA},
		{name: "throttle", arity: -5, flags: "write denyoom fast ratelimit", firstKey: 1, lastKey: 1, group: "ratelimit", since: "0.1.0",
			summary: "GCRA rate limit: count per period sustained, max_burst more at once. Replies a decision in milliseconds.",
			syntax:  "key max_burst count period [COST n] [PEEK]", handler: cmdThrottle},
	}
}

// errNotGCRA is a string key whose value is not a TAT that the GCRA verbs can read.
var errNotGCRA = errors.New("key holds a string that is not a GCRA state")

// loadTAT reads the GCRA state at key: its TAT in Unix ns, or false when the
// key is missing. A string holding an integer is read as a TAT (redis-cell
// keeps its state that way), so state written by redis-cell carries over.
func loadTAT(sh *keyspace.Shard, key []byte, now int64) (int64, bool, error) {
	v, ok := sh.GetLocked(key, now)
	switch {
	case !ok:
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

// storeTAT keeps the new TAT when a GCRA evaluation asks for it.
func storeTAT(sh *keyspace.Shard, key []byte, now int64, r gcra.Result) {
	if r.Store {
		sh.SetLocked(key, keyspace.Value{Kind: keyspace.GCRA, Num: r.TAT, Expire: now + r.TTL})
	}
}

// CL.THROTTLE key max_burst count_per_period period [quantity]
func cmdCellThrottle(c *client, args [][]byte) error {
	p, err := gcra.ParseCell(args[2:])
	if err != nil {
		return err
	}
	return c.gcraVerb(args[1], func(now, tat int64, ok bool) (gcra.Result, error) {
		return gcra.Cell(now, tat, ok, p)
	}, false)
}

// GCRA key max_burst tokens_per_period period [TOKENS n]
func cmdGCRA(c *client, args [][]byte) error {
	p, err := gcra.ParseGCRA(args[2:])
	if err != nil {
		return err
	}
	return c.gcraVerb(args[1], func(now, tat int64, ok bool) (gcra.Result, error) {
		return gcra.Redis(now, tat, ok, p)
	}, false)
}

// THROTTLE key max_burst count period [COST n] [PEEK]
func cmdThrottle(c *client, args [][]byte) error {
	burst, err := parseCount("max_burst", args[2], 0)
	if err != nil {
		return err
	}
	count, err := parseCount("count", args[3], 1)
	if err != nil {
		return err
	}
	period, err := parseDuration("period", args[4])
	if err != nil {
		return err
	}
	opts, err := parseNativeOptions(args[5:])
	if err != nil {
		return err
	}
	q := gcra.Quota{MaxBurst: burst, Count: count, Period: period}
	return c.gcraVerb(args[1], func(now, tat int64, ok bool) (gcra.Result, error) {
		r, err := gcra.Throttle(now, tat, ok, q, opts.cost)
		if opts.peek {
			r.Store = false
		}
		return r, err
	}, true)
}

// gcraVerb runs one GCRA evaluation on key under its shard's lock, keeps the
// new state and writes the reply: five integers, or a decision map under
// RESP3 for the native verb.
func (c *client) gcraVerb(key []byte, eval func(now, tat int64, ok bool) (gcra.Result, error), native bool) error {
	now := c.s.nowNano()
	sh := c.s.ks.Shard(key)
	sh.Lock()
	defer sh.Unlock()
	tat, ok, err := loadTAT(sh, key, now)
	if err != nil {
		return err
	}
	r, err := eval(now, tat, ok)
	if err != nil {
		return err
	}
	storeTAT(sh, key, now, r)
	c.s.decided(c, r.Limited)
	limited := int64(0)
	if r.Limited {
		limited = 1
	}
	if native {
		c.writeDecision(limited, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter)
		return nil
	}
	c.w.array(5)
	c.w.int(limited)
	c.w.int(r.Limit)
	c.w.int(r.Remaining)
	c.w.int(r.RetryAfter)
	c.w.int(r.ResetAfter)
	return nil
}

// decisionFields are the names of a native decision's fields, in order.
var decisionFields = [5]string{"limited", "limit", "remaining", "retry_after_ms", "reset_after_ms"}

// writeDecision writes a native verb's decision: an array under RESP2, a map under RESP3.
func (c *client) writeDecision(fields ...int64) {
	if c.w.proto == 3 {
		c.w.mapHeader(len(fields))
		for i, v := range fields {
			c.w.bulkString(decisionFields[i])
			c.w.int(v)
		}
		return
	}
	c.w.array(len(fields))
	for _, v := range fields {
		c.w.int(v)
	}
}

// decided counts a rate-limit decision for INFO, in all and per verb.
func (s *Server) decided(c *client, limited bool) {
	cmd := c.lastCmd.Load()
	if limited {
		s.stats.denied.Add(1)
		cmd.denied.Add(1)
	} else {
		s.stats.allowed.Add(1)
		cmd.allowed.Add(1)
	}
}
