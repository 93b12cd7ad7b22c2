package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// servedBy are the two ways a connection is served: by an event loop, and by a goroutine
// of its own (no loops).
var servedBy = []struct {
	name      string
	configure func(*Config)
}{
	{"loop", func(*Config) {}},
	{"goroutine", func(c *Config) { c.IOThreads = 0 }},
}

func TestClientReplyPipelined(t *testing.T) {
	for _, sb := range servedBy {
		t.Run(sb.name, func(t *testing.T) {
			ts := startServer(t, sb.configure)
			c := ts.raw(t)
			// One pipeline: SKIP drops the next reply only; OFF drops every reply, errors
			// too, until ON, whose +OK goes out; SKIP while OFF changes nothing.
			c.send(t, "CLIENT REPLY SKIP\r\nECHO skipped\r\nECHO one\r\n"+
				"CLIENT REPLY OFF\r\nECHO off\r\nNOSUCH\r\nCLIENT REPLY SKIP\r\nECHO off2\r\nCLIENT REPLY ON\r\nECHO two\r\n"+
				"CLIENT REPLY SKIP\r\nCLIENT REPLY SKIP\r\nECHO skipped2\r\nECHO three\r\n"+
				"CLIENT REPLY SKIP\r\nCLIENT REPLY ON\r\nCLIENT REPLY MAYBE\r\n")
			for _, want := range []string{"$3", "one", "+OK", "$3", "two", "$5", "three", "+OK", "-ERR syntax error"} {
				require.Equal(t, want, c.line(t))
			}
			// In separate round trips, as a client waiting for nothing sends them.
			c.send(t, "CLIENT REPLY OFF\r\n")
			c.send(t, "SET k v\r\n")
			c.send(t, "CLIENT REPLY ON\r\n")
			require.Equal(t, "+OK", c.line(t))
			c.send(t, "GET k\r\n")
			require.Equal(t, "$1", c.line(t))
			require.Equal(t, "v", c.line(t))
		})
	}
}

// TestClientReplyDetached: a client on a goroutine with an outbox (after SUBSCRIBE under
// RESP3) keeps its reply mode.
func TestClientReplyDetached(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.send(t, "HELLO 3\r\n")
	for c.line(t) != "*0" { // HELLO's map ends with modules, an empty array
	}
	c.send(t, "SUBSCRIBE ch\r\nCLIENT REPLY SKIP\r\nPING\r\nECHO x\r\n")
	for _, want := range []string{">3", "$9", "subscribe", "$2", "ch", ":1", "$1", "x"} {
		require.Equal(t, want, c.line(t))
	}
}

