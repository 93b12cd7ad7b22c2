package datatype_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

func TestSetOptions(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	ctx := context.Background()
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v1"))
	require.Equal(t, "v1", do(t, rdb, "GET", "k"))
	_, err := rdb.Do(ctx, "SET", "k", "v2", "NX").Result()
	require.ErrorIs(t, err, redis.Nil)
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v2", "XX"))
	_, err = rdb.Do(ctx, "SET", "other", "v", "XX").Result()
	require.ErrorIs(t, err, redis.Nil)
	require.Equal(t, "v2", do(t, rdb, "SET", "k", "v3", "GET"))
	_, err = rdb.Do(ctx, "SET", "new", "v", "GET").Result()
	require.ErrorIs(t, err, redis.Nil)
	require.Equal(t, "v", do(t, rdb, "GET", "new"))

	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v", "EX", 10))
	require.Equal(t, int64(10000), do(t, rdb, "PTTL", "k"))
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v", "PX", 1500))
	require.Equal(t, int64(1500), do(t, rdb, "PTTL", "k"))
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v", "KEEPTTL"))
	require.Equal(t, int64(1500), do(t, rdb, "PTTL", "k"))
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v"))
	require.Equal(t, int64(-1), do(t, rdb, "PTTL", "k"))
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v", "EXAT", ts.Clock.Now().Unix()+5))
	require.Equal(t, int64(5), do(t, rdb, "TTL", "k"))
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v", "PXAT", ts.Clock.Now().UnixMilli()+700))
	require.Equal(t, int64(700), do(t, rdb, "PTTL", "k"))

	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"SET", "k", "v", "NX", "XX"}, "ERR syntax error"},
		{[]any{"SET", "k", "v", "EX", 1, "PX", 1}, "ERR syntax error"},
		{[]any{"SET", "k", "v", "EX", 1, "KEEPTTL"}, "ERR syntax error"},
		{[]any{"SET", "k", "v", "EX"}, "ERR syntax error"},
		{[]any{"SET", "k", "v", "BOGUS"}, "ERR syntax error"},
		{[]any{"SET", "k", "v", "EX", 0}, "ERR invalid expire time in 'set' command"},
		{[]any{"SET", "k", "v", "EX", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"SET", "k", "v", "EX", int64(9223372036854775807)}, "ERR invalid expire time in 'set' command"},
		{[]any{"SETEX", "k", 0, "v"}, "ERR invalid expire time in 'setex' command"},
	} {
		require.Equal(t, tc.want, doErr(t, rdb, tc.args...), "%v", tc.args)
	}

	// SET replaces any kind; GET and SET ... GET on another kind is WRONGTYPE.
	do(t, rdb, "THROTTLE", "g", 1, 1, "1m")
	require.Equal(t, "WRONGTYPE Operation against a key holding the wrong kind of value", doErr(t, rdb, "GET", "g"))
	require.Equal(t, "WRONGTYPE Operation against a key holding the wrong kind of value", doErr(t, rdb, "SET", "g", "v", "GET"))
	require.Equal(t, "gcra", do(t, rdb, "TYPE", "g"))
	require.Equal(t, "OK", do(t, rdb, "SET", "g", "v"))
	require.Equal(t, "string", do(t, rdb, "TYPE", "g"))
}

func TestSetExAndFriends(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Equal(t, "OK", do(t, rdb, "SETEX", "a", 10, "x"))
	require.Equal(t, int64(10), do(t, rdb, "TTL", "a"))
	require.Equal(t, "OK", do(t, rdb, "PSETEX", "b", 250, "y"))
	require.Equal(t, int64(250), do(t, rdb, "PTTL", "b"))
	require.Equal(t, int64(1), do(t, rdb, "SETNX", "c", "z"))
	require.Equal(t, int64(0), do(t, rdb, "SETNX", "c", "w"))
	require.Equal(t, []any{"x", "y", "z", nil}, do(t, rdb, "MGET", "a", "b", "c", "nope"))
	require.Equal(t, "ERR wrong number of arguments for 'mset' command", doErr(t, rdb, "MSET", "a", "1", "b"))
	ts.Clock.Advance(250 * time.Millisecond)
	require.Equal(t, []any{"x", nil}, do(t, rdb, "MGET", "a", "b"))
	// Binary-safe keys and values.
	require.Equal(t, "OK", do(t, rdb, "SET", "bin\x00key", "\x00\xff\r\n"))
	require.Equal(t, "\x00\xff\r\n", do(t, rdb, "GET", "bin\x00key"))
}

