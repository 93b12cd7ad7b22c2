package server

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/conffile"
	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
	"github.com/throttledhq/throttled/persistence"
)

// The configuration parameters live in one table: each says what CONFIG GET shows, what
// CONFIG SET may change and how CONFIG REWRITE writes it back to the config file.

// param is one configuration parameter.
type param struct {
	name    string
	aliases []string      // Redis's older names: slaveof for replicaof
	get     func() string // the running value
	// set checks a CONFIG SET value and returns what applies it; nil when the parameter
	// cannot change at run time.
	set  func(v string) (apply func(), err error)
	def  string   // the default, as get shows it: CONFIG REWRITE adds a line only for another value
	file fileForm // how the config file holds it
}

// fileForm is how CONFIG REWRITE writes a parameter.
type fileForm int

const (
	notInFile  fileForm = iota // not an option of the config file: CONFIG GET shows it for clients' sake
	plainValue                 // name value
	quoted                     // name "value", with C escapes; an empty value has no line at all
	bytesValue                 // name 1mb: in the largest unit that divides it
	words                      // name host port, unquoted; an empty value has no line at all
	list                       // name a b c, unquoted; an empty value means none, not the default: name ""
)

// replConfig holds the replication options CONFIG SET changes at run time, readable from any
// goroutine.
type replConfig struct {
	masterAuth, masterUser, announceIP                         atomic.Pointer[string]
	backlogSize, priority, announcePort, minToWrite, minMaxLag atomic.Int64
}

func (r *replConfig) init(cfg Config) {
	r.masterAuth.Store(&cfg.MasterAuth)
	r.masterUser.Store(&cfg.MasterUser)
	r.announceIP.Store(&cfg.ReplicaAnnounceIP)
	r.backlogSize.Store(int64(cfg.ReplBacklogSize))
	r.priority.Store(int64(cfg.ReplicaPriority))
	r.announcePort.Store(int64(cfg.ReplicaAnnouncePort))
	r.minToWrite.Store(int64(cfg.MinReplicasToWrite))
	r.minMaxLag.Store(int64(cfg.MinReplicasMaxLag))
}

// errReadOnlyReplica refuses replica-read-only no.
var errReadOnlyReplica = errors.New("throttled replicas are always read-only: replica-read-only takes yes only")

