package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/latency"
	"github.com/throttledhq/throttled/persistence"
)

// slowScript runs for at least 150 ms by the server's TIME: past the test's threshold of
// 100 ms, which a fast command on a loaded machine seldom reaches.
const slowScript = `local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] - start >= 150000
return 1`

// TestLatencyMonitor: with latency-monitor-threshold 0 nothing is sampled; once set, a
// command that takes longer is, and LATENCY LATEST, HISTORY, GRAPH, DOCTOR and RESET show
// and forget it as Redis's do.
func TestLatencyMonitor(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Now = nil })
	rdb := ts.client(t, 2)

	require.Equal(t, []any{"latency-monitor-threshold", "0"}, do(t, rdb, "CONFIG", "GET", "latency-monitor-threshold"))
	do(t, rdb, "EVAL", slowScript, "0")
	require.Equal(t, []any{}, do(t, rdb, "LATENCY", "LATEST"))

	do(t, rdb, "CONFIG", "SET", "latency-monitor-threshold", "100")
	require.Equal(t, []any{"latency-monitor-threshold", "100"}, do(t, rdb, "CONFIG", "GET", "latency-monitor-threshold"))
	before := time.Now().Unix()
	do(t, rdb, "EVAL", slowScript, "0")
	do(t, rdb, "PING") // fast, and not slow enough
	var ev []any       // a busy machine may add a slow fast-command (PING): only command is sure
	fast := false
	for _, e := range do(t, rdb, "LATENCY", "LATEST").([]any) {
		switch e.([]any)[0] {
		case "command":
			ev = e.([]any)
		case "fast-command":
			fast = true
		}
	}
	require.NotNil(t, ev)
	require.GreaterOrEqual(t, ev[1].(int64), before)
	require.LessOrEqual(t, ev[1].(int64), time.Now().Unix())
	require.GreaterOrEqual(t, ev[2].(int64), int64(150))
	require.Equal(t, ev[2], ev[3])

	hist := do(t, rdb, "LATENCY", "HISTORY", "command").([]any)
	require.Equal(t, []any{[]any{ev[1], ev[2]}}, hist)
	require.Contains(t, do(t, rdb, "LATENCY", "GRAPH", "command"), "command - high ")
	doctor := do(t, rdb, "LATENCY", "DOCTOR").(string)
	require.Contains(t, doctor, "Dave, I have observed latency spikes in this Redis instance.")
	require.Regexp(t, `\d\. command: 1 latency spikes`, doctor)
	if !fast {
		require.Equal(t, "ERR No samples available for event 'fast-command'", doErr(t, rdb, "LATENCY", "GRAPH", "fast-command"))
	}

	require.Equal(t, int64(1), do(t, rdb, "LATENCY", "RESET", "command", "nosuch"))
	do(t, rdb, "LATENCY", "RESET")
	require.Equal(t, []any{}, do(t, rdb, "LATENCY", "LATEST"))
	require.Equal(t, []any{}, do(t, rdb, "LATENCY", "HISTORY", "command"))
}

// TestLatencyEvents: each source samples under its event's name, at and past the
// threshold only; a fast command under fast-command.
func TestLatencyEvents(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Now = nil; c.LatencyMonitorThreshold = 5 })
	s := ts.Server
	ping, get := s.commands["ping"], s.commands["get"]
	require.True(t, ping.has(flagFast))
	s.commandSpike(ping, int64(4*time.Millisecond)) // under
	s.commandSpike(ping, int64(7*time.Millisecond))
	s.commandSpike(s.commands["keys"], int64(5*time.Millisecond))
	s.latencySpike(latency.EventExpireCycle, 6*time.Millisecond)
	require.True(t, get.has(flagFast))
	var got []string
	for _, l := range s.latmon.events.Latest() {
		got = append(got, l.Event)
		require.GreaterOrEqual(t, l.Ms, int64(5))
	}
	require.Equal(t, []string{"command", "expire-cycle", "fast-command"}, got)

	// A reply that waits for the log samples the wait: aof-fsync-always with always.
	s.latmon.threshold.Store(0)
	require.Equal(t, 3, s.latmon.events.Reset())
	s.waitStore() // off: not timed
	s.latmon.threshold.Store(1)
	s.store.SetFsync(persistence.Always)
	for range 50 {
		s.waitStore()
	}
	for _, l := range s.latmon.events.Latest() {
		require.Equal(t, latency.EventFsyncAlways, l.Event) // only if a sync took 1 ms
	}
}

// TestLatencyHistogramContainer: a container named in LATENCY HISTOGRAM stands for its
// subcommands too, as on Redis.
func TestLatencyHistogramContainer(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	do(t, rdb, "CONFIG", "RESETSTAT")
	do(t, rdb, "CLIENT", "ID")
	do(t, rdb, "CLIENT", "LIST")
	h := toMap(do(t, rdb, "LATENCY", "HISTOGRAM", "client"))
	require.Len(t, h, 2)
	require.Contains(t, h, "client|id")
	require.Contains(t, h, "client|list")
	require.Len(t, toMap(do(t, rdb, "LATENCY", "HISTOGRAM", "client|id")), 1)
}
