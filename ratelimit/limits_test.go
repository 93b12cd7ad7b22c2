package ratelimit_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/testserver"
)

func TestTokenBucket(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	tb := func(args ...any) any { return do(t, rdb, append([]any{"TOKENBUCKET", "tb", 5, 1, "1s"}, args...)...) }
	require.Equal(t, ints(0, 5, 4, -1, 1000), tb())
	require.Equal(t, ints(0, 5, 0, -1, 5000), tb("COST", 4))
	require.Equal(t, ints(1, 5, 0, 1000, 5000), tb())
	ts.Clock.Advance(500 * time.Millisecond) // refill is continuous: half a token
	require.Equal(t, ints(1, 5, 0, 500, 4500), tb())
	ts.Clock.Advance(500 * time.Millisecond)
	require.Equal(t, ints(0, 5, 0, -1, 5000), tb())
	require.Equal(t, ints(1, 5, 0, -1, 5000), tb("COST", 6), "more than the capacity never fits")
	// New parameters adapt the state and never refill it.
	require.Equal(t, ints(1, 10, 0, 1000, 10000), do(t, rdb, "TOKENBUCKET", "tb", 10, 1, "1s"))
	require.Equal(t, "tokenbucket", do(t, rdb, "TYPE", "tb"))
	require.Equal(t, int64(5000), do(t, rdb, "PTTL", "tb"))
}

func TestLeakyBucket(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 3)
	lb := func() map[any]any { return do(t, rdb, "LEAKYBUCKET", "q", 3, 1, "1s").(map[any]any) }
	// Admissions are spaced by the leak interval: each waits for those ahead of it.
	for i, delay := range []int64{0, 1000, 2000} {
		d := lb()
		require.Equal(t, int64(0), d["limited"])
		require.Equal(t, int64(2-i), d["remaining"])
		require.Equal(t, delay, d["delay_ms"])
	}
	d := lb()
	require.Equal(t, int64(1), d["limited"])
	require.Equal(t, int64(1000), d["retry_after_ms"])
	require.Equal(t, int64(3000), d["reset_after_ms"])
	ts.Clock.Advance(time.Second)
	d = lb()
	require.Equal(t, int64(0), d["limited"])
	require.Equal(t, int64(2000), d["delay_ms"])
	require.Equal(t, "leakybucket", do(t, rdb, "TYPE", "q"))
	// RESP2: six integers.
	require.Len(t, do(t, ts.Client(t, 2), "LEAKYBUCKET", "q2", 3, 1, "1s"), 6)
}

func TestFixedWindowBoundaryBurst(t *testing.T) {
	ts := testserver.Start(t) // the clock starts 20s into a minute
	rdb := ts.Client(t, 2)
	w := func() any { return do(t, rdb, "WINDOW", "w", 2, "1m") }
	require.Equal(t, ints(0, 2, 1, -1, 40000), w())
	require.Equal(t, ints(0, 2, 0, -1, 40000), w())
	require.Equal(t, ints(1, 2, 0, 40000, 40000), w())
	ts.Clock.Advance(40 * time.Second) // a new aligned window: twice the limit within 40s, by design
	require.Equal(t, ints(0, 2, 1, -1, 60000), w())
	require.Equal(t, ints(0, 2, 0, -1, 60000), w())
	require.Equal(t, "fixedwindow", do(t, rdb, "TYPE", "w"))
}

func TestSlidingLogHasNoBoundaryBurst(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	s := func() any { return do(t, rdb, "SLIDE", "s", 2, "1m") }
	require.Equal(t, ints(0, 2, 1, -1, 60000), s())
	require.Equal(t, ints(0, 2, 0, -1, 60000), s())
	require.Equal(t, ints(1, 2, 0, 60000, 60000), s())
	ts.Clock.Advance(40 * time.Second)
	require.Equal(t, ints(1, 2, 0, 20000, 20000), s())
	ts.Clock.Advance(20 * time.Second)
	require.Equal(t, ints(0, 2, 1, -1, 60000), s())
	require.Equal(t, "slidinglog", do(t, rdb, "TYPE", "s"))
}

func TestSlidingCounterEstimate(t *testing.T) {
	ts := testserver.Start(t) // 20s into a minute
	rdb := ts.Client(t, 2)
	s := func(cost int) any { return do(t, rdb, "SLIDE", "a", 10, "1m", "APPROX", "COST", cost) }
	require.Equal(t, int64(0), s(10).([]any)[0])
	ts.Clock.Advance(time.Minute)
	// 20s into the next window the previous one weighs 1 - 20/60: 10 x 2/3 = 6.67.
	require.Equal(t, int64(1), s(4).([]any)[0])
	require.Equal(t, int64(0), s(3).([]any)[0])
	require.Equal(t, int64(1), s(1).([]any)[0])
	require.Equal(t, "slidingcounter", do(t, rdb, "TYPE", "a"))
	require.Equal(t, "WRONGTYPE Operation against a key holding the wrong kind of value", doErr(t, rdb, "SLIDE", "a", 10, "1m"))
}

