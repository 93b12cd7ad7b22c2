package algorithms

import (
	"encoding/binary"
	"math"
)

// SlidingLog is SLIDE's exact limit: at most Limit units in any window of
// Window ns ending now. It keeps a log of the admissions still in the window
// and counts them, so there is no boundary burst: Limit units at the end of
// one window and Limit more at the start of the next cannot both pass.
// RetryAfter is the time until enough of the oldest admissions have left the
// window for the cost to fit.
//
// State: Num is the time of the oldest entry in whole µs since the epoch (the
// log's base); Num2 is 0 (the keyspace then stores no second word); Bytes is
// the log, oldest first, one entry per distinct µs with admissions:
//
//	uvarint(delta<<1 | multi) [uvarint(count) if multi]
//
// where delta is the entry's time minus the previous entry's (the base for
// the first, so 0), in µs, and count, the units admitted in that µs, is
// written only when it is not 1 (multi = 1, count >= 2). Entries are
// strictly increasing in time. An admission at now is logged at now rounded
// up to the µs, so it leaves the window up to 1µs late and never early:
// invisible in millisecond replies, and it makes a delta over a one-minute
// window 3 bytes instead of 5. 100 admissions spread evenly over a one-minute
// window take 298 bytes of Bytes (1 + 99*3) plus the 8 of Num; over an hour,
// 397 bytes. A burst at one µs is one entry whatever its size. Entries that
// have left the window are dropped by the next admission.
//
// The log holds at most 4096 entries (about 16 KiB): when an admission would
// make it longer, the entry whose units cost least to move (count times the
// gap to the next entry) is merged into the next one, so those units count
// from a later time and stay in the window a little longer. Exactness gives
// way to memory only on keys with thousands of distinct admission times in
// a window, and then only ever towards admitting less. A clock that steps
// back logs at the newest entry's time and prunes less: never more traffic.
//
// New parameters adapt the state and never refill it: the admissions stay
// logged and count against the new Limit for the new Window from their own
// times (a shorter window lets them go sooner, a longer one keeps those not
// yet dropped for longer).
type SlidingLog struct{ Limit, Window int64 } // Window in ns

// maxLogEntries is the most entries a log holds.
const maxLogEntries = 4096

// Validate reports the first bad parameter.
func (p SlidingLog) Validate() error {
	switch {
	case p.Limit < 1:
		return ErrLimit
	case !validDuration(p.Window):
		return ErrWindow
	}
	return nil
}

// Take logs cost units at now; see Algorithm. Bytes of the new state are
// appended to scratch[:0].
func (p SlidingLog) Take(now int64, st State, exists bool, cost int64, scratch []byte) (d Decision, next State, store bool, err error) {
	// Written so that it is inlined into the server's call: as one more call
	// returning these results by value it cost SLIDE about 2% in copies.
	d, next, store, err = p.take(now, st, exists, cost, scratch, maxLogEntries)
	return
}

// take is Take with the bound on entries as a parameter, for tests.
func (p SlidingLog) take(now int64, st State, exists bool, cost int64, scratch []byte, maxEntries int) (d Decision, next State, store bool, err error) {
	// The results are filled field by field: a Decision built and then
	// returned is copied through memory, and the copy stalls on the stores.
	if err = p.Validate(); err == nil {
		err = checkCall(now, cost)
	}
	if err != nil {
		return Decision{}, st, false, err
	}
	var base int64
	var log []byte
	if exists {
		base, log = st.Num, st.Bytes
		if base < 0 || base > maxTimeUs {
			return Decision{}, st, false, ErrCorrupt
		}
	}
	// An entry at e µs is in the window ending now while e*1000 + Window > now.
	horizon := now - p.Window

	var w window
	if !w.scan(log, base, horizon, maxEntries) {
		return Decision{}, st, false, ErrCorrupt
	}
	used, kept, newest := w.used, w.kept, w.newest

	d.Limit, d.RetryAfter = p.Limit, -1
	after := used
	switch {
	case cost > p.Limit:
		d.Limited = true
	case used > p.Limit-cost:
		d.Limited = true
		d.RetryAfter = p.retry(base, log, horizon, used-(p.Limit-cost)) - now
	default:
		after = used + cost
	}
	d.Remaining = max(0, p.Limit-after)
	if d.Limited || cost == 0 {
		if used > 0 {
			d.ResetAfter = newest*usNs + p.Window - now
		}
		return d, st, false, nil
	}

	// The admission's entry: now in µs, or the newest entry's time when the
	// clock has stepped back (then it joins that entry).
	at := ceilUs(now)
	join := kept > 0 && at <= newest
	if join {
		at = newest
	}
	lw := logWriter{buf: scratch[:0]}
	switch {
	case !join && kept >= int64(maxEntries):
		lw = p.merge(lw, base, log, horizon, at, cost, maxEntries)
	case kept == 0:
		lw.add(at, cost)
	case join && kept == 1:
		lw.add(newest, w.last+cost)
	case !join && w.start == 0 && w.oldest == base:
		// None has left the window (as usual), and the first entry is at the
		// base, as written: the log as it is, and the admission.
		lw.buf = append(lw.buf, log...)
		lw.base, lw.last, lw.n = base, newest, int(kept)
		lw.add(at, cost)
	default:
		// The entries in the window keep their encoding but the first, whose
		// delta from the new base is 0, and the last when the admission joins
		// it.
		lw.add(w.oldest, w.first)
		if join {
			lw.buf = append(lw.buf, log[w.second:w.lastAt]...)
			lw.last = w.prev
			lw.add(newest, w.last+cost)
		} else {
			lw.buf = append(lw.buf, log[w.second:]...)
			lw.last = newest
			lw.add(at, cost)
		}
	}
	d.ResetAfter = at*usNs + p.Window - now
	next.Num, next.Bytes, next.Expire = lw.base, lw.buf, at*usNs+p.Window
	return d, next, true, nil
}

