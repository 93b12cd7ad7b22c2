package ratelimit

import (
	"cmp"
	"errors"
	"fmt"
	"math"

	"github.com/throttledhq/throttled/algorithms"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/gcra"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/resp"
)

func (rl *Family) limitCommands() []*command.Spec {
	verb := func(name, syntax, summary string) *command.Spec {
		return &command.Spec{Name: name, Arity: -(1 + len(command.SplitGroups(syntax)) - countOptional(syntax)), Flags: "write denyoom fast ratelimit",
			FirstKey: 1, LastKey: 1, Group: "ratelimit", Since: "0.1.0", Summary: summary, Syntax: syntax, Handler: rl.cmdLimit,
			Upstream: int(CallLimit)}
	}
	return []*command.Spec{ // CONCURRENCY.ACQUIRE takes COST and PEEK only (errConcurrencyOptions)
		verb("throttle", "key max_burst count period [COST n] [REFUND n] [PEEK] [TIERS name=share ...] [PRIORITY name] [BLOCK duration] [GLOBAL]",
			"GCRA: count per period sustained, max_burst more at once. Replies a decision in milliseconds."),
		verb("tokenbucket", "key capacity refill period [COST n] [REFUND n] [PEEK] [TIERS name=share ...] [PRIORITY name] [BLOCK duration] [GLOBAL]",
			"Token bucket: starts full with capacity, refills refill tokens per period, continuously."),
		verb("leakybucket", "key capacity leak period [COST n] [REFUND n] [PEEK] [TIERS name=share ...] [PRIORITY name] [BLOCK duration] [GLOBAL]",
			"Leaky bucket as a queue: admits while at most capacity units wait, drains leak per period; replies delay_ms too."),
		verb("slide", "key limit window [APPROX] [COST n] [REFUND n] [PEEK] [TIERS name=share ...] [PRIORITY name] [BLOCK duration] [GLOBAL]",
			"Sliding window: an exact log of admissions, or with APPROX the weighted two-window counter."),
		verb("window", "key limit window [TZ name] [COST n] [REFUND n] [PEEK] [TIERS name=share ...] [PRIORITY name] [BLOCK duration] [GLOBAL]",
			"Fixed window aligned to multiples of window since the Unix epoch, or to the calendar (1d, 1w, 1mo, 1y) in the time zone TZ (default UTC)."),
		verb("concurrency.acquire", "key limit lease id [COST n] [PEEK]",
			"At most limit holders at once; id holds a slot for at most lease, and renews it by acquiring again."),
		{Name: "concurrency.release", Arity: 3, Flags: "write fast", FirstKey: 1, LastKey: 1, Group: "ratelimit", Since: "0.1.0",
			Summary: "Frees the slot of id: 1, or 0 when id held none.", Syntax: "key id", Handler: rl.cmdRelease, Upstream: int(CallRelease)},
		{Name: "allof", Arity: -6, Flags: "write denyoom ratelimit", Group: "ratelimit", Since: "0.1.0",
			Summary: "All or nothing across limits: the cost is taken from every limit only if all allow.",
			Syntax:  "verb key args [verb key args ...]", Handler: rl.cmdAllOf, ACLKeys: allOfACLKeys, Upstream: int(CallAllOf)},
	}
}

// countOptional counts the [optional] groups of a syntax line.
func countOptional(syntax string) int {
	n := 0
	for _, g := range command.SplitGroups(syntax) {
		if g[0] == '[' {
			n++
		}
	}
	return n
}

// limit is one parsed call of a native verb: its key, the kind of state it
// drives and its parameters. The parameters sit in concrete fields, not an
// interface, so that a call allocates nothing.
type limit struct {
	key   []byte
	kind  keyspace.Kind
	opts  nativeOptions
	quota gcra.Quota
	tb    algorithms.TokenBucket
	lb    algorithms.LeakyBucket
	sl    algorithms.SlidingLog
	sc    algorithms.SlidingCounter
	fw    algorithms.FixedWindow
	cc    algorithms.Concurrency
}

// decision is a native verb's reply: times in milliseconds, rounded up.
type decision struct {
	limited                         bool
	limit, remaining, retry, resetM int64
	delay                           int64 // LEAKYBUCKET's delay_ms
	hasDelay                        bool
	block                           Block // blockStarted or blockHeld: the denial is a block's (block.go); beside hasDelay, in its padding
	refunded                        int64 // units a REFUND gave back (not in the reply)
}

