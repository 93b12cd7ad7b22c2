// Package difftest is the harness of the differential tests, which send the same random
// commands to throttled and to a real redis-server (package redistest starts it) and require
// the same reply, byte for byte, in RESP2 and in RESP3; then the same state at every key.
//
// A test calls Run with a generator and a function that starts throttled and returns its
// address (the data types' tests start it with package testserver, server's own tests with
// their startServer: this package imports neither, so that both may import it). A
// generator returns one command over a small key space (Keys), so that commands meet each
// other's keys, errors and wrong types included. The data types' generators are here, one
// file a family (Strings, Hash, ZSet, List, Set, RandomKey), because server's differential
// tests of scripts and of COMMAND GETKEYS draw from them too; Key, Pick, Int, Float, Value
// and FutureTime are what other generators build theirs from. -diff.n sets how many
// commands a test sends, -diff.seed replays a failure's seed.
package difftest

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
	"github.com/throttledhq/throttled/internal/redistest"
)

var diffCommands = flag.Int("diff.n", 20000, "commands each differential test sends per protocol")

// diffSeed replays the run of a seed a failure printed.
var diffSeed = flag.Uint64("diff.seed", 0, "the seed to draw the commands from; 0 for a new one each run")

// Cmd is one generated command.
type Cmd struct {
	Args []string
	// Unordered: the reply is an array whose order Redis does not define (a hash past its
	// listpack, a random pick): compared as a sorted list of its elements.
	Unordered bool
	// Pairs: with Unordered, the array is field-value pairs, sorted as pairs.
	Pairs bool
	// Skip: compare nothing of the reply but that both are errors or neither is.
	Skip bool
	// Shape: compare the reply's types and lengths, not its strings (a random pick).
	Shape bool
	// Scan: the reply is a cursor and an array, the array compared as Unordered says.
	Scan bool
}

func cmd(args ...string) Cmd { return Cmd{Args: args} }

// Keys is the key space every generator draws from.
var Keys = []string{"k0", "k1", "k2", "k3", "{k}4", "{k}5"}

// Key returns one of Keys.
func Key(r *rand.Rand) string { return Keys[r.IntN(len(Keys))] }

// Pick returns one of choices.
func Pick(r *rand.Rand, choices ...string) string { return choices[r.IntN(len(choices))] }

// Int returns an integer argument, now and then a bad one.
func Int(r *rand.Rand, lo, hi int) string {
	switch r.IntN(40) {
	case 0:
		return Pick(r, "abc", "", "1.5", "9223372036854775808", "-9223372036854775809", " 1", "+1", "0x10")
	case 1:
		return Pick(r, "9223372036854775807", "-9223372036854775808")
	}
	return strconv.Itoa(lo + r.IntN(hi-lo+1))
}

// Float returns a float argument in Redis's forms, now and then a bad one.
func Float(r *rand.Rand) string {
	switch r.IntN(12) {
	case 0:
		return Pick(r, "inf", "-inf", "+inf", "nan", "abc", "", "1e400", "-0", "0x1p3", " 1", "1.5e2", ".5", "5.")
	case 1, 2:
		return strconv.FormatFloat(r.NormFloat64()*100, 'g', -1, 64)
	case 3:
		return strconv.FormatFloat(float64(r.IntN(2000)-1000)/10, 'f', -1, 64)
	}
	return strconv.Itoa(r.IntN(20) - 5)
}

// Value returns a member, field or value: short strings, integers and now and then a
// long one, so that encodings change at their thresholds.
func Value(r *rand.Rand) string {
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

// Run sends -diff.n commands from gen to a redis-server and to the throttled that
// throttled starts (on the real clock) in each protocol, and compares every reply and then
// every key's state.
func Run(t *testing.T, gen func(*rand.Rand) Cmd, throttled func(*testing.T) string) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			rs := redistest.Start(t)
			want, got := Dial(t, rs.Addr, proto), Dial(t, throttled(t), proto)
			seed := uint64(time.Now().UnixNano())
			if *diffSeed != 0 {
				seed = *diffSeed
			}
			r := rand.New(rand.NewPCG(seed, 1))
			var history []string
			const batch = 64
			for sent := 0; sent < *diffCommands; sent += batch {
				cmds := make([]Cmd, batch)
				for i := range cmds {
					cmds[i] = gen(r)
				}
				wants, gots := want.Pipeline(t, cmds), got.Pipeline(t, cmds)
				for i, c := range cmds {
					history = append(history, quoteArgs(c.Args))
					if len(history) > 40 {
						history = history[1:]
					}
					w, g := normalize(c, wants[i]), normalize(c, gots[i])
					if w != g {
						t.Fatalf("seed %d, proto %d: %s\nredis:     %q\nthrottled: %q\nlast commands:\n%s",
							seed, proto, quoteArgs(c.Args), wants[i], gots[i], strings.Join(history, "\n"))
					}
				}
			}
			for _, k := range Keys {
				for _, c := range stateOf(want, t, k) {
					w, g := normalize(c, want.Do(t, c)), normalize(c, got.Do(t, c))
					require.Equal(t, w, g, "seed %d: the state of %s: %s", seed, k, quoteArgs(c.Args))
				}
			}
		})
	}
}

