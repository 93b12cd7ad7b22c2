// Package memory is the MEMORY command family, as Redis 7.0's: USAGE is a key's bytes in
// the keyspace (keyspace.Shard.UsageLocked, the same accounting as INFO's
// used_memory_dataset and maxmemory's), STATS and DOCTOR the figures INFO memory gives, in
// Redis's shapes; MALLOC-STATS is the Go runtime's report, where jemalloc's would be, and
// PURGE hands the heap's free pages back to the OS.
//
// A request's path: the server finds the command's literal among Commands and calls its
// handler with the connection's command.Ctx. USAGE locks its key's shard and asks it; STATS
// and DOCTOR ask the server for its Figures (Config.Figures, which reads what only the
// server knows: its clients, the replication backlog, the scripts) and lay them out. INFO
// memory shares the figures and their ratios (InfoFields), so that both say the same.
// The family never imports the server.
package memory

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Figures are the server's memory figures as Redis's getMemoryOverheadData computes them,
// from the Go runtime, Pebble's buffers and the keyspace's accounting. The allocator's are
// the Go heap's: Allocated its live objects, Active the spans holding them, Resident what
// it holds from the OS.
type Figures struct {
	Total, Peak, Startup          int64 // used_memory, used_memory_peak, used_memory_startup
	Backlog, Replicas, Normal     int64 // the replication backlog, the replicas' and the other clients' buffers
	Lua, Functions                int64 // the cached scripts' bodies, the function libraries' code
	MainHT, ExpiresHT             int64 // the keyspace's index (what finds a key) and its expiries
	Keys                          int64
	Dataset                       int64 // the keyspace's bytes (used_memory_dataset)
	Allocated, Active, Resident   int64 // the heap's live objects, the spans holding them, what it holds from the OS
	RSS                           int64
	Scripts                       int   // the scripts cached
	ReplicaCount, NormalClientCnt int64 // connected replicas, other clients
}

// Measure returns the figures the Go runtime gives, from m: the heap's, with offHeap
// (what the store holds outside the heap) in Total and Peak, and the process's resident
// set (Resident's, else the runtime's estimate). The server fills in the rest.
func Measure(m *runtime.MemStats, offHeap int64) Figures {
	f := Figures{
		Total:     int64(m.HeapInuse) + offHeap,
		Peak:      int64(m.HeapSys) + offHeap,
		Allocated: int64(m.HeapAlloc),
		Active:    int64(m.HeapInuse),
		Resident:  int64(m.HeapSys - m.HeapReleased),
	}
	if rss, ok := Resident(); ok {
		f.RSS = int64(rss)
	} else {
		f.RSS = int64(m.Sys-m.HeapReleased) + offHeap
	}
	return f
}

// Overhead is what is not the dataset, as INFO's used_memory_overhead.
func (f *Figures) Overhead() int64 { return max(f.Total-f.Dataset, 0) }

// ratio is a/b, 0 when b is not positive.
func ratio(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// InfoFields are INFO memory's fields after its first ones, from f. notCounted is what
// maxmemory leaves out: the change trackers, as Redis its AOF and replica buffers.
func InfoFields(f *Figures, notCounted int64) [][2]string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	fixed := func(a, b int64) string { return strconv.FormatFloat(ratio(a, b), 'f', 2, 64) }
	perc := func(a, b int64) string {
		if b <= 0 {
			return "0.00%"
		}
		return strconv.FormatFloat(100*float64(a)/float64(b), 'f', 2, 64) + "%"
	}
	return [][2]string{
		{"used_memory_peak_human", HumanBytes(uint64(f.Peak))},
		{"used_memory_peak_perc", perc(f.Total, f.Peak)},
		{"used_memory_overhead", itoa(f.Overhead())},
		{"used_memory_startup", itoa(f.Startup)},
		{"used_memory_dataset", itoa(f.Dataset)},
		{"used_memory_dataset_perc", perc(f.Dataset, f.Total-f.Startup)},
		{"allocator_allocated", itoa(f.Allocated)},
		{"allocator_active", itoa(f.Active)},
		{"allocator_resident", itoa(f.Resident)},
		{"allocator_frag_ratio", fixed(f.Active, f.Allocated)},
		{"allocator_frag_bytes", itoa(f.Active - f.Allocated)},
		{"allocator_rss_ratio", fixed(f.Resident, f.Active)},
		{"allocator_rss_bytes", itoa(f.Resident - f.Active)},
		{"rss_overhead_ratio", fixed(f.RSS, f.Resident)},
		{"rss_overhead_bytes", itoa(f.RSS - f.Resident)},
		{"mem_fragmentation_ratio", fixed(f.RSS, f.Total)},
		{"mem_fragmentation_bytes", itoa(f.RSS - f.Total)},
		{"mem_not_counted_for_evict", itoa(notCounted)},
		{"mem_replication_backlog", itoa(f.Backlog)},
		{"mem_total_replication_buffers", itoa(f.Backlog)},
		{"mem_clients_slaves", itoa(f.Replicas)},
		{"mem_clients_normal", itoa(f.Normal)},
		{"mem_cluster_links", "0"},
		{"mem_aof_buffer", "0"},
		{"mem_allocator", "go-" + runtime.Version()},
		{"active_defrag_running", "0"},
		{"lazyfree_pending_objects", "0"},
		{"lazyfreed_objects", "0"},
	}
}

// HumanBytes writes n bytes as INFO's *_human fields: "1.50M", "512B".
func HumanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return strconv.FormatUint(n, 10) + "B"
}

// Resident returns the process's resident set from /proc/self/statm, as Redis's
// used_memory_rss; false where there is none.
func Resident() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * uint64(os.Getpagesize()), true
}
