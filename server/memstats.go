package server

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/throttledhq/throttled/command"
)

// MEMORY, as Redis 7.0's: USAGE is a key's bytes in the keyspace (keyspace.Shard.UsageLocked,
// the same accounting as INFO's used_memory_dataset and maxmemory's), STATS and DOCTOR the
// figures INFO memory gives, in Redis's shapes; MALLOC-STATS is the Go runtime's report,
// where jemalloc's would be, and PURGE hands the heap's free pages back to the OS.

// memFigures are the server's memory figures as Redis's getMemoryOverheadData computes
// them, from the Go runtime, Pebble's buffers and the keyspace's accounting.
type memFigures struct {
	total, peak, startup          int64 // used_memory, used_memory_peak, used_memory_startup
	backlog, replicas, normal     int64 // the replication backlog, the replicas' and the other clients' buffers
	lua, functions                int64 // the cached scripts' bodies, the function libraries' code
	mainHT, expiresHT             int64 // the keyspace's index (what finds a key) and its expiries
	keys                          int64
	dataset                       int64 // the keyspace's bytes (used_memory_dataset)
	allocated, active, resident   int64 // the heap's live objects, the spans holding them, what it holds from the OS
	rss                           int64
	scripts                       int   // the scripts cached
	replicaCount, normalClientCnt int64 // connected replicas, other clients
}

// memoryFigures measures the server's memory.
func (s *Server) memoryFigures() memFigures {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	var offHeap int64
	if s.store != nil {
		if in := s.store.Info(); in.OffHeap {
			offHeap = in.MemTableBytes + in.BlockCacheBytes
		}
	}
	f := memFigures{
		total:     int64(m.HeapInuse) + offHeap,
		peak:      int64(m.HeapSys) + offHeap,
		startup:   s.memStartup,
		allocated: int64(m.HeapAlloc),
		active:    int64(m.HeapInuse),
		resident:  int64(m.HeapSys - m.HeapReleased),
		dataset:   s.ks.UsedMemory(),
		mainHT:    s.ks.IndexMemory(),
		expiresHT: 8 * int64(s.ks.Expires()), // an expiry is 8 bytes of its key's entry
		keys:      int64(s.ks.Len()),
	}
	if rss, ok := residentBytes(); ok {
		f.rss = int64(rss)
	} else {
		f.rss = int64(m.Sys-m.HeapReleased) + offHeap
	}
	f.normal, f.replicas, _, _ = s.clientFigures()
	if in := s.repl.Info(); in.BacklogOn {
		f.backlog = in.BacklogLen
	}
	for _, c := range s.clientsByID() {
		if clientKind(c.kind.Load()) == kindReplica {
			f.replicaCount++
		} else {
			f.normalClientCnt++
		}
	}
	st := s.scripts.eng.Stats()
	f.lua, f.scripts = st.BodyBytes, st.Scripts
	f.functions = s.fn.FunctionCode()
	return f
}

// overhead is what is not the dataset, as INFO's used_memory_overhead.
func (f *memFigures) overhead() int64 { return max(f.total-f.dataset, 0) }

// ratio is a/b, 0 when b is not positive.
func ratio(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func memorySubcommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "usage", arity: -3, flags: "readonly", acl: "keyspace", firstKey: 2, lastKey: 2, group: "server", since: "4.0.0", summary: "Estimates the memory usage of a key.", syntax: "key [SAMPLES count]", handler: cmdMemoryUsage},
		{name: "stats", arity: 2, group: "server", since: "4.0.0", summary: "Returns details about memory usage.", handler: cmdMemoryStats},
		{name: "doctor", arity: 2, group: "server", since: "4.0.0", summary: "Outputs a memory problems report.", handler: cmdMemoryDoctor},
		{name: "malloc-stats", arity: 2, group: "server", since: "4.0.0", summary: "Returns the allocator statistics.", handler: cmdMemoryMallocStats},
		{name: "purge", arity: 2, group: "server", since: "4.0.0", summary: "Asks the allocator to release memory.", handler: cmdMemoryPurge},
		{name: "help", arity: 2, flags: "loading stale", group: "server", since: "4.0.0", summary: "Returns helpful text about the different subcommands.", handler: cmdMemoryHelp},
	}
}

