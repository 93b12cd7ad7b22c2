package ratelimit

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/policy"
)

// Policies are named limits kept on the server (package policy). Those set by commands live
// in the keyspace, all in one record of kind Policies at the reserved key PoliciesKey, so
// that the disk feed makes them durable and the replication feed carries them to replicas,
// with no channel of their own; the record's Num is its version. Those of the config file
// are each node's own. The merged set is compiled into a policyView when the record or the
// file changes; CHECK reads it without a lock. A Watch on the record, kept for the server's
// life, tells of every change however it comes: a command, a replica's stream, a load from
// disk, FLUSHALL; CHECK only loads its flag.
//
// The record is no key to Redis users: SCAN, KEYS and DBSIZE leave it out and FLUSHALL
// keeps it (as Redis keeps its functions); POLICY.DEL removes policies.

// PoliciesKey is the reserved key of the policies' record.
const PoliciesKey = "__throttled__:policies"

// PolicyKeyPrefix starts the key CHECK derives: policy:<name>:<subject>. A policy name
// holds no ':', so that a key names one policy and one subject.
const PolicyKeyPrefix = "policy:"

// MaxSubject is the longest subject any door takes, in bytes: POLICY.CHECK's and the policy
// verbs' subject, http-port's subject (from a header, the peer or the body) and each value of
// an Envoy descriptor. A longer one is refused with an error naming the cap, never cut: two
// subjects that share their first MaxSubject bytes must not share a budget.
const MaxSubject = 1024

// ErrNoPolicy is CHECK's and POLICY.*'s answer for a name no policy has.
var ErrNoPolicy = errors.New("no such policy")

func (rl *Family) policyCommands() []*command.Spec {
	// A policy verb's keys, to a user's patterns, are policy:<name> and, for one that names
	// a subject, policy:<name>:<subject> (policyACLKeys). One that changes a limit is the
	// operator's: @policy and @admin, never @ratelimit, whose users spend limits.
	cmd := func(name string, arity int, flags, syntax, summary string, h command.Handler) *command.Spec {
		cats := "policy admin dangerous"
		if flags == "readonly" {
			cats = "policy"
		}
		keys := policyACLKeys
		if strings.HasPrefix(syntax, "name subject") {
			keys = subjectACLKeys
		}
		return &command.Spec{Name: name, Arity: arity, Flags: flags, Group: "ratelimit", Since: "0.2.0", Syntax: syntax, Summary: summary,
			Handler: h, ACL: cats, ACLKeys: keys}
	}
	return []*command.Spec{
		{Name: "check", Arity: -3, Flags: "write denyoom fast ratelimit", Group: "ratelimit", Since: "0.2.0",
			Syntax:  "name[,name...] subject [COST n] [REFUND n] [PEEK] [PRIORITY name]",
			Summary: "Evaluates named policies for a subject, all or nothing; replies the decision and a status.", Handler: rl.cmdCheck,
			ACLKeys: checkACLKeys},
		cmd("policy.set", -3, "write denyoom", "name verb params... [TIERS name=share ...] [SOFT ratio] [SHADOW]", "Creates or changes a named policy.", rl.cmdPolicySet),
		cmd("policy.get", 2, "readonly", "name", "Describes a policy.", rl.cmdPolicyGet),
		cmd("policy.del", 2, "write", "name", "Deletes a policy set by command, with its overrides and lists.", rl.cmdPolicyDel),
		cmd("policy.list", 1, "readonly", "", "Lists the names of the policies.", rl.cmdPolicyList),
		cmd("policy.override", -4, "write denyoom", "name subject verb params... [EX seconds]", "Gives a subject other parameters.", rl.cmdPolicyOverride),
		cmd("policy.allow", -3, "write denyoom", "name subject [EX seconds]", "Puts a subject on the allow list.", rl.policyListHandler(policy.Allow)),
		cmd("policy.deny", -3, "write denyoom", "name subject [EX seconds]", "Puts a subject on the deny list.", rl.policyListHandler(policy.Deny)),
		cmd("policy.unlist", 3, "write", "name subject", "Removes a subject's override and list entries set by command.", rl.cmdPolicyUnlist),
		cmd("policy.entries", 2, "readonly", "name", "Lists a policy's overrides and list entries.", rl.cmdPolicyEntries),
		cmd("policy.reload", 1, "", "", "Reads the config file's policies again.", rl.cmdPolicyReload),
	}
}

