// Package testserver starts a real throttled server in the test's own process, for black-box
// tests of a command family: a test starts one with Start, talks to it with a go-redis client
// (RESP2 or RESP3) or a raw connection, and compares its replies with a real redis-server's
// (Redis, which package redistest runs; package difftest is the harness that compares them). The server listens on 127.0.0.1 on a port the
// kernel picks, keeps its files in the test's temporary directory, reads the time from a
// Clock the test moves, and stops with the test, as everything here does (t.Cleanup).
//
// A test of package server itself cannot import this package (server's internal tests would
// make an import cycle): those keep server's own startServer.
package testserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/redistest"
	"github.com/throttledhq/throttled/server"
)

// Clock is a settable time source, so that tests of expiry and idle times are exact.
type Clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

// Now is the clock's time: 2023-11-14 22:13:20 UTC until Advance moves it.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock d ahead.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Server is a throttled server serving on Addr.
type Server struct {
	Addr  string // 127.0.0.1:port
	Clock *Clock // the server's time, unless a configure func set Config.Now
}

// Start starts a server with server.DefaultConfig() as tests want it (16 shards, files in
// t.TempDir(), logs discarded, the time from Clock), then configure applied in order, and
// stops it when the test ends. Config.Now = nil gives the server the real clock.
func Start(t testing.TB, configure ...func(*server.Config)) *Server {
	t.Helper()
	clk := &Clock{t: time.Unix(1_700_000_000, 0)}
	cfg := server.DefaultConfig()
	cfg.Port = 0
	cfg.Shards = 16
	cfg.Dir = t.TempDir() // never ./data in the package directory
	cfg.Now = clk.Now
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, f := range configure {
		f(&cfg)
	}
	s, err := server.New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return &Server{Addr: ln.Addr().String(), Clock: clk}
}

// Client returns a go-redis client of the server speaking RESP version proto (2 or 3),
// closed with the test.
func (s *Server) Client(t testing.TB, proto int) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: proto, PoolSize: 4})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Raw opens a plain TCP connection to the server, for tests of the exact bytes of a reply;
// closed with the test, its reads and writes time out after ten seconds.
func (s *Server) Raw(t testing.TB) *Conn { return Dial(t, s.Addr) }

// Redis starts a real redis-server (without persistence) for a differential test to
// compare with, stopped with the test.
func Redis(t testing.TB) *redistest.Server {
	t.Helper()
	return redistest.Start(t)
}

// Do runs one command and returns its reply, failing the test on an error reply.
func Do(t testing.TB, rdb *redis.Client, args ...any) any {
	t.Helper()
	v, err := rdb.Do(context.Background(), args...).Result()
	require.NoError(t, err, "%v", args)
	return v
}

// DoErr runs one command that must fail and returns its error's text.
func DoErr(t testing.TB, rdb *redis.Client, args ...any) string {
	t.Helper()
	_, err := rdb.Do(context.Background(), args...).Result()
	require.Error(t, err, "%v", args)
	return err.Error()
}

// Conn is a plain connection to a server (throttled or Redis) that sends bytes as given and
// reads replies as their raw bytes.
type Conn struct {
	net.Conn
	R *bufio.Reader
}

// Dial opens a Conn to addr, closed with the test; its reads and writes time out after ten
// seconds.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &Conn{Conn: nc, R: bufio.NewReaderSize(nc, 1<<16)}
}

// Send writes s as it is.
func (c *Conn) Send(t testing.TB, s string) {
	t.Helper()
	_, err := c.Write([]byte(s))
	require.NoError(t, err)
}

// Line reads one reply line without its CRLF.
func (c *Conn) Line(t testing.TB) string {
	t.Helper()
	l, err := c.R.ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSuffix(l, "\r\n")
}

// Reply reads one whole reply and returns its bytes.
func (c *Conn) Reply(t testing.TB) string {
	t.Helper()
	r, err := difftest.ReadReply(c.R)
	require.NoError(t, err)
	return r
}

// Do sends one command, its arguments as bulk strings, and returns its reply's bytes.
func (c *Conn) Do(t testing.TB, args ...string) string {
	t.Helper()
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.Send(t, string(b))
	return c.Reply(t)
}
