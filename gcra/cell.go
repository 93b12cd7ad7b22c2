package gcra

import "math"

// CellParams are CL.THROTTLE's arguments after the key.
type CellParams struct{ MaxBurst, Count, Period, Quantity int64 } // Period in whole seconds; Quantity defaults to 1

// redis-cell's error texts. It wraps every error as "Cell error: " + the
// Display of a GenericError, which adds "Store error: "; Redis sends that
// line without an "ERR" code because it starts with '-'.
const (
	cellPrefix   = "Cell error: Store error: "
	cellUsage    = cellPrefix + "Usage: cl.throttle <key> <max_burst> <count per period> <period> [<quantity>]"
	cellZeroRate = cellPrefix + "Zero rates are not supported"
	cellNotInt   = cellPrefix + "Couldn't parse as integer: "
)

// ParseCell reads CL.THROTTLE's arguments after the key:
// max_burst count_per_period period [quantity]. Any other count gets
// redis-cell's usage error, a non-integer its parse error naming the
// argument. It also checks the values as Cell does, so every error that does
// not depend on the stored state comes from here, before the key is touched.
func ParseCell(args [][]byte) (CellParams, error) {
	if len(args) != 3 && len(args) != 4 {
		return CellParams{}, &Error{Text: cellUsage}
	}
	var v [4]int64
	v[3] = 1
	for i, a := range args {
		n, ok := parseRustInt(a)
		if !ok {
			return CellParams{}, &Error{Text: cellNotInt + sanitize(a)}
		}
		v[i] = n
	}
	p := CellParams{MaxBurst: v[0], Count: v[1], Period: v[2], Quantity: v[3]}
	if _, err := p.rate(); err != nil {
		return CellParams{}, err
	}
	return p, nil
}

// rate turns p into nanosecond GCRA terms, or the error redis-cell gives, or
// a clear error where redis-cell would compute nonsense.
func (p CellParams) rate() (rate, error) {
	if p.Count == 0 || p.Period == 0 {
		return rate{}, &Error{Text: cellZeroRate}
	}
	switch {
	case p.MaxBurst < 0:
		return rate{}, &Error{Text: "ERR max_burst must not be negative"}
	case p.Count < 0:
		return rate{}, &Error{Text: "ERR count_per_period must not be negative"}
	case p.Period < 0:
		return rate{}, &Error{Text: "ERR period must not be negative"}
	case p.Quantity < 0:
		return rate{}, &Error{Text: "ERR quantity must not be negative"}
	case p.Period > math.MaxInt64/int64(1e9):
		return rate{}, &Error{Text: "ERR period is too large (at most 9223372036 seconds)"}
	}
	// redis-cell divides in float64 and truncates. Below 2^53 ns (104 days)
	// that is exactly trunc(period_ns / count); above it, it can be 1ns more,
	// and we match redis-cell rather than the exact quotient.
	interval := int64(float64(p.Period*1e9) / float64(p.Count))
	if interval == 0 {
		// More than one unit per nanosecond: redis-cell's rate is zero too.
		return rate{}, &Error{Text: cellZeroRate}
	}
	if p.MaxBurst == math.MaxInt64 {
		return rate{}, &Error{Text: "ERR max_burst is too large for this period and count_per_period"}
	}
	tolerance, ok := mulOK(interval, p.MaxBurst+1)
	if !ok {
		return rate{}, &Error{Text: "ERR max_burst is too large for this period and count_per_period"}
	}
	// redis-cell's release build wraps interval*quantity and answers nonsense; a
	// quantity past int64 in time is past max_burst+1, and denied as redis-cell denies
	// every quantity it can compute past the limit: retry_after -1.
	inc, ok := mulOK(interval, p.Quantity)
	return rate{interval: interval, tolerance: tolerance, inc: inc, never: !ok}, nil
}

// Cell evaluates CL.THROTTLE as redis-cell does, in nanoseconds. now and tat
// are Unix ns; exists is false for a new key. RetryAfter and ResetAfter are
// in seconds, rounded redis-cell's way: whole seconds, plus one when the
// remainder is at least a millisecond. Quantity 0 is a probe: the same reply,
// and nothing stored.
func Cell(now, tat int64, exists bool, p CellParams) (Result, error) {
	if now < 0 {
		return Result{}, errClock()
	}
	r, err := p.rate()
	if err != nil {
		return Result{}, err
	}
	d := r.decide(now, tat, exists)
	res := Result{
		Limited:    d.limited,
		Limit:      p.MaxBurst + 1,
		Remaining:  cellRemaining(r, d.ttl, p.MaxBurst+1),
		RetryAfter: -1,
		ResetAfter: cellSeconds(d.ttl),
	}
	if d.limited && d.wait >= 0 {
		res.RetryAfter = cellSeconds(d.wait)
	}
	if !d.limited && p.Quantity > 0 {
		res.Store, res.TAT, res.TTL = true, d.tat, d.ttl
	}
	return res, nil
}

// cellRemaining is redis-cell's remaining count: the room left in the
// tolerance, next = tolerance - ttl, divided by the emission interval in
// whole microseconds (each truncated toward zero, divided in float64), or 0
// when next <= -interval.
//
// Two departures, both where redis-cell's answer is meaningless: an interval
// under 1µs (more than a million units a second) is 0µs, and redis-cell would
// divide by zero and reply 9223372036854775807; we divide in nanoseconds
// instead. And the microsecond truncation can exceed the limit when the
// interval is not a whole number of microseconds (e.g. 1999ns, burst 10
// would give 19); we clamp to [0, limit].
func cellRemaining(r rate, ttl, limit int64) int64 {
	next := r.tolerance - ttl // both >= 0: no overflow
	if next <= -r.interval {
		return 0
	}
	var n int64
	if us := r.interval / 1000; us > 0 {
		n = int64(float64(next/1000) / float64(us))
	} else {
		n = next / r.interval
	}
	return min(max(n, 0), limit)
}

// cellSeconds rounds a non-negative duration in ns to redis-cell's seconds:
// the whole seconds, plus one when the sub-second part has at least one
// whole millisecond (so 1.0009s is 1 and 1.001s is 2).
func cellSeconds(ns int64) int64 {
	s := ns / 1e9
	if ns%1e9 >= 1e6 {
		s++
	}
	return s
}
