package compat

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
	"github.com/throttledhq/throttled/ratelimit"
	"github.com/throttledhq/throttled/upstream"
)

// The global test's limit: THROTTLE with a burst of 60 (three intervals' worth) and 200 per second, GLOBAL, synced
// every 100 ms (a fifth of the default: the phases are shorter than the 20 s, and
// each "within two intervals" check is two of these intervals).
const (
	globalRate     = 200 // per second
	globalBurst    = 60
	globalInterval = 100 * time.Millisecond
	globalSlot     = 100 * time.Millisecond // the admissions are counted per slot
	// globalLate is how late a sync may start on a loaded machine (two cores, the race
	// detector, seven processes): a test's tolerance, not the design's.
	globalLate = 75 * time.Millisecond
)

var globalCall = []string{"THROTTLE", "gk", "59", "200", "1s", "GLOBAL"}

// globalLoad offers each instance its share of ten times the limit, paced every 10 ms (what
// is owed counted from the time that passed, so that a tick the loaded machine drops does not
// lower the load), and counts each instance's admissions per slot since the start.
type globalLoad struct {
	start  time.Time
	shares []atomic.Int64 // per mille of the offered load, per instance
	counts [][]atomic.Int64
	errs   atomic.Int64
	stop   []chan struct{}
	exited []chan struct{} // an instance's load is over
	wg     sync.WaitGroup
}

func newGlobalLoad(ps []*process, shares ...int64) *globalLoad {
	gl := &globalLoad{start: time.Now(), shares: make([]atomic.Int64, len(ps))}
	for i := range ps {
		gl.shares[i].Store(shares[i])
		gl.counts = append(gl.counts, make([]atomic.Int64, 600))
		gl.stop = append(gl.stop, make(chan struct{}))
		gl.exited = append(gl.exited, make(chan struct{}))
	}
	args := make([]any, len(globalCall))
	for i, a := range globalCall {
		args[i] = a
	}
	for i, p := range ps {
		rdb := p.client()
		gl.wg.Go(func() {
			defer close(gl.exited[i])
			defer rdb.Close()
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			owed, last := 0.0, time.Now()
			for {
				select {
				case <-gl.stop[i]:
					return
				case <-tick.C:
				}
				now := time.Now()
				owed += float64(10*globalRate*gl.shares[i].Load()) / 1000 * now.Sub(last).Seconds() // ten times the limit
				last = now
				n := int(owed)
				owed -= float64(n)
				if n == 0 {
					continue
				}
				cmds, _ := rdb.Pipelined(context.Background(), func(pipe redis.Pipeliner) error {
					for range n {
						pipe.Do(context.Background(), args...)
					}
					return nil
				})
				slot := int(time.Since(gl.start) / globalSlot)
				for _, c := range cmds {
					v, err := c.(*redis.Cmd).Slice()
					if err != nil {
						gl.errs.Add(1)
						continue
					}
					if v[0].(int64) == 0 && slot < len(gl.counts[i]) {
						gl.counts[i][slot].Add(1)
					}
				}
			}
		})
	}
	return gl
}

// since is the time since the load started.
func (gl *globalLoad) since() time.Duration { return time.Since(gl.start) }

// admitted is what instance i admitted in [from, to) since the start (whole slots).
func (gl *globalLoad) admitted(i int, from, to time.Duration) int64 {
	n := int64(0)
	for s := int(from / globalSlot); s < int(to/globalSlot) && s < len(gl.counts[i]); s++ {
		n += gl.counts[i][s].Load()
	}
	return n
}

func (gl *globalLoad) total(from, to time.Duration, which ...int) int64 {
	n := int64(0)
	for _, i := range which {
		n += gl.admitted(i, from, to)
	}
	return n
}

// sleepUntil sleeps until d since the start.
func (gl *globalLoad) sleepUntil(d time.Duration) { time.Sleep(d - gl.since()) }