// policies is the server's state of its policies.
type policies struct {
	mu      sync.Mutex   // guards file, stats and the rebuilds of view; held by writers of the record
	file    policy.Table // the config file's, nil when none
	edge    policy.Table // ratelimit-config's (envoy.go), nil when none; the file's win a name both have
	fileGen atomic.Int64 // changes with file
	stats   map[string]*policyStats
	view    atomic.Pointer[policyView]
	watch   keyspace.Watch // on PoliciesKey: the record changed since view was built
}

// policyStats are a policy's counters for INFO throttle, one set per counter slot
// (Ctx.Slot), summed when read: the calls of two event loops on one policy write no line in
// common. They outlive a change of the policy.
type policyStats struct {
	slots []policyCounts
}

// policyCounts are a policy's counters in one slot, a slot's to a pair of cache lines of its
// own (x86 prefetches lines in pairs).
type policyCounts struct {
	allowed, denied, shadow, warnings atomic.Int64
	_                                 [128 - 4*8]byte
}

// newPolicyStats returns zero counters in n slots, the first and last kept off their
// neighbours in memory.
func newPolicyStats(n int) *policyStats {
	s := make([]policyCounts, n+2)
	return &policyStats{slots: s[1 : n+1 : n+1]}
}

// of is the counters of c's slot.
func (st *policyStats) of(c *command.Ctx) *policyCounts {
	return &st.slots[uint(c.Slot)%uint(len(st.slots))]
}

// sum adds up the slots.
func (st *policyStats) sum() (allowed, denied, shadow, warnings int64) {
	for i := range st.slots {
		p := &st.slots[i]
		allowed += p.allowed.Load()
		denied += p.denied.Load()
		shadow += p.shadow.Load()
		warnings += p.warnings.Load()
	}
	return
}

// policyView is the compiled set of policies of one record version and one file generation.
type policyView struct {
	version int64        // the record's Num; 0 when there is none
	fileGen int64        // policies.fileGen it was built with
	stored  policy.Table // the record, decoded: writers start from a copy
	byName  map[string]*compiledPolicy
}

// compiledPolicy is a policy ready for CHECK.
type compiledPolicy struct {
	name      string
	src       *policy.Policy // merged: the effective verb, options and entries
	fromFile  bool
	fromStore bool
	base      limit   // the verb's parameters; key and options are set per call
	overrides []limit // by entry index; zero for allow and deny entries
	lists     *policy.Lists
	stats     *policyStats
}

// policyArgs parses a verb and its parameters, as a policy holds them, into l.
func policyArgs(args []string, l *limit) error {
	if len(args) == 0 {
		return errors.New("a policy takes a verb and its parameters")
	}
	verb, n, ok := nativeVerb([]byte(args[0]))
	if !ok || verb == "concurrency.acquire" {
		return fmt.Errorf("a policy's verb is one of THROTTLE, TOKENBUCKET, LEAKYBUCKET, SLIDE, WINDOW; got '%s'", command.Truncate([]byte(args[0]), 64))
	}
	b := make([][]byte, len(args))
	b[0] = []byte("-")
	for i := 1; i < len(args); i++ {
		b[i] = []byte(args[i])
	}
	if _, err := l.parse(verb, n, b, false); err != nil {
		return err
	}
	if l.opts.peek || l.opts.cost != 1 || l.opts.refunding || l.opts.prioritized {
		return errors.New("COST, PEEK, REFUND and PRIORITY belong to CHECK, not to a policy")
	}
	l.key = nil
	return nil
}

