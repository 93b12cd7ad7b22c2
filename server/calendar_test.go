package server

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the tests' zones, whatever the host has

	"github.com/stretchr/testify/require"
)

// TestCalendarWindowSurvivesRestart: a calendar window's count and expiry are the key's
// state as any window's, so a restart keeps them (no fresh quota), and the key expires at
// its month's end in its zone, not 30 days on.
func TestCalendarWindowSurvivesRestart(t *testing.T) {
	r := newRestartable(t)
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	// 2024-03-30 12:00 in Berlin; March ends 35 hours later (its last Sunday has 23).
	r.clock.Advance(time.Date(2024, 3, 30, 12, 0, 0, 0, berlin).Sub(r.clock.Now()))
	ts, rdb := r.start(t)
	call := []any{"WINDOW", "quota", 3, "1mo", "TZ", "Europe/Berlin"}
	require.Equal(t, []any{int64(0), int64(3), int64(0), int64(-1), int64(35 * 3600 * 1000)}, do(t, rdb, append(call, "COST", 3)...))
	require.NoError(t, ts.Close())

	r.clock.Advance(10 * time.Hour)
	ts, rdb = r.start(t)
	require.Equal(t, []any{int64(1), int64(3), int64(0), int64(25 * 3600 * 1000), int64(25 * 3600 * 1000)}, do(t, rdb, call...),
		"no fresh quota after a restart")
	require.Equal(t, int64(25*3600*1000), do(t, rdb, "PTTL", "quota"))
	require.NoError(t, ts.Close())

	r.clock.Advance(25 * time.Hour) // April in Berlin, while the server was down
	_, rdb = r.start(t)
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "quota"), "expired with its month")
	require.Equal(t, []any{int64(0), int64(3), int64(2), int64(-1), int64(30 * 24 * 3600 * 1000)}, do(t, rdb, call...))
}

// TestCalendarWindowUpstream: in upstream mode a calendar window's state lives in the
// upstream Redis and answers as the local one does, through a week's and a month's end in
// Berlin: the same maths on the same state.
func TestCalendarWindowUpstream(t *testing.T) {
	local, remote, clk, _ := upstreamPair(t)
	l, r := dialReplies(t, local.addr), dialReplies(t, remote.addr)
	denied := 0
	for step := 0; step < 40; step++ {
		reqs := [][]string{
			{"WINDOW", "week", "5", "1w", "TZ", "Europe/Berlin"},
			{"WINDOW", "month", "12", "1mo", "TZ", "Europe/Berlin", "COST", "2"},
			{"WINDOW", "month", "12", "1mo", "TZ", "Europe/Berlin", "PEEK"},
			{"ALLOF", "WINDOW", "{u}a", "3", "1y", "TZ", "America/New_York", "WINDOW", "{u}b", "9", "1d", "TZ", "Australia/Lord_Howe"},
		}
		if step%7 == 3 {
			reqs = append(reqs, []string{"WINDOW", "week", "5", "1w", "TZ", "Europe/Berlin", "REFUND", "2"})
		}
		want, got := l.do(t, reqs...), r.do(t, reqs...)
		require.Equal(t, want, got, "step %d at %v", step, clk.Now())
		for _, w := range want {
			if strings.HasPrefix(w, "*5\r\n:1\r\n") {
				denied++
			}
		}
		clk.Advance(19 * time.Hour)
	}
	require.Greater(t, denied, 10, "the windows fill and reset")
	info := dialReplies(t, remote.addr).do(t, []string{"INFO", "upstream"})[0]
	require.Contains(t, info, "upstream_breaker:closed")
	require.Contains(t, info, "upstream_degraded_decisions:0")
}