// TestGlobalClusterBound: four instances on a real 3-master Redis Cluster share a GLOBAL
// limit (200/s, burst 60), offered ten times the limit, split 70/20/7/3. Together they admit
// at least 95% of the limit and at most the limit plus the stated bound, N times what one
// instance can admit from one allowance (docs/upstream.md: burst + rate * interval for
// THROTTLE). The split shifts (3/7/20/70) and each instance's admissions follow within two
// intervals; an instance is killed and the others take its share within two intervals of
// its heartbeat running out; the master holding the key is killed and the instances go on
// with their last allowances (INFO says so), then agree again once it is back.
func TestGlobalClusterBound(t *testing.T) {
	cluster := redistest.StartCluster(t)
	nodes := strings.Join(cluster.Addrs(), ",")
	var ps []*process
	for range 4 {
		ps = append(ps, launch(t, t.TempDir(), "--appendonly", "no", "--upstream-cluster", nodes,
			"--global-sync-interval", globalInterval.String(), "--upstream-timeout", "1s"))
	}
	argv := make([][]byte, len(globalCall)-1)
	for i, a := range globalCall[:len(globalCall)-1] {
		argv[i] = []byte(a)
	}
	bound, err := ratelimit.GlobalBound(argv, int64(globalInterval))
	require.NoError(t, err)
	require.Equal(t, int64(globalBurst+globalRate/10), bound, "burst + rate * interval")
	overshoot := int64(len(ps)) * bound
	all := []int{0, 1, 2, 3}
	// upper is the stated bound over a span: what the limit admits over the span lengthened
	// by one interval, at most (from an idle key) the burst and the rate over it, plus N times
	// what one allowance holds.
	upper := func(span time.Duration) int64 {
		return globalBurst + int64(float64(globalRate)*(span+globalInterval).Seconds()) + overshoot
	}

	gl := newGlobalLoad(ps, 700, 200, 70, 30)
	defer func() {
		for i := range gl.stop {
			select {
			case <-gl.stop[i]:
			default:
				close(gl.stop[i])
			}
		}
		gl.wg.Wait()
	}()

	// Phase 1, 0-5 s: 70/20/7/3. The key starts idle: the limit over the phase is the
	// burst plus five seconds of the rate.
	const p1 = 5 * time.Second
	gl.sleepUntil(p1)
	limit := int64(globalBurst + globalRate*5)
	got := gl.total(0, p1, all...)
	t.Logf("phase 1: admitted %d, limit %d, bound %d", got, limit, upper(p1))
	require.GreaterOrEqual(t, got, limit*95/100)
	require.LessOrEqual(t, got, upper(p1))
	followed := func(from, to time.Duration, want ...int64) {
		t.Helper()
		sum := gl.total(from, to, all...)
		for i, w := range want {
			share := float64(gl.admitted(i, from, to)) * 1000 / float64(sum)
			t.Logf("instance %d: %.0f‰ of the admissions, offered %d‰", i, share, w)
			require.InDelta(t, float64(w), share, max(float64(w)/3, 20), "instance %d's share", i)
		}
	}
	followed(p1-2*time.Second, p1, 700, 200, 70, 30)

	// Phase 2, 5-8 s: the split shifts to 3/7/20/70; two intervals later the admissions
	// follow it.
	for i, s := range []int64{30, 70, 200, 700} {
		gl.shares[i].Store(s)
	}
	const p2 = 8 * time.Second
	gl.sleepUntil(p2)
	followed(p1+2*globalInterval, p2, 30, 70, 200, 700)
	got = gl.total(p1, p2, all...)
	t.Logf("phase 2: admitted %d of %d", got, globalRate*3)
	require.LessOrEqual(t, got, upper(p2-p1))
	require.GreaterOrEqual(t, got, int64(globalRate*3)*95/100)

	// Phase 3, 8-11 s: the instance with 70% dies. Its heartbeat runs out an interval and a
	// quarter after its last sync (more, up to two intervals, where its syncs started late),
	// and each survivor's next sync counts it out and takes its share: within two intervals
	// and a quarter of the kill on a quiet machine (docs/upstream.md), and within an interval
	// of its heartbeat's end always, give or take the loaded machine's late timers. From then
	// on the survivors admit the whole limit among them.
	dead := globalInfo(t, ps[3], "global_instance_id")
	close(gl.stop[3])
	<-gl.exited[3] // its last calls answered: the errors counted are the survivors'
	ps[3].kill9(t)
	killed, killedAt := gl.since(), time.Now()
	up := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	defer up.Close()
	score, err := up.ZScore(context.Background(), upstream.GlobalInstances, dead).Result()
	require.NoError(t, err)
	hbEnd := time.UnixMilli(int64(score)).Sub(killedAt) // the shared clock is the upstream's TIME: this machine's
	require.LessOrEqual(t, hbEnd, 2*globalInterval, "a heartbeat lasts two intervals at most")
	survivors := ps[:3]
	clients := make([]*redis.Client, len(survivors))
	for i, p := range survivors {
		clients[i] = p.client()
		defer clients[i].Close()
	}
	took := make([]time.Duration, len(survivors)) // when each counted it out
	for left := len(survivors); left > 0; {
		require.Less(t, time.Since(killedAt), 5*time.Second, "the survivors never counted the dead instance out")
		for i, c := range clients {
			if took[i] == 0 && infoField(c, "global", "global_instances") == "3" {
				took[i] = time.Since(killedAt)
				left--
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	hbs := make([]string, len(survivors))
	for i, c := range clients {
		hbs[i] = infoField(c, "global", "global_heartbeat_ms")
	}
	t.Logf("phase 3: its heartbeat ran out %v after the kill; the survivors (heartbeats of %v ms) counted it out after %v (interval %v)",
		hbEnd, hbs, took, globalInterval)
	for i, d := range took {
		require.LessOrEqual(t, d, max(hbEnd, 0)+globalInterval+globalLate, "survivor %d took the dead instance's share late", i)
	}
	const p3 = 11 * time.Second
	gl.sleepUntil(p3)
	from := killed + slices.Max(took)
	got = gl.total(from, p3, 0, 1, 2)
	want := int64(float64(globalRate) * (p3 - from).Seconds())
	t.Logf("phase 3: the survivors admitted %d, the limit over the span %d", got, want)
	require.GreaterOrEqual(t, got, want*90/100)
	require.LessOrEqual(t, got, upper(p3-from))
	// The dead instance stays out. A live one that a late heartbeat had counted out (the
	// loaded machine's timers: one sync's split without it, within the bound) is back at
	// the next sync.
	for i, c := range clients {
		deadline := time.Now().Add(10 * globalInterval)
		for n := infoField(c, "global", "global_instances"); n != "3"; n = infoField(c, "global", "global_instances") {
			require.NotEqual(t, "4", n, "survivor %d counts the dead instance again", i)
			require.True(t, time.Now().Before(deadline), "survivor %d counts %s instances", i, n)
			time.Sleep(5 * time.Millisecond)
		}
	}

	// Phase 4: the master holding the key dies. The instances go on with their last
	// allowances: about the limit among them, and INFO says the keys are degraded.
	master := masterOf(t, cluster, upstream.GlobalPrefix+"gk")
	master.Kill9()
	down := gl.since()
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range survivors {
		for globalInfo(t, p, "global_status") != "degraded" {
			require.True(t, time.Now().Before(deadline), "the sync never failed")
			time.Sleep(20 * time.Millisecond)
		}
		require.Equal(t, "1", upstreamInfo(t, p, "upstream_global_failing_keys"))
	}
	gl.sleepUntil(down + 2*time.Second)
	got = gl.total(down+2*globalInterval, down+2*time.Second, 0, 1, 2)
	want = int64(float64(globalRate) * (2*time.Second - 2*globalInterval).Seconds())
	t.Logf("phase 4 (master down): admitted %d, the limit over the span %d", got, want)
	require.GreaterOrEqual(t, got, want/2, "fail-soft: the last allowances go on")
	require.LessOrEqual(t, got, upper(2*time.Second-2*globalInterval), "no more than the bound, as the allowances were")

	master.Restart()
	cluster.WaitOK()
	deadline = time.Now().Add(15 * time.Second)
	for _, p := range survivors {
		for globalInfo(t, p, "global_status") != "ok" {
			require.True(t, time.Now().Before(deadline), "the sync never came back")
			time.Sleep(20 * time.Millisecond)
		}
	}
	back := gl.since()
	gl.sleepUntil(back + 2*time.Second)
	got = gl.total(back, back+2*time.Second, 0, 1, 2)
	want = globalBurst + globalRate*2 // the master came back empty: the key is idle again
	t.Logf("after the master's return: admitted %d, the limit %d", got, want)
	require.GreaterOrEqual(t, got, int64(want)*80/100)
	require.LessOrEqual(t, got, upper(2*time.Second))
	require.Zero(t, gl.errs.Load(), "a client got an error")
}

// masterOf returns the cluster's node that holds key.
func masterOf(t *testing.T, c *redistest.Cluster, key string) *redistest.Server {
	t.Helper()
	slot := upstream.Slot([]byte(key))
	for _, n := range c.Nodes {
		if strings.TrimSpace(cli(t, n.Port, "CLUSTER", "COUNTKEYSINSLOT", fmt.Sprint(slot))) != "0" {
			return n
		}
	}
	t.Fatalf("no master holds %s (slot %d)", key, slot)
	return nil
}

func globalInfo(t *testing.T, p *process, field string) string {
	t.Helper()
	return procInfo(t, p, "global", field)
}

func upstreamInfo(t *testing.T, p *process, field string) string {
	t.Helper()
	return procInfo(t, p, "upstream", field)
}

func procInfo(t *testing.T, p *process, section, field string) string {
	t.Helper()
	for _, l := range strings.Split(p.cli(t, "INFO", section), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && k == field {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return ""
}