// paramTable builds the table; names stay in Redis's spelling.
func (s *Server) paramTable() []*param {
	def := DefaultConfig()
	none := ""
	s.savePoints.Store(&none)
	constant := func(v string) func() string { return func() string { return v } }
	itoaInt := func(n int) string { return strconv.Itoa(n) }
	str := func(p *atomic.Pointer[string]) func() string { return func() string { return *p.Load() } }
	num := func(n *atomic.Int64) func() string { return func() string { return itoa(n.Load()) } }
	setStr := func(p *atomic.Pointer[string]) func(string) (func(), error) {
		return func(v string) (func(), error) { return func() { p.Store(&v) }, nil }
	}
	setNum := func(name string, n *atomic.Int64, parse func(string) (int64, error)) func(string) (func(), error) {
		return func(v string) (func(), error) {
			x, err := parse(v)
			if err != nil {
				return nil, errors.New("argument couldn't be parsed into an integer")
			}
			if lo, hi := intRange(name); x < lo || x > hi {
				return nil, fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
			}
			return func() { n.Store(x) }, nil
		}
	}
	integer := func(v string) (int64, error) { return strconv.ParseInt(v, 10, 64) }
	r := &s.replCfg
	return []*param{
		{name: "bind", get: constant(s.cfg.Bind), def: def.Bind, file: plainValue},
		{name: "port", get: constant(itoaInt(s.cfg.Port)), def: itoaInt(def.Port), file: plainValue},
		{name: "dir", get: constant(s.cfg.Dir), def: def.Dir, file: quoted},
		{name: "appendonly", get: constant(yesNo(s.store != nil)), def: yesNo(def.AppendOnly), file: plainValue},
		{name: "aof-load-truncated", get: constant(yesNo(s.cfg.AOFLoadTruncated)), def: yesNo(def.AOFLoadTruncated), file: plainValue},
		{name: "aof-load-broken", get: constant(yesNo(s.cfg.AOFLoadBroken)), def: yesNo(def.AOFLoadBroken), file: plainValue},
		{name: "aof-load-broken-max-size", get: constant(itoaInt(s.cfg.AOFLoadBrokenMaxSize)), def: itoaInt(def.AOFLoadBrokenMaxSize), file: plainValue},
		{name: "appendfsync", get: s.appendFsync, def: def.AppendFsync, file: plainValue, set: func(v string) (func(), error) {
			f, err := persistence.ParseFsync(v)
			if err != nil {
				return nil, errors.New("argument(s) must be one of the following: always, everysec, no")
			}
			if s.store == nil {
				return nil, errors.New("appendonly is no")
			}
			return func() { s.store.SetFsync(f) }, nil
		}},
		{name: "requirepass", get: str(&s.password), def: "", file: quoted, set: func(v string) (func(), error) {
			return func() { s.password.Store(&v); s.acl.SetRequirePass(v) }, nil
		}},
		{name: "loglevel", get: s.logLevelName, def: def.LogLevel, file: plainValue, set: func(v string) (func(), error) {
			name := strings.ToLower(v)
			level, ok := logLevels[name]
			if !ok {
				return nil, errors.New("argument(s) must be one of the following: debug, verbose, notice, warning")
			}
			return func() { s.level.Set(level); s.levelName.Store(&name) }, nil
		}},
		{name: "maxmemory", get: num(&s.mem.max), def: "0", file: bytesValue, set: func(v string) (func(), error) {
			apply, err := setNum("maxmemory", &s.mem.max, conffile.ParseSize)(v)
			if err != nil {
				return nil, err
			}
			// Measured at once, as Redis's CONFIG SET maxmemory evicts before it replies: the
			// next command must not see the old limit's OOM, nor wait for the loop's tick.
			return func() { apply(); s.enforceMemory() }, nil
		}},
		{name: "maxmemory-policy", get: s.policyName, def: def.MaxMemoryPolicy, file: plainValue, set: func(v string) (func(), error) {
			p, err := keyspace.ParsePolicy(v)
			if err != nil {
				return nil, errors.New("argument(s) must be one of the following: noeviction, volatile-ttl, allkeys-lru, volatile-lru, allkeys-random, volatile-random")
			}
			return func() { s.setPolicy(p) }, nil
		}},
		{name: "notify-keyspace-events", get: func() string { return s.env.Events.Flags().String() }, file: quoted, set: func(v string) (func(), error) {
			c, err := notify.Parse(v)
			if err != nil {
				return nil, err
			}
			return func() { s.env.Events.Set(c) }, nil
		}},
		{name: "maxmemory-samples", get: num(&s.mem.samples), def: itoaInt(def.MaxMemorySamples), file: plainValue, set: setNum("maxmemory-samples", &s.mem.samples, integer)},
		{name: "aclfile", get: constant(s.cfg.ACLFile), file: quoted},
		{name: "timeout", get: num(&s.conns.timeout), def: itoaInt(def.Timeout), file: plainValue, set: setNum("timeout", &s.conns.timeout, integer)},
		{name: "tcp-keepalive", get: num(&s.conns.keepAlive), def: itoaInt(def.TCPKeepAlive), file: plainValue, set: setNum("tcp-keepalive", &s.conns.keepAlive, integer)},
		{name: "protected-mode", get: func() string { return yesNo(s.conns.protectedMode.Load()) }, def: yesNo(def.ProtectedMode), file: plainValue, set: func(v string) (func(), error) {
			on, err := parseYesNo(v)
			if err != nil {
				return nil, err
			}
			return func() { s.conns.protectedMode.Store(on) }, nil
		}},
		{name: "client-output-buffer-limit", get: func() string { return s.outputLimits.Load().String() }, def: defaultOutputLimits.String(), file: plainValue, set: func(v string) (func(), error) {
			limits, err := parseOutputLimits(v, *s.outputLimits.Load())
			if err != nil {
				return nil, err
			}
			return func() { s.outputLimits.Store(&limits) }, nil
		}},
		{name: "maxclients", get: num(&s.maxClients), def: itoaInt(def.MaxClients), file: plainValue, set: setNum("maxclients", &s.maxClients, integer)},
		{name: "prefetch-batch-max-size", get: num(&s.prefetchBatch), def: itoaInt(def.PrefetchBatch), file: plainValue, set: setNum("prefetch-batch-max-size", &s.prefetchBatch, integer)},
		{name: "proto-max-bulk-len", get: constant(itoaInt(s.cfg.ProtoMaxBulkLen)), def: itoaInt(def.ProtoMaxBulkLen), file: bytesValue},
		{name: "io-threads", get: constant(itoaInt(s.cfg.IOThreads)), def: itoaInt(def.IOThreads), file: plainValue},
		{name: "shards", get: constant(itoaInt(s.cfg.Shards)), def: itoaInt(def.Shards), file: plainValue},

		// Replication. replicaof changes with the REPLICAOF command, not CONFIG SET, as in Redis.
		{name: "replicaof", aliases: []string{"slaveof"}, get: s.replicaOf, file: words},
		{name: "masterauth", get: str(&r.masterAuth), file: quoted, set: setStr(&r.masterAuth)},
		{name: "masteruser", get: str(&r.masterUser), file: quoted, set: setStr(&r.masterUser)},
		{name: "repl-backlog-size", get: num(&r.backlogSize), def: itoaInt(def.ReplBacklogSize), file: bytesValue, set: setNum("repl-backlog-size", &r.backlogSize, conffile.ParseSize)},
		{name: "replica-priority", aliases: []string{"slave-priority"}, get: num(&r.priority), def: itoaInt(def.ReplicaPriority), file: plainValue, set: setNum("replica-priority", &r.priority, integer)},
		{name: "replica-announce-ip", aliases: []string{"slave-announce-ip"}, get: str(&r.announceIP), file: quoted, set: setStr(&r.announceIP)},
		{name: "replica-announce-port", aliases: []string{"slave-announce-port"}, get: num(&r.announcePort), def: itoaInt(def.ReplicaAnnouncePort), file: plainValue, set: setNum("replica-announce-port", &r.announcePort, integer)},
		{name: "min-replicas-to-write", aliases: []string{"min-slaves-to-write"}, get: num(&r.minToWrite), def: itoaInt(def.MinReplicasToWrite), file: plainValue, set: setNum("min-replicas-to-write", &r.minToWrite, integer)},
		{name: "min-replicas-max-lag", aliases: []string{"min-slaves-max-lag"}, get: num(&r.minMaxLag), def: itoaInt(def.MinReplicasMaxLag), file: plainValue, set: setNum("min-replicas-max-lag", &r.minMaxLag, integer)},
		{name: "replica-read-only", aliases: []string{"slave-read-only"}, get: constant("yes"), def: "yes", file: plainValue, set: func(v string) (func(), error) {
			if !strings.EqualFold(v, "yes") {
				return nil, errReadOnlyReplica
			}
			return func() {}, nil
		}},

		// Upstream mode, fixed at start.
		{name: "upstream", get: constant(s.cfg.Upstream), file: quoted},
		{name: "upstream-cluster", get: constant(strings.Join(s.cfg.UpstreamCluster, ",")), file: plainValue},
		{name: "upstream-timeout", get: constant(s.cfg.UpstreamTimeout.String()), def: def.UpstreamTimeout.String(), file: plainValue},
		{name: "upstream-fallback-share", get: constant(strconv.FormatFloat(s.cfg.UpstreamFallbackShare, 'g', -1, 64)),
			def: strconv.FormatFloat(def.UpstreamFallbackShare, 'g', -1, 64), file: plainValue},
		{name: "global-sync-interval", get: s.globalInterval, def: def.GlobalSyncInterval.String(), file: plainValue, set: s.setGlobalInterval},

		// Shown for clients and tools that read them; not options of throttled's config file.
		{name: "databases", get: constant("1")},
		{name: "save", get: str(&s.savePoints), set: setSavePoints(&s.savePoints)},
		{name: "hz", get: constant("10")},
	}
}

