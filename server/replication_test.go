package server

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/keyspace"
)

// contents is every key the keyspace holds at now, with its state.
func contents(ks *keyspace.Keyspace, now int64) map[string]keyspace.Value {
	m := make(map[string]keyspace.Value)
	var cursor uint64
	for {
		cursor = ks.Scan(cursor, 1000, now, func(key []byte, v keyspace.Value) {
			v.Bytes = bytes.Clone(v.Bytes)
			m[string(key)] = v
		})
		if cursor == 0 {
			return m
		}
	}
}

// startReplica starts a server replicating primary, on primary's clock.
func startReplica(t testing.TB, primary *testServer, configure ...func(*Config)) *testServer {
	t.Helper()
	host, port, _ := strings.Cut(primary.addr, ":")
	return startServer(t, append([]func(*Config){func(c *Config) {
		c.ReplicaOf = host + " " + port
		c.Now = primary.clock.Now
	}}, configure...)...)
}

// sameState waits until the replica holds what the primary holds.
func sameState(t *testing.T, primary, replica *testServer) {
	t.Helper()
	var want, got map[string]keyspace.Value
	ok := assertEventually(func() bool {
		now := primary.nowNano()
		want, got = contents(primary.ks, now), contents(replica.ks, now)
		return len(want) == len(got) && equalContents(want, got)
	}, 10*time.Second)
	require.True(t, ok, "the replica holds what the primary holds:\nprimary %d keys, replica %d keys", len(want), len(got))
	require.Equal(t, want, got)
}

func equalContents(a, b map[string]keyspace.Value) bool {
	for k, v := range a {
		w, ok := b[k]
		if !ok || w.Kind != v.Kind || w.Expire != v.Expire || w.Num != v.Num || w.Num2 != v.Num2 || !bytes.Equal(w.Bytes, v.Bytes) {
			return false
		}
	}
	return true
}

