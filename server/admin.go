package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/internal/version"
	"github.com/throttledhq/throttled/memory"
)

func serverCommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "command", arity: -1, flags: "loading stale", group: "server", since: "2.8.13", summary: "Returns detailed information about all commands.", handler: cmdCommand},
		{name: "info", acl: "dangerous", arity: -1, flags: "loading stale", group: "server", since: "1.0.0", summary: "Returns information and statistics about the server.", syntax: "[section ...]", handler: cmdInfo},
		{name: "config", acl: "dangerous", noScript: true, arity: -2, group: "server", since: "2.0.0", summary: "A container for server configuration commands."},
		{name: "time", arity: 1, flags: "loading stale fast", group: "server", since: "2.6.0", summary: "Returns the server time.", handler: cmdTime},
		{name: "dbsize", arity: 1, flags: "readonly fast", group: "server", since: "1.0.0", summary: "Returns the number of keys in the database.", handler: cmdDBSize},
		{name: "flushdb", acl: "dangerous", arity: -1, flags: "write", group: "server", since: "1.0.0", summary: "Removes all keys from the current database.", syntax: "[ASYNC|SYNC]", handler: cmdFlush},
		{name: "flushall", acl: "dangerous", arity: -1, flags: "write", group: "server", since: "1.0.0", summary: "Removes all keys from all databases.", syntax: "[ASYNC|SYNC]", handler: cmdFlush},
		{name: "save", noScript: true, arity: 1, flags: "admin noscript no-async-loading no-multi", group: "server", since: "1.0.0", summary: "Synchronously saves the state to disk.", handler: cmdSave},
		{name: "bgsave", noScript: true, arity: -1, flags: "admin", group: "server", since: "1.0.0", summary: "Asynchronously saves the state to disk.", syntax: "[SCHEDULE]", handler: cmdBGSave},
		{name: "lastsave", arity: 1, flags: "loading stale fast", group: "server", since: "1.0.0", summary: "Returns the Unix timestamp of the last successful save to disk.", handler: cmdLastSave},
		{name: "shutdown", acl: "dangerous", allowBusy: true, noScript: true, arity: -1, flags: "admin noscript loading stale no-multi", group: "server", since: "1.0.0", summary: "Stops the server.", syntax: "[NOSAVE|SAVE] [NOW] [FORCE] [ABORT]", handler: cmdShutdown},
	}
}

func configSubcommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "get", arity: -3, flags: "admin loading stale", group: "server", since: "2.0.0", summary: "Returns the effective values of configuration parameters.", syntax: "parameter [parameter ...]", handler: cmdConfigGet},
		{name: "set", arity: -4, flags: "admin loading stale", group: "server", since: "2.0.0", summary: "Sets configuration parameters in-flight.", syntax: "parameter value [parameter value ...]", handler: cmdConfigSet},
		{name: "rewrite", arity: 2, flags: "admin noscript loading stale", group: "server", since: "2.8.0", summary: "Persists the effective configuration to file.", handler: cmdConfigRewrite},
		{name: "resetstat", arity: 2, flags: "admin loading stale", group: "server", since: "2.0.0", summary: "Resets the server's statistics.", handler: cmdConfigResetStat},
		{name: "help", arity: 2, flags: "loading stale", group: "server", since: "5.0.0", summary: "Returns helpful text about the different subcommands.", handler: cmdConfigHelp},
	}
}

