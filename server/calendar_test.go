package server

import (
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
