package algorithms

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTokenBucketSequence(t *testing.T) {
	// 10 tokens, 10 per second: a token every 100ms.
	p := TokenBucket{Capacity: 10, Refill: 10, Period: sec}
	steps := []struct {
		name string
		at   int64 // ns after base
		cost int64
		want [6]int64
	}{
		{"new key starts full", 0, 4, [6]int64{0, 10, 6, -1, 400 * ms, 0}},
		{"probe", 0, 0, [6]int64{0, 10, 6, -1, 400 * ms, 0}},
		{"the rest", 0, 6, [6]int64{0, 10, 0, -1, sec, 0}},
		{"empty waits a token", 0, 1, [6]int64{1, 10, 0, 100 * ms, sec, 0}},
		{"cost above capacity never fits", 0, 11, [6]int64{1, 10, 0, -1, sec, 0}},
		{"99ms: still none", 99 * ms, 1, [6]int64{1, 10, 0, ms, 901 * ms, 0}},
		{"half a period refills half", 500 * ms, 0, [6]int64{0, 10, 5, -1, 500 * ms, 0}},
		{"cost 7 waits 200ms", 500 * ms, 7, [6]int64{1, 10, 5, 200 * ms, 500 * ms, 0}},
		{"cost 5 takes them all", 500 * ms, 5, [6]int64{0, 10, 0, -1, sec, 0}},
		{"idle again after a period", 1500 * ms, 0, [6]int64{0, 10, 10, -1, 0, 0}},
		{"full stays full", 9 * sec, 10, [6]int64{0, 10, 0, -1, sec, 0}},
	}
	var k key
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			require.Equal(t, s.want, reply(k.take(t, p, base+s.at, s.cost)))
		})
	}
}

func TestTokenBucketRefillIsExact(t *testing.T) {
	// 3 per second: a token every 333.33...ms, which no ns interval holds.
	p := TokenBucket{Capacity: 3, Refill: 3, Period: sec}
	var k key
	require.False(t, k.take(t, p, base, 3).Limited)
	cases := []struct {
		name      string
		at        int64
		cost      int64
		remaining int64
		retry     int64
	}{
		{"1st token not before 333333334ns", 333_333_333, 1, 0, 1},
		{"1st token", 333_333_334, 1, 0, -1},
		// The 2nd token comes 666666667ns after base: the fraction carried
		// from the take at 333333334ns is not lost.
		{"2nd token not before 666666667ns", 666_666_666, 1, 0, 1},
		{"2nd token", 666_666_667, 1, 0, -1},
		{"3rd token exactly a second after base", sec, 1, 0, -1},
		{"taking at odd times loses nothing", 2*sec + 1, 0, 3, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := k.take(t, p, base+c.at, c.cost)
			require.Equal(t, c.remaining, d.Remaining)
			require.Equal(t, c.retry, d.RetryAfter)
		})
	}

	t.Run("a thousand takes over a period get the period's refill", func(t *testing.T) {
		// 7 per second from empty, taken the moment each token exists.
		p := TokenBucket{Capacity: 7, Refill: 7, Period: sec}
		var k key
		k.take(t, p, base, 7)
		taken := 0
		for now := base; now <= base+100*sec; now += 997_003 {
			if !k.take(t, p, now, 1).Limited {
				taken++
			}
		}
		// floor(100s * 7/s) tokens up to base+99.999...s, the last step.
		require.Equal(t, 699, taken)
	})
}

