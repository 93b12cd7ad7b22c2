package ratelimit_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/testserver"
)

func TestCellThrottleNewKey(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Equal(t, ints(0, 16, 15, -1, 2), do(t, rdb, "CL.THROTTLE", "user123", 15, 30, 60))
}

// TestCellThrottleSequence is redis-cell's own test sequence, through the server with a set clock.
func TestCellThrottleSequence(t *testing.T) {
	ts := testserver.Start(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			rdb := ts.Client(t, proto)
			key := fmt.Sprintf("foo%d", proto)
			start := ts.Clock.Now()
			at := func(d time.Duration) { ts.Clock.Advance(start.Add(d).Sub(ts.Clock.Now())) }
			q := func(n int) any { return do(t, rdb, "cl.throttle", key, 4, 1, 1, n) }
			require.Equal(t, ints(1, 5, 5, -1, 0), q(6))
			for i := int64(0); i < 5; i++ {
				require.Equal(t, ints(0, 5, 4-i, -1, i+1), q(1))
			}
			require.Equal(t, ints(1, 5, 0, 1, 5), q(1))
			steps := []struct {
				at   time.Duration
				want []any
			}{
				{3000 * time.Millisecond, ints(0, 5, 2, -1, 3)},
				{3100 * time.Millisecond, ints(0, 5, 1, -1, 4)},
				{4000 * time.Millisecond, ints(0, 5, 1, -1, 4)},
				{8000 * time.Millisecond, ints(0, 5, 4, -1, 1)},
				{9500 * time.Millisecond, ints(0, 5, 4, -1, 1)},
			}
			for _, s := range steps {
				at(s.at)
				require.Equal(t, s.want, q(1), "at %v", s.at)
			}
			require.Equal(t, ints(0, 5, 4, -1, 1), q(0))
			require.Equal(t, ints(0, 5, 2, -1, 3), q(2))
			require.Equal(t, ints(1, 5, 2, 3, 3), q(5))
		})
	}
}

func TestThrottleDecision(t *testing.T) {
	ts := testserver.Start(t)
	r2 := ts.Client(t, 2)
	r3 := ts.Client(t, 3)
	// 10 per second sustained, 2 more at once: limit 3.
	require.Equal(t, ints(0, 3, 2, -1, 100), do(t, r2, "THROTTLE", "api", 2, 10, "1s"))
	require.Equal(t, ints(0, 3, 1, -1, 200), do(t, r2, "THROTTLE", "api", 2, 10, "1s"))
	require.Equal(t, ints(0, 3, 0, -1, 300), do(t, r2, "THROTTLE", "api", 2, 10, "1s"))
	require.Equal(t, ints(1, 3, 0, 100, 300), do(t, r2, "THROTTLE", "api", 2, 10, "1s"))
	require.Equal(t, map[any]any{"limited": int64(1), "limit": int64(3), "remaining": int64(0), "retry_after_ms": int64(100), "reset_after_ms": int64(300)},
		do(t, r3, "THROTTLE", "api", 2, 10, "1s"))
	ts.Clock.Advance(150 * time.Millisecond)
	// PEEK and COST 0 tell without taking.
	require.Equal(t, ints(0, 3, 0, -1, 250), do(t, r2, "THROTTLE", "api", 2, 10, "1s", "PEEK"))
	require.Equal(t, ints(0, 3, 1, -1, 150), do(t, r2, "THROTTLE", "api", 2, 10, "1s", "COST", 0))
	require.Equal(t, ints(0, 3, 0, -1, 250), do(t, r2, "THROTTLE", "api", 2, 10, "1s", "cost", 1))
	// A cost that can never fit is denied with retry -1, and changes nothing.
	require.Equal(t, ints(1, 3, 0, -1, 250), do(t, r2, "THROTTLE", "api", 2, 10, "1s", "COST", 4))
	require.Equal(t, "gcra", do(t, r2, "TYPE", "api"))
	require.Equal(t, int64(250), do(t, r2, "PTTL", "api"))
}

func TestGCRAVerbsShareState(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	// Each of the three verbs takes one unit of the same 5-per-minute limit.
	require.Equal(t, ints(0, 5, 4, -1, 12), do(t, rdb, "CL.THROTTLE", "shared", 4, 5, 60))
	require.Equal(t, ints(0, 5, 3, -1, 24), do(t, rdb, "GCRA", "shared", 4, 5, 60))
	require.Equal(t, ints(0, 5, 2, -1, 36000), do(t, rdb, "THROTTLE", "shared", 4, 5, "1m"))
}

