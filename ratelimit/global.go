package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/global"
	"github.com/throttledhq/throttled/keyspace"
)

// GLOBAL (upstream mode): a native verb's call is decided from this instance's allowance of
// the key (package global), never waiting on the network; the sync loop agrees on the
// allowances through the upstream. The verb's parameters are the global limit's.

// Errors of GLOBAL.
var (
	// errGlobalMode is GLOBAL on a server that is not in upstream mode.
	errGlobalMode = errors.New("GLOBAL needs upstream mode (upstream or upstream-cluster): the instances agree on a global limit through it")
	// errGlobalAllOf is GLOBAL inside ALLOF, whose limits are decided together.
	errGlobalAllOf = errors.New("GLOBAL is not taken inside ALLOF: a global limit is decided alone, from its own allowance")
	// errGlobalConcurrency is GLOBAL on CONCURRENCY.ACQUIRE: a slot is held and given back,
	// not spent, so it has no allowance to share.
	errGlobalConcurrency = errors.New("CONCURRENCY.ACQUIRE takes no GLOBAL: a slot is held, not spent; without GLOBAL it is exact through the upstream")
	// errGlobalRare is GLOBAL with an option the allowance cannot honour.
	errGlobalRare = errors.New("GLOBAL takes no REFUND, TIERS, PRIORITY nor BLOCK")
)

// checkGlobal checks the options of a call with GLOBAL.
func checkGlobal(verb string, o *nativeOptions, inAllOf bool) error {
	switch {
	case inAllOf:
		return errGlobalAllOf
	case verb == "concurrency.acquire":
		return errGlobalConcurrency
	case o.rare:
		return errGlobalRare
	}
	return nil
}

// Global reports whether a native verb's request (args[0] its name) has the GLOBAL option:
// upstream mode hands such a call to the local handler instead of the upstream.
func Global(args [][]byte) bool {
	_, n, ok := nativeVerb(args[0])
	if !ok || len(args) < 2+n {
		return false
	}
	rest := args[2+n:]
	for i := 0; i < len(rest); i++ {
		switch {
		case takesValue(rest[i]):
			i++
		case command.EqualFold(rest[i], "global"):
			return true
		}
	}
	return false
}

// takeGlobal decides l, a call with GLOBAL, from its key's allowance.
func (rl *Family) takeGlobal(c *command.Ctx, l *limit) error {
	reg := rl.cfg.Global
	if reg == nil {
		return errGlobalMode
	}
	now := reg.Now()
	d, _ := rl.decideGlobal(c, reg, l, now)
	rl.cfg.Decided(c, d.limited)
	if d.limited {
		rl.denied(c, l.key, &d, now)
	}
	writeDecisionTo(&c.W, d)
	return nil
}

// decideGlobal decides l, a global limit, at now from its key's allowance, and returns the
// entry it took from (nil when nothing was taken: a look, a denial, or no room to keep one),
// which Give can hand the units back to.
func (rl *Family) decideGlobal(c *command.Ctx, reg *global.Registry, l *limit, now int64) (decision, *global.Entry) {
	sig := l.globalSig()
	e := reg.Lookup(l.key)
	var gd global.Decision
	switch {
	case e != nil && e.Sig() == sig:
		gd = reg.Take(e, l.opts.cost, l.opts.peek, now)
	case e == nil && (c.NoRoom || l.opts.peek || l.opts.cost == 0):
		// Nothing kept: a look at a key this instance has no allowance of yet, or no room
		// for one (counted as unstored, as a local verb's).
		if c.NoRoom && !l.opts.peek && l.opts.cost != 0 {
			rl.cfg.Unstored(c)
		}
		gd = reg.Fresh(l.units(), l.opts.cost, now)
	default:
		gl := &globalLimit{l: *l}
		gl.l.key = append([]byte(nil), l.key...)
		e = reg.Ensure(l.key, sig, gl)
		gd = reg.Take(e, l.opts.cost, l.opts.peek, now)
	}
	d := decision{limited: gd.Limited, limit: gd.Limit, remaining: gd.Remaining, retry: msCeil(gd.RetryAfter),
		resetM: msCeil(gd.ResetAfter), hasDelay: l.kind == keyspace.LeakyBucket}
	if d.limited || l.opts.peek || l.opts.cost == 0 {
		e = nil
	}
	return d, e
}