func assertEventually(cond func() bool, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// everyKind writes a key of every kind of state, some with an expiry.
func everyKind(t *testing.T, rdb *redis.Client, suffix string) {
	t.Helper()
	ctx := context.Background()
	for _, cmd := range [][]any{
		{"SET", "str" + suffix, "v"},
		{"SET", "ttl" + suffix, "v", "PX", "60000"},
		{"INCR", "counter" + suffix},
		{"CL.THROTTLE", "cell" + suffix, 5, 10, 60},
		{"GCRA", "gcra" + suffix, 5, 10, 60},
		{"THROTTLE", "throttle" + suffix, 5, 10, "1m"},
		{"TOKENBUCKET", "tb" + suffix, 10, 1, "1s"},
		{"LEAKYBUCKET", "lb" + suffix, 10, 1, "1s"},
		{"SLIDE", "slide" + suffix, 10, "1m"},
		{"SLIDE", "approx" + suffix, 10, "1m", "APPROX"},
		{"WINDOW", "window" + suffix, 10, "1m"},
		{"WINDOW", "calendar" + suffix, 10, "1mo", "TZ", "Europe/Berlin"},
		{"CONCURRENCY.ACQUIRE", "conc" + suffix, 3, "30s", "lease"},
		{"WINDOW", "blocked" + suffix, 1, "1m"},
		{"WINDOW", "blocked" + suffix, 1, "1m", "BLOCK", "1h"}, // denied: the key's penalty box
	} {
		require.NoError(t, rdb.Do(ctx, cmd...).Err(), "%v", cmd)
	}
}

func TestReplicationCopiesAndStreams(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t)
	p := primary.client(t, 2)
	everyKind(t, p, "-before")

	replica := startReplica(t, primary)
	r := replica.client(t, 2)
	sameState(t, primary, replica)

	everyKind(t, p, "-after")
	everyKind(t, p, "-before") // changes to keys the full copy brought
	require.NoError(t, p.Del(ctx, "str-before").Err())
	sameState(t, primary, replica)

	// The replica answers reads and peeks from its copy, as the primary would.
	require.Equal(t, "v", r.Get(ctx, "str-after").Val())
	for _, cmd := range [][]any{
		{"THROTTLE", "throttle-after", 5, 10, "1m", "PEEK"},
		{"SLIDE", "slide-after", 10, "1m", "COST", 0},
		{"CL.THROTTLE", "cell-after", 5, 10, 60, 0},
		{"ALLOF", "THROTTLE", "throttle-after", 5, 10, "1m", "PEEK", "WINDOW", "window-after", 10, "1m", "COST", 0},
		{"WINDOW", "blocked-after", 5, "1m", "PEEK"}, // in its penalty box on the replica too
	} {
		want, err := p.Do(ctx, cmd...).Result()
		require.NoError(t, err, "%v", cmd)
		got, err := r.Do(ctx, cmd...).Result()
		require.NoError(t, err, "%v", cmd)
		require.Equal(t, want, got, "%v", cmd)
	}
	require.Equal(t, []any{int64(1), int64(5), int64(0), int64(3600000), int64(3600000)},
		r.Do(ctx, "WINDOW", "blocked-after", 5, "1m", "PEEK").Val(), "the block replicated")
	// ... and refuses what would change state.
	for _, cmd := range [][]any{
		{"SET", "x", "1"},
		{"DEL", "str-after"},
		{"FLUSHALL"},
		{"THROTTLE", "throttle-after", 5, 10, "1m"},
		{"CL.THROTTLE", "cell-after", 5, 10, 60},
		{"GCRA", "gcra-after", 5, 10, 60},
		{"ALLOF", "THROTTLE", "throttle-after", 5, 10, "1m", "PEEK", "WINDOW", "window-after", 10, "1m"},
		{"CONCURRENCY.RELEASE", "conc-after", "lease"},
	} {
		require.EqualError(t, r.Do(ctx, cmd...).Err(), "READONLY You can't write against a read only replica.", "%v", cmd)
	}
	sameState(t, primary, replica)

	// FLUSHALL and expiry reach the replica too.
	primary.clock.Advance(61 * time.Second)
	require.NoError(t, p.Do(ctx, "SET", "late", "1").Err())
	sameState(t, primary, replica)
	require.Zero(t, r.Exists(ctx, "ttl-after").Val())
	require.NoError(t, p.FlushAll(ctx).Err())
	require.NoError(t, p.Do(ctx, "SET", "after-flush", "1").Err())
	sameState(t, primary, replica)
	require.Equal(t, int64(1), r.DBSize(ctx).Val())

	// What Redis tools read.
	pi, ri := p.Info(ctx, "replication").Val(), r.Info(ctx, "replication").Val()
	require.Contains(t, pi, "role:master\r\n")
	require.Contains(t, pi, "connected_slaves:1\r\n")
	require.Contains(t, pi, ",state=online,")
	require.Contains(t, ri, "role:slave\r\n")
	require.Contains(t, ri, "master_link_status:up\r\n")
	require.Equal(t, infoField(pi, "master_replid"), infoField(ri, "master_replid"))
	role := r.Do(ctx, "ROLE").Val().([]any)
	require.Equal(t, "slave", role[0])
	require.Equal(t, "connected", role[3])
	n, err := p.Do(ctx, "WAIT", 1, 5000).Int()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, infoField(p.Info(ctx, "replication").Val(), "master_repl_offset"), infoField(r.Info(ctx, "replication").Val(), "master_repl_offset"))
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// TestReplicationPartialResync: a replica whose link drops continues from the backlog, and
// a promoted replica is continued from by the other one.
func TestReplicationPartialResync(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t)
	p := primary.client(t, 2)
	one := startReplica(t, primary)
	two := startReplica(t, primary)
	everyKind(t, p, "")
	sameState(t, primary, one)
	sameState(t, primary, two)

	require.True(t, one.repl.DropLink())
	for i := range 100 {
		require.NoError(t, p.Do(ctx, "THROTTLE", "during", 1000, 10, "1m").Err(), i)
	}
	sameState(t, primary, one)
	stats := p.Info(ctx, "stats").Val()
	require.Equal(t, "2", infoField(stats, "sync_full"))
	require.Equal(t, "1", infoField(stats, "sync_partial_ok"))

	// Failover: one becomes the primary, two follows it and continues.
	o, w := one.client(t, 2), two.client(t, 2)
	sameState(t, primary, two)
	require.NoError(t, o.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	host, port, _ := strings.Cut(one.addr, ":")
	require.NoError(t, w.Do(ctx, "REPLICAOF", host, port).Err())
	require.NoError(t, o.Do(ctx, "THROTTLE", "after", 10, 10, "1m").Err())
	sameState(t, one, two)
	oi := o.Info(ctx, "replication").Val()
	require.Contains(t, oi, "role:master\r\n")
	require.Equal(t, infoField(p.Info(ctx, "replication").Val(), "master_replid"), infoField(oi, "master_replid2"))
	stats = o.Info(ctx, "stats").Val()
	require.Equal(t, "0", infoField(stats, "sync_full"), "two continued from one's backlog")
	require.Equal(t, "1", infoField(stats, "sync_partial_ok"))
}

