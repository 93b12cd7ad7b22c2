package compat

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
	"github.com/throttledhq/throttled/upstream"
)

// tally counts what a load saw.
type tally struct {
	admitted, denied, errors atomic.Int64
	mu                       sync.Mutex // guards lastErr
	lastErr                  error
}

func (ty *tally) add(v any, err error) {
	if err != nil {
		ty.errors.Add(1)
		ty.mu.Lock()
		ty.lastErr = err
		ty.mu.Unlock()
		return
	}
	d, ok := v.([]any)
	if !ok || len(d) == 0 {
		ty.admitted.Add(1) // CONCURRENCY.RELEASE and such
		return
	}
	if all, ok := d[0].([]any); ok { // ALLOF: the combined decision first
		d = all
	}
	if lim, _ := d[0].(int64); lim == 0 {
		ty.admitted.Add(1)
	} else {
		ty.denied.Add(1)
	}
}

// hammer sends args(worker, i) from conns connections to each of ps until ctx ends.
func hammer(ctx context.Context, ps []*process, conns int, ty *tally, args func(w, i int) []any) *sync.WaitGroup {
	var wg sync.WaitGroup
	for pi, p := range ps {
		rdb := p.client()
		for c := range conns {
			w := pi*conns + c
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					v, err := rdb.Do(context.Background(), args(w, i)...).Result()
					ty.add(v, err)
				}
			})
		}
		go func() { wg.Wait(); rdb.Close() }()
	}
	return &wg
}

func info(t *testing.T, p *process, field string) string {
	t.Helper()
	for _, l := range strings.Split(p.cli(t, "INFO", "upstream"), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && k == field {
			return v
		}
	}
	t.Fatalf("INFO upstream has no %s", field)
	return ""
}

// TestUpstreamThreeInstancesShareOneLimit: three instances on one upstream, eight
// connections each, one key per algorithm: together they admit what the limit allows (no
// refill within the test), never more, and nobody gets an error. The time-out is long: a
// round trip slowed by a loaded machine would be a degraded decision, each instance alone.
func TestUpstreamThreeInstancesShareOneLimit(t *testing.T) {
	redis := redistest.Start(t)
	var ps []*process
	for range 3 {
		ps = append(ps, start(t, "--appendonly", "no", "--upstream", redis.URL(), "--upstream-timeout", "1m"))
	}
	cases := []struct {
		name  string
		bound int64
		args  func(w, i int) []any
	}{
		{"CL.THROTTLE", 100, func(w, i int) []any { return []any{"CL.THROTTLE", "cl", 99, 1, 3600} }},
		{"GCRA", 100, func(w, i int) []any { return []any{"GCRA", "gc", 99, 1, 3600} }},
		{"THROTTLE", 100, func(w, i int) []any { return []any{"THROTTLE", "th", 99, 1, "1h"} }},
		{"TOKENBUCKET", 100, func(w, i int) []any { return []any{"TOKENBUCKET", "tb", 100, 1, "1h"} }},
		{"LEAKYBUCKET", 100, func(w, i int) []any { return []any{"LEAKYBUCKET", "lb", 100, 1, "1h"} }},
		{"SLIDE", 100, func(w, i int) []any { return []any{"SLIDE", "sl", 100, "1h"} }},
		{"SLIDE APPROX", 100, func(w, i int) []any { return []any{"SLIDE", "sc", 100, "1h", "APPROX"} }},
		{"WINDOW", 100, func(w, i int) []any { return []any{"WINDOW", "fw", 100, "1h"} }},
		{"CONCURRENCY.ACQUIRE", 10, func(w, i int) []any {
			return []any{"CONCURRENCY.ACQUIRE", "cc", 10, "1h", fmt.Sprintf("%d-%d", w, i)}
		}},
		{"ALLOF", 50, func(w, i int) []any {
			return []any{"ALLOF", "THROTTLE", "{a}x", 99, 1, "1h", "THROTTLE", "{a}y", 49, 1, "1h"}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hour := time.Now().Unix() / 3600
			var ty tally
			ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
			hammer(ctx, ps, 8, &ty, tc.args).Wait()
			cancel()
			require.Zero(t, ty.errors.Load(), "errors, the last: %v", ty.lastErr)
			bound := tc.bound
			if time.Now().Unix()/3600 != hour {
				bound *= 2 // a fixed window (or the approximate one's) turned over during the test
			}
			got := ty.admitted.Load()
			require.LessOrEqual(t, got, bound+1, "admitted (one may refill)")
			require.GreaterOrEqual(t, got, tc.bound*9/10, "admitted")
			require.Positive(t, ty.denied.Load())
		})
	}
	for _, p := range ps {
		require.Equal(t, "closed", info(t, p, "upstream_breaker"))
		require.Equal(t, "0", info(t, p, "upstream_degraded_decisions"))
	}
}

