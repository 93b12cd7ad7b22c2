package algorithms

import (
	"testing"
	"time"
	_ "time/tzdata" // the tests' zones, whatever the host has

	"github.com/stretchr/testify/require"
)

// zone loads an IANA time zone for a test.
func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}

// at is a wall-clock time in loc, in Unix ns; the offset is given, so that
// the tests name each instant without relying on the code under test.
func at(s string) int64 {
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return tm.UnixNano()
}

func TestCalendarBounds(t *testing.T) {
	const h = int64(time.Hour)
	cases := []struct {
		name       string
		cal        Calendar
		zone       string
		t          string
		start, end string
		hours      int64 // end - start, for the reader
	}{
		{"UTC day", Day, "UTC", "2024-02-28T13:00:00Z", "2024-02-28T00:00:00Z", "2024-02-29T00:00:00Z", 24},
		{"leap day exists", Day, "UTC", "2024-02-29T23:59:59.999999999Z", "2024-02-29T00:00:00Z", "2024-03-01T00:00:00Z", 24},
		{"February 2024 has 29 days", Month, "UTC", "2024-02-10T00:00:00Z", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z", 29 * 24},
		{"February 2023 has 28 days", Month, "UTC", "2023-02-28T23:59:59Z", "2023-02-01T00:00:00Z", "2023-03-01T00:00:00Z", 28 * 24},
		{"February 2100 has 28 days (not a leap year)", Month, "UTC", "2100-02-15T00:00:00Z", "2100-02-01T00:00:00Z", "2100-03-01T00:00:00Z", 28 * 24},
		{"February 2000 has 29 days (a leap year)", Month, "UTC", "2000-02-15T00:00:00Z", "2000-02-01T00:00:00Z", "2000-03-01T00:00:00Z", 29 * 24},
		{"March has 31 days", Month, "UTC", "2023-03-31T23:59:59Z", "2023-03-01T00:00:00Z", "2023-04-01T00:00:00Z", 31 * 24},
		{"April has 30 days", Month, "UTC", "2023-04-01T00:00:00Z", "2023-04-01T00:00:00Z", "2023-05-01T00:00:00Z", 30 * 24},
		{"December runs into the next year", Month, "UTC", "2023-12-31T12:00:00Z", "2023-12-01T00:00:00Z", "2024-01-01T00:00:00Z", 31 * 24},
		{"leap year has 366 days", Year, "UTC", "2024-07-01T00:00:00Z", "2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z", 366 * 24},
		{"common year has 365 days", Year, "UTC", "2023-12-31T23:59:59Z", "2023-01-01T00:00:00Z", "2024-01-01T00:00:00Z", 365 * 24},
		{"the epoch's year", Year, "UTC", "1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z", "1971-01-01T00:00:00Z", 365 * 24},
		{"week starts on Monday (from a Sunday)", Week, "UTC", "2024-03-10T23:00:00Z", "2024-03-04T00:00:00Z", "2024-03-11T00:00:00Z", 7 * 24},
		{"week starts on Monday (on it)", Week, "UTC", "2024-03-11T00:00:00Z", "2024-03-11T00:00:00Z", "2024-03-18T00:00:00Z", 7 * 24},
		{"ISO week across the year's end", Week, "UTC", "2025-01-01T08:00:00Z", "2024-12-30T00:00:00Z", "2025-01-06T00:00:00Z", 7 * 24},
		{"the epoch's week began on Monday 1969-12-29", Week, "UTC", "1970-01-01T00:00:00Z", "1969-12-29T00:00:00Z", "1970-01-05T00:00:00Z", 7 * 24},

		// New York: DST from the second Sunday of March at 2:00, to the first Sunday of November at 2:00.
		{"New York: spring forward day has 23 hours", Day, "America/New_York", "2024-03-10T12:00:00-04:00", "2024-03-10T00:00:00-05:00", "2024-03-11T00:00:00-04:00", 23},
		{"New York: fall back day has 25 hours", Day, "America/New_York", "2024-11-03T01:30:00-05:00", "2024-11-03T00:00:00-04:00", "2024-11-04T00:00:00-05:00", 25},
		{"New York: the repeated hour, first time", Day, "America/New_York", "2024-11-03T01:30:00-04:00", "2024-11-03T00:00:00-04:00", "2024-11-04T00:00:00-05:00", 25},
		{"New York: March has 31*24-1 hours", Month, "America/New_York", "2024-03-31T23:00:00-04:00", "2024-03-01T00:00:00-05:00", "2024-04-01T00:00:00-04:00", 31*24 - 1},
		{"New York: the week of the change has 167 hours", Week, "America/New_York", "2024-03-07T09:00:00-05:00", "2024-03-04T00:00:00-05:00", "2024-03-11T00:00:00-04:00", 7*24 - 1},
		{"New York: a local month is not UTC's", Month, "America/New_York", "2024-05-01T02:00:00Z", "2024-04-01T00:00:00-04:00", "2024-05-01T00:00:00-04:00", 30 * 24},
		{"New York: a local year", Year, "America/New_York", "2025-01-01T03:00:00Z", "2024-01-01T00:00:00-05:00", "2025-01-01T00:00:00-05:00", 366 * 24},

		// Berlin: DST from the last Sunday of March at 2:00 to the last Sunday of October at 3:00.
		{"Berlin: 31 March 2024 has 23 hours", Day, "Europe/Berlin", "2024-03-31T03:00:00+02:00", "2024-03-31T00:00:00+01:00", "2024-04-01T00:00:00+02:00", 23},
		{"Berlin: 27 October 2024 has 25 hours", Day, "Europe/Berlin", "2024-10-27T02:30:00+01:00", "2024-10-27T00:00:00+02:00", "2024-10-28T00:00:00+01:00", 25},
		{"Berlin: October has 31*24+1 hours", Month, "Europe/Berlin", "2024-10-01T00:00:00+02:00", "2024-10-01T00:00:00+02:00", "2024-11-01T00:00:00+01:00", 31*24 + 1},
		{"Berlin: the last instant of February in a leap year", Month, "Europe/Berlin", "2024-02-29T23:59:59.999999999+01:00", "2024-02-01T00:00:00+01:00", "2024-03-01T00:00:00+01:00", 29 * 24},
		{"Berlin: midnight of 1 March is March's", Month, "Europe/Berlin", "2024-02-29T23:00:00Z", "2024-03-01T00:00:00+01:00", "2024-04-01T00:00:00+02:00", 31*24 - 1},
		{"Berlin: a year holds both changes", Year, "Europe/Berlin", "2024-06-01T00:00:00+02:00", "2024-01-01T00:00:00+01:00", "2025-01-01T00:00:00+01:00", 366 * 24},

		// Lord Howe Island: +10:30, and +11 in summer (from the first Sunday of October at 2:00 to the first Sunday of April at 2:00): a 30-minute change.
		{"Lord Howe: spring forward day has 23.5 hours", Day, "Australia/Lord_Howe", "2024-10-06T12:00:00+11:00", "2024-10-06T00:00:00+10:30", "2024-10-07T00:00:00+11:00", 0},
		{"Lord Howe: fall back day has 24.5 hours", Day, "Australia/Lord_Howe", "2024-04-07T01:45:00+10:30", "2024-04-07T00:00:00+11:00", "2024-04-08T00:00:00+10:30", 0},
		{"Lord Howe: October has 31*24-0.5 hours", Month, "Australia/Lord_Howe", "2024-10-31T23:59:00+11:00", "2024-10-01T00:00:00+10:30", "2024-11-01T00:00:00+11:00", 0},

		// Zones whose change skips midnight: the day begins at the jump.
		{"Havana: 10 March 2024 starts at 01:00", Day, "America/Havana", "2024-03-10T01:00:00-04:00", "2024-03-10T01:00:00-04:00", "2024-03-11T00:00:00-04:00", 23},
		{"Havana: 9 March 2024 ends at the jump", Day, "America/Havana", "2024-03-09T23:59:59-05:00", "2024-03-09T00:00:00-05:00", "2024-03-10T01:00:00-04:00", 24},
		{"Havana: the week of the jump", Week, "America/Havana", "2024-03-10T12:00:00-04:00", "2024-03-04T00:00:00-05:00", "2024-03-11T00:00:00-04:00", 7*24 - 1},
		{"Havana: 3 November 2024 has 25 hours (midnight twice)", Day, "America/Havana", "2024-11-03T00:30:00-05:00", "2024-11-03T00:00:00-04:00", "2024-11-04T00:00:00-05:00", 25},
		{"Santiago: 8 September 2024 starts at 01:00", Day, "America/Santiago", "2024-09-08T12:00:00Z", "2024-09-08T01:00:00-03:00", "2024-09-09T00:00:00-03:00", 23},
		{"Santiago: a month that starts with the jump", Month, "America/Santiago", "2024-09-30T00:00:00-03:00", "2024-09-01T00:00:00-04:00", "2024-10-01T00:00:00-03:00", 30*24 - 1},
		{"Beirut: 31 March 2024 starts at 01:00", Day, "Asia/Beirut", "2024-03-31T10:00:00+03:00", "2024-03-31T01:00:00+03:00", "2024-04-01T00:00:00+03:00", 23},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc := zone(t, c.zone)
			start, end := c.cal.Bounds(at(c.t), loc)
			require.Equal(t, time.Unix(0, at(c.start)).UTC(), time.Unix(0, start).UTC(), "start")
			require.Equal(t, time.Unix(0, at(c.end)).UTC(), time.Unix(0, end).UTC(), "end")
			if c.hours != 0 {
				require.Equal(t, c.hours*h, end-start)
			}
		})
	}
}

