package server

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
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

// The differential tests send the same random commands to throttled and to a real
// redis-server and require the same reply, byte for byte, in RESP2 and in RESP3; then the
// same state at every key. Each command family has its generator in a file of its own
// (differential_*_test.go); a generator returns one command over a small key space, so
// that commands meet each other's keys, errors and wrong types included.

var diffCommands = flag.Int("diff.n", 20000, "commands each differential test sends per protocol")

// diffSeed replays the run of a seed a failure printed.
var diffSeed = flag.Uint64("diff.seed", 0, "the seed to draw the commands from; 0 for a new one each run")

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
			if *diffSeed != 0 {
				seed = *diffSeed
			}
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
	case "+set\r\n": // an intset's members in order, a hashtable's in Redis's dict's
		intset := d.do(t, cmd("OBJECT", "ENCODING", key)) == "$6\r\nintset\r\n"
		cmds = append(cmds, diffCmd{args: []string{"SMEMBERS", key}, unordered: !intset}, cmd("SCARD", key))
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

// genStrings draws the string and key commands, over diffKeys and now and then a binary
// key. Every expiry it sets for good is an absolute time far ahead (2100), so that
// PEXPIRETIME compares exactly; relative ones come with bad or non-positive values, which
// are errors or delete at once (strings_test.go tests them against a clock). Once the
// collection families are in, it mixes in their writes on the same keys (WRONGTYPE).
func genStrings(r *rand.Rand) diffCmd {
	k, k2 := diffKey(r), diffKey(r)
	if r.IntN(30) == 0 {
		k = "b\x00\r\n\xff" // binary safe
	}
	switch r.IntN(52) {
	case 47, 48, 49, 50, 51:
		return diffKeyCmd(r, k)
	case 44:
		return cmd("GETSET", k, diffStrValue(r))
	case 45:
		return cmd("MSETNX", k, diffStrValue(r), k2, diffStrValue(r))
	case 46:
		return cmd(pick(r, "MSETNX", "GETSET"), k) // arity and wrong counts
	case 0, 1:
		return cmd(append([]string{"SET", k, diffStrValue(r)}, diffSetOptions(r)...)...)
	case 2:
		return cmd("GET", k)
	case 3:
		return cmd("INCRBY", k, diffInt(r, -5, 5))
	case 4:
		return cmd("DEL", k, k2)
	case 5:
		return cmd("EXISTS", k, k2)
	case 6:
		return cmd("TYPE", k)
	case 7:
		return cmd("MSET", k, diffStrValue(r), k2, diffStrValue(r))
	case 8:
		return cmd("MGET", k, k2)
	case 9:
		return cmd("SETNX", k, diffStrValue(r))
	case 10:
		return cmd(pick(r, "INCR", "DECR"), k)
	case 11:
		return cmd("PERSIST", k)
	case 12:
		return cmd(pick(r, "EXPIRE", "PEXPIRE"), k, pick(r, "0", "-1", "-100", "abc", "9223372036854775807", "-9223372036854775808"))
	case 13:
		return cmd(pick(r, "EXPIREAT", "PEXPIREAT"), k, diffAbsTime(r, false))
	case 14:
		return cmd(pick(r, "PEXPIRETIME", "EXPIRETIME"), k)
	case 15, 16, 17:
		return cmd("INCRBYFLOAT", k, diffLongDouble(r))
	case 18, 19:
		return cmd(append([]string{"GETEX", k}, diffGetExOptions(r)...)...)
	case 20:
		return cmd("GETDEL", k)
	case 21, 22:
		return cmd("APPEND", k, diffStrValue(r))
	case 23:
		return cmd("STRLEN", k)
	case 24, 25:
		return diffSetRange(r, k)
	case 26, 27:
		return cmd(pick(r, "GETRANGE", "SUBSTR"), k, diffInt(r, -25, 25), diffInt(r, -25, 25))
	case 28, 29:
		return cmd("OBJECT", pick(r, "ENCODING", "encoding", "REFCOUNT"), k)
	case 30:
		c := cmd("OBJECT", pick(r, "IDLETIME", "FREQ", "HELP", "help", "nosuch", "ENCODING"), k)
		switch r.IntN(4) {
		case 0:
			c.args = c.args[:2] // HELP right, the others short of a key
		case 1:
			c.args = append(c.args, k2) // HELP and the others with one too many
		case 2:
			c.args = c.args[:1]
		}
		// Seconds since the last access: each server's own, which may differ by one at the
		// edge of a second.
		c.skip = len(c.args) == 3 && c.args[1] == "IDLETIME"
		return c
	case 31, 32:
		return cmd(pick(r, "RENAME", "RENAMENX"), k, k2)
	case 33, 34:
		return cmd(append([]string{"COPY", k, k2}, diffCopyOptions(r)...)...)
	case 35:
		return cmd("TOUCH", k, k2, diffKey(r))
	case 36:
		return cmd("DBSIZE")
	case 37:
		return diffCmd{args: []string{"KEYS", pick(r, "*", "k*", "{k}*", "*[0-3]")}, unordered: true}
	case 38:
		if c, ok := diffOtherType(r, k); ok {
			return c
		}
		return cmd("SET", k, diffStrValue(r), "KEEPTTL")
	case 39:
		return cmd("SCAN", "0", "COUNT", "1000", "TYPE", pick(r, "string", "hash", "list", "zset"), "MATCH", k)
	case 40:
		return cmd("SETEX", k, pick(r, "0", "-1", "x"), diffStrValue(r))
	case 41:
		return cmd("GETRANGE", k, pick(r, "0", "-1", "-9223372036854775808", "9223372036854775807"), pick(r, "0", "-1", "-9223372036854775808", "9223372036854775807"))
	}
	return cmd("OBJECT", "ENCODING", k)
}

