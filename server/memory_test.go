package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

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
	})
	rdb := ts.client(t, 2)
	ctx := context.Background()
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
	require.Equal(t, "OOM command not allowed when used memory > 'maxmemory'.", doErr(t, rdb, "throttle", "new", "1", "1", "1"))
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
