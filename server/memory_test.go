package server

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// infoOf reads one field of INFO.
func infoOf(t *testing.T, rdb *redis.Client, section, name string) string {
	t.Helper()
	info := do(t, rdb, "info", section).(string)
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s", section, name)
	return ""
}

func TestMaxMemoryNoEviction(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.AppendOnly = false
		c.MaxMemory = 1 << 20
		c.MaxMemoryPolicy = "noeviction"
	})
	rdb := ts.client(t, 2)
	ctx := context.Background()
	// Before the flood: a subject with its limit used up, and one with room left.
	for range 3 {
		do(t, rdb, "THROTTLE", "spent", "1", "1", "1h")
	}
	do(t, rdb, "THROTTLE", "used", "9", "1", "1h")
	value := strings.Repeat("x", 1000)
	oom := ""
	for i := 0; i < 100_000 && oom == ""; i++ {
		if err := rdb.Set(ctx, "k"+strconv.Itoa(i), value, 0).Err(); err != nil {
			oom = err.Error()
		}
		if i%100 == 0 {
			time.Sleep(time.Millisecond) // the memory check runs every 10 ms
		}
	}
	require.Equal(t, "OOM command not allowed when used memory > 'maxmemory'.", oom)
	// A decision is answered, never OOM: a new subject's from an empty state, not kept; a
	// spent one stays denied; one with room left takes from it.
	for range 3 {
		require.Equal(t, []any{int64(0), int64(2), int64(1), int64(-1), int64(1000)}, do(t, rdb, "throttle", "new", "1", "1", "1"))
	}
	require.Equal(t, int64(0), do(t, rdb, "exists", "new"))
	require.Equal(t, int64(1), do(t, rdb, "throttle", "spent", "1", "1", "1h").([]any)[0])
	require.Equal(t, int64(8), do(t, rdb, "throttle", "used", "9", "1", "1h").([]any)[2])
	require.Equal(t, int64(7), do(t, rdb, "throttle", "used", "9", "1", "1h").([]any)[2], "the existing key's state was kept")
	require.Equal(t, []any{int64(0), int64(10), int64(6), int64(-1), int64(4 * 3600 * 1000)}, do(t, rdb, "allof", "throttle", "new2", "9", "1", "1m", "throttle", "used", "9", "1", "1h").([]any)[0].([]any)[:5])
	require.Equal(t, int64(0), do(t, rdb, "exists", "new2"))
	require.Equal(t, int64(5), do(t, rdb, "throttle", "used", "9", "1", "1h", "PEEK").([]any)[2], "ALLOF kept the key that exists (PEEK tells what one more would leave)")
	require.Equal(t, "4", infoOf(t, rdb, "stats", "unstored_decisions"))
	require.Equal(t, value, do(t, rdb, "get", "k1")) // reads go on
	require.Equal(t, int64(1), do(t, rdb, "del", "k1"))
	require.Equal(t, "1048576", infoOf(t, rdb, "memory", "maxmemory"))
	require.Equal(t, "noeviction", infoOf(t, rdb, "memory", "maxmemory_policy"))
	require.Equal(t, "0", infoOf(t, rdb, "stats", "evicted_keys"))

	// Raising the limit lets writes in again.
	do(t, rdb, "config", "set", "maxmemory", "64mb")
	require.Eventually(t, func() bool { return rdb.Set(ctx, "after", "1", 0).Err() == nil }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, []any{"maxmemory", "67108864"}, do(t, rdb, "config", "get", "maxmemory"))
}

