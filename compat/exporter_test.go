package compat

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
)

// notForThrottled are the metrics prometheus-redis-exporter makes of redis-server's INFO
// that throttled has no figure for, each with why.
var notForThrottled = map[string]string{
	// Redis forks to save an RDB file or rewrite its AOF; throttled never forks: its state is
	// a Pebble log written in place, which compacts itself.
	"redis_aof_current_rewrite_duration_sec": "no AOF rewrite",
	"redis_aof_last_bgrewrite_status":        "no AOF rewrite",
	"redis_aof_last_rewrite_duration_sec":    "no AOF rewrite",
	"redis_aof_rewrite_scheduled":            "no AOF rewrite",
	"redis_aof_last_cow_size_bytes":          "no fork, no copy-on-write",
	"redis_rdb_last_cow_size_bytes":          "no fork, no copy-on-write",
	"redis_module_fork_last_cow_size":        "no fork, no copy-on-write",
	"redis_module_fork_in_progress":          "no fork, no modules",
	"redis_latest_fork_seconds":              "no fork",
	"redis_rdb_current_bgsave_duration_sec":  "no RDB child: BGSAVE syncs the log",
	"redis_rdb_last_bgsave_duration_sec":     "no RDB child: BGSAVE syncs the log",
	// Redis estimates it from the keys with a TTL its expiry cycle samples; throttled's
	// expiry walks each shard's index in order and samples none.
	"redis_expired_stale_percentage": "no sampling expiry cycle",
}

// startExporter runs prometheus-redis-exporter against addr and returns its /metrics URL.
func startExporter(t *testing.T, addr string) string {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command("prometheus-redis-exporter", "-redis.addr", "redis://"+addr,
		"-web.listen-address", fmt.Sprintf("127.0.0.1:%d", port), "-redis-only-metrics")
	out := &lockedWriter{w: new(bytes.Buffer)}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start(), "prometheus-redis-exporter (make deps installs it)")
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return url
		}
		require.True(t, time.Now().Before(deadline), "the exporter does not answer:\n%s", out)
		time.Sleep(50 * time.Millisecond)
	}
}

// scrape returns each sample of url's /metrics, by its name and labels, with its value.
func scrape(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	samples := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		samples[line[:i]] = line[i+1:]
	}
	require.NoError(t, sc.Err())
	return samples
}

// names returns the metric names of samples, without labels.
func names(samples map[string]string) map[string]bool {
	out := map[string]bool{}
	for s := range samples {
		name, _, _ := strings.Cut(s, "{")
		out[name] = true
	}
	return out
}

// exporterWorkload gives each server the same history: hits, misses, keys that expire, an
// error of each kind, a hash, a publish.
func exporterWorkload(t *testing.T, addr string) {
	t.Helper()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIndentity: true}) // no CLIENT SETINFO: Redis 7.0 has none
	defer rdb.Close()
	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
	require.NoError(t, rdb.Set(ctx, "n", "1", 0).Err())
	require.NoError(t, rdb.Set(ctx, "gone", "v", time.Millisecond).Err())
	require.NoError(t, rdb.Set(ctx, "later", "v", time.Hour).Err())
	require.NoError(t, rdb.HSet(ctx, "h", "f", "1").Err())
	require.Equal(t, "v", rdb.Get(ctx, "k").Val())
	require.Equal(t, redis.Nil, rdb.Get(ctx, "missing").Err())
	require.Equal(t, "1", rdb.HGet(ctx, "h", "f").Val())
	require.Equal(t, int64(1), rdb.Exists(ctx, "n", "missing").Val())
	require.Error(t, rdb.Incr(ctx, "k").Err())      // ERR
	require.Error(t, rdb.HGet(ctx, "k", "f").Err()) // WRONGTYPE
	require.NoError(t, rdb.Publish(ctx, "ch", "m").Err())
	time.Sleep(10 * time.Millisecond)
	require.Equal(t, redis.Nil, rdb.Get(ctx, "gone").Err()) // expired on access: a miss
}

// TestPrometheusRedisExporter runs Debian's prometheus-redis-exporter against redis-server
// and against throttled, after the same commands: every metric it exports for redis-server
// is there for throttled, but those listed in notForThrottled, and it scrapes throttled
// without an error. The figures both servers have for the same history agree.
func TestPrometheusRedisExporter(t *testing.T) {
	rs := redistest.Start(t)
	th := start(t)
	thAddr := fmt.Sprintf("127.0.0.1:%d", th.port)
	exporterWorkload(t, rs.Addr)
	exporterWorkload(t, thAddr)
	want := scrape(t, startExporter(t, rs.Addr))
	got := scrape(t, startExporter(t, thAddr))

	require.Equal(t, "1", want["redis_up"])
	require.Equal(t, "1", got["redis_up"])
	require.Equal(t, "0", got[`redis_exporter_last_scrape_error{err=""}`])

	have := names(got)
	var missing []string
	for name := range names(want) {
		if !have[name] && notForThrottled[name] == "" {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "exported for redis-server, not for throttled")
	for name := range notForThrottled {
		require.True(t, names(want)[name], "%s is no longer exported for redis-server: drop it from notForThrottled", name)
	}

	for _, sample := range []string{
		"redis_keyspace_hits_total", "redis_keyspace_misses_total", "redis_expired_keys_total",
		`redis_db_keys{db="db0"}`, `redis_db_keys_expiring{db="db0"}`,
		`redis_errors_total{err="WRONGTYPE"}`, "redis_evicted_keys_total", "redis_connected_slaves",
		"redis_cpu_sys_children_seconds_total", "redis_memory_max_bytes", "redis_config_maxclients",
	} {
		require.Equal(t, want[sample], got[sample], sample)
	}
	// ERR and total_error_replies are not compared: redistest's own client sends redis-server
	// CLIENT SETINFO, which Redis 7.0 does not know.
	for _, positive := range []string{`redis_errors_total{err="ERR"}`, "redis_total_error_replies", "redis_net_input_bytes_total", "redis_net_output_bytes_total",
		"redis_total_reads_processed", "redis_total_writes_processed", "redis_cpu_user_seconds_total",
		"redis_memory_used_bytes", "redis_memory_used_rss_bytes", "redis_mem_fragmentation_ratio",
		"redis_allocator_allocated_bytes", "redis_connections_received_total", `redis_commands_total{cmd="get"}`} {
		require.NotContains(t, []string{"", "0"}, got[positive], positive)
	}
}
