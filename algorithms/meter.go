package algorithms

import "math/bits"

// meter is the arithmetic TokenBucket and LeakyBucket share: a whole number
// of units (tokens in the bucket, units waiting in the queue) that a
// continuous rate of count units per period changes by one unit at a time,
// exactly, in integers.
//
// The rate is kept in lowest terms: with g = gcd(count, period), exactly
// units = count/g units tick in every step = period/g ns. A key's ticks fall
// at anchor + k*step/units for k = 1, 2, ... (instants between two ns are
// fine): x ns after the anchor, floor(x*units/step) units have ticked. So
// half a period ticks half the units, a third of a period a third (rounded
// down to whole units), and no rounding is ever carried from one call to the
// next. A bucket that is full (token) or empty (leaky) has no phase: its
// anchor is the time it was last seen so, and its next unit ticks a whole
// step/units later, as a continuous bucket's would.
//
// The state keeps the phase as lag = (t - anchor) mod step, a time in
// [0, step): moving the anchor by whole steps changes no tick after t, and
// a time means the same under any parameters. That is what lets new
// parameters adapt the state and never refill it: at the time of the last
// call the key holds exactly the units it held (clamped to the new capacity),
// and from then on ticks follow the new rate from the same anchor.
type meter struct {
	units int64 // units per step: count / gcd(count, period)
	step  int64 // ns per step: period / gcd(count, period)
	width uint  // bits of lag in the packed word: bits.Len64(step-1)
}

// The packed word (State.Num) of TokenBucket and LeakyBucket:
//
//	bit 63      0
//	bits 57-62  w, the width of lag (0..57)
//	bits w-56   n, whole units at the time of the last call (tokens or waiting units)
//	bits 0..w-1 lag, ns since the anchor modulo step
//
// The width travels with the word so that a call with other parameters
// still decodes it. Both n and lag fit when bits.Len64(capacity) + w <= 57,
// roughly capacity * step < 2^57: any capacity below 2^27 with 100 per
// minute or 7 per second (steps of 0.6s and 1s), below 2^57 with 10^9 per
// second (a step of 1ns).
const packBits = 57

// newMeter returns the meter of count units per period ns for a bucket of
// capacity units, all positive and period <= MaxDuration; ok is false when
// the packed word cannot hold capacity or the bucket takes longer than
// MaxDuration to fill or drain.
func newMeter(capacity, count, period int64) (m meter, ok bool) {
	g := gcd(count, period)
	m = meter{units: count / g, step: period / g}
	m.width = uint(bits.Len64(uint64(m.step - 1)))
	if uint(bits.Len64(uint64(capacity)))+m.width > packBits {
		return meter{}, false
	}
	// From phase 0, capacity ticks take ceil(capacity*step/units) ns.
	if mulDivCeil(capacity, m.step, m.units) > MaxDuration {
		return meter{}, false
	}
	return m, true
}

// pack is the word holding n whole units and lag, n < 2^(57-width), lag < step.
func (m meter) pack(n, lag int64) int64 {
	return int64(uint64(m.width)<<packBits | uint64(n)<<m.width | uint64(lag))
}

// unpack decodes a word written by pack under any parameters.
func unpack(num int64) (n, lag int64, ok bool) {
	w := uint64(num) >> packBits
	if num < 0 || w > packBits {
		return 0, 0, false
	}
	body := uint64(num) & (1<<packBits - 1)
	return int64(body >> w), int64(body & (1<<w - 1)), true
}

// advance moves a phase lag forward by d >= 0 ns: it returns how many
// units tick in those d ns (saturated at math.MaxInt64) and the new lag.
func (m meter) advance(lag, d int64) (ticks, next int64) {
	lag %= m.step
	// Ticked since the anchor: floor((lag+d)*units/step). Subtract the
	// floor(lag*units/step) already counted: what remains is
	// floor((a + d*units)/step) with a = lag*units mod step, the numerator of
	// the fraction of a unit under way.
	a := mulMod(lag, m.units, m.step)
	hi, lo := bits.Mul64(uint64(d), uint64(m.units))
	lo, carry := bits.Add64(lo, uint64(a), 0)
	return div128(hi+carry, lo, m.step), (lag + d%m.step) % m.step
}

// until is the time from a moment with phase lag until k >= 1 more units
// have ticked: the least x with floor((a + x*units)/step) >= k, that is
// ceil((k*step - a)/units). Saturated at math.MaxInt64.
func (m meter) until(k, lag int64) int64 {
	a := mulMod(lag%m.step, m.units, m.step)
	hi, lo := bits.Mul64(uint64(k), uint64(m.step))
	lo, borrow := bits.Sub64(lo, uint64(a), 0) // a < step <= k*step
	hi -= borrow
	lo, carry := bits.Add64(lo, uint64(m.units-1), 0)
	return div128(hi+carry, lo, m.units)
}