// INFO [section ...]
func cmdInfo(c *client, args [][]byte) error {
	want := make(map[string]bool)
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := want["all"] || want["everything"]
	deflt := len(want) == 0 || want["default"]
	var b strings.Builder
	for _, sec := range c.s.infoSections(c) {
		// commandstats is not a default section, as in Redis: INFO, INFO default leave it out.
		if !all && !want[sec.name] && (!deflt || sec.name == "commandstats" || sec.name == "latencystats") {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		title := strings.ToUpper(sec.name[:1]) + sec.name[1:]
		if sec.name == "cpu" {
			title = "CPU" // as Redis writes it
		}
		b.WriteString("# " + title + "\r\n")
		for _, f := range sec.fields() {
			b.WriteString(f[0] + ":" + f[1] + "\r\n")
		}
	}
	c.W.Verbatim(b.String())
	return nil
}

// infoSection is one "# Name" block of INFO.
type infoSection struct {
	name   string
	fields func() [][2]string
}

func (s *Server) infoSections(c *client) []infoSection {
	return []infoSection{
		{"server", s.infoServer},
		{"clients", s.infoClients},
		{"memory", s.infoMemory},
		{"persistence", s.infoPersistence},
		{"replication", s.infoReplication},
		{"stats", s.infoStats},
		{"cpu", infoCPU},
		{"commandstats", s.infoCommandStats},
		{"errorstats", s.infoErrorStats},
		{"latencystats", func() [][2]string { return s.infoLatencyStats(c) }},
		{"throttle", func() [][2]string { return append(s.infoThrottle(), s.infoDenyEvents()...) }},
		{"upstream", s.infoUpstream},
		{"global", s.infoGlobal},
		{"scripting", s.infoScripting},
		{"cluster", infoCluster},
		{"keyspace", s.infoKeyspace},
	}
}

func (s *Server) infoServer() [][2]string {
	up := time.Since(s.started)
	port := s.cfg.Port
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		port = a.Port
	}
	return append([][2]string{
		{"redis_version", redisVersion},
		{"throttled_version", version.String()},
		{"redis_mode", "standalone"},
		{"os", runtime.GOOS + " " + runtime.GOARCH},
		{"arch_bits", strconv.Itoa(strconv.IntSize)},
		{"go_version", runtime.Version()},
		{"process_id", strconv.Itoa(os.Getpid())},
		{"run_id", s.runID},
		{"tcp_port", strconv.Itoa(port)},
		{"server_time_usec", itoa(s.now().UnixMicro())},
		{"uptime_in_seconds", itoa(int64(up / time.Second))},
		{"uptime_in_days", itoa(int64(up / (24 * time.Hour)))},
		{"hz", "10"},
		{"shards", strconv.Itoa(s.cfg.Shards)},
	}, s.infoServerMore()...)
}

// infoMemory is INFO's memory section. used_memory counts the Go heap in use and, with
// persistence on, what Pebble holds outside it (memtables and block cache), so that it is
// what the server really holds; used_memory_rss is the resident set the kernel reports.
func (s *Server) infoMemory() [][2]string {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	memTables, blockCache, offHeap := s.storeBuffers()
	f := s.heapFigures(&m, offHeap)
	mem := [][2]string{
		{"used_memory", itoa(f.Total)},
		{"used_memory_human", memory.HumanBytes(uint64(f.Total))},
		{"used_memory_rss", itoa(f.RSS)},
		{"used_memory_rss_human", memory.HumanBytes(uint64(f.RSS))},
		{"used_memory_peak", itoa(f.Peak)},
		{"used_memory_heap", strconv.FormatUint(m.HeapInuse, 10)},
		{"used_memory_persistence", itoa(memTables + blockCache)},
		{"persistence_memtables", itoa(memTables)},
		{"persistence_block_cache", itoa(blockCache)},
		{"total_system_memory", "0"},
		{"used_memory_keyspace", itoa(f.Dataset)},
		{"maxmemory", itoa(s.mem.max.Load())},
		{"maxmemory_human", memory.HumanBytes(uint64(s.mem.max.Load()))},
		{"maxmemory_policy", s.policyName()},
		{"gc_cycles", strconv.FormatUint(uint64(m.NumGC), 10)},
		{"heap_objects", strconv.FormatUint(m.HeapObjects, 10)},
	}
	mem = append(mem, memory.InfoFields(&f, s.ks.TrackingMemory())...)
	return append(mem, s.fn.InfoMemory()...)
}

