package gcra

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The expected values below are worked out by hand from gcra.c:
// interval_us = (long long)(period*1e6/tokens + 0.5) (at least 1),
// limit = max_burst+1, tolerance = interval*limit, inc = interval*TOKENS,
// now_us = ms*1000, new = max(now, tat)+inc, diff = now - (new - tolerance);
// limited when diff < 0 (retry ceil(-diff/1e6) if inc <= tolerance, ttl =
// tat-now) else ttl = new-now; remaining = (tolerance-ttl)/interval when
// tolerance-ttl > -interval; reset = ceil(ttl/1e6). base is a whole
// millisecond, so now_us = base/1000 there.

func gcra(t *testing.T, a ...string) GCRAParams {
	t.Helper()
	p, err := ParseGCRA(args(a...))
	require.NoError(t, err)
	return p
}

func TestRedisSequences(t *testing.T) {
	type call struct {
		name string
		at   int64 // ns after base
		args []string
		want [5]int64
	}
	cases := []struct {
		name  string
		calls []call
	}{
		{"docs example 5 10 60: interval 6s, limit 6, tolerance 36s", []call{
			{"new key: ttl 6s, (36-6)/6 = 5", 0, []string{"5", "10", "60"}, [5]int64{0, 6, 5, -1, 6}},
			{"2nd", 0, []string{"5", "10", "60"}, [5]int64{0, 6, 4, -1, 12}},
			{"3rd", 0, []string{"5", "10", "60"}, [5]int64{0, 6, 3, -1, 18}},
			{"4th", 0, []string{"5", "10", "60"}, [5]int64{0, 6, 2, -1, 24}},
			{"5th", 0, []string{"5", "10", "60"}, [5]int64{0, 6, 1, -1, 30}},
			{"6th: ttl 36s", 0, []string{"5", "10", "60"}, [5]int64{0, 6, 0, -1, 36}},
			{"7th: new 42s, diff -6s", 0, []string{"5", "10", "60"}, [5]int64{1, 6, 0, 6, 36}},
			{"6s later one fits again", 6e9, []string{"5", "10", "60"}, [5]int64{0, 6, 0, -1, 36}},
			{"TOKENS 3 after 18s: ttl 36-18+18", 24e9, []string{"5", "10", "60", "TOKENS", "3"}, [5]int64{0, 6, 0, -1, 36}},
		}},
		{"TOKENS 3 on a new key: ttl 18s, (36-18)/6 = 3", []call{
			{"one call", 0, []string{"5", "10", "60", "TOKENS", "3"}, [5]int64{0, 6, 3, -1, 18}},
		}},
		{"max_burst 0: one at a time, 1 per second", []call{
			{"first: ttl 1s, remaining 0", 0, []string{"0", "1", "1"}, [5]int64{0, 1, 0, -1, 1}},
			// now_us is the millisecond: at +999.999999ms gcra.c sees +999ms,
			// diff = 999000 - 1000000 = -1000us -> retry ceil(0.001) = 1,
			// ttl 1000us -> reset 1, (1e6-1000)/1e6 = 0.
			{"999.999999ms later sees 999ms", 999_999_999, []string{"0", "1", "1"}, [5]int64{1, 1, 0, 1, 1}},
			{"at 1s it passes", 1e9, []string{"0", "1", "1"}, [5]int64{0, 1, 0, -1, 1}},
		}},
		{"TOKENS above the limit never fits", []call{
			// inc 3e6 > tolerance 2e6: retry -1, ttl 0, 2e6/1e6 = 2.
			{"new key", 0, []string{"1", "1", "1", "TOKENS", "3"}, [5]int64{1, 2, 2, -1, 0}},
		}},
		{"fractional period 0.5s", []call{
			{"ttl 0.5s rounds up to 1", 0, []string{"0", "1", "0.5"}, [5]int64{0, 1, 0, -1, 1}},
			{"limited 0.25s later: retry 0.25s -> 1", 250e6, []string{"0", "1", "0.5"}, [5]int64{1, 1, 0, 1, 1}},
		}},
		{"max_burst LONG_MAX stays LONG_MAX", []call{
			// interval 1us, tolerance LONG_MAX; ttl 1us.
			{"new key", 0, []string{"9223372036854775807", "1", "0.000001"}, [5]int64{0, math.MaxInt64, math.MaxInt64 - 1, -1, 1}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s store
			for _, cl := range c.calls {
				res, err := Redis(base+cl.at, s.tat, s.exists, gcra(t, cl.args...))
				require.NoError(t, err, cl.name)
				require.Equal(t, cl.want, reply(res), cl.name)
				require.Equal(t, !res.Limited, res.Store, cl.name)
				s.apply(t, res)
			}
		})
	}
}

func TestRedisStoredState(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		now     int64 // ns after base
		tat     int64 // ns after base when exists
		exists  bool
		want    [5]int64
		wantTAT int64 // ns after base, when stored
		wantTTL int64
	}{
		{
			// 1/3 s = 333333.33us + 0.5 -> 333333us. The TTL runs to the
			// TAT rounded up to the millisecond: 334ms.
			name: "interval rounds 333333.33us down", args: []string{"0", "3", "1"},
			want: [5]int64{0, 1, 0, -1, 1}, wantTAT: 333_333_000, wantTTL: 334e6,
		},
		{
			// 5us/3 = 1.67 + 0.5 -> 2us (truncating would give 1).
			name: "interval rounds 1.67us up", args: []string{"0", "3", "0.000005"},
			want: [5]int64{0, 1, 0, -1, 1}, wantTAT: 2000, wantTTL: 1e6,
		},
		{
			// 4us/3 = 1.33 + 0.5 -> 1us.
			name: "interval rounds 1.33us down", args: []string{"0", "3", "0.000004"},
			want: [5]int64{0, 1, 0, -1, 1}, wantTAT: 1000, wantTTL: 1e6,
		},
		{
			// 1us/3 = 0.33 + 0.5 -> 0 -> at least 1us. 100us per token:
			// the TAT is inside the current millisecond, and the key must
			// still outlive it (PXAT rounded up, not down).
			name: "interval floor of 1us keeps the key to the next ms", args: []string{"0", "3", "0.000001"},
			want: [5]int64{0, 1, 0, -1, 1}, wantTAT: 1000, wantTTL: 1e6,
		},
		{
			// now +0.7ms is +0ms to gcra.c: TAT = base+100us; TTL from the
			// real now to base+1ms = 0.3ms.
			name: "TTL counts from the real clock", args: []string{"9", "10000", "1"}, now: 700_000,
			want: [5]int64{0, 10, 9, -1, 1}, wantTAT: 100_000, wantTTL: 300_000,
		},
		{
			// A TAT written in ns by CL.THROTTLE, 1.5us ahead, reads as 2us:
			// new = 1000002us, diff = -2us -> retry 1, ttl 2us -> reset 1.
			name: "ns TAT rounds up to the microsecond", args: []string{"0", "1", "1"},
			tat: 1500, exists: true,
			want: [5]int64{1, 1, 0, 1, 1},
		},
		{
			name: "stale TAT is idle", args: []string{"4", "1", "1"},
			tat: -5e9, exists: true,
			want: [5]int64{0, 5, 4, -1, 1}, wantTAT: 1e9, wantTTL: 1e9,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Redis(base+c.now, base+c.tat, c.exists, gcra(t, c.args...))
			require.NoError(t, err)
			require.Equal(t, c.want, reply(res))
			if res.Store {
				require.Equal(t, base+c.wantTAT, res.TAT)
				require.Equal(t, c.wantTTL, res.TTL)
			}
		})
	}
}

