package algorithms

import "math"

// SlidingCounter is SLIDE's APPROX limit, the weighted two-window counter:
// windows of Window ns aligned to multiples of Window since the Unix epoch,
// a count for the current window (curr) and the one before it (prev), and
// the estimate of the units in the sliding window ending now
//
//	estimate = curr + prev * (1 - elapsed/Window)
//
// where elapsed is the time since the current window started: it assumes
// prev's units were spread evenly over their window. A request of cost units
// passes when estimate + cost <= Limit, compared exactly in integers
// ((curr+cost)*Window + prev*(Window-elapsed) <= Limit*Window); Remaining
// is floor(Limit - estimate). RetryAfter is the exact time the same request
// fits: later in this window once prev's weight has decayed enough, or, when
// curr + cost itself exceeds Limit, in the next window once curr (then prev)
// has decayed enough. The approximation admits more than Limit in a true
// sliding window when prev's units came late in their window, and at most
// 2*Limit in any Window (curr and prev both full); it never needs more than
// two counts.
//
// State (16 bytes): Num is the time of the last admission (Unix ns); Num2
// holds two 32-bit counts, the low half the units admitted in the window that
// holds Num, the high half those of the window before it. A key is idle two
// windows after the start of its last admission's window (Expire). A clock
// that steps back evaluates at the last admission's time: prev weighs no
// less, nothing moves to a window that has not begun.
//
// New parameters adapt the state and never refill it: the counts stay and
// are placed on the new window grid by the last admission's time, curr in
// the window that holds it and prev in the one before, which for the same
// Window is exactly where they were; a new window length moves curr as late
// as it can have happened. Limit must fit the 32-bit counts: at most
// 4294967295.
type SlidingCounter struct{ Limit, Window int64 } // Window in ns

// Validate reports the first bad parameter.
func (p SlidingCounter) Validate() error {
	switch {
	case p.Limit < 1:
		return ErrLimit
	case p.Limit > math.MaxUint32:
		return ErrApproxLimit
	case !validDuration(p.Window):
		return ErrWindow
	}
	return nil
}

// Take counts cost units at now; see Algorithm. ResetAfter is the time
// until both counts weigh nothing. scratch is unused.
func (p SlidingCounter) Take(now int64, st State, exists bool, cost int64, _ []byte) (Decision, State, bool, error) {
	err := p.Validate()
	if err == nil {
		err = checkCall(now, cost)
	}
	if err != nil {
		return Decision{}, st, false, err
	}
	w := p.Window
	t := now
	var curr, prev int64
	if exists {
		if !validTime(st.Num) {
			return Decision{}, st, false, ErrCorrupt
		}
		t = max(now, st.Num)
		curr, prev = int64(uint32(st.Num2)), int64(uint64(st.Num2)>>32)
		switch t/w - st.Num/w {
		case 0:
		case 1:
			curr, prev = 0, curr
		default:
			curr, prev = 0, 0
		}
	}
	start := t - t%w
	weight := w - (t - start) // prev weighs weight/w, in (0, 1]
	limitW := mul128(p.Limit, w)
	prevW := mul128(prev, weight)

	d := Decision{Limit: p.Limit, RetryAfter: -1}
	after := curr
	switch {
	case cost > p.Limit:
		d.Limited = true
	case limitW.less(mul128(curr+cost, w).add(prevW)):
		d.Limited = true
		d.RetryAfter = p.retry(start, curr, prev, cost) - now
	default:
		after = curr + cost
	}
	// Remaining = floor(Limit - estimate) = floor((Limit*w - after*w - prev*weight) / w).
	if usedW := mul128(after, w).add(prevW); usedW.less(limitW) {
		d.Remaining = limitW.sub(usedW).div(w)
	}
	var idle int64 // when both counts weigh nothing
	switch {
	case after > 0:
		idle = start + 2*w
	case prev > 0:
		idle = start + w
	}
	if idle > 0 {
		d.ResetAfter = idle - now
	}
	if d.Limited || cost == 0 {
		return d, st, false, nil
	}
	return d, State{Num: t, Num2: int64(uint64(prev)<<32 | uint64(after)), Expire: idle}, true, nil
}

// retry is the first time a request of cost <= Limit units fits, for a
// denied one in the window from start with counts curr and prev.
func (p SlidingCounter) retry(start, curr, prev, cost int64) int64 {
	w := p.Window
	if room := p.Limit - cost - curr; room >= 0 {
		// In this window, at elapsed e: prev*(w-e) <= room*w, that is
		// e >= w - floor(room*w/prev). prev > 0, or it would have fitted; at
		// e = w (room >= 0) it fits in the next window.
		return start + w - mulDiv(room, w, prev)
	}
	// In the next window, where curr is prev: curr*(w-e) <= (Limit-cost)*w.
	// curr > Limit - cost >= 0.
	return start + w + max(0, w-mulDiv(p.Limit-cost, w, curr))
}
