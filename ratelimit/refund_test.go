package ratelimit_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

func TestRefundEachVerb(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	for _, tc := range []struct {
		name string
		args []any
		full []any // the reply of a refund that fills the key: an idle key
	}{
		{"throttle", []any{"THROTTLE", "r:gcra", 4, 1, "1s"}, ints(0, 5, 5, -1, 0)},
		{"tokenbucket", []any{"TOKENBUCKET", "r:tb", 5, 1, "1s"}, ints(0, 5, 5, -1, 0)},
		{"leakybucket", []any{"LEAKYBUCKET", "r:lb", 5, 1, "1s"}, ints(0, 5, 5, -1, 0, 0)},
		{"slide", []any{"SLIDE", "r:sl", 5, "1s"}, ints(0, 5, 5, -1, 0)},
		{"slide approx", []any{"SLIDE", "r:sc", 5, "1s", "APPROX"}, ints(0, 5, 5, -1, 0)},
		{"window", []any{"WINDOW", "r:fw", 5, "1s"}, ints(0, 5, 5, -1, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := func(opts ...any) []any {
				return do(t, rdb, append(append([]any{}, tc.args...), opts...)...).([]any)
			}
			require.Equal(t, tc.full, call("REFUND", 3), "a key holding nothing stays as it is")
			require.Equal(t, int64(0), do(t, rdb, "EXISTS", tc.args[1]))
			require.Equal(t, int64(0), call("COST", 5)[2])
			require.Equal(t, int64(1), call()[0])
			before := infoInt(t, rdb, "throttle_refunded")
			d := call("REFUND", 2)
			require.Equal(t, int64(0), d[0], "a refund is never limited")
			require.Equal(t, int64(2), d[2], "remaining after the refund")
			require.Equal(t, before+2, infoInt(t, rdb, "throttle_refunded"))
			require.Equal(t, int64(0), call("COST", 2)[0])
			require.Equal(t, int64(1), call()[0])
			require.Equal(t, int64(2), call("REFUND", 2, "PEEK")[2], "PEEK changes nothing")
			require.Equal(t, int64(1), call()[0])
			require.Equal(t, tc.full, call("REFUND", 100), "never past full")
			require.Equal(t, int64(0), do(t, rdb, "EXISTS", tc.args[1]), "a full key goes")
		})
	}
}

func TestRefundErrors(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"THROTTLE", "k", 4, 1, "1s", "COST", 2, "REFUND", 1}, "ERR syntax error: REFUND takes nothing, so it cannot go with COST"},
		{[]any{"TOKENBUCKET", "k", 4, 1, "1s", "REFUND", 1, "REFUND", 1}, "ERR REFUND given twice"},
		{[]any{"WINDOW", "k", 4, "1s", "REFUND"}, "ERR REFUND needs a value"},
		{[]any{"WINDOW", "k", 4, "1s", "REFUND", -1}, "ERR REFUND must not be negative, got -1"},
		{[]any{"WINDOW", "k", 4, "1s", "REFUND", "x"}, "ERR REFUND must be an integer, got 'x'"},
		{[]any{"CONCURRENCY.ACQUIRE", "k", 4, "1s", "id", "REFUND", 1}, "ERR CONCURRENCY.ACQUIRE takes no REFUND, TIERS, PRIORITY nor BLOCK: CONCURRENCY.RELEASE frees an id's slots"},
		{[]any{"CL.THROTTLE", "k", 4, 1, 1, "REFUND"}, "Cell error: Store error: Couldn't parse as integer: REFUND"},
		{[]any{"ALLOF", "WINDOW", "a", 4, "1s", "REFUND", 1, "COST", 1}, "ERR syntax error: REFUND takes nothing, so it cannot go with COST"},
	} {
		require.Equal(t, tc.want, doErr(t, rdb, tc.args...), "%v", tc.args)
	}
	// A refund on a key of another algorithm is WRONGTYPE, as any verb.
	do(t, rdb, "WINDOW", "w", 4, "1s")
	require.Equal(t, "WRONGTYPE Operation against a key holding the wrong kind of value", doErr(t, rdb, "TOKENBUCKET", "w", 4, 1, "1s", "REFUND", 1))
}