// TestMaxMemoryFloodKeepsBusyLimits floods the server with random rate-limit keys under
// maxmemory: it keeps answering, holds about maxmemory, and evicts none of the busy keys,
// whose limits stay used up.
func TestMaxMemoryFloodKeepsBusyLimits(t *testing.T) {
	for _, policy := range []string{"volatile-ttl", "allkeys-lru"} {
		t.Run(policy, func(t *testing.T) {
			const limit = 4 << 20
			ts := startServer(t, func(c *Config) {
				c.AppendOnly = false
				c.MaxMemory = limit
				c.MaxMemoryPolicy = policy
			})
			rdb := ts.client(t, 2)
			ctx := context.Background()
			const busy = 50
			for i := 0; i < busy; i++ {
				for j := 0; j < 11; j++ { // a burst of 10: the 11th call is limited for an hour
					do(t, rdb, "throttle", "busy:"+strconv.Itoa(i), "10", "1", "1h")
				}
			}
			flood := 300_000
			if testing.Short() {
				flood = 100_000
			}
			peak := int64(0)
			for n := 0; n < flood; n += 1000 {
				pipe := rdb.Pipeline()
				for i := n; i < n+1000; i++ {
					pipe.Do(ctx, "throttle", "flood:"+strconv.Itoa(i), "10", "10", "1s")
				}
				for i := 0; i < busy; i++ {
					pipe.Do(ctx, "throttle", "busy:"+strconv.Itoa(i), "10", "1", "1h", "PEEK")
				}
				cmds, err := pipe.Exec(ctx)
				require.NoError(t, err)
				for _, c := range cmds[1000:] {
					require.Equal(t, int64(1), c.(*redis.Cmd).Val().([]any)[0], "a busy key's limit was reset")
				}
				used, _ := strconv.ParseInt(infoOf(t, rdb, "memory", "used_memory_keyspace"), 10, 64)
				peak = max(peak, used)
			}
			evicted, _ := strconv.Atoi(infoOf(t, rdb, "stats", "evicted_keys"))
			require.Positive(t, evicted)
			require.Less(t, peak, int64(limit*3/2), "the keyspace's peak")
			for i := 0; i < busy; i++ {
				v := do(t, rdb, "throttle", "busy:"+strconv.Itoa(i), "10", "1", "1h").([]any)
				require.Equal(t, int64(1), v[0], "busy:%d", i)
			}
		})
	}
}

// TestMaxMemoryFloodOverHTTP: a flood of random subjects over http-port, under throttled's
// default maxmemory-policy, evicts rather than fails: every answer is a decision, and the
// subject whose limit is spent is still denied after it.
func TestMaxMemoryFloodOverHTTP(t *testing.T) {
	const limit = 512 << 10
	ts := startServer(t, func(c *Config) { c.MaxMemory = limit })
	rdb := ts.client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "THROTTLE", "4", "5", "1m")
	url := serveHTTPAPI(t, ts) + "/v1/check"
	victim := `{"policy":"api","subject":"victim"}`
	for range 5 {
		require.Equal(t, http.StatusOK, httpDo(t, "POST", url, victim).status)
	}
	require.Equal(t, http.StatusTooManyRequests, httpDo(t, "POST", url, victim).status)

	client := &http.Client{Timeout: 10 * time.Second}
	flood := func(from, n int) error {
		for i := from; i < from+n; i++ {
			resp, err := client.Post(url, "application/json", strings.NewReader(`{"policy":"api","subject":"flood-`+strconv.Itoa(i)+`"}`))
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("flood subject %d: HTTP %d", i, resp.StatusCode)
			}
		}
		return nil
	}
	// Until eviction starts (the keyspace holds about 8,000 such keys at 512 KiB), then as
	// many again.
	sent := 0
	for ; sent < 100_000 && infoOf(t, rdb, "stats", "evicted_keys") == "0"; sent += 4000 {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for w := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[w] = flood(sent+w*1000, 1000) }()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
	}
	require.NoError(t, flood(sent, 8000))
	require.NotEqual(t, "0", infoOf(t, rdb, "stats", "evicted_keys"))
	used, _ := strconv.ParseInt(infoOf(t, rdb, "memory", "used_memory_keyspace"), 10, 64)
	t.Logf("%d subjects over HTTP, maxmemory %d: keyspace %d, %s evicted", sent+8000, limit, used, infoOf(t, rdb, "stats", "evicted_keys"))
	require.Less(t, used, int64(limit*3/2))
	a := httpDo(t, "POST", url, victim)
	require.Equal(t, http.StatusTooManyRequests, a.status, "the spent subject survived the flood: %v", a.body)
}

// edgeYAML is a ratelimit-config with a limit per Envoy remote_address.
const edgeYAML = `
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: hour, requests_per_unit: 2}
`

// addresses is a gRPC request's descriptors: n remote_address values from the nth on.
func addresses(from, n int) []*commonv3.RateLimitDescriptor {
	ds := make([]*commonv3.RateLimitDescriptor, n)
	for i := range ds {
		j := from + i
		ds[i] = desc("remote_address", fmt.Sprintf("10.%d.%d.%d", j>>16&255, j>>8&255, j&255))
	}
	return ds
}