// window is what take needs of the entries of a log in the window: the log
// ends with them.
type window struct {
	used, kept            int64 // their units and their number
	oldest, first         int64 // the first: time in µs and count
	newest, last          int64 // the last
	prev                  int64 // the time of the entry before the last
	start, second, lastAt int   // where the first, the second (the log's end when none) and the last start
}

// scan reads log, of base base, and sums up into w its entries in the window
// that ends at horizon + Window; it returns false when the log is corrupt. (w
// is filled in place: returned by value, it would be copied twice.)
func (w *window) scan(log []byte, base, horizon int64, maxEntries int) bool {
	*w = window{second: len(log)}
	if len(log) > 0 && log[len(log)-1] >= 0x80 {
		// Cut short: a log ends with the last byte of a uvarint. Checked
		// first, so that a long log's end is on its way from memory while its
		// start is decoded.
		return false
	}
	// The entries that have left the window come first.
	t, off, n := base, 0, 0
	for {
		if off == len(log) {
			return true // none is in the window
		}
		e, c, next, ok := readEntry(log, off, t, n, maxEntries)
		if !ok {
			return false
		}
		n++
		if e*usNs > horizon {
			w.oldest, w.first, w.start = e, c, off
			t, off = e, next
			break
		}
		t, off = e, next
	}
	// The rest are in the window. This loop runs over every entry at every
	// call: it keeps to registers, and decodes the usual entry inline
	// (delta23).
	w.second = off
	skipped := n - 1
	used, last, lastAt, prev := w.first, w.first, w.start, int64(0)
	for ; off < len(log); n++ {
		d, size := delta23(log, off)
		e, c, next := t+d, int64(1), off+size
		if d == 0 || d > maxTimeUs-t || n >= maxEntries { // not readEntry's usual entry
			var ok bool
			if e, c, next, ok = readEntrySlow(log, off, t, n, maxEntries); !ok {
				return false
			}
		}
		if used > math.MaxInt64-c {
			return false
		}
		used += c
		prev, t, last, lastAt, off = t, e, c, off, next
	}
	w.used, w.kept, w.newest, w.last, w.prev, w.lastAt = used, int64(n-skipped), t, last, prev, lastAt
	return true
}

// merge writes the entries in the window and an admission of cost units at
// at µs when that is one entry more than maxEntries: the adjacent pair
// whose earlier units cost least to move (count times gap, the oldest pair
// of equal cost) becomes one entry at the later time.
func (p SlidingLog) merge(w logWriter, base int64, log []byte, horizon, at, cost int64, maxEntries int) logWriter {
	var i, pick, pickCount, pickGap, prev, count int64
	pick = -1
	r := logReader{b: log, t: base, max: maxEntries}
	for e, c, ok := r.next(); ok; e, c, ok = r.next() {
		if e*usNs <= horizon {
			continue
		}
		if i > 0 && (pick < 0 || lessProduct(count, e-prev, pickCount, pickGap)) {
			pick, pickCount, pickGap = i-1, count, e-prev
		}
		prev, count = e, c
		i++
	}
	if pick < 0 || lessProduct(count, at-prev, pickCount, pickGap) {
		pick = i - 1 // the newest entry joins the admission
	}
	r = logReader{b: log, t: base, max: maxEntries}
	var carry int64
	i = 0
	for e, c, ok := r.next(); ok; e, c, ok = r.next() {
		if e*usNs <= horizon {
			continue
		}
		if i == pick {
			carry = c
		} else {
			w.add(e, c+carry)
			carry = 0
		}
		i++
	}
	w.add(at, cost+carry)
	return w
}

