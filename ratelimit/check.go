package ratelimit

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/global"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/policy"
)

// CHECK's statuses.
const (
	statusOK = iota
	statusAllowlisted
	statusWarning
	statusShadow
	statusDenylisted
)

var statusNames = [...]string{"ok", "allowlisted", "warning", "shadow", "denylisted"}

// checked is one policy's part of a CHECK.
type checked struct {
	cp     *compiledPolicy
	status int
	listed policy.EntryKind // Allow or Deny when a list decides
}

// ErrCheckUpstream is CHECK's answer in upstream mode for a policy whose limit is not
// GLOBAL: its state would live on this instance alone, apart from the keys the verbs keep
// upstream. A GLOBAL one is decided from the instance's allowance (checkGlobal).
var ErrCheckUpstream = errors.New("in upstream mode CHECK decides GLOBAL policies only")

// ErrSubjectTooLong refuses a subject over MaxSubject, whole: a cut one would share a
// budget with every subject of the same first MaxSubject bytes.
var ErrSubjectTooLong = fmt.Errorf("subject longer than %d bytes", MaxSubject)

// checkSubject refuses a subject over MaxSubject.
func checkSubject(subject []byte) error {
	if len(subject) > MaxSubject {
		return ErrSubjectTooLong
	}
	return nil
}

// checkItem is one policy of a check: its name, the subject its key names and its cost.
type checkItem struct {
	name, subject []byte
	cost          int64
	priority      []byte // the item's tier (an Envoy descriptor's), over the options'; nil for theirs
	// refund: the item gives cost units back (an Envoy descriptor's is_negative_hits), and
	// its refund stands whatever the other items decide.
	refund bool
}

// CHECK name[,name...] subject [COST n|REFUND n] [PEEK] [PRIORITY name]: evaluates each named policy's limit on the
// key policy:<name>:<subject>, all or nothing as ALLOF. Replies the decision and its status
// (one policy), or the combined decision and then each policy's (several).
func (rl *Family) cmdCheck(c *command.Ctx, args [][]byte) error {
	sc := scratchOf(c)
	if err := checkSubject(args[2]); err != nil {
		return err
	}
	var opts nativeOptions
	priority, err := opts.parse(args[3:], nativeOptionSet{})
	if err != nil {
		return err
	}
	names, subject := args[1], args[2]
	items := sc.items[:0]
	for rest := names; ; {
		name := rest
		i := bytes.IndexByte(rest, ',')
		if i >= 0 {
			name = rest[:i]
		}
		items = append(items, checkItem{name: name, subject: subject, cost: opts.cost})
		if i < 0 {
			break
		}
		rest = rest[i+1:]
	}
	sc.items = items
	allowed, err := rl.checkPolicies(c, items, &opts, priority)
	if err != nil {
		return err
	}
	checks, results := sc.checks, sc.pending
	if len(checks) == 1 {
		writeDecisionStatus(&c.W, results[0].d, statusNames[checks[0].status])
		return nil
	}
	all := combine(results, allowed)
	// The most telling status: allowlisted only when every policy's is.
	status, everyAllowlisted := statusOK, true
	for i := range checks {
		status = max(status, checks[i].status)
		everyAllowlisted = everyAllowlisted && checks[i].status == statusAllowlisted
	}
	if status == statusAllowlisted && !everyAllowlisted {
		status = statusOK
	}
	c.W.Array(1 + len(checks))
	writeDecisionStatus(&c.W, all, statusNames[status])
	for i := range checks {
		writeDecisionStatus(&c.W, results[i].d, statusNames[checks[i].status])
	}
	return nil
}