// nativeVerbs are the verbs a limit may be, with their fixed parameter counts after the key.
var nativeVerbs = [...]struct {
	name    string
	nparams int
}{{"throttle", 3}, {"tokenbucket", 3}, {"leakybucket", 3}, {"slide", 2}, {"window", 2}, {"concurrency.acquire", 3}}

// nativeVerb returns the lower-case name and parameter count of a native verb, without allocating.
func nativeVerb(name []byte) (string, int, bool) {
	for _, v := range nativeVerbs {
		if command.EqualFold(name, v.name) {
			return v.name, v.nparams, true
		}
	}
	return "", 0, false
}

// parse parses "key params... options..." for verb into l, which is zero. With
// inAllOf the options end at the next native verb's name, and the count of
// arguments used is returned; otherwise every argument must be read. (l is
// filled in place: a limit is large, and returning one copies it.)
func (l *limit) parse(verb string, nparams int, args [][]byte, inAllOf bool) (int, error) {
	if len(args) < 1+nparams {
		return 0, fmt.Errorf("wrong number of arguments for '%s'", verb)
	}
	l.key = args[0]
	p := args[1 : 1+nparams]
	rest := args[1+nparams:]
	end := len(rest)
	if inAllOf {
		for i := 0; i < len(rest); i++ {
			if takesValue(rest[i]) {
				i++ // its value may be anything, even a verb's name
				continue
			}
			if _, _, ok := nativeVerb(rest[i]); ok {
				end = i
				break
			}
		}
	}
	priority, err := l.opts.parse(rest[:end], nativeOptionSet{approx: verb == "slide", tiers: true, zone: verb == "window", block: true, global: true})
	if err != nil {
		return 0, err
	}
	if l.opts.global {
		if err := checkGlobal(verb, &l.opts, inAllOf); err != nil {
			return 0, err
		}
	}
	if err := l.parseParams(verb, p, l.opts.approx); err != nil {
		return 0, err
	}
	if l.opts.rare {
		if err := l.resolveTier(priority); err != nil {
			return 0, err
		}
	}
	return 1 + nparams + end, nil
}

// takesValue reports whether arg is an option a value follows: COST, REFUND, PRIORITY, BLOCK
// or TZ.
// (One test of the length for most arguments: ALLOF asks it of each.)
func takesValue(arg []byte) bool {
	switch len(arg) {
	case len("tz"):
		return command.EqualFold(arg, "tz")
	case len("cost"):
		return command.EqualFold(arg, "cost")
	case len("refund"):
		return command.EqualFold(arg, "refund")
	case len("priority"):
		return command.EqualFold(arg, "priority")
	case len("block"):
		return command.EqualFold(arg, "block")
	}
	return false
}

// errConcurrencyOptions: a concurrency slot is given back by CONCURRENCY.RELEASE, holders
// have no tiers, and a denial only says that the slots are busy, not that the caller
// misbehaves, so it starts no block.
var errConcurrencyOptions = errors.New("CONCURRENCY.ACQUIRE takes no REFUND, TIERS, PRIORITY nor BLOCK: CONCURRENCY.RELEASE frees an id's slots")

// resolveTier sets the share of the call's tier, the one priority names (nil: the tier
// "default"), from l's TIERS; for a call whose options are rare.
func (l *limit) resolveTier(priority []byte) error {
	if l.kind == keyspace.Concurrency {
		return errConcurrencyOptions
	}
	share, err := tierShare(l.opts.tiers, priority)
	if err != nil {
		return err
	}
	l.opts.share = share
	return nil
}

// units is l's limit: the most units that pass at once from an idle key.
func (l *limit) units() int64 {
	switch l.kind {
	case keyspace.GCRA:
		return min(l.quota.MaxBurst, math.MaxInt64-1) + 1 // too large a burst is THROTTLE's error
	case keyspace.TokenBucket:
		return l.tb.Capacity
	case keyspace.LeakyBucket:
		return l.lb.Capacity
	case keyspace.SlidingLog:
		return l.sl.Limit
	case keyspace.SlidingCounter:
		return l.sc.Limit
	case keyspace.FixedWindow:
		return l.fw.Limit
	}
	return l.cc.Limit
}

