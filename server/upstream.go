package server

import (
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/throttledhq/throttled/global"
	"github.com/throttledhq/throttled/ratelimit"
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
	s.global.Start(client)
	for _, cmd := range s.commands {
		if cmd.upstream != 0 {
			cmd.handler = s.viaUpstream(ratelimit.CallKind(cmd.upstream), cmd, cmd.handler)
		}
	}
	return nil
}

// closeUpstream closes the link; calls still waiting are decided locally.
func (s *Server) closeUpstream() {
	if s.up != nil {
		s.global.Close()
		s.up.client.Close()
	}
}

// viaUpstream wraps the local handler of a rate-limit verb.
func (s *Server) viaUpstream(kind ratelimit.CallKind, cmd *cmdEntry, local handler) handler {
	return func(c *client, args [][]byte) error {
		if kind == ratelimit.CallLimit && ratelimit.Global(args) {
			return local(c, args) // decided from the local allowance (package global)
		}
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
			if s.up.client.Settle(call, c.Now()) {
				call.counted()
				c.W.B = append(c.W.B, call.W.B...)
				c.up.put(call)
				return nil
			}
			call.reset() // parsed again on a copy of the request, which outlives the read buffer
			if err := call.parse(c, kind, cmd, local, args, true); err != nil {
				c.up.put(call)
				return err
			}
		}
		call.at = len(c.W.B)
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
	c.Fallback = c.s.up.share // the family cuts each limit to it
	defer func() { c.Fallback = 0 }()
	return local(c, args)
}

// clientUpstream is a client's parked calls.
type clientUpstream struct {
	calls   []*upCall     // parked, in the order of their replies; owned by the client's loop
	free    []*upCall     // for reuse
	pending atomic.Int32  // calls not yet decided
	wake    chan struct{} // a goroutine-served client's: pending reached 0
	out     []byte        // the spliced replies being built
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
	src, out, prev := c.W.B, c.up.out[:0], 0
	for _, call := range c.up.calls {
		out = append(out, src[prev:call.at]...)
		prev = call.at
		if call.unavailable {
			mark := len(out)
			c.W.B = out
			last := c.lastCmd.Load()
			c.lastCmd.Store(call.cmd)
			if err := c.decideLocally(call.Args(), call.local); err != nil {
				c.s.replyError(c, err)
			}
			c.lastCmd.Store(last)
			out = c.W.B
			if call.silent {
				out = out[:mark]
			}
		} else if !call.silent {
			out = append(out, call.W.B...)
		}
		c.up.put(call)
	}
	out = append(out, src[prev:]...)
	clear(c.up.calls)
	c.up.calls = c.up.calls[:0]
	c.W.B = out
	if cap(src) <= resp.KeepWriteBuf {
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

// upCall is one rate-limit request decided through the upstream (an upstream.Call): the
// family's evaluation of it (ratelimit.Call, which holds a copy of the request, since the
// client's read buffer moves on, and its reply), and where it stands among c's replies.
type upCall struct {
	ratelimit.Call
	c     *client
	cmd   *cmdEntry
	local handler
	at    int // where its reply goes in c.W.B

	unavailable bool // the upstream could not decide: decide locally
	silent      bool // CLIENT REPLY took its reply back: decided, but not answered
}

func (u *upCall) reset() {
	u.Call.Reset()
	u.c, u.cmd, u.local, u.at, u.unavailable, u.silent = nil, nil, nil, 0, false, false
}

// parse parses the request as the local handler would, with its errors: on a copy of it
// when own is set, for a call that outlives the handler; else on args themselves.
func (u *upCall) parse(c *client, kind ratelimit.CallKind, cmd *cmdEntry, local handler, args [][]byte, own bool) error {
	u.c, u.cmd, u.local = c, cmd, local
	if err := u.Call.Parse(kind, args, own, c.W.Proto); err != nil {
		return err
	}
	if kind == ratelimit.CallAllOf {
		return c.s.up.client.CheckSlots(u.Keys())
	}
	return nil
}

// counted counts the call's decision for INFO.
func (u *upCall) counted() {
	if !u.Decided {
		return
	}
	s := u.c.s
	s.count(u.c, u.cmd, u.Limited)
	s.refunded(u.c, u.Refunded)
	u.Denials(func(key []byte, retryMs, now int64, block ratelimit.Block) {
		s.denial(u.c, u.cmd, key, retryMs, now, block)
	})
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
		u.Fail(err)
		u.c.stat().errors.Add(1)
	}
	c := u.c // u is the client's again once pending reaches 0
	if c.up.pending.Add(-1) == 0 {
		c.resumeUpstream()
	}
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
		{"upstream_global_failing_keys", itoa(s.global.Stats().FailingKeys)},
	}
}

// newGlobal returns GLOBAL's registry in upstream mode; nil otherwise.
func (s *Server) newGlobal() *global.Registry {
	if s.cfg.Upstream == "" && len(s.cfg.UpstreamCluster) == 0 {
		return nil
	}
	return global.New(global.Config{Interval: s.cfg.GlobalSyncInterval, Logger: s.log})
}

func (s *Server) globalInterval() string {
	if s.global == nil {
		return s.cfg.GlobalSyncInterval.String()
	}
	return s.global.Interval().String()
}

func (s *Server) setGlobalInterval(v string) (func(), error) {
	d, err := global.ParseInterval(v)
	if err != nil {
		return nil, err
	}
	return func() {
		if s.global != nil {
			s.global.SetInterval(d)
		}
	}, nil
}

// infoGlobal is INFO's global section: GLOBAL's sync loop.
func (s *Server) infoGlobal() [][2]string {
	if s.global == nil {
		return [][2]string{{"global_mode", "none"}}
	}
	return s.global.Info()
}