func TestClientPauseWrite(t *testing.T) {
	for _, sb := range servedBy {
		t.Run(sb.name, func(t *testing.T) {
			ts := startServer(t, sb.configure)
			admin := ts.client(t, 2)
			rdb := ts.client(t, 2)
			ctx := context.Background()
			require.Equal(t, "OK", do(t, admin, "CLIENT", "PAUSE", "60000", "WRITE"))
			// Reads and a PEEK pass.
			require.Equal(t, redis.Nil, rdb.Get(ctx, "k").Err())
			require.NoError(t, rdb.Do(ctx, "THROTTLE", "t", "1", "1", "1s", "PEEK").Err())
			// Writes wait, in order, not fail.
			done := make(chan error, 2)
			go func() { done <- rdb.Set(ctx, "k", "v", 0).Err() }()
			go func() { done <- rdb.Do(ctx, "THROTTLE", "t", "1", "1", "1s").Err() }()
			require.Eventually(t, func() bool { return strings.Contains(clientFlags(t, admin), "b") }, 5*time.Second, 10*time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("a write ran during the pause: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
			require.Equal(t, redis.Nil, rdb.Get(ctx, "k").Err())
			require.Equal(t, "OK", do(t, admin, "CLIENT", "UNPAUSE"))
			require.NoError(t, <-done)
			require.NoError(t, <-done)
			require.Equal(t, "v", rdb.Get(ctx, "k").Val())
		})
	}
}

// clientFlags returns every client's flags in CLIENT LIST, joined.
func clientFlags(t *testing.T, rdb *redis.Client) string {
	t.Helper()
	list, err := rdb.Do(context.Background(), "CLIENT", "LIST").Text()
	require.NoError(t, err)
	var flags []string
	for _, f := range strings.Fields(list) {
		if v, ok := strings.CutPrefix(f, "flags="); ok {
			flags = append(flags, v)
		}
	}
	return strings.Join(flags, ",")
}

func TestClientPauseAllEndsByTimeout(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	start := time.Now()
	require.Equal(t, "OK", do(t, rdb, "CLIENT", "PAUSE", "300"))
	require.Equal(t, "PONG", rdb.Ping(ctx).Val()) // ALL: even a read waits
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
}

func TestClientPauseErrors(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"CLIENT", "PAUSE", "abc"}, "ERR timeout is not an integer or out of range"},
		{[]any{"CLIENT", "PAUSE", "-1"}, "ERR timeout is negative"},
		{[]any{"CLIENT", "PAUSE", "10", "foo"}, "ERR CLIENT PAUSE mode must be WRITE or ALL"},
		{[]any{"CLIENT", "PAUSE"}, "ERR wrong number of arguments for 'client|pause' command"},
		{[]any{"CLIENT", "UNPAUSE", "x"}, "ERR wrong number of arguments for 'client|unpause' command"},
		{[]any{"CLIENT", "NO-EVICT", "maybe"}, "ERR syntax error"},
		{[]any{"CLIENT", "KILL", "USER", "nosuch"}, "ERR No such user 'nosuch'"},
	} {
		t.Run(joinArgs(tc.args), func(t *testing.T) {
			require.Equal(t, tc.want, doErr(t, rdb, tc.args...))
		})
	}
}

func joinArgs(args []any) string {
	var s []string
	for _, a := range args {
		s = append(s, a.(string))
	}
	return strings.Join(s, " ")
}

func TestClientNoEvictFlag(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.send(t, "CLIENT NO-EVICT on\r\nCLIENT INFO\r\n")
	require.Equal(t, "+OK", c.line(t))
	c.line(t)
	require.Contains(t, c.line(t), " flags=e ")
	c.line(t) // the CRLF after the bulk's own newline
	c.send(t, "CLIENT NO-EVICT OFF\r\nCLIENT INFO\r\n")
	require.Equal(t, "+OK", c.line(t))
	c.line(t)
	require.Contains(t, c.line(t), " flags=N ")
}

// TestClientListFields: every field of Redis 7's CLIENT LIST, in its order, with the
// buffers' figures where throttled has them.
func TestClientListFields(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	other := ts.raw(t)
	other.send(t, "ECHO "+strings.Repeat("x", 100)+"\r\n")
	other.line(t)
	other.line(t)
	info := rdb.Do(ctx, "CLIENT", "INFO").Val().(string)
	var names []string
	fields := map[string]string{}
	for _, f := range strings.Fields(info) {
		k, v, _ := strings.Cut(f, "=")
		names = append(names, k)
		fields[k] = v
	}
	require.Equal(t, []string{"id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub",
		"multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem", "events",
		"cmd", "user", "redir", "resp", "lib-name", "lib-ver"}, names)
	require.Equal(t, "10", fields["argv-mem"]) // "client" and "info"
	require.Equal(t, "client|info", fields["cmd"])
	require.NotEqual(t, "0", fields["qbuf-free"])
	require.NotEqual(t, "0", fields["tot-mem"])
	// Another client's reply buffer, as it published it after its reply.
	require.Eventually(t, func() bool {
		list := rdb.Do(ctx, "CLIENT", "LIST").Val().(string)
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, "cmd=echo") {
				return strings.Contains(line, " rbp=") && !strings.Contains(line, " rbp=0 ")
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)
}

func TestClientTrackingAbsent(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	require.Equal(t, []any{nil}, do(t, rdb, "COMMAND", "INFO", "client|tracking"))
	require.Equal(t, "ERR unknown subcommand 'TRACKING'. Try CLIENT HELP.", doErr(t, rdb, "CLIENT", "TRACKING", "on"))
}