// TestUpstreamKill9: the upstream dies under load. Nobody gets an error; the breaker opens
// within a time-out; each instance then grants its fallback share alone; once the upstream
// is back the instances decide through it again, together.
func TestUpstreamKill9(t *testing.T) {
	redis := redistest.Start(t)
	// The time-out is long beside this machine's scheduling delays under the test's own
	// load (at 50 ms, a loaded race pass once saw the breaker open after 52 ms: the INFO
	// that saw it waited its turn), and short beside the 5 s of a breaker that never opens.
	const timeout = 200 * time.Millisecond
	var ps []*process
	for range 2 {
		ps = append(ps, start(t, "--appendonly", "no", "--upstream", redis.URL(),
			"--upstream-timeout", timeout.String(), "--upstream-fallback-share", "0.5"))
	}
	var ty tally
	ctx, cancel := context.WithCancel(context.Background())
	wg := hammer(ctx, ps, 8, &ty, func(w, i int) []any {
		if i%2 == 0 {
			return []any{"THROTTLE", "hot", 9, 1, "1s"}
		}
		return []any{"TOKENBUCKET", fmt.Sprintf("k%d", (w*7919+i)%5000), 5, 1, "1s"}
	})
	time.Sleep(300 * time.Millisecond)
	watch := ps[0].client()
	defer watch.Close()
	redis.Kill9()
	killed := time.Now()
	var opened time.Duration
	for {
		text, err := watch.Info(context.Background(), "upstream").Result()
		require.NoError(t, err)
		if strings.Contains(text, "upstream_breaker:open") {
			opened = time.Since(killed)
			break
		}
		require.Less(t, time.Since(killed), 5*time.Second, "the breaker never opened")
		time.Sleep(time.Millisecond)
	}
	t.Logf("breaker open %v after kill -9", opened)
	require.Less(t, opened, timeout, "the breaker took longer than one upstream-timeout to open")

	// Alone, each instance grants half of a fresh limit of 10.
	for _, p := range ps {
		var admitted int
		for range 20 {
			if strings.HasPrefix(p.cli(t, "THROTTLE", "fresh", "9", "1", "1h"), "0\n") {
				admitted++
			}
		}
		require.Equal(t, 5, admitted)
	}
	require.Equal(t, "down", info(t, ps[0], "upstream_link_status"))
	require.NotEqual(t, "0", info(t, ps[0], "upstream_degraded_decisions"))

	time.Sleep(200 * time.Millisecond)
	redis.Restart()
	for _, p := range ps {
		deadline := time.Now().Add(10 * time.Second)
		for info(t, p, "upstream_breaker") != "closed" {
			require.True(t, time.Now().Before(deadline), "the breaker did not close")
			time.Sleep(20 * time.Millisecond)
		}
	}
	cancel()
	wg.Wait()
	require.Zero(t, ty.errors.Load(), "errors, the last: %v", ty.lastErr)
	require.Positive(t, ty.admitted.Load())

	// Back on the upstream, the two share a limit of 10 again.
	admitted := 0
	for i := range 20 {
		if strings.HasPrefix(ps[i%2].cli(t, "THROTTLE", "after", "9", "1", "1h"), "0\n") {
			admitted++
		}
	}
	require.Equal(t, 10, admitted)
}

