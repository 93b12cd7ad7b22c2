package server

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// latencyPercentile reads one percentile, in µs, of cmd's line in INFO latencystats.
func latencyPercentile(t *testing.T, info, cmd, p string) float64 {
	t.Helper()
	for _, line := range strings.Split(strings.ReplaceAll(info, "\r", ""), "\n") {
		rest, ok := strings.CutPrefix(line, "latency_percentiles_usec_"+cmd+":")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if k, v, _ := strings.Cut(kv, "="); k == p {
				f, err := strconv.ParseFloat(v, 64)
				require.NoError(t, err)
				return f
			}
		}
	}
	t.Fatalf("no %s of %s in %q", p, cmd, info)
	return 0
}

// TestLatencyTracking: INFO latencystats and LATENCY HISTOGRAM as Redis 7 writes them, the
// percentiles configured, latency-tracking no, and CONFIG RESETSTAT.
func TestLatencyTracking(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		rdb := ts.client(t, proto)
		do(t, rdb, "CONFIG", "RESETSTAT")
		for range 100 {
			do(t, rdb, "SET", "k", "v")
			do(t, rdb, "GET", "k")
		}
		do(t, rdb, "CONFIG", "GET", "port")
		info := do(t, rdb, "INFO", "latencystats").(string)
		require.Regexp(t, regexp.MustCompile(`(?m)^latency_percentiles_usec_get:p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}\r$`), info)
		require.Contains(t, info, "latency_percentiles_usec_config|get:")
		require.NotContains(t, do(t, rdb, "INFO").(string), "Latencystats", "not a default section, as in Redis")
		require.Contains(t, do(t, rdb, "INFO", "everything").(string), "# Latencystats")
		require.LessOrEqual(t, latencyPercentile(t, info, "get", "p50"), latencyPercentile(t, info, "get", "p99.9"))

		h, err := rdb.Do(ctx, "LATENCY", "HISTOGRAM", "set", "nosuch", "SET").Result()
		require.NoError(t, err)
		var calls, last int64
		var steps []any
		if proto == 2 {
			top := h.([]any)
			require.Len(t, top, 2)
			require.Equal(t, "set", top[0])
			inner := top[1].([]any)
			require.Equal(t, []any{"calls", int64(100), "histogram_usec"}, inner[:3])
			calls, steps = inner[1].(int64), inner[3].([]any)
			for i := 0; i < len(steps); i += 2 {
				require.Greater(t, steps[i+1].(int64), last, "cumulative, only where calls fell")
				last = steps[i+1].(int64)
			}
		} else {
			top := h.(map[any]any)
			inner := top["set"].(map[any]any)
			calls = inner["calls"].(int64)
			for _, v := range inner["histogram_usec"].(map[any]any) {
				last = max(last, v.(int64))
			}
		}
		require.Equal(t, int64(100), calls)
		require.Equal(t, int64(100), last, "the last step counts every call")
		empty := do(t, rdb, "LATENCY", "HISTOGRAM", "nosuch")
		if proto == 2 {
			require.Equal(t, []any{}, empty)
		} else {
			require.Equal(t, map[any]any{}, empty)
		}
	}
	rdb := ts.client(t, 2)
	do(t, rdb, "CONFIG", "SET", "latency-tracking-info-percentiles", "0.5 100")
	require.Regexp(t, `latency_percentiles_usec_get:p0\.5=\d+\.\d{3},p100=\d+\.\d{3}\r\n`, do(t, rdb, "INFO", "latencystats"))
	require.Equal(t, []any{"latency-tracking-info-percentiles", "0.5 100"}, do(t, rdb, "CONFIG", "GET", "latency-tracking-info-percentiles"))
	require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'latency-tracking-info-percentiles') - latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
		doErr(t, rdb, "CONFIG", "SET", "latency-tracking-info-percentiles", "50 101"))
	require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'latency-tracking') - argument must be 'yes' or 'no'",
		doErr(t, rdb, "CONFIG", "SET", "latency-tracking", "maybe"))

	do(t, rdb, "CONFIG", "SET", "latency-tracking", "no")
	do(t, rdb, "CONFIG", "RESETSTAT")
	do(t, rdb, "GET", "k")
	require.NotContains(t, do(t, rdb, "INFO", "latencystats"), "usec_get")
	do(t, rdb, "CONFIG", "SET", "latency-tracking", "yes")
	do(t, rdb, "GET", "k")
	require.Contains(t, do(t, rdb, "INFO", "latencystats"), "usec_get")
	require.Equal(t, []any{}, do(t, rdb, "LATENCY", "LATEST"))
	require.Equal(t, int64(0), do(t, rdb, "LATENCY", "RESET"))
}

// TestLatencyScriptsAcrossClients runs redis_rate's script natively from several
// connections at once, served by goroutines of their own (io-threads 0: no event loop's
// recorder), and checks that the latency histograms of the commands its runs made count
// every one of them, each script's client counting in its caller's slot; then that CONFIG
// RESETSTAT clears them.
func TestLatencyScriptsAcrossClients(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.IOThreads = 0; c.AppendOnly = false })
	admin := ts.client(t, 2)
	sha := do(t, admin, "SCRIPT", "LOAD", redisRateAllowN).(string)
	do(t, admin, "CONFIG", "RESETSTAT")
	natives := ts.scripts.eng.Stats().Natives

	const workers, rounds = 8, 50
	var wg sync.WaitGroup
	for w := range workers {
		rdb := ts.client(t, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				// A key of its own each call: every run is allowed, and runs TIME, GET and SET.
				r, err := rdb.Do(context.Background(), "EVALSHA", sha, 1, fmt.Sprintf("rr:%d:%d", w, i), 10, 10, 1, 1).Result()
				if err != nil || r.([]any)[0].(int64) != 1 {
					t.Errorf("EVALSHA: %v %v", r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, natives+workers*rounds, ts.scripts.eng.Stats().Natives, "every run native")

	calls := func(cmd string) int64 {
		h := do(t, admin, "LATENCY", "HISTOGRAM", cmd).([]any)
		if len(h) == 0 {
			return 0
		}
		return h[1].([]any)[1].(int64)
	}
	for _, cmd := range []string{"evalsha", "time", "get", "set"} {
		require.Equal(t, int64(workers*rounds), calls(cmd), cmd)
	}
	do(t, admin, "CONFIG", "RESETSTAT")
	for _, cmd := range []string{"evalsha", "time", "get", "set"} {
		require.Zero(t, calls(cmd), cmd)
	}
}
