package algorithms

import "time"

// Calendar is a period of the civil calendar in a time zone, which a
// FixedWindow may count in instead of a fixed number of ns: quotas as they
// are billed ("10000 a month" meaning the calendar month). Its periods are
// not all of one length: February is shorter than March, a leap year has
// 366 days, and where a time zone changes to or from daylight saving time
// a day has 23 or 25 hours (23.5 or 24.5 on Lord Howe Island), and so the
// week, the month and the year that hold it.
//
// A period starts at the first instant of its first day in the zone: local
// midnight, or, where a change of offset skips midnight (America/Havana,
// America/Santiago), the instant the day begins after the jump. Weeks start
// on Monday, as ISO 8601's. Periods tile time: each one ends where the next
// starts, so every instant is in exactly one.
type Calendar uint8

const (
	// Fixed is no calendar: windows of FixedWindow.Window ns aligned to the epoch.
	Fixed Calendar = iota
	// Day is the calendar day.
	Day
	// Week is the ISO week, Monday to Sunday.
	Week
	// Month is the calendar month.
	Month
	// Year is the calendar year.
	Year
)

// String is the period as WINDOW writes it: 1d, 1w, 1mo, 1y; "" for Fixed.
func (c Calendar) String() string {
	switch c {
	case Day:
		return "1d"
	case Week:
		return "1w"
	case Month:
		return "1mo"
	case Year:
		return "1y"
	}
	return ""
}

// Nominal is the period's length in ns as a fixed-length unit counts it,
// envoyproxy/ratelimit's and Envoy's headers': a day 24 hours, a week 7
// days, a month 30 days, a year 365 days. It is a hint for headers that
// want a number (RateLimit-Policy's w), never the period's real length.
func (c Calendar) Nominal() int64 {
	const day = 86400 * 1_000_000_000
	switch c {
	case Day:
		return day
	case Week:
		return 7 * day
	case Month:
		return 30 * day
	case Year:
		return 365 * day
	}
	return 0
}

// Bounds returns the start and the end (Unix ns) of the period of c that
// holds t (Unix ns, in [0, MaxTime)) in loc (nil: UTC): start <= t < end.
// It allocates nothing. c must not be Fixed.
func (c Calendar) Bounds(t int64, loc *time.Location) (start, end int64) {
	if loc == nil {
		loc = time.UTC
	}
	lt := time.Unix(0, t).In(loc)
	y, m, d := lt.Date()
	switch c {
	case Week:
		d -= (int(lt.Weekday()) + 6) % 7 // back to Monday
	case Month:
		d = 1
	case Year:
		m, d = time.January, 1
	}
	start, end = c.first(y, m, d, 0, loc), c.first(y, m, d, 1, loc)
	// The zone's offset may move midnight across t (a change at midnight that
	// Go's time.Date resolves to the other side); the periods still tile, so
	// the one that holds t is a neighbour.
	switch {
	case t < start:
		start, end = c.first(y, m, d, -1, loc), start
	case t >= end:
		start, end = end, c.first(y, m, d, 2, loc)
	}
	return start, end
}

// first is the start (Unix ns) of the period n periods after the one that
// starts on the local date y-m-d.
func (c Calendar) first(y int, m time.Month, d, n int, loc *time.Location) int64 {
	switch c {
	case Day:
		d += n
	case Week:
		d += 7 * n
	case Month:
		m += time.Month(n)
	case Year:
		y += n
	}
	return dayStart(y, m, d, loc)
}

// dayStart is the first instant (Unix ns) of the local date y-m-d in loc
// (normalized as time.Date does: March 0 is the last of February). Where
// the zone skips midnight, time.Date answers either the jump itself (the
// day's first instant) or an instant of the evening before it: the day then
// starts where that evening's zone period ends.
func dayStart(y int, m time.Month, d int, loc *time.Location) int64 {
	s := time.Date(y, m, d, 0, 0, 0, 0, loc)
	if s.Hour() >= 12 { // the evening before a jump over midnight
		if _, jump := s.ZoneBounds(); !jump.IsZero() {
			s = jump
		}
	}
	return s.UnixNano()
}