// parseParams reads a verb's parameters into l.
func (l *limit) parseParams(verb string, p [][]byte, approx bool) error {
	var a, b, d int64
	var err error
	count := func(name string, arg []byte, min int64, dst *int64) {
		if err == nil {
			*dst, err = parseCount(name, arg, min)
		}
	}
	duration := func(name string, arg []byte, dst *int64) {
		if err == nil {
			*dst, err = parseDuration(name, arg)
		}
	}
	switch verb {
	case "throttle":
		count("max_burst", p[0], 0, &a)
		count("count", p[1], 1, &b)
		duration("period", p[2], &d)
		l.kind, l.quota = keyspace.GCRA, gcra.Quota{MaxBurst: a, Count: b, Period: d}
	case "tokenbucket":
		count("capacity", p[0], 1, &a)
		count("refill", p[1], 1, &b)
		duration("period", p[2], &d)
		l.kind, l.tb = keyspace.TokenBucket, algorithms.TokenBucket{Capacity: a, Refill: b, Period: d}
		if err == nil {
			err = l.tb.Validate()
		}
	case "leakybucket":
		count("capacity", p[0], 1, &a)
		count("leak", p[1], 1, &b)
		duration("period", p[2], &d)
		l.kind, l.lb = keyspace.LeakyBucket, algorithms.LeakyBucket{Capacity: a, Leak: b, Period: d}
		if err == nil {
			err = l.lb.Validate()
		}
	case "slide", "window":
		count("limit", p[0], 1, &a)
		cal := algorithms.Fixed
		if verb == "window" {
			cal = calendarOf(p[1], l.opts.loc != nil)
		}
		if cal == algorithms.Fixed {
			duration("window", p[1], &d)
			if err != nil {
				err = cmp.Or(calendarError(verb, p[1]), err)
			} else if l.opts.loc != nil {
				err = fmt.Errorf("TZ needs a calendar window: 1d, 1w, 1mo or 1y, got '%s'", command.Truncate(p[1], 64))
			}
		}
		switch {
		case verb == "window":
			l.kind, l.fw = keyspace.FixedWindow, algorithms.FixedWindow{Limit: a, Window: d, Calendar: cal, Loc: l.opts.loc}
			if err == nil {
				err = l.fw.Validate()
			}
		case approx:
			l.kind, l.sc = keyspace.SlidingCounter, algorithms.SlidingCounter{Limit: a, Window: d}
			if err == nil {
				err = l.sc.Validate()
			}
		default:
			l.kind, l.sl = keyspace.SlidingLog, algorithms.SlidingLog{Limit: a, Window: d}
			if err == nil {
				err = l.sl.Validate()
			}
		}
	case "concurrency.acquire":
		count("limit", p[0], 1, &a)
		duration("lease", p[1], &d)
		l.kind, l.cc = keyspace.Concurrency, algorithms.Concurrency{Limit: a, Lease: d, ID: p[2]}
		if err == nil {
			err = l.cc.Validate()
		}
	}
	return err
}

