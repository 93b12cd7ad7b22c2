package algorithms

// Refunds (REFUND n) give back up to n units a key has consumed, never past
// full, each in its algorithm's own terms:
//
//   - TokenBucket adds n tokens, up to Capacity;
//   - LeakyBucket takes n units out of the queue, down to empty;
//   - FixedWindow and SlidingCounter lower the current window's count, not
//     below 0 (units of an earlier window are past giving back);
//   - SlidingLog drops its n most recent admissions still in the window.
//
// A refund takes nothing itself: its Decision is the key's after the refund,
// as a probe (cost 0) would see it (Limited false, Remaining what may pass
// now). A key that holds nothing (missing, idle, or an old window only)
// stays as it is. Refund returns store true when the state changed; the
// State it returns then has Expire 0 when the key is idle (full, empty) and
// may be deleted. refunded is the units actually given back, at most n.
//
// Concurrency takes no refund: CONCURRENCY.RELEASE frees an id's slots.

// asRefund is a probe's decision as a refund's reply: a refund takes nothing,
// so it is never limited, even on a key that holds more than new parameters
// allow (a probe of it is).
func asRefund(d Decision) Decision {
	d.Limited, d.RetryAfter = false, -1
	return d
}

// Refund gives back up to n tokens at now; see the comment above. scratch is unused.
func (p TokenBucket) Refund(now int64, st State, exists bool, n int64, _ []byte) (d Decision, next State, store bool, refunded int64, err error) {
	m, err := p.meter()
	if err == nil {
		err = checkCall(now, n)
	}
	if err != nil || !exists {
		return p.probe(now, st, exists, err)
	}
	held, l, ok := unpack(st.Num)
	if !ok || !validTime(st.Num2) {
		return Decision{}, st, false, 0, ErrCorrupt
	}
	t := max(now, st.Num2)
	ticks, lag := m.advance(l, t-st.Num2)
	tokens := addSat(held, ticks)
	if tokens >= p.Capacity || n == 0 {
		return p.probe(now, st, exists, nil)
	}
	refunded = min(n, p.Capacity-tokens)
	if tokens += refunded; tokens < p.Capacity {
		next = State{Num: pack(tokens, lag), Num2: t, Expire: t + m.until(p.Capacity-tokens, lag)}
	} // else full: a missing key is a full bucket
	d, _, _, err = p.Take(now, next, next.Expire > 0, 0, nil)
	return asRefund(d), next, true, refunded, err
}

func (p TokenBucket) probe(now int64, st State, exists bool, err error) (Decision, State, bool, int64, error) {
	if err != nil {
		return Decision{}, st, false, 0, err
	}
	d, _, _, err := p.Take(now, st, exists, 0, nil)
	return asRefund(d), st, false, 0, err
}

// Refund takes up to n units out of the queue at now; see the comment above.
// scratch is unused.
func (p LeakyBucket) Refund(now int64, st State, exists bool, n int64, _ []byte) (d Decision, next State, store bool, refunded int64, err error) {
	m, err := p.meter()
	if err == nil {
		err = checkCall(now, n)
	}
	if err != nil || !exists {
		return p.probe(now, st, exists, err)
	}
	queued, l, ok := unpack(st.Num)
	if !ok || !validTime(st.Num2) {
		return Decision{}, st, false, 0, ErrCorrupt
	}
	t := max(now, st.Num2)
	ticks, lag := m.advance(l, t-st.Num2)
	if ticks >= queued || n == 0 {
		return p.probe(now, st, exists, nil) // empty already
	}
	waiting := queued - ticks
	refunded = min(n, waiting)
	if waiting -= refunded; waiting > 0 {
		next = State{Num: pack(waiting, lag), Num2: t, Expire: t + m.until(waiting, lag)}
	}
	d, _, _, err = p.Take(now, next, next.Expire > 0, 0, nil)
	return asRefund(d), next, true, refunded, err
}

func (p LeakyBucket) probe(now int64, st State, exists bool, err error) (Decision, State, bool, int64, error) {
	if err != nil {
		return Decision{}, st, false, 0, err
	}
	d, _, _, err := p.Take(now, st, exists, 0, nil)
	return asRefund(d), st, false, 0, err
}

