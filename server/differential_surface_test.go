package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/redistest"
)

// genSurface draws the server commands whose replies are deterministic: COMMAND GETKEYS
// and GETKEYSANDFLAGS of the other families' commands, COMMAND LIST filtered by patterns
// and categories both servers answer alike, and their errors.
func genSurface(r *rand.Rand) diffCmd {
	switch r.IntN(10) {
	case 0, 1, 2, 3, 4, 5:
		gens := []func(*rand.Rand) diffCmd{difftest.Strings, difftest.Hash, difftest.ZSet, difftest.List}
		inner := gens[r.IntN(len(gens))](r)
		sub := difftest.Pick(r, "GETKEYSANDFLAGS", "GETKEYS")
		return cmd(append([]string{"COMMAND", sub}, inner.Args...)...)
	case 6:
		return cmd("COMMAND", difftest.Pick(r, "GETKEYSANDFLAGS", "GETKEYS"), difftest.Pick(r, "nosuch", "ping", "echo", "client"), "x")
	case 7:
		return diffCmd{Args: []string{"COMMAND", "LIST", "FILTERBY", "PATTERN",
			difftest.Pick(r, "hget*", "l?en", "z*rangeby*", "*incrby*", "nosuch*", "h*", "config|*", "script|*", "object|*",
				"slowlog|*", "function|*", "CONFIG|GET", "HGET")}, Unordered: true} // patterns whose commands throttled has all of
	case 8:
		return diffCmd{Args: []string{"COMMAND", "LIST", "FILTERBY", difftest.Pick(r, "ACLCAT", "MODULE"),
			difftest.Pick(r, "nosuch", "hash")}, Unordered: true} // the categories whose commands throttled has all of
	}
	return cmd(append([]string{"COMMAND", "LIST"}, strings.Fields(difftest.Pick(r, "FILTERBY", "FILTERBY PATTERN", "FILTERBY NOSUCH x", "x"))...)...)
}

func TestDifferentialSurface(t *testing.T) { runDifferential(t, genSurface) }

// TestDifferentialClientReply sends both servers the same random runs of CLIENT REPLY ON,
// OFF, SKIP and other commands in one pipeline, then turns replies on and ECHOes a mark:
// what comes back up to the mark is the same, byte for byte. (CLIENT REPLY inside MULTI is
// left out: Redis 7.0 can leave such a connection answering nothing at all.)
func TestDifferentialClientReply(t *testing.T) {
	rs := redistest.Start(t)
	for _, sb := range servedBy {
		t.Run(sb.name, func(t *testing.T) {
			ts := startServer(t, func(c *Config) { c.Now = nil }, sb.configure)
			seed := uint64(time.Now().UnixNano())
			r := rand.New(rand.NewPCG(seed, 2))
			for run := range 200 {
				var b []byte
				var history []string
				for range 1 + r.IntN(12) {
					args := difftest.Pick(r, "CLIENT REPLY ON", "CLIENT REPLY OFF", "CLIENT REPLY SKIP", "CLIENT REPLY MAYBE",
						"CLIENT REPLY", "ECHO a", "SET k v", "GET k", "NOSUCH x", "INCR k", "PING")
					history = append(history, args)
					b = appendCommand(b, strings.Fields(args))
				}
				mark := "end" + strconv.Itoa(run)
				b = appendCommand(b, []string{"CLIENT", "REPLY", "ON"})
				b = appendCommand(b, []string{"ECHO", mark})
				what := fmt.Sprintf("seed %d: %s", seed, strings.Join(history, "; "))
				want, got := replyUntil(t, rs.Addr, b, mark, what), replyUntil(t, ts.addr, b, mark, what)
				require.Equal(t, want, got, what)
			}
		})
	}
}

func appendCommand(b []byte, args []string) []byte {
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// replyUntil sends req on a new connection and returns what comes back up to the ECHO of
// mark.
func replyUntil(t *testing.T, addr string, req []byte, mark, what string) string {
	t.Helper()
	d := difftest.Dial(t, addr, 2)
	d.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := d.Write(req)
	require.NoError(t, err)
	var out bytes.Buffer
	end := "$" + strconv.Itoa(len(mark)) + "\r\n" + mark + "\r\n"
	for !strings.HasSuffix(out.String(), end) {
		reply, err := difftest.ReadReply(d.R)
		require.NoError(t, err, "%s\nso far: %q", what, out.String())
		out.WriteString(reply)
	}
	return out.String()
}
