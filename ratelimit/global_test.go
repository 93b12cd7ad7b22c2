package ratelimit_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/ratelimit"
	"github.com/throttledhq/throttled/server"
	"github.com/throttledhq/throttled/upstream"
)

// TestGlobalErrors: GLOBAL needs upstream mode, and takes none of the options an allowance
// cannot honour; each mistake gets an error that says why.
func TestGlobalErrors(t *testing.T) {
	local := testserver.Start(t).Client(t, 2)
	require.Equal(t, "ERR GLOBAL needs upstream mode (upstream or upstream-cluster): the instances agree on a global limit through it",
		doErr(t, local, "THROTTLE", "k", 9, 1, "1s", "GLOBAL"))
	require.Equal(t, "global-sync-interval", do(t, local, "CONFIG", "GET", "global-sync-interval").([]any)[0])
	require.Equal(t, "500ms", do(t, local, "CONFIG", "GET", "global-sync-interval").([]any)[1])
	require.Contains(t, doErr(t, local, "CONFIG", "SET", "global-sync-interval", "5ms"), "global-sync-interval: 5ms is not between 10ms and 1m0s")
	require.Contains(t, doErr(t, local, "CONFIG", "SET", "global-sync-interval", "soon"), `global-sync-interval: "soon" is not a duration`)
	require.Contains(t, do(t, local, "INFO", "global").(string), "global_mode:none")
	require.Equal(t, "ERR GLOBAL needs upstream mode (upstream or upstream-cluster): the instances agree on a global limit through it",
		doErr(t, local, "POLICY.SET", "p", "THROTTLE", 9, 1, "1s", "GLOBAL"))
	// The config file's GLOBAL policy is taken (a file may serve both modes), and refused
	// by CHECK outside upstream mode, with its name.
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	writeFile(t, conf, "port 0\npolicy g THROTTLE 9 1 1s GLOBAL\n")
	filed := testserver.Start(t, func(c *server.Config) { c.ConfigFile = conf }).Client(t, 2)
	require.Equal(t, "ERR policy 'g' is GLOBAL: GLOBAL needs upstream mode (upstream or upstream-cluster): the instances agree on a global limit through it",
		doErr(t, filed, "CHECK", "g", "alice"))

	redis := redistest.Start(t)
	up := testserver.Start(t, func(c *server.Config) {
		c.AppendOnly, c.Upstream, c.UpstreamTimeout = false, redis.URL(), time.Minute
	}).Client(t, 2)
	for _, tc := range []struct {
		name string
		args []any
		want string
	}{
		{"refund", []any{"THROTTLE", "k", 9, 1, "1s", "GLOBAL", "REFUND", 1}, "ERR GLOBAL takes no REFUND, TIERS, PRIORITY nor BLOCK"},
		{"block", []any{"TOKENBUCKET", "k", 9, 1, "1s", "BLOCK", "1s", "GLOBAL"}, "ERR GLOBAL takes no REFUND, TIERS, PRIORITY nor BLOCK"},
		{"tiers", []any{"WINDOW", "k", 9, "1s", "GLOBAL", "TIERS", "a=1"}, "ERR GLOBAL takes no REFUND, TIERS, PRIORITY nor BLOCK"},
		{"concurrency", []any{"CONCURRENCY.ACQUIRE", "k", 9, "1s", "id", "GLOBAL"},
			"ERR CONCURRENCY.ACQUIRE takes no GLOBAL: a slot is held, not spent; without GLOBAL it is exact through the upstream"},
		{"allof", []any{"ALLOF", "THROTTLE", "{a}x", 9, 1, "1s", "GLOBAL", "THROTTLE", "{a}y", 9, 1, "1s"},
			"ERR GLOBAL is not taken inside ALLOF: a global limit is decided alone, from its own allowance"},
		{"bad cost", []any{"THROTTLE", "k", 9, 1, "1s", "GLOBAL", "COST", -1}, "ERR COST must not be negative, got -1"},
		{"bad params", []any{"SLIDE", "k", 0, "1s", "GLOBAL"}, "ERR limit must be at least 1, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, doErr(t, up, tc.args...), tc.want)
		})
	}
}

// twoGlobalInstances starts a redis-server and two instances in upstream mode on it that
// sync every interval and share one clock that stands still, and returns the redis-server and
// a client of each instance.
func twoGlobalInstances(t *testing.T, interval time.Duration) (*redistest.Server, *goredis.Client, *goredis.Client) {
	redis := redistest.Start(t)
	clk := testserver.Start(t).Clock // one clock for both
	up := func() *goredis.Client {
		return testserver.Start(t, func(c *server.Config) {
			c.AppendOnly, c.Upstream, c.UpstreamTimeout, c.GlobalSyncInterval = false, redis.URL(), time.Minute, interval
			c.Now = clk.Now
		}).Client(t, 2)
	}
	return redis, up(), up()
}

