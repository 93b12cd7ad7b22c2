package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// streamCommands are Redis 7.0's stream commands, which throttled does not have (streams are
// out of scope: docs/commands.md).
var streamCommands = [][]string{
	{"XADD", "s", "*", "f", "v"}, {"XRANGE", "s", "-", "+"}, {"XREVRANGE", "s", "+", "-"},
	{"XREAD", "STREAMS", "s", "0"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"},
	{"XLEN", "s"}, {"XDEL", "s", "0-1"}, {"XTRIM", "s", "MAXLEN", "0"}, {"XGROUP", "CREATE", "s", "g", "$"},
	{"XACK", "s", "g", "0-1"}, {"XPENDING", "s", "g"}, {"XCLAIM", "s", "g", "c", "0", "0-1"},
	{"XAUTOCLAIM", "s", "g", "c", "0", "0"}, {"XINFO", "STREAM", "s"}, {"XSETID", "s", "0-1"},
}

// TestStreamsAreUnknown: every stream command gets Redis's unknown-command error, from a
// client and from a script, and COMMAND knows none of them.
func TestStreamsAreUnknown(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	for _, args := range streamCommands {
		var quoted []string
		for _, a := range args[1:] {
			quoted = append(quoted, "'"+a+"'")
		}
		want := "ERR unknown command '" + args[0] + "', with args beginning with: " + strings.Join(quoted, " ") + " "
		require.Equal(t, want, doErr(t, rdb, anyArgs(args)...))
		require.Equal(t, []any{nil}, do(t, rdb, "COMMAND", "INFO", args[0]))
	}
	require.NotContains(t, do(t, rdb, "COMMAND", "LIST"), "xadd")
	require.Contains(t, doErr(t, rdb, "EVAL", "return redis.call('XADD', 's', '*', 'f', 'v')", "0"), "Unknown Redis command called from script")
	require.Equal(t, "none", do(t, rdb, "TYPE", "s"))
}

func anyArgs(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}