// setSavePoints checks a CONFIG SET save value as Redis 7.0 does (pairs of seconds and
// changes, or "" for none) and keeps it in the form Redis shows. It has no effect: every
// write is in the log (persistence.md), there are no snapshots to schedule; it is kept for
// the tools and tests that set it and read it back.
func setSavePoints(p *atomic.Pointer[string]) func(string) (func(), error) {
	return func(v string) (func(), error) {
		f := strings.Split(v, " ") // as Redis splits a multi-argument value: "" is no point
		if v == "" {
			f = nil
		}
		if len(f)%2 != 0 {
			return nil, errors.New("Invalid save parameters")
		}
		out := make([]string, len(f))
		for i, n := range f {
			x := int64(0) // an empty word is strtoll's 0
			if n != "" {
				var err error
				if x, err = strconv.ParseInt(n, 10, 64); err != nil {
					return nil, errors.New("Invalid save parameters")
				}
			}
			if x < int64(1-i%2) || x > math.MaxInt32 { // seconds at least 1, changes at least 0
				return nil, errors.New("Invalid save parameters")
			}
			out[i] = strconv.FormatInt(x, 10)
		}
		v = strings.Join(out, " ")
		return func() { p.Store(&v) }, nil
	}
}

// paramNamed is a parameter under one of its names, for CONFIG GET's patterns.
type paramNamed struct {
	name string
	p    *param
}

