package server

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"throttled/internal/redistest"
)

// The differential tests send the same random commands to throttled and to a real
// redis-server and require the same reply, byte for byte, in RESP2 and in RESP3; then the
// same state at every key. Each command family has its generator in a file of its own
// (differential_*_test.go); a generator returns one command over a small key space, so
// that commands meet each other's keys, errors and wrong types included.

var diffCommands = flag.Int("diff.n", 20000, "commands each differential test sends per protocol")

// diffCmd is one generated command.
type diffCmd struct {
	args []string
	// unordered: the reply is an array whose order Redis does not define (a hash past its
	// listpack, a random pick): compared as a sorted list of its elements.
	unordered bool
	// pairs: with unordered, the array is field-value pairs, sorted as pairs.
	pairs bool
	// skip: compare nothing of the reply but that both are errors or neither is.
	skip bool
	// shape: compare the reply's types and lengths, not its strings (a random pick).
	shape bool
	// scan: the reply is a cursor and an array, the array compared as unordered says.
	scan bool
}

func cmd(args ...string) diffCmd { return diffCmd{args: args} }

// diffKeys is the key space every generator draws from.
var diffKeys = []string{"k0", "k1", "k2", "k3", "{k}4", "{k}5"}

func diffKey(r *rand.Rand) string { return diffKeys[r.IntN(len(diffKeys))] }

// pick returns one of choices.
func pick(r *rand.Rand, choices ...string) string { return choices[r.IntN(len(choices))] }

// diffInt returns an integer argument, now and then a bad one.
func diffInt(r *rand.Rand, lo, hi int) string {
	switch r.IntN(40) {
	case 0:
		return pick(r, "abc", "", "1.5", "9223372036854775808", "-9223372036854775809", " 1", "+1", "0x10")
	case 1:
		return pick(r, "9223372036854775807", "-9223372036854775808")
	}
	return strconv.Itoa(lo + r.IntN(hi-lo+1))
}

// diffFloat returns a float argument in Redis's forms, now and then a bad one.
func diffFloat(r *rand.Rand) string {
	switch r.IntN(12) {
	case 0:
		return pick(r, "inf", "-inf", "+inf", "nan", "abc", "", "1e400", "-0", "0x1p3", " 1", "1.5e2", ".5", "5.")
	case 1, 2:
		return strconv.FormatFloat(r.NormFloat64()*100, 'g', -1, 64)
	case 3:
		return strconv.FormatFloat(float64(r.IntN(2000)-1000)/10, 'f', -1, 64)
	}
	return strconv.Itoa(r.IntN(20) - 5)
}

// diffValue returns a member, field or value: short strings, integers and now and then a
// long one, so that encodings change at their thresholds.
func diffValue(r *rand.Rand) string {
	switch r.IntN(20) {
	case 0:
		return strings.Repeat("x", 60+r.IntN(10))
	case 1:
		return strconv.Itoa(r.IntN(300) - 100)
	case 2:
		return ""
	}
	return string(rune('a' + r.IntN(12)))
}

// runDifferential sends n commands from gen to both servers in each protocol and compares
// every reply and then every key's state.
func runDifferential(t *testing.T, gen func(*rand.Rand) diffCmd) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			rs := redistest.Start(t)
			ts := startServer(t, func(c *Config) { c.Now = nil })
			want, got := dialDiff(t, rs.Addr, proto), dialDiff(t, ts.addr, proto)
			seed := uint64(time.Now().UnixNano())
			r := rand.New(rand.NewPCG(seed, 1))
			var history []string
			const batch = 64
			for sent := 0; sent < *diffCommands; sent += batch {
				cmds := make([]diffCmd, batch)
				for i := range cmds {
					cmds[i] = gen(r)
				}
				wants, gots := want.pipeline(t, cmds), got.pipeline(t, cmds)
				for i, c := range cmds {
					history = append(history, quoteArgs(c.args))
					if len(history) > 40 {
						history = history[1:]
					}
					w, g := normalize(c, wants[i]), normalize(c, gots[i])
					if w != g {
						t.Fatalf("seed %d, proto %d: %s\nredis:     %q\nthrottled: %q\nlast commands:\n%s",
							seed, proto, quoteArgs(c.args), wants[i], gots[i], strings.Join(history, "\n"))
					}
				}
			}
			for _, k := range diffKeys {
				for _, c := range stateOf(want, t, k) {
					w, g := normalize(c, want.do(t, c)), normalize(c, got.do(t, c))
					require.Equal(t, w, g, "seed %d: the state of %s: %s", seed, k, quoteArgs(c.args))
				}
			}
		})
	}
}

// stateOf returns the commands that read all of key's state, by its type on Redis.
func stateOf(d *diffConn, t *testing.T, key string) []diffCmd {
	typ := d.do(t, cmd("TYPE", key))
	cmds := []diffCmd{cmd("TYPE", key), cmd("OBJECT", "ENCODING", key)}
	switch typ {
	case "+string\r\n":
		cmds = append(cmds, cmd("GET", key))
	case "+hash\r\n":
		cmds = append(cmds, diffCmd{args: []string{"HGETALL", key}, unordered: true, pairs: true}, cmd("HLEN", key))
	case "+zset\r\n":
		cmds = append(cmds, cmd("ZRANGE", key, "0", "-1", "WITHSCORES"), cmd("ZCARD", key))
	case "+list\r\n":
		cmds = append(cmds, cmd("LRANGE", key, "0", "-1"), cmd("LLEN", key))
	}
	return cmds
}

