package server

import (
	"errors"
	"math"
	"strconv"
	"sync/atomic"

	"github.com/throttledhq/throttled/algorithms"
	"github.com/throttledhq/throttled/gcra"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/resp"
	"github.com/throttledhq/throttled/upstream"
)

// Upstream mode (SPEC section 9): the rate-limit verbs keep their state in an upstream Redis
// shared by many instances. A verb's handler parses the request into an upCall, which
// evaluates itself with the same Go code as the local verbs, on the states the upstream
// package hands it. A call the cache settles is answered at once; any other parks its reply:
// the client's later replies go on into its buffer, and once the upstream has decided every
// parked call, the client's loop (or goroutine) splices the calls' replies in at their places
// and writes them, so that no loop ever waits for the upstream. A call the upstream cannot
// decide (breaker open, failure, time-out) is decided by the local handler on the local
// keyspace, with each limit cut to the fallback share.

// upstreamMode is the server's link to its upstream.
type upstreamMode struct {
	client   *upstream.Client
	share    float64      // upstream-fallback-share
	degraded atomic.Int64 // decisions made locally because the upstream could not
}

// upstreamVerbs are the verbs decided through the upstream, with the kind of call each is.
var upstreamVerbs = map[string]callKind{
	"cl.throttle": callCell, "gcra": callGCRA,
	"throttle": callLimit, "tokenbucket": callLimit, "leakybucket": callLimit, "slide": callLimit,
	"window": callLimit, "concurrency.acquire": callLimit,
	"concurrency.release": callRelease, "allof": callAllOf,
}

// openUpstream connects to the configured upstream, if any, and routes the rate-limit verbs
// through it.
func (s *Server) openUpstream() error {
	if s.cfg.Upstream == "" && len(s.cfg.UpstreamCluster) == 0 {
		return nil
	}
	cfg := upstream.Config{URL: s.cfg.Upstream, Cluster: s.cfg.UpstreamCluster, Timeout: s.cfg.UpstreamTimeout, Logger: s.log}
	if s.cfg.Now != nil {
		now := s.cfg.Now
		cfg.Now = func() int64 { return now().UnixNano() }
	}
	client, err := upstream.New(cfg)
	if err != nil {
		return err
	}
	s.up = &upstreamMode{client: client, share: s.cfg.UpstreamFallbackShare}
	for name, kind := range upstreamVerbs {
		cmd := s.commands[name]
		cmd.handler = s.viaUpstream(kind, cmd, cmd.handler)
	}
	return nil
}

// closeUpstream closes the link; calls still waiting are decided locally.
func (s *Server) closeUpstream() {
	if s.up != nil {
		s.up.client.Close()
	}
}

// viaUpstream wraps the local handler of a rate-limit verb.
func (s *Server) viaUpstream(kind callKind, cmd *command, local handler) handler {
	return func(c *client, args [][]byte) error {
		if s.up.client.Open() {
			return c.decideLocally(args, local)
		}
		call := c.up.get()
		settle := len(c.up.calls) == 0 // a reply settled now must not pass parked ones
		if err := call.parse(c, kind, cmd, local, args, !settle); err != nil {
			c.up.put(call)
			return err
		}
		if settle {
			if s.up.client.Settle(call, c.now()) {
				call.counted()
				c.w.B = append(c.w.B, call.w.B...)
				c.up.put(call)
				return nil
			}
			call.reset() // parsed again on a copy of the request, which outlives the read buffer
			if err := call.parse(c, kind, cmd, local, args, true); err != nil {
				c.up.put(call)
				return err
			}
		}
		call.at = len(c.w.B)
		c.up.calls = append(c.up.calls, call)
		if c.up.wake == nil {
			c.up.wake = make(chan struct{}, 1)
		}
		c.up.pending.Add(1)
		c.submitUpstream(call)
		return nil
	}
}

// decideLocally runs a verb's local handler with each limit cut to the fallback share.
func (c *client) decideLocally(args [][]byte, local handler) error {
	c.s.up.degraded.Add(1)
	c.up.local = true
	defer func() { c.up.local = false }()
	return local(c, args)
}

// clientUpstream is a client's parked calls.
type clientUpstream struct {
	calls   []*upCall     // parked, in the order of their replies; owned by the client's loop
	free    []*upCall     // for reuse
	pending atomic.Int32  // calls not yet decided
	wake    chan struct{} // a goroutine-served client's: pending reached 0
	out     []byte        // the spliced replies being built
	local   bool          // a handler runs as the local fallback
}

func (cu *clientUpstream) get() *upCall {
	if n := len(cu.free); n > 0 {
		call := cu.free[n-1]
		cu.free = cu.free[:n-1]
		return call
	}
	return new(upCall)
}

