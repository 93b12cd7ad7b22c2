package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSlowlogAndMonitorRedact(t *testing.T) {
	ts := startServer(t)
	mon := ts.raw(t)
	mon.send(t, "MONITOR\r\n")
	require.Equal(t, "+OK", mon.line(t))
	rdb := ts.client(t, 2)
	do(t, rdb, "CONFIG", "SET", "slowlog-log-slower-than", 0)
	doErr(t, rdb, "AUTH", "nosuchuser", "secret")
	var line string
	for !strings.Contains(line, `"AUTH"`) {
		line = mon.line(t)
	}
	require.True(t, strings.HasSuffix(line, `"AUTH" "(redacted)" "(redacted)"`), line)
	entries := do(t, rdb, "SLOWLOG", "GET", 2).([]any)
	require.Equal(t, []any{"AUTH", "(redacted)", "(redacted)"}, entries[0].([]any)[3])
}
