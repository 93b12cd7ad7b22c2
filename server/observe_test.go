package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestCommandStats(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	for i := 0; i < 3; i++ {
		do(t, rdb, "THROTTLE", "k", 1, 1, "1m")
	}
	doErr(t, rdb, "THROTTLE", "k")              // arity: rejected
	doErr(t, rdb, "THROTTLE", "k", 1, 1, "abc") // bad period: failed
	do(t, rdb, "CONFIG", "GET", "port")

	require.NotContains(t, do(t, rdb, "INFO").(string), "# Commandstats", "not a default section, as in Redis")
	for _, section := range []string{"commandstats", "all", "everything"} {
		info := do(t, rdb, "INFO", section).(string)
		require.Contains(t, info, "# Commandstats\r\n")
		line := regexp.MustCompile(`cmdstat_throttle:calls=(\d+),usec=(\d+),usec_per_call=(\d+\.\d\d),rejected_calls=(\d+),failed_calls=(\d+)\r\n`).FindStringSubmatch(info)
		require.NotNil(t, line, info)
		require.Equal(t, []string{"4", "1", "1"}, []string{line[1], line[4], line[5]})
		require.Contains(t, info, "cmdstat_config|get:calls=1,")
	}
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "RESETSTAT"))
	require.NotContains(t, do(t, rdb, "INFO", "commandstats").(string), "cmdstat_throttle")
}

func TestSlowlog(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	require.Equal(t, map[any]any{"slowlog-log-slower-than": "10000", "slowlog-max-len": "128"}, toMap(do(t, rdb, "CONFIG", "GET", "slowlog-*")))
	require.Equal(t, int64(0), do(t, rdb, "SLOWLOG", "LEN"))

	do(t, rdb, "CONFIG", "SET", "slowlog-log-slower-than", 0) // every command
	do(t, rdb, "CLIENT", "SETNAME", "tester")
	long := strings.Repeat("x", 200)
	do(t, rdb, "SET", "k", long)
	args := []any{"MSET"}
	for i := 0; i < 20; i++ {
		args = append(args, "k"+strconv.Itoa(i), i)
	}
	do(t, rdb, args...)

	entries := do(t, rdb, "SLOWLOG", "GET", 2).([]any)
	require.Len(t, entries, 2)
	mset, set := entries[0].([]any), entries[1].([]any)
	require.Equal(t, mset[0].(int64), set[0].(int64)+1, "ids grow, newest first")
	require.InDelta(t, time.Now().Unix(), mset[1].(int64), 5)
	require.GreaterOrEqual(t, mset[2].(int64), int64(0))
	margs := mset[3].([]any)
	require.Len(t, margs, 32)
	require.Equal(t, "... (10 more arguments)", margs[31])
	require.Equal(t, []any{"SET", "k", strings.Repeat("x", 128) + "... (72 more bytes)"}, set[3])
	require.Regexp(t, `^127\.0\.0\.1:\d+$`, mset[4])
	require.Equal(t, "tester", mset[5])

	do(t, rdb, "CONFIG", "SET", "slowlog-max-len", 3)
	require.Equal(t, int64(3), do(t, rdb, "SLOWLOG", "LEN"))
	require.Len(t, do(t, rdb, "SLOWLOG", "GET", -1), 3)
	do(t, rdb, "CONFIG", "SET", "slowlog-log-slower-than", -1) // none
	require.Equal(t, "OK", do(t, rdb, "SLOWLOG", "RESET"))
	do(t, rdb, "PING")
	require.Equal(t, int64(0), do(t, rdb, "SLOWLOG", "LEN"))
	require.Contains(t, doErr(t, rdb, "SLOWLOG", "GET", -2), "count should be greater than or equal to -1")
	require.Contains(t, doErr(t, rdb, "CONFIG", "SET", "slowlog-max-len", -1), "argument must be between")
}

func toMap(v any) map[any]any {
	switch m := v.(type) {
	case map[any]any:
		return m
	case []any:
		out := make(map[any]any)
		for i := 0; i+1 < len(m); i += 2 {
			out[m[i]] = m[i+1]
		}
		return out
	}
	return nil
}

// monitorLine is a MONITOR line as Redis sends it.
var monitorLine = regexp.MustCompile(`^\+\d{10}\.\d{6} \[0 127\.0\.0\.1:\d+\] (.*)$`)

