package algorithms

// LeakyBucket is LEAKYBUCKET's limit, the leaky bucket as a queue (a meter
// in front of a downstream that takes Leak units per Period): a request of
// cost units passes while at most Capacity units wait, counting its own, and
// the queue drains Leak units per Period ns, continuously (exactly in
// integers, see meter). A unit waits from its admission until it drains;
// Remaining is Capacity minus the units waiting after this call.
//
// Delay is what makes it a queue rather than a second token bucket: the time
// until the units ahead of this caller have drained. A caller that waits
// Delay before proceeding hands its units to the downstream no faster than
// Leak per Period: one unit after another, Period/Leak apart, however bursty
// the arrivals. The first caller at an empty queue has Delay 0; the next,
// arriving at once with cost 1, waits Period/Leak; and so on, up to Capacity
// units ahead. A denied call has Delay 0.
//
// State (16 bytes): Num is meter's packed word, the units waiting at the last
// call and the drain's phase; Num2 is the time of that call (Unix ns).
// Expire is the time the queue is empty. A clock that steps back counts from
// the stored time: the queue never drains for time that has not passed.
//
// New parameters adapt the state and never refill it: the units waiting
// keep waiting (a queue longer than a shrunk Capacity admits nothing until
// it has drained below it) and drain at the new rate from the last call.
// Capacity is at most 2^51-1 and takes at most MaxDuration to drain when
// full (Capacity*Period/Leak); the drain is exact in the state whenever the
// drain time times Leak/gcd(Leak, Period) is below about 2^51 ns, and a hair
// slow, never fast, beyond (see meter's packed word).
type LeakyBucket struct{ Capacity, Leak, Period int64 } // Period in ns

// Validate reports the first bad parameter.
func (p LeakyBucket) Validate() error {
	_, err := p.meter()
	return err
}

func (p LeakyBucket) meter() (meter, error) {
	switch {
	case p.Capacity < 1 || p.Capacity > maxUnits:
		return meter{}, ErrCapacity
	case p.Leak < 1:
		return meter{}, ErrLeak
	case !validDuration(p.Period):
		return meter{}, ErrPeriod
	}
	m, ok := newMeter(p.Capacity, p.Leak, p.Period)
	if !ok {
		return meter{}, ErrLeakCapacity
	}
	return m, nil
}

// Take queues cost units at now; see Algorithm. RetryAfter is the time until
// cost units fit, -1 when cost > Capacity; ResetAfter the time until the
// queue is empty; Delay the time until the units ahead have drained. scratch
// is unused.
func (p LeakyBucket) Take(now int64, st State, exists bool, cost int64, _ []byte) (Decision, State, bool, error) {
	m, err := p.meter()
	if err == nil {
		err = checkCall(now, cost)
	}
	if err != nil {
		return Decision{}, st, false, err
	}
	// t is the time of this evaluation: now, or the stored time when the
	// clock has stepped back. waiting and lag are the queue at t.
	t, waiting, lag := now, int64(0), int64(0)
	if exists {
		n, l, ok := unpack(st.Num)
		if !ok || !validTime(st.Num2) {
			return Decision{}, st, false, ErrCorrupt
		}
		t = max(now, st.Num2)
		ticks, next := m.advance(l, t-st.Num2)
		if ticks < n {
			waiting, lag = n-ticks, next
		} // else empty: no phase
	}

	d := Decision{Limit: p.Capacity, RetryAfter: -1}
	after := waiting
	switch {
	case cost > p.Capacity:
		d.Limited = true
	case waiting > p.Capacity-cost:
		d.Limited = true
		d.RetryAfter = addSat(t-now, m.until(waiting-(p.Capacity-cost), lag))
	default:
		after = waiting + cost
		if waiting > 0 {
			d.Delay = t - now + m.until(waiting, lag)
		}
	}
	d.Remaining = max(0, p.Capacity-after)
	var empty int64 // ns from t until the queue is empty
	if after > 0 {
		empty = m.until(after, lag)
		d.ResetAfter = addSat(t-now, empty)
	}
	if d.Limited || cost == 0 {
		return d, st, false, nil
	}
	return d, State{Num: pack(after, lag), Num2: t, Expire: t + empty}, true, nil
}
