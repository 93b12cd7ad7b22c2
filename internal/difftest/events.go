package difftest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/internal/redistest"
)

// markChannel is the channel RunEvents publishes on after each batch: its message, which
// comes after every event of the batch, ends the batch's events.
const markChannel = "difftest:mark"

// RunEvents is Run for keyspace notifications: with notify-keyspace-events set to flags
// on both servers, it sends -diff.n commands from gen, batch by batch, and requires that a
// subscriber to every keyspace and keyevent channel (PSUBSCRIBE __key*__:*) receive the
// same messages from each, byte for byte and in the same order, in RESP2 and, subscribed
// in RESP3, as pushes. The replies are compared too, so that a difference in what a
// command did shows as such before its events do.
func RunEvents(t *testing.T, flags string, gen func(*rand.Rand) Cmd, throttled func(*testing.T) string) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			rs := redistest.Start(t)
			want, wantSub := dialEvents(t, rs.Addr, proto, flags)
			got, gotSub := dialEvents(t, throttled(t), proto, flags)
			seed := uint64(time.Now().UnixNano())
			if *diffSeed != 0 {
				seed = *diffSeed
			}
			r := rand.New(rand.NewPCG(seed, 2))
			const batch = 32
			events := 0
			for sent := 0; sent < *diffCommands; sent += batch {
				cmds := make([]Cmd, batch)
				for i := range cmds {
					cmds[i] = gen(r)
				}
				wants, gots := want.Pipeline(t, cmds), got.Pipeline(t, cmds)
				var history []string
				for i, c := range cmds {
					history = append(history, quoteArgs(c.Args))
					w, g := normalize(c, wants[i]), normalize(c, gots[i])
					if w != g {
						t.Fatalf("seed %d, proto %d: %s\nredis:     %q\nthrottled: %q\nthe batch:\n%s",
							seed, proto, quoteArgs(c.Args), wants[i], gots[i], strings.Join(history, "\n"))
					}
				}
				mark := strconv.Itoa(sent)
				we, ge := eventsUntil(t, want, wantSub, mark), eventsUntil(t, got, gotSub, mark)
				if strings.Join(we, "") != strings.Join(ge, "") {
					t.Fatalf("seed %d, proto %d: the events of the batch differ\nredis:\n%s\nthrottled:\n%s\nthe batch:\n%s",
						seed, proto, showEvents(we), showEvents(ge), strings.Join(history, "\n"))
				}
				events += len(we)
			}
			require.NotZero(t, events, "no event at all: the comparison compared nothing")
			t.Logf("%d events compared", events)
		})
	}
}

// showEvents writes messages one a line, their channel and message only.
func showEvents(msgs []string) string {
	var b strings.Builder
	for _, m := range msgs {
		f := strings.Split(m, "\r\n")
		if len(f) >= 8 {
			f = f[len(f)-5 : len(f)-1] // $n channel $n message
		}
		fmt.Fprintf(&b, "  %s %s\n", f[1], f[len(f)-1])
	}
	return b.String()
}

// dialEvents returns a connection for commands to addr, with the keys flushed and
// notify-keyspace-events set to flags, and a subscriber in protocol proto to every
// keyspace and keyevent channel and to markChannel.
func dialEvents(t *testing.T, addr string, proto int, flags string) (cmds, sub *Conn) {
	cmds = Dial(t, addr, 2)
	require.Equal(t, "+OK\r\n", cmds.Do(t, cmd("CONFIG", "SET", "notify-keyspace-events", flags)))
	sub = Dial(t, addr, proto)
	sub.Pipeline(t, []Cmd{cmd("PSUBSCRIBE", "__key*__:*")}) // its confirmation is its reply
	sub.Do(t, cmd("SUBSCRIBE", markChannel))
	return cmds, sub
}

// eventsUntil publishes mark on markChannel through cmds and returns the messages sub
// received before it, as their RESP bytes.
func eventsUntil(t *testing.T, cmds, sub *Conn, mark string) []string {
	require.Equal(t, ":1\r\n", cmds.Do(t, cmd("PUBLISH", markChannel, mark)))
	sub.Conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	var out []string
	for {
		m, err := ReadReply(sub.R)
		require.NoError(t, err)
		if strings.Contains(m, "\r\n"+markChannel+"\r\n") {
			require.True(t, strings.HasSuffix(m, "\r\n"+mark+"\r\n"), "mark %s: %q", mark, m)
			return out
		}
		out = append(out, m)
	}
}

// Keyspace draws from every data type's generator, so that events of each class and the
// generic ones (DEL, EXPIRE, RENAME, COPY...) meet on the same keys. A type's generator
// sets relative expiries that another's reads back to the millisecond: those reads are
// compared as errors or not only.
func Keyspace(r *rand.Rand) Cmd {
	var c Cmd
	bylex := false
	for {
		switch r.IntN(5) {
		case 0:
			c = Strings(r)
		case 1:
			c = Hash(r)
		case 2:
			c = ZSet(r)
		case 3:
			c = List(r)
		default:
			c = Set(r)
		}
		bylex = slices.ContainsFunc(c.Args, func(a string) bool { return strings.EqualFold(a, "BYLEX") })
		// A lexicographic write over a big set that RENAME or COPY brought under any name
		// walks it in an order of Redis's own (see the lexicographic ranges below), and would
		// leave the two servers with different sets: drawn again.
		name := strings.ToUpper(c.Args[0])
		if name != "ZREMRANGEBYLEX" && !(name == "ZRANGESTORE" && bylex) {
			break
		}
	}
	switch strings.ToUpper(c.Args[0]) {
	case "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "OBJECT":
		c.Skip = true
	case "ZSCAN", "HSCAN", "SSCAN", "ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZLEXCOUNT":
		// RENAME and COPY move a big collection under a small one's name (RENAME {k}5 k3),
		// where the type's generator expects a small one's order: a scan in hash table
		// order, a lexicographic range over a skip list's descent. The events are compared.
		c.Skip = true
	case "ZRANGE", "ZRANGESTORE":
		c.Skip = c.Skip || bylex
	}
	return c
}
