package server

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Big collections go to the store, the redo log and the replicas by the chunks a write
// changed (keyspace.Chunked): after many small writes a restart and a replica hold exactly
// the same collections as the server that took the writes.

// bigKeys are the collections bigWrites fills and changes: a sorted set, a hash and a set,
// each well past its listpack limits.
var bigKeys = []string{"bz", "bh", "bs"}

// slowClient is a client of ts that waits long for a reply: under the race detector on a
// loaded machine a write of a few thousand members takes seconds.
func slowClient(t testing.TB, ts *testServer) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, PoolSize: 4,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// fillBigKeys makes each of bigKeys a collection of n members.
func fillBigKeys(t testing.TB, rdb *redis.Client, n int) {
	ctx := context.Background()
	z, h, s := []any{"ZADD", "bz"}, []any{"HSET", "bh"}, []any{"SADD", "bs"}
	for i := range n {
		m := "m" + strconv.Itoa(i)
		z = append(z, i*10, m)
		h = append(h, m, "v"+strconv.Itoa(i))
		s = append(s, m)
	}
	for _, cmd := range [][]any{z, h, s} {
		require.NoError(t, rdb.Do(ctx, cmd...).Err())
	}
}

// bigWrites sends n random small writes to bigKeys: adds, updates, removals, ranges.
func bigWrites(t testing.TB, rdb *redis.Client, rng *rand.Rand, n, members int) {
	ctx := context.Background()
	m := func() string { return "m" + strconv.Itoa(rng.IntN(members*2)) }
	pipe := rdb.Pipeline()
	for i := range n {
		switch rng.IntN(12) {
		case 0, 1:
			pipe.Do(ctx, "ZADD", "bz", rng.IntN(members*10), m())
		case 2:
			pipe.Do(ctx, "ZREM", "bz", m())
		case 3:
			pipe.Do(ctx, "ZINCRBY", "bz", rng.IntN(100)-50, m())
		case 4:
			lo := rng.IntN(members * 10)
			pipe.Do(ctx, "ZREMRANGEBYSCORE", "bz", lo, lo+15)
		case 5, 6:
			pipe.Do(ctx, "HSET", "bh", m(), strconv.Itoa(rng.IntN(1e6)))
		case 7:
			pipe.Do(ctx, "HDEL", "bh", m())
		case 8:
			pipe.Do(ctx, "HINCRBY", "bh", "n"+strconv.Itoa(rng.IntN(50)), 3)
		case 9:
			pipe.Do(ctx, "SADD", "bs", m())
		case 10:
			pipe.Do(ctx, "SREM", "bs", m())
		default:
			pipe.Do(ctx, "ZADD", "bz", "GT", rng.IntN(members*10), m())
		}
		if i%200 == 199 || i == n-1 {
			_, err := pipe.Exec(ctx)
			require.NoError(t, err)
		}
	}
}

// bigState reads bigKeys back whole: the sorted set with its scores in order, the hash's
// and the set's members sorted.
func bigState(t testing.TB, rdb *redis.Client) map[string][]string {
	ctx := context.Background()
	z, err := rdb.Do(ctx, "ZRANGE", "bz", 0, -1, "WITHSCORES").StringSlice()
	require.NoError(t, err)
	h, err := rdb.Do(ctx, "HGETALL", "bh").StringSlice()
	require.NoError(t, err)
	pairs := make([]string, 0, len(h)/2)
	for i := 0; i+1 < len(h); i += 2 {
		pairs = append(pairs, h[i]+"="+h[i+1])
	}
	slices.Sort(pairs)
	s, err := rdb.Do(ctx, "SMEMBERS", "bs").StringSlice()
	require.NoError(t, err)
	slices.Sort(s)
	return map[string][]string{"bz": z, "bh": pairs, "bs": s}
}

func TestBigCollectionsSurviveRestart(t *testing.T) {
	for _, fsync := range []string{"everysec", "always", "no"} {
		t.Run(fsync, func(t *testing.T) {
			r := newRestartable(t)
			durable := func(c *Config) { c.AppendOnly, c.AppendFsync = true, fsync }
			ts, _ := r.start(t, durable)
			rdb := slowClient(t, ts)
			rng := rand.New(rand.NewPCG(1, 2))
			fillBigKeys(t, rdb, 3000)
			bigWrites(t, rdb, rng, 3000, 3000)
			want := bigState(t, rdb)
			require.Greater(t, len(want["bz"]), 2*1000)
			require.NoError(t, ts.Close())

			ts, _ = r.start(t, durable)
			rdb = slowClient(t, ts)
			require.Equal(t, want, bigState(t, rdb), "after a restart")
			// Writes to the collections as loaded, then another restart.
			bigWrites(t, rdb, rng, 3000, 3000)
			want = bigState(t, rdb)
			require.NoError(t, ts.Close())
			ts, _ = r.start(t, durable)
			rdb = slowClient(t, ts)
			require.Equal(t, want, bigState(t, rdb), "after the second restart")
			require.Equal(t, "skiplist", do(t, rdb, "OBJECT", "ENCODING", "bz"))
		})
	}
}

func TestBigCollectionsReplicate(t *testing.T) {
	primary := startServer(t)
	prdb := slowClient(t, primary)
	fillBigKeys(t, prdb, 3000)
	replica := startReplica(t, primary)
	rrdb := slowClient(t, replica)
	rng := rand.New(rand.NewPCG(3, 4))
	bigWrites(t, prdb, rng, 3000, 3000)
	// A replica that connects after the writes takes a full copy, then the stream.
	late := startReplica(t, primary)
	lrdb := slowClient(t, late)
	bigWrites(t, prdb, rng, 3000, 3000)
	waitReplicas(t, prdb, 2)
	want := bigState(t, prdb)
	require.Equal(t, want, bigState(t, rrdb), "the replica that took the writes as they came")
	require.Equal(t, want, bigState(t, lrdb), "the replica that came later")
	// The replica keeps its copy in chunks too: it changes it in place, and so on.
	require.Equal(t, "skiplist", do(t, rrdb, "OBJECT", "ENCODING", "bz"))
}

// waitReplicas waits until n replicas acknowledged every write so far.
func waitReplicas(t testing.TB, rdb *redis.Client, n int) {
	got, err := rdb.Do(context.Background(), "WAIT", n, 10000).Int()
	require.NoError(t, err)
	require.Equal(t, n, got, "replicas acknowledged")
}