// TestGlobalDecisions: two instances on one upstream, one clock that stands still (nothing
// refills): alone, an instance's first allowance is the whole burst; once the sync loops
// have run, the two admit together no more than the limit plus the stated bound (each may
// have started with a whole burst before it saw the other), and then nothing more: the
// global state holds every admission. Every verb that takes GLOBAL.
func TestGlobalDecisions(t *testing.T) {
	const interval = 20 * time.Millisecond
	_, a, b := twoGlobalInstances(t, interval)
	for _, tc := range []struct {
		name  string
		args  []any
		limit int64
	}{
		{"throttle", []any{"THROTTLE", "g:gcra", 9, 1, "1h"}, 10},
		{"tokenbucket", []any{"TOKENBUCKET", "g:tb", 10, 1, "1h"}, 10},
		{"leakybucket", []any{"LEAKYBUCKET", "g:lb", 10, 1, "1h"}, 10},
		{"slide", []any{"SLIDE", "g:sl", 10, "1h"}, 10},
		{"slide approx", []any{"SLIDE", "g:sc", 10, "1h", "APPROX"}, 10},
		{"window", []any{"WINDOW", "g:fw", 10, "1h"}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := append(append([]any{}, tc.args...), "GLOBAL")
			sargs := make([][]byte, len(tc.args))
			for i, x := range tc.args {
				sargs[i] = []byte(toString(x))
			}
			bound, err := ratelimit.GlobalBound(sargs, int64(interval))
			require.NoError(t, err)
			admitted := int64(0)
			for i := range 40 {
				rdb := a
				if i%2 == 1 {
					rdb = b
				}
				v := do(t, rdb, call...)
				var limited int64
				switch v := v.(type) {
				case []any:
					limited = v[0].(int64)
					require.Equal(t, tc.limit, v[1].(int64))
				case map[any]any:
					limited = v["limited"].(int64)
				}
				if limited == 0 {
					admitted++
				}
				if i%8 == 7 {
					time.Sleep(3 * interval) // the loops sync
				}
			}
			require.GreaterOrEqual(t, admitted, tc.limit)
			require.LessOrEqual(t, admitted, tc.limit+2*bound)
			t.Logf("admitted %d of a limit of %d (bound %d + 2 * %d)", admitted, tc.limit, tc.limit, bound)
			time.Sleep(3 * interval)
			for range 5 {
				require.Equal(t, int64(1), do(t, a, call...).([]any)[0], "the limit is spent, for both")
			}
		})
	}
	info := do(t, a, "INFO", "global").(string)
	require.Contains(t, info, "global_mode:upstream")
	requireInstances(t, []*goredis.Client{a, b}, 2)
	require.Contains(t, info, "global_status:ok")
	require.Contains(t, do(t, a, "INFO", "upstream").(string), "upstream_global_failing_keys:0")
	require.Equal(t, "OK", do(t, a, "CONFIG", "SET", "global-sync-interval", "30ms"))
	require.Equal(t, "30ms", do(t, a, "CONFIG", "GET", "global-sync-interval").([]any)[1])
}

// FuzzGlobalOptions: any options after a native verb's parameters with GLOBAL, in upstream
// mode, get a decision that keeps the rules (checkDecisions) or an error, never a panic.
func FuzzGlobalOptions(f *testing.F) {
	redis := redistest.Start(f)
	ts := testserver.Start(f, realClock, func(c *server.Config) {
		c.AppendOnly, c.Upstream, c.UpstreamTimeout, c.GlobalSyncInterval = false, redis.URL(), time.Minute, 20*time.Millisecond
	})
	c := ts.Raw(f)
	verbs := [][]string{
		{"THROTTLE", "g1", "9", "10", "1m", "GLOBAL"}, {"TOKENBUCKET", "g2", "10", "1", "1s", "GLOBAL"},
		{"LEAKYBUCKET", "g3", "10", "1", "1s", "GLOBAL"}, {"SLIDE", "g4", "10", "1m", "GLOBAL"},
		{"SLIDE", "g5", "10", "1m", "APPROX", "GLOBAL"}, {"WINDOW", "g6", "10", "1m", "GLOBAL"},
		{"WINDOW", "g7", "10", "1mo", "TZ", "Europe/Berlin", "GLOBAL"}, {"CONCURRENCY.ACQUIRE", "g8", "3", "1m", "id", "GLOBAL"},
	}
	for _, seed := range []string{"", "COST 4", "COST 0", "PEEK", "COST 11", "COST 9223372036854775807", "GLOBAL",
		"REFUND 1", "BLOCK 1s", "TIERS a=1", "PRIORITY a", "COST", "COST -1", "TZ UTC", "APPROX", "COST 3 PEEK"} {
		f.Add(uint8(len(seed)), seed)
	}
	f.Fuzz(func(t *testing.T, pick uint8, input string) {
		args := append(append([]string{}, verbs[int(pick)%len(verbs)]...), strings.Fields(input)...)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		r := c.Do(t, args...)
		if r[0] != '*' && r[0] != '-' {
			t.Fatalf("%q: %q", args, r)
		}
		if strings.Contains(r, "internal error") {
			t.Fatalf("%q: %s", args, r)
		}
		if r[0] == '*' {
			checkDecisions(t, args, r)
		}
	})
}