func (cu *clientUpstream) put(call *upCall) {
	call.reset()
	cu.free = append(cu.free, call)
}

// spliceUpstream puts the replies of c's parked calls, all decided, at their places among
// c's other replies; a call the upstream could not decide is decided locally now.
func (c *client) spliceUpstream() {
	if len(c.up.calls) == 0 {
		return
	}
	src, out, prev := c.w.B, c.up.out[:0], 0
	for _, call := range c.up.calls {
		out = append(out, src[prev:call.at]...)
		prev = call.at
		if call.unavailable {
			mark := len(out)
			c.w.B = out
			last := c.lastCmd.Load()
			c.lastCmd.Store(call.cmd)
			if err := c.decideLocally(call.args, call.local); err != nil {
				c.s.replyError(c, err)
			}
			c.lastCmd.Store(last)
			out = c.w.B
			if call.silent {
				out = out[:mark]
			}
		} else if !call.silent {
			out = append(out, call.w.B...)
		}
		c.up.put(call)
	}
	out = append(out, src[prev:]...)
	clear(c.up.calls)
	c.up.calls = c.up.calls[:0]
	c.w.B = out
	if cap(src) <= keepWriteBuf {
		c.up.out = src[:0]
	} else {
		c.up.out = nil
	}
}

// waitUpstream blocks a goroutine-served client until its parked calls are decided; false
// when the server stops first.
func (c *client) waitUpstream() bool {
	for c.up.pending.Load() != 0 {
		select {
		case <-c.up.wake:
		case <-c.s.shutdown:
			return false
		}
	}
	return true
}

// callKind is which verb an upCall is.
type callKind uint8

const (
	callCell    callKind = iota // CL.THROTTLE
	callGCRA                    // GCRA
	callLimit                   // a native verb
	callRelease                 // CONCURRENCY.RELEASE
	callAllOf                   // ALLOF
)

// upCall is one rate-limit request decided through the upstream (an upstream.Call). It
// holds a copy of the request, since the client's read buffer moves on, and its reply.
type upCall struct {
	c     *client
	cmd   *command
	local handler
	kind  callKind
	at    int // where its reply goes in c.w.b

	buf  []byte   // the request's bytes
	args [][]byte // the request, in buf

	cell    gcra.CellParams
	red     gcra.GCRAParams
	limits  []limit
	keys    [][]byte // distinct
	keyOf   []int    // ALLOF: the index in keys of each limit's key
	states  []upstream.State
	results []pending
	scratch [][]byte

	w           resp.Writer // the reply of the last Eval, or Done's error
	decided     bool        // the reply is a decision, limited or not
	limited     bool
	retry       int64 // ms, when limited: for the deny event
	now         int64 // the time of the last Eval
	refunded    int64 // units the last Eval's REFUNDs give back, when it writes
	unavailable bool  // the upstream could not decide: decide locally
	silent      bool  // CLIENT REPLY took its reply back: decided, but not answered
}

func (u *upCall) reset() {
	*u = upCall{buf: u.buf[:0], args: u.args[:0], limits: u.limits[:0], keys: u.keys[:0], keyOf: u.keyOf[:0],
		states: u.states[:0], results: u.results[:0], scratch: u.scratch, w: resp.Writer{B: u.w.B[:0]}}
}

// parse parses the request as the local handler would, with its errors: on a copy of it
// when own is set, for a call that outlives the handler; else on args themselves.
func (u *upCall) parse(c *client, kind callKind, cmd *command, local handler, args [][]byte, own bool) error {
	u.c, u.kind, u.cmd, u.local, u.w.Proto = c, kind, cmd, local, c.w.Proto
	if own {
		for _, a := range args {
			u.buf = append(u.buf, a...)
		}
		at := 0
		for _, a := range args {
			u.args = append(u.args, u.buf[at:at+len(a):at+len(a)])
			at += len(a)
		}
	} else {
		u.args = append(u.args, args...)
	}
	args = u.args
	var err error
	switch kind {
	case callCell:
		u.cell, err = gcra.ParseCell(args[2:])
		u.keys = append(u.keys, args[1])
	case callGCRA:
		u.red, err = gcra.ParseGCRA(args[2:])
		u.keys = append(u.keys, args[1])
	case callLimit:
		verb, n, _ := nativeVerb(args[0])
		u.limits = append(u.limits, limit{})
		_, err = u.limits[0].parse(verb, n, args[1:], false)
		u.keys = append(u.keys, args[1])
	case callRelease:
		u.keys = append(u.keys, args[1])
	case callAllOf:
		if u.limits, err = parseAllOf(args[1:], u.limits); err != nil {
			return err
		}
	next:
		for i := range u.limits {
			for j, k := range u.keys {
				if string(k) == string(u.limits[i].key) {
					u.keyOf = append(u.keyOf, j)
					continue next
				}
			}
			u.keyOf = append(u.keyOf, len(u.keys))
			u.keys = append(u.keys, u.limits[i].key)
		}
		err = c.s.up.client.CheckSlots(u.keys)
	}
	if err != nil {
		return err
	}
	for range u.keys {
		u.states = append(u.states, upstream.State{})
	}
	for len(u.scratch) < max(len(u.limits), 1) {
		u.scratch = append(u.scratch, nil)
	}
	return nil
}

