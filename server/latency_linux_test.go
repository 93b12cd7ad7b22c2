//go:build linux

package server

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// latencyCalls is cmd's calls as LATENCY HISTOGRAM replies them (RESP2), 0 when it has none.
func latencyCalls(t *testing.T, rdb *redis.Client, cmd string) int64 {
	t.Helper()
	top := do(t, rdb, "LATENCY", "HISTOGRAM", cmd).([]any)
	if len(top) == 0 {
		return 0
	}
	require.Equal(t, cmd, top[0])
	return top[1].([]any)[1].(int64)
}

// TestLatencyLoops counts the calls of clients on every path, by io-threads: goroutines of
// their own (the shared recorders), one event loop, three. Readers on different loops read
// at once, a script reads INFO from inside its caller's loop, and CONFIG RESETSTAT clears
// every loop before it replies. A reader waits for busy loops a minute here: one that
// waited on its own loop, or two readers on two loops on each other, would show in the time.
func TestLatencyLoops(t *testing.T) {
	for _, threads := range []int{0, 1, 3} {
		t.Run("io-threads "+strconv.Itoa(threads), func(t *testing.T) {
			ts := startServerWith(t, func(s *Server) { s.latency.wait = time.Minute }, withIOThreads(threads))
			const conns, gets = 6, 10
			rdbs := make([]*redis.Client, conns)
			for i := range rdbs {
				rdbs[i] = redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, PoolSize: 1})
				t.Cleanup(func() { rdbs[i].Close() })
				do(t, rdbs[i], "SET", "k", "v") // connected in turn: the loops take them in turn
			}
			start := time.Now()
			for _, rdb := range rdbs {
				for range gets {
					do(t, rdb, "GET", "k")
				}
				info := do(t, rdb, "EVAL", "redis.call('GET', 'k') return redis.call('INFO', 'latencystats')", "0").(string)
				require.Contains(t, info, "latency_percentiles_usec_get:p50=")
			}
			const want = conns * (gets + 1)
			var wg sync.WaitGroup
			for _, rdb := range rdbs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 20 {
						require.Equal(t, int64(want), latencyCalls(t, rdb, "get"))
					}
				}()
			}
			wg.Wait()
			require.Less(t, time.Since(start), 20*time.Second, "no reader waited on a loop")

			do(t, rdbs[0], "CONFIG", "RESETSTAT")
			require.Equal(t, int64(0), latencyCalls(t, rdbs[conns-1], "get"))
			do(t, rdbs[2], "GET", "k")
			require.Equal(t, int64(1), latencyCalls(t, rdbs[1], "get"))
			snaps := ts.latencySnapshots(nil) // the Prometheus scrape's way
			require.Equal(t, uint64(1), snaps[ts.commands["get"].aclID].Total)
			require.Zero(t, snaps[ts.commands["set"].aclID].Total, "SET was called before the reset only")
		})
	}
}

// TestLatencyLeavingLoop: a script that runs past busy-reply-threshold leaves its loop to a
// new goroutine while it goes on; its commands from then on count in a shared recorder, not
// in the loop's, which the loop's new goroutine reads for the scrapes meanwhile (the race
// detector would see the two goroutines on the loop's memory).
func TestLatencyLeavingLoop(t *testing.T) {
	ts := startServer(t, withIOThreads(1))
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: 2, PoolSize: 1, ReadTimeout: -1, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	do(t, rdb, "CONFIG", "SET", "busy-reply-threshold", "10")
	const spin = "local function spin() local i = 0 while i < 300000 do i = i + 1 end end "
	done := make(chan error)
	go func() {
		done <- rdb.Do(context.Background(), "EVAL", spin+"spin() for i = 1, 20 do redis.call('SET', 'k', i) end spin() return 1", "0").Err()
	}()
	set := ts.commands["set"].aclID
	for {
		snaps := ts.latencySnapshots(nil)
		select {
		case err := <-done:
			require.NoError(t, err)
			snaps = ts.latencySnapshots(nil)
			require.Equal(t, uint64(20), snaps[set].Total)
			require.Equal(t, int64(20), latencyCalls(t, rdb, "set"))
			return
		case <-time.After(time.Millisecond):
		}
		if s := snaps[set]; s != nil {
			require.LessOrEqual(t, s.Total, uint64(20))
		}
	}
}

