package ratelimit_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/ratelimit"
	"github.com/throttledhq/throttled/server"
)

func TestCheckStatuses(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Equal(t, "OK", do(t, rdb, "POLICY.SET", "api", "THROTTLE", "4", "5", "1m", "SOFT", "0.5"))
	want := []struct {
		limited, remaining int64
		status             string
	}{{0, 4, "ok"}, {0, 3, "ok"}, {0, 2, "warning"}, {0, 1, "warning"}, {0, 0, "warning"}, {1, 0, "ok"}}
	for i, w := range want {
		r := check(t, rdb, "api", "u1")
		require.Equal(t, w.limited, r[0], "call %d", i+1)
		require.Equal(t, int64(5), r[1])
		require.Equal(t, w.remaining, r[2], "call %d", i+1)
		require.Equal(t, w.status, r[5], "call %d", i+1)
	}
	// The key is derived from the policy and the subject, and is an ordinary GCRA key.
	require.Equal(t, "gcra", do(t, rdb, "TYPE", "policy:api:u1"))
	require.Equal(t, int64(4), check(t, rdb, "api", "u2")[2], "another subject has its own key")
	require.Equal(t, int64(3), check(t, rdb, "api", "u2", "PEEK", "COST", "1")[2])
	require.Equal(t, int64(4), check(t, rdb, "api", "u2", "COST", "0")[2])

	require.Equal(t, "allowed=8,denied=1,shadow_denied=0,warnings=3", infoField(t, rdb, "throttle", "policy_api"))
}

func TestCheckShadow(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "POLICY.SET", "sh", "THROTTLE", "0", "1", "1m", "SHADOW")
	require.Equal(t, []any{int64(0), int64(1), int64(0), int64(-1), int64(60000), "ok"}, check(t, rdb, "sh", "s"))
	r := check(t, rdb, "sh", "s")
	require.Equal(t, int64(0), r[0], "shadow lets the denial pass")
	require.Equal(t, "shadow", r[5])
	require.Equal(t, "allowed=1,denied=0,shadow_denied=1,warnings=0", infoField(t, rdb, "throttle", "policy_sh"))
}

func TestCheckListsAndOverrides(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "THROTTLE", "4", "5", "1m")
	require.Contains(t, doErr(t, rdb, "POLICY.ALLOW", "nope", "vip"), "no such policy 'nope'")
	do(t, rdb, "POLICY.ALLOW", "api", "vip")
	do(t, rdb, "POLICY.DENY", "api", "10.0.0.0/8")
	do(t, rdb, "POLICY.DENY", "api", "bot*")
	do(t, rdb, "POLICY.ALLOW", "api", "10.9.0.0/16") // deny wins over allow
	do(t, rdb, "POLICY.OVERRIDE", "api", "merchant-1", "THROTTLE", "99", "100", "1m", "EX", "10")
	do(t, rdb, "POLICY.OVERRIDE", "api", "merchant-*", "THROTTLE", "9", "10", "1m")

	for _, tc := range []struct {
		subject        string
		limited, limit int64
		status         string
	}{
		{"vip", 0, 5, "allowlisted"},
		{"10.1.2.3", 1, 5, "denylisted"},
		{"10.9.2.3", 1, 5, "denylisted"},
		{"11.0.0.1", 0, 5, "ok"},
		{"bot-7", 1, 5, "denylisted"},
		{"merchant-1", 0, 100, "ok"},
		{"merchant-2", 0, 10, "ok"},
	} {
		t.Run(tc.subject, func(t *testing.T) {
			r := check(t, rdb, "api", tc.subject)
			require.Equal(t, tc.limited, r[0])
			require.Equal(t, tc.limit, r[1])
			require.Equal(t, tc.status, r[5])
		})
	}
	require.Equal(t, int64(5), check(t, rdb, "api", "vip")[2], "allowlisted consumes nothing")
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "policy:api:vip"))

	entries := do(t, rdb, "POLICY.ENTRIES", "api").([]any)
	require.Len(t, entries, 6)
	require.Equal(t, []any{"override", "merchant-1", int64(10000), "THROTTLE 99 100 1m", "command"}, entries[4])

	// The override lapses; the key keeps what it consumed (1 of 100) under the policy's numbers.
	ts.Clock.Advance(11 * time.Second)
	r := check(t, rdb, "api", "merchant-1")
	require.Equal(t, int64(10), r[1])

	require.Equal(t, int64(1), do(t, rdb, "POLICY.UNLIST", "api", "bot*"))
	require.Equal(t, "ok", check(t, rdb, "api", "bot-7")[5])
	require.Equal(t, int64(0), do(t, rdb, "POLICY.UNLIST", "api", "bot*"))
}