// take evaluates l against the key's value v at now into d. When it returns
// store true, next is the value to keep (Kind None: delete the key); d and next
// are zero to begin with. Bytes of next are built in scratch. (The value and
// the results go by pointer: large structs passed and returned by value are
// copied through memory at every call.) A call with rare options (REFUND, a
// tier, BLOCK) or on a key that may be in its penalty box goes to takeRare; the
// rest of take is the plain evaluation of the whole limit, which a call without
// them pays for and nothing more.
func (l *limit) take(now int64, v *keyspace.Value, exists bool, scratch []byte, d *decision, next *keyspace.Value) (store bool, err error) {
	if l.opts.rare || hasBlock(v) && v.Kind == l.kind {
		return l.takeRare(now, v, exists, scratch, d, next)
	}
	if l.kind == keyspace.GCRA {
		tat, exists, err := tatOf(*v, exists)
		if err != nil {
			return false, err
		}
		r, err := gcra.Throttle(now, tat, exists, l.quota, l.opts.cost)
		if err != nil {
			return false, err
		}
		*d = decision{limited: r.Limited, limit: r.Limit, remaining: r.Remaining, retry: r.RetryAfter, resetM: r.ResetAfter}
		*next = gcraValue(now, r)
		return r.Store, nil
	}
	if exists && v.Kind != l.kind {
		return false, keyspace.ErrWrongType
	}
	st := algorithms.State{Num: v.Num, Num2: v.Num2, Bytes: v.Bytes}
	var ad algorithms.Decision
	var ns algorithms.State
	switch l.kind {
	case keyspace.TokenBucket:
		ad, ns, store, err = l.tb.Take(now, st, exists, l.opts.cost, scratch)
	case keyspace.LeakyBucket:
		ad, ns, store, err = l.lb.Take(now, st, exists, l.opts.cost, scratch)
		d.hasDelay = true
	case keyspace.SlidingLog:
		ad, ns, store, err = l.sl.Take(now, st, exists, l.opts.cost, scratch)
	case keyspace.SlidingCounter:
		ad, ns, store, err = l.sc.Take(now, st, exists, l.opts.cost, scratch)
	case keyspace.FixedWindow:
		ad, ns, store, err = l.fw.Take(now, st, exists, l.opts.cost, scratch)
	case keyspace.Concurrency:
		ad, ns, store, err = l.cc.Take(now, st, exists, l.opts.cost, scratch)
	}
	if err != nil {
		return false, err
	}
	d.limited, d.limit, d.remaining = ad.Limited, ad.Limit, ad.Remaining
	d.retry, d.resetM, d.delay = msCeil(ad.RetryAfter), msCeil(ad.ResetAfter), msCeil(ad.Delay)
	if ns.Expire > 0 {
		*next = keyspace.Value{Kind: l.kind, Num: ns.Num, Num2: ns.Num2, Bytes: ns.Bytes, Expire: ns.Expire}
	}
	return store, nil
}

// takeRare is take for a call with rare options, or on a key that may be in
// its penalty box. A key in its box denies (takeBlocked). A call with REFUND
// gives units back instead (d.refunded says how many); a call of a tier with a
// reserve passes only when cost + reserve would (takeTier). Either decision
// speaks for the call's tier (see algorithms.Tier). A call with BLOCK that is
// denied puts the key in the box (startBlock).
func (l *limit) takeRare(now int64, v *keyspace.Value, exists bool, scratch []byte, d *decision, next *keyspace.Value) (store bool, err error) {
	if exists && v.Kind == l.kind && hasBlock(v) {
		until, inner, innerExists, err := blockOf(v)
		if err != nil {
			return false, err
		}
		v, exists = &inner, innerExists // a block that has ended goes at the next write
		if now < until {
			store, err = l.takeBlocked(now, v, exists, until, scratch, d, next)
			if r := l.opts.share.Reserve(l.units()); err == nil && r > 0 {
				d.limit, _ = algorithms.Tier(d.limit, 0, r)
			}
			return store, err
		}
	}
	reserve := l.opts.share.Reserve(l.units())
	if l.opts.refunding {
		store, err = l.giveBack(now, v, exists, scratch, d, next)
	} else {
		store, err = l.takeTier(now, v, exists, scratch, d, next, reserve)
	}
	if err == nil && reserve > 0 {
		d.limit, d.remaining = algorithms.Tier(d.limit, d.remaining, reserve)
	}
	if err == nil && exists && v.Kind == l.kind && reserve == 0 && l.blocks(d) {
		l.startBlock(now, v, scratch, d, next)
		store = true
	}
	return store, err
}

// takeTier takes l's cost from the whole limit, as take does for a call without
// rare options, when cost + reserve would pass: the tier's check, looked at and
// never taken. take evaluates, with l.opts.rare cleared for the while (l is the
// call's own: nobody else sees it).
func (l *limit) takeTier(now int64, v *keyspace.Value, exists bool, scratch []byte, d *decision, next *keyspace.Value, reserve int64) (store bool, err error) {
	cost := l.opts.cost
	l.opts.rare = false
	defer func() { l.opts.rare, l.opts.cost = true, cost }()
	if reserve > 0 && cost > 0 {
		l.opts.cost = addSat(cost, reserve)
		_, err = l.take(now, v, exists, scratch, d, next)
		l.opts.cost = cost
		if err != nil || d.limited {
			return false, err
		}
		*d, *next = decision{}, keyspace.Value{}
	}
	return l.take(now, v, exists, scratch, d, next)
}