// commandPolicyArgs is policyArgs for POLICY.SET and POLICY.OVERRIDE: GLOBAL outside
// upstream mode is refused at once, as the option is on a verb. (The config file's are
// taken: a file may serve both modes; CHECK refuses such a policy outside upstream mode.)
func (rl *Family) commandPolicyArgs(args []string, l *limit) error {
	if err := policyArgs(args, l); err != nil {
		return err
	}
	if l.opts.global && rl.cfg.Global == nil {
		return errGlobalMode
	}
	return nil
}

// checkPolicyArgs is policyArgs for the config file's reader.
func checkPolicyArgs(args []string) error {
	var l limit
	return policyArgs(args, &l)
}

// LoadPolicies reads the config file's policies at start.
func (rl *Family) LoadPolicies() error {
	rl.pol.stats = make(map[string]*policyStats)
	key := []byte(PoliciesKey)
	sh := rl.cfg.Keys.Shard(key)
	sh.Lock()
	sh.WatchLocked(key, &rl.pol.watch)
	sh.Unlock()
	if rl.cfg.ConfigFile == "" {
		return nil
	}
	t, err := policy.ParseFile(rl.cfg.ConfigFile, rl.cfg.Now(), rl.cfg.SplitLine, checkPolicyArgs)
	if err != nil {
		return err
	}
	rl.pol.file = t
	return nil
}

// ReloadPolicies reads the config file's policies again (SIGHUP, POLICY.RELOAD). With an
// error, naming the file and the line, the policies stay as they were.
func (rl *Family) ReloadPolicies() error {
	if rl.cfg.ConfigFile == "" {
		return errors.New("no config file: the server was started without one")
	}
	t, err := policy.ParseFile(rl.cfg.ConfigFile, rl.cfg.Now(), rl.cfg.SplitLine, checkPolicyArgs)
	if err != nil {
		rl.cfg.Log.Warn("policies not reloaded: the old ones stay", "err", err)
		return fmt.Errorf("policies not reloaded, the old ones stay: %w", err)
	}
	rl.pol.mu.Lock()
	rl.pol.file = t
	rl.pol.fileGen.Add(1)
	rl.pol.mu.Unlock()
	rl.cfg.Log.Info("policies reloaded", "file", rl.cfg.ConfigFile, "policies", len(t))
	return nil
}

// configured returns the policy name of the config file or of ratelimit-config; nil when
// neither declares it.
func (p *policies) configured(name string) *policy.Policy {
	if f := p.file[name]; f != nil {
		return f
	}
	return p.edge[name]
}

// policyRecord returns the version of the stored record, and its bytes (copied) when withBytes.
func (rl *Family) policyRecord(withBytes bool) (int64, []byte) {
	key := []byte(PoliciesKey)
	sh := rl.cfg.Keys.Shard(key)
	sh.Lock()
	v, ok := sh.GetLocked(key, rl.cfg.Now())
	var b []byte
	if ok && withBytes {
		b = append([]byte(nil), v.Bytes...)
	}
	sh.Unlock()
	if !ok || v.Kind != keyspace.Policies {
		return 0, nil
	}
	return v.Num, b
}

// policyView returns the compiled policies, rebuilt when the record or the file changed.
func (rl *Family) policyView() *policyView {
	if pv := rl.pol.view.Load(); pv != nil && !rl.pol.watch.Changed() && pv.fileGen == rl.pol.fileGen.Load() {
		return pv
	}
	rl.pol.mu.Lock()
	defer rl.pol.mu.Unlock()
	return rl.rebuildPoliciesLocked()
}