func TestRefundAllOfAndCheck(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "ALLOF", "WINDOW", "a", 5, "1m", "COST", 5, "THROTTLE", "b", 4, 1, "1s", "COST", 5)
	got := do(t, rdb, "ALLOF", "WINDOW", "a", 5, "1m", "REFUND", 3, "THROTTLE", "b", 4, 1, "1s", "REFUND", 1).([]any)
	require.Equal(t, ints(0, 5, 1, -1, 40000), got[0])
	require.Equal(t, ints(0, 5, 3, -1, 40000), got[1])
	require.Equal(t, ints(0, 5, 1, -1, 4000), got[2])
	// All or nothing: a refund goes with a take that is denied nowhere.
	got = do(t, rdb, "ALLOF", "WINDOW", "a", 5, "1m", "REFUND", 1, "THROTTLE", "b", 4, 1, "1s", "COST", 2).([]any)
	require.Equal(t, int64(1), got[0].([]any)[0])
	require.Equal(t, int64(3), do(t, rdb, "WINDOW", "a", 5, "1m", "COST", 0).([]any)[2])

	require.Equal(t, "OK", do(t, rdb, "POLICY.SET", "api", "WINDOW", 10, "1m"))
	require.Equal(t, int64(0), do(t, rdb, "CHECK", "api", "m7", "COST", 10).([]any)[2])
	require.Equal(t, []any{int64(0), int64(10), int64(4), int64(-1), int64(40000), "ok"}, do(t, rdb, "CHECK", "api", "m7", "REFUND", 4))
	require.Equal(t, "ERR COST, PEEK, REFUND and PRIORITY belong to CHECK, not to a policy", doErr(t, rdb, "POLICY.SET", "x", "WINDOW", 10, "1m", "REFUND", 1))
}

func TestTiers(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	tiers := []any{"TIERS", "payments=1", "default=0.8", "batch=0.5"}
	for _, tc := range []struct {
		name string
		args []any
	}{
		{"throttle", []any{"THROTTLE", "t:gcra", 9, 1, "1m"}},
		{"tokenbucket", []any{"TOKENBUCKET", "t:tb", 10, 1, "1m"}},
		{"leakybucket", []any{"LEAKYBUCKET", "t:lb", 10, 1, "1m"}},
		{"slide", []any{"SLIDE", "t:sl", 10, "1m"}},
		{"slide approx", []any{"SLIDE", "t:sc", 10, "1m", "APPROX"}},
		{"window", []any{"WINDOW", "t:fw", 10, "1m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := func(opts ...any) []any {
				a := append(append(append([]any{}, tc.args...), tiers...), opts...)
				return do(t, rdb, a...).([]any)
			}
			d := call("PRIORITY", "batch", "COST", 0)
			require.Equal(t, []any{int64(0), int64(5), int64(5)}, d[:3], "batch's limit and remaining")
			for i := 0; i < 5; i++ {
				require.Equal(t, int64(0), call("PRIORITY", "batch")[0])
			}
			d = call("PRIORITY", "batch")
			require.Equal(t, int64(1), d[0], "batch has used its half")
			require.Greater(t, d[3], int64(0), "and waits")
			require.Equal(t, int64(-1), call("PRIORITY", "batch", "COST", 6)[3], "more than the tier's share never fits")
			d = call() // no PRIORITY: default
			require.Equal(t, []any{int64(0), int64(8), int64(2)}, d[:3])
			require.Equal(t, int64(0), call("COST", 2)[0])
			require.Equal(t, int64(1), call()[0], "default keeps 2 for payments")
			d = call("PRIORITY", "payments", "COST", 2)
			require.Equal(t, []any{int64(0), int64(10), int64(0)}, d[:3])
			require.Equal(t, int64(1), call("PRIORITY", "payments")[0])
			d = call("PRIORITY", "payments", "REFUND", 3)
			require.Equal(t, []any{int64(0), int64(10), int64(3)}, d[:3])
			require.Equal(t, int64(1), call("PRIORITY", "default", "COST", 0)[2])
		})
	}
	require.Equal(t, "ERR unknown tier 'gold': the limit's TIERS do not name it", doErr(t, rdb, "WINDOW", "x", 10, "1m", "TIERS", "payments=1", "PRIORITY", "gold"))
	require.Equal(t, "ERR unknown tier 'gold': the limit has no TIERS", doErr(t, rdb, "WINDOW", "x", 10, "1m", "PRIORITY", "gold"))
	require.Equal(t, "ERR tier 'a': share must be a number above 0 and at most 1, got '1.5'", doErr(t, rdb, "WINDOW", "x", 10, "1m", "TIERS", "a=1.5"))
	require.Equal(t, "ERR tier 'a' named twice", doErr(t, rdb, "WINDOW", "x", 10, "1m", "TIERS", "a=1", "a=0.5"))
	require.Equal(t, "ERR TIERS needs one or more name=share", doErr(t, rdb, "WINDOW", "x", 10, "1m", "TIERS", "PEEK"))
	// No tier named default: a call without PRIORITY may use everything.
	require.Equal(t, int64(10), do(t, rdb, "WINDOW", "y", 10, "1m", "TIERS", "list=0.5", "COST", 0).([]any)[1])
}