// indexParams returns the parameters by every name, lower case, and every name sorted.
func indexParams(params []*param) (map[string]*param, []paramNamed) {
	byName := make(map[string]*param)
	var names []paramNamed
	for _, p := range params {
		for _, n := range append([]string{p.name}, p.aliases...) {
			if byName[n] != nil {
				panic("server: config parameter named twice: " + n)
			}
			byName[n] = p
			names = append(names, paramNamed{n, p})
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i].name < names[j].name })
	return byName, names
}

// CONFIG GET parameter [parameter ...]
func cmdConfigGet(c *client, args [][]byte) error {
	var out []string
	seen := make(map[string]bool)
	for _, pattern := range args[2:] {
		pattern = []byte(strings.ToLower(string(pattern)))
		for _, n := range c.s.paramNames {
			if !seen[n.name] && glob.Match(pattern, []byte(n.name)) {
				seen[n.name] = true
				out = append(out, n.name, n.p.get())
			}
		}
	}
	c.W.Map(len(out) / 2)
	for _, v := range out {
		c.W.BulkString(v)
	}
	return nil
}

// CONFIG SET parameter value [parameter value ...]
func cmdConfigSet(c *client, args [][]byte) error {
	if len(args)%2 != 0 {
		return errors.New("wrong number of arguments for 'config|set' command")
	}
	// Check every pair before applying any, as Redis does.
	var apply []func()
	seen := make(map[*param]bool)
	for i := 2; i < len(args); i += 2 {
		name, value := strings.ToLower(string(args[i])), string(args[i+1])
		failed := func(reason string) error {
			return fmt.Errorf("CONFIG SET failed (possibly related to argument '%s') - %s", command.Truncate(args[i], 128), reason)
		}
		p := c.s.paramsByName[name]
		switch {
		case p == nil:
			return fmt.Errorf("Unknown option or number of arguments for CONFIG SET - '%s'", command.Truncate(args[i], 128))
		case seen[p]:
			return failed("duplicate parameter")
		case p.set == nil && value == p.get():
			// What it is already: nothing to change, as CONFIG SET port to the port
			// Redis listens on changes nothing (Redis's own sanity test sets every
			// parameter so).
			seen[p] = true
			continue
		case p.set == nil:
			return failed("can't set immutable config")
		}
		seen[p] = true
		set, err := p.set(value)
		if err != nil {
			return failed(err.Error())
		}
		apply = append(apply, set)
	}
	for _, set := range apply {
		set()
	}
	c.W.OK()
	return nil
}
