package algorithms

import (
	"bytes"
	"encoding/binary"
	"math"
)

// Concurrency is CONCURRENCY.ACQUIRE's limit, a semaphore with leases: at
// most Limit slots held at once, each holder known by its ID and holding its
// slots for at most Lease ns. Cost is the number of slots the ID wants to
// hold (1 for a plain semaphore; more for weighted work; 0 is a probe):
// acquiring with an ID that already holds slots renews its lease and sets
// its holding to cost slots, without taking them a second time. Leases that
// expire free their slots without a release; Release frees them at once.
// Remaining is the free slots; RetryAfter, when denied, the time until
// enough leases of other holders expire for the cost to fit; ResetAfter the
// time until the last lease expires.
//
// A probe (cost 0) describes the key as it stands: it is limited only when
// the slots held exceed Limit (after Limit shrank).
//
// State: Num is the earliest lease expiry, in whole µs since the epoch (the
// base); Num2 is 0; Bytes is the holders in order of expiry, each
//
//	uvarint(delta<<1 | multi) [uvarint(slots) if multi] uvarint(len(id)) id
//
// where delta is the expiry minus the previous holder's (the base for the
// first), in µs, and slots is written only when it is not 1. An expiry is
// now + Lease rounded up to the µs, so a lease ends up to 1µs late, never
// early. A holder of one slot with a 16-byte id whose lease is the same
// length as the others' takes 18 to 21 bytes. Expired holders are dropped by
// the next acquire or release. Expire is the last lease's expiry; a release
// that frees the last slot returns the zero State (delete the key).
//
// New parameters adapt the state and never refill it: the holders keep their
// slots and leases (a Limit that shrinks below the slots held admits nothing
// until enough leases end), and a renewal takes the new Lease.
type Concurrency struct {
	Limit, Lease int64 // Lease in ns
	// ID is the holder, at most MaxIDLength bytes, compared byte for byte.
	// Take copies it into the state and keeps no reference.
	ID []byte
}

// Validate reports the first bad parameter.
func (p Concurrency) Validate() error {
	switch {
	case p.Limit < 1:
		return ErrLimit
	case !validDuration(p.Lease):
		return ErrLease
	case len(p.ID) > MaxIDLength:
		return ErrIDLength
	}
	return nil
}

// Take acquires (or renews) cost slots for p.ID at now; see Algorithm.
// Bytes of the new state are appended to scratch[:0]. Besides the Algorithm
// errors, it returns ErrHolders when the acquire would make more than
// MaxHolders ids hold slots.
func (p Concurrency) Take(now int64, st State, exists bool, cost int64, scratch []byte) (Decision, State, bool, error) {
	err := p.Validate()
	if err == nil {
		err = checkCall(now, cost)
	}
	if err != nil {
		return Decision{}, st, false, err
	}
	h, err := scanHolders(now, st, exists, p.ID)
	if err != nil {
		return Decision{}, st, false, err
	}

	d := Decision{Limit: p.Limit, RetryAfter: -1}
	after := h.others + h.own
	switch {
	case cost == 0:
		if after > p.Limit {
			d.Limited = true
			d.RetryAfter = h.retry(now, after-p.Limit, nil, false)
		}
	case cost > p.Limit:
		d.Limited = true
	case h.others > p.Limit-cost:
		d.Limited = true
		d.RetryAfter = h.retry(now, h.others-(p.Limit-cost), p.ID, true)
	default:
		after = h.others + cost
	}
	d.Remaining = max(0, p.Limit-after)
	if d.Limited || cost == 0 {
		if h.latest > 0 {
			d.ResetAfter = h.latest*usNs - now
		}
		return d, st, false, nil
	}

	if h.othersN >= MaxHolders {
		return Decision{}, st, false, ErrHolders
	}
	exp := ceilUs(now + p.Lease)
	w := holderWriter{buf: scratch[:0]}
	r := h.reader()
	mine := false
	for {
		e, s, id, ok := r.next()
		if !ok {
			break
		}
		if e*usNs <= now || bytes.Equal(id, p.ID) {
			continue
		}
		if !mine && e > exp {
			w.add(exp, cost, p.ID)
			mine = true
		}
		w.add(e, s, id)
	}
	if !mine {
		w.add(exp, cost, p.ID)
	}
	d.ResetAfter = w.last*usNs - now
	return d, State{Num: w.base, Bytes: w.buf, Expire: w.last * usNs}, true, nil
}