// retry is when excess units of the log have left the window: the time the
// entry that brings the units leaving to excess leaves.
func (p SlidingLog) retry(base int64, log []byte, horizon, excess int64) int64 {
	r := logReader{b: log, t: base, max: math.MaxInt}
	var gone int64
	for {
		e, c, ok := r.next()
		if !ok {
			return math.MaxInt64 // unreachable: excess <= the units in the window
		}
		if e*usNs <= horizon {
			continue
		}
		if gone += c; gone >= excess {
			return e*usNs + p.Window
		}
	}
}

// logReader walks an encoded log, oldest first.
type logReader struct {
	b   []byte
	t   int64 // µs of the entry last read (the base before the first)
	n   int   // entries read
	max int   // entries allowed
	bad bool  // the encoding is corrupt
}

// next returns the next entry's time in µs and count; ok is false at the end
// and on a corrupt entry, which also sets bad.
func (r *logReader) next() (t, count int64, ok bool) {
	if len(r.b) == 0 {
		return 0, 0, false
	}
	t, count, k, ok := readEntry(r.b, 0, r.t, r.n, r.max)
	if !ok {
		r.bad = true
		return 0, 0, false
	}
	r.b, r.t = r.b[k:], t
	r.n++
	return t, count, true
}

// readEntry reads the entry of log at off < len(log), the log's n+1-th, whose
// previous entry (the base for the first) is at t µs. It returns the entry's
// time in µs and count and where the next entry starts; ok is false when the
// entry is corrupt or one more than max. SLIDE reads every entry of the log at
// every call, so the usual entries, one unit 64µs to 1s after the one before
// (a head of 2 or 3 bytes) and the first entry of one unit (a head of 0), are
// decoded here; readEntrySlow decodes and checks any entry.
func readEntry(log []byte, off int, t int64, n, max int) (e, count int64, next int, ok bool) {
	if d, size := delta23(log, off); d != 0 && d <= maxTimeUs-t && n < max {
		return t + d, 1, off + size, true
	}
	if n == 0 && n < max && log[off] == 0 {
		return t, 1, off + 1, true // the first entry, one unit at the base
	}
	return readEntrySlow(log, off, t, n, max)
}

// delta23 returns the delta of the entry at log[off:] and its size when it is
// the usual one, one unit with a head of 2 or 3 bytes (a delta of 64µs to 1s)
// and 3 bytes there to read, else 0 (and for a delta of 0, which only the
// first entry may have). It is small enough to be inlined: the caller checks
// the rest (see readEntry).
func delta23(log []byte, off int) (d int64, size int) {
	if off+3 <= len(log) && log[off]&0x81 == 0x80 { // continued, and no count follows
		c1 := log[off+1]
		d, size = int64(log[off]&0x7f)>>1|int64(c1&0x7f)<<6, 2
		if c1 >= 0x80 {
			if log[off+2] >= 0x80 {
				return 0, 0 // 4 bytes or more
			}
			d, size = d|int64(log[off+2])<<13, 3
		}
	}
	return d, size
}

// readEntrySlow is readEntry for any entry.
func readEntrySlow(log []byte, off int, t int64, n, max int) (e, count int64, next int, ok bool) {
	head, k := binary.Uvarint(log[off:])
	if k <= 0 {
		return 0, 0, 0, false
	}
	next, count = off+k, 1
	if head&1 != 0 {
		c, k := binary.Uvarint(log[next:])
		if k <= 0 || c < 2 || c > math.MaxInt64 {
			return 0, 0, 0, false
		}
		next, count = next+k, int64(c)
	}
	delta := head >> 1
	if n > 0 && delta == 0 || delta > uint64(maxTimeUs-t) || n >= max {
		return 0, 0, 0, false
	}
	return t + int64(delta), count, next, true
}

// logWriter appends entries to a log, oldest first.
type logWriter struct {
	buf        []byte
	base, last int64 // µs of the first and the last entry written
	n          int
}

// add appends an entry at t µs, after the last, of count >= 1 units.
func (w *logWriter) add(t, count int64) {
	if w.n == 0 {
		w.base, w.last = t, t
	}
	head := uint64(t-w.last) << 1
	if count != 1 {
		head |= 1
	}
	w.buf = binary.AppendUvarint(w.buf, head)
	if count != 1 {
		w.buf = binary.AppendUvarint(w.buf, uint64(count))
	}
	w.last = t
	w.n++
}