// Refund lowers the current window's count by up to n at now; see the
// comment above. scratch is unused.
func (p FixedWindow) Refund(now int64, st State, exists bool, n int64, _ []byte) (d Decision, next State, store bool, refunded int64, err error) {
	err = p.Validate()
	if err == nil {
		err = checkCall(now, n)
	}
	if err != nil || !exists {
		return p.probe(now, st, exists, err)
	}
	if !validTime(st.Num) || st.Num2 < 0 {
		return Decision{}, st, false, 0, ErrCorrupt
	}
	start, end := p.bounds(max(now, st.Num))
	if st.Num < start || st.Num2 == 0 || n == 0 {
		return p.probe(now, st, exists, nil) // the count is of a window gone
	}
	refunded = min(n, st.Num2)
	if count := st.Num2 - refunded; count > 0 {
		next = State{Num: st.Num, Num2: count, Expire: end}
	}
	d, _, _, err = p.Take(now, next, next.Expire > 0, 0, nil)
	return asRefund(d), next, true, refunded, err
}

func (p FixedWindow) probe(now int64, st State, exists bool, err error) (Decision, State, bool, int64, error) {
	if err != nil {
		return Decision{}, st, false, 0, err
	}
	d, _, _, err := p.Take(now, st, exists, 0, nil)
	return asRefund(d), st, false, 0, err
}

// Refund lowers the current window's count by up to n at now; the previous
// window's stays. See the comment above. scratch is unused.
func (p SlidingCounter) Refund(now int64, st State, exists bool, n int64, _ []byte) (d Decision, next State, store bool, refunded int64, err error) {
	err = p.Validate()
	if err == nil {
		err = checkCall(now, n)
	}
	if err != nil || !exists {
		return p.probe(now, st, exists, err)
	}
	if !validTime(st.Num) {
		return Decision{}, st, false, 0, ErrCorrupt
	}
	w := p.Window
	t := max(now, st.Num)
	curr, prev := int64(uint32(st.Num2)), int64(uint64(st.Num2)>>32)
	if t/w != st.Num/w || curr == 0 || n == 0 {
		return p.probe(now, st, exists, nil) // nothing counted in the current window
	}
	refunded = min(n, curr)
	curr -= refunded
	start := t - t%w
	var idle int64
	switch {
	case curr > 0:
		idle = start + 2*w
	case prev > 0:
		idle = start + w
	}
	if idle > 0 {
		next = State{Num: st.Num, Num2: int64(uint64(prev)<<32 | uint64(curr)), Expire: idle}
	}
	d, _, _, err = p.Take(now, next, next.Expire > 0, 0, nil)
	return asRefund(d), next, true, refunded, err
}

func (p SlidingCounter) probe(now int64, st State, exists bool, err error) (Decision, State, bool, int64, error) {
	if err != nil {
		return Decision{}, st, false, 0, err
	}
	d, _, _, err := p.Take(now, st, exists, 0, nil)
	return asRefund(d), st, false, 0, err
}

// Refund drops the n most recent admissions still in the window at now (the
// entries that have left it go too); see the comment above. Bytes of the new
// state are appended to scratch[:0], which must not overlap st.Bytes.
func (p SlidingLog) Refund(now int64, st State, exists bool, n int64, scratch []byte) (d Decision, next State, store bool, refunded int64, err error) {
	err = p.Validate()
	if err == nil {
		err = checkCall(now, n)
	}
	if err != nil || !exists {
		return p.probe(now, st, exists, err)
	}
	base, log := st.Num, st.Bytes
	if base < 0 || base > maxTimeUs {
		return Decision{}, st, false, 0, ErrCorrupt
	}
	horizon := now - p.Window
	var w window
	if !w.scan(log, base, horizon, maxLogEntries) {
		return Decision{}, st, false, 0, ErrCorrupt
	}
	if w.used == 0 || n == 0 {
		return p.probe(now, st, exists, nil)
	}
	refunded = min(n, w.used)
	if keep := w.used - refunded; keep > 0 {
		lw := logWriter{buf: scratch[:0]}
		r := logReader{b: log, t: base, max: maxLogEntries}
		for e, c, ok := r.next(); ok && keep > 0; e, c, ok = r.next() {
			if e*usNs <= horizon {
				continue
			}
			c = min(c, keep)
			lw.add(e, c)
			keep -= c
		}
		next = State{Num: lw.base, Bytes: lw.buf, Expire: lw.last*usNs + p.Window}
	}
	d, _, _, err = p.Take(now, next, next.Expire > 0, 0, nil)
	return asRefund(d), next, true, refunded, err
}

func (p SlidingLog) probe(now int64, st State, exists bool, err error) (Decision, State, bool, int64, error) {
	if err != nil {
		return Decision{}, st, false, 0, err
	}
	d, _, _, err := p.Take(now, st, exists, 0, nil)
	return asRefund(d), st, false, 0, err
}