func toString(x any) string {
	switch x := x.(type) {
	case int:
		return strconv.Itoa(x)
	case string:
		return x
	}
	panic(x)
}

// globalSyncs is INFO global's global_syncs: the syncs that reported keys.
func globalSyncs(t *testing.T, rdb *goredis.Client) int64 {
	t.Helper()
	for _, l := range strings.Split(do(t, rdb, "INFO", "global").(string), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "global_syncs:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("INFO global has no global_syncs")
	return 0
}

// TestGlobalPolicyCheck: in upstream mode CHECK decides a GLOBAL policy from the instance's
// allowance, and two instances on one upstream share the policy's limit within the stated
// bound (the clock stands still: nothing refills, so the limit is the burst). A policy
// without GLOBAL is refused with an error that says why.
func TestGlobalPolicyCheck(t *testing.T) {
	const interval = 20 * time.Millisecond
	redis, a, b := twoGlobalInstances(t, interval)
	for _, rdb := range []*goredis.Client{a, b} { // each instance has its policies
		require.Equal(t, "OK", do(t, rdb, "POLICY.SET", "api", "THROTTLE", 9, 1, "1h", "GLOBAL"))
		require.Equal(t, "OK", do(t, rdb, "POLICY.SET", "exact", "THROTTLE", 9, 1, "1h"))
	}
	require.Equal(t, []any{"name", "api", "limit", "THROTTLE 9 1 1h GLOBAL", "soft", "0", "shadow", int64(0), "source", "command", "entries", int64(0)},
		do(t, a, "POLICY.GET", "api"))
	require.Equal(t, "ERR in upstream mode CHECK decides GLOBAL policies only: policy 'exact' has no GLOBAL (POLICY.SET name verb params... GLOBAL), and its limit would be this instance's alone",
		doErr(t, a, "CHECK", "exact", "alice"))
	require.Contains(t, doErr(t, a, "CHECK", "api,exact", "alice"), "policy 'exact' has no GLOBAL")

	bound, err := ratelimit.GlobalBound([][]byte{[]byte("THROTTLE"), []byte("k"), []byte("9"), []byte("1"), []byte("1h")}, int64(interval))
	require.NoError(t, err)
	const limit = 10
	// Batches of four checks, two on each instance; after each, both report at a sync.
	admitted := map[*goredis.Client]int64{}
	var last int64 // admitted in the last batches, once the limit is spent everywhere
	for batch := range 20 {
		before := [2]int64{globalSyncs(t, a), globalSyncs(t, b)}
		for i := range 4 {
			rdb := a
			if i%2 == 1 {
				rdb = b
			}
			v := do(t, rdb, "CHECK", "api", "alice").([]any)
			require.Equal(t, int64(limit), v[1])
			require.Equal(t, "ok", v[5])
			if v[0].(int64) == 0 {
				admitted[rdb]++
				if batch >= 18 {
					last++
				}
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for globalSyncs(t, a) == before[0] || globalSyncs(t, b) == before[1] {
			require.True(t, time.Now().Before(deadline), "the instances never synced")
			time.Sleep(interval / 4)
		}
	}
	total := admitted[a] + admitted[b]
	t.Logf("admitted %d (%d and %d) of a limit of %d (bound %d + 2 * %d)", total, admitted[a], admitted[b], limit, limit, bound)
	require.GreaterOrEqual(t, total, int64(limit))
	require.LessOrEqual(t, total, limit+2*bound)
	require.Positive(t, admitted[a])
	require.Positive(t, admitted[b])
	require.Zero(t, last, "the limit is spent, for both")
	info := do(t, a, "INFO", "global").(string)
	requireInstances(t, []*goredis.Client{a, b}, 2)
	require.Contains(t, info, "global_status:ok")
	require.Contains(t, do(t, a, "INFO", "throttle").(string), fmt.Sprintf("policy_api:allowed=%d,", admitted[a]))
	// The global state is on the upstream, under the policy's key.
	require.Equal(t, int64(1), do(t, redis.Client(), "EXISTS", upstream.GlobalPrefix+"policy:api:alice"))
}

// TestGlobalPolicyOptions: on one instance, whose sync never runs during the test (its first
// allowance of a key is the whole burst): a check of several GLOBAL policies is all or
// nothing, the units one took going back to its allowance when another denies; overrides
// (GLOBAL as their policy), lists and SHADOW apply as on a local check; a refund, TIERS and
// BLOCK are refused, as with the GLOBAL option.
func TestGlobalPolicyOptions(t *testing.T) {
	redis := redistest.Start(t)
	c := testserver.Start(t, func(c *server.Config) {
		c.AppendOnly, c.Upstream, c.UpstreamTimeout, c.GlobalSyncInterval = false, redis.URL(), time.Minute, time.Minute
	}).Client(t, 2)
	require.Equal(t, "OK", do(t, c, "POLICY.SET", "api", "THROTTLE", 9, 1, "1h", "GLOBAL"))
	require.Equal(t, "OK", do(t, c, "POLICY.SET", "one", "WINDOW", 1, "1h", "GLOBAL"))
	ok := []any{int64(0), int64(10), int64(9)}
	require.Equal(t, ok, do(t, c, "CHECK", "api,one", "bob").([]any)[1].([]any)[:3])
	v := do(t, c, "CHECK", "api,one", "bob").([]any)
	require.Equal(t, int64(1), v[0].([]any)[0], "one is spent: the check is denied")
	require.Equal(t, int64(1), v[2].([]any)[0])
	require.Equal(t, []any{int64(0), int64(10), int64(8)}, do(t, c, "CHECK", "api", "bob", "PEEK").([]any)[:3],
		"the unit api took went back: 9 left, 8 after the peek's")
	require.Equal(t, []any{int64(0), int64(10), int64(8)}, do(t, c, "CHECK", "api", "bob").([]any)[:3])

	require.Equal(t, "OK", do(t, c, "POLICY.OVERRIDE", "api", "vip", "THROTTLE", 99, 1, "1h"))
	require.Equal(t, []any{int64(0), int64(100), int64(99)}, do(t, c, "CHECK", "api", "vip").([]any)[:3])
	require.Equal(t, "OK", do(t, c, "POLICY.DENY", "api", "eve"))
	v = do(t, c, "CHECK", "api", "eve").([]any)
	require.Equal(t, int64(1), v[0])
	require.Equal(t, "denylisted", v[5])
	require.Equal(t, "OK", do(t, c, "POLICY.SET", "sh", "WINDOW", 1, "1h", "GLOBAL", "SHADOW"))
	require.Equal(t, "ok", do(t, c, "CHECK", "sh", "x").([]any)[5])
	v = do(t, c, "CHECK", "sh", "x").([]any)
	require.Equal(t, int64(0), v[0])
	require.Equal(t, "shadow", v[5])

	require.Equal(t, "ERR CHECK policy 'api': a GLOBAL policy takes no refund: its allowance is spent, not given back",
		doErr(t, c, "CHECK", "api", "bob", "REFUND", 1))
	require.Equal(t, "ERR GLOBAL takes no REFUND, TIERS, PRIORITY nor BLOCK",
		doErr(t, c, "POLICY.SET", "t", "THROTTLE", 9, 1, "1h", "GLOBAL", "TIERS", "a=1"))
	require.Equal(t, "ERR GLOBAL takes no REFUND, TIERS, PRIORITY nor BLOCK",
		doErr(t, c, "POLICY.SET", "t", "THROTTLE", 9, 1, "1h", "BLOCK", "1s", "GLOBAL"))
	require.Contains(t, do(t, c, "INFO", "throttle").(string), "policy_api:allowed=5,denied=1,")
}

// requireInstances waits until the first of rdbs counts n live instances, each of rdbs
// deciding a global limit meanwhile: an idle instance sends no heartbeat, and at a sync
// interval of tens of milliseconds a loaded machine may count a busy one out for a sync.
func requireInstances(t *testing.T, rdbs []*goredis.Client, n int) {
	t.Helper()
	want := fmt.Sprintf("global_instances:%d\r\n", n)
	require.Eventually(t, func() bool {
		for _, rdb := range rdbs {
			do(t, rdb, "THROTTLE", "heartbeat", 1000, 1000, "1s", "GLOBAL")
		}
		return strings.Contains(do(t, rdbs[0], "INFO", "global").(string), want)
	}, 10*time.Second, 5*time.Millisecond, "never %d instances", n)
}
