package datatype_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/testserver"
)

// TestZSetSlidingLog runs the sliding-log limiter as clients write it, through go-redis's
// typed calls, in RESP2 and RESP3 (where ZRANGE WITHSCORES is an array of pairs).
func TestZSetSlidingLog(t *testing.T) {
	ts := testserver.Start(t)
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			rdb := ts.Client(t, proto)
			ctx := context.Background()
			key := "log:" + strconv.Itoa(proto)
			const window, limit = 1000, 5
			var model []int64 // the timestamps admitted
			for now := int64(1732512345000); now < 1732512345000+3000; now += 100 {
				member := strconv.FormatInt(now, 10)
				pipe := rdb.TxPipeline()
				pipe.ZRemRangeByScore(ctx, key, "-inf", "("+strconv.FormatInt(now-window, 10))
				card := pipe.ZCard(ctx, key)
				_, err := pipe.Exec(ctx)
				require.NoError(t, err)
				for len(model) > 0 && model[0] < now-window {
					model = model[1:]
				}
				require.Equal(t, int64(len(model)), card.Val())
				if card.Val() < limit {
					require.Equal(t, int64(1), rdb.ZAdd(ctx, key, redis.Z{Score: float64(now), Member: member}).Val())
					model = append(model, now)
				}
				oldest, err := rdb.ZRangeWithScores(ctx, key, 0, 0).Result()
				require.NoError(t, err)
				require.Equal(t, []redis.Z{{Score: float64(model[0]), Member: strconv.FormatInt(model[0], 10)}}, oldest)
			}
			require.Equal(t, int64(len(model)), rdb.ZCard(ctx, key).Val())
		})
	}
}

// TestZSetReplies: the reply shapes go-redis reads in each protocol.
func TestZSetReplies(t *testing.T) {
	ts := testserver.Start(t)
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			rdb := ts.Client(t, proto)
			ctx := context.Background()
			rdb.Del(ctx, "z")
			require.Equal(t, int64(3), rdb.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"}).Val())
			require.Equal(t, 1.5, rdb.ZScore(ctx, "z", "a").Val())
			require.Equal(t, []float64{1.5, 0, 3}, rdb.ZMScore(ctx, "z", "a", "x", "c").Val())
			require.Equal(t, 4.5, rdb.ZIncrBy(ctx, "z", 3, "a").Val())
			require.Equal(t, []string{"b", "c", "a"}, rdb.ZRange(ctx, "z", 0, -1).Val())
			require.Equal(t, []redis.Z{{Score: 4.5, Member: "a"}, {Score: 3, Member: "c"}}, rdb.ZRevRangeWithScores(ctx, "z", 0, 1).Val())
			require.Equal(t, []redis.Z{{Score: 2, Member: "b"}, {Score: 3, Member: "c"}},
				rdb.ZRangeByScoreWithScores(ctx, "z", &redis.ZRangeBy{Min: "2", Max: "(4"}).Val())
			require.Equal(t, int64(2), rdb.ZRevRank(ctx, "z", "b").Val())
			require.Equal(t, []redis.Z{{Score: 2, Member: "b"}}, rdb.ZPopMin(ctx, "z").Val())
			require.Equal(t, []redis.Z{{Score: 4.5, Member: "a"}, {Score: 3, Member: "c"}}, rdb.ZPopMax(ctx, "z", 5).Val())
			require.Equal(t, int64(0), rdb.Exists(ctx, "z").Val(), "emptied, the key is gone")
			_, err := rdb.ZScore(ctx, "z", "a").Result()
			require.ErrorIs(t, err, redis.Nil)
		})
	}
}