func TestCheckSeveralPoliciesAllOrNothing(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "POLICY.SET", "second", "THROTTLE", "0", "1", "1m")
	do(t, rdb, "POLICY.SET", "minute", "THROTTLE", "9", "10", "1m")
	r := check(t, rdb, "second,minute", "u")
	require.Len(t, r, 3)
	require.Equal(t, []any{int64(0), int64(1), int64(0), int64(-1), int64(60000), "ok"}, r[0])
	r = check(t, rdb, "second,minute", "u")
	require.Equal(t, int64(1), r[0].([]any)[0])
	require.Equal(t, int64(1), r[1].([]any)[0])
	require.Equal(t, int64(0), r[2].([]any)[0])
	// Nothing was taken from minute by the denied call.
	require.Equal(t, int64(8), check(t, rdb, "minute", "u", "PEEK")[2])
	require.Contains(t, doErr(t, rdb, "CHECK", "second,nope", "u"), "no such policy 'nope'")
}

func TestPolicyCommands(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	require.Contains(t, doErr(t, rdb, "CHECK", "api", "u"), "ERR no such policy 'api'")
	require.Contains(t, doErr(t, rdb, "POLICY.SET", "a:b", "THROTTLE", "1", "1", "1s"), "policy names are")
	require.Contains(t, doErr(t, rdb, "POLICY.SET", "api", "GET", "1"), "a policy's verb is one of")
	require.Contains(t, doErr(t, rdb, "POLICY.SET", "api", "THROTTLE", "1", "1"), "wrong number of arguments")
	require.Contains(t, doErr(t, rdb, "POLICY.SET", "api", "THROTTLE", "1", "1", "1s", "PEEK"), "COST, PEEK, REFUND and PRIORITY belong to CHECK")
	require.Contains(t, doErr(t, rdb, "POLICY.SET", "api", "THROTTLE", "1", "1", "1s", "SOFT", "2"), "SOFT must be")
	require.Equal(t, redis.Nil, rdb.Do(context.Background(), "POLICY.GET", "api").Err())

	do(t, rdb, "POLICY.SET", "api", "THROTTLE", "9", "10", "1m")
	do(t, rdb, "POLICY.SET", "burst", "TOKENBUCKET", "5", "1", "1s", "SOFT", "0.8", "SHADOW")
	require.Equal(t, []any{"api", "burst"}, do(t, rdb, "POLICY.LIST"))
	require.Equal(t, []any{"name", "burst", "limit", "TOKENBUCKET 5 1 1s", "soft", "0.8", "shadow", int64(1), "source", "command", "entries", int64(0)},
		do(t, rdb, "POLICY.GET", "burst"))

	// New numbers keep what the key consumed, as THROTTLE adapts it: GCRA's debt is time,
	// 5 calls of 6s each are half the minute, so half of the new limit of 20.
	for range 5 {
		check(t, rdb, "api", "u")
	}
	do(t, rdb, "POLICY.SET", "api", "THROTTLE", "19", "20", "1m")
	require.Equal(t, int64(9), check(t, rdb, "api", "u")[2])
	// Another algorithm: the old state means nothing to it, the subject starts afresh.
	do(t, rdb, "POLICY.SET", "api", "WINDOW", "3", "1m")
	require.Equal(t, int64(2), check(t, rdb, "api", "u")[2])

	require.Equal(t, int64(1), do(t, rdb, "POLICY.DEL", "api"))
	require.Equal(t, int64(0), do(t, rdb, "POLICY.DEL", "api"))
	require.Contains(t, doErr(t, rdb, "CHECK", "api", "u"), "no such policy 'api'")
	require.Equal(t, []any{"burst"}, do(t, rdb, "POLICY.LIST"))
}

func TestPoliciesAreNoKeys(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "THROTTLE", "9", "10", "1m")
	check(t, rdb, "api", "u")
	do(t, rdb, "SET", "x", "1")
	require.Equal(t, int64(2), do(t, rdb, "DBSIZE"))
	keys := do(t, rdb, "KEYS", "*").([]any)
	require.ElementsMatch(t, []any{"x", "policy:api:u"}, keys)
	sc := do(t, rdb, "SCAN", "0", "COUNT", "1000").([]any)
	require.ElementsMatch(t, []any{"x", "policy:api:u"}, sc[1])
	for _, cmd := range [][]any{{"DEL", "x", ratelimit.PoliciesKey}, {"SET", ratelimit.PoliciesKey, "1"}, {"EXPIRE", ratelimit.PoliciesKey, "1"}, {"TYPE", ratelimit.PoliciesKey},
		{"MSET", "a", "1", ratelimit.PoliciesKey, "2"}, {"THROTTLE", ratelimit.PoliciesKey, "1", "1", "1s"}} {
		require.Equal(t, "ERR '__throttled__:policies' holds the policies: use the POLICY.* commands", doErr(t, rdb, cmd...), "%v", cmd)
	}
	// FLUSHALL drops the keys, as Redis's, and keeps the policies, as Redis keeps its functions.
	do(t, rdb, "FLUSHALL")
	require.Equal(t, int64(0), do(t, rdb, "DBSIZE"))
	require.Equal(t, []any{"api"}, do(t, rdb, "POLICY.LIST"))
	require.Equal(t, int64(9), check(t, rdb, "api", "u")[2])
}

