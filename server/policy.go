package server

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/policy"
)

// Policies are named limits kept on the server (package policy). Those set by commands live
// in the keyspace, all in one record of kind Policies at the reserved key policiesKey, so
// that the disk feed makes them durable and the replication feed carries them to replicas,
// with no channel of their own; the record's Num is its version. Those of the config file
// are each node's own. The merged set is compiled into a policyView when the record or the
// file changes; CHECK reads it without a lock. A Watch on the record, kept for the server's
// life, tells of every change however it comes: a command, a replica's stream, a load from
// disk, FLUSHALL; CHECK only loads its flag.
//
// The record is no key to Redis users: SCAN, KEYS and DBSIZE leave it out and FLUSHALL
// keeps it (as Redis keeps its functions); POLICY.DEL removes policies.

// policiesKey is the reserved key of the policies' record.
const policiesKey = "__throttled__:policies"

// policyKeyPrefix starts the key CHECK derives: policy:<name>:<subject>. A policy name
// holds no ':', so that a key names one policy and one subject.
const policyKeyPrefix = "policy:"

// errPoliciesKey refuses a command on the policies' record: a DEL, SET or EXPIRE of it would
// drop every policy.
var errPoliciesKey = errors.New("'" + policiesKey + "' holds the policies: use the POLICY.* commands")

// reservedKey refuses a request for cmd that names the policies' record or the function
// libraries' as a key.
func reservedKey(cmd *command, args [][]byte) error {
	last := cmd.lastKey
	if last < 0 {
		last += len(args)
	}
	for i := cmd.firstKey; i <= last && i < len(args); i += cmd.keyStep {
		switch string(args[i]) {
		case policiesKey:
			return errPoliciesKey
		case functionsKey:
			return errFunctionsKey
		}
	}
	return nil
}

// errNoPolicy is CHECK's and POLICY.*'s answer for a name no policy has.
var errNoPolicy = errors.New("no such policy")

func policyCommands() []*command {
	cmd := func(name string, arity int, flags, syntax, summary string, h handler) *command {
		return &command{name: name, arity: arity, flags: flags, group: "ratelimit", since: "0.2.0", syntax: syntax, summary: summary, handler: h}
	}
	return []*command{
		{name: "check", arity: -3, flags: "write denyoom fast ratelimit", group: "ratelimit", since: "0.2.0",
			syntax:  "name[,name...] subject [COST n] [REFUND n] [PEEK] [PRIORITY name]",
			summary: "Evaluates named policies for a subject, all or nothing; replies the decision and a status.", handler: cmdCheck},
		cmd("policy.set", -3, "write denyoom", "name verb params... [TIERS name=share ...] [SOFT ratio] [SHADOW]", "Creates or changes a named policy.", cmdPolicySet),
		cmd("policy.get", 2, "readonly", "name", "Describes a policy.", cmdPolicyGet),
		cmd("policy.del", 2, "write", "name", "Deletes a policy set by command, with its overrides and lists.", cmdPolicyDel),
		cmd("policy.list", 1, "readonly", "", "Lists the names of the policies.", cmdPolicyList),
		cmd("policy.override", -4, "write denyoom", "name subject verb params... [EX seconds]", "Gives a subject other parameters.", cmdPolicyOverride),
		cmd("policy.allow", -3, "write denyoom", "name subject [EX seconds]", "Puts a subject on the allow list.", policyListHandler(policy.Allow)),
		cmd("policy.deny", -3, "write denyoom", "name subject [EX seconds]", "Puts a subject on the deny list.", policyListHandler(policy.Deny)),
		cmd("policy.unlist", 3, "write", "name subject", "Removes a subject's override and list entries set by command.", cmdPolicyUnlist),
		cmd("policy.entries", 2, "readonly", "name", "Lists a policy's overrides and list entries.", cmdPolicyEntries),
		cmd("policy.reload", 1, "", "", "Reads the config file's policies again.", cmdPolicyReload),
	}
}

// policyChanges are the policy verbs that change a limit: in @policy and @admin, not in
// @ratelimit (acl.go's categories).
var policyChanges = map[string]bool{"policy.set": true, "policy.del": true, "policy.override": true,
	"policy.allow": true, "policy.deny": true, "policy.unlist": true, "policy.reload": true}

// policyACLKey appends to dst the key a user's key patterns must allow for a policy verb:
// policy:<name> for the policy itself, policy:<name>:<subject> for one of its subjects
// (nil subject: none), the key CHECK decides on.
func policyACLKey(dst, name, subject []byte) []byte {
	dst = append(append(dst, policyKeyPrefix...), name...)
	if subject != nil {
		dst = append(append(dst, ':'), subject...)
	}
	return dst
}

