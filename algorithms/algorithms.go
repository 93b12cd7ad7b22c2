package algorithms

import (
	"errors"
	"math"
	"math/bits"
)

// Decision is the outcome of one request against a limit. Times are in ns; the server rounds them up to ms.
type Decision struct {
	Limited    bool
	Limit      int64 // the most units that can pass at once from an idle key
	Remaining  int64 // units that can pass right after this call, in [0, Limit]
	RetryAfter int64 // ns until the same call can succeed when limited; -1 when allowed, or when the cost can never fit
	ResetAfter int64 // ns until the key is idle again; 0 when idle
	Delay      int64 // LeakyBucket only: ns this caller should wait before proceeding so the downstream sees a steady rate
}

// State is an algorithm's state as the keyspace holds it: two words and, for
// variable-size states (sliding log, concurrency holders), an encoding. Each
// algorithm documents its layout where its parameters are declared. Take
// never reads Expire: it is an output, for the keyspace's expiry.
type State struct {
	Num, Num2 int64
	Bytes     []byte
	Expire    int64 // Unix ns after which the state is idle and the key may be deleted (0: delete now / nothing to keep)
}

// Algorithm is what every limit in this package provides, so that a server
// can hold any of them (ALLOF, policies). The value is the verb's parameters.
type Algorithm interface {
	// Validate reports the first bad parameter, naming it. Take makes the
	// same checks, so calling Validate first is only for early errors.
	Validate() error
	// Take evaluates a request of cost units at now (Unix ns) against the
	// key's state st (exists false: a new key, st ignored). It returns the
	// decision and, when store is true, the state to keep, with Expire set.
	// A denied call, a call with cost 0 (a probe) and an error never store,
	// and return st itself. A variable-size state builds its Bytes by
	// appending to scratch[:0]: scratch must not overlap st.Bytes.
	Take(now int64, st State, exists bool, cost int64, scratch []byte) (d Decision, next State, store bool, err error)
}

const (
	// MaxTime is the latest clock reading accepted, 2^62 ns after the
	// epoch (in 2116): every time plus two durations stays within int64.
	MaxTime = 1 << 62
	// MaxDuration is the longest period, window or lease, and the longest
	// a token or leaky bucket may take to fill or drain: 73 years of 365
	// days, just under 2^61 ns.
	MaxDuration = 73 * 365 * 86400 * 1_000_000_000
	// MaxIDLength is the longest Concurrency id, in bytes.
	MaxIDLength = 256
	// MaxHolders is the most ids one Concurrency key holds at once.
	MaxHolders = 1 << 16
)

var (
	// ErrClock is a clock reading before the epoch or at or after MaxTime.
	ErrClock = errors.New("clock is out of range (before 1970 or after 2116)")
	// ErrCost is a negative cost.
	ErrCost = errors.New("cost must not be negative")
	// ErrCorrupt is a stored state that does not decode. It is never
	// treated as empty, which would hand out a fresh quota: the key must be
	// deleted (DEL) to be used again.
	ErrCorrupt = errors.New("key holds a corrupt rate-limit state (delete the key to reset it)")
	// ErrCapacity is a TokenBucket or LeakyBucket capacity below 1 or above 2^51-1.
	ErrCapacity = errors.New("capacity must be between 1 and 2251799813685247")
	// ErrRefill is a TokenBucket refill below 1.
	ErrRefill = errors.New("refill must be at least 1")
	// ErrLeak is a LeakyBucket leak below 1.
	ErrLeak = errors.New("leak must be at least 1")
	// ErrPeriod is a period outside (0, MaxDuration].
	ErrPeriod = errors.New("period must be positive and at most 73 years")
	// ErrRefillCapacity is a TokenBucket that takes more than MaxDuration to
	// fill from empty.
	ErrRefillCapacity = errors.New("capacity is too large for this refill and period: it would take more than 73 years to fill")
	// ErrLeakCapacity is a LeakyBucket that takes more than MaxDuration to
	// drain when full.
	ErrLeakCapacity = errors.New("capacity is too large for this leak and period: it would take more than 73 years to drain")
	// ErrLimit is a limit below 1.
	ErrLimit = errors.New("limit must be at least 1")
	// ErrApproxLimit is a SlidingCounter limit that its 32-bit counts cannot hold.
	ErrApproxLimit = errors.New("limit must be at most 4294967295 with APPROX")
	// ErrWindow is a window outside (0, MaxDuration].
	ErrWindow = errors.New("window must be positive and at most 73 years")
	// ErrCalendar is a FixedWindow Calendar that is none of Fixed, Day, Week, Month, Year.
	ErrCalendar = errors.New("window's calendar period must be 1d, 1w, 1mo or 1y")
	// ErrLease is a lease outside (0, MaxDuration].
	ErrLease = errors.New("lease must be positive and at most 73 years")
	// ErrIDLength is a Concurrency id longer than MaxIDLength.
	ErrIDLength = errors.New("id must be at most 256 bytes")
	// ErrHolders is an acquire that would make more than MaxHolders ids hold
	// slots of one key.
	ErrHolders = errors.New("too many holders: at most 65536 ids may hold slots of one key")
)

