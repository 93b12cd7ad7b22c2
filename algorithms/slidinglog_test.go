package algorithms

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSlidingLogSequence(t *testing.T) {
	p := SlidingLog{Limit: 10, Window: sec}
	steps := []struct {
		name string
		at   int64 // ns after base
		cost int64
		want [6]int64
	}{
		{"3 at 0", 0, 3, [6]int64{0, 10, 7, -1, sec, 0}},
		{"3 at 200ms", 200 * ms, 3, [6]int64{0, 10, 4, -1, sec, 0}},
		{"4 at 400ms", 400 * ms, 4, [6]int64{0, 10, 0, -1, sec, 0}},
		// 5 must leave: the 3 of 0 leave at 1s, the 3 of 200ms at 1.2s.
		{"5 waits for the two oldest entries", 500 * ms, 5, [6]int64{1, 10, 0, 700 * ms, 900 * ms, 0}},
		{"1 waits for the oldest", 500 * ms, 1, [6]int64{1, 10, 0, 500 * ms, 900 * ms, 0}},
		{"cost above the limit never fits", 500 * ms, 11, [6]int64{1, 10, 0, -1, 900 * ms, 0}},
		{"1ns before the oldest leaves", sec - 1, 1, [6]int64{1, 10, 0, 1, 400*ms + 1, 0}},
		{"the oldest has left", sec, 3, [6]int64{0, 10, 0, -1, sec, 0}},
		{"probe later", 1300 * ms, 0, [6]int64{0, 10, 3, -1, 700 * ms, 0}},
		{"idle", 5 * sec, 0, [6]int64{0, 10, 10, -1, 0, 0}},
	}
	var k key
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			require.Equal(t, s.want, reply(k.take(t, p, base+s.at, s.cost)))
		})
	}
}

func TestSlidingLogNoBoundaryBurst(t *testing.T) {
	// Fixed windows let 2x the limit through across a boundary; the log does not.
	var log, window key
	sl, fw := SlidingLog{Limit: 10, Window: sec}, FixedWindow{Limit: 10, Window: sec}
	require.False(t, log.take(t, sl, base+900*ms, 10).Limited)
	require.False(t, window.take(t, fw, base+900*ms, 10).Limited)

	require.False(t, window.take(t, fw, base+1100*ms, 10).Limited, "fixed window: 20 in 200ms")
	d := log.take(t, sl, base+1100*ms, 1)
	require.True(t, d.Limited)
	require.Equal(t, 800*ms, d.RetryAfter) // when the 10 of 900ms leave, at 1.9s
}

func TestSlidingLogMicroseconds(t *testing.T) {
	// An admission at 1ns is logged at 1µs: it leaves up to 1µs late, never early.
	p := SlidingLog{Limit: 1, Window: sec}
	var k key
	k.take(t, p, base+1, 1)
	require.Equal(t, base/1000+1, k.st.Num)
	d := k.take(t, p, base+sec+999, 1)
	require.Equal(t, [6]int64{1, 1, 0, 1, 1, 0}, reply(d))
	require.False(t, k.take(t, p, base+sec+1000, 1).Limited)
}

func TestSlidingLogEncoding(t *testing.T) {
	cases := []struct {
		name    string
		window  int64
		calls   int
		step    int64
		cost    int64
		entries int
		size    int
	}{
		// Deltas of 600ms: 1.2e6 with the flag, 3 bytes; the first is 1 byte.
		{"100 over a minute", 60 * sec, 100, 600 * ms, 1, 100, 1 + 99*3},
		// Deltas of 36s: 7.2e7, 4 bytes.
		{"100 over an hour", 3600 * sec, 100, 36 * sec, 1, 100, 1 + 99*4},
		{"100 at the same µs merge", 60 * sec, 100, 0, 1, 1, 2},
		{"costs are one more varint", 60 * sec, 100, 600 * ms, 1000, 100, 100*2 + 1 + 99*3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := SlidingLog{Limit: 1 << 40, Window: c.window}
			var k key
			for i := range c.calls {
				require.False(t, k.take(t, p, base+int64(i)*c.step, c.cost).Limited)
			}
			require.Equal(t, c.size, len(k.st.Bytes))
			require.Equal(t, int64(0), k.st.Num2)
			r := logReader{b: k.st.Bytes, t: k.st.Num, max: maxLogEntries}
			n := 0
			for _, _, ok := r.next(); ok; _, _, ok = r.next() {
				n++
			}
			require.False(t, r.bad)
			require.Equal(t, c.entries, n)
		})
	}
}

func TestSlidingLogPrunes(t *testing.T) {
	p := SlidingLog{Limit: 100, Window: sec}
	var k key
	for i := range int64(50) {
		k.take(t, p, base+i*100*ms, 1)
	}
	// Only the admissions of the last second are kept: 10 entries.
	r := logReader{b: k.st.Bytes, t: k.st.Num, max: maxLogEntries}
	n := 0
	for _, _, ok := r.next(); ok; _, _, ok = r.next() {
		n++
	}
	require.Equal(t, 10, n)
	require.Equal(t, (base+4*sec)/1000, k.st.Num) // the oldest kept, in µs
}