// calendarZones are the zones whose periods TestCalendarTiles and the fuzz
// tests walk: UTC, the common DST rules, a half-hour DST, zones whose change
// skips or repeats midnight, a whole day skipped (Samoa, 30 December 2011),
// and offsets of :45 and -9:30.
var calendarZones = []string{"UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/Havana",
	"America/Santiago", "Asia/Beirut", "America/Sao_Paulo", "Pacific/Apia", "Asia/Kathmandu", "Pacific/Marquesas",
	"Pacific/Chatham", "Africa/Cairo", "Asia/Tehran"}

// checkBounds checks the rules every period keeps at t: it holds t, starts
// on its first day's first instant in loc, and the periods tile (the one
// that holds start is the same, the one that holds end starts there).
func checkBounds(t *testing.T, c Calendar, at int64, loc *time.Location) {
	t.Helper()
	start, end := c.Bounds(at, loc)
	if loc == nil {
		loc = time.UTC // for the messages and the checks' local dates
	}
	if start > at || at >= end {
		t.Fatalf("%v %s at %v: [%v, %v) does not hold it", c, loc, time.Unix(0, at).In(loc), time.Unix(0, start).In(loc), time.Unix(0, end).In(loc))
	}
	if s, e := c.Bounds(start, loc); s != start || e != end {
		t.Fatalf("%v %s: the period of its start %v is another: [%v, %v)", c, loc, time.Unix(0, start).In(loc), time.Unix(0, s).In(loc), time.Unix(0, e).In(loc))
	}
	if s, _ := c.Bounds(end, loc); s != end {
		t.Fatalf("%v %s: the period after [%v, %v) starts at %v", c, loc, time.Unix(0, start).In(loc), time.Unix(0, end).In(loc), time.Unix(0, s).In(loc))
	}
	if start > 0 {
		// The instant before the start is on another local day (the period's first day starts there).
		before, first := time.Unix(0, start-1).In(loc), time.Unix(0, start).In(loc)
		if before.YearDay() == first.YearDay() && before.Year() == first.Year() {
			t.Fatalf("%v %s: the period starts at %v, inside a day", c, loc, first)
		}
		switch {
		case c == Week && first.Weekday() != time.Monday:
			t.Fatalf("%s: a week starts on %v", loc, first)
		case c == Month && first.Day() != 1:
			t.Fatalf("%s: a month starts on %v", loc, first)
		case c == Year && first.YearDay() != 1:
			t.Fatalf("%s: a year starts on %v", loc, first)
		}
	}
}