// stateOf returns the commands that read all of key's state, by its type on Redis.
func stateOf(d *Conn, t *testing.T, key string) []Cmd {
	typ := d.Do(t, cmd("TYPE", key))
	cmds := []Cmd{cmd("TYPE", key), cmd("OBJECT", "ENCODING", key)}
	switch typ {
	case "+string\r\n":
		cmds = append(cmds, cmd("GET", key))
	case "+hash\r\n":
		cmds = append(cmds, Cmd{Args: []string{"HGETALL", key}, Unordered: true, Pairs: true}, cmd("HLEN", key))
	case "+zset\r\n":
		cmds = append(cmds, cmd("ZRANGE", key, "0", "-1", "WITHSCORES"), cmd("ZCARD", key))
	case "+list\r\n":
		cmds = append(cmds, cmd("LRANGE", key, "0", "-1"), cmd("LLEN", key))
	case "+set\r\n": // an intset's members in order, a hashtable's in Redis's dict's
		intset := d.Do(t, cmd("OBJECT", "ENCODING", key)) == "$6\r\nintset\r\n"
		cmds = append(cmds, Cmd{Args: []string{"SMEMBERS", key}, Unordered: !intset}, cmd("SCARD", key))
	}
	return cmds
}

// normalize makes an unordered reply comparable; skip compares only its being an error.
func normalize(c Cmd, reply string) string {
	if c.Skip {
		return strconv.FormatBool(strings.HasPrefix(reply, "-"))
	}
	if c.Shape {
		return shapeOf(reply)
	}
	if c.Scan && strings.HasPrefix(reply, "*2\r\n") {
		rd := bufio.NewReader(strings.NewReader(reply[4:]))
		if cursor, err := ReadReply(rd); err == nil {
			rest, _ := io.ReadAll(rd)
			c.Scan = false
			return reply[:4] + cursor + normalize(c, string(rest))
		}
	}
	if !c.Unordered || reply == "" || (reply[0] != '*' && reply[0] != '%' && reply[0] != '~') {
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
		e, err := ReadReply(rd)
		if err != nil {
			return reply
		}
		elems = append(elems, e)
	}
	if c.Pairs {
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

// Conn is a plain connection that returns replies as their raw bytes.
type Conn struct {
	net.Conn
	R *bufio.Reader
}

// Dial connects to addr in protocol proto, with the server's keys flushed, closed with the
// test.
func Dial(t *testing.T, addr string, proto int) *Conn {
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	d := &Conn{Conn: nc, R: bufio.NewReaderSize(nc, 1<<16)}
	d.Do(t, cmd("HELLO", strconv.Itoa(proto)))
	d.Do(t, cmd("FLUSHALL"))
	return d
}

// Do sends one command and returns its reply.
func (d *Conn) Do(t *testing.T, c Cmd) string { return d.Pipeline(t, []Cmd{c})[0] }

// Pipeline sends cmds at once and returns their replies.
func (d *Conn) Pipeline(t *testing.T, cmds []Cmd) []string {
	var b []byte
	for _, c := range cmds {
		b = fmt.Appendf(b, "*%d\r\n", len(c.Args))
		for _, a := range c.Args {
			b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	d.Conn.SetDeadline(time.Now().Add(20 * time.Second))
	_, err := d.Conn.Write(b)
	require.NoError(t, err)
	out := make([]string, len(cmds))
	for i := range cmds {
		out[i], err = ReadReply(d.R)
		require.NoError(t, err, "reply to %s", quoteArgs(cmds[i].Args))
	}
	return out
}

// ReadReply reads one whole RESP2 or RESP3 reply and returns its bytes.
func ReadReply(rd *bufio.Reader) (string, error) {
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
			e, err := ReadReply(rd)
			if err != nil {
				return "", err
			}
			b.WriteString(e)
		}
		return b.String(), nil
	}
	return line, nil
}