func TestParseGCRA(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want GCRAParams
	}{
		{"defaults to one token", []string{"5", "10", "60"}, GCRAParams{MaxBurst: 5, Tokens: 10, Period: 60, Quantity: 1}},
		{"TOKENS any case", []string{"0", "1", "0.5", "ToKeNs", "3"}, GCRAParams{Tokens: 1, Period: 0.5, Quantity: 3}},
		{"TOKENS word ends at NUL as in C", []string{"0", "1", "1", "tokens\x00junk", "2"}, GCRAParams{Tokens: 1, Period: 1, Quantity: 2}},
		{"period 1.", []string{"0", "1", "1."}, GCRAParams{Tokens: 1, Period: 1, Quantity: 1}},
		{"period .5", []string{"0", "1", ".5"}, GCRAParams{Tokens: 1, Period: 0.5, Quantity: 1}},
		{"period +2", []string{"0", "1", "+2"}, GCRAParams{Tokens: 1, Period: 2, Quantity: 1}},
		{"period 1E1", []string{"0", "1", "1E1"}, GCRAParams{Tokens: 1, Period: 10, Quantity: 1}},
		{"period subnormal", []string{"0", "1", "4e-320"}, GCRAParams{Tokens: 1, Period: 4e-320, Quantity: 1}},
		{"period just under 1e12", []string{"0", "1", "999999999999.9"}, GCRAParams{Tokens: 1, Period: 999999999999.9, Quantity: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, gcra(t, c.args...))
		})
	}
}

func TestParseGCRAErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no arguments", nil, "ERR wrong number of arguments for 'gcra' command"},
		{"two arguments", []string{"10", "5"}, "ERR wrong number of arguments for 'gcra' command"},
		{"six arguments", []string{"10", "5", "10", "TOKENS", "1", "x"}, "ERR wrong number of arguments for 'gcra' command"},
		{"max_burst negative", []string{"-1", "5", "10"}, "ERR value is out of range, must be positive"},
		{"max_burst not a number", []string{"notanumber", "5", "10"}, "ERR value is out of range, must be positive"},
		{"max_burst with +", []string{"+1", "5", "10"}, "ERR value is out of range, must be positive"},
		{"max_burst leading zero", []string{"01", "5", "10"}, "ERR value is out of range, must be positive"},
		{"max_burst -0", []string{"-0", "5", "10"}, "ERR value is out of range, must be positive"},
		{"max_burst over int64", []string{"9223372036854775808", "5", "10"}, "ERR value is out of range, must be positive"},
		{"tokens_per_period 0", []string{"10", "0", "10"}, "ERR value is out of range, value must between 1 and 9223372036854775807"},
		{"tokens_per_period negative", []string{"10", "-1", "10"}, "ERR value is out of range, value must between 1 and 9223372036854775807"},
		{"tokens_per_period not a number", []string{"10", "notanumber", "10"}, "ERR value is not an integer or out of range"},
		{"tokens_per_period a float", []string{"10", "1.0", "10"}, "ERR value is not an integer or out of range"},
		{"period 0", []string{"10", "5", "0"}, "ERR period must be > 0 and < 1e12"},
		{"period negative", []string{"10", "5", "-1"}, "ERR period must be > 0 and < 1e12"},
		{"period 1e12", []string{"10", "5", "1e12"}, "ERR period must be > 0 and < 1e12"},
		{"period inf", []string{"10", "5", "inf"}, "ERR period must be > 0 and < 1e12"},
		{"period -infinity", []string{"10", "5", "-Infinity"}, "ERR period must be > 0 and < 1e12"},
		{"period 0e-400 is exactly zero", []string{"10", "5", "0e-400"}, "ERR period must be > 0 and < 1e12"},
		{"period not a number", []string{"10", "5", "notanumber"}, "ERR value is not a valid float"},
		{"period nan", []string{"10", "5", "nan"}, "ERR value is not a valid float"},
		{"period hex", []string{"10", "5", "0x10"}, "ERR value is not a valid float"},
		{"period leading space", []string{"10", "5", " 1"}, "ERR value is not a valid float"},
		{"period trailing space", []string{"10", "5", "1 "}, "ERR value is not a valid float"},
		{"period empty", []string{"10", "5", ""}, "ERR value is not a valid float"},
		{"period overflows", []string{"10", "5", "1e400"}, "ERR value is not a valid float"},
		{"period underflows", []string{"10", "5", "1e-400"}, "ERR value is not a valid float"},
		{"period with underscore", []string{"10", "5", "1_0"}, "ERR value is not a valid float"},
		{"period exponent without digits", []string{"10", "5", "1e"}, "ERR value is not a valid float"},
		{"period lone dot", []string{"10", "5", "."}, "ERR value is not a valid float"},
		{"period infin", []string{"10", "5", "infin"}, "ERR value is not a valid float"},
		{"TOKENS without value", []string{"10", "5", "10", "TOKENS"}, "ERR Missing TOKENS value"},
		{"other word", []string{"10", "5", "10", "foo"}, "ERR syntax error"},
		{"TOKEN", []string{"10", "5", "10", "TOKEN", "1"}, "ERR syntax error"},
		{"Kelvin sign is not k", []string{"10", "5", "10", "to\u212aens", "1"}, "ERR syntax error"},
		{"TOKENS 0", []string{"10", "5", "10", "TOKENS", "0"}, "ERR value is out of range, value must between 1 and 9223372036854775807"},
		{"TOKENS negative", []string{"10", "5", "10", "TOKENS", "-1"}, "ERR value is out of range, value must between 1 and 9223372036854775807"},
		{"TOKENS not a number", []string{"10", "5", "10", "TOKENS", "notanumber"}, "ERR value is not an integer or out of range"},
		// Redis's own overflow tests (tests/unit/gcra.tcl).
		{"TOKENS overflow", []string{"1", "1", "86400", "TOKENS", "200000000"}, redisTokensOv},
		{"max_burst overflow", []string{"200000000", "1", "86400"}, redisBurstOv},
		{"both large, TOKENS first", []string{"1", "1", "2147483647", "TOKENS", "2147483647"}, redisTokensOv},
		{"max_burst LONG_MAX with 1s", []string{"9223372036854775807", "1", "1"}, redisBurstOv},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseGCRA(args(c.args...))
			var e *Error
			require.True(t, errors.As(err, &e), "%v", err)
			require.Equal(t, c.want, e.Text)
		})
	}
}