func TestCounters(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Equal(t, int64(1), do(t, rdb, "INCR", "n"))
	require.Equal(t, int64(11), do(t, rdb, "INCRBY", "n", 10))
	require.Equal(t, int64(10), do(t, rdb, "DECR", "n"))
	require.Equal(t, int64(-5), do(t, rdb, "DECRBY", "n", 15))
	require.Equal(t, "-5", do(t, rdb, "GET", "n"))
	do(t, rdb, "EXPIRE", "n", 100)
	require.Equal(t, int64(-4), do(t, rdb, "INCR", "n"))
	require.Equal(t, int64(100), do(t, rdb, "TTL", "n"), "INCR keeps the TTL")

	do(t, rdb, "SET", "max", "9223372036854775807")
	do(t, rdb, "SET", "junk", "12a")
	do(t, rdb, "SET", "lead", "012")
	do(t, rdb, "THROTTLE", "g", 1, 1, "1m")
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"INCR", "max"}, "ERR increment or decrement would overflow"},
		{[]any{"DECRBY", "n", "-9223372036854775808"}, "ERR decrement would overflow"},
		{[]any{"INCRBY", "n", "1.5"}, "ERR value is not an integer or out of range"},
		{[]any{"INCRBY", "n", "99999999999999999999"}, "ERR value is not an integer or out of range"},
		{[]any{"INCR", "junk"}, "ERR value is not an integer or out of range"},
		{[]any{"INCR", "lead"}, "ERR value is not an integer or out of range"},
		{[]any{"INCR", "g"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
	} {
		require.Equal(t, tc.want, doErr(t, rdb, tc.args...), "%v", tc.args)
	}
	require.Equal(t, "9223372036854775807", do(t, rdb, "GET", "max"))
}

// TestStringWritesKeepTheTTL: INCRBYFLOAT, APPEND and SETRANGE change a value and keep its
// expiry; GETEX sets or removes one, relative times counted from the clock.
func TestStringWritesKeepTheTTL(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "10.5", "PX", 5000))
	require.Equal(t, "10.6", do(t, rdb, "INCRBYFLOAT", "k", "0.1"))
	require.Equal(t, int64(5000), do(t, rdb, "PTTL", "k"))
	require.Equal(t, int64(5), do(t, rdb, "APPEND", "k", "x"))
	require.Equal(t, int64(5000), do(t, rdb, "PTTL", "k"))
	require.Equal(t, int64(7), do(t, rdb, "SETRANGE", "k", 5, "yz"))
	require.Equal(t, "10.6xyz", do(t, rdb, "GET", "k"))
	require.Equal(t, int64(5000), do(t, rdb, "PTTL", "k"))

	require.Equal(t, "10.6xyz", do(t, rdb, "GETEX", "k", "EX", 10))
	require.Equal(t, int64(10000), do(t, rdb, "PTTL", "k"))
	require.Equal(t, "10.6xyz", do(t, rdb, "GETEX", "k", "PX", 1500, "PX", 1200))
	require.Equal(t, int64(1200), do(t, rdb, "PTTL", "k"))
	require.Equal(t, "10.6xyz", do(t, rdb, "GETEX", "k"))
	require.Equal(t, int64(1200), do(t, rdb, "PTTL", "k"))
	require.Equal(t, "10.6xyz", do(t, rdb, "GETEX", "k", "PERSIST"))
	require.Equal(t, int64(-1), do(t, rdb, "PTTL", "k"))
	require.Equal(t, "10.6xyz", do(t, rdb, "GETEX", "k", "EXAT", ts.Clock.Now().Unix()+5))
	require.Equal(t, int64(5), do(t, rdb, "TTL", "k"))
	require.Equal(t, "10.6xyz", do(t, rdb, "GETEX", "k", "PXAT", ts.Clock.Now().UnixMilli()+700))
	require.Equal(t, int64(700), do(t, rdb, "PTTL", "k"))
	ts.Clock.Advance(700 * time.Millisecond)
	_, err := rdb.Do(context.Background(), "GETEX", "k", "PERSIST").Result()
	require.ErrorIs(t, err, redis.Nil, "expired")

	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v"))
	require.Equal(t, "v", do(t, rdb, "GETEX", "k", "PXAT", ts.Clock.Now().UnixMilli()))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "k"), "PXAT now deletes")
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v", "EX", 100))
	require.Equal(t, "v", do(t, rdb, "GETDEL", "k"))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "k"))
}