// checkPolicies evaluates each item's policy on the key policy:<name>:<subject> with the
// item's cost and opts' other options, all or nothing as ALLOF, and counts the decisions under c's command. It
// leaves each policy's part in sc.checks and its outcome in sc.pending, and reports whether
// all allowed. CHECK and the edge front doors (envoy.go) decide through it.
func (rl *Family) checkPolicies(c *command.Ctx, items []checkItem, opts *nativeOptions, priority []byte) (bool, error) {
	sc := scratchOf(c)
	if c.ReadOnly && !opts.peek {
		if opts.refund != 0 {
			return false, command.ErrReadOnly
		}
		for _, it := range items {
			if it.cost != 0 {
				return false, command.ErrReadOnly
			}
		}
	}
	pv := rl.policyView()
	checks := sc.checks[:0]
	limits := sc.limits[:0]
	key := sc.checkKeys[:0]
	for i := range items {
		it := &items[i]
		cp := pv.byName[string(it.name)]
		if cp == nil {
			sc.checks, sc.limits, sc.checkKeys = checks, limits, key
			return false, fmt.Errorf("%w '%s'", ErrNoPolicy, command.Truncate(it.name, 64))
		}
		checks = append(checks, checked{cp: cp})
		limits = slices.Grow(limits, 1)[:len(limits)+1]
		limits[len(limits)-1] = cp.base // copied once: append copies a large value twice
		key = append(key, PolicyKeyPrefix...)
		key = append(key, it.name...)
		key = append(key, ':')
		key = append(key, it.subject...)
	}
	sc.checks, sc.checkKeys = checks, key
	now := c.Now()
	keys := sc.keys[:0]
	at := 0
	for i := range checks {
		cp := checks[i].cp
		subject := items[i].subject
		l := &limits[i]
		if !cp.lists.Empty() {
			switch k, e := cp.lists.Match(subject, now); k {
			case policy.Override:
				*l = cp.overrides[e]
			case policy.Allow, policy.Deny:
				checks[i].listed = k
			}
		}
		tiers := l.opts.tiers // the policy's, or the override's
		if tiers == nil {
			tiers = cp.base.opts.tiers
		}
		l.opts.cost, l.opts.peek, l.opts.rare = items[i].cost, opts.peek, false
		pri := priority
		if items[i].priority != nil {
			pri = items[i].priority // the item's tier, over the options'
		}
		if opts.rare || tiers != nil || pri != nil || l.opts.block != 0 || items[i].refund {
			l.opts.rare, l.opts.refunding, l.opts.refund, l.opts.tiers = true, opts.refunding, opts.refund, tiers
			if items[i].refund {
				l.opts.refunding, l.opts.refund, l.opts.cost = true, items[i].cost, 0
			}
			err := l.resolveTier(pri)
			if err != nil && c.AnyTier && pri != nil {
				err = l.resolveTier(nil) // a tier the limit does not name is no tier (edge.go)
			}
			if err != nil {
				sc.checks, sc.limits, sc.checkKeys = checks, limits, key
				return false, fmt.Errorf("CHECK policy '%s': %w", cp.name, err)
			}
		}
		if checks[i].listed != 0 {
			l.opts.peek, l.opts.cost, l.opts.refunding = true, 0, false // a list decides: the limit is only looked at
		}
		n := len(PolicyKeyPrefix) + len(cp.name) + 1 + len(subject)
		l.key = key[at : at+n]
		at += n
		keys = append(keys, l.key)
	}
	sc.limits, sc.keys = limits, keys
	if rl.cfg.Upstream || hasGlobal(limits) {
		allowed, err := rl.checkGlobal(c, checks, limits)
		if err != nil {
			return false, err
		}
		rl.checkCounts(c, checks, limits, sc.pending, allowed, now)
		return allowed, nil
	}

	if len(keys) == 1 {
		sh := c.Keys.Shard(keys[0])
		sh.Lock()
		defer sh.Unlock()
	} else {
		c.Shards = c.Keys.LockKeys(keys, c.Shards[:0])
		defer keyspace.UnlockShards(c.Shards)
	}
	for len(sc.scratches) < len(limits) {
		sc.scratches = append(sc.scratches, nil)
	}
	results := sc.pending[:0]
	allowed := true
	for i := range limits {
		l := &limits[i]
		v, ok := c.Keys.Shard(l.key).GetLocked(l.key, now)
		exists := ok
		for j := i - 1; j >= 0; j-- {
			if string(limits[j].key) == string(l.key) && results[j].store && !limits[j].opts.peek {
				v, ok = results[j].next, results[j].next.Kind != keyspace.None
				break
			}
		}
		if ok && v.Kind != l.kind {
			ok = false // the policy changed its algorithm: the old state means nothing to the new one
		}
		results = append(results, pending{})
		r := &results[i]
		store, err := l.take(now, &v, ok, sc.scratches[i][:0], &r.d, &r.next)
		if err != nil {
			sc.pending = results
			return false, fmt.Errorf("CHECK policy '%s': %w", checks[i].cp.name, err)
		}
		if store {
			sc.scratches[i] = r.next.Bytes[:0]
		}
		r.store, r.exists, r.settles = store, exists, items[i].refund
		checks[i].decide(r)
		allowed = allowed && !r.d.limited
	}
	sc.pending = results
	if !c.ReadOnly {
		rl.keepAll(c, limits, results, allowed)
	}
	rl.checkCounts(c, checks, limits, results, allowed, now)
	return allowed, nil
}

