package server

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestTTLFamily(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	now := ts.clock.Now()
	require.Equal(t, int64(-2), do(t, rdb, "TTL", "k"))
	require.Equal(t, int64(0), do(t, rdb, "EXPIRE", "k", 10))
	do(t, rdb, "SET", "k", "v")
	require.Equal(t, int64(-1), do(t, rdb, "TTL", "k"))
	require.Equal(t, int64(-1), do(t, rdb, "EXPIRETIME", "k"))
	require.Equal(t, int64(1), do(t, rdb, "EXPIRE", "k", 10))
	require.Equal(t, int64(10), do(t, rdb, "TTL", "k"))
	require.Equal(t, int64(10000), do(t, rdb, "PTTL", "k"))
	require.Equal(t, now.Unix()+10, do(t, rdb, "EXPIRETIME", "k"))
	require.Equal(t, now.UnixMilli()+10000, do(t, rdb, "PEXPIRETIME", "k"))
	ts.clock.Advance(2600 * time.Millisecond)
	require.Equal(t, int64(7), do(t, rdb, "TTL", "k")) // 7.4s rounds to 7
	require.Equal(t, int64(7400), do(t, rdb, "PTTL", "k"))

	// NX, XX, GT, LT as Redis 7.
	require.Equal(t, int64(0), do(t, rdb, "EXPIRE", "k", 100, "NX"))
	require.Equal(t, int64(1), do(t, rdb, "EXPIRE", "k", 100, "XX"))
	require.Equal(t, int64(0), do(t, rdb, "EXPIRE", "k", 50, "GT"))
	require.Equal(t, int64(1), do(t, rdb, "EXPIRE", "k", 50, "LT"))
	require.Equal(t, int64(50), do(t, rdb, "TTL", "k"))
	require.Equal(t, "ERR NX and XX, GT or LT options at the same time are not compatible", doErr(t, rdb, "EXPIRE", "k", 1, "NX", "XX"))
	require.Equal(t, "ERR GT and LT options at the same time are not compatible", doErr(t, rdb, "EXPIRE", "k", 1, "GT", "LT"))
	require.Equal(t, "ERR Unsupported option YY", doErr(t, rdb, "EXPIRE", "k", 1, "YY"))
	require.Equal(t, "ERR value is not an integer or out of range", doErr(t, rdb, "EXPIRE", "k", "soon"))
	require.Equal(t, "ERR invalid expire time in 'pexpire' command", doErr(t, rdb, "PEXPIRE", "k", int64(9223372036854775807)))

	require.Equal(t, int64(1), do(t, rdb, "PEXPIRE", "k", 1500))
	require.Equal(t, int64(2), do(t, rdb, "TTL", "k"))
	require.Equal(t, int64(1), do(t, rdb, "PERSIST", "k"))
	require.Equal(t, int64(0), do(t, rdb, "PERSIST", "k"))
	require.Equal(t, int64(-1), do(t, rdb, "PTTL", "k"))

	require.Equal(t, int64(1), do(t, rdb, "EXPIREAT", "k", ts.clock.Now().Unix()+20))
	require.Equal(t, int64(19), do(t, rdb, "TTL", "k"), "19.4s: the clock is 0.6s past a whole second")
	require.Equal(t, int64(1), do(t, rdb, "PEXPIREAT", "k", ts.clock.Now().UnixMilli()+300))
	require.Equal(t, int64(300), do(t, rdb, "PTTL", "k"))

	// Exactly at its expiry time a key is gone.
	ts.clock.Advance(300 * time.Millisecond)
	require.Equal(t, int64(-2), do(t, rdb, "PTTL", "k"))
	_, err := rdb.Get(context.Background(), "k").Result()
	require.ErrorIs(t, err, redis.Nil)

	// An expiry in the past deletes the key.
	do(t, rdb, "SET", "k", "v")
	require.Equal(t, int64(1), do(t, rdb, "EXPIRE", "k", -1))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "k"))
}