// diffStrValue returns a string value: diffValue's, or numbers in the forms INCR,
// INCRBYFLOAT and OBJECT ENCODING treat apart (a small integer is shared, a long one is not,
// 20 and 21 digits, 44 and 45 bytes).
func diffStrValue(r *rand.Rand) string {
	switch r.IntN(8) {
	case 0:
		return pick(r, "0", "9999", "10000", "-1", "01", "-0", "12345678901234567890", "9223372036854775807",
			"-9223372036854775808", "9223372036854775808", "1.5", "10.5", " 1", "1e3", "0x10", "inf", "nan")
	case 1:
		return strings.Repeat("y", 43+r.IntN(3))
	case 2:
		return strconv.Itoa(r.IntN(20000) - 5000)
	}
	return diffValue(r)
}

// diffAbsTime returns an absolute expiry: far ahead (2100), in the past, or a bad one;
// in milliseconds when ms.
func diffAbsTime(r *rand.Rand, ms bool) string {
	switch r.IntN(10) {
	case 0:
		return pick(r, "1", "1000", "1700000000", "0", "-1")
	case 1:
		return pick(r, "abc", "", "1.5", "9223372036854775808")
	}
	return diffFutureTime(r, ms)
}

// diffFutureTime is diffAbsTime without times in the past, for SET: Redis keeps a key set
// to expire in the past until expiry finds it, and DBSIZE counts it meanwhile.
func diffFutureTime(r *rand.Rand, ms bool) string {
	switch r.IntN(10) {
	case 0:
		return pick(r, "0", "-1")
	case 1:
		return pick(r, "abc", "", "1.5", "9223372036854775808")
	}
	sec := 4102444800 + r.IntN(1000)
	if ms {
		return strconv.Itoa(sec*1000 + r.IntN(1000))
	}
	return strconv.Itoa(sec)
}

// diffSetOptions returns SET's options, valid or not.
func diffSetOptions(r *rand.Rand) []string {
	var opts []string
	for range r.IntN(4) {
		switch r.IntN(9) {
		case 0:
			opts = append(opts, "NX")
		case 1:
			opts = append(opts, "XX")
		case 2:
			opts = append(opts, pick(r, "GET", "get"))
		case 3:
			opts = append(opts, "KEEPTTL")
		case 4:
			opts = append(opts, "EXAT", diffFutureTime(r, false))
		case 5:
			opts = append(opts, "PXAT", diffFutureTime(r, true))
		case 6:
			opts = append(opts, pick(r, "EX", "PX"), pick(r, "0", "-1", "x", "9223372036854775807"))
		case 7:
			opts = append(opts, pick(r, "EX", "PERSIST", "bogus"))
		}
	}
	return opts
}

