package ratelimit_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the tests' zones, whatever the host has

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

// setClock moves the test server's clock to the instant s (RFC 3339, with its offset).
func setClock(t *testing.T, ts *testserver.Server, s string) {
	t.Helper()
	to, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	ts.Clock.Advance(to.Sub(ts.Clock.Now()))
}

const hourMs = int64(3600 * 1000)

// TestCalendarWindows drives WINDOW with calendar periods through the edges of the
// calendar with the server's clock: reset_after (and the key's PTTL) counts to the real
// boundary, and the count starts again there.
func TestCalendarWindows(t *testing.T) {
	type step struct {
		at   string // the clock, RFC 3339
		args []any  // after WINDOW
		want []any  // the decision
		pttl int64  // the key's PTTL afterwards; 0: not checked
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"a leap February's end in Berlin", []step{
			{"2024-02-29T22:00:00+01:00", []any{"bill", 3, "1mo", "TZ", "Europe/Berlin", "COST", 2}, ints(0, 3, 1, -1, 2*hourMs), 2 * hourMs},
			{"2024-02-29T23:59:59+01:00", []any{"bill", 3, "1mo", "TZ", "Europe/Berlin", "COST", 2}, ints(1, 3, 1, 1000, 1000), 1000},
			// March has 31 days less the hour its last Sunday skips: 743 hours.
			{"2024-03-01T00:00:00+01:00", []any{"bill", 3, "1mo", "TZ", "Europe/Berlin", "COST", 2}, ints(0, 3, 1, -1, 743*hourMs), 743 * hourMs},
		}},
		{"UTC by default: February 2023 has 28 days", []step{
			{"2023-02-01T00:00:00Z", []any{"feb", 10, "1mo"}, ints(0, 10, 9, -1, 28*24*hourMs), 28 * 24 * hourMs},
			{"2023-03-01T00:00:00Z", []any{"feb", 10, "1mo"}, ints(0, 10, 9, -1, 31*24*hourMs), 31 * 24 * hourMs},
		}},
		{"an ISO week in New York, Monday to Monday across spring forward", []step{
			// Friday noon: 12 hours of Friday, 24 of Saturday, 23 of Sunday.
			{"2024-03-08T12:00:00-05:00", []any{"wk", 5, "1w", "TZ", "America/New_York"}, ints(0, 5, 4, -1, 59*hourMs), 59 * hourMs},
			{"2024-03-11T00:00:00-04:00", []any{"wk", 5, "1w", "TZ", "America/New_York"}, ints(0, 5, 4, -1, 7*24*hourMs), 7 * 24 * hourMs},
		}},
		{"a 25-hour day in New York", []step{
			{"2024-11-03T00:00:00-04:00", []any{"day", 5, "1d", "TZ", "America/New_York", "COST", 5}, ints(0, 5, 0, -1, 25*hourMs), 25 * hourMs},
			{"2024-11-03T23:30:00-05:00", []any{"day", 5, "1d", "TZ", "America/New_York"}, ints(1, 5, 0, hourMs/2, hourMs/2), hourMs / 2},
		}},
		{"Lord Howe's 23.5-hour day", []step{
			{"2024-10-06T00:00:00+10:30", []any{"lh", 5, "1d", "TZ", "Australia/Lord_Howe"}, ints(0, 5, 4, -1, 47*hourMs/2), 47 * hourMs / 2},
		}},
		{"a year, and 1y in Tokyo", []step{
			{"2024-12-31T23:00:00Z", []any{"yr", 5, "1y"}, ints(0, 5, 4, -1, hourMs), hourMs},
			{"2024-12-31T23:00:00Z", []any{"yr:tokyo", 5, "1y", "TZ", "Asia/Tokyo"}, ints(0, 5, 4, -1, 365*24*hourMs-8*hourMs), 0},
		}},
		{"1d without TZ is the fixed UTC day", []step{
			{"2024-03-10T12:00:00-04:00", []any{"utcday", 5, "1d"}, ints(0, 5, 4, -1, 8*hourMs), 8 * hourMs},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := testserver.Start(t)
			rdb := ts.Client(t, 2)
			for _, s := range c.steps {
				setClock(t, ts, s.at)
				require.Equal(t, s.want, do(t, rdb, append([]any{"WINDOW"}, s.args...)...), "at %s", s.at)
				if s.pttl != 0 {
					require.Equal(t, s.pttl, do(t, rdb, "PTTL", s.args[0]), "at %s", s.at)
				}
			}
			require.Equal(t, "fixedwindow", do(t, rdb, "TYPE", c.steps[0].args[0]))
		})
	}
}

