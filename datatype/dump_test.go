package datatype_test

import (
	"context"
	"encoding/binary"
	"hash/crc64"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/datatype"
	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/keyspace"
)

func TestRandomKeyCommand(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	_, err := rdb.RandomKey(context.Background()).Result()
	require.Equal(t, redis.Nil, err)
	do(t, rdb, "SET", "gone", "v", "PX", 10)
	do(t, rdb, "SET", "only", "v")
	ts.Clock.Advance(time.Second)
	for range 10 {
		require.Equal(t, "only", do(t, rdb, "RANDOMKEY"))
	}
}

func TestBitCommands(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Equal(t, int64(0), do(t, rdb, "SETBIT", "b", 9, 1))
	require.Equal(t, "\x00\x40", do(t, rdb, "GET", "b"))
	require.Equal(t, int64(1), do(t, rdb, "SETBIT", "b", 9, 0))
	require.Equal(t, int64(0), do(t, rdb, "GETBIT", "b", 9))
	require.Equal(t, "raw", do(t, rdb, "OBJECT", "ENCODING", "b"))
	do(t, rdb, "SET", "s", "foobar", "EX", 100)
	require.Equal(t, int64(26), do(t, rdb, "BITCOUNT", "s"))
	require.Equal(t, int64(17), do(t, rdb, "BITCOUNT", "s", 5, 30, "BIT"))
	do(t, rdb, "SETBIT", "s", 100, 1)
	require.Equal(t, int64(100), do(t, rdb, "TTL", "s"), "SETBIT keeps the expiry")
	require.Equal(t, int64(13), do(t, rdb, "STRLEN", "s"))
	require.Equal(t, "ERR bit offset is not an integer or out of range", doErr(t, rdb, "SETBIT", "s", 4294967296, 1))
	require.Equal(t, "ERR bit is not an integer or out of range", doErr(t, rdb, "SETBIT", "s", 1, 2))
}

// dumpOf returns key's DUMP payload.
func dumpOf(t *testing.T, rdb *redis.Client, key string) string {
	t.Helper()
	p, err := rdb.Dump(context.Background(), key).Result()
	require.NoError(t, err)
	return p
}

func TestDumpRestoreRoundTrip(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name  string
		setup [][]any
		reads [][]any // with "$" for the key
	}{
		{"int string", [][]any{{"SET", "$", "42"}}, [][]any{{"GET", "$"}}},
		{"raw string", [][]any{{"SET", "$", "a"}, {"APPEND", "$", "b"}}, [][]any{{"GET", "$"}}},
		{"long string", [][]any{{"SET", "$", strings.Repeat("y", 2000)}}, [][]any{{"GET", "$"}}},
		{"small hash", [][]any{{"HSET", "$", "f", "v", "g", "1"}}, [][]any{{"HGETALL", "$"}, {"HLEN", "$"}}},
		{"big hash", [][]any{{"HSET", "$", "f", long}}, [][]any{{"HGETALL", "$"}, {"HGET", "$", "f"}}},
		{"small zset", [][]any{{"ZADD", "$", 1, "a", 2.5, "b", 2.5, "c"}}, [][]any{{"ZRANGE", "$", 0, -1, "WITHSCORES"}}},
		{"timestamps zset", [][]any{{"ZADD", "$", 1732512345000, "1732512345000", 1732512345600, "1732512345600-1", 7, "7"}},
			[][]any{{"ZRANGE", "$", 0, -1, "WITHSCORES"}, {"ZSCORE", "$", "1732512345600-1"}}},
		{"big zset", [][]any{{"ZADD", "$", 1, long, 2, "b"}}, [][]any{{"ZRANGE", "$", 0, -1, "WITHSCORES"}, {"ZSCORE", "$", "b"}}},
		{"list", [][]any{{"RPUSH", "$", "a", "1", long}}, [][]any{{"LRANGE", "$", 0, -1}}},
		{"intset", [][]any{{"SADD", "$", 3, 1, 2}}, [][]any{{"SMEMBERS", "$"}, {"SCARD", "$"}}},
		{"small set", [][]any{{"SADD", "$", "b", "a", 1}}, [][]any{{"SMEMBERS", "$"}, {"SISMEMBER", "$", "a"}}},
		{"big set", [][]any{{"SADD", "$", "b", long, 7}}, [][]any{{"SMEMBERS", "$"}, {"SISMEMBER", "$", long}, {"SADD", "$", "c"}, {"SMEMBERS", "$"}}},
		{"gcra", [][]any{{"THROTTLE", "$", 5, 10, "1m"}}, [][]any{{"THROTTLE", "$", 5, 10, "1m", "PEEK"}}},
		{"sliding log", [][]any{{"SLIDE", "$", 5, "1m"}, {"SLIDE", "$", 5, "1m"}}, [][]any{{"SLIDE", "$", 5, "1m", "PEEK"}}},
		{"concurrency", [][]any{{"CONCURRENCY.ACQUIRE", "$", 3, "1m", "id1"}}, [][]any{{"CONCURRENCY.ACQUIRE", "$", 3, "1m", "id2", "PEEK"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with := func(cmd []any, key string) []any {
				out := append([]any(nil), cmd...)
				for i, a := range out {
					if a == "$" {
						out[i] = key
					}
				}
				return out
			}
			src, dst := "src:"+tc.name, "dst:"+tc.name
			for _, c := range tc.setup {
				do(t, rdb, with(c, src)...)
			}
			do(t, rdb, "RESTORE", dst, 0, dumpOf(t, rdb, src))
			for _, c := range append(tc.reads, []any{"TYPE", "$"}, []any{"OBJECT", "ENCODING", "$"}) {
				require.Equal(t, do(t, rdb, with(c, src)...), do(t, rdb, with(c, dst)...), "%v", c)
			}
			require.Equal(t, dumpOf(t, rdb, src), dumpOf(t, rdb, dst))
			if tc.name == "timestamps zset" { // the payload holds members in full, as it always has
				require.Contains(t, dumpOf(t, rdb, src), "\x0f1732512345600-1")
			}
		})
	}
}

