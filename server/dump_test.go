package server

// DUMP and RESTORE's tests are package datatype's, but for these two: TestObjectIdletime
// moves the keyspace's own clock (what the server's ticker does a tenth of a second later),
// and TestRestoreAndSetBitPersistAndReplicate uses persistence_test.go's and
// replication_test.go's restartable server and replica.

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestObjectIdletime(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	tick := func(d time.Duration) {
		ts.clock.Advance(d)
		ts.ks.SetClock(ts.nowNano()) // what the server's ticker does a tenth of a second later
	}
	do(t, rdb, "SET", "k", "v")
	require.Equal(t, redis.Nil, rdb.Do(context.Background(), "OBJECT", "IDLETIME", "nosuch").Err())
	tick(10 * time.Second)
	require.Equal(t, int64(10), do(t, rdb, "OBJECT", "IDLETIME", "k"))
	for _, read := range [][]any{{"TYPE", "k"}, {"EXISTS", "k"}, {"TTL", "k"}, {"OBJECT", "ENCODING", "k"}} {
		do(t, rdb, read...)
		require.Equal(t, int64(10), do(t, rdb, "OBJECT", "IDLETIME", "k"), "%v notes no access", read)
	}
	do(t, rdb, "DUMP", "k") // a read, as on Redis (redis-server 7.0.15 showed 0 after it)
	require.Equal(t, int64(0), do(t, rdb, "OBJECT", "IDLETIME", "k"))
	tick(2 * time.Second)
	do(t, rdb, "GET", "k")
	require.Equal(t, int64(0), do(t, rdb, "OBJECT", "IDLETIME", "k"))
	tick(3 * time.Second)
	require.Equal(t, int64(1), do(t, rdb, "TOUCH", "k", "nosuch"))
	require.Equal(t, int64(0), do(t, rdb, "OBJECT", "IDLETIME", "k"))
	require.Contains(t, doErr(t, rdb, "OBJECT", "FREQ", "k"), "An LFU maxmemory policy is not selected")
}

// TestRestoreAndSetBitPersistAndReplicate: RESTORE and SETBIT are writes as any other, to
// the log and to replicas.
func TestRestoreAndSetBitPersistAndReplicate(t *testing.T) {
	r := newRestartable(t)
	primary, p := r.start(t)
	replica := startReplica(t, primary)
	do(t, p, "HSET", "h", "f", "v")
	do(t, p, "RESTORE", "h2", 0, dumpOf(t, p, "h"))
	do(t, p, "SETBIT", "b", 12, 1)
	do(t, p, "RESTORE", "gone", 0, dumpOf(t, p, "b"))
	do(t, p, "RESTORE", "gone", 1, dumpOf(t, p, "b"), "REPLACE", "ABSTTL") // deletes it
	sameState(t, primary, replica)
	rr := replica.client(t, 2)
	require.Equal(t, map[any]any{"f": "v"}, toMap(do(t, rr, "HGETALL", "h2")))
	require.Equal(t, int64(1), do(t, rr, "GETBIT", "b", 12))
	require.Equal(t, int64(0), do(t, rr, "EXISTS", "gone"))
	require.NoError(t, primary.Close())

	_, p = r.start(t)
	require.Equal(t, map[any]any{"f": "v"}, toMap(do(t, p, "HGETALL", "h2")))
	require.Equal(t, "\x00\x08", do(t, p, "GET", "b"))
	require.Equal(t, int64(0), do(t, p, "EXISTS", "gone"))
}

// dumpOf returns key's DUMP payload.
func dumpOf(t *testing.T, rdb *redis.Client, key string) string {
	t.Helper()
	p, err := rdb.Dump(context.Background(), key).Result()
	require.NoError(t, err)
	return p
}
