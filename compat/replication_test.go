package compat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// configFile writes a throttled config file with lines beside the data directory dir (which
// must hold throttled's store alone), for CONFIG REWRITE to write back.
func configFile(t *testing.T, dir string, lines ...string) string {
	t.Helper()
	path := dir + ".conf"
	require.NoError(t, os.WriteFile(path, []byte("# written by the test\n"+strings.Join(lines, "\n")+"\n"), 0o644))
	return path
}

// infoField returns one field of INFO section from rdb, "" when absent or unreachable.
func infoField(rdb *redis.Client, section, field string) string {
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "waited %v for: %s", within, what)
		time.Sleep(20 * time.Millisecond)
	}
}

// replicaOf starts a throttled replica of primary in dir, from a config file there.
func replicaOf(t *testing.T, dir string, primary *process) *process {
	return launch(t, dir, configFile(t, dir, "replicaof 127.0.0.1 "+strconv.Itoa(primary.port)))
}

// TestReplicasOfTheBinary: a primary and two replicas: every kind of state reaches both,
// writes to a replica get READONLY, a replica whose link is cut continues with a partial
// resync, and so does a replica restarted with its directory.
func TestReplicasOfTheBinary(t *testing.T) {
	ctx := context.Background()
	primary := launch(t, t.TempDir())
	p := primary.client()
	defer p.Close()
	for i := range crashKeys {
		require.NoError(t, p.Do(ctx, "THROTTLE", crashKey(i), crashLimit-1, 1, "1d", "COST", i%7+1).Err())
	}
	for _, cmd := range [][]any{
		{"SET", "s", "v", "PX", 100000}, {"CL.THROTTLE", "cell", 5, 10, 60}, {"GCRA", "gcra", 5, 10, 60},
		{"TOKENBUCKET", "tb", 10, 1, "1s"}, {"LEAKYBUCKET", "lb", 10, 1, "1s"}, {"SLIDE", "sl", 10, "1m"},
		{"SLIDE", "sa", 10, "1m", "APPROX"}, {"WINDOW", "w", 10, "1m"}, {"CONCURRENCY.ACQUIRE", "c", 3, "30s", "id"},
	} {
		require.NoError(t, p.Do(ctx, cmd...).Err(), "%v", cmd)
	}
	dirs := []string{t.TempDir(), t.TempDir()}
	replicas := []*process{replicaOf(t, dirs[0], primary), replicaOf(t, dirs[1], primary)}
	n, err := p.Do(ctx, "WAIT", 2, 10000).Int()
	require.NoError(t, err)
	require.Equal(t, 2, n)
	want := used(t, p)
	for _, r := range replicas {
		rdb := r.client()
		require.Equal(t, want, used(t, rdb), "the COST 0 probes answer on a replica as on the primary")
		for _, key := range []string{"s", "cell", "gcra", "tb", "lb", "sl", "sa", "w", "c"} {
			require.Equal(t, p.Type(ctx, key).Val(), rdb.Type(ctx, key).Val(), key)
			require.InDelta(t, p.PTTL(ctx, key).Val(), rdb.PTTL(ctx, key).Val(), float64(time.Second), key)
		}
		err := rdb.Do(ctx, "THROTTLE", crashKey(0), crashLimit-1, 1, "1d").Err()
		require.EqualError(t, err, "READONLY You can't write against a read only replica.")
		require.Contains(t, r.cliInput(t, "", "SET", "x", "1"), "READONLY")
		rdb.Close()
	}

	// The link cut: the replica reconnects and continues from the backlog.
	r0 := replicas[0].client()
	defer r0.Close()
	require.Equal(t, int64(1), r0.Do(ctx, "CLIENT", "KILL", "TYPE", "master").Val())
	for i := range 50 {
		require.NoError(t, p.Do(ctx, "THROTTLE", crashKey(i), crashLimit-1, 1, "1d").Err())
	}
	waitFor(t, 10*time.Second, "the replica is back up", func() bool { return infoField(r0, "replication", "master_link_status") == "up" })
	require.Equal(t, int64(2), p.Do(ctx, "WAIT", 2, 10000).Val())
	require.Equal(t, used(t, p), used(t, r0))
	require.Equal(t, "2", infoField(p, "stats", "sync_full"))
	require.Equal(t, "1", infoField(p, "stats", "sync_partial_ok"))

	// A restart with its directory: the replica continues too.
	replicas[1].stop(t)
	for i := range 50 {
		require.NoError(t, p.Do(ctx, "THROTTLE", crashKey(i), crashLimit-1, 1, "1d").Err())
	}
	replicas[1] = launch(t, dirs[1], dirs[1]+".conf")
	r1 := replicas[1].client()
	defer r1.Close()
	waitFor(t, 10*time.Second, "the restarted replica is up", func() bool { return infoField(r1, "replication", "master_link_status") == "up" })
	require.Equal(t, int64(2), p.Do(ctx, "WAIT", 2, 10000).Val())
	require.Equal(t, used(t, p), used(t, r1))
	require.Equal(t, "2", infoField(p, "stats", "sync_full"), "the restarted replica took no full copy")
	require.Equal(t, "2", infoField(p, "stats", "sync_partial_ok"))
}