func TestTokenBucketAdaptsNeverRefills(t *testing.T) {
	old := TokenBucket{Capacity: 10, Refill: 1, Period: sec}
	// At base+1.5s: 10 - 6 + 1 = 5 tokens and half a token under way.
	prepare := func(t *testing.T) *key {
		var k key
		k.take(t, old, base, 6)
		d := k.take(t, old, base+1500*ms, 0)
		require.Equal(t, int64(5), d.Remaining)
		k.take(t, old, base+1500*ms, 1) // store at 1.5s: 4 tokens, lag 0.5s
		return &k
	}
	cases := []struct {
		name string
		p    TokenBucket
		at   int64 // ns after base
		want int64 // remaining on a probe
	}{
		{"same parameters", old, 1500 * ms, 4},
		{"same parameters, the half token completes", old, 2 * sec, 5},
		{"capacity shrinks: min(tokens, capacity)", TokenBucket{3, 1, sec}, 1500 * ms, 3},
		{"capacity grows: tokens keep their count", TokenBucket{1000, 1, sec}, 1500 * ms, 4},
		{"refill 1000 times faster: nothing for the past", TokenBucket{10, 1000, sec}, 1500 * ms, 4},
		{"refill 1000 times faster from the last call", TokenBucket{1000, 1000, sec}, 1502 * ms, 6},
		{"period change", TokenBucket{10, 1, 2 * sec}, 1500 * ms, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := prepare(t)
			require.Equal(t, c.want, k.take(t, c.p, base+c.at, 0).Remaining)
		})
	}
}

func TestTokenBucketClockStepsBack(t *testing.T) {
	p := TokenBucket{Capacity: 2, Refill: 1, Period: sec}
	var k key
	k.take(t, p, base+10*sec, 2)
	d := k.take(t, p, base+5*sec, 1)
	require.Equal(t, [6]int64{1, 2, 0, 6 * sec, 7 * sec, 0}, reply(d))
	// A second after the stored time the token is there, whatever the clock did.
	require.False(t, k.take(t, p, base+11*sec, 1).Limited)
	require.True(t, k.take(t, p, base+3*sec, 1).Limited)
}

func TestTokenBucketValidate(t *testing.T) {
	cases := []struct {
		name string
		p    TokenBucket
		want error
	}{
		{"zero capacity", TokenBucket{0, 1, sec}, ErrCapacity},
		{"negative refill", TokenBucket{1, -1, sec}, ErrRefill},
		{"zero period", TokenBucket{1, 1, 0}, ErrPeriod},
		{"period past 73 years", TokenBucket{1, 1, MaxDuration + 1}, ErrPeriod},
		{"longest period", TokenBucket{1, 1, MaxDuration}, nil},
		{"capacity above 2^51-1", TokenBucket{1 << 51, 1 << 51, sec}, ErrCapacity},
		{"largest capacity", TokenBucket{maxUnits, maxUnits, sec}, nil},
		{"2^32 at 7 per second: 19 years to fill", TokenBucket{1 << 32, 7, sec}, nil},
		{"too slow to fill", TokenBucket{1000, 1, MaxDuration}, ErrRefillCapacity},
		{"73 years to fill", TokenBucket{MaxDuration / sec, 1, sec}, nil},
		{"max refill", TokenBucket{1, math.MaxInt64, 1}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Validate()
			if c.want == nil {
				require.NoError(t, err)
				var k key
				k.take(t, c.p, base, 1)
				k.take(t, c.p, base+sec, math.MaxInt64)
				return
			}
			requireErr(t, c.want, err)
			_, _, _, err = c.p.Take(base, State{}, false, 1, nil)
			requireErr(t, c.want, err)
		})
	}
}

func TestTokenBucketRoundedPhase(t *testing.T) {
	// 5000 tokens at 1 per day: 13 bits of tokens and 47 of phase do not fit
	// 51, so a phase of 4990 tokens keeps 38 bits and drops 8 (256ns).
	day := 86400 * sec
	p := TokenBucket{Capacity: 5000, Refill: 1, Period: day}
	var k key
	k.take(t, p, base, 10)
	// 1.5 days and 1ns later: one token has come, the phase is half a day
	// and 1ns, stored as half a day.
	require.Equal(t, int64(4990), k.take(t, p, base+3*day/2+1, 1).Remaining)
	cases := []struct {
		name string
		at   int64
		want int64
	}{
		{"the next token is 1ns late, never early", 2 * day, 4990},
		{"and comes 1ns after its exact time", 2*day + 1, 4991},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, k.take(t, p, base+c.at, 0).Remaining)
		})
	}
}
