package server

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The fields of INFO that monitoring tools read (prometheus-redis-exporter maps each to a
// metric), with the figure throttled has for each. A field names a thing throttled has no
// such thing as (a cluster bus, I/O threads, client-side caching, defragmentation, MIGRATE)
// only where its count is then truly 0, as Redis's is with the feature unused. Redis's
// fork figures (copy-on-write sizes, fork times, RDB and AOF rewrite durations) are left
// out: throttled never forks, its state is a Pebble log saved in place.

// buildID is INFO's redis_build_id: the VCS revision the binary was built from, as far
// as the build recorded it.
func buildID() (sha string, dirty string) {
	sha, dirty = "00000000", "0"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				sha = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "1"
				}
			}
		}
	}
	return sha, dirty
}

// multiplexingAPI names what waits for the connections: epoll on Linux, Go's netpoller
// elsewhere.
func multiplexingAPI() string {
	if runtime.GOOS == "linux" {
		return "epoll"
	}
	return "netpoll"
}

// startupMemory is the heap in use once the server is built: INFO's used_memory_startup.
func startupMemory() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// infoServerMore are the fields of INFO server besides those of infoServer's first lines.
func (s *Server) infoServerMore() [][2]string {
	sha, dirty := buildID()
	exe, _ := os.Executable()
	return [][2]string{
		{"redis_git_sha1", sha},
		{"redis_git_dirty", dirty},
		{"redis_build_id", sha},
		{"multiplexing_api", multiplexingAPI()},
		{"atomicvar_api", "sync-atomic"},
		{"process_supervised", "no"},
		{"configured_hz", "10"},
		{"executable", exe},
		{"config_file", s.cfg.ConfigFile},
		{"io_threads_active", "0"}, // event loops that run commands are no I/O threads
	}
}

// clientFigures sums what CLIENT LIST shows of the clients: their buffers' memory by kind,
// and the largest input and output buffers.
func (s *Server) clientFigures() (normal, replicas, maxIn, maxOut int64) {
	for _, c := range s.clientsByID() {
		m := c.memory(nil, nil)
		if clientKind(c.kind.Load()) == kindReplica {
			replicas += m.total()
		} else {
			normal += m.total()
		}
		maxIn = max(maxIn, m.qbuf+m.qbufFree)
		maxOut = max(maxOut, m.rbs+m.omem)
	}
	return
}

func (s *Server) infoClients() [][2]string {
	_, _, maxIn, maxOut := s.clientFigures()
	return [][2]string{
		{"connected_clients", itoa(s.connected.Load())},
		{"cluster_connections", "0"},
		{"maxclients", itoa(s.maxClients.Load())},
		{"client_recent_max_input_buffer", itoa(maxIn)},
		{"client_recent_max_output_buffer", itoa(maxOut)},
		{"blocked_clients", itoa(s.blocked.n.Load())},
		{"tracking_clients", "0"},
		{"clients_in_timeout_table", "0"},
	}
}

// infoStats is INFO stats.
func (s *Server) infoStats() [][2]string {
	in := s.repl.Info()
	net := s.netTotals()
	hits, misses := s.ks.Lookups()
	t := s.totals()
	kbps := func(v *atomic.Uint64) string {
		return strconv.FormatFloat(math.Float64frombits(v.Load()), 'f', 2, 64)
	}
	return [][2]string{
		{"total_connections_received", itoa(s.stats.connections.Load())},
		{"total_commands_processed", itoa(t.commands)},
		{"instantaneous_ops_per_sec", itoa(s.instants.opsPerSec.Load())},
		{"total_net_input_bytes", itoa(net.in)},
		{"total_net_output_bytes", itoa(net.out)},
		{"instantaneous_input_kbps", kbps(&s.instants.inKbps)},
		{"instantaneous_output_kbps", kbps(&s.instants.outKb)},
		{"rejected_connections", itoa(s.stats.rejected.Load())},
		{"sync_full", itoa(in.SyncFull)},
		{"sync_partial_ok", itoa(in.PartialOK)},
		{"sync_partial_err", itoa(in.PartialErr)},
		{"expired_keys", itoa(s.ks.ExpiredTotal())},
		{"expired_time_cap_reached_count", itoa(s.instants.expireCapped.Load())},
		{"evicted_keys", itoa(s.ks.EvictedTotal())},
		{"unstored_decisions", itoa(t.unstored)},
		{"evicted_clients", "0"},
		{"keyspace_hits", itoa(hits)},
		{"keyspace_misses", itoa(misses)},
		{"pubsub_channels", strconv.Itoa(s.pubsub.NumChannels())},
		{"pubsub_patterns", strconv.Itoa(s.pubsub.NumPat())},
		{"pubsubshard_channels", "0"},
		{"migrate_cached_sockets", "0"},
		{"slave_expires_tracked_keys", "0"},
		{"active_defrag_hits", "0"},
		{"active_defrag_misses", "0"},
		{"active_defrag_key_hits", "0"},
		{"active_defrag_key_misses", "0"},
		{"tracking_total_keys", "0"},
		{"tracking_total_items", "0"},
		{"tracking_total_prefixes", "0"},
		{"unexpected_error_replies", itoa(s.stats.unexpected.Load())},
		{"total_error_replies", itoa(t.errors)},
		{"dump_payload_sanitizations", "0"},
		{"total_reads_processed", itoa(net.reads)},
		{"total_writes_processed", itoa(net.writes)},
		{"io_threaded_reads_processed", "0"},
		{"io_threaded_writes_processed", "0"},
	}
}

// errorStats counts the error replies by their code, the first word (INFO errorstats);
// as Redis, at most maxErrorCodes codes, the rest counted in total_error_replies only.
type errorStats struct {
	codes sync.Map // code -> *atomic.Int64
	n     atomic.Int32
}

const maxErrorCodes = 128

// count counts an error reply's text.
func (e *errorStats) count(text string) {
	code, _, _ := strings.Cut(text, " ")
	if v, ok := e.codes.Load(code); ok {
		v.(*atomic.Int64).Add(1)
		return
	}
	if e.n.Load() >= maxErrorCodes {
		return
	}
	v, loaded := e.codes.LoadOrStore(code, new(atomic.Int64))
	if !loaded {
		e.n.Add(1)
	}
	v.(*atomic.Int64).Add(1)
}

func (e *errorStats) reset() {
	e.codes.Range(func(k, _ any) bool {
		e.codes.Delete(k)
		return true
	})
	e.n.Store(0)
}

// infoErrorStats is INFO errorstats: errorstat_CODE:count=n, by code.
func (s *Server) infoErrorStats() [][2]string {
	var out [][2]string
	s.errStats.codes.Range(func(k, v any) bool {
		out = append(out, [2]string{"errorstat_" + k.(string), fmt.Sprintf("count=%d", v.(*atomic.Int64).Load())})
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// infoCluster is INFO cluster: no cluster here.
func infoCluster() [][2]string { return [][2]string{{"cluster_enabled", "0"}} }
