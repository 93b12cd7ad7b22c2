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
}

// The packed word (State.Num) of TokenBucket and LeakyBucket holds n, the
// whole units at the time of the last call (tokens, or units waiting), and
// the phase lag, in 63 bits:
//
//	bits 57-62  b, the bits of n (0..51)
//	bits 51-56  k, the bits of lag dropped (0..61)
//	bits 0-50   n<<(51-b) | lag>>k
//
// The widths travel with the word so that a call with other parameters
// still decodes it. The phase is exact (k = 0) while bits(n) + bits(lag)
// <= 51, so always when bits(capacity) + bits(step-1) <= 51: roughly while
// the time to fill (or drain) the bucket times count/gcd(count, period) is
// below 2^51 ns. That covers every count that divides the period in ns
// (100 per minute, 1000 per hour, 10^9 per second) with a fill time below
// 26 days, and 7 per second below 3.7 days. Beyond that the low k bits of
// lag are dropped, which moves the anchor later by less than 2^k ns at each
// call that stores: the rate runs slightly slow, never fast. Capacity 5000
// at 1 per day (bits 13 + 47) keeps the phase to 512ns, a token a day.
const (
	packBits = 51
	// maxUnits is the largest capacity the packed word holds.
	maxUnits = 1<<packBits - 1
)

// newMeter returns the meter of count units per period ns for a bucket of
// capacity units, all positive, capacity <= maxUnits and period <=
// MaxDuration; ok is false when the bucket takes longer than MaxDuration to
// fill or drain.
func newMeter(capacity, count, period int64) (m meter, ok bool) {
	g := gcd(count, period)
	m = meter{units: count / g, step: period / g}
	// From phase 0, capacity ticks take ceil(capacity*step/units) ns.
	if mulDivCeil(capacity, m.step, m.units) > MaxDuration {
		return meter{}, false
	}
	return m, true
}

// pack is the word holding n whole units, 0 <= n <= maxUnits, and the phase
// lag, 0 <= lag < step, rounded down to what fits.
func pack(n, lag int64) int64 {
	b := uint(bits.Len64(uint64(n)))
	f := packBits - b // bits left for lag
	k := uint(max(0, bits.Len64(uint64(lag))-int(f)))
	return int64(uint64(b)<<57 | uint64(k)<<packBits | uint64(n)<<f | uint64(lag)>>k)
}

// unpack decodes a word written by pack under any parameters.
func unpack(num int64) (n, lag int64, ok bool) {
	b, k := uint(uint64(num)>>57), uint(uint64(num)>>packBits&63)
	if num < 0 || b > packBits {
		return 0, 0, false
	}
	f := packBits - b
	body := uint64(num) & maxUnits
	n, field := int64(body>>f), body&(1<<f-1)
	if bits.Len64(field)+int(k) > 62 {
		return 0, 0, false
	}
	return n, int64(field << k), true
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