func TestSlidingLogMerges(t *testing.T) {
	// With room for 3 entries, the 4th admission merges the pair whose
	// units cost least to move (count times gap) into its later entry.
	p := SlidingLog{Limit: 100, Window: 10 * sec}
	take := func(k *key, at, cost int64) {
		d, next, store, err := p.take(base+at, k.st, k.exists, cost, nil, 3)
		require.NoError(t, err)
		require.False(t, d.Limited)
		require.True(t, store)
		k.st, k.exists = next, true
	}
	entries := func(k *key) [][2]int64 {
		var out [][2]int64
		r := logReader{b: k.st.Bytes, t: k.st.Num, max: 3}
		for e, c, ok := r.next(); ok; e, c, ok = r.next() {
			out = append(out, [2]int64{(e - base/1000) / 1000, c}) // ms after base
		}
		require.False(t, r.bad)
		return out
	}
	var k key
	take(&k, 0, 1)
	take(&k, 1000*ms, 5)
	take(&k, 1100*ms, 1)
	take(&k, 3000*ms, 1)
	// Pairs: 1 unit over 1000ms, 5 over 100ms, 1 over 1900ms: the 5 move.
	require.Equal(t, [][2]int64{{0, 1}, {1100, 6}, {3000, 1}}, entries(&k))
	take(&k, 3000*ms, 2) // the same µs: joins the newest entry
	require.Equal(t, [][2]int64{{0, 1}, {1100, 6}, {3000, 3}}, entries(&k))
	d, _, _, err := p.take(base+10*sec, k.st, true, 0, nil, 3)
	require.NoError(t, err)
	// The first unit has left; the 6 merged units count from 1.1s.
	require.Equal(t, int64(91), d.Remaining)
}

func TestSlidingLogAdaptsNeverRefills(t *testing.T) {
	old := SlidingLog{Limit: 10, Window: sec}
	prepare := func(t *testing.T) *key {
		var k key
		k.take(t, old, base, 4)
		k.take(t, old, base+500*ms, 4)
		return &k
	}
	cases := []struct {
		name string
		p    SlidingLog
		at   int64
		want [6]int64 // a probe's reply
	}{
		{"same parameters", old, 600 * ms, [6]int64{0, 10, 2, -1, 900 * ms, 0}},
		{"limit shrinks below the log", SlidingLog{5, sec}, 600 * ms, [6]int64{1, 5, 0, 400 * ms, 900 * ms, 0}},
		{"limit grows: the admissions still count", SlidingLog{100, sec}, 600 * ms, [6]int64{0, 100, 92, -1, 900 * ms, 0}},
		{"longer window keeps them longer", SlidingLog{10, 10 * sec}, 1200 * ms, [6]int64{0, 10, 2, -1, 9300 * ms, 0}},
		{"shorter window lets them go sooner", SlidingLog{10, 550 * ms}, 600 * ms, [6]int64{0, 10, 6, -1, 450 * ms, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := prepare(t)
			require.Equal(t, c.want, reply(k.take(t, c.p, base+c.at, 0)))
		})
	}
}

func TestSlidingLogClockStepsBack(t *testing.T) {
	p := SlidingLog{Limit: 2, Window: sec}
	var k key
	k.take(t, p, base+10*sec, 1)
	// Back 5s: the admission at 10s still counts, and this one joins it.
	require.Equal(t, [6]int64{0, 2, 0, -1, 6 * sec, 0}, reply(k.take(t, p, base+5*sec, 1)))
	require.Equal(t, [6]int64{1, 2, 0, 6 * sec, 6 * sec, 0}, reply(k.take(t, p, base+5*sec, 1)))
	require.True(t, k.take(t, p, base+11*sec-1, 1).Limited)
	require.False(t, k.take(t, p, base+11*sec, 2).Limited)
}

func TestSlidingLogCorrupt(t *testing.T) {
	p := SlidingLog{Limit: 10, Window: sec}
	cases := []struct {
		name string
		st   State
	}{
		{"negative base", State{Num: -1}},
		{"base past 2116", State{Num: maxTimeUs + 1}},
		{"truncated varint", State{Num: base / 1000, Bytes: []byte{0x80}}},
		{"count below 2", State{Num: base / 1000, Bytes: []byte{1, 1}}},
		{"missing count", State{Num: base / 1000, Bytes: []byte{1}}},
		{"two entries at one time", State{Num: base / 1000, Bytes: []byte{0, 0}}},
		{"time past 2116", State{Num: maxTimeUs, Bytes: []byte{0, 2}}},
		{"counts overflow", State{Num: base / 1000, Bytes: []byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, next, store, err := p.Take(base, c.st, true, 1, nil)
			requireErr(t, ErrCorrupt, err)
			require.False(t, store)
			require.Equal(t, c.st, next)
		})
	}
	t.Run("an empty log is fine", func(t *testing.T) {
		d, _, _, err := p.Take(base, State{Num: 5}, true, 1, nil)
		require.NoError(t, err)
		require.Equal(t, int64(9), d.Remaining)
	})
}