func TestCalendarWindowErrors(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	do(t, rdb, "POLICY.SET", "p", "WINDOW", 10, "1mo")
	cases := []struct {
		args []any
		want string
	}{
		{[]any{"WINDOW", "k", 10, "1mo", "TZ", "Mars/Olympus_Mons"}, "ERR unknown time zone 'Mars/Olympus_Mons' for TZ: an IANA name such as Europe/Berlin, America/New_York or UTC"},
		{[]any{"WINDOW", "k", 10, "1mo", "TZ", "../../etc/passwd"}, "ERR TZ '../../etc/passwd' is not a time zone: an IANA name such as Europe/Berlin, America/New_York or UTC"},
		{[]any{"WINDOW", "k", 10, "1mo", "TZ", "Local"}, "ERR TZ 'Local' is not a time zone: an IANA name such as Europe/Berlin, America/New_York or UTC"},
		{[]any{"WINDOW", "k", 10, "1mo", "TZ", "Europe//Berlin"}, "ERR TZ 'Europe//Berlin' is not a time zone: an IANA name such as Europe/Berlin, America/New_York or UTC"},
		{[]any{"WINDOW", "k", 10, "1mo", "TZ", ""}, "ERR TZ '' is not a time zone: an IANA name such as Europe/Berlin, America/New_York or UTC"},
		{[]any{"WINDOW", "k", 10, "1mo", "TZ"}, "ERR TZ needs a time zone's name, such as Europe/Berlin"},
		{[]any{"WINDOW", "k", 10, "1mo", "TZ", "UTC", "tz", "UTC"}, "ERR TZ given twice"},
		{[]any{"WINDOW", "k", 10, "1m", "TZ", "UTC"}, "ERR TZ needs a calendar window: 1d, 1w, 1mo or 1y, got '1m'"},
		{[]any{"WINDOW", "k", 10, "86400", "TZ", "UTC"}, "ERR TZ needs a calendar window: 1d, 1w, 1mo or 1y, got '86400'"},
		{[]any{"WINDOW", "k", 10, "2mo"}, "ERR invalid window '2mo': a calendar window is one period: 1d, 1w, 1mo or 1y (with TZ name for a zone's)"},
		{[]any{"WINDOW", "k", 10, "1.5w", "TZ", "UTC"}, "ERR invalid window '1.5w': a calendar window is one period: 1d, 1w, 1mo or 1y (with TZ name for a zone's)"},
		{[]any{"WINDOW", "k", 0, "1mo"}, "ERR limit must be at least 1, got 0"},
		{[]any{"SLIDE", "k", 10, "1mo"}, "ERR SLIDE's window is a duration (ms, s, m, h, d), got '1mo': calendar periods (1w, 1mo, 1y) are WINDOW's"},
		{[]any{"THROTTLE", "k", 1, 1, "1s", "TZ", "UTC"}, "ERR TZ is WINDOW's option: the time zone of a calendar window (1d, 1w, 1mo or 1y)"},
		{[]any{"SLIDE", "k", 1, "1s", "TZ", "UTC"}, "ERR TZ is WINDOW's option: the time zone of a calendar window (1d, 1w, 1mo or 1y)"},
		{[]any{"CHECK", "p", "s", "TZ", "UTC"}, "ERR TZ is WINDOW's option: the time zone of a calendar window (1d, 1w, 1mo or 1y)"},
		{[]any{"POLICY.SET", "q", "WINDOW", 10, "1mo", "TZ", "Nowhere"}, "ERR unknown time zone 'Nowhere' for TZ: an IANA name such as Europe/Berlin, America/New_York or UTC"},
		{[]any{"ALLOF", "WINDOW", "a", 10, "1w", "TZ", "UTC", "TZ", "UTC"}, "ERR TZ given twice"},
	}
	for _, c := range cases {
		got := doErr(t, rdb, c.args...)
		if !strings.HasPrefix(c.want, "ERR unknown time zone 'Nowhere'") {
			require.Equal(t, c.want, got, "%v", c.args)
			continue
		}
		require.Contains(t, got, strings.TrimPrefix(c.want, "ERR "), "%v", c.args)
	}
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "k"), "no error creates the key")
}