// TestCalendarTiles walks each zone's days hour by hour (and at each hour's
// last ns) through a year of changes, and its periods one by one through
// two, checking every period it meets.
func TestCalendarTiles(t *testing.T) {
	const h = int64(time.Hour)
	for _, name := range calendarZones {
		t.Run(name, func(t *testing.T) {
			loc := zone(t, name)
			from := at("2011-01-01T00:00:00Z") // Samoa skips 30 December 2011
			if name == "America/Sao_Paulo" || name == "Asia/Tehran" {
				from = at("2017-01-01T00:00:00Z") // while they still had DST
			}
			for ts := from; ts < from+366*24*h; ts += h {
				checkBounds(t, Day, ts, loc)
				checkBounds(t, Day, ts-1, loc)
			}
			for _, c := range []Calendar{Week, Month, Year} {
				for ts := from; ts < from+2*366*24*h; {
					_, end := c.Bounds(ts, loc)
					checkBounds(t, c, ts, loc)
					checkBounds(t, c, ts+(end-ts)/2, loc)
					checkBounds(t, c, end-1, loc)
					ts = end
				}
			}
		})
	}
}

func TestCalendarBoundsEdges(t *testing.T) {
	for _, c := range []Calendar{Day, Week, Month, Year} {
		for _, ts := range []int64{0, 1, MaxTime - 1} {
			for _, loc := range []*time.Location{nil, zone(t, "Pacific/Kiritimati"), zone(t, "Etc/GMT+12")} {
				start, end := c.Bounds(ts, loc)
				require.True(t, start <= ts && ts < end, "%v at %d in %v: [%d, %d)", c, ts, loc, start, end)
			}
		}
	}
	require.Equal(t, []string{"", "1d", "1w", "1mo", "1y"}, []string{Fixed.String(), Day.String(), Week.String(), Month.String(), Year.String()})
}