func TestRestoreOptions(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "SET", "k", "v")
	p := dumpOf(t, rdb, "k")
	nowMS := ts.Clock.Now().UnixMilli()
	for _, tc := range []struct {
		name string
		args []any
		want string // the error, or "" for OK
		pttl int64  // after, when want is ""; -2 when no key
	}{
		{"busy", []any{"k", 0, p}, "BUSYKEY Target key name already exists.", -1},
		{"replace", []any{"k", 0, p, "REPLACE"}, "", -1},
		{"ttl", []any{"k", 5000, p, "replace"}, "", 5000},
		{"absttl", []any{"k", nowMS + 7000, p, "REPLACE", "ABSTTL"}, "", 7000},
		{"ttl past deletes", []any{"k", nowMS - 1, p, "REPLACE", "ABSTTL"}, "", -2},
		{"new key", []any{"k", 0, p}, "", -1},
		{"negative ttl", []any{"n", -1, p}, "ERR Invalid TTL value, must be >= 0", -2},
		{"bad ttl", []any{"n", "x", p}, "ERR value is not an integer or out of range", -2},
		{"idletime", []any{"n", 0, p, "IDLETIME", 100}, "", -1},
		{"bad idletime", []any{"n", 0, p, "IDLETIME", -1, "REPLACE"}, "ERR Invalid IDLETIME value, must be >= 0", -1},
		{"freq", []any{"f", 0, p, "FREQ", 255}, "", -1},
		{"bad freq", []any{"f", 0, p, "FREQ", 256}, "ERR Invalid FREQ value, must be >= 0 and <= 255", -1},
		{"idletime and freq", []any{"f", 0, p, "IDLETIME", 1, "FREQ", 1}, "ERR syntax error", -1},
		{"bad option", []any{"f", 0, p, "NOPE"}, "ERR syntax error", -1},
		{"short payload", []any{"x", 0, "abc"}, "ERR DUMP payload version or checksum are wrong", -2},
		{"damaged", []any{"x", 0, p[:3] + "!" + p[4:]}, "ERR DUMP payload version or checksum are wrong", -2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]any{"RESTORE"}, tc.args...)
			if tc.want != "" {
				require.Equal(t, tc.want, doErr(t, rdb, args...))
			} else {
				require.Equal(t, "OK", do(t, rdb, args...))
			}
			require.Equal(t, tc.pttl, do(t, rdb, "PTTL", tc.args[0]))
		})
	}
	require.Equal(t, int64(100), do(t, rdb, "OBJECT", "IDLETIME", "n"))
}

// TestRestoreRefusesRedisPayloads restores a payload of a real redis-server, and refuses a
// throttled payload there.
func TestRestoreRefusesRedisPayloads(t *testing.T) {
	rs := testserver.Redis(t)
	redisDB := redis.NewClient(&redis.Options{Addr: rs.Addr, Protocol: 2})
	t.Cleanup(func() { redisDB.Close() })
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	ctx := context.Background()
	require.NoError(t, redisDB.Set(ctx, "k", "v", 0).Err())
	require.NoError(t, rdb.Set(ctx, "k", "v", 0).Err())
	theirs, ours := dumpOf(t, redisDB, "k"), dumpOf(t, rdb, "k")
	const want = "ERR DUMP payload version or checksum are wrong"
	require.Equal(t, want, doErr(t, rdb, "RESTORE", "x", 0, theirs))
	require.Equal(t, want, doErr(t, redisDB, "RESTORE", "x", 0, ours))
}