// rebuildPoliciesLocked compiles the record and the file into a new view; rl.pol.mu is held.
func (rl *Family) rebuildPoliciesLocked() *policyView {
	gen := rl.pol.fileGen.Load()
	if pv := rl.pol.view.Load(); pv != nil && !rl.pol.watch.Changed() && pv.fileGen == gen {
		return pv // built meanwhile
	}
	rl.pol.watch.Reset() // before the read: a write after it marks the watch again
	version, b := rl.policyRecord(true)
	pv := &policyView{version: version, fileGen: gen, stored: policy.Table{}, byName: make(map[string]*compiledPolicy)}
	if b != nil {
		t, err := policy.Decode(b)
		if err != nil {
			rl.cfg.Log.Error("the stored policies are damaged: only the config file's apply", "err", err)
		} else {
			pv.stored = t
		}
	}
	names := map[string]bool{}
	for n := range rl.pol.file {
		names[n] = true
	}
	for n := range rl.pol.edge {
		names[n] = true
	}
	for n := range pv.stored {
		names[n] = true
	}
	for n := range names {
		f, st := rl.pol.configured(n), pv.stored[n]
		m := &policy.Policy{Name: n}
		switch {
		case st != nil && st.Args != nil:
			m.Args, m.Soft, m.Shadow = st.Args, st.Soft, st.Shadow
		case f != nil:
			m.Args, m.Soft, m.Shadow = f.Args, f.Soft, f.Shadow
		default:
			continue // entries left of a policy the file no longer declares
		}
		// The command's entries first: of two entries as specific, the first applies.
		if st != nil {
			m.Entries = append(m.Entries, st.Entries...)
		}
		if f != nil {
			m.Entries = append(m.Entries, f.Entries...)
		}
		cp := &compiledPolicy{name: n, src: m, fromFile: f != nil, fromStore: st != nil, overrides: make([]limit, len(m.Entries))}
		if err := policyArgs(m.Args, &cp.base); err != nil {
			rl.cfg.Log.Error("policy skipped", "policy", n, "err", err)
			continue
		}
		for i, e := range m.Entries {
			if e.Kind == policy.Override {
				if err := policyArgs(e.Args, &cp.overrides[i]); err != nil {
					cp.overrides[i] = cp.base
				}
				// A GLOBAL policy's overrides are GLOBAL: the subject's key is one limit,
				// whichever parameters apply to it.
				cp.overrides[i].opts.global = cp.overrides[i].opts.global || cp.base.opts.global
			}
		}
		cp.lists = policy.NewLists(m.Entries)
		if cp.stats = rl.pol.stats[n]; cp.stats == nil {
			cp.stats = newPolicyStats(rl.cfg.Slots)
			rl.pol.stats[n] = cp.stats
		}
		pv.byName[n] = cp
	}
	rl.pol.view.Store(pv)
	return pv
}

// changePolicies applies change to a copy of the stored table and stores it as a new version
// of the record. change's error is returned as is, and nothing is stored.
func (rl *Family) changePolicies(change func(t policy.Table, now int64) error) error {
	rl.pol.mu.Lock()
	defer rl.pol.mu.Unlock()
	pv := rl.rebuildPoliciesLocked()
	t := policy.Table{}
	for n, p := range pv.stored {
		t[n] = p.Clone()
	}
	now := rl.cfg.Now()
	if err := change(t, now); err != nil {
		return err
	}
	key := []byte(PoliciesKey)
	sh := rl.cfg.Keys.Shard(key)
	sh.Lock()
	old, _ := sh.GetLocked(key, now)
	version := max(old.Num+1, now, pv.version+1)
	if len(t) == 0 {
		sh.DeleteLocked(key)
	} else {
		sh.SetLocked(key, keyspace.Value{Kind: keyspace.Policies, Num: version, Bytes: t.Encode(now)})
	}
	sh.Unlock()
	rl.rebuildPoliciesLocked()
	return nil
}

