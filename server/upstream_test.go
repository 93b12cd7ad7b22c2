package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
)

// upstreamPair is a local server and a server on an upstream Redis sharing one clock. The
// clock starts an hour past the wall clock and only moves on, so that the upstream never
// expires a state before the servers' clock says it is idle. The upstream's time-out is
// long: a round trip slowed by a loaded machine would be a degraded, local decision.
func upstreamPair(t *testing.T, configure ...func(*Config)) (local, remote *testServer, clk *clock, redis *redistest.Server) {
	t.Helper()
	redis = redistest.Start(t)
	clk = &clock{t: time.Now().Add(time.Hour)}
	set := func(up bool) func(*Config) {
		return func(cfg *Config) {
			cfg.Now = clk.Now
			cfg.AppendOnly = false
			if up {
				cfg.Upstream = redis.URL()
				cfg.UpstreamTimeout = time.Minute
			}
			for _, f := range configure {
				f(cfg)
			}
		}
	}
	return startServer(t, set(false)), startServer(t, set(true)), clk, redis
}

// replyConn sends requests and reads each reply's bytes as they came.
type replyConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialReplies(t *testing.T, addr string) *replyConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &replyConn{c: c, r: bufio.NewReader(c)}
}

// do sends the requests in one write and returns their replies.
func (rc *replyConn) do(t *testing.T, reqs ...[]string) []string {
	t.Helper()
	var b []byte
	for _, args := range reqs {
		b = fmt.Appendf(b, "*%d\r\n", len(args))
		for _, a := range args {
			b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := rc.c.Write(b)
	require.NoError(t, err)
	out := make([]string, len(reqs))
	for i := range reqs {
		var reply bytes.Buffer
		require.NoError(t, readRaw(rc.r, &reply))
		out[i] = reply.String()
	}
	return out
}

// readRaw copies one RESP2 or RESP3 reply from r to dst.
func readRaw(r *bufio.Reader, dst *bytes.Buffer) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	dst.WriteString(line)
	body := strings.TrimRight(line[1:], "\r\n")
	switch line[0] {
	case '$', '=', '!':
		n, _ := strconv.Atoi(body)
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		dst.Write(buf)
	case '*', '~', '>', '%':
		n, _ := strconv.Atoi(body)
		if line[0] == '%' {
			n *= 2
		}
		for range max(n, 0) {
			if err := readRaw(r, dst); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestUpstreamSameReplies runs one sequence of calls of every rate-limit verb, with the
// clock moving between them, on a local server and on a server on an upstream Redis: every
// reply is the same, byte for byte, under RESP2 and RESP3, one at a time and pipelined.
func TestUpstreamSameReplies(t *testing.T) {
	for _, threads := range []int{1, 0} {
		t.Run(fmt.Sprintf("io-threads %d", threads), func(t *testing.T) {
			sameReplies(t, func(cfg *Config) { cfg.IOThreads = threads })
		})
	}
}

func sameReplies(t *testing.T, configure func(*Config)) {
	local, remote, clk, _ := upstreamPair(t, configure)
	keys := []string{"a", "b", "{t}c", "{t}d"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	opts := func() []string {
		var o []string
		switch rng.IntN(10) {
		case 0:
			o = append(o, "COST", pick("0", "2", "5", "40"))
		case 1:
			o = append(o, "PEEK")
		case 2:
			o = append(o, "REFUND", pick("1", "3", "0"))
		case 3:
			o = append(o, "TIERS", "payments=1", "default=0.5", "PRIORITY", pick("payments", "default"))
		case 4:
			o = append(o, "BLOCK", pick("1500ms", "3s"))
		}
		return o
	}
	// Each key gets one kind most of the time and, now and then, another (WRONGTYPE).
	call := func() []string {
		k := pick(keys...)
		kind := rng.IntN(12)
		if rng.IntN(10) > 0 {
			kind = int(k[len(k)-1]) % 12
		}
		switch kind {
		case 0:
			return []string{"CL.THROTTLE", "cl:" + k, "3", "2", "1", pick("1", "0", "2", "9")}
		case 1:
			return []string{"GCRA", "cl:" + k, "3", "2", "1.5", "TOKENS", pick("1", "0", "3")}
		case 2:
			return append([]string{"THROTTLE", k, "3", "2", pick("1s", "2s")}, opts()...)
		case 3:
			return append([]string{"TOKENBUCKET", k, "5", "2", "1s"}, opts()...)
		case 4:
			return append([]string{"LEAKYBUCKET", k, "4", "2", "1s"}, opts()...)
		case 5:
			return append([]string{"SLIDE", k, "5", "2s"}, opts()...)
		case 6:
			return append([]string{"SLIDE", k, "5", "2s", "APPROX"}, opts()...)
		case 7:
			return append([]string{"WINDOW", k, "4", "1s"}, opts()...)
		case 8:
			return append([]string{"CONCURRENCY.ACQUIRE", k, "2", "3s", pick("x", "y", "z")}, opts()...)
		case 9:
			return []string{"CONCURRENCY.RELEASE", k, pick("x", "y", "z")}
		case 10:
			return []string{"ALLOF", "THROTTLE", "{t}c", "3", "2", "1s", "SLIDE", "{t}d", "5", "2s", "COST", pick("1", "2"),
				"THROTTLE", "{t}c", "1", "1", "1s"}
		}
		return []string{"THROTTLE", k, "x", "1", "1s"} // a syntax error
	}
	for _, proto := range []string{"2", "3"} {
		l, r := dialReplies(t, local.addr), dialReplies(t, remote.addr)
		require.Equal(t, l.do(t, []string{"HELLO", proto})[0] != "", r.do(t, []string{"HELLO", proto})[0] != "")
		var hist []string
		for step := 0; step < 600; step++ {
			if rng.IntN(3) == 0 {
				clk.Advance(time.Duration(rng.IntN(700)) * time.Millisecond)
			}
			n := 1
			if rng.IntN(4) == 0 {
				n = 2 + rng.IntN(10) // a pipeline
			}
			reqs := make([][]string, n)
			for i := range reqs {
				reqs[i] = call()
			}
			want, got := l.do(t, reqs...), r.do(t, reqs...)
			for i := range reqs {
				hist = append(hist, fmt.Sprintf("%d %v %q => %q", step, clk.Now().UnixNano(), reqs[i], want[i]))
				if want[i] != got[i] {
					for _, h := range hist[max(0, len(hist)-40):] {
						t.Log(h)
					}
				}
				require.Equal(t, want[i], got[i], "RESP%s step %d: %q", proto, step, reqs[i])
			}
		}
	}
	info := dialReplies(t, remote.addr).do(t, []string{"INFO", "upstream"})[0]
	require.Contains(t, info, "upstream_breaker:closed")
	require.Contains(t, info, "upstream_degraded_decisions:0")
	require.NotContains(t, info, "upstream_local_decisions:0\r")
}

// BenchmarkThrottleUpstreamDenied is a flood on a key the upstream denies: each call is
// answered from the state last seen, without the upstream.
func BenchmarkThrottleUpstreamDenied(b *testing.B) {
	redis := redistest.Start(b)
	ts := startServer(b, func(cfg *Config) {
		cfg.AppendOnly = false
		cfg.Now = nil
		cfg.Upstream = redis.URL()
	})
	req := []string{"THROTTLE", "k", "0", "1", "1h"}
	rdb := ts.client(b, 2)
	for range 2 { // the first takes the key's only admission, the second sees it denied
		require.NoError(b, rdb.Do(b.Context(), "THROTTLE", "k", "0", "1", "1h").Err())
	}
	args := make([][]byte, len(req))
	for i, a := range req {
		args[i] = []byte(a)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := ts.newClient(nc)
		for pb.Next() {
			ts.run(c, args)
			if len(c.up.calls) != 0 || c.W.B[0] == '-' {
				b.Fatalf("not settled locally: %q", c.W.B)
			}
			c.W.B = c.W.B[:0]
		}
	})
}
