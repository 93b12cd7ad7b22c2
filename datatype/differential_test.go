package datatype_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

// throttled starts the server a differential test compares with Redis: on the real clock,
// as Redis is.
func throttled(t *testing.T) string {
	return testserver.Start(t, func(c *server.Config) { c.Now = nil }).Addr
}

func TestDifferentialStrings(t *testing.T) { difftest.Run(t, difftest.Strings, throttled) }

// TestDifferentialBitfieldUnshares: a BITFIELD write op makes a short string raw, as Redis
// unshares it, even when it changes nothing (an overflow with FAIL, the same bits).
func TestDifferentialBitfieldUnshares(t *testing.T) {
	redis, ours := difftest.Dial(t, testserver.Redis(t).Addr, 2), difftest.Dial(t, throttled(t), 2)
	var cmds []difftest.Cmd
	for i, op := range [][]string{{"OVERFLOW", "FAIL", "INCRBY", "u3", "2", "-12"}, {"SET", "u8", "0", "97"}, {"GET", "u8", "0"}} {
		k := "k" + string(rune('0'+i))
		cmds = append(cmds, difftest.Cmd{Args: []string{"SET", k, "abc"}}, difftest.Cmd{Args: []string{"OBJECT", "ENCODING", k}},
			difftest.Cmd{Args: append([]string{"BITFIELD", k}, op...)}, difftest.Cmd{Args: []string{"OBJECT", "ENCODING", k}})
	}
	require.Equal(t, redis.Pipeline(t, cmds), ours.Pipeline(t, cmds))
}