// KeepPolicies runs flush (FLUSHALL) and puts the policies' record back: policies are no keys.
func (rl *Family) KeepPolicies(flush func() error) error {
	rl.pol.mu.Lock()
	defer rl.pol.mu.Unlock()
	key := []byte(PoliciesKey)
	sh := rl.cfg.Keys.Shard(key)
	sh.Lock()
	v, ok := sh.GetLocked(key, rl.cfg.Now())
	if ok {
		v.Bytes = append([]byte(nil), v.Bytes...)
	}
	sh.Unlock()
	err := flush()
	if ok && v.Kind == keyspace.Policies {
		sh.Lock()
		sh.SetLocked(key, v)
		sh.Unlock()
	}
	return err
}

// HasPolicyRecord reports whether the policies' record is stored (DBSIZE leaves it out).
func (rl *Family) HasPolicyRecord() bool {
	v, _ := rl.policyRecord(false)
	return v != 0
}

// POLICY.SET name verb params... [TIERS name=share ...] [SOFT ratio] [SHADOW]
func (rl *Family) cmdPolicySet(c *command.Ctx, args [][]byte) error {
	p, err := policy.ParsePolicy(strs(args[1:]))
	if err != nil {
		return err
	}
	var l limit
	if err := rl.commandPolicyArgs(p.Args, &l); err != nil {
		return err
	}
	err = rl.changePolicies(func(t policy.Table, now int64) error {
		if old := t[p.Name]; old != nil {
			p.Entries = old.Entries // a change of the numbers keeps the overrides and lists
		}
		t[p.Name] = p
		return nil
	})
	if err != nil {
		return err
	}
	c.W.OK()
	return nil
}

// POLICY.GET name: a flat list of fields (a map under RESP3), or null.
func (rl *Family) cmdPolicyGet(c *command.Ctx, args [][]byte) error {
	cp := rl.policyView().byName[string(args[1])]
	if cp == nil {
		c.W.Null()
		return nil
	}
	source := "command"
	switch {
	case cp.fromFile && cp.fromStore:
		source = "config+command"
	case cp.fromFile:
		source = "config"
	}
	if c.W.Proto == 3 {
		c.W.Map(6)
	} else {
		c.W.Array(12)
	}
	c.W.BulkString("name")
	c.W.BulkString(cp.name)
	c.W.BulkString("limit")
	c.W.BulkString(strings.Join(cp.src.Args, " "))
	c.W.BulkString("soft")
	c.W.BulkString(strconv.FormatFloat(cp.src.Soft, 'g', -1, 64))
	c.W.BulkString("shadow")
	c.W.Int(int64(boolToInt(cp.src.Shadow)))
	c.W.BulkString("source")
	c.W.BulkString(source)
	c.W.BulkString("entries")
	c.W.Int(int64(len(cp.src.Live(rl.cfg.Now()))))
	return nil
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// POLICY.DEL name: 1 when a policy set by command was deleted, with its overrides and lists.
func (rl *Family) cmdPolicyDel(c *command.Ctx, args [][]byte) error {
	name := string(args[1])
	deleted := false
	err := rl.changePolicies(func(t policy.Table, now int64) error {
		if t[name] == nil {
			if rl.pol.file[name] != nil {
				return fmt.Errorf("policy '%s' is declared in the config file: remove it there and POLICY.RELOAD", name)
			}
			if rl.pol.edge[name] != nil {
				return fmt.Errorf("policy '%s' comes from ratelimit-config: remove its descriptor there", name)
			}
			return nil
		}
		delete(t, name)
		deleted = true
		return nil
	})
	if err != nil {
		return err
	}
	c.W.Int(int64(boolToInt(deleted)))
	return nil
}

// POLICY.LIST: the names of the policies, sorted.
func (rl *Family) cmdPolicyList(c *command.Ctx, args [][]byte) error {
	pv := rl.policyView()
	t := policy.Table{}
	for n, cp := range pv.byName {
		t[n] = cp.src
	}
	names := t.Names()
	names = slices.DeleteFunc(names, func(n string) bool { return !rl.cfg.Readable(c, []byte(PolicyKeyPrefix+n)) })
	c.W.Array(len(names))
	for _, n := range names {
		c.W.BulkString(n)
	}
	return nil
}

// addEntry stores e in the policy name, which must exist (in the file or by command).
func (rl *Family) addEntry(c *command.Ctx, name string, e policy.Entry) error {
	return rl.changePolicies(func(t policy.Table, now int64) error {
		p := t[name]
		if p == nil {
			if rl.pol.configured(name) == nil {
				return fmt.Errorf("%w '%s'", ErrNoPolicy, command.Truncate([]byte(name), 64))
			}
			p = &policy.Policy{Name: name} // entries added to the file's policy
			t[name] = p
		}
		p.Entries = p.Live(now)
		p.Put(e)
		return nil
	})
}

// POLICY.OVERRIDE name subject verb params... [EX seconds]
func (rl *Family) cmdPolicyOverride(c *command.Ctx, args [][]byte) error {
	if err := checkSubject(args[2]); err != nil {
		return err
	}
	e, err := policy.ParseEntry(policy.Override, strs(args[2:]), rl.cfg.Now())
	if err != nil {
		return err
	}
	var l limit
	if err := rl.commandPolicyArgs(e.Args, &l); err != nil {
		return err
	}
	if err := rl.addEntry(c, string(args[1]), e); err != nil {
		return err
	}
	c.W.OK()
	return nil
}

// POLICY.ALLOW name subject [EX seconds], POLICY.DENY name subject [EX seconds]
func (rl *Family) policyListHandler(kind policy.EntryKind) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		if err := checkSubject(args[2]); err != nil {
			return err
		}
		e, err := policy.ParseEntry(kind, strs(args[2:]), rl.cfg.Now())
		if err != nil {
			return err
		}
		if err := rl.addEntry(c, string(args[1]), e); err != nil {
			return err
		}
		c.W.OK()
		return nil
	}
}

