package algorithms

import "time"

// FixedWindow is WINDOW's limit: windows of Window ns aligned to multiples
// of Window since the Unix epoch, and at most Limit units admitted in each.
// The count starts again at 0 when a window begins, so up to 2*Limit units
// can pass in a short time across a boundary (Limit at the end of one
// window, Limit at the start of the next): the price of one counter per key.
// RetryAfter and ResetAfter run to the end of the current window.
//
// State (16 bytes): Num is the time of the last admission (Unix ns), Num2 the
// units admitted in the window that holds it. Expire is that window's end.
// A clock that steps back counts in the last admission's window.
//
// New parameters adapt the state and never refill it: the count stays and
// counts against the new Limit in the new window that holds the last
// admission (for the same Window, the window it was counted in).
//
// With a Calendar the windows are instead that calendar's periods in Loc
// (nil: UTC), and Window is not read: WINDOW key 10000 1mo TZ Europe/Berlin
// counts from the first of each month at midnight in Berlin, and its
// ResetAfter runs to the next first, however long the month is and whatever
// daylight saving time does in it. The state is the same: a key's windows
// may change between fixed and calendar ones, and the count carries over
// when its last admission lies in the window that holds now.
type FixedWindow struct {
	Limit, Window int64 // Window in ns
	Calendar      Calendar
	Loc           *time.Location
}

// Validate reports the first bad parameter.
func (p FixedWindow) Validate() error {
	switch {
	case p.Limit < 1:
		return ErrLimit
	case p.Calendar > Year:
		return ErrCalendar
	case p.Calendar == Fixed && !validDuration(p.Window):
		return ErrWindow
	}
	return nil
}

// Take counts cost units at now; see Algorithm. scratch is unused.
func (p FixedWindow) Take(now int64, st State, exists bool, cost int64, _ []byte) (Decision, State, bool, error) {
	err := p.Validate()
	if err == nil {
		err = checkCall(now, cost)
	}
	if err != nil {
		return Decision{}, st, false, err
	}
	t := now
	var count int64
	if exists {
		if !validTime(st.Num) || st.Num2 < 0 {
			return Decision{}, st, false, ErrCorrupt
		}
		t = max(now, st.Num)
	}
	var start, end int64
	if p.Calendar == Fixed { // bounds, by hand: a call costs a fixed window's call its time
		start = t - t%p.Window
		end = start + p.Window
	} else {
		start, end = p.Calendar.Bounds(t, p.Loc)
	}
	if exists && st.Num >= start {
		count = st.Num2
	}

	d := Decision{Limit: p.Limit, RetryAfter: -1}
	after := count
	switch {
	case cost > p.Limit:
		d.Limited = true
	case count > p.Limit-cost:
		d.Limited = true
		d.RetryAfter = end - now
	default:
		after = count + cost
	}
	d.Remaining = max(0, p.Limit-after)
	if after > 0 {
		d.ResetAfter = end - now
	}
	if d.Limited || cost == 0 {
		return d, st, false, nil
	}
	return d, State{Num: t, Num2: after, Expire: end}, true, nil
}

// bounds returns the start and the end of the window that holds t (Unix ns).
func (p FixedWindow) bounds(t int64) (start, end int64) {
	if p.Calendar != Fixed {
		return p.Calendar.Bounds(t, p.Loc)
	}
	start = t - t%p.Window
	return start, start + p.Window
}