// TestUpstreamSlowOrFull: an upstream that hangs (SIGSTOP) or is out of memory degrades the
// answers and returns no error; each call waits at most about a time-out.
func TestUpstreamSlowOrFull(t *testing.T) {
	redis := redistest.Start(t)
	p := start(t, "--appendonly", "no", "--upstream", redis.URL(), "--upstream-timeout", "50ms")
	rdb := p.client()
	defer rdb.Close()
	ctx := context.Background()
	calls := func(prefix string) (slowest time.Duration) {
		for i := range 30 {
			began := time.Now()
			_, err := rdb.Do(ctx, "THROTTLE", fmt.Sprintf("%s%d", prefix, i), 9, 1, "1s").Slice()
			require.NoError(t, err)
			slowest = max(slowest, time.Since(began))
		}
		return slowest
	}
	calls("warm")

	redis.Pause()
	slowest := calls("paused")
	redis.Resume()
	t.Logf("slowest call while the upstream hung: %v", slowest)
	require.Less(t, slowest, 300*time.Millisecond)
	require.NotEqual(t, "0", info(t, p, "upstream_degraded_decisions"))

	require.NoError(t, redis.Client().ConfigSet(ctx, "maxmemory", "1").Err())
	waitClosed := func() {
		deadline := time.Now().Add(10 * time.Second)
		for info(t, p, "upstream_breaker") != "closed" {
			require.True(t, time.Now().Before(deadline), "the breaker did not close")
			calls("probe") // half-open lets the next call through: its success closes the breaker
		}
	}
	degraded := info(t, p, "upstream_degraded_decisions")
	calls("full") // OOM on every CAS
	require.NotEqual(t, degraded, info(t, p, "upstream_degraded_decisions"))
	require.NoError(t, redis.Client().ConfigSet(ctx, "maxmemory", "0").Err())
	waitClosed()
	before := info(t, p, "upstream_round_trips")
	calls("after")
	require.NotEqual(t, before, info(t, p, "upstream_round_trips"))
}

// TestUpstreamCluster: two instances on a 3-master Redis Cluster. Keys land on every master;
// ALLOF needs its keys in one slot; a slot moves from one master to another under load
// without an error and without losing an admission.
func TestUpstreamCluster(t *testing.T) {
	cluster := redistest.StartCluster(t)
	nodes := strings.Join(cluster.Addrs(), ",")
	var ps []*process
	for range 2 {
		ps = append(ps, start(t, "--appendonly", "no", "--upstream-cluster", nodes, "--upstream-timeout", "1m"))
	}
	for i := range 60 {
		require.Equal(t, "0", strings.Fields(ps[i%2].cli(t, "THROTTLE", fmt.Sprintf("spread%d", i), "9", "1", "1h"))[0])
	}
	for _, n := range cluster.Nodes {
		size, err := strconv.Atoi(strings.TrimSpace(cli(t, n.Port, "DBSIZE")))
		require.NoError(t, err)
		require.Positive(t, size, "master %s holds no key", n.Addr)
	}
	require.Contains(t, ps[0].cli(t, "ALLOF", "THROTTLE", "a", "1", "1", "1s", "THROTTLE", "b", "1", "1", "1s"),
		"keys of one call must share a hash slot in upstream-cluster mode: 'a' is in slot 15495 and 'b' in slot 3300")
	require.Equal(t, "0", strings.Fields(ps[0].cli(t, "ALLOF", "THROTTLE", "{u}a", "1", "1", "1s", "THROTTLE", "{u}b", "1", "1", "1s"))[0])

	// Load on a hot key (a big limit: admissions are counted, not refused) while its slot moves.
	const limit = 1000000
	key := "moving"
	slot := upstream.Slot([]byte(key))
	var ty tally
	ctx, cancel := context.WithCancel(context.Background())
	wg := hammer(ctx, ps, 6, &ty, func(w, i int) []any {
		if i%3 == 0 {
			return []any{"THROTTLE", fmt.Sprintf("other%d", (w*31+i)%500), 9, 1, "1h"}
		}
		return []any{"THROTTLE", key, limit - 1, 1, "1h"}
	})
	time.Sleep(300 * time.Millisecond)
	before := ty.admitted.Load()
	moveSlot(t, cluster, slot)
	time.Sleep(300 * time.Millisecond)
	cancel()
	wg.Wait()
	require.Zero(t, ty.errors.Load(), "errors, the last: %v", ty.lastErr)
	require.Greater(t, ty.admitted.Load(), before, "no admissions after the move")

	// Every admission of the hot key is in its state: limit - remaining, read with a probe.
	rdb := ps[0].client()
	defer rdb.Close()
	d, err := rdb.Do(context.Background(), "THROTTLE", key, limit-1, 1, "1h", "COST", 0).Slice()
	require.NoError(t, err)
	// The load's other admissions went to the other keys.
	used := limit - d[2].(int64)
	require.Positive(t, used)
	otherAdmitted := countOthers(t, ps[0])
	require.Equal(t, ty.admitted.Load()-otherAdmitted, used, "admissions of the hot key lost in the move")
	for _, p := range ps {
		require.Equal(t, "0", info(t, p, "upstream_degraded_decisions"))
	}
}