// policySubjectVerbs are the policy verbs whose second argument is a subject.
var policySubjectVerbs = map[string]bool{"policy.override": true, "policy.allow": true, "policy.deny": true, "policy.unlist": true}

// policies is the server's state of its policies.
type policies struct {
	mu      sync.Mutex   // guards file, stats and the rebuilds of view; held by writers of the record
	file    policy.Table // the config file's, nil when none
	edge    policy.Table // ratelimit-config's (envoy.go), nil when none; the file's win a name both have
	fileGen atomic.Int64 // changes with file
	stats   map[string]*policyStats
	view    atomic.Pointer[policyView]
	watch   keyspace.Watch // on policiesKey: the record changed since view was built
}

// policyStats are a policy's counters for INFO throttle. They outlive a change of the policy.
type policyStats struct {
	allowed, denied, shadow, warnings atomic.Int64
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
		return fmt.Errorf("a policy's verb is one of THROTTLE, TOKENBUCKET, LEAKYBUCKET, SLIDE, WINDOW; got '%s'", truncate([]byte(args[0]), 64))
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

// checkPolicyArgs is policyArgs for the config file's reader.
func checkPolicyArgs(args []string) error {
	var l limit
	return policyArgs(args, &l)
}

// loadPolicies reads the config file's policies at start.
func (s *Server) loadPolicies() error {
	s.pol.stats = make(map[string]*policyStats)
	key := []byte(policiesKey)
	sh := s.ks.Shard(key)
	sh.Lock()
	sh.WatchLocked(key, &s.pol.watch)
	sh.Unlock()
	if s.cfg.ConfigFile == "" {
		return nil
	}
	t, err := policy.ParseFile(s.cfg.ConfigFile, s.nowNano(), SplitConfigLine, checkPolicyArgs)
	if err != nil {
		return err
	}
	s.pol.file = t
	return nil
}

// ReloadPolicies reads the config file's policies again (SIGHUP, POLICY.RELOAD). With an
// error, naming the file and the line, the policies stay as they were.
func (s *Server) ReloadPolicies() error {
	if s.cfg.ConfigFile == "" {
		return errors.New("no config file: the server was started without one")
	}
	t, err := policy.ParseFile(s.cfg.ConfigFile, s.nowNano(), SplitConfigLine, checkPolicyArgs)
	if err != nil {
		s.log.Warn("policies not reloaded: the old ones stay", "err", err)
		return fmt.Errorf("policies not reloaded, the old ones stay: %w", err)
	}
	s.pol.mu.Lock()
	s.pol.file = t
	s.pol.fileGen.Add(1)
	s.pol.mu.Unlock()
	s.log.Info("policies reloaded", "file", s.cfg.ConfigFile, "policies", len(t))
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
func (s *Server) policyRecord(withBytes bool) (int64, []byte) {
	key := []byte(policiesKey)
	sh := s.ks.Shard(key)
	sh.Lock()
	v, ok := sh.GetLocked(key, s.nowNano())
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
func (s *Server) policyView() *policyView {
	if pv := s.pol.view.Load(); pv != nil && !s.pol.watch.Changed() && pv.fileGen == s.pol.fileGen.Load() {
		return pv
	}
	s.pol.mu.Lock()
	defer s.pol.mu.Unlock()
	return s.rebuildPoliciesLocked()
}

// rebuildPoliciesLocked compiles the record and the file into a new view; s.pol.mu is held.
func (s *Server) rebuildPoliciesLocked() *policyView {
	gen := s.pol.fileGen.Load()
	if pv := s.pol.view.Load(); pv != nil && !s.pol.watch.Changed() && pv.fileGen == gen {
		return pv // built meanwhile
	}
	s.pol.watch.Reset() // before the read: a write after it marks the watch again
	version, b := s.policyRecord(true)
	pv := &policyView{version: version, fileGen: gen, stored: policy.Table{}, byName: make(map[string]*compiledPolicy)}
	if b != nil {
		t, err := policy.Decode(b)
		if err != nil {
			s.log.Error("the stored policies are damaged: only the config file's apply", "err", err)
		} else {
			pv.stored = t
		}
	}
	names := map[string]bool{}
	for n := range s.pol.file {
		names[n] = true
	}
	for n := range s.pol.edge {
		names[n] = true
	}
	for n := range pv.stored {
		names[n] = true
	}
	for n := range names {
		f, st := s.pol.configured(n), pv.stored[n]
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
			s.log.Error("policy skipped", "policy", n, "err", err)
			continue
		}
		for i, e := range m.Entries {
			if e.Kind == policy.Override {
				if err := policyArgs(e.Args, &cp.overrides[i]); err != nil {
					cp.overrides[i] = cp.base
				}
			}
		}
		cp.lists = policy.NewLists(m.Entries)
		if cp.stats = s.pol.stats[n]; cp.stats == nil {
			cp.stats = new(policyStats)
			s.pol.stats[n] = cp.stats
		}
		pv.byName[n] = cp
	}
	s.pol.view.Store(pv)
	return pv
}

// changePolicies applies change to a copy of the stored table and stores it as a new version
// of the record. change's error is returned as is, and nothing is stored.
func (s *Server) changePolicies(change func(t policy.Table, now int64) error) error {
	s.pol.mu.Lock()
	defer s.pol.mu.Unlock()
	pv := s.rebuildPoliciesLocked()
	t := policy.Table{}
	for n, p := range pv.stored {
		t[n] = p.Clone()
	}
	now := s.nowNano()
	if err := change(t, now); err != nil {
		return err
	}
	key := []byte(policiesKey)
	sh := s.ks.Shard(key)
	sh.Lock()
	old, _ := sh.GetLocked(key, now)
	version := max(old.Num+1, now, pv.version+1)
	if len(t) == 0 {
		sh.DeleteLocked(key)
	} else {
		sh.SetLocked(key, keyspace.Value{Kind: keyspace.Policies, Num: version, Bytes: t.Encode(now)})
	}
	sh.Unlock()
	s.rebuildPoliciesLocked()
	return nil
}

// keepPolicies runs flush (FLUSHALL) and puts the policies' record back: policies are no keys.
func (s *Server) keepPolicies(flush func() error) error {
	s.pol.mu.Lock()
	defer s.pol.mu.Unlock()
	key := []byte(policiesKey)
	sh := s.ks.Shard(key)
	sh.Lock()
	v, ok := sh.GetLocked(key, s.nowNano())
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

// hasPolicyRecord reports whether the policies' record is stored (DBSIZE leaves it out).
func (s *Server) hasPolicyRecord() bool {
	v, _ := s.policyRecord(false)
	return v != 0
}

// isPolicyRecord reports whether a key SCAN or KEYS meets is the policies' record, or the
// function libraries'.
func isPolicyRecord(v keyspace.Value) bool {
	return v.Kind == keyspace.Policies || v.Kind == keyspace.Functions
}

// POLICY.SET name verb params... [TIERS name=share ...] [SOFT ratio] [SHADOW]
func cmdPolicySet(c *client, args [][]byte) error {
	p, err := policy.ParsePolicy(strs(args[1:]))
	if err != nil {
		return err
	}
	var l limit
	if err := policyArgs(p.Args, &l); err != nil {
		return err
	}
	err = c.s.changePolicies(func(t policy.Table, now int64) error {
		if old := t[p.Name]; old != nil {
			p.Entries = old.Entries // a change of the numbers keeps the overrides and lists
		}
		t[p.Name] = p
		return nil
	})
	if err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// POLICY.GET name: a flat list of fields (a map under RESP3), or null.
func cmdPolicyGet(c *client, args [][]byte) error {
	cp := c.s.policyView().byName[string(args[1])]
	if cp == nil {
		c.w.Null()
		return nil
	}
	source := "command"
	switch {
	case cp.fromFile && cp.fromStore:
		source = "config+command"
	case cp.fromFile:
		source = "config"
	}
	if c.w.Proto == 3 {
		c.w.Map(6)
	} else {
		c.w.Array(12)
	}
	c.w.BulkString("name")
	c.w.BulkString(cp.name)
	c.w.BulkString("limit")
	c.w.BulkString(strings.Join(cp.src.Args, " "))
	c.w.BulkString("soft")
	c.w.BulkString(strconv.FormatFloat(cp.src.Soft, 'g', -1, 64))
	c.w.BulkString("shadow")
	c.w.Int(int64(boolToInt(cp.src.Shadow)))
	c.w.BulkString("source")
	c.w.BulkString(source)
	c.w.BulkString("entries")
	c.w.Int(int64(len(cp.src.Live(c.s.nowNano()))))
	return nil
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// POLICY.DEL name: 1 when a policy set by command was deleted, with its overrides and lists.
func cmdPolicyDel(c *client, args [][]byte) error {
	name := string(args[1])
	deleted := false
	err := c.s.changePolicies(func(t policy.Table, now int64) error {
		if t[name] == nil {
			if c.s.pol.file[name] != nil {
				return fmt.Errorf("policy '%s' is declared in the config file: remove it there and POLICY.RELOAD", name)
			}
			if c.s.pol.edge[name] != nil {
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
	c.w.Int(int64(boolToInt(deleted)))
	return nil
}

// POLICY.LIST: the names of the policies, sorted.
func cmdPolicyList(c *client, args [][]byte) error {
	pv := c.s.policyView()
	t := policy.Table{}
	for n, cp := range pv.byName {
		t[n] = cp.src
	}
	names := t.Names()
	if p := c.user.Load().Perms(); !p.All {
		names = slices.DeleteFunc(names, func(n string) bool { return !p.CanKey(policyACLKey(nil, []byte(n), nil), acl.Read) })
	}
	c.w.Array(len(names))
	for _, n := range names {
		c.w.BulkString(n)
	}
	return nil
}

// addEntry stores e in the policy name, which must exist (in the file or by command).
func (c *client) addEntry(name string, e policy.Entry) error {
	return c.s.changePolicies(func(t policy.Table, now int64) error {
		p := t[name]
		if p == nil {
			if c.s.pol.configured(name) == nil {
				return fmt.Errorf("%w '%s'", errNoPolicy, truncate([]byte(name), 64))
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
func cmdPolicyOverride(c *client, args [][]byte) error {
	e, err := policy.ParseEntry(policy.Override, strs(args[2:]), c.s.nowNano())
	if err != nil {
		return err
	}
	var l limit
	if err := policyArgs(e.Args, &l); err != nil {
		return err
	}
	if err := c.addEntry(string(args[1]), e); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

// POLICY.ALLOW name subject [EX seconds], POLICY.DENY name subject [EX seconds]
func policyListHandler(kind policy.EntryKind) handler {
	return func(c *client, args [][]byte) error {
		e, err := policy.ParseEntry(kind, strs(args[2:]), c.s.nowNano())
		if err != nil {
			return err
		}
		if err := c.addEntry(string(args[1]), e); err != nil {
			return err
		}
		c.w.OK()
		return nil
	}
}

// POLICY.UNLIST name subject: the number of entries removed.
func cmdPolicyUnlist(c *client, args [][]byte) error {
	name, subject := string(args[1]), string(args[2])
	n := 0
	err := c.s.changePolicies(func(t policy.Table, now int64) error {
		p := t[name]
		if p == nil {
			if c.s.pol.configured(name) == nil {
				return fmt.Errorf("%w '%s'", errNoPolicy, truncate(args[1], 64))
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
	c.w.Int(int64(n))
	return nil
}

// POLICY.ENTRIES name: each live entry as [kind, subject, ttl_ms (-1: none), params, source].
func cmdPolicyEntries(c *client, args [][]byte) error {
	cp := c.s.policyView().byName[string(args[1])]
	if cp == nil {
		return fmt.Errorf("%w '%s'", errNoPolicy, truncate(args[1], 64))
	}
	now := c.s.nowNano()
	stored := 0
	if cp.fromStore {
		if st := c.s.pol.view.Load().stored[cp.name]; st != nil {
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
	c.w.Array(len(rows))
	for _, r := range rows {
		ttl := int64(-1)
		if r.e.Expire != 0 {
			ttl = msCeil(r.e.Expire - now)
		}
		c.w.Array(5)
		c.w.BulkString(r.e.Kind.String())
		c.w.BulkString(r.e.Subject)
		c.w.Int(ttl)
		c.w.BulkString(strings.Join(r.e.Args, " "))
		c.w.BulkString(r.source)
	}
	return nil
}

// POLICY.RELOAD
func cmdPolicyReload(c *client, args [][]byte) error {
	if err := c.s.ReloadPolicies(); err != nil {
		return err
	}
	c.w.OK()
	return nil
}

func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

// infoPolicies are INFO throttle's lines per policy.
func (s *Server) infoPolicies() [][2]string {
	pv := s.policyView()
	t := policy.Table{}
	for n, cp := range pv.byName {
		t[n] = cp.src
	}
	var out [][2]string
	for _, n := range t.Names() {
		st := pv.byName[n].stats
		out = append(out, [2]string{"policy_" + n, "allowed=" + itoa(st.allowed.Load()) + ",denied=" + itoa(st.denied.Load()) +
			",shadow_denied=" + itoa(st.shadow.Load()) + ",warnings=" + itoa(st.warnings.Load())})
	}
	return out
}
