package compat

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// collectionState reads every hash, sorted set, list and set writeCollections wrote.
func collectionState(t *testing.T, rdb *redis.Client) []string {
	ctx := context.Background()
	var out []string
	for i := range 50 {
		h, z, l := "h:"+strconv.Itoa(i), "z:"+strconv.Itoa(i), "l:"+strconv.Itoa(i)
		out = append(out,
			fmt.Sprint(rdb.HGetAll(ctx, h).Val()), rdb.ObjectEncoding(ctx, h).Val(),
			fmt.Sprint(rdb.ZRangeWithScores(ctx, z, 0, -1).Val()), rdb.ObjectEncoding(ctx, z).Val(),
			fmt.Sprint(rdb.LRange(ctx, l, 0, -1).Val()))
		s := "s:" + strconv.Itoa(i)
		out = append(out, fmt.Sprint(rdb.SMembers(ctx, s).Val()), rdb.ObjectEncoding(ctx, s).Val(), fmt.Sprint(rdb.TTL(ctx, s).Val() > 0))
	}
	return out
}

// requireTTLs checks the expiries writeCollections set, its writes having begun at start:
// each TTL is at most the one set, and at least that less the time since start.
func requireTTLs(t *testing.T, rdb *redis.Client, start time.Time) {
	ctx := context.Background()
	within := func(key string, set time.Duration) {
		ttl := rdb.TTL(ctx, key).Val()
		require.LessOrEqual(t, ttl, set, key)
		require.GreaterOrEqual(t, ttl, set-time.Since(start)-time.Second, key) // TTL rounds down
	}
	for i := range 50 {
		h, z := "h:"+strconv.Itoa(i), "z:"+strconv.Itoa(i)
		if i%2 == 0 {
			within(h, time.Hour)
			within(z, 2*time.Hour)
		} else {
			require.Equal(t, time.Duration(-1), rdb.TTL(ctx, h).Val(), h)
		}
	}
}

// writeCollections writes hashes, sorted sets, lists and sets of every encoding: small ones,
// and ones past the listpack thresholds; fractional tokens, timestamps, long members; sets
// of integers (intsets), of names, and past set-max-listpack-entries.
func writeCollections(t *testing.T, rdb *redis.Client) {
	ctx := context.Background()
	for i := range 50 {
		p := rdb.Pipeline()
		h, z, l := "h:"+strconv.Itoa(i), "z:"+strconv.Itoa(i), "l:"+strconv.Itoa(i)
		p.HSet(ctx, h, "tokens", 9.5+float64(i)/3, "last_refill", 1732512345123+i)
		p.HIncrByFloat(ctx, h, "tokens", 0.1)
		for j := range i * 3 {
			p.ZAdd(ctx, z, redis.Z{Score: float64(1732512345000 + j*600), Member: 1732512345000 + j*600})
			p.RPush(ctx, l, fmt.Sprintf("job-%d-%d", i, j))
		}
		p.ZAdd(ctx, z, redis.Z{Score: 0.1 * float64(i), Member: fmt.Sprintf("%070d", i)})
		p.LPush(ctx, l, i)
		s := "s:" + strconv.Itoa(i)
		for j := range i * 4 {
			p.SAdd(ctx, s, 1732512345000+j*600)
		}
		if i%3 == 0 {
			p.SAdd(ctx, s, "user:"+strconv.Itoa(i), "user:x")
		}
		if i%2 == 0 {
			p.Expire(ctx, s, 3*time.Hour)
		}
		if i%2 == 0 {
			p.Expire(ctx, h, time.Hour)
			p.Expire(ctx, z, 2*time.Hour)
		}
		_, err := p.Exec(ctx)
		require.NoError(t, err)
	}
}

// TestCollectionsSurviveKill9AndReachReplicas: hashes, sorted sets, lists and sets written
// with appendfsync always are all there after kill -9, and on a replica, as written.
func TestCollectionsSurviveKill9AndReachReplicas(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	primary := launch(t, dir, "--appendfsync", "always")
	replica := replicaOf(t, t.TempDir(), primary)
	p := primary.client()
	start := time.Now()
	writeCollections(t, p)
	want := collectionState(t, p)
	require.Equal(t, "listpack", p.ObjectEncoding(ctx, "h:3").Val())
	require.Equal(t, "skiplist", p.ObjectEncoding(ctx, "z:3").Val(), "a 70-byte member is past zset-max-listpack-value")
	require.Equal(t, "intset", p.ObjectEncoding(ctx, "s:49").Val())
	require.Equal(t, "hashtable", p.ObjectEncoding(ctx, "s:3").Val())
	require.Equal(t, "hashtable", p.ObjectEncoding(ctx, "s:48").Val(), "194 members, past set-max-listpack-entries")
	require.Equal(t, int64(1), p.Do(ctx, "WAIT", 1, 10000).Val())
	r := replica.client()
	defer r.Close()
	require.Equal(t, want, collectionState(t, r))
	requireTTLs(t, r, start)
	p.Close()

	primary.kill9(t)
	primary = launchOn(t, primary.port, dir, "--appendfsync", "always")
	p = primary.client()
	defer p.Close()
	require.Equal(t, want, collectionState(t, p))
	requireTTLs(t, p, start)

	// A big set's index was written by another process, here and on the replica: it finds
	// members by walking until the set's next write indexes it anew. The replica still holds
	// the old primary's copy until it has synced again with the restarted one, which replaces
	// it: it is read once the new primary counts it as caught up (WAIT), not before.
	require.Eventually(t, func() bool {
		return p.Do(ctx, "WAIT", 1, 100).Val() == int64(1) && r.ZCard(ctx, "z:49").Val() == 148
	}, 10*time.Second, 20*time.Millisecond)
	for _, c := range []*redis.Client{p, r} {
		rank, err := c.ZRank(ctx, "z:49", "1732512351000").Result()
		require.NoError(t, err)
		require.Equal(t, int64(11), rank)
		require.Equal(t, 1732512351000.0, c.ZScore(ctx, "z:49", "1732512351000").Val())
		require.Equal(t, []string{"1732512351000", "1732512351600"},
			c.ZRangeByScore(ctx, "z:49", &redis.ZRangeBy{Min: "1732512351000", Max: "(1732512352200"}).Val())
	}
	require.Equal(t, int64(1), p.ZAdd(ctx, "z:49", redis.Z{Score: 1732512351001, Member: "new"}).Val())
	require.Equal(t, int64(12), p.ZRank(ctx, "z:49", "new").Val())
	require.Equal(t, int64(1), p.ZRem(ctx, "z:49", "1732512351000").Val())
	require.Equal(t, int64(11), p.ZRank(ctx, "z:49", "new").Val())
	require.Equal(t, int64(148), p.ZCard(ctx, "z:49").Val())

	// So does a big set's.
	for _, c := range []*redis.Client{p, r} {
		require.True(t, c.SIsMember(ctx, "s:48", "1732512345600").Val())
		require.True(t, c.SIsMember(ctx, "s:48", "user:x").Val())
		require.False(t, c.SIsMember(ctx, "s:48", "user:y").Val())
	}
	require.Equal(t, int64(1), p.SAdd(ctx, "s:48", "user:y").Val())
	require.Equal(t, int64(1), p.SRem(ctx, "s:48", "user:x").Val())
	require.Equal(t, []bool{true, false, true}, p.SMIsMember(ctx, "s:48", "user:y", "user:x", "1732512345600").Val())
	require.Equal(t, int64(194), p.SCard(ctx, "s:48").Val())
}