// countOthers sums the units used on the load's other keys, with probes.
func countOthers(t *testing.T, p *process) int64 {
	rdb := p.client()
	defer rdb.Close()
	var n int64
	for i := range 500 {
		d, err := rdb.Do(context.Background(), "THROTTLE", fmt.Sprintf("other%d", i), 9, 1, "1h", "COST", 0).Slice()
		require.NoError(t, err)
		n += 10 - d[2].(int64)
	}
	return n
}

// moveSlot migrates slot from its master to the next one, with the steps redis-cli --cluster
// reshard takes: IMPORTING and MIGRATING, MIGRATE of its keys, then SETSLOT NODE everywhere.
func moveSlot(t *testing.T, c *redistest.Cluster, slot int) {
	t.Helper()
	ids := map[int]string{}
	owner := -1
	for i, n := range c.Nodes {
		ids[i] = strings.TrimSpace(cli(t, n.Port, "CLUSTER", "MYID"))
		if strings.TrimSpace(cli(t, n.Port, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot))) != "0" {
			owner = i
		}
	}
	require.GreaterOrEqual(t, owner, 0, "no node holds slot %d's keys", slot)
	to := (owner + 1) % len(c.Nodes)
	src, dst := c.Nodes[owner], c.Nodes[to]
	s := strconv.Itoa(slot)
	require.Equal(t, "OK", cli(t, dst.Port, "CLUSTER", "SETSLOT", s, "IMPORTING", ids[owner]))
	require.Equal(t, "OK", cli(t, src.Port, "CLUSTER", "SETSLOT", s, "MIGRATING", ids[to]))
	time.Sleep(100 * time.Millisecond) // requests meet the migrating slot (ASK, TRYAGAIN)
	for {
		keys := strings.Fields(cli(t, src.Port, "CLUSTER", "GETKEYSINSLOT", s, "100"))
		if len(keys) == 0 {
			break
		}
		args := append([]string{"MIGRATE", "127.0.0.1", strconv.Itoa(dst.Port), "", "0", "5000", "KEYS"}, keys...)
		require.Equal(t, "OK", cli(t, src.Port, args...))
	}
	for _, n := range c.Nodes {
		require.Equal(t, "OK", cli(t, n.Port, "CLUSTER", "SETSLOT", s, "NODE", ids[to]))
	}
	require.Equal(t, "0", strings.TrimSpace(cli(t, src.Port, "CLUSTER", "COUNTKEYSINSLOT", s)))
	require.Equal(t, "1", strings.TrimSpace(cli(t, dst.Port, "CLUSTER", "COUNTKEYSINSLOT", s)))
	c.WaitOK()
}

// cli runs redis-cli against a Redis on port.
func cli(t *testing.T, port int, args ...string) string {
	t.Helper()
	out, err := exec.Command("redis-cli", append([]string{"-p", strconv.Itoa(port)}, args...)...).CombinedOutput()
	require.NoError(t, err, "redis-cli %v: %s", args, out)
	return strings.TrimSpace(string(out))
}