// addSat is a+b for a, b >= 0, saturated at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// giveBack is take for a call with REFUND: up to l.opts.refund units go back to
// the key, in its algorithm's terms; d is the key's decision after the refund
// and d.refunded the units given back.
func (l *limit) giveBack(now int64, v *keyspace.Value, exists bool, scratch []byte, d *decision, next *keyspace.Value) (store bool, err error) {
	n := l.opts.refund
	if l.kind == keyspace.GCRA {
		tat, exists, err := tatOf(*v, exists)
		if err != nil {
			return false, err
		}
		var r gcra.Result
		r, d.refunded, err = gcra.Refund(now, tat, exists, l.quota, n)
		if err != nil {
			return false, err
		}
		d.limited, d.limit, d.remaining, d.retry, d.resetM = r.Limited, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter
		if r.TTL > 0 {
			*next = gcraValue(now, r)
		} // else idle after the refund: the key goes
		return r.Store, nil
	}
	if exists && v.Kind != l.kind {
		return false, keyspace.ErrWrongType
	}
	st := algorithms.State{Num: v.Num, Num2: v.Num2, Bytes: v.Bytes}
	var ad algorithms.Decision
	var ns algorithms.State
	switch l.kind {
	case keyspace.TokenBucket:
		ad, ns, store, d.refunded, err = l.tb.Refund(now, st, exists, n, scratch)
	case keyspace.LeakyBucket:
		ad, ns, store, d.refunded, err = l.lb.Refund(now, st, exists, n, scratch)
		d.hasDelay = true
	case keyspace.SlidingLog:
		ad, ns, store, d.refunded, err = l.sl.Refund(now, st, exists, n, scratch)
	case keyspace.SlidingCounter:
		ad, ns, store, d.refunded, err = l.sc.Refund(now, st, exists, n, scratch)
	case keyspace.FixedWindow:
		ad, ns, store, d.refunded, err = l.fw.Refund(now, st, exists, n, scratch)
	default:
		err = errConcurrencyOptions
	}
	if err != nil {
		return false, err
	}
	d.limited, d.limit, d.remaining = ad.Limited, ad.Limit, ad.Remaining
	d.retry, d.resetM, d.delay = msCeil(ad.RetryAfter), msCeil(ad.ResetAfter), msCeil(ad.Delay)
	if ns.Expire > 0 {
		*next = keyspace.Value{Kind: l.kind, Num: ns.Num, Num2: ns.Num2, Bytes: ns.Bytes, Expire: ns.Expire}
	}
	return store, nil
}

// msCeil turns ns into ms rounded up; -1 stays -1.
func msCeil(ns int64) int64 {
	if ns < 0 {
		return -1
	}
	return ns/1e6 + min(ns%1e6, 1)
}

// writes reports whether the call may change the limit's state: not with PEEK nor COST 0,
// which a replica answers.
func (l *limit) writes() bool {
	return !l.opts.peek && (l.opts.cost != 0 || l.opts.refunding && l.opts.refund != 0)
}

// roomFor reports whether a verb may keep a key's new state: always, but while the keyspace
// has no room (Ctx.NoRoom) only a key that exists, which its new state replaces, and not a
// new one. A decision not kept is counted (INFO unstored_decisions).
func (rl *Family) roomFor(c *command.Ctx, exists bool) bool {
	if exists || !c.NoRoom {
		return true
	}
	rl.cfg.Unstored(c)
	return false
}

// keepAll writes the new state of each of limits whose result stores, all or nothing
// having been decided (allowed: all allow), and counts the units refunded. When they do
// not all allow, only what stands alone is kept: a block that starts, and the results that
// settle (an Envoy refund's). While the keyspace has no room (Ctx.NoRoom) it creates no key;
// the decision counts once as unstored.
func (rl *Family) keepAll(c *command.Ctx, limits []limit, results []pending, allowed bool) {
	unstored := false
	for i := range limits {
		r := &results[i]
		if !r.store || limits[i].opts.peek || !allowed && !r.settles && r.d.block != blockStarted {
			continue
		}
		if c.NoRoom && !r.exists {
			unstored = true
			continue
		}
		keep(c.Keys.Shard(limits[i].key), limits[i].key, r.next)
		rl.cfg.Refunded(c, r.d.refunded)
	}
	if unstored {
		rl.cfg.Unstored(c)
	}
}

