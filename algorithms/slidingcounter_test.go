package algorithms

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSlidingCounterSequence(t *testing.T) {
	// 100 per 10s windows, aligned to base.
	p := SlidingCounter{Limit: 100, Window: 10 * sec}
	steps := []struct {
		name string
		at   int64 // ns after base
		cost int64
		want [6]int64
	}{
		{"50 in the first window", 5 * sec, 50, [6]int64{0, 100, 50, -1, 15 * sec, 0}},
		// elapsed 2.5s: 0 + 50*(1 - 2.5/10) = 37.5.
		{"estimate curr + prev*(1-elapsed/window)", 12500 * ms, 0, [6]int64{0, 100, 62, -1, 7500 * ms, 0}},
		{"62 more: estimate 99.5", 12500 * ms, 62, [6]int64{0, 100, 0, -1, 17500 * ms, 0}},
		// 63 + 50*(10-e)/10 <= 100 from e = 2.6s.
		{"1 more waits for prev to decay", 12500 * ms, 1, [6]int64{1, 100, 0, 100 * ms, 17500 * ms, 0}},
		{"exactly at 2.6s: estimate 100", 12600 * ms, 1, [6]int64{0, 100, 0, -1, 17400 * ms, 0}},
		// 40 + 63*(10-e)/10 <= 100 from e = 10 - 600/63 s in the next window.
		{"curr+cost over the limit waits for the next window", 12600 * ms, 40, [6]int64{1, 100, 0, 7_876_190_477, 17400 * ms, 0}},
		{"cost above the limit never fits", 12600 * ms, 101, [6]int64{1, 100, 0, -1, 17400 * ms, 0}},
		// window 20s: prev 63, elapsed 5s: 31.5.
		{"next window", 25 * sec, 0, [6]int64{0, 100, 68, -1, 5 * sec, 0}},
		{"two windows later: idle", 40 * sec, 0, [6]int64{0, 100, 100, -1, 0, 0}},
	}
	var k key
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			require.Equal(t, s.want, reply(k.take(t, p, base+s.at, s.cost)))
		})
	}
}

func TestSlidingCounterEstimate(t *testing.T) {
	// remaining = floor(limit - curr - prev*(1 - elapsed/window)), exactly,
	// for prev 7 and curr 2 in windows of 3s.
	p := SlidingCounter{Limit: 10, Window: 3 * sec}
	cases := []struct {
		elapsed int64
		want    int64
	}{
		{0, 1},           // 10 - 2 - 7
		{1, 1},           // 7*(1 - 1ns/3s) is just under 7
		{428_571_429, 2}, // 7*(1 - e/3s) <= 6 from e = 3s/7, rounded up
		{428_571_428, 1}, // just before
		{sec, 3},         // 7*2/3 = 4.67: 10 - 2 - 4.67 = 3.33
		{3*sec - 1, 7},   // prev weighs 1ns/3s: 7.99...
	}
	for _, c := range cases {
		t.Run("", func(t *testing.T) {
			k := key{exists: true, st: State{Num: base + 3*sec, Num2: 7<<32 | 2}}
			require.Equal(t, c.want, k.take(t, p, base+3*sec+c.elapsed, 0).Remaining)
		})
	}
}

func TestSlidingCounterAdaptsNeverRefills(t *testing.T) {
	old := SlidingCounter{Limit: 100, Window: 10 * sec}
	prepare := func(t *testing.T) *key {
		var k key
		k.take(t, old, base+5*sec, 40)  // prev
		k.take(t, old, base+15*sec, 30) // curr, last admission at 15s
		return &k
	}
	cases := []struct {
		name string
		p    SlidingCounter
		at   int64
		want int64 // remaining on a probe
	}{
		{"same parameters: 30 + 40/2", old, 15 * sec, 50},
		{"limit shrinks below the estimate", SlidingCounter{40, 10 * sec}, 15 * sec, 0},
		{"limit grows", SlidingCounter{1000, 10 * sec}, 15 * sec, 950},
		// Windows of 4s: 15s is in [12s, 16s), elapsed 3s: 30 + 40/4.
		{"shorter window: curr where the last admission was", SlidingCounter{100, 4 * sec}, 15 * sec, 60},
		// Windows of 60s: 15s is in [0, 60s), elapsed 15s: 30 + 40*3/4.
		{"longer window", SlidingCounter{100, 60 * sec}, 15 * sec, 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := prepare(t)
			require.Equal(t, c.want, k.take(t, c.p, base+c.at, 0).Remaining)
		})
	}
}

func TestSlidingCounterAtMostTwiceTheLimit(t *testing.T) {
	// The approximation's worst case: prev's units all came at the end of
	// their window, curr's at the start of the next.
	p := SlidingCounter{Limit: 10, Window: sec}
	var k key
	require.False(t, k.take(t, p, base+sec-1, 10).Limited)
	admitted := int64(0)
	for at := base + sec; at < base+2*sec-1; at += ms {
		if !k.take(t, p, at, 1).Limited {
			admitted++
		}
	}
	require.Equal(t, int64(9), admitted) // 19 in one window's time, never 20
}

func TestSlidingCounterClockStepsBack(t *testing.T) {
	p := SlidingCounter{Limit: 2, Window: sec}
	var k key
	k.take(t, p, base+10*sec+500*ms, 2)
	// Back to 5s: evaluated at 10.5s, where the window is full.
	require.Equal(t, [6]int64{1, 2, 0, 6500 * ms, 7 * sec, 0}, reply(k.take(t, p, base+5*sec, 1)))
}

func TestSlidingCounterValidate(t *testing.T) {
	cases := []struct {
		name string
		p    SlidingCounter
		want error
	}{
		{"zero limit", SlidingCounter{0, sec}, ErrLimit},
		{"limit past 32 bits", SlidingCounter{math.MaxUint32 + 1, sec}, ErrApproxLimit},
		{"zero window", SlidingCounter{1, 0}, ErrWindow},
		{"largest", SlidingCounter{math.MaxUint32, MaxDuration}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Validate()
			if c.want == nil {
				require.NoError(t, err)
				var k key
				k.take(t, c.p, MaxTime-1, math.MaxUint32)
				k.take(t, c.p, MaxTime-1, 1)
				return
			}
			requireErr(t, c.want, err)
		})
	}
}
