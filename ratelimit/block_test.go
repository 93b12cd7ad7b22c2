package ratelimit_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

// TestBlockEachVerb: BLOCK on every native verb, with the clock injected. Each limit is 5
// units that come back within 5 s; the block is 10 s. Once a call with BLOCK is denied, the
// key stays denied for the block, with retry_after its rest, although the algorithm would
// admit again; calls without BLOCK and PEEK see it too; then the key is the algorithm's again.
func TestBlockEachVerb(t *testing.T) {
	for _, tc := range []struct {
		name, typ string
		args      []any
	}{
		{"throttle", "gcra", []any{"THROTTLE", "b:gcra", 4, 1, "1s"}},
		{"tokenbucket", "tokenbucket", []any{"TOKENBUCKET", "b:tb", 5, 1, "1s"}},
		{"leakybucket", "leakybucket", []any{"LEAKYBUCKET", "b:lb", 5, 1, "1s"}},
		{"slide", "slidinglog", []any{"SLIDE", "b:sl", 5, "1s"}},
		{"slide approx", "slidingcounter", []any{"SLIDE", "b:sc", 5, "1s", "APPROX"}},
		{"window", "fixedwindow", []any{"WINDOW", "b:fw", 5, "1s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := testserver.Start(t)
			rdb := ts.Client(t, 2)
			call := func(opts ...any) []any {
				d := do(t, rdb, append(append([]any{}, tc.args...), opts...)...).([]any)
				return d[:5] // LEAKYBUCKET's delay_ms aside
			}
			key := tc.args[1]
			require.Equal(t, int64(0), call("COST", 5, "BLOCK", "10s")[0], "an allowed call starts nothing")
			require.Equal(t, int64(0), infoInt(t, rdb, "throttle_blocks_started"))

			d := call("BLOCK", "10s")
			require.Equal(t, int64(1), d[0], "denied: the block starts")
			require.Equal(t, int64(5), d[1])
			require.Equal(t, int64(0), d[2])
			require.Equal(t, int64(10000), d[3], "retry_after is the block")
			require.Equal(t, int64(10000), d[4], "and the key is not idle before it ends")
			require.Equal(t, int64(10000), do(t, rdb, "PTTL", key), "the key lives as long as its block")
			require.Equal(t, tc.typ, do(t, rdb, "TYPE", key), "TYPE still names the algorithm")
			require.Equal(t, int64(1), infoInt(t, rdb, "throttle_blocks_started"))

			ts.Clock.Advance(6 * time.Second) // the algorithm would admit 5 again
			require.Equal(t, ints(1, 5, 0, 4000, 4000), call("BLOCK", "10s"), "the block holds, and is not extended")
			require.Equal(t, ints(1, 5, 0, 4000, 4000), call(), "a call without BLOCK sees it")
			require.Equal(t, ints(1, 5, 0, 4000, 4000), call("PEEK"), "PEEK sees it")
			require.Equal(t, ints(1, 5, 0, 4000, 4000), call("COST", 0), "a probe sees it")
			require.Equal(t, int64(4), infoInt(t, rdb, "throttle_blocked"))

			ts.Clock.Advance(3999 * time.Millisecond)
			require.Equal(t, int64(1), call()[3], "1 ms left")
			ts.Clock.Advance(time.Millisecond)
			require.Equal(t, int64(0), call("COST", 5)[0], "the block has ended: the algorithm decides")
			d = call()
			require.Equal(t, int64(1), d[0])
			require.Less(t, d[3].(int64), int64(2000), "a denial without BLOCK starts none")
			require.Equal(t, int64(1), infoInt(t, rdb, "throttle_blocks_started"))
		})
	}
}

// TestBlockDoesNotStart: a denial starts a block only where it says something of the key's
// traffic: not a cost that can never fit, not a PEEK, not a REFUND, and not a tier denied for
// the reserve it must leave to the tiers above.
func TestBlockDoesNotStart(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Equal(t, ints(1, 5, 5, -1, 0), do(t, rdb, "WINDOW", "n", 5, "1m", "COST", 6, "BLOCK", "1h"))
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "n"))
	do(t, rdb, "WINDOW", "n", 5, "1m", "COST", 5)
	require.Equal(t, int64(1), do(t, rdb, "WINDOW", "n", 5, "1m", "PEEK", "BLOCK", "1h").([]any)[0])
	require.Equal(t, int64(1), do(t, rdb, "WINDOW", "n", 5, "1m", "REFUND", 1, "BLOCK", "1h").([]any)[2].(int64))
	require.Equal(t, int64(40000), do(t, rdb, "PTTL", "n"), "no block: the window's end (the clock stands 20 s into a minute)")
	do(t, rdb, "WINDOW", "t", 10, "1m", "COST", 7)
	d := do(t, rdb, "WINDOW", "t", 10, "1m", "COST", 2, "TIERS", "payments=1", "default=0.8", "BLOCK", "1h").([]any)
	require.Equal(t, int64(1), d[0], "the default tier may not take the last 2")
	require.Equal(t, int64(0), do(t, rdb, "WINDOW", "t", 10, "1m", "COST", 2, "TIERS", "payments=1", "default=0.8", "PRIORITY", "payments").([]any)[0],
		"payments still may: the key is not blocked")
	require.Equal(t, int64(0), infoInt(t, rdb, "throttle_blocks_started"))
}

