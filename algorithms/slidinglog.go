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
func (p SlidingLog) Take(now int64, st State, exists bool, cost int64, scratch []byte) (Decision, State, bool, error) {
	return p.take(now, st, exists, cost, scratch, maxLogEntries)
}

// take is Take with the bound on entries as a parameter, for tests.
func (p SlidingLog) take(now int64, st State, exists bool, cost int64, scratch []byte, maxEntries int) (Decision, State, bool, error) {
	err := p.Validate()
	if err == nil {
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

	// One pass: the units in the window, the first and the last entries in
	// it and where they sit in the encoding.
	var used, kept int64
	var oldest, first int64      // the first entry in the window: time and count
	var newest, last, prev int64 // the last: time and count; the time of the entry before it
	var second, lastAt int       // where the second and the last entry in the window start
	r := logReader{b: log, t: base, max: maxEntries}
	for {
		off := len(log) - len(r.b)
		e, c, ok := r.next()
		if !ok {
			break
		}
		if e*usNs <= horizon {
			continue // left the window; entries are in time order
		}
		if used > math.MaxInt64-c {
			return Decision{}, st, false, ErrCorrupt
		}
		switch kept {
		case 0:
			oldest, first = e, c
		case 1:
			second = off
		}
		used += c
		kept++
		prev, newest, last, lastAt = newest, e, c, off
	}
	if r.bad {
		return Decision{}, st, false, ErrCorrupt
	}

	d := Decision{Limit: p.Limit, RetryAfter: -1}
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
	w := logWriter{buf: scratch[:0]}
	switch {
	case !join && kept >= int64(maxEntries):
		w = p.merge(w, base, log, horizon, at, cost, maxEntries)
	case kept == 0:
		w.add(at, cost)
	default:
		// The entries in the window keep their encoding but the first,
		// whose delta from the new base is 0, and the last, which may take
		// the admission.
		if kept > 1 {
			w.add(oldest, first)
			w.buf = append(w.buf, log[second:lastAt]...)
			w.last = prev
		}
		if join {
			w.add(newest, last+cost)
		} else {
			w.add(newest, last)
			w.add(at, cost)
		}
	}
	d.ResetAfter = at*usNs + p.Window - now
	return d, State{Num: w.base, Bytes: w.buf, Expire: at*usNs + p.Window}, true, nil
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
	head, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.bad = true
		return 0, 0, false
	}
	r.b = r.b[k:]
	delta := head >> 1
	count = 1
	if head&1 != 0 {
		c, k := binary.Uvarint(r.b)
		if k <= 0 || c < 2 || c > math.MaxInt64 {
			r.bad = true
			return 0, 0, false
		}
		r.b = r.b[k:]
		count = int64(c)
	}
	if r.n > 0 && delta == 0 || delta > uint64(maxTimeUs-r.t) || r.n >= r.max {
		r.bad = true
		return 0, 0, false
	}
	r.t += int64(delta)
	r.n++
	return r.t, count, true
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