// POLICY.UNLIST name subject: the number of entries removed.
func (rl *Family) cmdPolicyUnlist(c *command.Ctx, args [][]byte) error {
	if err := checkSubject(args[2]); err != nil {
		return err
	}
	name, subject := string(args[1]), string(args[2])
	n := 0
	err := rl.changePolicies(func(t policy.Table, now int64) error {
		p := t[name]
		if p == nil {
			if rl.pol.configured(name) == nil {
				return fmt.Errorf("%w '%s'", ErrNoPolicy, command.Truncate(args[1], 64))
			}
			return nil
		}
		n = p.Remove(subject, func(policy.EntryKind) bool { return true })
		if p.Args == nil && len(p.Entries) == 0 {
			delete(t, name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.W.Int(int64(n))
	return nil
}

// POLICY.ENTRIES name: each live entry as [kind, subject, ttl_ms (-1: none), params, source].
func (rl *Family) cmdPolicyEntries(c *command.Ctx, args [][]byte) error {
	cp := rl.policyView().byName[string(args[1])]
	if cp == nil {
		return fmt.Errorf("%w '%s'", ErrNoPolicy, command.Truncate(args[1], 64))
	}
	now := rl.cfg.Now()
	stored := 0
	if cp.fromStore {
		if st := rl.pol.view.Load().stored[cp.name]; st != nil {
			stored = len(st.Entries)
		}
	}
	type row struct {
		e      policy.Entry
		source string
	}
	var rows []row
	for i, e := range cp.src.Entries {
		if e.Expire != 0 && now >= e.Expire {
			continue
		}
		src := "config"
		if i < stored {
			src = "command"
		}
		rows = append(rows, row{e, src})
	}
	c.W.Array(len(rows))
	for _, r := range rows {
		ttl := int64(-1)
		if r.e.Expire != 0 {
			ttl = msCeil(r.e.Expire - now)
		}
		c.W.Array(5)
		c.W.BulkString(r.e.Kind.String())
		c.W.BulkString(r.e.Subject)
		c.W.Int(ttl)
		c.W.BulkString(strings.Join(r.e.Args, " "))
		c.W.BulkString(r.source)
	}
	return nil
}

// POLICY.RELOAD
func (rl *Family) cmdPolicyReload(c *command.Ctx, args [][]byte) error {
	if err := rl.ReloadPolicies(); err != nil {
		return err
	}
	c.W.OK()
	return nil
}

func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

// InfoPolicies are INFO throttle's lines per policy.
func (rl *Family) InfoPolicies() [][2]string {
	pv := rl.policyView()
	t := policy.Table{}
	for n, cp := range pv.byName {
		t[n] = cp.src
	}
	var out [][2]string
	for _, n := range t.Names() {
		allowed, denied, shadow, warnings := pv.byName[n].stats.sum()
		out = append(out, [2]string{"policy_" + n, "allowed=" + strconv.FormatInt(allowed, 10) + ",denied=" + strconv.FormatInt(denied, 10) +
			",shadow_denied=" + strconv.FormatInt(shadow, 10) + ",warnings=" + strconv.FormatInt(warnings, 10)})
	}
	return out
}

// SetEdgePolicies makes t the policies of ratelimit-config (the edge's descriptors); the
// config file's win a name both have.
func (rl *Family) SetEdgePolicies(t policy.Table) {
	rl.pol.mu.Lock()
	rl.pol.edge = t
	rl.pol.fileGen.Add(1)
	rl.pol.mu.Unlock()
}

// allOfACLKeys are ALLOF's keys: each limit's.
func allOfACLKeys(c *command.Ctx, args [][]byte) [][]byte {
	sc := scratchOf(c)
	limits, err := parseAllOf(args[1:], sc.limits[:0])
	sc.limits = limits
	if err != nil {
		return nil
	}
	keys := sc.keys[:0]
	for i := range limits {
		keys = append(keys, limits[i].key)
	}
	sc.keys = keys
	return keys
}

// checkACLKeys are CHECK's keys, policy:<name>:<subject> for each policy named: a user's key
// patterns bound the subjects it may decide for (http-port's users, as RESP's).
func checkACLKeys(c *command.Ctx, args [][]byte) [][]byte {
	if len(args) < 3 {
		return nil
	}
	sc := scratchOf(c)
	buf, keys := sc.checkKeys[:0], sc.keys[:0]
	for rest := args[1]; ; {
		name, more, found := bytes.Cut(rest, []byte{','})
		at := len(buf)
		buf = appendPolicyKey(buf, name, args[2])
		keys = append(keys, buf[at:len(buf):len(buf)])
		if !found {
			break
		}
		rest = more
	}
	sc.checkKeys, sc.keys = buf, keys
	return keys
}

// policyACLKeys is a policy verb's key: policy:<name>.
func policyACLKeys(c *command.Ctx, args [][]byte) [][]byte {
	if len(args) < 2 {
		return nil // POLICY.LIST, POLICY.RELOAD: no key; LIST shows only what the user may read
	}
	return oneACLKey(c, args[1], nil)
}

// subjectACLKeys is the key of a policy verb that names a subject (OVERRIDE, ALLOW, DENY,
// UNLIST): policy:<name>:<subject>.
func subjectACLKeys(c *command.Ctx, args [][]byte) [][]byte {
	if len(args) < 3 {
		return nil
	}
	return oneACLKey(c, args[1], args[2])
}

// oneACLKey builds policy:<name>[:<subject>] in c's scratch.
func oneACLKey(c *command.Ctx, name, subject []byte) [][]byte {
	sc := scratchOf(c)
	sc.checkKeys = appendPolicyKey(sc.checkKeys[:0], name, subject)
	sc.keys = append(sc.keys[:0], sc.checkKeys)
	return sc.keys
}

// appendPolicyKey appends policy:<name>, and :<subject> unless subject is nil.
func appendPolicyKey(dst, name, subject []byte) []byte {
	dst = append(append(dst, PolicyKeyPrefix...), name...)
	if subject != nil {
		dst = append(append(dst, ':'), subject...)
	}
	return dst
}