// Keys returns the call's distinct keys.
func (u *upCall) Keys() [][]byte { return u.keys }

// States returns the states of the call's keys.
func (u *upCall) States() []upstream.State { return u.states }

// fail makes err the reply of the last Eval.
func (u *upCall) fail(err error) upstream.Outcome {
	u.w.B = u.w.B[:0]
	u.w.ErrorText(errorText(err))
	u.decided = false
	return upstream.Verify
}

// Eval evaluates the call at now on its keys' states, with the local verbs' code.
func (u *upCall) Eval(now int64) upstream.Outcome {
	u.w.B = u.w.B[:0]
	u.decided, u.limited, u.now, u.refunded = true, false, now, 0
	switch u.kind {
	case callCell, callGCRA:
		return u.evalGCRA(now)
	case callLimit:
		return u.evalLimit(now)
	case callRelease:
		u.decided = false
		return u.evalRelease(now)
	}
	return u.evalAllOf(now)
}

func (u *upCall) evalGCRA(now int64) upstream.Outcome {
	st := &u.states[0]
	tat, ok, err := tatOf(st.Cur, st.Cur.Kind != keyspace.None)
	if err != nil {
		return u.fail(err)
	}
	var r gcra.Result
	if u.kind == callCell {
		r, err = gcra.Cell(now, tat, ok, u.cell)
	} else {
		r, err = gcra.Redis(now, tat, ok, u.red)
	}
	if err != nil {
		return u.fail(err)
	}
	u.limited, u.retry = r.Limited, secondsToMs(r.RetryAfter)
	writeGCRA(&u.w, r)
	switch {
	case r.Store:
		st.Next, st.Write = gcraValue(now, r), true
		return upstream.Write
	case r.Limited:
		return upstream.Settled // a TAT only moves on
	}
	return upstream.Verify
}

func (u *upCall) evalLimit(now int64) upstream.Outcome {
	st, l := &u.states[0], &u.limits[0]
	var d decision
	var next keyspace.Value
	store, err := l.take(now, &st.Cur, st.Cur.Kind != keyspace.None, u.scratch[0][:0], &d, &next)
	if err != nil {
		return u.fail(err)
	}
	if store {
		u.scratch[0] = next.Bytes[:0]
	}
	u.limited, u.retry = d.limited, d.retry
	writeDecisionTo(&u.w, d)
	switch {
	case store && !l.opts.peek:
		st.Next, st.Write = next, true
		u.refunded = d.refunded
		return upstream.Write
	case d.limited && l.kind != keyspace.Concurrency:
		return upstream.Settled // RELEASE elsewhere frees a concurrency slot; nothing else does
	}
	return upstream.Verify
}

func (u *upCall) evalRelease(now int64) upstream.Outcome {
	st := &u.states[0]
	exists := st.Cur.Kind != keyspace.None
	if exists && st.Cur.Kind != keyspace.Concurrency {
		return u.fail(keyspace.ErrWrongType)
	}
	cur := algorithms.State{Num: st.Cur.Num, Num2: st.Cur.Num2, Bytes: st.Cur.Bytes}
	held, next, err := algorithms.Release(now, cur, exists, u.args[2], u.scratch[0][:0])
	if err != nil {
		return u.fail(err)
	}
	if !held {
		u.w.Int(0)
		return upstream.Verify
	}
	st.Write, st.Next = true, keyspace.Value{}
	if next.Expire > 0 {
		st.Next = keyspace.Value{Kind: keyspace.Concurrency, Num: next.Num, Num2: next.Num2, Bytes: next.Bytes, Expire: next.Expire}
		u.scratch[0] = next.Bytes[:0]
	}
	u.w.Int(1)
	return upstream.Write
}