func TestConcurrency(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	acq := func(id string) any { return do(t, rdb, "CONCURRENCY.ACQUIRE", "c", 2, "30s", id) }
	require.Equal(t, ints(0, 2, 1, -1, 30000), acq("a"))
	ts.Clock.Advance(10 * time.Second)
	require.Equal(t, ints(0, 2, 0, -1, 30000), acq("b"))
	require.Equal(t, ints(1, 2, 0, 20000, 30000), acq("c"))
	require.Equal(t, ints(0, 2, 0, -1, 30000), acq("a"), "the same id renews its lease")
	require.Equal(t, int64(1), do(t, rdb, "CONCURRENCY.RELEASE", "c", "b"))
	require.Equal(t, int64(0), do(t, rdb, "CONCURRENCY.RELEASE", "c", "b"))
	require.Equal(t, ints(0, 2, 0, -1, 30000), acq("c"))
	ts.Clock.Advance(31 * time.Second) // every lease ran out
	require.Equal(t, ints(0, 2, 1, -1, 30000), acq("d"))
	require.Equal(t, "concurrency", do(t, rdb, "TYPE", "c"))
	require.Equal(t, int64(1), do(t, rdb, "CONCURRENCY.RELEASE", "c", "d"))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "c"), "the last release frees the key")
	require.Equal(t, int64(0), do(t, rdb, "CONCURRENCY.RELEASE", "nokey", "x"))
}

func TestAllOf(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	allof := []any{"ALLOF", "THROTTLE", "user:1", 0, 1, "1h", "WINDOW", "ip:1", 5, "1m", "COST", 2}
	require.Equal(t, []any{ints(0, 1, 0, -1, 3600000), ints(0, 1, 0, -1, 3600000), ints(0, 5, 3, -1, 40000)}, do(t, rdb, allof...))
	// The THROTTLE limit denies: the WINDOW limit is not charged.
	require.Equal(t, []any{ints(1, 1, 0, 3600000, 3600000), ints(1, 1, 0, 3600000, 3600000), ints(0, 5, 1, -1, 40000)}, do(t, rdb, allof...))
	require.Equal(t, ints(0, 5, 3, -1, 40000), do(t, rdb, "WINDOW", "ip:1", 5, "1m", "COST", 0))
	// The same key twice sees the first limit's charge.
	require.Equal(t, []any{ints(1, 3, 1, 1000, 2000), ints(0, 3, 1, -1, 2000), ints(1, 3, 1, 1000, 2000)},
		do(t, rdb, "ALLOF", "TOKENBUCKET", "t", 3, 1, "1s", "COST", 2, "TOKENBUCKET", "t", 3, 1, "1s", "COST", 2))
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"ALLOF", "NOPE", "k", 1, 1, 1}, "ERR ALLOF takes one or more limits: verb key params... [options], with verb one of THROTTLE, TOKENBUCKET, LEAKYBUCKET, SLIDE, WINDOW, CONCURRENCY.ACQUIRE; got 'NOPE'"},
		{[]any{"ALLOF", "THROTTLE", "k", 1, 1, "1s", "WINDOW", "k2", 1}, "ERR wrong number of arguments for 'window'"},
		{[]any{"ALLOF", "THROTTLE", "k", 1, 1, "1s", "WINDOW", "k", 1, "1s"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
	} {
		require.Equal(t, tc.want, doErr(t, rdb, tc.args...), "%v", tc.args)
	}
}

func TestNativeVerbErrors(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "THROTTLE", "g", 1, 1, "1s")
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"TOKENBUCKET", "k", 5, 1, "1parsec"}, "ERR invalid period '1parsec': " + "a whole number of seconds, or a number with a unit: ms, s, m, h, d (250ms, 1.5s, 15m)"},
		{[]any{"TOKENBUCKET", "k", -1, 1, "1s"}, "ERR capacity must be at least 1, got -1"},
		{[]any{"LEAKYBUCKET", "k", 5, 0, "1s"}, "ERR leak must be at least 1, got 0"},
		{[]any{"SLIDE", "k", "ten", "1s"}, "ERR limit must be an integer, got 'ten'"},
		{[]any{"WINDOW", "k", 5, "1s", "APPROX"}, "ERR unknown option 'APPROX'"},
		{[]any{"WINDOW", "k", 5, "1s", "COST", -2}, "ERR COST must not be negative, got -2"},
		{[]any{"CONCURRENCY.ACQUIRE", "k", 5, "0ms", "id"}, "ERR lease must be greater than 0"},
		{[]any{"TOKENBUCKET", "g", 5, 1, "1s"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"CONCURRENCY.RELEASE", "g", "id"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{[]any{"WINDOW", "k", 5}, "ERR wrong number of arguments for 'window' command"},
	} {
		require.Equal(t, tc.want, doErr(t, rdb, tc.args...), "%v", tc.args)
	}
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "k"))
}