func TestMonitor(t *testing.T) {
	for _, threads := range []int{0, 1} {
		t.Run(fmt.Sprintf("io-threads %d", threads), func(t *testing.T) {
			ts := startServer(t, func(c *Config) { c.IOThreads = threads })
			mon := ts.raw(t)
			mon.send(t, "MONITOR\r\n")
			require.Equal(t, "+OK", mon.line(t))
			rdb := ts.client(t, 2)
			do(t, rdb, "SET", "k", "a \"b\"\n\x01")
			do(t, rdb, "THROTTLE", "user:1", 5, 10, "1s")
			do(t, rdb, "CONFIG", "GET", "port") // admin: not shown, as in Redis
			do(t, rdb, "PING")
			var got []string
			for len(got) < 3 {
				m := monitorLine.FindStringSubmatch(mon.line(t))
				require.NotNil(t, m)
				if strings.HasPrefix(m[1], `"hello"`) || strings.HasPrefix(m[1], `"client"`) {
					continue // go-redis's handshake
				}
				got = append(got, m[1])
			}
			require.Equal(t, []string{`"SET" "k" "a \"b\"\n\x01"`, `"THROTTLE" "user:1" "5" "10" "1s"`, `"PING"`}, got)
			require.Contains(t, do(t, rdb, "CLIENT", "LIST").(string), "flags=O")

			mon.send(t, "RESET\r\n") // leaves MONITOR, as in Redis
			require.Equal(t, "+RESET", mon.line(t))
			do(t, rdb, "PING")
			mon.send(t, "PING\r\n")
			require.Equal(t, "+PONG", mon.line(t), "no more monitor lines")
			require.NotContains(t, do(t, rdb, "CLIENT", "LIST").(string), "flags=O")
		})
	}
}