func TestCheckRawReplies(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "THROTTLE", "1", "2", "1m")
	r := ts.Raw(t)
	r.Send(t, "CHECK api u\r\n")
	var got []string
	for range 7 {
		got = append(got, r.Line(t))
	}
	require.Equal(t, []string{"*6", ":0", ":2", ":1", ":-1", ":30000", "$2"}, got)
	require.Equal(t, "ok", r.Line(t))

	rdb3 := ts.Client(t, 3)
	m, err := rdb3.Do(context.Background(), "CHECK", "api", "u").Result()
	require.NoError(t, err)
	require.Equal(t, map[any]any{"limited": int64(0), "limit": int64(2), "remaining": int64(0), "retry_after_ms": int64(-1),
		"reset_after_ms": int64(60000), "status": "ok"}, m)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestPoliciesFromConfigFile(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	writeFile(t, conf, strings.Join([]string{
		"port 0",
		"# the API's limits",
		"policy api THROTTLE 4 5 1m SOFT 0.8",
		"policy-allow api 127.0.0.0/8",
		"policy-deny api evil*",
		"policy-override api big THROTTLE 49 50 1m EX 3600",
		"",
	}, "\n"))
	ts := testserver.Start(t, func(c *server.Config) { c.ConfigFile = conf })
	rdb := ts.Client(t, 2)
	require.Equal(t, "allowlisted", check(t, rdb, "api", "127.0.0.1")[5])
	require.Equal(t, "denylisted", check(t, rdb, "api", "evil-corp")[5])
	require.Equal(t, int64(50), check(t, rdb, "api", "big")[1])
	require.Equal(t, int64(3), check(t, rdb, "api", "u", "COST", "2")[2])
	require.Equal(t, "config", do(t, rdb, "POLICY.GET", "api").([]any)[9])
	require.Contains(t, doErr(t, rdb, "POLICY.DEL", "api"), "declared in the config file")
	// Commands add to a policy of the file.
	do(t, rdb, "POLICY.DENY", "api", "u")
	require.Equal(t, "denylisted", check(t, rdb, "api", "u")[5])
	require.Equal(t, "config+command", do(t, rdb, "POLICY.GET", "api").([]any)[9])

	// A bad file keeps the old policies and says where it is wrong.
	writeFile(t, conf, "port 0\npolicy api THROTTLE 9 10 1m\npolicy-allow nope x\n")
	err := rdb.Do(context.Background(), "POLICY.RELOAD").Err()
	require.ErrorContains(t, err, conf+":3: policy-allow: no policy 'nope' declared above")
	require.Equal(t, int64(5), check(t, rdb, "api", "v")[1])

	// A good one applies at once, to the connections open, and keys keep their state.
	writeFile(t, conf, "port 0\npolicy api THROTTLE 9 10 1m\npolicy web WINDOW 100 1s\n")
	require.Equal(t, "OK", do(t, rdb, "POLICY.RELOAD"))
	r := check(t, rdb, "api", "v")
	require.Equal(t, int64(10), r[1])
	require.Equal(t, int64(7), r[2], "v used 1 of 5 before: 2 of 10 now")
	require.Equal(t, []any{"api", "web"}, do(t, rdb, "POLICY.LIST"))
	require.Equal(t, "denylisted", check(t, rdb, "api", "u")[5], "the command's entries stay")
}

func TestBadConfigFileFailsStart(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	writeFile(t, conf, "policy api THROTTLE x 5 1m\n")
	cfg := server.DefaultConfig()
	cfg.ConfigFile = conf
	cfg.AppendOnly = false
	cfg.Dir = t.TempDir()
	_, err := server.New(cfg)
	require.ErrorContains(t, err, conf+":1: policy: max_burst must be an integer, got 'x'")
}

func TestCheckInMulti(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "THROTTLE", "1", "2", "1m")
	ctx := context.Background()
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "CHECK", "api", "u")
		p.Do(ctx, "CHECK", "api", "u")
		p.Do(ctx, "CHECK", "api", "u")
		return nil
	})
	require.NoError(t, err)
	var statuses []any
	for _, c := range cmds {
		r := c.(*redis.Cmd).Val().([]any)
		statuses = append(statuses, r[0], r[5])
	}
	require.Equal(t, []any{int64(0), "ok", int64(0), "ok", int64(1), "ok"}, statuses)
}