// TestZSetErrors: the argument errors, each as Redis words it, checked before the key.
func TestZSetErrors(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "SET", "s", "x")
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"ZADD", "s", "1", "a"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"ZADD", "s", "nan", "a"}, "ERR value is not a valid float"},
		{[]any{"ZADD", "s", "1", "a", "2"}, "ERR syntax error"},
		{[]any{"ZADD", "s", "NX", "XX", "1", "a"}, "ERR XX and NX options at the same time are not compatible"},
		{[]any{"ZADD", "s", "GT", "LT", "1", "a"}, "ERR GT, LT, and/or NX options at the same time are not compatible"},
		{[]any{"ZADD", "s", "INCR", "1", "a", "2", "b"}, "ERR INCR option supports a single increment-element pair"},
		{[]any{"ZINCRBY", "s", "nx", "a"}, "ERR syntax error"},
		{[]any{"ZCOUNT", "s", "(", "[1"}, "ERR min or max is not a float"},
		{[]any{"ZLEXCOUNT", "s", "a", "+"}, "ERR min or max not valid string range item"},
		{[]any{"ZRANGE", "s", "0", "1", "LIMIT", "0", "1"}, "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"},
		{[]any{"ZRANGE", "s", "-", "+", "BYLEX", "WITHSCORES"}, "ERR syntax error, WITHSCORES not supported in combination with BYLEX"},
		{[]any{"ZRANGEBYSCORE", "s", "0", "1", "REV"}, "ERR syntax error"},
		{[]any{"ZPOPMIN", "s", "-1"}, "ERR value is out of range, must be positive"},
		{[]any{"ZSCAN", "s", "x"}, "ERR invalid cursor"},
		{[]any{"ZSCAN", "s", "0", "COUNT", "0"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"ZRANK", "s", "a", "WITHSCORE"}, "ERR wrong number of arguments for 'zrank' command"},
	} {
		require.Equal(t, tc.want, doErr(t, rdb, tc.args...), "%v", tc.args)
	}
	do(t, rdb, "ZADD", "z", "inf", "a")
	require.Equal(t, "ERR resulting score is not a number (NaN)", doErr(t, rdb, "ZINCRBY", "z", "-inf", "a"))
	require.Equal(t, "inf", do(t, rdb, "ZSCORE", "z", "a"), "nothing changed")
}

// TestZSetKeepsExpiry: writes keep the key's time to live; emptying the set deletes it.
func TestZSetKeepsExpiry(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "ZADD", "z", "1", "a", "2", "b")
	do(t, rdb, "PEXPIRE", "z", "5000")
	do(t, rdb, "ZADD", "z", "3", "c")
	do(t, rdb, "ZREM", "z", "a")
	do(t, rdb, "ZREMRANGEBYSCORE", "z", "-inf", "2")
	require.Equal(t, int64(5000), do(t, rdb, "PTTL", "z"))
	require.Equal(t, int64(1), do(t, rdb, "ZREMRANGEBYRANK", "z", "0", "-1"))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "z"))
}

// TestZSetBig: past zset-max-listpack-entries members, or with a member past
// zset-max-listpack-value bytes, the set is marked big (OBJECT ENCODING's skiplist), never
// back; ZSCAN still answers the whole set with cursor 0, MATCH filtering it.
func TestZSetBig(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	ctx := context.Background()
	// The index a big set keeps is TestBigCollectionsIndexed's (no reply shows it).
	big := func(key string) bool {
		require.Equal(t, "zset", do(t, rdb, "TYPE", key))
		enc := do(t, rdb, "OBJECT", "ENCODING", key)
		require.Contains(t, []any{"listpack", "skiplist"}, enc)
		return enc == "skiplist"
	}
	args := []any{"ZADD", "z"}
	for i := range 128 {
		args = append(args, i, "m"+strconv.Itoa(i))
	}
	do(t, rdb, args...)
	require.False(t, big("z"))
	do(t, rdb, "ZADD", "z", "1000", "one-more")
	require.True(t, big("z"))
	do(t, rdb, "ZREM", "z", "one-more", "m0", "m1")
	require.True(t, big("z"), "never back")

	keys, cursor, err := rdb.ZScan(ctx, "z", 0, "m12*", 10).Result()
	require.NoError(t, err)
	require.Equal(t, uint64(0), cursor)
	require.Equal(t, []string{"m12", "12", "m120", "120", "m121", "121", "m122", "122", "m123", "123",
		"m124", "124", "m125", "125", "m126", "126", "m127", "127"}, keys)

	do(t, rdb, "ZADD", "long", "1", strings.Repeat("x", 64))
	require.False(t, big("long"))
	do(t, rdb, "ZADD", "long", "1", strings.Repeat("x", 65))
	require.True(t, big("long"))
}
