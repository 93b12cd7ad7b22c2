package datatype_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/testserver"
)

func TestTTLFamily(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	now := ts.Clock.Now()
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
	ts.Clock.Advance(2600 * time.Millisecond)
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

	require.Equal(t, int64(1), do(t, rdb, "EXPIREAT", "k", ts.Clock.Now().Unix()+20))
	require.Equal(t, int64(19), do(t, rdb, "TTL", "k"), "19.4s: the clock is 0.6s past a whole second")
	require.Equal(t, int64(1), do(t, rdb, "PEXPIREAT", "k", ts.Clock.Now().UnixMilli()+300))
	require.Equal(t, int64(300), do(t, rdb, "PTTL", "k"))

	// Exactly at its expiry time a key is gone.
	ts.Clock.Advance(300 * time.Millisecond)
	require.Equal(t, int64(-2), do(t, rdb, "PTTL", "k"))
	_, err := rdb.Get(context.Background(), "k").Result()
	require.ErrorIs(t, err, redis.Nil)

	// An expiry in the past deletes the key.
	do(t, rdb, "SET", "k", "v")
	require.Equal(t, int64(1), do(t, rdb, "EXPIRE", "k", -1))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "k"))
}

func TestActiveExpiryFreesIdleKeys(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	for i := 0; i < 500; i++ {
		do(t, rdb, "THROTTLE", fmt.Sprintf("idle:%d", i), 0, 1, "1s")
	}
	do(t, rdb, "SET", "forever", "1")
	require.Equal(t, int64(501), do(t, rdb, "DBSIZE"))
	ts.Clock.Advance(2 * time.Second)
	// Nobody touches the keys: the background cycle removes them.
	require.Eventually(t, func() bool { return do(t, rdb, "DBSIZE") == int64(1) }, 10*time.Second, 20*time.Millisecond)
	info := do(t, rdb, "INFO", "stats").(string)
	require.Contains(t, info, "expired_keys:500\r\n")
}

