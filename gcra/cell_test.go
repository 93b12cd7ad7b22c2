package gcra

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// base is a realistic clock: 2023-11-14T22:13:20Z in Unix ns.
const base = int64(1.7e18)

// reply is a Result as the five integers a client sees.
func reply(r Result) [5]int64 {
	limited := int64(0)
	if r.Limited {
		limited = 1
	}
	return [5]int64{limited, r.Limit, r.Remaining, r.RetryAfter, r.ResetAfter}
}

// store keeps one key's state between calls the way the server does.
type store struct {
	tat    int64
	exists bool
}

func (s *store) apply(t *testing.T, r Result) {
	t.Helper()
	if r.Store {
		require.Positive(t, r.TTL)
		s.tat, s.exists = r.TAT, true
	}
}

func args(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func ms(n int64) int64 { return n * int64(time.Millisecond) }

// TestCellRedisCellSequence replays redis-cell's own it_rate_limits test
// (redis-cell-impl/src/lib.rs): CL.THROTTLE foo 4 1 1 Q on one key.
func TestCellRedisCellSequence(t *testing.T) {
	steps := []struct {
		name string
		at   int64 // offset from base, ns
		q    int64
		want [5]int64
	}{
		{"larger than the limit never fits", 0, 6, [5]int64{1, 5, 5, -1, 0}},
		{"1st", 0, 1, [5]int64{0, 5, 4, -1, 1}},
		{"2nd", 0, 1, [5]int64{0, 5, 3, -1, 2}},
		{"3rd", 0, 1, [5]int64{0, 5, 2, -1, 3}},
		{"4th", 0, 1, [5]int64{0, 5, 1, -1, 4}},
		{"5th", 0, 1, [5]int64{0, 5, 0, -1, 5}},
		{"6th is limited", 0, 1, [5]int64{1, 5, 0, 1, 5}},
		{"3s later", ms(3000), 1, [5]int64{0, 5, 2, -1, 3}},
		{"3.1s: reset 3.9s rounds up", ms(3100), 1, [5]int64{0, 5, 1, -1, 4}},
		{"4s", ms(4000), 1, [5]int64{0, 5, 1, -1, 4}},
		{"8s", ms(8000), 1, [5]int64{0, 5, 4, -1, 1}},
		{"9.5s: idle again", ms(9500), 1, [5]int64{0, 5, 4, -1, 1}},
		{"quantity 0 peeks", ms(9500), 0, [5]int64{0, 5, 4, -1, 1}},
		{"quantity 2", ms(9500), 2, [5]int64{0, 5, 2, -1, 3}},
		{"quantity 5 must wait 3s", ms(9500), 5, [5]int64{1, 5, 2, 3, 3}},
	}
	var s store
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			res, err := Cell(base+st.at, s.tat, s.exists, CellParams{MaxBurst: 4, Count: 1, Period: 1, Quantity: st.q})
			require.NoError(t, err)
			require.Equal(t, st.want, reply(res))
			require.Equal(t, !res.Limited && st.q > 0, res.Store)
			s.apply(t, res)
		})
	}
}

func TestCellExample(t *testing.T) {
	// CL.THROTTLE user123 15 30 60 on a new key: interval 2s, limit 16.
	p, err := ParseCell(args("15", "30", "60"))
	require.NoError(t, err)
	require.Equal(t, CellParams{MaxBurst: 15, Count: 30, Period: 60, Quantity: 1}, p)
	res, err := Cell(base, 0, false, p)
	require.NoError(t, err)
	require.Equal(t, [5]int64{0, 16, 15, -1, 2}, reply(res))
	require.True(t, res.Store)
	require.Equal(t, base+2e9, res.TAT)
	require.Equal(t, int64(2e9), res.TTL)
}

func TestCellSeconds(t *testing.T) {
	cases := []struct {
		ns, want int64
	}{
		{0, 0},
		{1, 0},
		{999_999, 0}, // under a millisecond: not rounded up
		{1_000_000, 1},
		{1e9, 1},
		{1e9 + 999_999, 1},
		{1e9 + 1_000_000, 2},
		{3_900_000_000, 4},
		{math.MaxInt64, 9223372037},
	}
	for _, c := range cases {
		t.Run(strconv.FormatInt(c.ns, 10), func(t *testing.T) {
			require.Equal(t, c.want, cellSeconds(c.ns))
		})
	}
}