// TestReplicaRestartContinues: a replica with appendonly yes restarted with its directory
// continues from the primary's backlog, without a full copy.
func TestReplicaRestartContinues(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t)
	p := primary.client(t, 2)
	everyKind(t, p, "")
	dir := t.TempDir()
	inDir := func(c *Config) { c.Dir = dir }
	replica := startReplica(t, primary, inDir)
	sameState(t, primary, replica)
	require.NoError(t, p.Do(ctx, "THROTTLE", "hot", 100, 10, "1m").Err())
	sameState(t, primary, replica)
	require.NoError(t, replica.Close())

	for i := range 50 {
		require.NoError(t, p.Do(ctx, "THROTTLE", "while-down", 100, 10, "1m").Err(), i)
	}
	replica = startReplica(t, primary, inDir)
	sameState(t, primary, replica)
	stats := p.Info(ctx, "stats").Val()
	require.Equal(t, "1", infoField(stats, "sync_full"))
	require.Equal(t, "1", infoField(stats, "sync_partial_ok"))
}

// TestDemotedPrimaryDropsWhatTheNewOneLacks: a primary that took writes after its replica
// was promoted, then follows it, ends with the new primary's state: a full copy, not a
// continuation that would keep the writes nobody else saw.
func TestDemotedPrimaryDropsWhatTheNewOneLacks(t *testing.T) {
	ctx := context.Background()
	old := startServer(t)
	o := old.client(t, 2)
	replica := startReplica(t, old)
	r := replica.client(t, 2)
	require.NoError(t, o.Do(ctx, "THROTTLE", "shared", 10, 10, "1m").Err())
	sameState(t, old, replica)
	require.NoError(t, r.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	require.NoError(t, o.Do(ctx, "THROTTLE", "split-brain", 10, 10, "1m").Err())
	host, port, _ := strings.Cut(replica.addr, ":")
	require.NoError(t, o.Do(ctx, "REPLICAOF", host, port).Err())
	sameState(t, replica, old)
	require.Zero(t, o.Exists(ctx, "split-brain").Val())
	require.Equal(t, "1", infoField(r.Info(ctx, "stats").Val(), "sync_full"))
}

// TestReplicaAuthAndAnnounce: a replica authenticates to a primary with requirepass
// (masteruser, masterauth) and is shown as it announces itself; min-replicas-to-write
// refuses writes while no replica is current.
func TestReplicaAuthAndAnnounce(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t, func(c *Config) { c.RequirePass = "s3cret" })
	p := redis.NewClient(&redis.Options{Addr: primary.addr, Password: "s3cret"})
	defer p.Close()
	require.NoError(t, p.ConfigSet(ctx, "min-replicas-to-write", "1").Err())
	require.EqualError(t, p.Set(ctx, "k", "v", 0).Err(), "NOREPLICAS Not enough good replicas to write.")

	wrong := startReplica(t, primary, func(c *Config) { c.MasterAuth = "nope" })
	time.Sleep(200 * time.Millisecond)
	require.Contains(t, wrong.client(t, 2).Info(ctx, "replication").Val(), "master_link_status:down")

	replica := startReplica(t, primary, func(c *Config) {
		c.MasterUser, c.MasterAuth = "default", "s3cret"
		c.ReplicaAnnounceIP, c.ReplicaAnnouncePort = "10.1.2.3", 16379
	})
	require.True(t, assertEventually(func() bool {
		return strings.Contains(p.Info(ctx, "replication").Val(), "slave0:ip=10.1.2.3,port=16379,state=online,")
	}, 10*time.Second), p.Info(ctx, "replication").Val())
	require.NoError(t, p.Set(ctx, "k", "v", 0).Err())
	sameState(t, primary, replica)
}