func TestCalendarWindowInAllOfAndPeek(t *testing.T) {
	ts := testserver.Start(t)
	rdb := ts.Client(t, 2)
	setClock(t, ts, "2024-06-30T23:00:00+02:00")
	// The value after TZ may be anything, even a verb's name: ALLOF does not split there.
	got := do(t, rdb, "ALLOF", "WINDOW", "m", 10, "1mo", "TZ", "Europe/Berlin", "COST", 3, "THROTTLE", "t", 9, 10, "1s").([]any)
	require.Equal(t, ints(0, 10, 7, -1, hourMs), got[1])
	require.Equal(t, ints(0, 10, 4, -1, hourMs), do(t, rdb, "WINDOW", "m", 10, "1mo", "TZ", "Europe/Berlin", "PEEK", "COST", 3))
	require.Equal(t, ints(0, 10, 7, -1, hourMs), do(t, rdb, "WINDOW", "m", 10, "1mo", "TZ", "Europe/Berlin", "COST", 0))
	// The same key in UTC's month: its admission (21:00 UTC on 30 June) counts there too.
	require.Equal(t, ints(0, 10, 7, -1, 3*hourMs), do(t, rdb, "WINDOW", "m", 10, "1mo", "COST", 0))
	require.Equal(t, ints(0, 10, 8, -1, hourMs), do(t, rdb, "WINDOW", "m", 10, "1mo", "TZ", "Europe/Berlin", "REFUND", 1))
}

func TestCalendarPolicies(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	writeFile(t, conf, "port 0\npolicy monthly WINDOW 100 1mo TZ America/New_York SOFT 0.5\n")
	ts := testserver.Start(t, func(c *server.Config) { c.ConfigFile = conf })
	rdb := ts.Client(t, 2)
	setClock(t, ts, "2024-03-31T23:00:00-04:00")
	require.Equal(t, []any{int64(0), int64(100), int64(99), int64(-1), hourMs, "ok"}, check(t, rdb, "monthly", "alice"))

	do(t, rdb, "POLICY.SET", "yearly", "WINDOW", 1000, "1y", "TZ", "Asia/Tokyo")
	require.Equal(t, "WINDOW 1000 1y TZ Asia/Tokyo", do(t, rdb, "POLICY.GET", "yearly").([]any)[3])
	// 2024-04-01T03:00Z: Tokyo's 2025 begins at 2024-12-31T15:00Z.
	require.Equal(t, []any{int64(0), int64(1000), int64(999), int64(-1), (274*24 + 12) * hourMs, "ok"}, check(t, rdb, "yearly", "bob"))
	do(t, rdb, "POLICY.OVERRIDE", "yearly", "carol", "WINDOW", 5, "1w", "TZ", "Europe/Berlin")
	// Monday 2024-04-01 05:00 in Berlin: the week ends on Monday the 8th.
	require.Equal(t, []any{int64(0), int64(5), int64(4), int64(-1), (7*24 - 5) * hourMs, "ok"}, check(t, rdb, "yearly", "carol"))

	writeFile(t, conf, "port 0\npolicy monthly WINDOW 100 1mo TZ America/Nowhere\n")
	err := rdb.Do(context.Background(), "POLICY.RELOAD").Err()
	require.ErrorContains(t, err, "unknown time zone 'America/Nowhere'")
	require.Equal(t, int64(98), check(t, rdb, "monthly", "alice")[2], "a bad zone keeps the old policies")
}
