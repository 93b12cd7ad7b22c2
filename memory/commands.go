package memory

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/throttledhq/throttled/command"
)

// Config is what the MEMORY commands read of the server.
type Config struct {
	// Figures measures the server's memory (STATS, DOCTOR).
	Figures func() Figures
}

// Commands are the MEMORY container and its subcommands, each one literal.
func Commands(cfg Config) []*command.Spec {
	return []*command.Spec{
		{Name: "memory", Arity: -2, Group: "server", Since: "4.0.0", Summary: "A container for memory diagnostics commands.",
			Subcommands: []*command.Spec{
				{Name: "usage", Arity: -3, Flags: "readonly", ACL: "keyspace", FirstKey: 2, LastKey: 2, Group: "server", Since: "4.0.0", Summary: "Estimates the memory usage of a key.", Syntax: "key [SAMPLES count]", Handler: usage},
				{Name: "stats", Arity: 2, Group: "server", Since: "4.0.0", Summary: "Returns details about memory usage.", Handler: cfg.stats},
				{Name: "doctor", Arity: 2, Group: "server", Since: "4.0.0", Summary: "Outputs a memory problems report.", Handler: cfg.doctor},
				{Name: "malloc-stats", Arity: 2, Group: "server", Since: "4.0.0", Summary: "Returns the allocator statistics.", Handler: mallocStats},
				{Name: "purge", Arity: 2, Group: "server", Since: "4.0.0", Summary: "Asks the allocator to release memory.", Handler: purge},
				{Name: "help", Arity: 2, Flags: "loading stale", Group: "server", Since: "4.0.0", Summary: "Returns helpful text about the different subcommands.", Handler: help},
			}},
	}
}

// MEMORY USAGE key [SAMPLES count]: the key's bytes, or null when it does not exist.
// SAMPLES is checked as Redis checks it; the figure is exact whatever it says, as nothing
// here needs sampling.
func usage(c *command.Ctx, args [][]byte) error {
	for j := 3; j < len(args); j++ {
		if !command.EqualFold(args[j], "samples") || j+1 >= len(args) {
			return command.ErrSyntax
		}
		n, ok := command.ParseInt(args[j+1])
		if !ok {
			return command.ErrNotInteger
		}
		if n < 0 {
			return command.ErrSyntax
		}
		j++
	}
	key := args[2]
	sh := c.LockShard(key) // the shard a native script's run holds, if it is key's
	n, ok := sh.UsageLocked(key, c.Now())
	c.UnlockShard(sh)
	if !ok {
		c.W.Null()
		return nil
	}
	c.W.Int(n)
	return nil
}

// MEMORY STATS: Redis 7.0's map, its fields in its order.
func (cfg Config) stats(c *command.Ctx, args [][]byte) error {
	f := cfg.Figures()
	net := max(f.Total-f.Startup, 1)
	dbs := 0
	if f.Keys > 0 {
		dbs = 1
	}
	c.W.Map(27 + dbs)
	field := func(name string, v int64) { c.W.BulkString(name); c.W.Int(v) }
	double := func(name string, v float64) { c.W.BulkString(name); c.W.Double(v) }
	field("peak.allocated", f.Peak)
	field("total.allocated", f.Total)
	field("startup.allocated", f.Startup)
	field("replication.backlog", f.Backlog)
	field("clients.slaves", f.Replicas)
	field("clients.normal", f.Normal)
	field("cluster.links", 0)
	field("aof.buffer", 0)
	field("lua.caches", f.Lua)
	field("functions.caches", f.Functions)
	if dbs > 0 {
		c.W.BulkString("db.0")
		c.W.Map(3)
		field("overhead.hashtable.main", f.MainHT)
		field("overhead.hashtable.expires", f.ExpiresHT)
		field("overhead.hashtable.slot-to-keys", 0)
	}
	field("overhead.total", f.Overhead())
	field("keys.count", f.Keys)
	perKey := int64(0)
	if f.Keys > 0 {
		perKey = net / f.Keys
	}
	field("keys.bytes-per-key", perKey)
	field("dataset.bytes", f.Dataset)
	double("dataset.percentage", 100*ratio(f.Dataset, net))
	double("peak.percentage", 100*ratio(f.Total, f.Peak))
	field("allocator.allocated", f.Allocated)
	field("allocator.active", f.Active)
	field("allocator.resident", f.Resident)
	double("allocator-fragmentation.ratio", ratio(f.Active, f.Allocated))
	field("allocator-fragmentation.bytes", f.Active-f.Allocated)
	double("allocator-rss.ratio", ratio(f.Resident, f.Active))
	field("allocator-rss.bytes", f.Resident-f.Active)
	double("rss-overhead.ratio", ratio(f.RSS, f.Resident))
	field("rss-overhead.bytes", f.RSS-f.Resident)
	double("fragmentation", ratio(f.RSS, f.Total))
	field("fragmentation.bytes", f.RSS-f.Total)
	return nil
}