// globalSig is what tells l's parameters apart.
func (l *limit) globalSig() global.Sig {
	k := int64(l.kind)
	switch l.kind {
	case keyspace.GCRA:
		return global.Sig{A: k, B: l.quota.MaxBurst, C: l.quota.Count, D: l.quota.Period}
	case keyspace.TokenBucket:
		return global.Sig{A: k, B: l.tb.Capacity, C: l.tb.Refill, D: l.tb.Period}
	case keyspace.LeakyBucket:
		return global.Sig{A: k, B: l.lb.Capacity, C: l.lb.Leak, D: l.lb.Period}
	case keyspace.SlidingLog:
		return global.Sig{A: k, B: l.sl.Limit, C: l.sl.Window}
	case keyspace.SlidingCounter:
		return global.Sig{A: k, B: l.sc.Limit, C: l.sc.Window}
	case keyspace.FixedWindow:
		return global.Sig{A: k | int64(l.fw.Calendar)<<8, B: l.fw.Limit, C: l.fw.Window, Extra: l.fw.Loc}
	}
	return global.Sig{A: k}
}

// globalLimit is a global.Limit: l's algorithm on the global state, evaluated by the sync
// loop alone (its scratch is the loop's).
type globalLimit struct {
	l       limit
	scratch []byte
}

func (g *globalLimit) Units() int64 { return g.l.units() }

// own is v as l's algorithm reads it: a state of another algorithm (the key's parameters
// changed verb) starts afresh.
func (g *globalLimit) own(v keyspace.Value) keyspace.Value {
	if v.Kind != keyspace.None && v.Kind != g.l.kind {
		return keyspace.Value{}
	}
	return v
}

func (g *globalLimit) Remaining(v keyspace.Value, now int64) int64 {
	v = g.own(v)
	g.l.opts.cost = 0
	var d decision
	var next keyspace.Value
	if _, err := g.l.take(now, &v, v.Kind != keyspace.None, g.scratch[:0], &d, &next); err != nil {
		return 0
	}
	return d.remaining
}

func (g *globalLimit) Take(v keyspace.Value, n, now int64) keyspace.Value {
	v = g.own(v)
	g.l.opts.cost = n
	var d decision
	var next keyspace.Value
	store, err := g.l.take(now, &v, v.Kind != keyspace.None, g.scratch[:0], &d, &next)
	if err != nil || !store || d.limited {
		return v
	}
	g.scratch = next.Bytes[:0]
	next.Bytes = append([]byte(nil), next.Bytes...)
	return next
}

// GlobalBound is the most units one instance can admit from one allowance of the limit a
// native verb's request (args[0] its name) describes, with sync interval ns: its avail at
// most (docs/upstream.md). Tests assert the overshoot against N times it.
func GlobalBound(args [][]byte, interval int64) (int64, error) {
	verb, n, ok := nativeVerb(args[0])
	if !ok {
		return 0, fmt.Errorf("not a native verb: %s", strings.ToUpper(string(args[0])))
	}
	var l limit
	if _, err := l.parse(verb, n, args[1:], false); err != nil {
		return 0, err
	}
	// ceilDiv is ceil(n * interval / per), in floating point: a bound, not a decision.
	ceilDiv := func(n, per, interval int64) int64 {
		return int64(math.Ceil(float64(n) * float64(interval) / float64(per)))
	}
	switch l.kind {
	case keyspace.GCRA:
		return l.units() + ceilDiv(l.quota.Count, l.quota.Period, interval), nil
	case keyspace.TokenBucket:
		return l.tb.Capacity + ceilDiv(l.tb.Refill, l.tb.Period, interval), nil
	case keyspace.LeakyBucket:
		return l.lb.Capacity + ceilDiv(l.lb.Leak, l.lb.Period, interval), nil
	case keyspace.SlidingLog:
		return l.sl.Limit * (1 + ceilDiv(1, l.sl.Window, interval)), nil
	case keyspace.SlidingCounter:
		return l.sc.Limit * (1 + ceilDiv(1, l.sc.Window, interval)), nil
	case keyspace.FixedWindow:
		w := l.fw.Window
		if w == 0 {
			w = l.fw.Calendar.Nominal()
		}
		return l.fw.Limit * (1 + ceilDiv(1, w, interval)), nil
	}
	return 0, errGlobalConcurrency
}