func TestDelExistsTypeKeys(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
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
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
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
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
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

func TestObject(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "HSET", "h", "a", "1")
	do(t, rdb, "ZADD", "z", "1", "a")
	do(t, rdb, "RPUSH", "l", "a")
	// The same hash and sorted set past their listpack's limits.
	do(t, rdb, "CONFIG", "SET", "hash-max-listpack-entries", "0", "zset-max-listpack-entries", "0")
	do(t, rdb, "HSET", "H", "a", "1")
	do(t, rdb, "ZADD", "Z", "1", "a")
	do(t, rdb, "CONFIG", "SET", "hash-max-listpack-entries", "512", "zset-max-listpack-entries", "128")
	do(t, rdb, "THROTTLE", "g", 1, 1, "1m")
	do(t, rdb, "MSET", "int", "5", "bigint", "10000", "neg", "-1", "emb", strings.Repeat("e", 44), "raw", strings.Repeat("r", 45),
		"notint", "05", "long", "123456789012345678901")
	do(t, rdb, "SET", "appended", "1")
	do(t, rdb, "APPEND", "appended", "2")
	do(t, rdb, "SETRANGE", "ranged", 0, "7")
	do(t, rdb, "INCRBYFLOAT", "float", "11")
	do(t, rdb, "INCRBYFLOAT", "longfloat", "1e50")
	do(t, rdb, "APPEND", "new", "42") // a new key's APPEND is a SET
	do(t, rdb, "COPY", "int", "copied")
	do(t, rdb, "COPY", "emb", "copiedemb")
	do(t, rdb, "RENAME", "neg", "renamed")
	do(t, rdb, "SET", "incr", "1")
	do(t, rdb, "INCRBYFLOAT", "incr", "1")
	do(t, rdb, "INCR", "incr") // INCR's result is an integer again
	for _, tc := range []struct {
		key, encoding string
		refcount      int64
	}{
		{"h", "listpack", 1}, {"H", "hashtable", 1}, {"z", "listpack", 1}, {"Z", "skiplist", 1}, {"l", "quicklist", 1},
		{"g", "raw", 1}, {"int", "int", 2147483647}, {"bigint", "int", 1}, {"neg", "", 0}, {"renamed", "int", 1},
		{"emb", "embstr", 1}, {"raw", "raw", 1}, {"notint", "embstr", 1}, {"long", "embstr", 1},
		{"appended", "raw", 1}, {"ranged", "raw", 1}, {"float", "embstr", 1}, {"longfloat", "raw", 1},
		{"new", "int", 2147483647}, {"copied", "int", 1}, {"copiedemb", "embstr", 1}, {"incr", "int", 2147483647},
	} {
		if tc.encoding == "" {
			_, err := rdb.Do(context.Background(), "OBJECT", "ENCODING", tc.key).Result()
			require.ErrorIs(t, err, redis.Nil, tc.key)
			continue
		}
		require.Equal(t, tc.encoding, do(t, rdb, "OBJECT", "ENCODING", tc.key), tc.key)
		require.Equal(t, tc.refcount, do(t, rdb, "OBJECT", "REFCOUNT", tc.key), tc.key)
		require.Equal(t, int64(0), do(t, rdb, "OBJECT", "IDLETIME", tc.key), tc.key)
		require.Equal(t, "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
			doErr(t, rdb, "OBJECT", "FREQ", tc.key))
	}
	_, err := rdb.Do(context.Background(), "OBJECT", "FREQ", "missing").Result()
	require.ErrorIs(t, err, redis.Nil)
	require.Len(t, do(t, rdb, "OBJECT", "HELP"), 15)
	require.Equal(t, "ERR unknown subcommand 'nosuch'. Try OBJECT HELP.", doErr(t, rdb, "OBJECT", "nosuch", "k"))
	require.Equal(t, "ERR wrong number of arguments for 'object|encoding' command", doErr(t, rdb, "OBJECT", "ENCODING"))

	// Without shared integers: maxmemory with an LRU policy needs an access time per key.
	do(t, rdb, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
	do(t, rdb, "CONFIG", "SET", "maxmemory", "1000000000")
	do(t, rdb, "SET", "lru", "5")
	require.Equal(t, int64(1), do(t, rdb, "OBJECT", "REFCOUNT", "lru"))
	// Redis decides when it writes: a key written before keeps its shared object there;
	// here the reply follows the settings of the moment.
	require.Equal(t, int64(1), do(t, rdb, "OBJECT", "REFCOUNT", "int"))
}

func TestRenameCopyTouch(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "SET", "a", "1", "PX", 5000)
	do(t, rdb, "SET", "b", "2")
	require.Equal(t, int64(0), do(t, rdb, "RENAMENX", "a", "b"))
	require.Equal(t, int64(0), do(t, rdb, "RENAMENX", "a", "a"))
	require.Equal(t, "OK", do(t, rdb, "RENAME", "a", "a"))
	require.Equal(t, "OK", do(t, rdb, "RENAME", "a", "b"))
	require.Equal(t, []any{nil, "1"}, do(t, rdb, "MGET", "a", "b"))
	require.Equal(t, int64(5000), do(t, rdb, "PTTL", "b"), "the TTL moves with the value")
	require.Equal(t, int64(1), do(t, rdb, "RENAMENX", "b", "c"))
	require.Equal(t, int64(5000), do(t, rdb, "PTTL", "c"))
	require.Equal(t, "ERR no such key", doErr(t, rdb, "RENAME", "b", "d"))
	require.Equal(t, "ERR no such key", doErr(t, rdb, "RENAMENX", "b", "b"))

	require.Equal(t, int64(1), do(t, rdb, "COPY", "c", "d"))
	require.Equal(t, int64(5000), do(t, rdb, "PTTL", "d"))
	require.Equal(t, int64(0), do(t, rdb, "COPY", "c", "d"))
	do(t, rdb, "SET", "c", "3")
	require.Equal(t, int64(1), do(t, rdb, "COPY", "c", "d", "DB", 0, "REPLACE"))
	require.Equal(t, int64(-1), do(t, rdb, "PTTL", "d"))
	require.Equal(t, "3", do(t, rdb, "GET", "d"))
	require.Equal(t, int64(0), do(t, rdb, "COPY", "missing", "d"))
	require.Equal(t, "ERR source and destination objects are the same", doErr(t, rdb, "COPY", "c", "c"))
	require.Equal(t, "ERR DB index is out of range", doErr(t, rdb, "COPY", "c", "e", "DB", 1))
	require.Equal(t, "ERR value is out of range, value must between -2147483648 and 2147483647", doErr(t, rdb, "COPY", "c", "e", "DB", "4294967296"))
	require.Equal(t, "ERR syntax error", doErr(t, rdb, "COPY", "c", "e", "DB"))

	// A rate-limit key moves and copies whole: its state goes on where it was.
	require.Equal(t, int64(0), do(t, rdb, "THROTTLE", "g", 0, 1, "1m").([]any)[0])
	require.Equal(t, "OK", do(t, rdb, "RENAME", "g", "g2"))
	require.Equal(t, int64(1), do(t, rdb, "COPY", "g2", "g3"))
	require.Equal(t, "gcra", do(t, rdb, "TYPE", "g3"))
	require.Equal(t, int64(1), do(t, rdb, "THROTTLE", "g3", 0, 1, "1m").([]any)[0], "g3 is as full as g was")

	require.Equal(t, int64(3), do(t, rdb, "TOUCH", "c", "c", "d", "missing"))
}

// TestKeyCommandsOnEveryKind: the generic key commands work through the keyspace, whatever
// a key holds.
func TestKeyCommandsOnEveryKind(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	kinds := map[string][]any{
		"hash": {"HSET", "hash", "a", "1"},
		"zset": {"ZADD", "zset", "1", "a"},
		"list": {"RPUSH", "list", "a"},
	}
	for name, write := range kinds {
		t.Run(name, func(t *testing.T) {
			do(t, rdb, write...)
			require.Equal(t, name, do(t, rdb, "TYPE", name))
			require.Equal(t, []any{name}, do(t, rdb, "SCAN", 0, "COUNT", 1000, "TYPE", name).([]any)[1])
			require.Equal(t, int64(1), do(t, rdb, "EXISTS", name))
			require.Equal(t, int64(1), do(t, rdb, "EXPIRE", name, 100))
			require.Equal(t, int64(100), do(t, rdb, "TTL", name))
			require.Equal(t, int64(1), do(t, rdb, "PERSIST", name))
			require.Equal(t, int64(-1), do(t, rdb, "TTL", name))
			require.Equal(t, int64(1), do(t, rdb, "TOUCH", name))
			require.Equal(t, "OK", do(t, rdb, "RENAME", name, name+"2"))
			require.Equal(t, int64(1), do(t, rdb, "COPY", name+"2", name))
			require.Equal(t, name, do(t, rdb, "TYPE", name))
			for _, cmd := range [][]any{{"GET", name}, {"APPEND", name, "x"}, {"INCRBYFLOAT", name, 1}, {"GETEX", name}, {"GETDEL", name}, {"STRLEN", name}} {
				require.Equal(t, "WRONGTYPE Operation against a key holding the wrong kind of value", doErr(t, rdb, cmd...), "%v", cmd)
			}
			require.Equal(t, int64(2), do(t, rdb, "DEL", name, name+"2"))
		})
	}
}