// MEMORY USAGE key [SAMPLES count]: the key's bytes, or null when it does not exist.
// SAMPLES is checked as Redis checks it; the figure is exact whatever it says, as nothing
// here needs sampling.
func cmdMemoryUsage(c *client, args [][]byte) error {
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
func cmdMemoryStats(c *client, args [][]byte) error {
	f := c.s.memoryFigures()
	net := max(f.total-f.startup, 1)
	dbs := 0
	if f.keys > 0 {
		dbs = 1
	}
	c.W.Map(27 + dbs)
	field := func(name string, v int64) { c.W.BulkString(name); c.W.Int(v) }
	double := func(name string, v float64) { c.W.BulkString(name); c.W.Double(v) }
	field("peak.allocated", f.peak)
	field("total.allocated", f.total)
	field("startup.allocated", f.startup)
	field("replication.backlog", f.backlog)
	field("clients.slaves", f.replicas)
	field("clients.normal", f.normal)
	field("cluster.links", 0)
	field("aof.buffer", 0)
	field("lua.caches", f.lua)
	field("functions.caches", f.functions)
	if dbs > 0 {
		c.W.BulkString("db.0")
		c.W.Map(3)
		field("overhead.hashtable.main", f.mainHT)
		field("overhead.hashtable.expires", f.expiresHT)
		field("overhead.hashtable.slot-to-keys", 0)
	}
	field("overhead.total", f.overhead())
	field("keys.count", f.keys)
	perKey := int64(0)
	if f.keys > 0 {
		perKey = net / f.keys
	}
	field("keys.bytes-per-key", perKey)
	field("dataset.bytes", f.dataset)
	double("dataset.percentage", 100*ratio(f.dataset, net))
	double("peak.percentage", 100*ratio(f.total, f.peak))
	field("allocator.allocated", f.allocated)
	field("allocator.active", f.active)
	field("allocator.resident", f.resident)
	double("allocator-fragmentation.ratio", ratio(f.active, f.allocated))
	field("allocator-fragmentation.bytes", f.active-f.allocated)
	double("allocator-rss.ratio", ratio(f.resident, f.active))
	field("allocator-rss.bytes", f.resident-f.active)
	double("rss-overhead.ratio", ratio(f.rss, f.resident))
	field("rss-overhead.bytes", f.rss-f.resident)
	double("fragmentation", ratio(f.rss, f.total))
	field("fragmentation.bytes", f.rss-f.total)
	return nil
}

// MEMORY DOCTOR: Redis's report, from the same figures and with its thresholds.
func cmdMemoryDoctor(c *client, args [][]byte) error {
	c.W.Verbatim(memoryDoctor(c.s.memoryFigures()))
	return nil
}

// memoryDoctor is Redis 7.0's getMemoryDoctorReport on f.
func memoryDoctor(f memFigures) string {
	if f.total < 5<<20 {
		return "Hi Sam, this instance is empty or is using very little memory, " +
			"my issues detector can't be used in these conditions. " +
			"Please, leave for your mission on Earth and fill it with some data. " +
			"The new Sam and I will be back to our programming as soon as I " +
			"finished rebooting.\n"
	}
	var reports []string
	if ratio(f.peak, f.total) > 1.5 {
		reports = append(reports, " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n")
	}
	if ratio(f.rss, f.total) > 1.4 && f.rss-f.total > 10<<20 {
		reports = append(reports, fmt.Sprintf(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"%s\".\n\n", "go-"+runtime.Version()))
	}
	if ratio(f.active, f.allocated) > 1.1 && f.active-f.allocated > 10<<20 {
		reports = append(reports, " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n")
	}
	if ratio(f.resident, f.active) > 1.1 && f.resident-f.active > 10<<20 {
		reports = append(reports, " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n")
	}
	if ratio(f.rss, f.resident) > 1.1 && f.rss-f.resident > 10<<20 {
		reports = append(reports, " * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n")
	}
	if f.replicaCount > 0 && f.replicas > 10<<20 {
		reports = append(reports, " * Big replica buffers: The replica output buffers in this instance are greater than 10MB for each replica (on average). This likely means that there is some replica instance that is struggling receiving data, either because it is too slow or because of networking issues. As a result, data piles on the master output buffers. Please try to identify what replica is not receiving data correctly and why. You can use the INFO output in order to check the replicas delays and the CLIENT LIST command to check the output buffers of each replica.\n\n")
	}
	if f.normalClientCnt > 0 && f.normal/f.normalClientCnt > 200<<10 {
		reports = append(reports, " * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n")
	}
	if f.scripts > 1000 {
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
func cmdMemoryMallocStats(c *client, args [][]byte) error {
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
func cmdMemoryPurge(c *client, args [][]byte) error {
	debug.FreeOSMemory()
	c.W.OK()
	return nil
}

// MEMORY HELP
func cmdMemoryHelp(c *client, args [][]byte) error {
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