func TestActiveExpiryFreesIdleKeys(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	for i := 0; i < 500; i++ {
		do(t, rdb, "THROTTLE", fmt.Sprintf("idle:%d", i), 0, 1, "1s")
	}
	do(t, rdb, "SET", "forever", "1")
	require.Equal(t, int64(501), do(t, rdb, "DBSIZE"))
	ts.clock.Advance(2 * time.Second)
	// Nobody touches the keys: the background cycle removes them.
	require.Eventually(t, func() bool { return do(t, rdb, "DBSIZE") == int64(1) }, 10*time.Second, 20*time.Millisecond)
	info := do(t, rdb, "INFO", "stats").(string)
	require.Contains(t, info, "expired_keys:500\r\n")
}

func TestDelExistsTypeKeys(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	do(t, rdb, "MSET", "a", "1", "b", "2", "user:1", "x", "user:22", "y")
	do(t, rdb, "THROTTLE", "rate:1", 1, 1, "1m")
	require.Equal(t, "string", do(t, rdb, "TYPE", "a"))
	require.Equal(t, "gcra", do(t, rdb, "TYPE", "rate:1"))
	require.Equal(t, "none", do(t, rdb, "TYPE", "nope"))
	require.Equal(t, int64(3), do(t, rdb, "EXISTS", "a", "a", "b", "nope"))
	keys := func(pattern string) []string {
		v, err := rdb.Keys(context.Background(), pattern).Result()
		require.NoError(t, err)
		sort.Strings(v)
		return v
	}
	require.Equal(t, []string{"user:1", "user:22"}, keys("user:*"))
	require.Equal(t, []string{"user:1"}, keys("user:?"))
	require.Equal(t, []string{"a", "b"}, keys("[a-b]"))
	require.Equal(t, []string{"user:22"}, keys("*2*"))
	require.Equal(t, int64(2), do(t, rdb, "DEL", "a", "b", "nope"))
	require.Equal(t, int64(1), do(t, rdb, "UNLINK", "rate:1"))
	require.Equal(t, int64(2), do(t, rdb, "DBSIZE"))
	require.Equal(t, "OK", do(t, rdb, "FLUSHALL"))
	require.Equal(t, int64(0), do(t, rdb, "DBSIZE"))
}

func TestScan(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	for i := 0; i < 300; i++ {
		do(t, rdb, "SET", fmt.Sprintf("s:%d", i), i)
		do(t, rdb, "THROTTLE", fmt.Sprintf("g:%d", i), 1, 1, "1h")
	}
	scanAll := func(match, typ string) map[string]bool {
		seen := map[string]bool{}
		cursor := uint64(0)
		for {
			var keys []string
			var err error
			if typ != "" {
				keys, cursor, err = rdb.ScanType(ctx, cursor, match, 50, typ).Result()
			} else {
				keys, cursor, err = rdb.Scan(ctx, cursor, match, 50).Result()
			}
			require.NoError(t, err)
			for _, k := range keys {
				seen[k] = true
			}
			if cursor == 0 {
				return seen
			}
		}
	}
	require.Len(t, scanAll("", ""), 600)
	require.Len(t, scanAll("s:1*", ""), 111)
	gcraKeys := scanAll("", "gcra")
	require.Len(t, gcraKeys, 300)
	require.True(t, gcraKeys["g:299"])
	require.Equal(t, "ERR invalid cursor", doErr(t, rdb, "SCAN", "abc"))
	require.Equal(t, "ERR syntax error", doErr(t, rdb, "SCAN", 0, "COUNT"))
	require.Equal(t, "ERR syntax error", doErr(t, rdb, "SCAN", 0, "COUNT", 0))
	// Any cursor is safe to pass.
	_, err := rdb.Do(ctx, "SCAN", "18446744073709551615").Result()
	require.NoError(t, err)
}

// TestScanDuringWrites: a key present throughout a scan is returned even as others come and go.
func TestScanDuringWrites(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		do(t, rdb, "SET", fmt.Sprintf("stay:%d", i), 1)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			rdb.Set(ctx, fmt.Sprintf("churn:%d", i), 1, 0)
			rdb.Del(ctx, fmt.Sprintf("churn:%d", i-50))
		}
	}()
	seen := map[string]bool{}
	cursor := uint64(0)
	for {
		keys, next, err := rdb.Scan(ctx, cursor, "stay:*", 20).Result()
		require.NoError(t, err)
		for _, k := range keys {
			seen[k] = true
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	close(stop)
	wg.Wait()
	require.Len(t, seen, 1000)
}
