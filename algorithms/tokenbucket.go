package algorithms

// TokenBucket is TOKENBUCKET's limit: a bucket of Capacity tokens that starts
// full and refills Refill tokens per Period ns, continuously. A request of
// cost units passes when the bucket holds at least cost whole tokens, and
// takes them; Remaining is the whole tokens left.
//
// The refill is exact in integers (see meter): Refill tokens tick evenly
// over each Period from the moment the bucket was last full, so half a
// period refills half of Refill (rounded down to whole tokens) and nothing is
// lost or gained from one call to the next. A full bucket stops refilling;
// the next token after a take from full comes a whole Period/Refill later.
// Over any interval of length L the bucket admits at most
// Capacity + floor(L*Refill/Period) tokens.
//
// State (16 bytes): Num is meter's packed word, the whole tokens at the last
// call and the refill's phase; Num2 is the time of that call (Unix ns).
// Expire is the time the bucket is full again: a missing key is a full
// bucket. A clock that steps back counts from the stored time: the bucket
// never refills for time that has not passed since its last call.
//
// New parameters adapt the state and never refill it: the bucket keeps the
// whole tokens it had (min(tokens, Capacity) when the capacity shrinks, no
// more when it grows) and the refill continues at the new rate from the last
// call. Capacity is at most 2^51-1 and takes at most MaxDuration to fill
// from empty (Capacity*Period/Refill); the refill is exact in the state
// whenever the fill time times Refill/gcd(Refill, Period) is below about
// 2^51 ns, and a hair slow, never fast, beyond (see meter's packed word).
type TokenBucket struct{ Capacity, Refill, Period int64 } // Period in ns

// Validate reports the first bad parameter.
func (p TokenBucket) Validate() error {
	_, err := p.meter()
	return err
}

func (p TokenBucket) meter() (meter, error) {
	switch {
	case p.Capacity < 1 || p.Capacity > maxUnits:
		return meter{}, ErrCapacity
	case p.Refill < 1:
		return meter{}, ErrRefill
	case !validDuration(p.Period):
		return meter{}, ErrPeriod
	}
	m, ok := newMeter(p.Capacity, p.Refill, p.Period)
	if !ok {
		return meter{}, ErrRefillCapacity
	}
	return m, nil
}

// Take takes cost tokens at now; see Algorithm. RetryAfter is the time until
// the bucket holds cost tokens, -1 when cost > Capacity; ResetAfter the time
// until it is full. scratch is unused.
func (p TokenBucket) Take(now int64, st State, exists bool, cost int64, _ []byte) (Decision, State, bool, error) {
	m, err := p.meter()
	if err == nil {
		err = checkCall(now, cost)
	}
	if err != nil {
		return Decision{}, st, false, err
	}
	// t is the time of this evaluation: now, or the stored time when the
	// clock has stepped back. tokens and lag are the bucket at t.
	t, tokens, lag := now, p.Capacity, int64(0)
	if exists {
		n, l, ok := unpack(st.Num)
		if !ok || !validTime(st.Num2) {
			return Decision{}, st, false, ErrCorrupt
		}
		t = max(now, st.Num2)
		ticks, next := m.advance(l, t-st.Num2)
		tokens, lag = addSat(n, ticks), next
		if tokens >= p.Capacity {
			tokens, lag = p.Capacity, 0 // full: no phase
		}
	}

	d := Decision{Limit: p.Capacity, RetryAfter: -1}
	after := tokens
	switch {
	case cost > p.Capacity:
		d.Limited = true
	case cost > tokens:
		d.Limited = true
		d.RetryAfter = t - now + m.until(cost-tokens, lag)
	default:
		after = tokens - cost
	}
	d.Remaining = after
	var full int64 // ns from t until the bucket is full
	if after < p.Capacity {
		full = m.until(p.Capacity-after, lag)
		d.ResetAfter = t - now + full
	}
	if d.Limited || cost == 0 {
		return d, st, false, nil
	}
	return d, State{Num: pack(after, lag), Num2: t, Expire: t + full}, true, nil
}