// TestMaxMemoryFloodOverGRPC: distinct remote_address descriptors count against maxmemory
// as RESP's keys do: the keyspace stays near it, by eviction, and a spent address stays
// spent.
func TestMaxMemoryFloodOverGRPC(t *testing.T) {
	rs := startRLS(t, map[string]string{"edge.yaml": edgeYAML})
	rdb := rs.client(t, 2)
	const limit = 2 << 20
	do(t, rdb, "CONFIG", "SET", "maxmemory", strconv.Itoa(limit))
	victim := desc("remote_address", "192.0.2.1")
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "edge", 2, victim)))
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "edge", 1, victim)))

	peak := int64(0)
	for n := 0; n < 150_000; n += 50 {
		r := rs.ask(t, "edge", 1, addresses(n, 50)...)
		require.Equal(t, rlsv3.RateLimitResponse_OK, r.OverallCode, "request %d", n/50)
		if n%5000 == 0 {
			used, _ := strconv.ParseInt(infoOf(t, rdb, "memory", "used_memory_keyspace"), 10, 64)
			peak = max(peak, used)
		}
	}
	t.Logf("150,000 descriptors, maxmemory %d: keyspace peak %d, now %s (%s), %s evicted", limit, peak,
		infoOf(t, rdb, "memory", "used_memory_keyspace"), infoOf(t, rdb, "keyspace", "db0"), infoOf(t, rdb, "stats", "evicted_keys"))
	require.NotEqual(t, "0", infoOf(t, rdb, "stats", "evicted_keys"))
	require.Less(t, peak, int64(limit*3/2), "the keyspace's peak")
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "edge", 1, victim)), "the spent address survived the flood")
}

// TestMaxMemoryNoEvictionAtTheEdge: with noeviction and maxmemory reached, HTTP and gRPC
// decisions are answered from what they compute, creating no key: a spent subject is still
// denied, a new one allowed, and INFO and the metrics count what was not kept.
func TestMaxMemoryNoEvictionAtTheEdge(t *testing.T) {
	rs := startRLS(t, map[string]string{"edge.yaml": edgeYAML})
	rdb := rs.client(t, 2)
	ctx := context.Background()
	do(t, rdb, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	do(t, rdb, "POLICY.SET", "api", "THROTTLE", "1", "1", "1h")
	url := serveHTTPAPI(t, rs.testServer) + "/v1/check"
	for range 2 {
		require.Equal(t, http.StatusOK, httpDo(t, "POST", url, `{"policy":"api","subject":"victim"}`).status)
	}
	victim := desc("remote_address", "192.0.2.1")
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "edge", 2, victim)))

	do(t, rdb, "CONFIG", "SET", "maxmemory", "1mb")
	value := strings.Repeat("x", 1000)
	require.Eventually(t, func() bool {
		for i := 0; i < 100; i++ {
			if err := rdb.Set(ctx, "fill:"+strconv.Itoa(i)+":"+strconv.Itoa(rand.Int()), value, 0).Err(); err != nil {
				return strings.HasPrefix(err.Error(), "OOM ")
			}
		}
		return false
	}, 20*time.Second, time.Millisecond)
	keys := do(t, rdb, "DBSIZE")

	for i := range 3 {
		a := httpDo(t, "POST", url, `{"policy":"api","subject":"new-`+strconv.Itoa(i)+`"}`)
		require.Equal(t, http.StatusOK, a.status, "%v", a.body)
		a = httpDo(t, "POST", url, `{"policy":"api","subject":"victim"}`)
		require.Equal(t, http.StatusTooManyRequests, a.status, "%v", a.body)
		require.Equal(t, []string{ok, ok, ok}, codesOf(rs.ask(t, "edge", 1, addresses(i*2, 2)...)))
		require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "edge", 1, victim)))
	}
	require.Equal(t, keys, do(t, rdb, "DBSIZE"), "no key was created")
	require.Equal(t, "6", infoOf(t, rdb, "stats", "unstored_decisions"))
	_, metrics := get(t, serveMetrics(t, rs.testServer)+"/metrics")
	require.Contains(t, metrics, "throttled_unstored_decisions_total 6\n")
}

func TestMaxMemoryDefaultPolicy(t *testing.T) {
	// A rate limiter's keys all expire; the one nearest expiry is the least use.
	require.Equal(t, "volatile-ttl", DefaultConfig().MaxMemoryPolicy)
	ts := startServer(t)
	require.Equal(t, "volatile-ttl", infoOf(t, ts.client(t, 2), "memory", "maxmemory_policy"))
}