// Release frees the slots id holds at now. held reports whether it held any
// (a lease that has expired holds none); only then is next the state to
// store, the zero State when no holder is left (delete the key). Bytes of
// next are appended to scratch[:0], which must not overlap st.Bytes.
func Release(now int64, st State, exists bool, id []byte, scratch []byte) (held bool, next State, err error) {
	switch {
	case now < 0 || now >= MaxTime:
		return false, st, ErrClock
	case len(id) > MaxIDLength:
		return false, st, ErrIDLength
	}
	h, err := scanHolders(now, st, exists, id)
	if err != nil || h.own == 0 {
		return false, st, err
	}
	if h.othersN == 0 {
		return true, State{}, nil
	}
	w := holderWriter{buf: scratch[:0]}
	r := h.reader()
	for {
		e, s, hid, ok := r.next()
		if !ok {
			break
		}
		if e*usNs > now && !bytes.Equal(hid, id) {
			w.add(e, s, hid)
		}
	}
	return true, State{Num: w.base, Bytes: w.buf, Expire: w.last * usNs}, nil
}

// holders sums up a key's live holders as seen by one id.
type holders struct {
	base    int64
	enc     []byte
	own     int64 // slots the id holds
	others  int64 // slots the other ids hold
	othersN int   // how many other ids hold slots
	latest  int64 // the latest live expiry in µs, 0 when none
}

func (h holders) reader() holderReader { return holderReader{b: h.enc, t: h.base} }

// scanHolders decodes st at now on behalf of id.
func scanHolders(now int64, st State, exists bool, id []byte) (holders, error) {
	if !exists {
		return holders{}, nil
	}
	h := holders{base: st.Num, enc: st.Bytes}
	if h.base < 0 || h.base > maxExpiryUs {
		return holders{}, ErrCorrupt
	}
	r := h.reader()
	for {
		e, s, hid, ok := r.next()
		if !ok {
			break
		}
		if e*usNs <= now {
			continue // expired; holders are in order of expiry
		}
		if h.own+h.others > math.MaxInt64-s {
			return holders{}, ErrCorrupt
		}
		if bytes.Equal(hid, id) {
			h.own += s
		} else {
			h.others += s
			h.othersN++
		}
		h.latest = e
	}
	if r.bad {
		return holders{}, ErrCorrupt
	}
	return h, nil
}

// retry is the time from now until excess slots of live holders have
// expired, counting only holders other than id when others is true.
func (h holders) retry(now, excess int64, id []byte, others bool) int64 {
	r := h.reader()
	var freed int64
	for {
		e, s, hid, ok := r.next()
		if !ok {
			return math.MaxInt64 - now // unreachable: excess <= the slots held
		}
		if e*usNs <= now || others && bytes.Equal(hid, id) {
			continue
		}
		if freed += s; freed >= excess {
			return e*usNs - now
		}
	}
}

// holderReader walks encoded holders in order of expiry.
type holderReader struct {
	b   []byte
	t   int64 // µs of the expiry last read (the base before the first)
	n   int   // holders read
	bad bool  // the encoding is corrupt
}

// next returns the next holder; ok is false at the end and on a corrupt
// entry, which also sets bad. id aliases the encoding.
func (r *holderReader) next() (exp, slots int64, id []byte, ok bool) {
	if len(r.b) == 0 {
		return 0, 0, nil, false
	}
	head, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.bad = true
		return 0, 0, nil, false
	}
	r.b = r.b[k:]
	slots = 1
	if head&1 != 0 {
		s, k := binary.Uvarint(r.b)
		if k <= 0 || s < 2 || s > math.MaxInt64 {
			r.bad = true
			return 0, 0, nil, false
		}
		r.b = r.b[k:]
		slots = int64(s)
	}
	n, k := binary.Uvarint(r.b)
	if k <= 0 || n > MaxIDLength || n > uint64(len(r.b)-k) || head>>1 > uint64(maxExpiryUs-r.t) || r.n >= MaxHolders {
		r.bad = true
		return 0, 0, nil, false
	}
	id = r.b[k : k+int(n)]
	r.b = r.b[k+int(n):]
	r.t += int64(head >> 1)
	r.n++
	return r.t, slots, id, true
}

// holderWriter appends holders in order of expiry.
type holderWriter struct {
	buf        []byte
	base, last int64 // µs of the first and the last expiry written
	n          int
}

// add appends a holder expiring at exp µs, not before the last, with slots >= 1.
func (w *holderWriter) add(exp, slots int64, id []byte) {
	if w.n == 0 {
		w.base, w.last = exp, exp
	}
	head := uint64(exp-w.last) << 1
	if slots != 1 {
		head |= 1
	}
	w.buf = binary.AppendUvarint(w.buf, head)
	if slots != 1 {
		w.buf = binary.AppendUvarint(w.buf, uint64(slots))
	}
	w.buf = binary.AppendUvarint(w.buf, uint64(len(id)))
	w.buf = append(w.buf, id...)
	w.last = exp
	w.n++
}