// TestLatencyBusyLoop: a loop that does not answer holds a reader latencyReadWait at most,
// which then takes the loop's last answer (none since a reset); a reset it has not answered
// stays queued, and the loop clears its counts before it answers the reads queued after.
// The loops here are not running: the test answers for them, as their goroutine.
func TestLatencyBusyLoop(t *testing.T) {
	s, _ := fuzzServer(t)
	s.latency.wait = 20 * time.Millisecond
	quick, busy := testLoop(t, s), testLoop(t, s)
	s.mu.Lock()
	s.loops = []*loop{quick, busy}
	s.mu.Unlock()
	t.Cleanup(func() { // before the loops' descriptors close, and the server, which would stop them
		s.mu.Lock()
		s.loops = nil
		s.mu.Unlock()
	})
	get := s.commands["get"].aclID
	for range 3 {
		quick.lat.Record(get, 1000)
	}
	stop := make(chan struct{})
	answering := make(chan struct{})
	go func() { // the quick loop's goroutine, from here on
		defer close(answering)
		for {
			select {
			case <-quick.readWake:
				quick.answerReads()
			case <-stop:
				return
			}
		}
	}()
	defer func() { close(stop); <-answering }()
	total := func() uint64 {
		if snap := s.latencySnapshots(nil)[get]; snap != nil {
			return snap.Total
		}
		return 0
	}

	start := time.Now()
	require.Equal(t, uint64(3), total(), "the busy loop has never answered")
	require.GreaterOrEqual(t, time.Since(start), s.latency.wait)
	busy.lat.Record(get, 1000) // the busy loop serves a call, then answers what waits
	busy.answerReads()
	busy.lat.Record(get, 1000)
	require.Equal(t, uint64(4), total(), "the busy loop's last answer")

	s.resetLatency(nil)
	require.Equal(t, uint64(0), total(), "the quick loop cleared; the busy one's last answer is gone")
	busy.answerReads() // a read, the reset, a read: in that order
	require.Equal(t, uint64(0), total(), "the busy loop cleared before it answered the last read")
	busy.lat.Record(get, 1000)
	busy.answerReads()
	require.Equal(t, uint64(1), total())
}

// testLoop is a loop that no goroutine runs.
func testLoop(t testing.TB, s *Server) *loop {
	l, err := newLoop(s)
	require.NoError(t, err)
	t.Cleanup(func() {
		unix.Close(l.epfd)
		unix.Close(l.wakefd)
	})
	return l
}

// BenchmarkLatencyTracking is what latency-tracking costs a decision: THROTTLE and
// CL.THROTTLE with it (the default) and without, from a client on an event loop, as a TCP
// client is (the benchmark's goroutine stands in for the loop's); and with it from a client
// no loop serves (TLS, a subscriber), which counts in a shared recorder with an atomic add.
func BenchmarkLatencyTracking(b *testing.B) {
	onLoop := func(tb testing.TB, s *Server, c *client) {
		l := testLoop(tb, s)
		c.loop, c.lat = l, l.lat
	}
	for _, mode := range []struct {
		name   string
		on     bool
		client func(testing.TB, *Server, *client)
	}{
		{"tracking=yes", true, onLoop},
		{"tracking=no", false, onLoop},
		{"tracking=yes,goroutine", true, nil},
		{"tracking=no,goroutine", false, nil},
	} {
		benchPrepare = func(s *Server) {
			s.latency.on.Store(mode.on)
			s.obs.slowerThan.Store(-1) // a call the loaded machine held 10 ms would be logged: not the path measured
		}
		benchClient = mode.client
		b.Run(mode.name+"/THROTTLE", func(b *testing.B) { benchVerb(b, "THROTTLE", "k", "100", "10", "1m", "COST", "1") })
		b.Run(mode.name+"/CL.THROTTLE", func(b *testing.B) { benchVerb(b, "CL.THROTTLE", "k", "100", "10", "60", "1") })
	}
	benchPrepare, benchClient = nil, nil
}