// startSentinel starts a Redis Sentinel watching the primary as "mymaster" and returns its port.
func startSentinel(t *testing.T, primaryPort int) int {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	conf := filepath.Join(dir, "sentinel.conf")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`port %d
bind 127.0.0.1
dir %s
sentinel monitor mymaster 127.0.0.1 %d 2
sentinel down-after-milliseconds mymaster 1000
sentinel failover-timeout mymaster 10000
sentinel parallel-syncs mymaster 1
`, port, dir, primaryPort)), 0o644))
	cmd := exec.Command("redis-server", conf, "--sentinel")
	log := &lockedWriter{w: new(bytes.Buffer)}
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("sentinel %d:\n%s", port, log.String())
		}
	})
	s := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer s.Close()
	waitFor(t, 10*time.Second, "the sentinel answers", func() bool { return s.Ping(context.Background()).Err() == nil })
	return port
}

// TestSentinelFailover is the drill: three Sentinels (quorum 2) watch a primary and two
// replicas; under load the primary is killed with kill -9; Sentinel promotes a replica, the
// other follows it, the old primary started again becomes its replica, and a go-redis
// failover client keeps getting decisions. It reports the time without a primary and the
// admissions the old primary acknowledged that the new one does not know.
func TestSentinelFailover(t *testing.T) {
	ctx := context.Background()
	primaryDir := t.TempDir()
	primaryConf := configFile(t, primaryDir, "appendfsync everysec")
	primary := launch(t, primaryDir, primaryConf)
	dirs := []string{t.TempDir(), t.TempDir()}
	replicas := []*process{replicaOf(t, dirs[0], primary), replicaOf(t, dirs[1], primary)}
	p := primary.client()
	defer p.Close()
	waitFor(t, 10*time.Second, "both replicas online", func() bool {
		return strings.Count(p.Info(ctx, "replication").Val(), ",state=online,") == 2
	})
	var sentinels []string
	for range 3 {
		sentinels = append(sentinels, fmt.Sprintf("127.0.0.1:%d", startSentinel(t, primary.port)))
	}
	for _, addr := range sentinels {
		s := redis.NewSentinelClient(&redis.Options{Addr: addr})
		defer s.Close()
		waitFor(t, 30*time.Second, addr+" knows both replicas and the other Sentinels", func() bool {
			r, err1 := s.Replicas(ctx, "mymaster").Result()
			o, err2 := s.Sentinels(ctx, "mymaster").Result()
			return err1 == nil && err2 == nil && len(r) == 2 && len(o) == 2
		})
	}

	// A key drained on the primary, and acknowledged by both replicas.
	for i := 0; ; i++ {
		d, err := p.Do(ctx, "THROTTLE", "drained", 4, 1, "1h").Slice()
		require.NoError(t, err)
		if d[0].(int64) == 1 {
			break
		}
		require.Less(t, i, 10)
	}
	require.Equal(t, int64(2), p.Do(ctx, "WAIT", 2, 5000).Val())

	// Load, then kill -9 while it runs.
	a := &acks{}
	loadCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { load(loadCtx, p, a); close(done) }()
	time.Sleep(time.Second)
	primary.kill9(t)
	killed := time.Now()
	<-done
	cancel()

	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: sentinels,
		DialTimeout: 200 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1})
	defer fc.Close()
	var served time.Time
	waitFor(t, 60*time.Second, "the failover client gets a decision from a new primary", func() bool {
		err := fc.Do(ctx, "THROTTLE", "after-failover", 100, 1, "1h").Err()
		served = time.Now()
		return err == nil
	})
	s := redis.NewSentinelClient(&redis.Options{Addr: sentinels[0]})
	defer s.Close()
	addr, err := s.GetMasterAddrByName(ctx, "mymaster").Result()
	require.NoError(t, err)
	var promoted, other *process
	for i, r := range replicas {
		if addr[1] == strconv.Itoa(r.port) {
			promoted, other = r, replicas[1-i]
		}
	}
	require.NotNil(t, promoted, "Sentinel promoted one of the replicas: %v", addr)
	np := promoted.client()
	defer np.Close()

	// What the replication lag cost: admissions acknowledged that the new primary lacks.
	after := used(t, np)
	lost, total := int64(0), 0
	var window time.Duration
	for k := range crashKeys {
		acked := int64(len(a.at[k]))
		total += len(a.at[k])
		if miss := acked - after[k]; miss > 0 {
			lost += miss
			window = max(window, killed.Sub(a.at[k][acked-miss]))
		}
	}
	t.Logf("failover: %v without a primary (kill -9 to the first decision through Sentinel); %d of %d acknowledged admissions unknown to the new primary, the oldest from %v before the kill",
		served.Sub(killed).Round(time.Millisecond), lost, total, window)
	require.Greater(t, total, 100, "the load ran")
	require.LessOrEqual(t, window, time.Second, "only the last moments before the kill may be lost")
	d, err := np.Do(ctx, "THROTTLE", "drained", 4, 1, "1h", "PEEK").Slice()
	require.NoError(t, err)
	require.Equal(t, int64(1), d[0], "a key drained on the old primary is still limited on the new one")

	// The old primary, started again, becomes a replica of the primary Sentinel names, and so
	// does the other replica. On a loaded machine Sentinel may fail over a second time (the
	// new primary slow to answer its PINGs for down-after-milliseconds): the primary is the
	// one Sentinel names now, not necessarily the first promoted.
	old := launchOn(t, primary.port, primaryDir, primaryConf)
	op := old.client()
	defer op.Close()
	byPort := map[string]*process{strconv.Itoa(promoted.port): promoted, strconv.Itoa(other.port): other}
	var current *process
	waitFor(t, 60*time.Second, "the old primary and the other replica follow the primary Sentinel names", func() bool {
		addr, err := s.GetMasterAddrByName(ctx, "mymaster").Result()
		if err != nil || byPort[addr[1]] == nil {
			return false
		}
		current = byPort[addr[1]]
		for _, p := range []*process{old, promoted, other} {
			if p == current {
				continue
			}
			rdb := p.client()
			ok := infoField(rdb, "replication", "role") == "slave" && infoField(rdb, "replication", "master_port") == addr[1] &&
				infoField(rdb, "replication", "master_link_status") == "up"
			rdb.Close()
			if !ok {
				return false
			}
		}
		return true
	})
	require.NoError(t, fc.Do(ctx, "THROTTLE", "after-failover", 100, 1, "1h").Err())
	cp := current.client()
	defer cp.Close()
	require.Equal(t, int64(2), cp.Do(ctx, "WAIT", 2, 10000).Val())
	require.Equal(t, used(t, cp), used(t, op), "the old primary holds the primary's state")
	conf, err := os.ReadFile(primaryConf)
	require.NoError(t, err)
	require.Contains(t, string(conf), "replicaof 127.0.0.1 "+strconv.Itoa(current.port), "CONFIG REWRITE kept the primary Sentinel named")
}