func TestStringCommandErrors(t *testing.T) {
	ts := testserver.Start(t, func(c *server.Config) { c.ProtoMaxBulkLen = 1 << 20 })
	rdb := ts.Client(t, 2)
	do(t, rdb, "THROTTLE", "g", 1, 1, "1m")
	do(t, rdb, "SET", "s", "abc")
	const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"INCRBYFLOAT", "g", "1"}, wrongType},
		{[]any{"GETEX", "g"}, wrongType},
		{[]any{"GETEX", "g", "EX", "0"}, wrongType}, // the key before the time
		{[]any{"GETDEL", "g"}, wrongType},
		{[]any{"APPEND", "g", "x"}, wrongType},
		{[]any{"STRLEN", "g"}, wrongType},
		{[]any{"SETRANGE", "g", 0, ""}, wrongType},
		{[]any{"GETRANGE", "g", 0, 1}, wrongType},
		{[]any{"SUBSTR", "g", 0, 1}, wrongType},
		{[]any{"INCRBYFLOAT", "s", "1"}, "ERR value is not a valid float"},
		{[]any{"INCRBYFLOAT", "n", "nan"}, "ERR value is not a valid float"},
		{[]any{"INCRBYFLOAT", "n", "inf"}, "ERR increment would produce NaN or Infinity"},
		{[]any{"GETEX", "s", "EX", 10, "PERSIST"}, "ERR syntax error"},
		{[]any{"GETEX", "s", "KEEPTTL"}, "ERR syntax error"},
		{[]any{"GETEX", "s", "EX", "1", "PX", "1"}, "ERR syntax error"},
		{[]any{"GETEX", "s", "EX", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"GETEX", "s", "EX", "0"}, "ERR invalid expire time in 'getex' command"},
		{[]any{"SETRANGE", "s", -1, "x"}, "ERR offset is out of range"},
		{[]any{"SETRANGE", "s", "x", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"SETRANGE", "s", 1 << 20, "x"}, "ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
		{[]any{"SETRANGE", "s", "9223372036854775807", "x"}, "ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
		{[]any{"APPEND", "s", strings.Repeat("x", 1<<20-2)}, "ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
		{[]any{"GETRANGE", "s", "0", "x"}, "ERR value is not an integer or out of range"},
	} {
		require.Equal(t, tc.want, doErr(t, rdb, tc.args...), "%v", tc.args)
	}
	// At the limit and nothing written past it.
	require.Equal(t, int64(1<<20), do(t, rdb, "APPEND", "s", strings.Repeat("x", 1<<20-3)))
	require.Equal(t, int64(1<<20), do(t, rdb, "SETRANGE", "s", 1<<30, ""))
	require.Equal(t, int64(0), do(t, rdb, "SETRANGE", "missing", 1<<30, ""))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "missing"))
	require.Equal(t, "abcx", do(t, rdb, "GETRANGE", "s", 0, 3))
}

func TestSetRangeAndGetRange(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Equal(t, int64(5), do(t, rdb, "SETRANGE", "k", 3, "ab"))
	require.Equal(t, "\x00\x00\x00ab", do(t, rdb, "GET", "k"))
	require.Equal(t, int64(5), do(t, rdb, "SETRANGE", "k", 0, "xy"))
	require.Equal(t, "xy\x00ab", do(t, rdb, "GET", "k"))
	require.Equal(t, int64(5), do(t, rdb, "STRLEN", "k"))
	require.Equal(t, int64(0), do(t, rdb, "STRLEN", "missing"))
	// A string far longer than the client's scratch buffer.
	require.Equal(t, int64(200001), do(t, rdb, "SETRANGE", "big", 200000, "z"))
	require.Equal(t, "\x00z", do(t, rdb, "GETRANGE", "big", -2, -1))

	do(t, rdb, "SET", "s", "Hello World")
	for _, tc := range []struct {
		start, end any
		want       string
	}{
		{0, 4, "Hello"}, {-5, -1, "World"}, {-1, -5, ""}, {5, 3, ""}, {0, -1, "Hello World"},
		{-100, 2, "Hel"}, {8, 100, "rld"}, {"-9223372036854775808", "9223372036854775807", "Hello World"},
		{11, 20, ""}, {-3, 0, ""},
	} {
		require.Equal(t, tc.want, do(t, rdb, "GETRANGE", "s", tc.start, tc.end), "%v %v", tc.start, tc.end)
		require.Equal(t, tc.want, do(t, rdb, "SUBSTR", "s", tc.start, tc.end), "%v %v", tc.start, tc.end)
	}
	require.Equal(t, "", do(t, rdb, "GETRANGE", "missing", 0, -1))
}
