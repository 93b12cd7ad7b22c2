package server

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/redistest"
)

// TestDifferentialExecRefused runs the transactions that queue an unknown command, those
// whose EXEC is refused itself (no room for the commands it queued, too few replicas for
// its writes) and those that queue a no-multi command (SAVE, SHUTDOWN) on throttled and on
// redis-server, in RESP2 and RESP3, over two connections (the second changes the
// configuration between queueing and EXEC): the replies are the same, and the first
// connection has left MULTI after EXECABORT.
func TestDifferentialExecRefused(t *testing.T) {
	rs := redistest.Start(t)
	ts := startServer(t, func(c *Config) { c.Now = nil })
	steps := []string{
		"a MULTI", "a SET foo bar", "a NOSUCH x", "a GET foo", "a EXEC", "a GET foo",
		"a MULTI", "a SET foo bar", "a SAVE", "a EXEC", "a GET foo",
		"a MULTI", "a SET foo bar", "a SHUTDOWN", "a EXEC", "a PING",
		"a SET x 1", "a MULTI", "a SET x 2", "a GET x", "b CONFIG SET maxmemory 1", "a EXEC", "a PING",
		"b CONFIG SET maxmemory 0", "a MULTI", "a GET x", "a PING", "b CONFIG SET maxmemory 1", "a EXEC",
		"a MULTI", "a GET x", "a DISCARD", "b CONFIG SET maxmemory 0",
		"a SET xx 1", "a MULTI", "a INCR xx", "b CONFIG SET min-replicas-to-write 2", "a EXEC",
		"b CONFIG SET min-replicas-to-write 0", "a GET xx", "a PING",
	}
	run := func(addr string, proto int) []string {
		conns := map[byte]*difftest.Conn{'a': difftest.Dial(t, addr, proto), 'b': difftest.Dial(t, addr, proto)}
		var out []string
		for _, s := range steps {
			out = append(out, s+" -> "+conns[s[0]].Do(t, difftest.Cmd{Args: strings.Fields(s[2:])}))
		}
		return out
	}
	for _, proto := range []int{2, 3} {
		require.Equal(t, run(rs.Addr, proto), run(ts.addr, proto), "RESP%d", proto)
	}
}

// TestDifferentialExecWhileBusy is Redis's "EXEC and script timeout": a request queued while
// a script is busy is refused, EXEC then replies EXECABORT naming BUSY, runs nothing and
// leaves MULTI, on throttled as on redis-server.
func TestDifferentialExecWhileBusy(t *testing.T) {
	rs := redistest.Start(t)
	ts := startServer(t, func(c *Config) { c.Now = nil })
	run := func(addr string) []string {
		a, b, k := difftest.Dial(t, addr, 2), difftest.Dial(t, addr, 2), difftest.Dial(t, addr, 2)
		do := func(d *difftest.Conn, args string) string { return d.Do(t, difftest.Cmd{Args: strings.Fields(args)}) }
		out := []string{do(k, "CONFIG SET busy-reply-threshold 10"), do(a, "SET xx 1"), do(a, "MULTI"), do(a, "INCR xx")}
		_, err := b.Write([]byte("*3\r\n$4\r\nEVAL\r\n$17\r\nwhile true do end\r\n$1\r\n0\r\n"))
		require.NoError(t, err)
		require.Eventually(t, func() bool { return strings.HasPrefix(do(k, "PING"), "-BUSY") }, 5*time.Second, 10*time.Millisecond)
		out = append(out, do(a, "INCR xx"), do(a, "EXEC"), do(k, "SCRIPT KILL"))
		_, err = difftest.ReadReply(b.R)
		require.NoError(t, err)
		return append(out, do(a, "GET xx"), do(a, "PING"))
	}
	require.Equal(t, run(rs.Addr), run(ts.addr))
}