// normalize makes an unordered reply comparable; skip compares only its being an error.
func normalize(c diffCmd, reply string) string {
	if c.skip {
		return strconv.FormatBool(strings.HasPrefix(reply, "-"))
	}
	if c.shape {
		return shapeOf(reply)
	}
	if c.scan && strings.HasPrefix(reply, "*2\r\n") {
		rd := bufio.NewReader(strings.NewReader(reply[4:]))
		if cursor, err := readReply(rd); err == nil {
			rest, _ := io.ReadAll(rd)
			c.scan = false
			return reply[:4] + cursor + normalize(c, string(rest))
		}
	}
	if !c.unordered || reply == "" || (reply[0] != '*' && reply[0] != '%' && reply[0] != '~') {
		return reply
	}
	rd := bufio.NewReader(strings.NewReader(reply))
	head, _ := rd.ReadString('\n')
	n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	if head[0] == '%' {
		n *= 2
	}
	var elems []string
	for range n {
		e, err := readReply(rd)
		if err != nil {
			return reply
		}
		elems = append(elems, e)
	}
	if c.pairs {
		var pairs []string
		for i := 0; i+1 < len(elems); i += 2 {
			pairs = append(pairs, elems[i]+elems[i+1])
		}
		elems = pairs
	}
	slices.Sort(elems)
	return head[:1] + strings.Join(elems, "")
}

// shapeOf returns reply with the bytes of its strings left out.
func shapeOf(reply string) string {
	var b strings.Builder
	for len(reply) > 0 {
		end := strings.Index(reply, "\r\n")
		if end < 0 {
			return b.String() + reply
		}
		line := reply[:end+2]
		reply = reply[end+2:]
		if n, err := strconv.Atoi(line[1:end]); err == nil && n >= 0 && (line[0] == '$' || line[0] == '=') {
			b.WriteString("$\r\n")
			reply = reply[min(n+2, len(reply)):]
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}

// diffConn is a plain connection that returns replies as their raw bytes.
type diffConn struct {
	nc net.Conn
	rd *bufio.Reader
}

func dialDiff(t *testing.T, addr string, proto int) *diffConn {
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	d := &diffConn{nc: nc, rd: bufio.NewReaderSize(nc, 1<<16)}
	d.do(t, cmd("HELLO", strconv.Itoa(proto)))
	d.do(t, cmd("FLUSHALL"))
	return d
}

func (d *diffConn) do(t *testing.T, c diffCmd) string { return d.pipeline(t, []diffCmd{c})[0] }

// pipeline sends cmds at once and returns their replies.
func (d *diffConn) pipeline(t *testing.T, cmds []diffCmd) []string {
	var b []byte
	for _, c := range cmds {
		b = fmt.Appendf(b, "*%d\r\n", len(c.args))
		for _, a := range c.args {
			b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	d.nc.SetDeadline(time.Now().Add(20 * time.Second))
	_, err := d.nc.Write(b)
	require.NoError(t, err)
	out := make([]string, len(cmds))
	for i := range cmds {
		out[i], err = readReply(d.rd)
		require.NoError(t, err, "reply to %s", quoteArgs(cmds[i].args))
	}
	return out
}

// readReply reads one whole RESP2 or RESP3 reply and returns its bytes.
func readReply(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 {
		return "", fmt.Errorf("short line %q", line)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return line, nil
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(rd, body); err != nil {
			return "", err
		}
		return line + string(body), nil
	case '*', '~', '>', '%', '|':
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		var b strings.Builder
		b.WriteString(line)
		for range max(n, 0) {
			e, err := readReply(rd)
			if err != nil {
				return "", err
			}
			b.WriteString(e)
		}
		return b.String(), nil
	}
	return line, nil
}

// genStrings draws the string and key commands.
func genStrings(r *rand.Rand) diffCmd {
	k := diffKey(r)
	switch r.IntN(12) {
	case 0:
		return cmd("SET", k, diffValue(r))
	case 1:
		return cmd("GET", k)
	case 2:
		return cmd("INCRBY", k, diffInt(r, -5, 5))
	case 3:
		return cmd("DEL", k, diffKey(r))
	case 4:
		return cmd("EXISTS", k, diffKey(r))
	case 5:
		return cmd("TYPE", k)
	case 6:
		return cmd("MSET", k, diffValue(r), diffKey(r), diffValue(r))
	case 7:
		return cmd("MGET", k, diffKey(r))
	case 8:
		return cmd("SETNX", k, diffValue(r))
	case 9:
		return cmd("INCR", k)
	case 10:
		return cmd("PERSIST", k)
	}
	return cmd("EXPIRE", k, diffInt(r, 100, 1000))
}

func TestDifferentialStrings(t *testing.T) { runDifferential(t, genStrings) }
