package gcra

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseRustInt(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"+0", 0, true},
		{"007", 7, true},
		{"+15", 15, true},
		{"-15", -15, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"99999999999999999999999", 0, false},
		{"", 0, false},
		{"+", 0, false},
		{"-", 0, false},
		{"+-1", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1.0", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"١", 0, false}, // Arabic-Indic digit one
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, ok := parseRustInt([]byte(c.in))
			require.Equal(t, c.ok, ok)
			require.Equal(t, c.want, got)
		})
	}
}

func TestParseRedisInt(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"7", 7, true},
		{"-7", -7, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"-0", 0, false},
		{"+1", 0, false},
		{"01", 0, false},
		{"00", 0, false},
		{"", 0, false},
		{"-", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1.0", 0, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, ok := parseRedisInt([]byte(c.in))
			require.Equal(t, c.ok, ok)
			require.Equal(t, c.want, got)
		})
	}
}

func TestParseRedisFloat(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true},
		{"60", 60, true},
		{"0.5", 0.5, true},
		{"-0.5", -0.5, true},
		{"+0.5", 0.5, true},
		{"1.", 1, true},
		{".5", 0.5, true},
		{"1e3", 1000, true},
		{"1E+3", 1000, true},
		{"25e-1", 2.5, true},
		{"0000.1000", 0.1, true},
		{"4e-320", 4e-320, true},
		{"inf", math.Inf(1), true},
		{"INF", math.Inf(1), true},
		{"+Infinity", math.Inf(1), true},
		{"-inf", math.Inf(-1), true},
		{"nan", 0, false},
		{"NaN", 0, false},
		{"infinit", 0, false},
		{"infinityy", 0, false},
		{"1e400", 0, false},
		{"-1e400", 0, false},
		{"1e-400", 0, false},
		{"", 0, false},
		{".", 0, false},
		{"-", 0, false},
		{"e5", 0, false},
		{"1e", 0, false},
		{"1e+", 0, false},
		{"1.2.3", 0, false},
		{"0x1p3", 0, false},
		{"1_000", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1\x00", 0, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, ok := parseRedisFloat([]byte(c.in))
			require.Equal(t, c.ok, ok)
			require.Equal(t, c.want, got)
		})
	}
}

func TestSanitize(t *testing.T) {
	in := []byte("a\rb\nc\r\n")
	require.Equal(t, "a b c", sanitize(in))
	require.Equal(t, "a\rb\nc\r\n", string(in)) // the caller's bytes are untouched
	require.Equal(t, "ab", sanitize([]byte("ab\x00\r\ncd")))
}

// TestNoAllocs checks the hot path: parsing and evaluating allocate nothing
// when they succeed.
func TestNoAllocs(t *testing.T) {
	cellArgs := args("15", "30", "60", "1")
	gcraArgs := args("15", "30", "60.5", "TOKENS", "2")
	cases := []struct {
		name string
		fn   func()
	}{
		{"ParseCell", func() { _, _ = ParseCell(cellArgs) }},
		{"ParseGCRA", func() { _, _ = ParseGCRA(gcraArgs) }},
		{"Cell", func() { _, _ = Cell(base, base+1e9, true, CellParams{15, 30, 60, 1}) }},
		{"Redis", func() { _, _ = Redis(base, base+1e9, true, GCRAParams{15, 30, 60.5, 2}) }},
		{"Throttle", func() { _, _ = Throttle(base, base+1e9, true, Quota{15, 30, 60 * sec}, 1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Zero(t, testing.AllocsPerRun(100, c.fn))
		})
	}
}