// infoThrottle counts decisions per rate-limit verb.
func (s *Server) infoThrottle() [][2]string {
	t := s.totals()
	out := [][2]string{
		{"throttle_allowed", itoa(t.allowed)},
		{"throttle_denied", itoa(t.denied)},
		{"throttle_refunded", itoa(t.refunded)},
		{"throttle_blocks_started", itoa(t.blocks)},
		{"throttle_blocked", itoa(t.blocked)},
	}
	for _, cmd := range s.sortedCommands() {
		if cmd.has(flagRatelimit) {
			ct := s.cmdTotals(cmd)
			out = append(out, [2]string{"verb_" + strings.ReplaceAll(cmd.name, ".", "_"),
				"allowed=" + itoa(ct.allowed) + ",denied=" + itoa(ct.denied)})
		}
	}
	return append(out, s.rl.InfoPolicies()...)
}

func (s *Server) infoKeyspace() [][2]string {
	n := s.ks.Len()
	if n == 0 {
		return nil
	}
	return [][2]string{{"db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", n, s.ks.Expires())}}
}

// CONFIG RESETSTAT
func cmdConfigResetStat(c *client, args [][]byte) error {
	s := c.s
	for _, v := range []interface{ Store(int64) }{&s.stats.connections, &s.stats.rejected, &s.stats.unexpected,
		&s.instants.expireCapped} {
		v.Store(0)
	}
	s.resetCounters()
	s.errStats.reset()
	s.ks.ResetLookups()
	s.resetNet()
	s.resetObserved()
	s.resetLatency(c)
	c.W.OK()
	return nil
}

// CONFIG HELP
func cmdConfigHelp(c *client, args [][]byte) error {
	c.WriteHelp("CONFIG", []string{
		"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>", "    Set the configuration <directive> to <value>.",
		"RESETSTAT", "    Reset statistics reported by the INFO command.",
		"REWRITE", "    Rewrite the configuration file.",
	})
	return nil
}

// TIME
func cmdTime(c *client, args [][]byte) error {
	now := c.clock()
	c.W.Array(2)
	c.W.BulkInt(now.Unix())
	c.W.BulkInt(int64(now.Nanosecond() / 1000))
	return nil
}

// DBSIZE
func cmdDBSize(c *client, args [][]byte) error {
	n := c.s.ks.Len()
	if c.s.rl.HasPolicyRecord() {
		n-- // policies are no keys
	}
	if c.s.fn.HasRecord() {
		n-- // nor are functions
	}
	c.W.Int(int64(n))
	return nil
}

// FLUSHALL [ASYNC|SYNC], FLUSHDB [ASYNC|SYNC]
func cmdFlush(c *client, args [][]byte) error {
	if len(args) > 2 {
		return command.ErrSyntax
	}
	if len(args) == 2 {
		if m := strings.ToLower(string(args[1])); m != "async" && m != "sync" {
			return command.ErrSyntax
		}
	}
	if err := c.s.fn.Keep(func() error { return c.s.rl.KeepPolicies(c.s.flushAll) }); err != nil {
		// The keyspace is empty; the store follows once the disk works.
		c.s.log.Error("FLUSHALL not synced", "err", err)
	}
	c.W.OK()
	return nil
}

// SAVE: write and sync every change now.
func cmdSave(c *client, args [][]byte) error {
	if c.s.store == nil {
		return errNoPersistence
	}
	if err := c.s.store.Save(); err != nil {
		return err
	}
	c.W.OK()
	return nil
}

// BGSAVE [SCHEDULE]
func cmdBGSave(c *client, args [][]byte) error {
	if len(args) > 2 || len(args) == 2 && !strings.EqualFold(string(args[1]), "schedule") {
		return command.ErrSyntax
	}
	if c.s.store == nil {
		return errNoPersistence
	}
	c.s.store.BGSave()
	c.W.Simple("Background saving started")
	return nil
}

// LASTSAVE
func cmdLastSave(c *client, args [][]byte) error {
	c.W.Int(c.s.lastSaveTime())
	return nil
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]
func cmdShutdown(c *client, args [][]byte) error {
	for _, a := range args[1:] {
		switch strings.ToLower(string(a)) {
		case "nosave", "save", "now", "force":
		case "abort":
			return errors.New("No shutdown in progress.")
		default:
			return command.ErrSyntax
		}
	}
	c.s.log.Info("SHUTDOWN requested", "client", c.raddr)
	c.closing = true
	go c.s.Close()
	return nil
}

func (s *Server) logLevelName() string { return *s.levelName.Load() }