// keep writes a limit's new value: a value of kind None deletes the key.
func keep(sh *keyspace.Shard, key []byte, next keyspace.Value) {
	if next.Kind == keyspace.None {
		sh.DeleteLocked(key)
		return
	}
	sh.SetLocked(key, next)
}

// THROTTLE, TOKENBUCKET, LEAKYBUCKET, SLIDE, WINDOW: key params... [COST n] [REFUND n] [PEEK] [TIERS name=share ...] [PRIORITY name]
// CONCURRENCY.ACQUIRE key limit lease id [COST n] [PEEK]
func (rl *Family) cmdLimit(c *command.Ctx, args [][]byte) error {
	verb, n, _ := nativeVerb(args[0])
	var l limit
	if _, err := l.parse(verb, n, args[1:], false); err != nil {
		return err
	}
	if c.ReadOnly && l.writes() {
		return command.ErrReadOnly
	}
	if l.opts.global {
		return rl.takeGlobal(c, &l)
	}
	if c.Fallback > 0 {
		l.share(c.Fallback)
	}
	now := c.Now()
	sh := c.LockShard(l.key) // or the one the server holds for the pipeline (Ctx.Held)
	defer c.UnlockShard(sh)
	v, ok := sh.GetLocked(l.key, now)
	var d decision
	var next keyspace.Value
	store, err := l.take(now, &v, ok, c.Scratch[:0], &d, &next)
	if err != nil {
		return err
	}
	if store {
		c.Scratch = next.Bytes[:0] // built in scratch: reuse what it grew to
		if !l.opts.peek && !c.ReadOnly && rl.roomFor(c, ok) {
			keep(sh, l.key, next)
			rl.cfg.Refunded(c, d.refunded)
		}
	}
	rl.cfg.Decided(c, d.limited)
	if d.limited {
		rl.denied(c, l.key, &d, now)
	}
	writeDecisionTo(&c.W, d)
	return nil
}

// CONCURRENCY.RELEASE key id
func (rl *Family) cmdRelease(c *command.Ctx, args [][]byte) error {
	now := c.Now()
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok := sh.GetLocked(args[1], now)
	if ok && v.Kind != keyspace.Concurrency {
		return keyspace.ErrWrongType
	}
	held, next, err := algorithms.Release(now, algorithms.State{Num: v.Num, Num2: v.Num2, Bytes: v.Bytes}, ok, args[2], c.Scratch[:0])
	if err != nil {
		return err
	}
	if held {
		if next.Expire > 0 {
			sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.Concurrency, Num: next.Num, Num2: next.Num2, Bytes: next.Bytes, Expire: next.Expire})
		} else {
			sh.DeleteLocked(args[1])
		}
		c.W.Int(1)
		return nil
	}
	c.W.Int(0)
	return nil
}

// pending is one ALLOF limit's outcome, kept until all are known.
type pending struct {
	d      decision
	next   keyspace.Value
	store  bool
	exists bool // the key held a value before the call
	// settles: the result is kept even when another limit denies (an Envoy descriptor's
	// refund, which settles a request that passed before).
	settles bool
}

// errAllOfSyntax says what ALLOF takes.
var errAllOfSyntax = errors.New("ALLOF takes one or more limits: verb key params... [options], with verb one of THROTTLE, TOKENBUCKET, LEAKYBUCKET, SLIDE, WINDOW, CONCURRENCY.ACQUIRE")