func TestCalendarBoundsAllocatesNothing(t *testing.T) {
	loc := zone(t, "Europe/Berlin")
	ts := at("2024-10-27T02:30:00+01:00")
	allocs := testing.AllocsPerRun(100, func() {
		for _, c := range []Calendar{Day, Week, Month, Year} {
			c.Bounds(ts, loc)
		}
	})
	require.Equal(t, 0.0, allocs)
}

// TestCalendarWindow drives WINDOW 3 1mo in Berlin across the end of a
// leap February and the change to summer time: the count starts again at
// the real boundary, and reset_after counts to it.
func TestCalendarWindow(t *testing.T) {
	const h = int64(time.Hour)
	p := FixedWindow{Limit: 3, Calendar: Month, Loc: zone(t, "Europe/Berlin")}
	march := at("2024-03-01T00:00:00+01:00")
	april := at("2024-04-01T00:00:00+02:00") // 31 days less the hour that 31 March skips
	steps := []struct {
		name string
		at   int64
		cost int64
		want [6]int64
	}{
		{"2 on the last day of February", march - 2*h, 2, [6]int64{0, 3, 1, -1, 2 * h, 0}},
		{"1 in February's last ns", march - 1, 1, [6]int64{0, 3, 0, -1, 1, 0}},
		{"full until March", march - 1, 1, [6]int64{1, 3, 0, 1, 1, 0}},
		{"March: the count starts again", march, 3, [6]int64{0, 3, 0, -1, april - march, 0}},
		{"denied until April, an hour short of 31 days", march + 24*h, 1, [6]int64{1, 3, 0, april - march - 24*h, april - march - 24*h, 0}},
		{"the day of the change: 23 hours before April", at("2024-03-31T00:00:00+01:00"), 1, [6]int64{1, 3, 0, 23 * h, 23 * h, 0}},
		{"April", april, 1, [6]int64{0, 3, 2, -1, 30 * 24 * h, 0}},
	}
	var k key
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			require.Equal(t, s.want, reply(k.take(t, p, s.at, s.cost)))
		})
	}
	require.Equal(t, at("2024-05-01T00:00:00+02:00"), k.st.Expire, "the key expires when its month ends")
}

