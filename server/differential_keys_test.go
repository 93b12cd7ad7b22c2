package server

import (
	"bufio"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
)

// diffKeyCmd draws SETBIT, GETBIT, BITCOUNT, DUMP and RESTORE on k. A DUMP payload is each
// server's own: its reply is compared by shape, and RESTORE gets only payloads both refuse
// (damaged, short, or a Redis payload's footer with a wrong checksum), with its options and
// its ttl, so that their errors and the order Redis checks them in compare exactly.
// Offsets stay small but for ones both refuse: a bit far out takes 512 MB on both.
func diffKeyCmd(r *rand.Rand, k string) diffCmd {
	switch r.IntN(6) {
	case 0, 1:
		off := strconv.Itoa(r.IntN(40))
		if r.IntN(8) == 0 {
			off = pick(r, "-1", "abc", "", "4294967296", "9223372036854775807", "1.5")
		}
		return cmd("SETBIT", k, off, pick(r, "0", "1", "1", "0", "2", "-1", "01", "x", ""))
	case 2:
		off := strconv.Itoa(r.IntN(60))
		if r.IntN(8) == 0 {
			off = pick(r, "-1", "abc", "4294967296", "4294967295", "9223372036854775807")
		}
		return cmd("GETBIT", k, off)
	case 3:
		c := cmd("BITCOUNT", k)
		switch r.IntN(5) {
		case 0:
			c.args = append(c.args, diffInt(r, -10, 10))
		case 1, 2:
			c.args = append(c.args, diffInt(r, -20, 20), diffInt(r, -20, 20))
		case 3:
			c.args = append(c.args, diffInt(r, -80, 80), diffInt(r, -80, 80), pick(r, "BIT", "bit", "BYTE", "byte", "bits", ""))
		case 4:
			c.args = append(c.args, "0", "-1", "BIT", "x")
		}
		return c
	case 4:
		return diffCmd{args: []string{"DUMP", k}, shape: true}
	}
	c := cmd("RESTORE", k, pick(r, "0", "0", "100000", "-1", "x", ""), pick(r, "", "abc",
		"\x00\x03abc\x0a\x00\x01\x02\x03\x04\x05\x06\x07\x08",  // Redis's form, a wrong CRC
		"\x00\x03abc\x01\x74\x01\x02\x03\x04\x05\x06\x07\x08",  // this server's version, a wrong CRC
		"\x00\x03abc\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00")) // a version past Redis's
	for range r.IntN(3) {
		switch r.IntN(6) {
		case 0:
			c.args = append(c.args, pick(r, "REPLACE", "replace"))
		case 1:
			c.args = append(c.args, pick(r, "ABSTTL", "absttl"))
		case 2:
			c.args = append(c.args, pick(r, "IDLETIME", "idletime"), pick(r, "5", "-1", "x"))
		case 3:
			c.args = append(c.args, "FREQ", pick(r, "5", "255", "256", "-1", "x"))
		case 4:
			c.args = append(c.args, pick(r, "IDLETIME", "FREQ", "bogus"))
		}
	}
	return c
}

// genRandomKey draws over one key only, so that RANDOMKEY's answer is determined: nil on an
// empty keyspace, else that key.
func genRandomKey(r *rand.Rand) diffCmd {
	switch r.IntN(5) {
	case 0:
		return cmd("SET", "k0", diffStrValue(r))
	case 1:
		return cmd("DEL", "k0")
	case 2:
		return cmd("SETBIT", "k0", strconv.Itoa(r.IntN(20)), "1")
	}
	return cmd("RANDOMKEY")
}

func TestDifferentialRandomKey(t *testing.T) { runDifferential(t, genRandomKey) }

// TestDifferentialKeyCommandInfo compares what COMMAND INFO says of the commands this file
// draws: name, arity, flags, key positions and ACL categories.
func TestDifferentialKeyCommandInfo(t *testing.T) {
	rs := redistest.Start(t)
	ts := startServer(t)
	want, got := dialDiff(t, rs.Addr, 2), dialDiff(t, ts.addr, 2)
	for _, name := range []string{"setbit", "getbit", "bitcount", "dump", "restore", "randomkey", "touch", "object|idletime"} {
		c := cmd("COMMAND", "INFO", name)
		w, g := commandInfoHead(want.do(t, c)), commandInfoHead(got.do(t, c))
		require.Equal(t, w, g, name)
	}
}

// commandInfoHead returns the first seven elements of COMMAND INFO's one entry: up to its
// ACL categories (the tips, key specifications and subcommands follow).
func commandInfoHead(reply string) string {
	rd := bufio.NewReader(strings.NewReader(strings.TrimPrefix(reply, "*1\r\n")))
	head, _ := rd.ReadString('\n')
	var b strings.Builder
	b.WriteString(head)
	for range 7 {
		e, err := readReply(rd)
		if err != nil {
			return reply
		}
		b.WriteString(e)
	}
	return b.String()
}
