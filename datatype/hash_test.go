package datatype_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

// TestHashOrder: fields come back in the order they were first set, as from a listpack.
func TestHashOrder(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Equal(t, int64(3), do(t, rdb, "HSET", "h", "tokens", "10", "last_refill", "1732512345123", "x", "1"))
	require.Equal(t, int64(1), do(t, rdb, "HSET", "h", "tokens", "9", "y", "2"))
	require.Equal(t, int64(1), do(t, rdb, "HDEL", "h", "x", "nope"))
	want := []any{"tokens", "9", "last_refill", "1732512345123", "y", "2"}
	require.Equal(t, want, do(t, rdb, "HGETALL", "h"))
	require.Equal(t, []any{"tokens", "last_refill", "y"}, do(t, rdb, "HKEYS", "h"))
	require.Equal(t, []any{"9", "1732512345123", "2"}, do(t, rdb, "HVALS", "h"))
	require.Equal(t, []any{"0", want}, do(t, rdb, "HSCAN", "h", "0", "COUNT", "1"))
	require.Equal(t, []any{"0", []any{"last_refill", "1732512345123"}}, do(t, rdb, "HSCAN", "h", "0", "MATCH", "l*"))
	require.Equal(t, want, do(t, rdb, "HRANDFIELD", "h", "3", "WITHVALUES"))
	require.Equal(t, []any{"9", nil, "2"}, do(t, rdb, "HMGET", "h", "tokens", "x", "y"))
	require.Equal(t, int64(13), do(t, rdb, "HSTRLEN", "h", "last_refill"))
	require.Equal(t, int64(3), do(t, rdb, "HLEN", "h"))
	require.Equal(t, int64(3), do(t, rdb, "HDEL", "h", "tokens", "last_refill", "y"))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "h"), "an emptied hash is deleted")
}

// TestHashRESP3: HGETALL is a map, HRANDFIELD WITHVALUES pairs.
func TestHashRESP3(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 3)
	do(t, rdb, "HSET", "h", "a", "1", "b", "2")
	require.Equal(t, map[any]any{"a": "1", "b": "2"}, do(t, rdb, "HGETALL", "h"))
	require.Equal(t, map[any]any{}, do(t, rdb, "HGETALL", "missing"))
	require.Equal(t, []any{[]any{"a", "1"}, []any{"b", "2"}}, do(t, rdb, "HRANDFIELD", "h", "5", "WITHVALUES"))
	got := do(t, rdb, "HRANDFIELD", "h", "-3", "WITHVALUES").([]any)
	require.Len(t, got, 3)
	for _, p := range got {
		require.Contains(t, []any{[]any{"a", "1"}, []any{"b", "2"}}, p)
	}
	require.Equal(t, "10.6", do(t, rdb, "HINCRBYFLOAT", "h", "f", "10.6"))
}

// TestHRandField: counts, uniqueness and membership.
func TestHRandField(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	fields := map[string]string{}
	for i := range 20 {
		f, v := string(rune('a'+i)), string(rune('A'+i))
		fields[f] = v
		do(t, rdb, "HSET", "h", f, v)
	}
	_, err := rdb.Do(context.Background(), "HRANDFIELD", "missing").Result()
	require.ErrorIs(t, err, redis.Nil)
	require.Equal(t, []any{}, do(t, rdb, "HRANDFIELD", "missing", "3"))
	require.Equal(t, []any{}, do(t, rdb, "HRANDFIELD", "h", "0"))
	require.Contains(t, fields, do(t, rdb, "HRANDFIELD", "h"))
	for _, count := range []int{1, 5, 19, 20, 25} {
		got := do(t, rdb, "HRANDFIELD", "h", count, "WITHVALUES").([]any)
		require.Len(t, got, 2*min(count, 20))
		seen := map[string]bool{}
		for i := 0; i < len(got); i += 2 {
			f := got[i].(string)
			require.Equal(t, fields[f], got[i+1])
			require.False(t, seen[f], "count %d: %s twice", count, f)
			seen[f] = true
		}
	}
	got := do(t, rdb, "HRANDFIELD", "h", "-100").([]any)
	require.Len(t, got, 100)
	seen := map[any]int{}
	for _, f := range got {
		require.Contains(t, fields, f)
		seen[f]++
	}
	require.Greater(t, len(seen), 1)
	require.Less(t, len(seen), 100, "a negative count repeats")
	// Each of a few distinct picks from 20 fields is each field about as often.
	counts := map[any]int{}
	for range 400 {
		for _, f := range do(t, rdb, "HRANDFIELD", "h", "3").([]any) {
			counts[f]++
		}
	}
	require.Len(t, counts, 20)
	for f, n := range counts {
		require.Greater(t, n, 20, f)
	}
}

