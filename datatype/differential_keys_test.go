package datatype_test

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/testserver"
)

func TestDifferentialRandomKey(t *testing.T) { difftest.Run(t, difftest.RandomKey, throttled) }

// TestDifferentialKeyCommandInfo compares what COMMAND INFO says of the commands
// difftest's keys.go draws: name, arity, flags, key positions and ACL categories.
func TestDifferentialKeyCommandInfo(t *testing.T) {
	rs := testserver.Redis(t)
	ts := testserver.Start(t)
	want, got := difftest.Dial(t, rs.Addr, 2), difftest.Dial(t, ts.Addr, 2)
	for _, name := range []string{"setbit", "getbit", "bitcount", "dump", "restore", "randomkey", "touch", "object|idletime"} {
		c := difftest.Cmd{Args: []string{"COMMAND", "INFO", name}}
		w, g := commandInfoHead(want.Do(t, c)), commandInfoHead(got.Do(t, c))
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
		e, err := difftest.ReadReply(rd)
		if err != nil {
			return reply
		}
		b.WriteString(e)
	}
	return b.String()
}