func TestThrottleErrors(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "SET", "str", "hello")
	do(t, rdb, "SET", "num", "not-a-number")
	cases := []struct {
		args []any
		want string
	}{
		{[]any{"THROTTLE", "k", -1, 10, 60}, "ERR max_burst must not be negative, got -1"},
		{[]any{"THROTTLE", "k", 1, 0, 60}, "ERR count must be at least 1, got 0"},
		{[]any{"THROTTLE", "k", 1, "ten", 60}, "ERR count must be an integer, got 'ten'"},
		{[]any{"THROTTLE", "k", 1, 10, "1parsec"}, "ERR invalid period '1parsec': " + "a whole number of seconds, or a number with a unit: ms, s, m, h, d (250ms, 1.5s, 15m)"},
		{[]any{"THROTTLE", "k", 1, 10, "1.5"}, "ERR invalid period '1.5': " + "a whole number of seconds, or a number with a unit: ms, s, m, h, d (250ms, 1.5s, 15m)"},
		{[]any{"THROTTLE", "k", 1, 10, "0s"}, "ERR period must be greater than 0"},
		{[]any{"THROTTLE", "k", 1, 10, "99999999999d"}, "ERR period '99999999999d' is too long"},
		{[]any{"THROTTLE", "k", 1, 10, 60, "COST", -1}, "ERR COST must not be negative, got -1"},
		{[]any{"THROTTLE", "k", 1, 10, 60, "COST"}, "ERR COST needs a value"},
		{[]any{"THROTTLE", "k", 1, 10, 60, "FAST"}, "ERR unknown option 'FAST'"},
		{[]any{"THROTTLE", "k", 1, 10}, "ERR wrong number of arguments for 'throttle' command"},
		{[]any{"THROTTLE", "str", 1, 10, 60}, "ERR key holds a string that is not a GCRA state"},
		{[]any{"CL.THROTTLE", "num", 1, 10, 60}, "ERR key holds a string that is not a GCRA state"},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.args...), func(t *testing.T) {
			require.Equal(t, tc.want, doErr(t, rdb, tc.args...))
		})
	}
	// A failed call leaves no state behind.
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "k"))
	require.Equal(t, "hello", do(t, rdb, "GET", "str"))
}

// closeEnough is the share of a limit that hammering one key must reach: not all of it, as on
// a loaded machine the clients do not keep the key saturated every moment of the run.
const closeEnough = 0.75

// TestThrottleNoOverAdmission hammers one key from many connections on the
// real clock: what is allowed never exceeds limit + rate x elapsed, and comes close.
func TestThrottleNoOverAdmission(t *testing.T) {
	ts := testserver.Start(t, realClock)
	const (
		conns  = 40
		burst  = 49 // limit 50
		rate   = 200
		period = time.Second
		run    = 2 * time.Second
	)
	for _, verb := range []string{"THROTTLE", "CL.THROTTLE", "GCRA"} {
		t.Run(verb, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: ts.Addr, Protocol: 2, PoolSize: conns})
			defer rdb.Close()
			key := "hot:" + verb
			args := []any{verb, key, burst, rate, 1}
			if verb == "THROTTLE" {
				args[4] = "1s"
			}
			allowed, elapsed := hammer(t, rdb, conns, run, args)
			bound := float64(burst+1) + rate*elapsed.Seconds()/period.Seconds()
			got := float64(allowed)
			require.LessOrEqual(t, got, bound+1, "allowed %v in %v", got, elapsed)
			require.Greater(t, got, closeEnough*(float64(burst+1)+rate*run.Seconds()), "allowed %v in %v", got, elapsed)
		})
	}
}

// hammer sends args from conns connections for run and returns how many
// were allowed (a first reply element of 0) and how long it took.
func hammer(t *testing.T, rdb *redis.Client, conns int, run time.Duration, args []any) (int64, time.Duration) {
	var allowed atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < run {
				v, err := rdb.Do(context.Background(), args...).Slice()
				if err != nil {
					t.Error(err)
					return
				}
				if v[0].(int64) == 0 {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return allowed.Load(), time.Since(start)
}

// TestShardsIndependent checks that a hot key does not affect keys on other shards.
func TestShardsIndependent(t *testing.T) {
	ts := testserver.Start(t, realClock)
	rdb := redis.NewClient(&redis.Options{Addr: ts.Addr, Protocol: 2, PoolSize: 20})
	defer rdb.Close()
	ctx := context.Background()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					rdb.Do(ctx, "THROTTLE", "hot", 0, 1, "1h")
				}
			}
		}()
	}
	// Keys elsewhere keep their own budgets while the hot key is denied.
	for i := 0; i < 200; i++ {
		v, err := rdb.Do(ctx, "THROTTLE", fmt.Sprintf("cold:%d", i), 2, 1, "1h").Slice()
		require.NoError(t, err)
		require.Equal(t, ints(0, 3, 2), v[:3])
	}
	close(stop)
	wg.Wait()
	require.Equal(t, int64(1), do(t, rdb, "EXISTS", "hot"))
}