// TestCalendarWindowParameters: a key moves between fixed and calendar
// windows, and between zones, without a refill: the count stays where the
// last admission lies in the window that holds now.
func TestCalendarWindowParameters(t *testing.T) {
	const h = int64(time.Hour)
	ny, berlin := zone(t, "America/New_York"), zone(t, "Europe/Berlin")
	now := at("2024-06-15T12:00:00Z")
	cases := []struct {
		name string
		p    FixedWindow
		want [6]int64
	}{
		{"same month", FixedWindow{Limit: 10, Calendar: Month, Loc: berlin}, [6]int64{0, 10, 4, -1, at("2024-07-01T00:00:00+02:00") - now, 0}},
		{"a week that holds the admission", FixedWindow{Limit: 10, Calendar: Week, Loc: ny}, [6]int64{0, 10, 4, -1, at("2024-06-17T00:00:00-04:00") - now, 0}},
		{"a day that does not: counted afresh", FixedWindow{Limit: 10, Calendar: Day, Loc: ny}, [6]int64{0, 10, 10, -1, 0, 0}},
		{"a fixed hour that does not", FixedWindow{Limit: 10, Window: h}, [6]int64{0, 10, 10, -1, 0, 0}},
		{"a fixed 30 days", FixedWindow{Limit: 10, Window: 30 * 24 * h}, [6]int64{0, 10, 4, -1, 30*24*h - (now % (30 * 24 * h)), 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var k key
			k.take(t, FixedWindow{Limit: 10, Calendar: Month, Loc: berlin}, at("2024-06-14T09:00:00+02:00"), 6)
			require.Equal(t, c.want, reply(k.take(t, c.p, now, 0)))
		})
	}
}

func TestCalendarWindowValidate(t *testing.T) {
	require.NoError(t, FixedWindow{Limit: 1, Calendar: Year}.Validate(), "a calendar window reads no Window")
	requireErr(t, ErrCalendar, FixedWindow{Limit: 1, Calendar: Year + 1}.Validate())
	requireErr(t, ErrLimit, FixedWindow{Limit: 0, Calendar: Month}.Validate())
	requireErr(t, ErrWindow, FixedWindow{Limit: 1}.Validate())
}

func TestCalendarWindowRefund(t *testing.T) {
	p := FixedWindow{Limit: 5, Calendar: Month, Loc: zone(t, "America/New_York")}
	may := at("2024-05-01T00:00:00-04:00")
	var k key
	k.take(t, p, may-int64(time.Hour), 4)
	d, next, store, got, err := p.Refund(may-1, k.st, true, 3, nil)
	require.NoError(t, err)
	require.True(t, store)
	require.Equal(t, int64(3), got)
	require.Equal(t, [6]int64{0, 5, 4, -1, 1, 0}, reply(d))
	require.Equal(t, may, next.Expire)
	// In May, April's units are past giving back.
	_, _, store, got, err = p.Refund(may, k.st, true, 3, nil)
	require.NoError(t, err)
	require.False(t, store)
	require.Zero(t, got)
}
