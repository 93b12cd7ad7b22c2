package server

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestInfoNetworkAndLookups(t *testing.T) {
	for _, sb := range servedBy {
		t.Run(sb.name, func(t *testing.T) {
			ts := startServer(t, sb.configure)
			rdb := ts.client(t, 2)
			c := ts.raw(t)
			// A read's lookups count (GET, EXISTS, HGET's), a write's do not (SET, HSET).
			req := "SET k v\r\nGET k\r\nGET nosuch\r\nEXISTS k nosuch\r\nHSET h f v\r\nHGET h f\r\nHGET nosuch f\r\n"
			c.send(t, req)
			for _, want := range []string{"+OK", "$1", "v", "$-1", ":1", ":1", "$1", "v", "$-1"} {
				require.Equal(t, want, c.line(t))
			}
			stats := infoFields(t, rdb, "stats")
			require.Equal(t, "3", stats["keyspace_hits"])
			require.Equal(t, "3", stats["keyspace_misses"])
			require.Eventually(t, func() bool {
				in, _ := strconv.Atoi(infoFields(t, rdb, "stats")["total_net_input_bytes"])
				return in >= len(req)
			}, 5*time.Second, 10*time.Millisecond)
			out, _ := strconv.Atoi(infoFields(t, rdb, "stats")["total_net_output_bytes"])
			require.Greater(t, out, len("+OK\r\n$1\r\nv\r\n"))
			reads, _ := strconv.Atoi(infoFields(t, rdb, "stats")["total_reads_processed"])
			require.Positive(t, reads)
			require.Equal(t, "OK", do(t, rdb, "CONFIG", "RESETSTAT"))
			stats = infoFields(t, rdb, "stats")
			require.Equal(t, "0", stats["keyspace_hits"])
			in, _ := strconv.Atoi(stats["total_net_input_bytes"])
			require.Less(t, in, len(req), "CONFIG RESETSTAT starts the bytes from zero")
		})
	}
}

func TestInfoErrorStatsAndClusterSections(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	rdb.Set(ctx, "s", "x", 0)
	require.Error(t, rdb.Incr(ctx, "s").Err())
	require.Error(t, rdb.HGet(ctx, "s", "f").Err())
	require.Error(t, rdb.Do(ctx, "NOSUCH").Err())
	errs := infoFields(t, rdb, "errorstats")
	require.Equal(t, "count=2", errs["errorstat_ERR"])
	require.Equal(t, "count=1", errs["errorstat_WRONGTYPE"])
	require.Equal(t, "0", infoFields(t, rdb, "cluster")["cluster_enabled"])
	require.Contains(t, rdb.Info(ctx).Val(), "# Errorstats\r\n", "a default section, as in Redis")
}

// TestInfoExporterFields: every field prometheus-redis-exporter maps in the sections it reads
// is there (compat/exporter_test.go runs the exporter itself).
func TestInfoExporterFields(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	all := infoFields(t, rdb, "everything")
	for _, f := range []string{"uptime_in_seconds", "process_id", "redis_build_id", "io_threads_active",
		"connected_clients", "blocked_clients", "maxclients", "client_recent_max_input_buffer",
		"client_recent_max_output_buffer", "tracking_clients", "clients_in_timeout_table",
		"used_memory", "used_memory_rss", "used_memory_peak", "used_memory_overhead", "used_memory_startup",
		"used_memory_dataset", "allocator_allocated", "allocator_active", "allocator_resident",
		"allocator_frag_ratio", "allocator_rss_ratio", "mem_fragmentation_ratio", "mem_fragmentation_bytes",
		"mem_clients_normal", "mem_clients_slaves", "mem_not_counted_for_evict", "lazyfree_pending_objects",
		"total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec",
		"total_net_input_bytes", "total_net_output_bytes", "instantaneous_input_kbps",
		"instantaneous_output_kbps", "rejected_connections", "expired_keys", "expired_time_cap_reached_count",
		"evicted_keys", "keyspace_hits", "keyspace_misses", "total_reads_processed", "total_writes_processed",
		"unexpected_error_replies", "total_error_replies", "used_cpu_sys", "used_cpu_user_main_thread"} {
		require.Contains(t, all, f)
	}
	ratio, err := strconv.ParseFloat(all["mem_fragmentation_ratio"], 64)
	require.NoError(t, err)
	require.Positive(t, ratio)
}