func TestCellRounding(t *testing.T) {
	cases := []struct {
		name   string
		now    int64 // offset from base
		tat    int64 // offset from base; stored when exists
		exists bool
		p      CellParams
		want   [5]int64
	}{
		{
			// 0 1 1: interval 1s; stored TAT 0.5ms ahead: 1.0005s after the
			// call, reset rounds down (remainder under 1ms).
			name: "reset with sub-millisecond remainder rounds down",
			tat:  500_000, exists: true,
			p:    CellParams{MaxBurst: 1, Count: 1, Period: 1, Quantity: 1},
			want: [5]int64{0, 2, 0, -1, 1},
		},
		{
			// limit 1 interval 1s: TAT 1.5ms ahead; the next unit fits
			// 1.5ms later: retry 0s+1.
			name: "retry of 1.5ms rounds up to 1s",
			tat:  1_500_000, exists: true,
			p:    CellParams{MaxBurst: 0, Count: 1, Period: 1, Quantity: 1},
			want: [5]int64{1, 1, 0, 1, 1},
		},
		{
			// Same with 0.5ms: redis-cell replies 0 seconds while limited.
			name: "retry under 1ms is 0s",
			tat:  500_000, exists: true,
			p:    CellParams{MaxBurst: 0, Count: 1, Period: 1, Quantity: 1},
			want: [5]int64{1, 1, 0, 0, 0},
		},
		{
			// 1 3 1: interval trunc(1e9/3) = 333333333ns = 333333µs;
			// tolerance 666666666ns. New key, one unit: next = 333333333ns
			// = 333333µs -> 1.
			name: "interval not a whole second",
			p:    CellParams{MaxBurst: 1, Count: 3, Period: 1, Quantity: 1},
			want: [5]int64{0, 2, 1, -1, 1},
		},
		{
			// Two million a second: interval 500ns = 0µs, counted in ns
			// instead of redis-cell's division by zero. Burst 9: after one
			// unit next = 4500ns -> 9.
			name: "interval under a microsecond counts in ns",
			p:    CellParams{MaxBurst: 9, Count: 2_000_000, Period: 1, Quantity: 1},
			want: [5]int64{0, 10, 9, -1, 0},
		},
		{
			// Interval 1e9/500000 = 2000ns = 2µs exactly: no clamp needed.
			name: "interval of 2us",
			p:    CellParams{MaxBurst: 9, Count: 500_000, Period: 1, Quantity: 0},
			want: [5]int64{0, 10, 10, -1, 0},
		},
		{
			// Interval trunc(1e9/666667) = 1499ns -> 1µs; probe on a new
			// key: next = tolerance = 14990ns = 14µs -> 14µs/1µs = 14 > 10,
			// clamped to the limit.
			name: "microsecond truncation clamped to the limit",
			p:    CellParams{MaxBurst: 9, Count: 666_667, Period: 1, Quantity: 0},
			want: [5]int64{0, 10, 10, -1, 0},
		},
		{
			// A TAT 10s in the past counts as idle: same as a new key.
			name: "stale TAT is idle",
			tat:  -10e9, exists: true,
			p:    CellParams{MaxBurst: 4, Count: 1, Period: 1, Quantity: 1},
			want: [5]int64{0, 5, 4, -1, 1},
		},
		{
			// Stored TAT 20s ahead with a 5s tolerance (parameters lowered):
			// a probe is limited, with the wait until it fits: 15s.
			name: "probe over a lowered limit",
			tat:  20e9, exists: true,
			p:    CellParams{MaxBurst: 4, Count: 1, Period: 1, Quantity: 0},
			want: [5]int64{1, 5, 0, 15, 20},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Cell(base+c.now, base+c.tat, c.exists, c.p)
			require.NoError(t, err)
			require.Equal(t, c.want, reply(res))
		})
	}
}

func TestCellProbeStoresNothing(t *testing.T) {
	p := CellParams{MaxBurst: 4, Count: 1, Period: 1, Quantity: 0}
	res, err := Cell(base, 0, false, p)
	require.NoError(t, err)
	require.Equal(t, [5]int64{0, 5, 5, -1, 0}, reply(res))
	require.False(t, res.Store)
	require.Zero(t, res.TAT)
	require.Zero(t, res.TTL)
}

func TestCellHugeQuantityNeverFits(t *testing.T) {
	// Interval 1s, quantity 10^9: inc fits in int64 but exceeds the
	// tolerance: limited with retry -1, not an error.
	res, err := Cell(base, 0, false, CellParams{MaxBurst: 4, Count: 1, Period: 1, Quantity: 1e9})
	require.NoError(t, err)
	require.Equal(t, [5]int64{1, 5, 5, -1, 0}, reply(res))
	require.False(t, res.Store)
}

