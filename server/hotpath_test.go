package server

import (
	"crypto/sha1"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
)

// TestHotPathAllocatesNothing: a verb's call through dispatch, its handler in its family,
// the keyspace and the reply allocates nothing once the connection's buffers have grown:
// the rate-limit verbs, CHECK, the commands the limiter scripts use, and EVALSHA of a
// script that runs natively.
func TestHotPathAllocatesNothing(t *testing.T) {
	s, c := fuzzServer(t)
	send := func(args ...string) { runOK(t, s, c, args...) }
	send("POLICY.SET", "api", "THROTTLE", "10", "1000", "1s")
	send("POLICY.SET", "monthly", "WINDOW", "1000000", "1mo", "TZ", "America/New_York")
	send("SCRIPT", "LOAD", rateLimitRedisIncrement)
	sum := sha1.Sum([]byte(rateLimitRedisIncrement))
	sha := hex.EncodeToString(sum[:])
	requireNoAllocs(t, s, c, [][]string{
		{"CL.THROTTLE", "cell", "15", "30", "60"},
		{"GCRA", "gcra", "15", "30", "60"},
		{"THROTTLE", "k", "10", "1000", "1s"},
		{"TOKENBUCKET", "tb", "10", "1000", "1s"},
		{"THROTTLE", "kb", "10", "1000", "1s", "BLOCK", "1m"},
		{"WINDOW", "boxed", "1", "1h", "BLOCK", "1m"}, // denied from the second call: in its penalty box
		{"ALLOF", "THROTTLE", "a", "10", "1000", "1s", "WINDOW", "b", "1000", "1s"},
		{"CHECK", "api", "subject"},
		{"WINDOW", "quota", "1000000", "1mo", "TZ", "Europe/Berlin"},
		{"CHECK", "monthly", "subject"},
		{"INCR", "counter"},
		{"INCREX", "counter"},
		{"INCREX", "window", "BYINT", "1", "UBOUND", "1000000000", "SATURATE", "EX", "60", "ENX"},
		{"INCREX", "tokens", "BYFLOAT", "0.5", "LBOUND", "0", "UBOUND", "1e12", "PX", "60000"},
		{"GET", "counter"},
		{"HSET", "h", "tokens", "10", "ts", "1732512345000"},
		{"ZADD", "z", "1732512345000", "1732512345000"},
		{"EVALSHA", sha, "1", "rl:window", "1000"},
	})
}

// TestGlobalHotPathAllocatesNothing: in upstream mode a verb's call with GLOBAL and CHECK of
// GLOBAL policies are decided from the local allowance, and allocate nothing once their keys
// have an entry.
func TestGlobalHotPathAllocatesNothing(t *testing.T) {
	rs := redistest.Start(t)
	cfg := DefaultConfig()
	cfg.Shards, cfg.AppendOnly = 4, false
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Upstream, cfg.UpstreamTimeout, cfg.GlobalSyncInterval = rs.URL(), time.Minute, time.Minute
	s, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	c := s.newClient(a)
	send := func(args ...string) { runOK(t, s, c, args...) }
	send("POLICY.SET", "api", "THROTTLE", "999999", "1000000", "1s", "GLOBAL")
	send("POLICY.SET", "daily", "WINDOW", "1000000", "1d", "GLOBAL")
	requireNoAllocs(t, s, c, [][]string{
		{"THROTTLE", "k", "999999", "1000000", "1s", "GLOBAL"},
		{"CHECK", "api", "subject"},
		{"CHECK", "api,daily", "subject"},
	})
}

// runOK runs one call on c and requires a reply that is not an error.
func runOK(t *testing.T, s *Server, c *client, args ...string) {
	t.Helper()
	req := make([][]byte, len(args))
	for i, a := range args {
		req[i] = []byte(a)
	}
	s.run(c, req)
	require.NotEqual(t, byte('-'), c.W.B[0], "%q: %s", args, c.W.B)
	c.W.B = c.W.B[:0]
}

// requireNoAllocs runs each call once on c (which grows the buffers and makes the entries),
// then requires that running it again allocates nothing.
func requireNoAllocs(t *testing.T, s *Server, c *client, calls [][]string) {
	for _, args := range calls {
		t.Run(args[0], func(t *testing.T) {
			runOK(t, s, c, args...)
			req := make([][]byte, len(args))
			for i, a := range args {
				req[i] = []byte(a)
			}
			require.Zero(t, testing.AllocsPerRun(100, func() {
				s.run(c, req)
				c.W.B = c.W.B[:0]
			}), "%q", args)
		})
	}
}