// MEMORY DOCTOR: Redis's report, from the same figures and with its thresholds.
func (cfg Config) doctor(c *command.Ctx, args [][]byte) error {
	c.W.Verbatim(doctorReport(cfg.Figures()))
	return nil
}

// doctorReport is Redis 7.0's getMemoryDoctorReport on f.
func doctorReport(f Figures) string {
	if f.Total < 5<<20 {
		return "Hi Sam, this instance is empty or is using very little memory, " +
			"my issues detector can't be used in these conditions. " +
			"Please, leave for your mission on Earth and fill it with some data. " +
			"The new Sam and I will be back to our programming as soon as I " +
			"finished rebooting.\n"
	}
	var reports []string
	if ratio(f.Peak, f.Total) > 1.5 {
		reports = append(reports, " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n")
	}
	if ratio(f.RSS, f.Total) > 1.4 && f.RSS-f.Total > 10<<20 {
		reports = append(reports, fmt.Sprintf(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"%s\".\n\n", "go-"+runtime.Version()))
	}
	if ratio(f.Active, f.Allocated) > 1.1 && f.Active-f.Allocated > 10<<20 {
		reports = append(reports, " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n")
	}
	if ratio(f.Resident, f.Active) > 1.1 && f.Resident-f.Active > 10<<20 {
		reports = append(reports, " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n")
	}
	if ratio(f.RSS, f.Resident) > 1.1 && f.RSS-f.Resident > 10<<20 {
		reports = append(reports, " * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n")
	}
	if f.ReplicaCount > 0 && f.Replicas > 10<<20 {
		reports = append(reports, " * Big replica buffers: The replica output buffers in this instance are greater than 10MB for each replica (on average). This likely means that there is some replica instance that is struggling receiving data, either because it is too slow or because of networking issues. As a result, data piles on the master output buffers. Please try to identify what replica is not receiving data correctly and why. You can use the INFO output in order to check the replicas delays and the CLIENT LIST command to check the output buffers of each replica.\n\n")
	}
	if f.NormalClientCnt > 0 && f.Normal/f.NormalClientCnt > 200<<10 {
		reports = append(reports, " * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n")
	}
	if f.Scripts > 1000 {
		reports = append(reports, " * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n")
	}
	if len(reports) == 0 {
		return "Hi Sam, I can't find any memory issue in your instance. " +
			"I can only account for what occurs on this base.\n"
	}
	return "Sam, I detected a few issues in this Redis instance memory implants:\n\n" +
		strings.Join(reports, "") + "I'm here to keep you safe, Sam. I want to help you.\n"
}

// MEMORY MALLOC-STATS: the Go runtime's allocator figures, as text where jemalloc's
// report would be.
func mallocStats(c *command.Ctx, args [][]byte) error {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	var b strings.Builder
	b.WriteString("___ Begin Go runtime statistics (" + runtime.Version() + ") ___\n")
	for _, kv := range [][2]any{
		{"Alloc", m.Alloc}, {"TotalAlloc", m.TotalAlloc}, {"Sys", m.Sys}, {"Mallocs", m.Mallocs}, {"Frees", m.Frees},
		{"HeapAlloc", m.HeapAlloc}, {"HeapSys", m.HeapSys}, {"HeapIdle", m.HeapIdle}, {"HeapInuse", m.HeapInuse},
		{"HeapReleased", m.HeapReleased}, {"HeapObjects", m.HeapObjects}, {"StackInuse", m.StackInuse},
		{"StackSys", m.StackSys}, {"MSpanInuse", m.MSpanInuse}, {"MSpanSys", m.MSpanSys}, {"MCacheInuse", m.MCacheInuse},
		{"MCacheSys", m.MCacheSys}, {"BuckHashSys", m.BuckHashSys}, {"GCSys", m.GCSys}, {"OtherSys", m.OtherSys},
		{"NextGC", m.NextGC}, {"NumGC", m.NumGC}, {"NumForcedGC", m.NumForcedGC}, {"GCCPUFraction", m.GCCPUFraction},
	} {
		fmt.Fprintf(&b, "%s: %v\n", kv[0], kv[1])
	}
	b.WriteString("--- End Go runtime statistics ---\n")
	c.W.Verbatim(b.String())
	return nil
}

// MEMORY PURGE: a GC, then the heap's free pages back to the OS; it cannot fail, as
// jemalloc's purge can.
func purge(c *command.Ctx, args [][]byte) error {
	debug.FreeOSMemory()
	c.W.OK()
	return nil
}

// MEMORY HELP
func help(c *command.Ctx, args [][]byte) error {
	c.WriteHelp("MEMORY", []string{
		"DOCTOR", "    Return memory problems reports.",
		"MALLOC-STATS", "    Return internal statistics report from the memory allocator.",
		"PURGE", "    Attempt to purge dirty pages for reclamation by the allocator.",
		"STATS", "    Return information about the memory usage of the server.",
		"USAGE <key> [SAMPLES <count>]", "    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).",
	})
	return nil
}