// withFooter wraps body in a payload footer this server accepts.
func withFooter(body []byte) []byte {
	b := binary.LittleEndian.AppendUint16(append([]byte(nil), body...), datatype.DumpVersion)
	return binary.LittleEndian.AppendUint64(b, crc64.Checksum(b, crc64.MakeTable(crc64.ECMA)))
}

func TestRestoreRefusesBadValues(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	enc := func(v keyspace.Value) string {
		b := make([]byte, keyspace.EncodedLen(v))
		keyspace.Encode(b, v)
		return string(withFooter(b))
	}
	for _, tc := range []struct {
		name    string
		payload string
	}{
		{"no value", string(withFooter(nil))},
		{"policies", enc(keyspace.Value{Kind: keyspace.Policies, Bytes: []byte("x")})},
		{"unknown kind", enc(keyspace.Value{Kind: 60, Num: 1})},
		{"string encoding", enc(keyspace.Value{Kind: keyspace.String, Num: 9, Bytes: []byte("x")})},
		{"gcra with bytes", enc(keyspace.Value{Kind: keyspace.GCRA, Num: 1, Bytes: []byte("x")})},
		{"damaged pack", enc(keyspace.Value{Kind: keyspace.List, Bytes: []byte{0x05, 'a'}})},
		{"empty list", enc(keyspace.Value{Kind: keyspace.List})},
		{"hash odd", enc(keyspace.Value{Kind: keyspace.Hash, Bytes: []byte{0x01, 'a'}})},
		{"hash twice", enc(keyspace.Value{Kind: keyspace.Hash, Bytes: []byte{0x01, 'a', 0x01, 'b', 0x01, 'a', 0x01, 'c'}})},
		{"zset string score", enc(keyspace.Value{Kind: keyspace.ZSet, Bytes: []byte{0x01, 'a', 0x01, 'b'}})},
		{"zset out of order", enc(keyspace.Value{Kind: keyspace.ZSet, Bytes: []byte{0x01, 'b', 0xcb, 0x01, 'a', 0xcb}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, "ERR Bad data format", doErr(t, rdb, "RESTORE", "k", 0, tc.payload))
			require.Equal(t, int64(0), do(t, rdb, "EXISTS", "k"))
		})
	}
}

// FuzzRestorePayload restores arbitrary bytes, as they come and behind a right footer (so
// that the value's checks are what is fuzzed), and reads the key back every way: nothing
// may panic (the server answers a panic with "internal error").
func FuzzRestorePayload(f *testing.F) {
	ts := testserver.Start(f)
	rdb := ts.Client(f, 2)
	ctx := context.Background()
	for _, setup := range [][]any{{"SET", "s", "42"}, {"HSET", "s", "f", "v"}, {"ZADD", "s", 1.5, "m"}, {"RPUSH", "s", "a", "b"}, {"SLIDE", "s", 5, "1m"}} {
		rdb.Del(ctx, "s")
		do(f, rdb, setup...)
		p := dumpOf(&testing.T{}, rdb, "s")
		f.Add([]byte(p[:len(p)-10]))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, p := range [][]byte{body, withFooter(body)} {
			err := rdb.Do(ctx, "RESTORE", "k", 0, p, "REPLACE").Err()
			if err != nil {
				require.NotContains(t, err.Error(), "internal error")
				continue
			}
			for _, c := range [][]any{{"GET", "k"}, {"HGETALL", "k"}, {"HGET", "k", "f"}, {"HSET", "k", "new", "x"},
				{"ZRANGE", "k", 0, -1, "WITHSCORES"}, {"ZSCORE", "k", "m"}, {"ZADD", "k", 3, "z"}, {"LRANGE", "k", 0, -1},
				{"RPUSH", "k", "x"}, {"OBJECT", "ENCODING", "k"}, {"DUMP", "k"}, {"SLIDE", "k", 5, "1m"},
				{"THROTTLE", "k", 5, 10, "1m"}, {"CONCURRENCY.ACQUIRE", "k", 3, "1m", "id"}, {"SETBIT", "k", 7, 1},
				{"BITCOUNT", "k"}, {"STRLEN", "k"}, {"INCR", "k"}, {"TYPE", "k"}} {
				if err := rdb.Do(ctx, c...).Err(); err != nil {
					require.NotContains(t, err.Error(), "internal error", "%v after RESTORE of %q", c, p)
				}
			}
		}
	})
}