func TestTiersInPolicies(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Equal(t, "OK", do(t, rdb, "POLICY.SET", "api", "THROTTLE", 999, 1000, "1m", "TIERS", "payments=1", "default=0.8"))
	d := do(t, rdb, "CHECK", "api", "merchant-7", "COST", 800).([]any)
	require.Equal(t, []any{int64(0), int64(800), int64(0)}, d[:3])
	require.Equal(t, int64(1), do(t, rdb, "CHECK", "api", "merchant-7").([]any)[0])
	d = do(t, rdb, "CHECK", "api", "merchant-7", "PRIORITY", "payments").([]any)
	require.Equal(t, []any{int64(0), int64(1000), int64(199)}, d[:3])
	require.Equal(t, "ERR CHECK policy 'api': unknown tier 'gold': the limit's TIERS do not name it", doErr(t, rdb, "CHECK", "api", "m", "PRIORITY", "gold"))
	require.Equal(t, "ERR unknown option 'TIERS'", doErr(t, rdb, "CHECK", "api", "m", "TIERS", "a=1"))
	require.Equal(t, "ERR unknown tier 'gold': the limit's TIERS do not name it", doErr(t, rdb, "POLICY.SET", "b", "WINDOW", 10, "1m", "TIERS", "a=1", "PRIORITY", "gold"))
}

// TestRefundNoOverAdmission: 64 connections per algorithm take and refund on one key at a
// frozen clock: admissions never pass the limit plus what was refunded (INFO's count of
// units given back), and reach it.
func TestRefundNoOverAdmission(t *testing.T) {
	ts := testserver.Start(t)
	const conns, ops = 64, 40
	for _, tc := range []struct {
		name string
		args []any
	}{
		{"throttle", []any{"THROTTLE", "o:gcra", 199, 1, "1h"}},
		{"tokenbucket", []any{"TOKENBUCKET", "o:tb", 200, 1, "1h"}},
		{"leakybucket", []any{"LEAKYBUCKET", "o:lb", 200, 1, "1h"}},
		{"slide", []any{"SLIDE", "o:sl", 200, "1h"}},
		{"slide approx", []any{"SLIDE", "o:sc", 200, "1h", "APPROX"}},
		{"window", []any{"WINDOW", "o:fw", 200, "1h"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: ts.Addr, Protocol: 2, PoolSize: conns})
			defer rdb.Close()
			before := infoInt(t, rdb, "throttle_refunded")
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for i := 0; i < conns; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					ctx := context.Background()
					for j := 0; j < ops; j++ {
						v, err := rdb.Do(ctx, tc.args...).Slice()
						if err != nil {
							t.Error(err)
							return
						}
						if v[0].(int64) != 0 {
							continue
						}
						admitted.Add(1)
						if (i+j)%3 == 0 { // failed before doing any work: give it back
							if err := rdb.Do(ctx, append(append([]any{}, tc.args...), "REFUND", 1)...).Err(); err != nil {
								t.Error(err)
								return
							}
						}
					}
				}(i)
			}
			wg.Wait()
			refunded := infoInt(t, rdb, "throttle_refunded") - before
			require.Greater(t, refunded, int64(0))
			require.Equal(t, 200+refunded, admitted.Load(), "refunded %d", refunded)
		})
	}
}

