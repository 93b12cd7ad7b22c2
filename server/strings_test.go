package server

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestSetOptions(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
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
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v", "EXAT", ts.clock.Now().Unix()+5))
	require.Equal(t, int64(5), do(t, rdb, "TTL", "k"))
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v", "PXAT", ts.clock.Now().UnixMilli()+700))
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
	ts := startServer(t)
	rdb := ts.client(t, 2)
	require.Equal(t, "OK", do(t, rdb, "SETEX", "a", 10, "x"))
	require.Equal(t, int64(10), do(t, rdb, "TTL", "a"))
	require.Equal(t, "OK", do(t, rdb, "PSETEX", "b", 250, "y"))
	require.Equal(t, int64(250), do(t, rdb, "PTTL", "b"))
	require.Equal(t, int64(1), do(t, rdb, "SETNX", "c", "z"))
	require.Equal(t, int64(0), do(t, rdb, "SETNX", "c", "w"))
	require.Equal(t, []any{"x", "y", "z", nil}, do(t, rdb, "MGET", "a", "b", "c", "nope"))
	require.Equal(t, "ERR wrong number of arguments for 'mset' command", doErr(t, rdb, "MSET", "a", "1", "b"))
	ts.clock.Advance(250 * time.Millisecond)
	require.Equal(t, []any{"x", nil}, do(t, rdb, "MGET", "a", "b"))
	// Binary-safe keys and values.
	require.Equal(t, "OK", do(t, rdb, "SET", "bin\x00key", "\x00\xff\r\n"))
	require.Equal(t, "\x00\xff\r\n", do(t, rdb, "GET", "bin\x00key"))
}

func TestCounters(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
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