// ALLOF verb key args [verb key args ...]: every limit is checked under the
// locks of all their shards (taken in shard order); the costs are taken from
// all only if all allow. Replies the combined decision, then each limit's.
func (rl *Family) cmdAllOf(c *command.Ctx, args [][]byte) error {
	sc := scratchOf(c)
	limits, err := parseAllOf(args[1:], sc.limits[:0])
	sc.limits = limits
	if err != nil {
		return err
	}
	for i := range limits {
		if c.ReadOnly && limits[i].writes() {
			return command.ErrReadOnly
		}
	}
	if c.Fallback > 0 {
		for i := range limits {
			limits[i].share(c.Fallback)
		}
	}
	keys := sc.keys[:0]
	for i := range limits {
		keys = append(keys, limits[i].key)
	}
	sc.keys = keys
	now := c.Now()
	c.Shards = c.Keys.LockKeys(keys, c.Shards[:0])
	defer keyspace.UnlockShards(c.Shards)

	results, allowed, err := evalAllOf(now, limits, sc.pending[:0], &sc.scratches, func(i int) (keyspace.Value, bool) {
		return c.Keys.Shard(limits[i].key).GetLocked(limits[i].key, now)
	})
	sc.pending = results
	if err != nil {
		return err
	}
	if !c.ReadOnly {
		rl.keepAll(c, limits, results, allowed)
	}
	rl.cfg.Decided(c, !allowed)
	if !allowed {
		rl.deniedAll(c, limits, results, now)
	}
	writeAllOf(&c.W, results, allowed)
	return nil
}

// parseAllOf parses ALLOF's limits, appending them to limits.
func parseAllOf(args [][]byte, limits []limit) ([]limit, error) {
	for rest := args; len(rest) > 0; {
		verb, n, ok := nativeVerb(rest[0])
		if !ok {
			return limits, fmt.Errorf("%w; got '%s'", errAllOfSyntax, command.Truncate(rest[0], 64))
		}
		limits = append(limits, limit{})
		used, err := limits[len(limits)-1].parse(verb, n, rest[1:], true)
		if err != nil {
			return limits, err
		}
		rest = rest[1+used:]
	}
	return limits, nil
}

// evalAllOf evaluates ALLOF's limits at now, each on the state of its key that state
// returns, into results (returned grown), and reports whether all allow. A key named twice
// sees what the earlier limit would leave. Bytes of the results' states are built in
// (*scratches)[i].
func evalAllOf(now int64, limits []limit, results []pending, scratches *[][]byte, state func(i int) (keyspace.Value, bool)) ([]pending, bool, error) {
	for len(*scratches) < len(limits) {
		*scratches = append(*scratches, nil)
	}
	allowed := true
	for i := range limits {
		l := &limits[i]
		v, ok := state(i)
		exists := ok
		for j := i - 1; j >= 0; j-- {
			if string(limits[j].key) == string(l.key) && results[j].store && !limits[j].opts.peek {
				v, ok = results[j].next, results[j].next.Kind != keyspace.None
				break
			}
		}
		results = append(results, pending{})
		r := &results[i]
		store, err := l.take(now, &v, ok, (*scratches)[i][:0], &r.d, &r.next)
		if err != nil {
			return results, false, fmt.Errorf("ALLOF limit %d (%s): %w", i+1, command.Truncate(l.key, 64), err)
		}
		if store {
			(*scratches)[i] = r.next.Bytes[:0]
		}
		r.store, r.exists = store, exists
		allowed = allowed && !r.d.limited
	}
	return results, allowed, nil
}

// allOf writes ALLOF's reply: the combined decision (limited if any is, the least limit and
// remaining, the greatest retry and reset), then each limit's.
func writeAllOf(w *resp.Writer, results []pending, allowed bool) {
	all := combine(results, allowed)
	w.Array(1 + len(results))
	writeDecisionTo(w, all)
	for _, r := range results {
		writeDecisionTo(w, r.d)
	}
}

// combine returns the combined decision of several limits: limited unless allowed, the
// least limit and remaining, the greatest retry and reset.
func combine(results []pending, allowed bool) decision {
	all := decision{limited: !allowed, limit: -1, remaining: -1, retry: -1}
	for i, r := range results {
		d := r.d
		if i == 0 || d.limit < all.limit {
			all.limit = d.limit
		}
		if i == 0 || d.remaining < all.remaining {
			all.remaining = d.remaining
		}
		all.resetM = max(all.resetM, d.resetM)
		if d.limited && d.retry > all.retry {
			all.retry = d.retry
		}
	}
	for _, r := range results {
		if r.d.limited && r.d.retry < 0 {
			all.retry = -1 // one limit can never pass: neither can all
		}
	}
	return all
}