// TestBlockRefund: a REFUND in a block gives its units back to the algorithm's state, which
// the block keeps; it answers nothing left until the block ends, and then the units are there.
func TestBlockRefund(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	tb := func(opts ...any) []any {
		return do(t, rdb, append([]any{"TOKENBUCKET", "r", 10, 1, "1m"}, opts...)...).([]any)
	}
	tb("COST", 10)
	require.Equal(t, int64(1), tb("BLOCK", "30s")[0])
	require.Equal(t, ints(0, 10, 0, -1, 360000), tb("REFUND", 4), "a refund is no denial; nothing is left in the block")
	require.Equal(t, int64(1), tb()[0])
	ts.Clock.Advance(30 * time.Second)
	require.Equal(t, ints(0, 10, 4), tb("COST", 0)[:3], "the 4 came back (and half a token refilled in 30 s)")

	// A refund that makes the key idle in its block: the block alone stays, then nothing.
	tb = func(opts ...any) []any {
		return do(t, rdb, append([]any{"TOKENBUCKET", "r2", 10, 1, "1m"}, opts...)...).([]any)
	}
	tb("COST", 10)
	require.Equal(t, int64(1), tb("BLOCK", "30s")[0])
	require.Equal(t, ints(0, 10, 0, -1, 30000), tb("REFUND", 100), "idle but for the block")
	require.Equal(t, int64(1), tb()[0])
	ts.Clock.Advance(30 * time.Second)
	require.Equal(t, ints(0, 10, 10, -1, 0), tb("COST", 0), "full")
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "r2"), "and gone")
}

// TestBlockAllOf: BLOCK in ALLOF's parts. A denied ALLOF takes nothing, but the part that
// was denied with BLOCK starts its block; a part in its block denies the ALLOF.
func TestBlockAllOf(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	allOf := func(cost int) []any {
		return do(t, rdb, "ALLOF", "WINDOW", "a", 10, "1m", "COST", cost, "BLOCK", "5m", "THROTTLE", "b", 9, 10, "1m", "COST", cost, "BLOCK", "5m").([]any)
	}
	require.Equal(t, int64(0), allOf(8)[0].([]any)[0])
	do(t, rdb, "THROTTLE", "b", 9, 10, "1m", "REFUND", 8) // b has room again, a not
	r := allOf(3)
	require.Equal(t, ints(1, 10, 0, 300000, 300000), r[0], "denied for the block")
	require.Equal(t, ints(1, 10, 0, 300000, 300000), r[1], "a: denied, its block starts")
	require.Equal(t, int64(0), r[2].([]any)[0], "b would have passed")
	require.Equal(t, int64(0), do(t, rdb, "THROTTLE", "b", 9, 10, "1m", "PEEK").([]any)[0], "b took nothing and is not blocked")
	ts.Clock.Advance(time.Minute) // a's window is new: only the block denies
	r = allOf(1)
	require.Equal(t, ints(1, 10, 0, 240000, 240000), r[1])
	require.Equal(t, int64(1), infoInt(t, rdb, "throttle_blocks_started"))
	require.Equal(t, int64(1), infoInt(t, rdb, "throttle_blocked"))
}