func TestParseCellErrors(t *testing.T) {
	cases := []struct {
		name string
		args [][]byte
		want string
	}{
		{"no arguments", args(), cellUsage},
		{"two arguments", args("1", "2"), cellUsage},
		{"five arguments", args("1", "2", "3", "4", "5"), cellUsage},
		{"max_burst not an integer", args("abc", "1", "1"), "Cell error: Store error: Couldn't parse as integer: abc"},
		{"count not an integer", args("1", "1.5", "1"), "Cell error: Store error: Couldn't parse as integer: 1.5"},
		{"period not an integer", args("1", "1", " 1"), "Cell error: Store error: Couldn't parse as integer:  1"},
		{"quantity not an integer", args("1", "1", "1", "x"), "Cell error: Store error: Couldn't parse as integer: x"},
		{"empty argument", args("", "1", "1"), "Cell error: Store error: Couldn't parse as integer: "},
		{"int64 overflow", args("9223372036854775808", "1", "1"), "Cell error: Store error: Couldn't parse as integer: 9223372036854775808"},
		{"CR LF inside become spaces", args("1\r\n2", "1", "1"), "Cell error: Store error: Couldn't parse as integer: 1  2"},
		{"trailing CR LF trimmed", args("1\r\n", "1", "1"), "Cell error: Store error: Couldn't parse as integer: 1"},
		{"text ends at NUL", args("1\x00abc", "1", "1"), "Cell error: Store error: Couldn't parse as integer: 1"},
		{"first bad argument wins", args("1", "x", "y"), "Cell error: Store error: Couldn't parse as integer: x"},
		{"zero count", args("1", "0", "1"), cellZeroRate},
		{"zero period", args("1", "1", "0"), cellZeroRate},
		{"zero rate before negative max_burst", args("-1", "0", "1"), cellZeroRate},
		{"count above period in ns", args("1", "2000000000", "1"), cellZeroRate},
		{"negative max_burst", args("-1", "1", "1"), "ERR max_burst must not be negative"},
		{"negative count", args("1", "-1", "1"), "ERR count_per_period must not be negative"},
		{"negative period", args("1", "1", "-1"), "ERR period must not be negative"},
		{"negative quantity", args("1", "1", "1", "-1"), "ERR quantity must not be negative"},
		{"period over int64 ns", args("1", "1", "9223372037"), "ERR period is too large (at most 9223372036 seconds)"},
		{"max_burst int64 max", args("9223372036854775807", "1", "1"), "ERR max_burst is too large for this period and count_per_period"},
		{"tolerance overflows", args("9223372036", "1", "1"), "ERR max_burst is too large for this period and count_per_period"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseCell(c.args)
			var e *Error
			require.True(t, errors.As(err, &e), "%v", err)
			require.Equal(t, c.want, e.Text)
			require.Equal(t, c.want, err.Error())
		})
	}
}

func TestParseCellAccepts(t *testing.T) {
	// Rust's i64 parse: leading '+', leading zeros and -0 are fine.
	p, err := ParseCell(args("+4", "007", "1", "-0"))
	require.NoError(t, err)
	require.Equal(t, CellParams{MaxBurst: 4, Count: 7, Period: 1, Quantity: 0}, p)
}

func TestCellErrors(t *testing.T) {
	ok := CellParams{MaxBurst: 1, Count: 1, Period: 1, Quantity: 1}
	cases := []struct {
		name     string
		now, tat int64
		exists   bool
		p        CellParams
		want     string
	}{
		{"clock before the epoch", -1, 0, false, ok, "ERR clock is before the Unix epoch"},
		{"invalid params", base, 0, false, CellParams{Count: 1, Period: 1, Quantity: -5}, "ERR quantity must not be negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Cell(c.now, c.tat, c.exists, c.p)
			var e *Error
			require.True(t, errors.As(err, &e), "%v", err)
			require.Equal(t, c.want, e.Text)
		})
	}
}

func TestCellImpossibleIsDenied(t *testing.T) {
	// redis-cell (cell/mod.rs, rate_limit) denies a quantity whose increment exceeds the
	// tolerance and leaves retry_after at -1: remaining and reset_after describe the key.
	// Where its increment overflows, its release build wraps the product and answers
	// nonsense (an admission with a TAT in the past, or a panic); we give the same denial
	// as for any other quantity past the limit.
	cases := []struct {
		name   string
		tat    int64
		exists bool
		args   [][]byte
		want   [5]int64
	}{
		{"quantity past max_burst+1", 0, false, args("2", "3", "3600", "4"), [5]int64{1, 3, 3, -1, 0}},
		{"quantity past max_burst+1 on a busy key", base + 1200*sec, true, args("2", "3", "3600", "4"), [5]int64{1, 3, 2, -1, 1200}},
		{"increment overflows", 0, false, args("2", "3", "3600", "10000000"), [5]int64{1, 3, 3, -1, 0}},
		{"quantity int64 max", 0, false, args("1", "1", "1", "9223372036854775807"), [5]int64{1, 2, 2, -1, 0}},
		// Period 9223372036s, count 1: interval 9.2e18ns; max_burst 0 and quantity 1 fit
		// the tolerance, but the new TAT would pass int64.
		{"new TAT overflows", 0, false, args("0", "1", "9223372036", "1"), [5]int64{1, 1, 1, -1, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := ParseCell(c.args)
			require.NoError(t, err)
			res, err := Cell(base, c.tat, c.exists, p)
			require.NoError(t, err)
			require.Equal(t, c.want, reply(res))
			require.False(t, res.Store)
		})
	}
}