func TestRedisErrors(t *testing.T) {
	ok := GCRAParams{MaxBurst: 1, Tokens: 1, Period: 1, Quantity: 1}
	cases := []struct {
		name     string
		now, tat int64
		exists   bool
		p        GCRAParams
		want     string
	}{
		{"clock before the epoch", -1, 0, false, ok, "ERR clock is before the Unix epoch"},
		{"stored TAT zero", base, 0, true, ok, redisNegTAT},
		{"stored TAT negative", base, -5, true, ok, redisNegTAT},
		{"max_burst negative", base, 0, false, GCRAParams{MaxBurst: -1, Tokens: 1, Period: 1, Quantity: 1}, redisPositive},
		{"tokens 0", base, 0, false, GCRAParams{Tokens: 0, Period: 1, Quantity: 1}, redisRange1},
		{"quantity 0", base, 0, false, GCRAParams{Tokens: 1, Period: 1, Quantity: 0}, redisRange1},
		{"period NaN", base, 0, false, GCRAParams{Tokens: 1, Period: math.NaN(), Quantity: 1}, redisPeriod},
		{
			// interval = 922337203685.4s in us ~ 9.2234e17; TOKENS 10 fits
			// int64 but now + inc does not: gcra.c refuses before deciding,
			// though the request (inc > tolerance) could never pass anyway.
			"now + inc overflows", base, 0, false,
			GCRAParams{Tokens: 1, Period: 922337203685.4, Quantity: 10}, redisTokensOv,
		},
		{
			// A period of ~1e12s: Redis stores TAT ~1e18us; our ns state
			// ends in 2262, so this is the TOKENS overflow error.
			"TAT past 2262 in ns", base, 0, false,
			GCRAParams{Tokens: 1, Period: 999999999999, Quantity: 1}, redisTokensOv,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Redis(c.now, c.tat, c.exists, c.p)
			var e *Error
			require.True(t, errors.As(err, &e), "%v", err)
			require.Equal(t, c.want, e.Text)
		})
	}
}