// TestHashEncoding: past hash-max-listpack-entries or -value a hash takes the hashtable
// encoding and keeps it.
func TestHashEncoding(t *testing.T) {
	ts := testserver.Start(t, func(c *server.Config) {
		c.HashMaxListpackEntries = 3
		c.HashMaxListpackValue = 8
	})
	rdb := ts.Client(t, 2)
	// The index a big hash keeps is TestBigCollectionsIndexed's (no reply shows it).
	big := func(key string) bool {
		enc := do(t, rdb, "OBJECT", "ENCODING", key)
		require.Contains(t, []any{"listpack", "hashtable"}, enc)
		return enc == "hashtable"
	}
	do(t, rdb, "HSET", "h", "a", "1", "b", "2", "c", "3")
	require.False(t, big("h"))
	do(t, rdb, "HSET", "h", "d", "4", "b", "two")
	require.True(t, big("h"))
	require.Equal(t, []any{"a", "1", "b", "two", "c", "3", "d", "4"}, do(t, rdb, "HGETALL", "h"), "in the order the fields came")
	do(t, rdb, "HDEL", "h", "a", "b", "c")
	require.True(t, big("h"), "never back")
	require.Equal(t, []any{"d", "4"}, do(t, rdb, "HGETALL", "h"))
	do(t, rdb, "HINCRBY", "h", "d", "10")
	require.Equal(t, "14", do(t, rdb, "HGET", "h", "d"))
	require.Equal(t, int64(1), do(t, rdb, "HDEL", "h", "d", "d"))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "h"), "an emptied big hash is deleted")

	do(t, rdb, "HSET", "v", "a", "12345678")
	require.False(t, big("v"))
	do(t, rdb, "HSETNX", "v", "a", "123456789")
	require.False(t, big("v"), "HSETNX on an existing field writes nothing")
	do(t, rdb, "HINCRBYFLOAT", "v", "f", "1e10")
	require.True(t, big("v"), "HINCRBYFLOAT wrote 11 bytes")

	do(t, rdb, "HSET", "w", "a", "123456789", "a", "1")
	require.True(t, big("w"), "a long value, even replaced in the same call")
	do(t, rdb, "HINCRBY", "x", "123456789", "1")
	require.True(t, big("x"), "a long field")
}

// TestHashKeepsExpiry: writing a hash keeps its TTL.
func TestHashKeepsExpiry(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "HSET", "h", "a", "1")
	do(t, rdb, "EXPIRE", "h", 100)
	for _, args := range [][]any{
		{"HSET", "h", "b", "2"}, {"HMSET", "h", "c", "3"}, {"HSETNX", "h", "d", "4"}, {"HINCRBY", "h", "a", 1},
		{"HINCRBYFLOAT", "h", "a", "0.5"}, {"HDEL", "h", "b"},
	} {
		do(t, rdb, args...)
		require.Equal(t, int64(100), do(t, rdb, "TTL", "h"), "%v", args)
	}
	ts.Clock.Advance(101 * time.Second)
	require.Equal(t, int64(0), do(t, rdb, "HLEN", "h"))
}

func TestHashErrors(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "HSET", "h", "s", "abc", "n", "9223372036854775807", "f", "1.5", "inf", "inf")
	do(t, rdb, "SET", "str", "x")
	const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"HSET", "h", "a", "1", "b"}, "ERR wrong number of arguments for 'hset' command"},
		{[]any{"HMSET", "h", "a", "1", "b"}, "ERR wrong number of arguments for 'hmset' command"},
		{[]any{"HSET", "h", "a"}, "ERR wrong number of arguments for 'hset' command"},
		{[]any{"HINCRBY", "h", "s", 1}, "ERR hash value is not an integer"},
		{[]any{"HINCRBY", "h", "f", 1}, "ERR hash value is not an integer"},
		{[]any{"HINCRBY", "h", "n", 1}, "ERR increment or decrement would overflow"},
		{[]any{"HINCRBY", "h", "n", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"HINCRBYFLOAT", "h", "s", 1}, "ERR hash value is not a float"},
		{[]any{"HINCRBYFLOAT", "h", "f", "x"}, "ERR value is not a valid float"},
		{[]any{"HINCRBYFLOAT", "h", "f", "inf"}, "ERR value is NaN or Infinity"},
		{[]any{"HINCRBYFLOAT", "h", "inf", "1"}, "ERR increment would produce NaN or Infinity"},
		{[]any{"HRANDFIELD", "h", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"HRANDFIELD", "h", "1", "x"}, "ERR syntax error"},
		{[]any{"HRANDFIELD", "missing", "1", "x"}, "ERR syntax error"},
		{[]any{"HRANDFIELD", "h", "-9223372036854775808"}, "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"},
		{[]any{"HRANDFIELD", "h", "4611686018427387904", "WITHVALUES"}, "ERR value is out of range"},
		{[]any{"HSCAN", "h", "x"}, "ERR invalid cursor"},
		{[]any{"HSCAN", "h", " 0"}, "ERR invalid cursor"},
		{[]any{"HSCAN", "h", "18446744073709551616"}, "ERR invalid cursor"},
		{[]any{"HSCAN", "h", "0", "COUNT", "0"}, "ERR syntax error"},
		{[]any{"HSCAN", "h", "0", "COUNT", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"HSCAN", "h", "0", "MATCH"}, "ERR syntax error"},
		{[]any{"HSCAN", "h", "0", "NOVALUES"}, "ERR syntax error"},
		{[]any{"HGET", "str", "a"}, wrongType},
		{[]any{"HSET", "str", "a", "1"}, wrongType},
		{[]any{"HDEL", "str", "a"}, wrongType},
		{[]any{"HSCAN", "str", "0"}, wrongType},
		{[]any{"HRANDFIELD", "str"}, wrongType},
	} {
		require.Equal(t, tc.want, doErr(t, rdb, tc.args...), "%v", tc.args)
	}
	// What Redis accepts without looking further.
	require.Equal(t, []any{"0", []any{}}, do(t, rdb, "HSCAN", "missing", "0", "COUNT", "x"))
	for _, cursor := range []string{"", "+0", "-1", "18446744073709551615"} {
		require.Equal(t, "0", do(t, rdb, "HSCAN", "h", cursor).([]any)[0], cursor)
	}
	require.Equal(t, "OK", do(t, rdb, "HMSET", "h", "a", "1"))
}
