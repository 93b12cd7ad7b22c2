package algorithms

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFixedWindowSequence(t *testing.T) {
	p := FixedWindow{Limit: 3, Window: sec}
	steps := []struct {
		name string
		at   int64 // ns after base
		cost int64
		want [6]int64
	}{
		{"2 mid-window", 500 * ms, 2, [6]int64{0, 3, 1, -1, 500 * ms, 0}},
		{"1 at the end", 900 * ms, 1, [6]int64{0, 3, 0, -1, 100 * ms, 0}},
		{"full: retry at the window's end", 900 * ms, 1, [6]int64{1, 3, 0, 100 * ms, 100 * ms, 0}},
		{"cost above the limit never fits", 900 * ms, 4, [6]int64{1, 3, 0, -1, 100 * ms, 0}},
		{"1ns before the end", sec - 1, 1, [6]int64{1, 3, 0, 1, 1, 0}},
		{"boundary burst: 3 more at once", sec, 3, [6]int64{0, 3, 0, -1, sec, 0}},
		{"idle", 2500 * ms, 0, [6]int64{0, 3, 3, -1, 0, 0}},
	}
	var k key
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			require.Equal(t, s.want, reply(k.take(t, p, base+s.at, s.cost)))
		})
	}
}

func TestFixedWindowBoundaryBurst(t *testing.T) {
	// Twice the limit in 2ms across a boundary: the property that makes
	// fixed windows cheap, and the reason SLIDE exists.
	p := FixedWindow{Limit: 100, Window: 60 * sec}
	var k key
	admitted := int64(0)
	for at := base + 60*sec - ms; at <= base+60*sec+ms; at += ms {
		for !k.take(t, p, at, 1).Limited {
			admitted++
		}
	}
	require.Equal(t, int64(200), admitted)
}

func TestFixedWindowAdaptsNeverRefills(t *testing.T) {
	old := FixedWindow{Limit: 10, Window: 10 * sec}
	cases := []struct {
		name string
		p    FixedWindow
		want [6]int64 // a probe's reply at 7s
	}{
		{"same parameters", old, [6]int64{0, 10, 4, -1, 3 * sec, 0}},
		{"limit shrinks below the count", FixedWindow{Limit: 5, Window: 10 * sec}, [6]int64{1, 5, 0, 3 * sec, 3 * sec, 0}},
		{"limit grows: the count stays", FixedWindow{Limit: 100, Window: 10 * sec}, [6]int64{0, 100, 94, -1, 3 * sec, 0}},
		// Windows of 4s: the last admission (6s) is in [4s, 8s).
		{"shorter window: counted where the last admission was", FixedWindow{Limit: 10, Window: 4 * sec}, [6]int64{0, 10, 4, -1, sec, 0}},
		{"longer window", FixedWindow{Limit: 10, Window: 60 * sec}, [6]int64{0, 10, 4, -1, 53 * sec, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var k key
			k.take(t, old, base+2*sec, 3)
			k.take(t, old, base+6*sec, 3)
			require.Equal(t, c.want, reply(k.take(t, c.p, base+7*sec, 0)))
		})
	}
}

func TestFixedWindowClockStepsBack(t *testing.T) {
	p := FixedWindow{Limit: 1, Window: sec}
	var k key
	k.take(t, p, base+10*sec, 1)
	// Back in an earlier window: still counted in the 10s window.
	require.Equal(t, [6]int64{1, 1, 0, 6 * sec, 6 * sec, 0}, reply(k.take(t, p, base+5*sec, 1)))
	require.False(t, k.take(t, p, base+11*sec, 1).Limited)
}

func TestFixedWindowCorrupt(t *testing.T) {
	p := FixedWindow{Limit: 1, Window: sec}
	for _, st := range []State{{Num: -1}, {Num: MaxTime}, {Num: base, Num2: -1}} {
		_, _, _, err := p.Take(base, st, true, 1, nil)
		requireErr(t, ErrCorrupt, err)
	}
}