// TestBlockPolicy: BLOCK in a policy (POLICY.SET, POLICY.OVERRIDE, the config file): CHECK
// starts the subject's block and answers it; shadow mode lets it pass and starts none.
func TestBlockPolicy(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	writeFile(t, conf, "port 0\npolicy login SLIDE 3 1m BLOCK 15m\n")
	ts := testserver.Start(t, func(c *server.Config) { c.ConfigFile = conf })
	rdb := ts.Client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "THROTTLE", "1", "2", "1m", "BLOCK", "1h")
	do(t, rdb, "POLICY.OVERRIDE", "api", "vip", "THROTTLE", "9", "10", "1m", "BLOCK", "90s")
	do(t, rdb, "POLICY.SET", "try", "WINDOW", "1", "1m", "BLOCK", "1h", "SHADOW")
	require.Equal(t, "THROTTLE 1 2 1m BLOCK 1h", do(t, rdb, "POLICY.GET", "api").([]any)[3])
	for _, tc := range []struct {
		policy, subject string
		n               int   // calls that pass
		block           int64 // ms
	}{{"login", "u", 3, 900000}, {"api", "u", 2, 3600000}, {"api", "vip", 10, 90000}} {
		for range tc.n {
			require.Equal(t, int64(0), check(t, rdb, tc.policy, tc.subject)[0], "%+v", tc)
		}
		d := check(t, rdb, tc.policy, tc.subject)
		require.Equal(t, []any{int64(1), int64(tc.n), int64(0), tc.block, tc.block, "ok"}, d, "%+v", tc)
		ts.Clock.Advance(time.Minute)
		require.Equal(t, tc.block-60000, check(t, rdb, tc.policy, tc.subject)[3], "%+v", tc)
	}
	check(t, rdb, "try", "u")
	require.Equal(t, "shadow", check(t, rdb, "try", "u")[5])
	require.Equal(t, int64(0), check(t, rdb, "try", "u")[0])
	require.Equal(t, int64(3), infoInt(t, rdb, "throttle_blocks_started"))
	require.Contains(t, doErr(t, rdb, "CHECK", "api", "u", "BLOCK", "1m"), "unknown option 'BLOCK'", "BLOCK is the policy's")
	require.Contains(t, doErr(t, rdb, "POLICY.SET", "x", "WINDOW", 1, "1m", "BLOCK", "0"), "BLOCK must be greater than 0")
}

// TestBlockErrors: every bad BLOCK gets an error that names it.
func TestBlockErrors(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"THROTTLE", "k", 4, 1, "1s", "BLOCK"}, "ERR BLOCK needs a duration: a whole number of seconds, or a number with a unit: ms, s, m, h, d (250ms, 1.5s, 15m)"},
		{[]any{"THROTTLE", "k", 4, 1, "1s", "BLOCK", "1m", "BLOCK", "1m"}, "ERR BLOCK given twice"},
		{[]any{"WINDOW", "k", 4, "1s", "BLOCK", "0"}, "ERR BLOCK must be greater than 0"},
		{[]any{"WINDOW", "k", 4, "1s", "BLOCK", "-1"}, "ERR invalid BLOCK '-1': a whole number of seconds, or a number with a unit: ms, s, m, h, d (250ms, 1.5s, 15m)"},
		{[]any{"WINDOW", "k", 4, "1s", "BLOCK", "1.5"}, "ERR invalid BLOCK '1.5': a whole number of seconds, or a number with a unit: ms, s, m, h, d (250ms, 1.5s, 15m)"},
		{[]any{"SLIDE", "k", 4, "1s", "BLOCK", "1w"}, "ERR invalid BLOCK '1w': a whole number of seconds, or a number with a unit: ms, s, m, h, d (250ms, 1.5s, 15m)"},
		{[]any{"SLIDE", "k", 4, "1s", "BLOCK", "99999d"}, "ERR BLOCK must be at most 73 years"},
		{[]any{"CONCURRENCY.ACQUIRE", "k", 4, "1s", "id", "BLOCK", "1m"}, "ERR CONCURRENCY.ACQUIRE takes no REFUND, TIERS, PRIORITY nor BLOCK: CONCURRENCY.RELEASE frees an id's slots"},
		{[]any{"ALLOF", "WINDOW", "a", 4, "1s", "BLOCK"}, "ERR BLOCK needs a duration: a whole number of seconds, or a number with a unit: ms, s, m, h, d (250ms, 1.5s, 15m)"},
	} {
		require.Equal(t, tc.want, doErr(t, rdb, tc.args...), "%v", tc.args)
	}
	// BLOCK's value is never taken for ALLOF's next verb.
	require.Equal(t, "ERR invalid BLOCK 'WINDOW': a whole number of seconds, or a number with a unit: ms, s, m, h, d (250ms, 1.5s, 15m)",
		doErr(t, rdb, "ALLOF", "WINDOW", "a", 4, "1s", "BLOCK", "WINDOW", "b", 4, "1s"))
}

// TestBlockDenyEvents: a denial in a block says so in its deny event.
func TestBlockDenyEvents(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	ctx := context.Background()
	sub := rdb.Subscribe(ctx, "__throttled__:denied")
	t.Cleanup(func() { sub.Close() })
	_, err := sub.Receive(ctx)
	require.NoError(t, err)
	do(t, rdb, "WINDOW", "e k", 1, "1m")
	do(t, rdb, "WINDOW", "e k", 1, "1m")
	do(t, rdb, "WINDOW", "e k", 1, "1m", "BLOCK", "2m")
	do(t, rdb, "WINDOW", "e k", 1, "1m")
	for _, want := range []string{"window e k 40000", "window e k 120000 blocked", "window e k 120000 blocked"} {
		m, err := sub.ReceiveMessage(ctx)
		require.NoError(t, err)
		require.Equal(t, want, m.Payload)
	}
}