// checkCounts counts a check's decisions: each policy's counters, the denials (TOPDENIED,
// deny events) and the command's.
func (rl *Family) checkCounts(c *command.Ctx, checks []checked, limits []limit, results []pending, allowed bool, now int64) {
	for i := range checks {
		st := checks[i].cp.stats.of(c)
		switch {
		case checks[i].status == statusShadow:
			st.shadow.Add(1)
		case results[i].d.limited:
			st.denied.Add(1)
			rl.denied(c, limits[i].key, &results[i].d, now) // TOPDENIED, deny events
		default:
			st.allowed.Add(1)
		}
		if checks[i].status == statusWarning {
			st.warnings.Add(1)
		}
	}
	rl.cfg.Decided(c, !allowed)
}

// decide sets a policy's status from its decision r (its list, its shadow, its soft limit),
// and makes r what that status answers (a list's or a shadow's decision).
func (ch *checked) decide(r *pending) {
	switch {
	case ch.listed == policy.Deny:
		r.d.limited, r.d.remaining, r.d.retry = true, 0, -1
		ch.status = statusDenylisted
	case ch.listed == policy.Allow:
		r.d.limited, r.d.retry = false, -1
		ch.status = statusAllowlisted
	case r.d.limited && ch.cp.src.Shadow:
		r.d.limited, r.d.retry = false, -1
		r.store = false
		ch.status = statusShadow
	case !r.d.limited && ch.cp.src.Soft > 0 && float64(r.d.limit-r.d.remaining) >= ch.cp.src.Soft*float64(r.d.limit):
		ch.status = statusWarning
	}
}

// hasGlobal reports whether a limit of a check is GLOBAL.
func hasGlobal(limits []limit) bool {
	for i := range limits {
		if limits[i].opts.global {
			return true
		}
	}
	return false
}

// errGlobalCheckRefund is a refund of a GLOBAL policy (REFUND, an Envoy descriptor's
// is_negative_hits).
var errGlobalCheckRefund = errors.New("a GLOBAL policy takes no refund: its allowance is spent, not given back")

// checkGlobal decides a check in upstream mode, whose policies must all be GLOBAL: each
// from its key's allowance (package global), never waiting on the network. All or nothing
// as the local check: when one policy denies, the units the others took go back to their
// allowances. Outside upstream mode a GLOBAL policy is an error, as the GLOBAL option is.
func (rl *Family) checkGlobal(c *command.Ctx, checks []checked, limits []limit) (bool, error) {
	sc := scratchOf(c)
	reg := rl.cfg.Global
	for i := range limits {
		l := &limits[i]
		switch {
		// Neither is the request's fault (HTTP's 400): the server cannot decide it (503).
		case !l.opts.global:
			return false, fmt.Errorf("%w: policy '%s' has no GLOBAL (POLICY.SET name verb params... GLOBAL), and its limit would be this instance's alone",
				ErrCheckUpstream, checks[i].cp.name)
		case reg == nil:
			return false, fmt.Errorf("policy '%s' is GLOBAL: %w", checks[i].cp.name, errGlobalMode)
		case l.opts.refunding:
			return false, fmt.Errorf("CHECK policy '%s': %w", checks[i].cp.name, errGlobalCheckRefund)
		case l.opts.block != 0 || l.opts.tiers != nil:
			return false, fmt.Errorf("CHECK policy '%s': %w", checks[i].cp.name, errGlobalRare)
		}
	}
	now := reg.Now()
	results := sc.pending[:0]
	taken := sc.taken[:0]
	allowed := true
	for i := range limits {
		l := &limits[i]
		results = append(results, pending{})
		r := &results[i]
		var e *global.Entry
		r.d, e = rl.decideGlobal(c, reg, l, now)
		taken = append(taken, e)
		checks[i].decide(r)
		allowed = allowed && !r.d.limited
	}
	if !allowed {
		for i, e := range taken {
			if e != nil {
				reg.Give(e, limits[i].opts.cost)
			}
		}
	}
	clear(taken)
	sc.pending, sc.taken = results, taken
	return allowed, nil
}
