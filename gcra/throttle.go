package gcra

// Quota is the native THROTTLE limit: Count per Period sustained, MaxBurst
// more at once.
type Quota struct{ MaxBurst, Count, Period int64 } // Period in ns

// rate turns q and cost into nanosecond GCRA terms. The emission interval is
// Period/Count rounded up, so the sustained rate never exceeds Count per
// Period (CL.THROTTLE truncates instead; the two agree whenever Count divides
// Period).
func (q Quota) rate(cost int64) (rate, error) {
	switch {
	case q.MaxBurst < 0:
		return rate{}, &Error{Text: "ERR max_burst must be a non-negative integer"}
	case q.Count <= 0:
		return rate{}, &Error{Text: "ERR count must be a positive integer"}
	case q.Period <= 0:
		return rate{}, &Error{Text: "ERR period must be positive"}
	case q.Count > q.Period:
		return rate{}, &Error{Text: "ERR count is too large for this period: at most one unit per nanosecond"}
	case cost < 0:
		return rate{}, &Error{Text: "ERR cost must be a non-negative integer"}
	}
	interval := ceilDiv(q.Period, q.Count)
	// tolerance = interval * (MaxBurst+1), summed so that MaxBurst+1 itself
	// never overflows.
	tolerance, ok := mulOK(interval, q.MaxBurst)
	if ok {
		tolerance, ok = addOK(tolerance, interval)
	}
	if !ok {
		return rate{}, &Error{Text: "ERR max_burst is too large for this count and period"}
	}
	inc, ok := mulOK(interval, cost)
	return rate{interval: interval, tolerance: tolerance, inc: inc, never: !ok}, nil
}

// addOK returns a+b and whether it fits in int64; a and b must be >= 0.
func addOK(a, b int64) (int64, bool) {
	s := a + b
	return s, s >= 0
}

// Throttle evaluates the native THROTTLE verb: GCRA in nanoseconds with no
// rounding of state. RetryAfter is milliseconds rounded up until the same
// call would pass, or -1 when allowed or when no wait admits the cost (more
// than an idle key holds, however large: an impossible cost is a denial); ResetAfter is milliseconds rounded up until the key is idle (0 when
// it is). A denied call, and a call with cost 0 (a probe), store nothing and
// describe the key as it stands.
func Throttle(now, tat int64, exists bool, q Quota, cost int64) (Result, error) {
	if now < 0 {
		return Result{}, errClock()
	}
	r, err := q.rate(cost)
	if err != nil {
		return Result{}, err
	}
	d := r.decide(now, tat, exists)
	limit := q.MaxBurst + 1
	res := Result{
		Limited:    d.limited,
		Limit:      limit,
		RetryAfter: -1,
		ResetAfter: ceilDiv(d.ttl, 1e6),
	}
	if next := r.tolerance - d.ttl; next > 0 {
		res.Remaining = min(next/r.interval, limit)
	}
	if d.limited && d.wait >= 0 {
		res.RetryAfter = ceilDiv(d.wait, 1e6)
	}
	if !d.limited && cost > 0 {
		res.Store, res.TAT, res.TTL = true, d.tat, d.ttl
	}
	return res, nil
}

// Refund gives back up to n units to a THROTTLE key at now: the TAT moves
// back n emission intervals, never before now (a key back at now is idle,
// and its state may go: Store with TTL 0). A missing or idle key holds
// nothing and stays as it is. The Result is the key's decision after the
// refund, as a probe would see it (never limited); refunded is the units
// given back, at most n (the last may be a fraction of an interval).
func Refund(now, tat int64, exists bool, q Quota, n int64) (res Result, refunded int64, err error) {
	if n < 0 {
		return Result{}, 0, &Error{Text: "ERR refund must be a non-negative integer"}
	}
	if now < 0 {
		return Result{}, 0, errClock()
	}
	r, err := q.rate(0)
	if err != nil {
		return Result{}, 0, err
	}
	if !exists || tat <= now || n == 0 {
		res, err = Throttle(now, tat, exists, q, 0)
		res.Limited, res.RetryAfter = false, -1 // a probe of a key past new parameters' limit is limited; a refund never is
		return res, 0, err
	}
	ahead := tat - now
	refunded = min(n, ceilDiv(ahead, r.interval))
	newTAT := now
	if back, ok := mulOK(n, r.interval); ok && back < ahead {
		newTAT = tat - back
	}
	res, err = Throttle(now, newTAT, newTAT > now, q, 0)
	if err != nil {
		return Result{}, 0, err
	}
	res.Limited, res.RetryAfter = false, -1
	res.Store, res.TAT, res.TTL = true, newTAT, newTAT-now
	return res, refunded, nil
}