// diffGetExOptions returns GETEX's options, valid or not.
func diffGetExOptions(r *rand.Rand) []string {
	var opts []string
	for range r.IntN(3) {
		switch r.IntN(7) {
		case 0:
			opts = append(opts, pick(r, "EXAT", "exat"), diffAbsTime(r, false))
		case 1:
			opts = append(opts, "PXAT", diffAbsTime(r, true))
		case 2, 3:
			opts = append(opts, pick(r, "PERSIST", "persist"))
		case 4:
			opts = append(opts, pick(r, "EX", "PX"), pick(r, "0", "-1", "x", "9223372036854775807", "-9223372036854775808"))
		case 5:
			opts = append(opts, pick(r, "EX", "PXAT", "KEEPTTL", "bogus"))
		case 6:
			opts = append(opts, "EXAT", "9223372036854775807")
		}
	}
	return opts
}

// diffLongDouble returns an INCRBYFLOAT increment: in every form strtold reads, and not.
func diffLongDouble(r *rand.Rand) string {
	switch r.IntN(8) {
	case 0:
		return pick(r, "inf", "-inf", "Infinity", "nan", "abc", "", " 1", "1 ", "1e", "0x", "0x1p-3", "0X1.8P1",
			"1e4933", "1e-4951", "1e4000", "-1e4000", "5e-18", "1e-17", "0.000003814697265625", "+.5", "5.", "-0",
			"18446744073709551617", "0x1p-16445")
	case 1:
		return strconv.FormatFloat(r.NormFloat64()*1e6, 'g', -1, 64)
	case 2:
		return strconv.FormatFloat(r.Float64()*math.Pow(10, float64(r.IntN(60)-30)), 'e', r.IntN(20), 64)
	case 3:
		return diffStrValue(r)
	}
	return diffFloat(r)
}

// diffSetRange returns a SETRANGE, with offsets that pass proto-max-bulk-len only when
// nothing would be written (a real write there takes 512 MB on both servers).
func diffSetRange(r *rand.Rand, k string) diffCmd {
	val := diffStrValue(r)
	off := strconv.Itoa(r.IntN(70))
	switch r.IntN(8) {
	case 0:
		off = pick(r, "-1", "abc", "", "9223372036854775808", "-9223372036854775808")
	case 1:
		off = pick(r, "536870912", "536870911", "9223372036854775807")
		if off == "536870911" && len(val) < 2 {
			val = "xy"
		}
	case 2:
		val = ""
	}
	return cmd("SETRANGE", k, off, val)
}

// diffCopyOptions returns COPY's options; of databases only 0 and bad ones, as this server
// has no other.
func diffCopyOptions(r *rand.Rand) []string {
	var opts []string
	for range r.IntN(3) {
		switch r.IntN(5) {
		case 0, 1:
			opts = append(opts, pick(r, "REPLACE", "replace"))
		case 2:
			opts = append(opts, "DB", "0")
		case 3:
			opts = append(opts, "DB", pick(r, "x", "-1", "16", "2147483648", "99999999999999999999", ""))
		case 4:
			opts = append(opts, pick(r, "DB", "bogus"))
		}
	}
	return opts
}

// diffOtherType returns a write of a collection type on k when the server has its family.
func diffOtherType(r *rand.Rand, k string) (diffCmd, bool) {
	var cands []diffCmd
	for _, c := range []diffCmd{cmd("HSET", k, "f", diffValue(r)), cmd("RPUSH", k, diffValue(r)), cmd("ZADD", k, "1", diffValue(r)), cmd("SADD", k, diffValue(r))} {
		if diffKnown[strings.ToLower(c.args[0])] {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return diffCmd{}, false
	}
	return cands[r.IntN(len(cands))], true
}

// diffKnown holds the commands this server has.
var diffKnown = func() map[string]bool {
	m := make(map[string]bool)
	for name := range (&Server{}).commandTable() {
		m[name] = true
	}
	return m
}()

func TestDifferentialStrings(t *testing.T) { runDifferential(t, genStrings) }
