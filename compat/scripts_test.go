package compat

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
)

// rawReply reads one reply as the bytes the server sent, RESP2 or RESP3.
func rawReply(rd *bufio.Reader) ([]byte, error) {
	line, err := rd.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("malformed reply line %q", line)
	}
	head := string(line[1 : len(line)-2])
	switch line[0] {
	case '$', '=', '!': // bulk string, verbatim string, bulk error
		n, err := strconv.Atoi(head)
		if err != nil || n < 0 {
			return line, err
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(rd, body); err != nil {
			return nil, err
		}
		return append(line, body...), nil
	case '*', '~', '>', '%', '|': // array, set, push; map and attribute hold pairs
		n, err := strconv.Atoi(head)
		if err != nil || n < 0 {
			return line, err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		out := line
		for range n {
			elem, err := rawReply(rd)
			if err != nil {
				return nil, err
			}
			out = append(out, elem...)
		}
		if line[0] == '|' { // an attribute comes before the reply it annotates
			next, err := rawReply(rd)
			return append(out, next...), err
		}
		return out, nil
	}
	return line, nil // +, -, :, _, ,, #, (
}

// rawConn sends commands and returns the replies' bytes.
type rawConn struct {
	nc net.Conn
	rd *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &rawConn{nc: nc, rd: bufio.NewReader(nc)}
}

func (c *rawConn) do(t *testing.T, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.nc.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := c.nc.Write([]byte(b.String()))
	require.NoError(t, err)
	reply, err := rawReply(c.rd)
	require.NoError(t, err)
	return string(reply)
}

// scriptCall is one call of a classic script.
type scriptCall struct {
	script string // its file in testdata/scripts, without .lua
	keys   []string
	args   []string
}

// classicCalls is the fixed sequence of calls TestClassicScripts makes: each script on a
// few keys as time (an argument, as these scripts take it) goes on, across refusals,
// refills and window turns, and a few calls that make the script fail. Every expiry the
// scripts set is 10 s or more of real time, longer than the test runs.
func classicCalls(prefix string) []scriptCall {
	var calls []scriptCall
	add := func(script string, keys []string, args ...string) {
		for i := range keys {
			keys[i] = prefix + keys[i]
		}
		calls = append(calls, scriptCall{script, keys, args})
	}
	for i := range 16 { // 5 tokens, one every 2 s, and one every 3 s for bob
		now := strconv.FormatFloat(1732512345.25+0.3*float64(i)*float64(1+i%3), 'f', -1, 64)
		requested := strconv.Itoa(1 + i%5/4)
		add("token_bucket", []string{"tb:alice"}, "5", "0.5", now, requested)
		add("token_bucket", []string{"tb:bob"}, "3", "0.3333333333333333", now, "1")
	}
	for i := range 14 { // 4 a minute
		now := strconv.Itoa(1732512345000 + 7000*i + 130*(i%4))
		add("sliding_log", []string{"log:alice"}, "60000", "4", now, "req-"+strconv.Itoa(i))
	}
	for i := range 20 { // 5 in 10 s, across windows
		now := strconv.FormatFloat(1732512340.5+1.7*float64(i), 'f', -1, 64)
		add("sliding_counter", []string{"sc:alice"}, "10", "5", now)
	}
	for i := range 16 { // 4 units, one leaks out every 10 s
		now := strconv.Itoa(1732512345000 + 3000*i)
		add("leaky_bucket", []string{"lb:alice"}, "4", "0.1", now)
	}
	for i := range 7 { // 3 a minute, the key named for the window
		add("fixed_window", []string{"fw:alice:" + strconv.Itoa(28875205+i/5)}, "3", "60")
	}
	// Failures: a key of another type, a missing argument (arithmetic and comparison on nil).
	add("token_bucket", []string{"fw:alice:28875205"}, "5", "0.5", "1732512345.25", "1")
	add("sliding_log", []string{"log:bob"}, "a minute", "4", "1732512345000", "req-x")
	add("fixed_window", []string{"fw:bob"}, "three", "60")
	return calls
}

// TestClassicScripts runs the rate-limit scripts blog posts and tutorials print (a token
// bucket in a hash with fractional tokens, a sliding log in a sorted set, a sliding counter
// over keys it derives and does not declare, a leaky bucket, a fixed window with
// INCR/EXPIRE: testdata/scripts) against redis-server and throttled in lockstep, over RESP2
// and RESP3: every reply must be the same to the byte (SCRIPT LOAD's, EVAL's, EVALSHA's and
// the errors'), and the keys left behind the same (type, value, encoding; expiry to within
// a second).
func TestClassicScripts(t *testing.T) {
	rs := redistest.Start(t)
	th := start(t, "--appendonly", "no")
	sources := make(map[string]string)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			conns := []*rawConn{dialRaw(t, rs.Addr), dialRaw(t, fmt.Sprintf("127.0.0.1:%d", th.port))}
			do := func(args ...string) string {
				t.Helper()
				want, got := conns[0].do(t, args...), conns[1].do(t, args...)
				require.Equal(t, want, got, "%q", args)
				return want
			}
			if proto == "3" {
				for _, c := range conns {
					require.Equal(t, byte('%'), c.do(t, "HELLO", "3")[0])
				}
			}
			shas := make(map[string]string)
			for _, call := range classicCalls("p" + proto + ":") {
				src, ok := sources[call.script]
				if !ok {
					b, err := os.ReadFile(filepath.Join("testdata", "scripts", call.script+".lua"))
					require.NoError(t, err)
					src = string(b)
					sources[call.script] = src
				}
				args := append(append([]string{strconv.Itoa(len(call.keys))}, call.keys...), call.args...)
				sha, ok := shas[call.script]
				if !ok { // the first call of each script with EVAL, then SCRIPT LOAD and EVALSHA
					do(append([]string{"EVAL", src}, args...)...)
					reply := do("SCRIPT", "LOAD", src)
					sha = reply[strings.Index(reply, "\n")+1 : len(reply)-2]
					shas[call.script] = sha
					continue
				}
				do(append([]string{"EVALSHA", sha}, args...)...)
			}
			do("EVALSHA", strings.Repeat("0", 40), "0")
			do("SCRIPT", "EXISTS", shas["token_bucket"], strings.Repeat("0", 40))
		})
	}
	rrdb := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rrdb.Close()
	trdb := th.client()
	defer trdb.Close()
	want := keyspace(t, rrdb)
	require.Len(t, want, 2*11, "the keys the calls leave on redis-server")
	requireSameKeyspace(t, want, keyspace(t, trdb), time.Second)
}