// TestMonitorRedisCli runs redis-cli monitor and reads what it shows.
func TestMonitorRedisCli(t *testing.T) {
	ts := startServer(t)
	_, port, _ := strings.Cut(ts.addr, ":")
	cmd := exec.Command("redis-cli", "-p", port, "monitor")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	require.True(t, lines.Scan())
	require.Equal(t, "OK", lines.Text())
	rdb := ts.client(t, 2)
	do(t, rdb, "GCRA", "api", 10, 100, 60)
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"GCRA"`) {
			require.Regexp(t, `^\d{10}\.\d{6} \[0 127\.0\.0\.1:\d+\] "GCRA" "api" "10" "100" "60"$`, lines.Text())
			return
		}
	}
	t.Fatal("redis-cli monitor ended without the command")
}

func TestTopDenied(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	for i, key := range []string{"a", "b", "c"} {
		for j := 0; j < 1+3*(3-i); j++ { // a denied 9 times, b 6, c 3
			do(t, rdb, "THROTTLE", key, 0, 1, "1h")
		}
	}
	do(t, rdb, "CL.THROTTLE", "d", 0, 1, 3600)
	require.Equal(t, []any{"a", int64(9), "b", int64(6)}, do(t, rdb, "TOPDENIED", 2))
	require.Equal(t, []any{"a", int64(9), "b", int64(6), "c", int64(3)}, do(t, rdb, "TOPDENIED"))
	r3 := ts.client(t, 3)
	require.Equal(t, map[any]any{"a": int64(9)}, do(t, r3, "TOPDENIED", 1))
	require.Contains(t, doErr(t, rdb, "TOPDENIED", 0), "count must be a positive integer")

	ts.clock.Advance(3 * time.Minute) // out of the window
	require.Equal(t, []any{}, do(t, rdb, "TOPDENIED"))
}

func TestDenyEvents(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	all := rdb.Subscribe(ctx, "__throttled__:denied")
	verb := rdb.Subscribe(ctx, "__throttled__:denied:throttle")
	_, err := all.Receive(ctx)
	require.NoError(t, err)
	_, err = verb.Receive(ctx)
	require.NoError(t, err)

	do(t, rdb, "THROTTLE", "u", 0, 1, "1m")
	do(t, rdb, "THROTTLE", "u", 0, 1, "1m") // denied: retry in 60000 ms
	do(t, rdb, "CL.THROTTLE", "c", 0, 1, 60)
	do(t, rdb, "CL.THROTTLE", "c", 0, 1, 60) // denied: retry in 60 s
	do(t, rdb, "ALLOF", "THROTTLE", "u", 0, 1, "1m", "WINDOW", "w", 5, "1m")

	recv := func(ps *redis.PubSub) *redis.Message {
		t.Helper()
		m, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		require.NoError(t, err)
		return m.(*redis.Message)
	}
	for _, want := range []string{"throttle u 60000", "cl.throttle c 60000", "allof u 60000"} {
		m := recv(all)
		require.Equal(t, "__throttled__:denied", m.Channel)
		require.Equal(t, want, m.Payload)
	}
	m := recv(verb)
	require.Equal(t, "__throttled__:denied:throttle", m.Channel)
	require.Equal(t, "throttle u 60000", m.Payload)

	// The cap: 3 a second, the rest dropped and counted.
	do(t, rdb, "CONFIG", "SET", "denied-events-per-second", 3)
	ts.clock.Advance(time.Second)
	for i := 0; i < 10; i++ {
		do(t, rdb, "THROTTLE", "u", 0, 1, "1h")
	}
	for i := 0; i < 3; i++ {
		require.Equal(t, "throttle u", recv(all).Payload[:10])
	}
	_, err = all.ReceiveTimeout(ctx, 200*time.Millisecond)
	require.Error(t, err, "no fourth event this second")
	info := do(t, rdb, "INFO", "throttle").(string)
	require.Contains(t, info, "denied_events_published:6\r\n")
	require.Contains(t, info, "denied_events_dropped:7\r\n")
}

// TestDenialAllocs: recording a denial nobody listens to allocates nothing.
func TestDenialAllocs(t *testing.T) {
	ts := startServer(t)
	cmd := ts.commands["throttle"]
	key := []byte("some:key")
	nc, peer := net.Pipe()
	t.Cleanup(func() { nc.Close(); peer.Close() })
	c := ts.newClient(nc)
	require.Equal(t, 0.0, testing.AllocsPerRun(1000, func() { ts.denial(c, cmd, key, 100, ts.nowNano(), 0) }))
}

// TestCommandTimeExcludesIdle: a command's time starts with its pipeline, not with the
// client's previous request, whichever way the client is served.
func TestCommandTimeExcludesIdle(t *testing.T) {
	for _, threads := range []int{0, 1} {
		t.Run(fmt.Sprintf("io-threads %d", threads), func(t *testing.T) {
			ts := startServer(t, func(c *Config) { c.IOThreads = threads })
			rdb := ts.client(t, 2)
			other := ts.client(t, 2)
			// Idle time counted would be 100 ms a command: bounds well under it, and over
			// what a loaded machine adds to a GET.
			do(t, rdb, "CONFIG", "SET", "slowlog-log-slower-than", "90000")
			do(t, rdb, "SET", "k", "v")
			for i := 0; i < 3; i++ {
				do(t, rdb, "GET", "k")
				do(t, other, "PING")
				time.Sleep(100 * time.Millisecond)
			}
			info := do(t, rdb, "INFO", "commandstats").(string)
			m := regexp.MustCompile(`cmdstat_get:calls=3,usec=(\d+),`).FindStringSubmatch(info)
			require.NotNil(t, m, info)
			usec, _ := strconv.Atoi(m[1])
			require.Less(t, usec, 200000, "idle time counted as the command's")
			require.Equal(t, int64(0), do(t, rdb, "SLOWLOG", "LEN"))
		})
	}
}

// TestUpstreamDenials: in upstream mode, denials decided through the upstream are counted
// and published too, with their retry_after.
func TestUpstreamDenials(t *testing.T) {
	_, remote, _, _ := upstreamPair(t)
	rdb := remote.client(t, 2)
	ctx := context.Background()
	sub := rdb.Subscribe(ctx, "__throttled__:denied")
	_, err := sub.Receive(ctx)
	require.NoError(t, err)
	do(t, rdb, "THROTTLE", "up:1", 0, 1, "1m")
	do(t, rdb, "THROTTLE", "up:1", 0, 1, "1m")
	do(t, rdb, "ALLOF", "WINDOW", "up:2", 1, "1m", "THROTTLE", "up:3", 5, 1, "1m")
	do(t, rdb, "ALLOF", "WINDOW", "up:2", 1, "1m", "THROTTLE", "up:3", 5, 1, "1m")
	for _, want := range []string{"throttle up:1 60000", "allof up:2 "} {
		m, err := sub.ReceiveTimeout(ctx, 5*time.Second)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(m.(*redis.Message).Payload, want), m)
	}
	top := do(t, rdb, "TOPDENIED").([]any)
	require.ElementsMatch(t, []any{"up:1", int64(1), "up:2", int64(1)}, top)
	require.Contains(t, do(t, rdb, "INFO", "upstream").(string), "upstream_degraded_decisions:0\r\n", "decided by the upstream")
}

// TestMonitorScripts: a script's call is shown before the commands it calls, as Redis's
// EVAL and FCALL feed the monitors before they run, and once.
func TestMonitorScripts(t *testing.T) {
	ts := startServer(t)
	mon := ts.raw(t)
	mon.send(t, "MONITOR\r\n")
	require.Equal(t, "+OK", mon.line(t))
	rdb := ts.client(t, 2)
	require.Equal(t, redis.Nil, rdb.Do(context.Background(), "EVAL", "redis.call('set', KEYS[1], ARGV[1])", 1, "foo", "bar").Err())
	do(t, rdb, "FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return redis.call('get', 'foo') end)")
	do(t, rdb, "FCALL", "f", 0)
	do(t, rdb, "PING")
	var got []string
	for len(got) == 0 || got[len(got)-1] != `"PING"` {
		line := mon.line(t)
		_, rest, _ := strings.Cut(line, "] ")
		if strings.HasPrefix(rest, `"hello"`) || strings.HasPrefix(rest, `"client"`) {
			continue // go-redis's handshake
		}
		if strings.Contains(line, " [0 lua] ") {
			rest = "lua " + rest
		}
		got = append(got, rest)
	}
	require.Equal(t, []string{
		`"EVAL" "redis.call('set', KEYS[1], ARGV[1])" "1" "foo" "bar"`, `lua "set" "foo" "bar"`,
		`"FUNCTION" "LOAD" "#!lua name=lib\nredis.register_function('f', function() return redis.call('get', 'foo') end)"`,
		`"FCALL" "f" "0"`, `lua "get" "foo"`, `"PING"`,
	}, got)
}