// checkCall checks the arguments every Take shares.
func checkCall(now, cost int64) error {
	switch {
	case now < 0 || now >= MaxTime:
		return ErrClock
	case cost < 0:
		return ErrCost
	}
	return nil
}

// validDuration reports whether d is a usable period, window or lease.
func validDuration(d int64) bool { return d > 0 && d <= MaxDuration }

// validTime reports whether a stored time is one this package could have written.
func validTime(t int64) bool { return t >= 0 && t < MaxTime }

// Times in variable-size states are whole microseconds since the epoch,
// rounded up, so that a state only ever counts an event for longer, never
// for less time than exact arithmetic would.
const (
	usNs = 1000
	// maxTimeUs is the latest admission time a SlidingLog holds: now rounded up.
	maxTimeUs = (MaxTime + usNs - 1) / usNs
	// maxExpiryUs is the latest lease expiry a Concurrency key holds.
	maxExpiryUs = (MaxTime + MaxDuration + usNs - 1) / usNs
)

// ceilUs is t ns rounded up to whole µs, for 0 <= t < MaxTime.
func ceilUs(t int64) int64 { return (t + usNs - 1) / usNs }

// addSat is a+b for a, b >= 0, saturated at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulDiv is floor(a*b/c) for a, b >= 0 and c > 0, computed in 128 bits and
// saturated at math.MaxInt64.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return div128(hi, lo, c)
}

// mulDivCeil is ceil(a*b/c) for a, b >= 0 and c > 0, saturated at math.MaxInt64.
func mulDivCeil(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	lo, carry := bits.Add64(lo, uint64(c-1), 0)
	return div128(hi+carry, lo, c)
}

// div128 is floor((hi<<64 | lo) / c) for c > 0, saturated at math.MaxInt64.
func div128(hi, lo uint64, c int64) int64 {
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(c))
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// mulMod is a*b mod c for a, b >= 0 and c > 0.
func mulMod(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	_, r := bits.Div64(hi%uint64(c), lo, uint64(c))
	return int64(r)
}

// u128 is an unsigned 128-bit integer, for exact products of counts and times.
type u128 struct{ hi, lo uint64 }

// mul128 is a*b for a, b >= 0.
func mul128(a, b int64) u128 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return u128{hi, lo}
}

// add is x+y; the operands here stay far below 2^127.
func (x u128) add(y u128) u128 {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	return u128{x.hi + y.hi + c, lo}
}

// sub is x-y for x >= y.
func (x u128) sub(y u128) u128 {
	lo, b := bits.Sub64(x.lo, y.lo, 0)
	return u128{x.hi - y.hi - b, lo}
}

// less reports whether x < y.
func (x u128) less(y u128) bool { return x.hi < y.hi || x.hi == y.hi && x.lo < y.lo }

// div is floor(x/c) for c > 0, saturated at math.MaxInt64.
func (x u128) div(c int64) int64 { return div128(x.hi, x.lo, c) }

// lessProduct reports whether a*b < c*d for non-negative operands, exactly.
func lessProduct(a, b, c, d int64) bool { return mul128(a, b).less(mul128(c, d)) }

// gcd is the greatest common divisor of a, b > 0.
func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
