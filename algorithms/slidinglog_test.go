package algorithms

import (
	"encoding/binary"
	"math"
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

// refScan is window.scan done the plain way, entry by entry with binary.Uvarint as
// the format reads: scan, which decodes the usual entry inline, is held to it.
func refScan(log []byte, base, horizon int64, maxEntries int) (window, bool) {
	type entry struct {
		t, count int64
		at       int
	}
	var in []entry // the entries in the window
	t := base
	for off, n := 0, 0; off < len(log); n++ {
		head, k := binary.Uvarint(log[off:])
		if k <= 0 {
			return window{}, false
		}
		at := off
		off += k
		count := int64(1)
		if head&1 != 0 {
			c, k := binary.Uvarint(log[off:])
			if k <= 0 || c < 2 || c > math.MaxInt64 {
				return window{}, false
			}
			off += k
			count = int64(c)
		}
		delta := head >> 1
		if n > 0 && delta == 0 || delta > uint64(maxTimeUs-t) || n >= maxEntries {
			return window{}, false
		}
		t += int64(delta)
		if t*usNs > horizon {
			in = append(in, entry{t, count, at})
		}
	}
	w := window{second: len(log)}
	for i, e := range in {
		if w.used > math.MaxInt64-e.count {
			return window{}, false
		}
		w.used += e.count
		if i == 1 {
			w.second = e.at
		}
	}
	if len(in) > 0 {
		first, last := in[0], in[len(in)-1]
		w.kept, w.oldest, w.first, w.start = int64(len(in)), first.t, first.count, first.at
		w.newest, w.last, w.lastAt = last.t, last.count, last.at
		if len(in) > 1 {
			w.prev = in[len(in)-2].t
		}
	}
	return w, true
}

func TestSlidingLogScan(t *testing.T) {
	at := func(b ...byte) []byte { return b }
	cases := []struct {
		name string
		base int64
		log  []byte
	}{
		{"3-byte heads", base / 1000, at(0, 0x80, 0x80, 0x01, 0xfe, 0xff, 0x7f)},
		{"a 3-byte head of 0 after the first", base / 1000, at(0, 0x80, 0x80, 0x00)},
		{"a 3-byte head of 0 first", base / 1000, at(0x80, 0x80, 0x00, 0x80, 0x80, 0x01)},
		{"a 3-byte head written long", base / 1000, at(0, 0x82, 0x80, 0x00, 0xfe, 0xff, 0x00)},
		{"2-byte heads", base / 1000, at(0, 0x82, 0x01, 0xfe, 0x7f, 0x80, 0x01)},
		{"a 2-byte head of 0", base / 1000, at(0, 0x80, 0x00, 0x82, 0x01)},
		{"a 2-byte head with a count", base / 1000, at(0, 0x81, 0x01, 2, 0x82, 0x01)},
		{"a 2-byte head last", base / 1000, at(0, 0x82, 0x01)},
		{"a 4-byte head", base / 1000, at(0, 0x80, 0x80, 0x80, 0x01, 0x82, 0x01)},
		{"a 2-byte head before a 4-byte one", base / 1000, at(0, 0x82, 0x01, 0x80, 0x80, 0x80, 0x01)},
		{"a 3-byte head with a count", base / 1000, at(0, 0x81, 0x80, 0x01, 2)},
		{"a 3-byte head with a count missing", base / 1000, at(0, 0x81, 0x80, 0x01)},
		{"a 3-byte head not ended", base / 1000, at(0, 0x80, 0x80, 0x81)},
		{"a 3-byte head cut short", base / 1000, at(0, 0x80, 0x80)},
		{"a 3-byte delta past 2116", maxTimeUs - 1<<13 + 1, at(0, 0x80, 0x80, 0x01)},
		{"a 3-byte delta up to 2116", maxTimeUs - 1<<13, at(0, 0x80, 0x80, 0x01)},
		{"counts", base / 1000, at(1, 5, 0x80, 0x80, 0x01, 0x83, 0x80, 0x01, 9)},
	}
	for _, c := range cases {
		for _, max := range []int{1, 2, 3, maxLogEntries} {
			for _, horizon := range []int64{0, c.base*usNs + 1, c.base*usNs + 1<<13*usNs, maxTimeUs * usNs} {
				want, wantOK := refScan(c.log, c.base, horizon, max)
				var got window
				ok := got.scan(c.log, c.base, horizon, max)
				require.Equal(t, wantOK, ok, "%s, max %d, horizon %d", c.name, max, horizon)
				if ok {
					require.Equal(t, want, got, "%s, max %d, horizon %d", c.name, max, horizon)
				}
			}
		}
	}
}

// FuzzSlidingLogScan holds window.scan to refScan on any log, window and bound.
func FuzzSlidingLogScan(f *testing.F) {
	var w logWriter
	for i, d := range []int64{0, 200_000, 150_000, 1, 64, 8192, 900_000, 3_000_000} {
		w.add(base/1000+int64(i)*1_000_000+d, 1+int64(i%3))
	}
	f.Add(w.base, w.buf, int64(0), uint16(0))
	f.Add(w.base, w.buf, (w.base+3_000_000)*usNs, uint16(3))
	f.Add(base/1000, []byte{0, 0x80, 0x80, 0x01, 0x80, 0x80, 0x00}, int64(0), uint16(5))
	f.Fuzz(func(t *testing.T, b int64, log []byte, horizon int64, max uint16) {
		b = abs64(b) % (maxTimeUs + 1)
		bound := maxLogEntries
		if max != 0 {
			bound = int(max)
		}
		want, wantOK := refScan(log, b, horizon, bound)
		var got window
		ok := got.scan(log, b, horizon, bound)
		if ok != wantOK || ok && got != want {
			t.Fatalf("scan %v %v, want %v %v", got, ok, want, wantOK)
		}
	})
}

func TestSlidingLogEntries(t *testing.T) {
	// The log holds every admission in the window at its µs, whichever way
	// take writes it: appended to the log as it is, rewritten from a later
	// base, or joined to the newest entry.
	p := SlidingLog{Limit: 100, Window: sec}
	var k key
	entries := func() [][2]int64 {
		var out [][2]int64
		r := logReader{b: k.st.Bytes, t: k.st.Num, max: maxLogEntries}
		for e, c, ok := r.next(); ok; e, c, ok = r.next() {
			out = append(out, [2]int64{e - base/1000, c})
		}
		require.False(t, r.bad)
		return out
	}
	steps := []struct {
		name string
		at   int64 // µs after base
		cost int64
		want [][2]int64
	}{
		{"the first", 0, 1, [][2]int64{{0, 1}}},
		{"appended, 3 bytes", 200_000, 1, [][2]int64{{0, 1}, {200_000, 1}}},
		{"appended, a count", 400_001, 3, [][2]int64{{0, 1}, {200_000, 1}, {400_001, 3}}},
		{"joins the newest", 400_001, 2, [][2]int64{{0, 1}, {200_000, 1}, {400_001, 5}}},
		{"appended, 1 byte", 400_010, 1, [][2]int64{{0, 1}, {200_000, 1}, {400_001, 5}, {400_010, 1}}},
		{"the first has left: a new base", 1_000_000, 1, [][2]int64{{200_000, 1}, {400_001, 5}, {400_010, 1}, {1_000_000, 1}}},
		{"two have left", 1_400_005, 2, [][2]int64{{400_010, 1}, {1_000_000, 1}, {1_400_005, 2}}},
		{"all have left", 3_000_000, 1, [][2]int64{{3_000_000, 1}}},
	}
	for _, st := range steps {
		require.False(t, k.take(t, p, base+st.at*1000, st.cost).Limited, st.name)
		require.Equal(t, st.want, entries(), st.name)
		require.Equal(t, base/1000+st.want[0][0], k.st.Num, "%s: the base is the oldest entry", st.name)
	}
}