// TestTiersKeepTheReserve: a flood of default calls (share 0.8) from 60 connections and
// payments from 4, window after window: payments always get at least 20% of the limit,
// and the total never passes it.
func TestTiersKeepTheReserve(t *testing.T) {
	ts := testserver.Start(t)
	const limit, window = 500, time.Minute
	tiers := []any{"TIERS", "payments=1", "default=0.8"}
	for _, tc := range []struct {
		name string
		args []any
	}{
		{"throttle", []any{"THROTTLE", "f:gcra", limit - 1, limit, "1m"}},
		{"tokenbucket", []any{"TOKENBUCKET", "f:tb", limit, limit, "1m"}},
		{"leakybucket", []any{"LEAKYBUCKET", "f:lb", limit, limit, "1m"}},
		{"slide", []any{"SLIDE", "f:sl", limit, "1m"}},
		{"slide approx", []any{"SLIDE", "f:sc", limit, "1m", "APPROX"}},
		{"window", []any{"WINDOW", "f:fw", limit, "1m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Addr: ts.Addr, Protocol: 2, PoolSize: 64})
			defer rdb.Close()
			base := append(append([]any{}, tc.args...), tiers...)
			payments := append(append([]any{}, base...), "PRIORITY", "payments")
			for w := 0; w < 3; w++ {
				var paid, listed atomic.Int64
				var payersLeft atomic.Int32
				payersLeft.Store(4)
				var wg sync.WaitGroup
				run := func(args []any, n *atomic.Int64, payer bool) {
					defer wg.Done()
					if payer {
						defer payersLeft.Add(-1)
					}
					ctx := context.Background()
					for payersLeft.Load() > 0 {
						v, err := rdb.Do(ctx, args...).Slice()
						if err != nil {
							t.Error(err)
							return
						}
						if v[0].(int64) == 0 {
							n.Add(1)
						} else if payer {
							return // the limit is used up
						}
					}
				}
				for i := 0; i < 64; i++ {
					wg.Add(1)
					if i%16 == 0 {
						go run(payments, &paid, true)
					} else {
						go run(base, &listed, false)
					}
				}
				wg.Wait()
				require.GreaterOrEqual(t, paid.Load(), int64(limit/5), "window %d: payments %d, default %d", w, paid.Load(), listed.Load())
				require.LessOrEqual(t, listed.Load(), int64(limit*4/5), "window %d", w)
				require.LessOrEqual(t, paid.Load()+listed.Load(), int64(limit), "window %d", w)
				ts.Clock.Advance(2 * window) // idle again
			}
		})
	}
}

func TestTiersFromConfigFile(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	writeFile(t, conf, "port 0\npolicy api THROTTLE 9 10 1m TIERS payments=1 default=0.8 SOFT 0.5\n")
	ts := testserver.Start(t, func(c *server.Config) { c.ConfigFile = conf })
	rdb := ts.Client(t, 2)
	require.Equal(t, []any{int64(0), int64(8), int64(0), int64(-1)}, check(t, rdb, "api", "m", "COST", "8")[:4])
	require.Equal(t, int64(1), check(t, rdb, "api", "m")[0])
	require.Equal(t, []any{int64(0), int64(10), int64(1)}, check(t, rdb, "api", "m", "PRIORITY", "payments")[:3])
	writeFile(t, conf, "port 0\npolicy api THROTTLE 9 10 1m TIERS payments=2\n")
	require.Error(t, rdb.Do(context.Background(), "POLICY.RELOAD").Err(), "a bad share keeps the old policies")
	require.Equal(t, int64(10), check(t, rdb, "api", "m", "PRIORITY", "payments", "COST", "0")[1])
}

func TestTiersAndRefundsInAllOf(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	tiers := []any{"TIERS", "payments=1", "default=0.5"}
	allof := func(opts ...any) []any {
		a := append([]any{"ALLOF", "WINDOW", "m:min", 10, "1m"}, tiers...)
		a = append(append(a, opts...), "WINDOW", "m:day", 100, "1d")
		return do(t, rdb, a...).([]any)
	}
	got := allof("COST", 5)
	require.Equal(t, []any{int64(0), int64(5), int64(0)}, got[1].([]any)[:3], "the tier's limit and remaining")
	require.Equal(t, int64(5), got[0].([]any)[1], "the least limit")
	got = allof()
	require.Equal(t, int64(1), got[0].([]any)[0], "default has used its half")
	require.Equal(t, int64(99), do(t, rdb, "WINDOW", "m:day", 100, "1d", "COST", 0).([]any)[2], "nothing taken from a limit of a denied ALLOF")
	got = allof("PRIORITY", "payments")
	require.Equal(t, int64(0), got[0].([]any)[0])
	require.Equal(t, []any{int64(0), int64(10), int64(4)}, got[1].([]any)[:3])
	// A key named twice: the refund, then a cost on what it leaves.
	got = do(t, rdb, "ALLOF", "WINDOW", "m:min", 10, "1m", "REFUND", 6, "WINDOW", "m:min", 10, "1m", "COST", 10).([]any)
	require.Equal(t, int64(0), got[0].([]any)[0], "the refund made the key idle: the whole limit fits")
	require.Equal(t, int64(0), do(t, rdb, "WINDOW", "m:min", 10, "1m", "COST", 0).([]any)[2])
}
