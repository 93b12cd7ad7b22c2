package datatype_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/internal/testserver"
)

func TestListQueue(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	ctx := context.Background()
	long := strings.Repeat("x", 70000)
	require.Equal(t, int64(4), rdb.RPush(ctx, "q", "a", "12", long, "-0").Val())
	require.Equal(t, int64(5), rdb.LPush(ctx, "q", "first").Val())
	require.Equal(t, []string{"first", "a", "12", long, "-0"}, rdb.LRange(ctx, "q", 0, -1).Val())
	require.Equal(t, "first", rdb.LPop(ctx, "q").Val())
	require.Equal(t, []string{"-0", long}, rdb.RPopCount(ctx, "q", 2).Val())
	require.Equal(t, []string{"a", "12"}, rdb.LPopCount(ctx, "q", 10).Val())
	require.Equal(t, int64(0), rdb.Exists(ctx, "q").Val(), "an emptied list is deleted")
	require.Equal(t, int64(0), rdb.LPushX(ctx, "q", "a").Val())
	require.Equal(t, int64(0), rdb.Exists(ctx, "q").Val())
	_, err := rdb.LPop(ctx, "q").Result()
	require.ErrorIs(t, err, redis.Nil)
	rdb.RPush(ctx, "q", "x")
	require.Equal(t, "list", rdb.Type(ctx, "q").Val())
}

// TestListNulls: a missing key's replies, in both protocols.
func TestListNulls(t *testing.T) {
	ts := testserver.Start(t)
	for _, tc := range []struct{ req, resp2, resp3 string }{
		{"LPOP nx 2", "*-1", "_"},
		{"RPOP nx", "$-1", "_"},
		{"LINDEX nx 0", "$-1", "_"},
		{"LPOS nx a", "$-1", "_"},
		{"LPOS nx a COUNT 0", "*0", "*0"},
		{"LMOVE nx k LEFT RIGHT", "$-1", "_"},
		{"LRANGE nx 0 -1", "*0", "*0"},
	} {
		for proto, want := range map[string]string{"2": tc.resp2, "3": tc.resp3} {
			c := ts.Raw(t)
			c.Send(t, "HELLO "+proto+"\r\n")
			c.Reply(t)
			c.Send(t, tc.req+"\r\n")
			require.Equal(t, want, c.Line(t), "%s in RESP%s", tc.req, proto)
		}
	}
}

// TestListKeepsExpiry: writes keep the key's expiry; an emptied list goes with it.
func TestListKeepsExpiry(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	ctx := context.Background()
	rdb.RPush(ctx, "l", "a", "b", "c", "d")
	rdb.RPush(ctx, "other", "z")
	rdb.Expire(ctx, "l", 100*time.Second)
	rdb.Expire(ctx, "other", 50*time.Second)
	for _, args := range [][]any{
		{"RPUSH", "l", "e"}, {"LPOP", "l"}, {"RPOP", "l", "1"}, {"LSET", "l", "0", "x"},
		{"LINSERT", "l", "AFTER", "x", "y"}, {"LREM", "l", "0", "y"}, {"LTRIM", "l", "0", "5"},
		{"LMOVE", "l", "other", "LEFT", "LEFT"}, {"LMOVE", "l", "l", "LEFT", "RIGHT"},
	} {
		do(t, rdb, args...)
		require.Equal(t, 100*time.Second, rdb.TTL(ctx, "l").Val(), "%v", args)
		require.Equal(t, 50*time.Second, rdb.TTL(ctx, "other").Val(), "%v", args)
	}
	require.Equal(t, []string{"x", "z"}, rdb.LRange(ctx, "other", 0, -1).Val())
	require.Equal(t, []string{"d", "c"}, rdb.LRange(ctx, "l", 0, -1).Val())
	require.Equal(t, "c", rdb.RPopLPush(ctx, "l", "new").Val())
	require.Equal(t, "d", rdb.RPopLPush(ctx, "l", "new").Val())
	require.Equal(t, []string{"d", "c"}, rdb.LRange(ctx, "new", 0, -1).Val())
	require.Equal(t, int64(0), rdb.Exists(ctx, "l").Val())
	require.Equal(t, time.Duration(-1), rdb.TTL(ctx, "new").Val(), "a list LMOVE creates has no expiry")
	ts.Clock.Advance(60 * time.Second)
	require.Equal(t, int64(0), rdb.LLen(ctx, "other").Val())
	require.Equal(t, int64(1), rdb.RPush(ctx, "other", "a").Val(), "an expired list is a new one")
}

func TestListErrors(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "RPUSH", "l", "a", "b")
	do(t, rdb, "SET", "s", "x")
	const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"LPOP", "l", -1}, "ERR value is out of range, must be positive"},
		{[]any{"RPOP", "nx", "x"}, "ERR value is out of range, must be positive"},
		{[]any{"LPOP", "l", 1, 2}, "ERR wrong number of arguments for 'lpop' command"},
		{[]any{"LSET", "nx", 0, "x"}, "ERR no such key"},
		{[]any{"LSET", "l", 2, "x"}, "ERR index out of range"},
		{[]any{"LSET", "l", "x", "x"}, "ERR value is not an integer or out of range"},
		{[]any{"LPOS", "l", "a", "RANK", 0}, "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"},
		{[]any{"LPOS", "l", "a", "COUNT", -1}, "ERR COUNT can't be negative"},
		{[]any{"LPOS", "l", "a", "MAXLEN", "x"}, "ERR MAXLEN can't be negative"},
		{[]any{"LPOS", "l", "a", "RANK"}, "ERR syntax error"},
		{[]any{"LINSERT", "l", "MIDDLE", "a", "b"}, "ERR syntax error"},
		{[]any{"LMOVE", "l", "l", "UP", "LEFT"}, "ERR syntax error"},
		{[]any{"LRANGE", "l", 0, "x"}, "ERR value is not an integer or out of range"},
		{[]any{"LPUSHX", "s", "a"}, wrongType},
		{[]any{"LMOVE", "l", "s", "LEFT", "LEFT"}, wrongType},
		{[]any{"RPOPLPUSH", "s", "l"}, wrongType},
		{[]any{"LPOP", "s", 0}, wrongType},
	} {
		require.Equal(t, tc.want, doErr(t, rdb, tc.args...), "%v", tc.args)
	}
	require.Equal(t, []string{"a", "b"}, rdb.LRange(context.Background(), "l", 0, -1).Val(), "errors changed nothing")
}

// TestLMoveConcurrent moves elements between lists on several shards in both directions
// at once: the locks of both keys are taken in order (no deadlock), and nothing is lost.
func TestLMoveConcurrent(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	ctx := context.Background()
	const lists, each = 8, 50
	for i := range lists {
		for j := range each {
			rdb.RPush(ctx, "l"+strconv.Itoa(i), j)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: ts.Addr, Protocol: 2})
			defer c.Close()
			for n := range 300 {
				src, dst := "l"+strconv.Itoa((g+n)%lists), "l"+strconv.Itoa((g*3+n*5)%lists)
				c.LMove(ctx, src, dst, "LEFT", "RIGHT")
			}
		}()
	}
	wg.Wait()
	total := int64(0)
	for i := range lists {
		total += rdb.LLen(ctx, "l"+strconv.Itoa(i)).Val()
	}
	require.Equal(t, int64(lists*each), total)
}