func (u *upCall) evalAllOf(now int64) upstream.Outcome {
	results, allowed, err := evalAllOf(now, u.limits, u.results[:0], &u.scratch, func(i int) (keyspace.Value, bool) {
		v := u.states[u.keyOf[i]].Cur
		return v, v.Kind != keyspace.None
	})
	u.results = results
	if err != nil {
		return u.fail(err)
	}
	u.limited = !allowed
	writeAllOf(&u.w, results, allowed)
	out := upstream.Verify
	for i, r := range results {
		switch {
		case allowed && r.store && !u.limits[i].opts.peek:
			u.refunded += r.d.refunded
			st := &u.states[u.keyOf[i]]
			st.Next, st.Write = r.next, true // a key named again: the later limit's state, built on the earlier's
			out = upstream.Write
		case !allowed && r.d.limited && u.limits[i].kind != keyspace.Concurrency:
			out = upstream.Settled
		}
	}
	return out
}

// counted counts the call's decision for INFO.
func (u *upCall) counted() {
	if !u.decided {
		return
	}
	u.c.s.count(u.cmd, u.limited)
	u.c.s.refunded(u.refunded)
	switch {
	case !u.limited:
	case u.kind == callAllOf:
		u.c.s.deniedAll(u.cmd, u.limits, u.results, u.now)
	default:
		u.c.s.denial(u.cmd, u.args[1], u.retry, u.now)
	}
}

// Done takes the upstream's verdict on the call and, once every parked call of the client
// is decided, hands the client back to whatever serves it.
func (u *upCall) Done(err error) {
	switch {
	case err == nil:
		u.counted()
	case errors.Is(err, upstream.ErrUnavailable):
		u.unavailable = true
	default:
		u.fail(err)
		u.c.s.stats.errors.Add(1)
	}
	c := u.c // u is the client's again once pending reaches 0
	if c.up.pending.Add(-1) == 0 {
		c.resumeUpstream()
	}
}

// The fallback share of each kind of limit: the units it admits at once and per period
// are cut to share (rounded down, at least 1); share 1 changes nothing.

func shareOf(n int64, share float64) int64 {
	if share >= 1 {
		return n
	}
	return max(1, int64(math.Floor(float64(n)*share)))
}

// share cuts l to the fallback share.
func (l *limit) share(share float64) {
	switch l.kind {
	case keyspace.GCRA:
		l.quota.MaxBurst = shareOf(l.quota.MaxBurst+1, share) - 1
		l.quota.Count = shareOf(l.quota.Count, share)
	case keyspace.TokenBucket:
		l.tb.Capacity, l.tb.Refill = shareOf(l.tb.Capacity, share), shareOf(l.tb.Refill, share)
	case keyspace.LeakyBucket:
		l.lb.Capacity, l.lb.Leak = shareOf(l.lb.Capacity, share), shareOf(l.lb.Leak, share)
	case keyspace.SlidingLog:
		l.sl.Limit = shareOf(l.sl.Limit, share)
	case keyspace.SlidingCounter:
		l.sc.Limit = shareOf(l.sc.Limit, share)
	case keyspace.FixedWindow:
		l.fw.Limit = shareOf(l.fw.Limit, share)
	case keyspace.Concurrency:
		l.cc.Limit = shareOf(l.cc.Limit, share)
	}
}

func shareCell(p *gcra.CellParams, share float64) {
	p.MaxBurst = shareOf(p.MaxBurst+1, share) - 1
	p.Count = shareOf(p.Count, share)
}

func shareGCRA(p *gcra.GCRAParams, share float64) {
	p.MaxBurst = shareOf(p.MaxBurst+1, share) - 1
	p.Tokens = shareOf(p.Tokens, share)
}

// infoUpstream is INFO's upstream section.
func (s *Server) infoUpstream() [][2]string {
	if s.up == nil {
		return [][2]string{{"upstream_mode", "none"}}
	}
	st := s.up.client.Stats()
	return [][2]string{
		{"upstream_mode", st.Mode},
		{"upstream_link_status", st.Link},
		{"upstream_breaker", st.Breaker},
		{"upstream_breaker_opened", itoa(st.Opened)},
		{"upstream_last_rtt_us", itoa(st.LastRTT.Microseconds())},
		{"upstream_avg_rtt_us", itoa(st.AvgRTT.Microseconds())},
		{"upstream_round_trips", itoa(st.RoundTrips)},
		{"upstream_commands", itoa(st.Commands)},
		{"upstream_conflicts", itoa(st.Conflicts)},
		{"upstream_failures", itoa(st.Failures)},
		{"upstream_local_decisions", itoa(st.Local)},
		{"upstream_degraded_decisions", itoa(s.up.degraded.Load())},
		{"upstream_fallback_share", strconv.FormatFloat(s.up.share, 'g', -1, 64)},
		{"upstream_clock_offset_us", itoa(st.ClockOffset.Microseconds())},
		{"upstream_cached_keys", itoa(int64(st.CachedKeys))},
	}
}
