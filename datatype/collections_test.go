package datatype_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

// TestListpackParams: Redis 7.0's names, defaults, ziplist aliases and value forms.
func TestListpackParams(t *testing.T) {
	ts := testserver.Start(t, func(c *server.Config) { c.ZsetMaxListpackEntries = 5 })
	rdb := ts.Client(t, 2)
	require.Equal(t, map[any]any{"hash-max-listpack-entries": "512", "hash-max-listpack-value": "64"},
		toMap(do(t, rdb, "CONFIG", "GET", "hash-max-listpack-*")))
	require.Equal(t, []any{"zset-max-ziplist-entries", "5"}, do(t, rdb, "CONFIG", "GET", "zset-max-ziplist-entries"))
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "SET", "hash-max-ziplist-value", "1kb"))
	require.Equal(t, []any{"hash-max-listpack-value", "1024"}, do(t, rdb, "CONFIG", "GET", "hash-max-listpack-value"))
	do(t, rdb, "HSET", "h", "f", strings.Repeat("v", 1024))
	require.Equal(t, "listpack", do(t, rdb, "OBJECT", "ENCODING", "h"), "the new limit holds")
	do(t, rdb, "HSET", "h", "f", strings.Repeat("v", 1025))
	require.Equal(t, "hashtable", do(t, rdb, "OBJECT", "ENCODING", "h"))
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "SET", "list-max-listpack-size", "-3"))
	require.Equal(t, []any{"list-max-ziplist-size", "-3"}, do(t, rdb, "CONFIG", "GET", "list-max-ziplist-size"))
	for _, tc := range []struct{ name, value, err string }{
		{"zset-max-listpack-value", "x", "argument must be a memory value"},
		{"hash-max-listpack-entries", "-1", "argument must be a memory value"},
		{"list-max-listpack-size", "1kb", "argument couldn't be parsed into an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, "ERR CONFIG SET failed (possibly related to argument '"+tc.name+"') - "+tc.err,
				doErr(t, rdb, "CONFIG", "SET", tc.name, tc.value))
		})
	}
}

// TestWatchCollections: a WATCHed hash, sorted set or list written by another client makes
// EXEC run nothing; one written inside the transaction is read back by it.
func TestWatchCollections(t *testing.T) {
	ts := testserver.Start(t)
	ctx := context.Background()
	a, b := ts.Client(t, 2), ts.Client(t, 2)
	for _, tc := range []struct {
		key   string
		write func(rdb *redis.Client) error
	}{
		{"h", func(rdb *redis.Client) error { return rdb.HIncrByFloat(ctx, "h", "tokens", 0.5).Err() }},
		{"z", func(rdb *redis.Client) error { return rdb.ZRemRangeByScore(ctx, "z", "-inf", "(2").Err() }},
		{"l", func(rdb *redis.Client) error { return rdb.RPush(ctx, "l", "job").Err() }},
	} {
		t.Run(tc.key, func(t *testing.T) {
			require.NoError(t, a.HSet(ctx, "h", "tokens", 1).Err())
			require.NoError(t, a.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Err())
			require.NoError(t, a.RPush(ctx, "l", "first").Err())
			err := a.Watch(ctx, func(tx *redis.Tx) error {
				require.NoError(t, tc.write(b))
				_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() })
				return err
			}, tc.key)
			require.ErrorIs(t, err, redis.TxFailedErr)

			var hlen, zcard, llen *redis.IntCmd
			_, err = a.TxPipelined(ctx, func(p redis.Pipeliner) error {
				require.NoError(t, tc.write(b)) // outside the transaction, before EXEC
				p.HSet(ctx, "h", "extra", 1)
				hlen, zcard, llen = p.HLen(ctx, "h"), p.ZCard(ctx, "z"), p.LLen(ctx, "l")
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, int64(2), hlen.Val())
			require.Equal(t, a.ZCard(ctx, "z").Val(), zcard.Val())
			require.Equal(t, a.LLen(ctx, "l").Val(), llen.Val())
			require.NoError(t, a.Del(ctx, "h", "z", "l").Err())
		})
	}
}
