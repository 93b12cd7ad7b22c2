package server

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// clock is a settable time source for exact tests of time logic.
type clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testServer is a server on 127.0.0.1:0 with an injected clock, stopped with the test.
type testServer struct {
	*Server
	clock *clock
	addr  string
}

func startServer(t testing.TB, configure ...func(*Config)) *testServer {
	t.Helper()
	return startServerWith(t, nil, configure...)
}

// startServerWith is startServer with prepare run on the server before it serves anyone.
func startServerWith(t testing.TB, prepare func(*Server), configure ...func(*Config)) *testServer {
	t.Helper()
	clk := newClock()
	cfg := DefaultConfig()
	cfg.Port = 0
	cfg.Shards = 16
	cfg.Dir = t.TempDir() // never ./data in the package directory
	cfg.Now = clk.Now
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, f := range configure {
		f(&cfg)
	}
	s, err := New(cfg)
	require.NoError(t, err)
	if prepare != nil {
		prepare(s)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return &testServer{Server: s, clock: clk, addr: ln.Addr().String()}
}

// client connects go-redis with RESP version proto (go-redis defaults to 3). Its read
// timeout is a minute, not go-redis's 3 s: a pipeline answered later than its read timeout
// is sent again whole, and under -race on a loaded machine a thousand EVALSHA of INCR took
// longer, and counted 2 (TestNativeScriptsUnderMaxMemory).
func (ts *testServer) client(t testing.TB, proto int) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Protocol: proto, PoolSize: 4, ReadTimeout: time.Minute})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// raw opens a plain TCP connection for exact protocol tests.
func (ts *testServer) raw(t testing.TB) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &rawConn{nc: nc, rd: bufio.NewReader(nc)}
}

type rawConn struct {
	nc net.Conn
	rd *bufio.Reader
}

func (r *rawConn) send(t testing.TB, s string) {
	t.Helper()
	_, err := r.nc.Write([]byte(s))
	require.NoError(t, err)
}

// line reads one reply line without its CRLF.
func (r *rawConn) line(t testing.TB) string {
	t.Helper()
	l, err := r.rd.ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSuffix(l, "\r\n")
}

// closed reports whether the server closed the connection.
func (r *rawConn) closed() bool {
	_, err := r.rd.ReadByte()
	return err == io.EOF
}

func do(t testing.TB, rdb *redis.Client, args ...any) any {
	t.Helper()
	v, err := rdb.Do(context.Background(), args...).Result()
	require.NoError(t, err, "%v", args)
	return v
}

func doErr(t testing.TB, rdb *redis.Client, args ...any) string {
	t.Helper()
	_, err := rdb.Do(context.Background(), args...).Result()
	require.Error(t, err, "%v", args)
	return err.Error()
}