// TestNativeVerbsNoOverAdmission hammers one key of each algorithm from many
// connections on the real clock: what is allowed stays within the
// algorithm's bound over the elapsed time, and close to it.
func TestNativeVerbsNoOverAdmission(t *testing.T) {
	ts := testserver.Start(t, realClock)
	const conns, run = 32, 1500 * time.Millisecond
	windows := func(s, w float64) float64 { return math.Ceil(s/w) + 1 } // aligned windows touched
	for _, tc := range []struct {
		name  string
		args  []any
		bound func(s float64) float64 // most admissions in s seconds
		least func(s float64) float64 // fewest a correct limiter gives here
	}{
		{"tokenbucket", []any{"TOKENBUCKET", "h:tb", 50, 200, "1s"}, func(s float64) float64 { return 50 + 200*s }, func(s float64) float64 { return closeEnough * (50 + 200*s) }},
		{"leakybucket", []any{"LEAKYBUCKET", "h:lb", 50, 200, "1s"}, func(s float64) float64 { return 50 + 200*s }, func(s float64) float64 { return closeEnough * (50 + 200*s) }},
		{"slide", []any{"SLIDE", "h:sl", 100, "500ms"}, func(s float64) float64 { return 100 * math.Ceil(s/0.5) }, func(s float64) float64 { return closeEnough * 100 * math.Floor(s/0.5) }},
		{"slide approx", []any{"SLIDE", "h:sc", 100, "500ms", "APPROX"}, func(s float64) float64 { return 100 * windows(s, 0.5) }, func(s float64) float64 { return 0.5 * 100 * math.Floor(s/0.5) }},
		{"window", []any{"WINDOW", "h:fw", 100, "500ms"}, func(s float64) float64 { return 100 * windows(s, 0.5) }, func(s float64) float64 { return closeEnough * 100 * math.Floor(s/0.5) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: ts.Addr, Protocol: 2, PoolSize: conns})
			defer rdb.Close()
			allowed, elapsed := hammer(t, rdb, conns, run, tc.args)
			s, got := elapsed.Seconds(), float64(allowed)
			require.LessOrEqual(t, got, tc.bound(s), "allowed %v in %.2fs", got, s)
			require.GreaterOrEqual(t, got, tc.least(run.Seconds()), "allowed %v in %.2fs", got, s)
		})
	}
	t.Run("concurrency", func(t *testing.T) {
		rdb := redis.NewClient(&redis.Options{Addr: ts.Addr, Protocol: 2, PoolSize: conns})
		defer rdb.Close()
		const limit = 5
		var holding, most, acquired atomic.Int64
		start := time.Now()
		var wg sync.WaitGroup
		for i := 0; i < conns; i++ {
			wg.Add(1)
			go func(id string) {
				defer wg.Done()
				ctx := context.Background()
				for time.Since(start) < run {
					v, err := rdb.Do(ctx, "CONCURRENCY.ACQUIRE", "h:cc", limit, "1m", id).Slice()
					if err != nil {
						t.Error(err)
						return
					}
					if v[0].(int64) != 0 {
						continue
					}
					acquired.Add(1)
					n := holding.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					holding.Add(-1) // before the release: the server's count is never below ours
					if err := rdb.Do(ctx, "CONCURRENCY.RELEASE", "h:cc", id).Err(); err != nil {
						t.Error(err)
						return
					}
				}
			}(fmt.Sprint("worker-", i))
		}
		wg.Wait()
		require.LessOrEqual(t, most.Load(), int64(limit))
		require.Greater(t, acquired.Load(), int64(100))
	})
}

// TestAllOfAtomicUnderLoad runs overlapping ALLOFs on keys of many shards:
// no deadlock, and no limit is charged while another denies.
func TestAllOfAtomicUnderLoad(t *testing.T) {
	ts := testserver.Start(t, realClock)
	rdb := redis.NewClient(&redis.Options{Addr: ts.Addr, Protocol: 2, PoolSize: 16})
	defer rdb.Close()
	keys := []string{"a", "b", "c", "d", "e", "f"}
	var wg sync.WaitGroup
	var granted [6]atomic.Int64
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				x, y := (g+i)%6, (g*7+i*3+1)%6
				if x == y {
					y = (y + 1) % 6
				}
				v, err := rdb.Do(context.Background(), "ALLOF", "WINDOW", keys[x], 50, "3650d", "WINDOW", keys[y], 50, "3650d").Slice()
				if err != nil {
					t.Error(err)
					return
				}
				if v[0].([]any)[0].(int64) == 0 {
					granted[x].Add(1)
					granted[y].Add(1)
				}
			}
		}(g)
	}
	wg.Wait()
	// Each key's counter equals exactly the ALLOFs that were granted on it.
	for i, k := range keys {
		v := do(t, rdb, "WINDOW", k, 50, "3650d", "COST", 0).([]any)
		require.Equal(t, 50-granted[i].Load(), v[2], "key %s", k)
	}
}
