package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// CHECK's and POLICY.*'s tests of the verbs themselves are ratelimit's (ratelimit/policy_test.go,
// black-box through internal/testserver). These stay: they test what the server adds around the
// policies, their persistence across a restart (newRestartable), their replication
// (startReplica, sameState), CONFIG REWRITE of a config file's policy lines, and CHECK's
// denials in TOPDENIED.

// check runs CHECK and returns its RESP2 reply: five numbers and the status.
func check(t *testing.T, rdb *redis.Client, args ...any) []any {
	t.Helper()
	return do(t, rdb, append([]any{"CHECK"}, args...)...).([]any)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func TestPoliciesSurviveRestart(t *testing.T) {
	r := newRestartable(t)
	ts, rdb := r.start(t)
	do(t, rdb, "POLICY.SET", "api", "THROTTLE", "9", "10", "1m", "SOFT", "0.5")
	do(t, rdb, "POLICY.ALLOW", "api", "vip", "EX", "100")
	check(t, rdb, "api", "u")
	require.NoError(t, ts.Close())

	ts, rdb = r.start(t)
	require.Equal(t, []any{"api"}, do(t, rdb, "POLICY.LIST"))
	require.Equal(t, int64(8), check(t, rdb, "api", "u")[2])
	require.Equal(t, "allowlisted", check(t, rdb, "api", "vip")[5])

	// FLUSHALL keeps them on disk too.
	do(t, rdb, "FLUSHALL")
	require.NoError(t, ts.Close())
	_, rdb = r.start(t)
	require.Equal(t, []any{"api"}, do(t, rdb, "POLICY.LIST"))
	require.Equal(t, int64(9), check(t, rdb, "api", "u")[2])
	require.Equal(t, "allowlisted", check(t, rdb, "api", "vip")[5])
}

func TestPoliciesReplicate(t *testing.T) {
	primary := startServer(t)
	prdb := primary.client(t, 2)
	do(t, prdb, "POLICY.SET", "api", "THROTTLE", "9", "10", "1m")
	replica := startReplica(t, primary)
	rrdb := replica.client(t, 2)
	do(t, prdb, "POLICY.DENY", "api", "evil")
	check(t, prdb, "api", "u")
	sameState(t, primary, replica)
	require.Equal(t, []any{"api"}, do(t, rrdb, "POLICY.LIST"))
	require.Equal(t, "denylisted", check(t, rrdb, "api", "evil", "PEEK")[5])
	require.Equal(t, int64(8), check(t, rrdb, "api", "u", "PEEK")[2])
	require.Contains(t, doErr(t, rrdb, "CHECK", "api", "u"), "READONLY")
	require.Contains(t, doErr(t, rrdb, "POLICY.SET", "x", "THROTTLE", "1", "1", "1s"), "READONLY")

	do(t, prdb, "FLUSHALL")
	sameState(t, primary, replica)
	require.Equal(t, []any{"api"}, do(t, rrdb, "POLICY.LIST"), "FLUSHALL keeps the policies on the replica too")
	require.Equal(t, int64(0), do(t, rrdb, "DBSIZE"))

	do(t, prdb, "POLICY.DEL", "api")
	sameState(t, primary, replica)
	require.Contains(t, doErr(t, rrdb, "CHECK", "api", "u", "PEEK"), "no such policy")
}

func TestConfigRewriteKeepsPolicyLines(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	writeFile(t, conf, "policy api THROTTLE 4 5 1m\npolicy-deny api bot*\nloglevel notice\n")
	ts := startServer(t, func(c *Config) { c.ConfigFile = conf })
	rdb := ts.client(t, 2)
	do(t, rdb, "CONFIG", "SET", "loglevel", "warning")
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "REWRITE"))
	b, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.Contains(t, string(b), "policy api THROTTLE 4 5 1m\npolicy-deny api bot*\nloglevel warning\n")
	require.Equal(t, "OK", do(t, rdb, "POLICY.RELOAD"))
	require.Equal(t, "denylisted", check(t, rdb, "api", "bot-1")[5])
}

// TestCheckDenialsObserved: CHECK's denials reach TOPDENIED like the verbs'.
func TestCheckDenialsObserved(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "THROTTLE", 1, 1, "1h")
	for range 5 {
		do(t, rdb, "CHECK", "api", "m1")
	}
	top := do(t, rdb, "TOPDENIED", 1).([]any)
	require.Len(t, top, 2)
	require.Contains(t, top[0], "m1")
}