func TestPipelineAnsweredInOrder(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	pipe := rdb.Pipeline()
	var cmds []*redis.IntCmd
	for i := 0; i < 100; i++ {
		cmds = append(cmds, pipe.Incr(ctx, "counter"))
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	for i, cmd := range cmds {
		require.Equal(t, int64(i+1), cmd.Val())
	}
}

func TestUnknownCommandAndArity(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	require.Equal(t, "ERR unknown command 'nosuch', with args beginning with: 'a' 'b' ", doErr(t, rdb, "nosuch", "a", "b"))
	require.Equal(t, "ERR wrong number of arguments for 'get' command", doErr(t, rdb, "get"))
	require.Equal(t, "ERR wrong number of arguments for 'client|setname' command", doErr(t, rdb, "client", "setname"))
	require.Equal(t, "ERR unknown subcommand 'nope'. Try CLIENT HELP.", doErr(t, rdb, "client", "nope"))
	require.Equal(t, "PONG", do(t, rdb, "PiNg"))
}

func TestProtocolErrorsCloseOnlyThatConnection(t *testing.T) {
	ts := startServer(t)
	other := ts.client(t, 2)
	require.Equal(t, "PONG", do(t, other, "ping"))
	cases := []struct{ name, send, reply string }{
		{"huge bulk length", "*1\r\n$9223372036854775807\r\n", "-ERR Protocol error: invalid bulk length"},
		{"bulk over the limit", "*1\r\n$536870913\r\n", "-ERR Protocol error: invalid bulk length"},
		{"negative bulk", "*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length"},
		{"huge multibulk", "*99999999999\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"multibulk over the limit", "*1048577\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"not a bulk", "*1\r\n+OK\r\n", "-ERR Protocol error: expected '$', got '+'"},
		{"not a bulk, a byte past ASCII", "*1\r\n\xff\r\n", "-ERR Protocol error: expected '$', got '\xff'"},
		{"null bulk", "*1\r\n$-1\r\n\r\n", "-ERR Protocol error: invalid bulk length"},
		{"bulk length with a leading zero", "*1\r\n$04\r\nPING\r\n", "-ERR Protocol error: invalid bulk length"},
		{"multibulk length with a plus", "*+1\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"negative zero multibulk", "*-0\r\n", "-ERR Protocol error: invalid multibulk length"},
		{"bad bulk terminator", "*1\r\n$3\r\nabcXY", "-ERR Protocol error: invalid bulk length"},
		{"unbalanced quotes", "SET \"a b\r\n", "-ERR Protocol error: unbalanced quotes in request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ts.raw(t)
			c.send(t, tc.send)
			require.Equal(t, tc.reply, c.line(t))
			require.True(t, c.closed())
		})
	}
	require.Equal(t, "PONG", do(t, other, "ping"))
}

func TestInlineCommands(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.send(t, "SET greeting \"hello world\\n\"\r\n\r\nGET greeting\r\nPING\n")
	require.Equal(t, "+OK", c.line(t))
	require.Equal(t, "$12", c.line(t))
	require.Equal(t, "hello world\n", c.line(t)) // the value's own newline ends the line read
	require.Equal(t, "", c.line(t))
	require.Equal(t, "+PONG", c.line(t))
}

func TestRequestSplitAcrossWrites(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	msg := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
	for i := 0; i < len(msg); i++ {
		c.send(t, msg[i:i+1])
	}
	require.Equal(t, "+OK", c.line(t))
	require.Equal(t, "$5", c.line(t))
	require.Equal(t, "value", c.line(t))
}

func TestLargeValue(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	big := strings.Repeat("x", 3<<20)
	require.Equal(t, "OK", do(t, rdb, "set", "big", big))
	require.Equal(t, big, do(t, rdb, "get", "big"))
}

func TestMaxClients(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxClients = 1 })
	first := ts.raw(t)
	first.send(t, "PING\r\n")
	require.Equal(t, "+PONG", first.line(t))
	second := ts.raw(t)
	require.Equal(t, "-ERR max number of clients reached", second.line(t))
	require.True(t, second.closed())
}

func TestHandlerPanicBecomesError(t *testing.T) {
	ts := startServerWith(t, func(s *Server) {
		s.commands["boom"] = &cmdEntry{name: "boom", arity: 1, handler: func(c *client, args [][]byte) error {
			sh := c.s.ks.Shard([]byte("k"))
			sh.Lock()
			defer sh.Unlock()
			c.W.Array(3) // half a reply, then a bug
			panic("bug")
		}}
	})
	rdb := ts.client(t, 2)
	require.Equal(t, "ERR internal error in 'boom': bug", doErr(t, rdb, "boom"))
	// The connection, the lock and the server carry on.
	require.Equal(t, "OK", do(t, rdb, "SET", "k", "v"))
	require.Equal(t, "v", do(t, rdb, "GET", "k"))
}

// The binary raises GOMAXPROCS to Procs before serving: the defaults, which CONFIG GET and
// CONFIG REWRITE compare values with, stay those of the CPUs the process started with.
func TestProcsKeepsTheDefaults(t *testing.T) {
	def := DefaultConfig()
	c := Config{IOThreads: 8}
	was := runtime.GOMAXPROCS(c.Procs())
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	require.Equal(t, def.IOThreads, DefaultConfig().IOThreads)
}

// ints is a reply of integers as go-redis reads it.
func ints(v ...int64) []any {
	out := make([]any, len(v))
	for i, x := range v {
		out[i] = x
	}
	return out
}
