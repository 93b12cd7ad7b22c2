package gcra

import (
	"bytes"
	"math"
)

// Result is one evaluation of a GCRA limit: the reply and the state change.
type Result struct {
	Limited    bool
	Limit      int64 // max_burst + 1
	Remaining  int64
	RetryAfter int64 // in the verb's reply unit (see each function); -1 when allowed, or when the request can never fit
	ResetAfter int64 // in the verb's reply unit: until the key is idle again
	Store      bool  // true when the caller must write TAT (false when limited, and for probes that change nothing)
	TAT        int64 // the new theoretical arrival time, Unix ns, when Store
	TTL        int64 // ns: how long the stored state must live (the key expires after it); >0 when Store
}

// Error is an argument or arithmetic error whose Text is exactly what a
// client sees after the '-' of the RESP error line.
type Error struct{ Text string }

// Error returns Text.
func (e *Error) Error() string { return e.Text }

// errClock is returned for a clock before the Unix epoch: the arithmetic
// below relies on now >= 0 to stay within int64.
func errClock() error { return &Error{Text: "ERR clock is before the Unix epoch"} }

// rate is one limit in the time unit of a verb's arithmetic (ns or µs).
// GCRA keeps a single number per key, the theoretical arrival time (TAT): the
// moment the key would be idle again if every unit admitted so far had been
// spaced exactly one emission interval apart. A request of n units is
// admitted when, after adding n*interval to the TAT, the TAT lies no further
// than tolerance ahead of now.
type rate struct {
	// interval is the emission interval T: the time one unit occupies, the
	// period divided by the units allowed per period. In leaky-bucket terms
	// it is how often the bucket leaks one unit.
	interval int64
	// tolerance is the delay variation tolerance τ = T * limit: how far the
	// TAT may run ahead of now. In leaky-bucket terms it is the size of the
	// bucket; limit = max_burst + 1 units fit into an idle key at once.
	tolerance int64
	// inc is this request's cost in time, T * quantity: how far an admitted
	// request moves the TAT.
	inc int64
	// never: T * quantity overflows int64, so the request is larger than any
	// tolerance; it is denied for good, as one whose inc exceeds the tolerance.
	never bool
}

// decision is a rate evaluated against the stored TAT at now, all in the
// rate's time unit.
type decision struct {
	limited bool
	// wait is, when limited and inc <= tolerance, how long until the same
	// request would be admitted; -1 when it can never be.
	wait int64
	// ttl is how long until the key is idle again: after this request when
	// admitted, as stored when limited. Never negative.
	ttl int64
	// tat is the new TAT when admitted.
	tat int64
}

// decide runs GCRA. now must be >= 0 and the rate positive. A stored TAT in
// the past counts as idle (TAT = now), exactly as a key that expired would.
// A request that can never be admitted is denied with wait -1: one larger
// than an idle key holds, and one whose new TAT would pass math.MaxInt64 (a
// TAT the state cannot hold; the caller's input, never an error).
func (r rate) decide(now, tat int64, exists bool) decision {
	base := now
	if exists && tat > now {
		base = tat
	}
	ahead := base - now // >= 0, cannot overflow as now >= 0
	if r.never || r.inc > r.tolerance || base > math.MaxInt64-r.inc {
		return decision{limited: true, wait: -1, ttl: ahead}
	}
	// diff = now - (base + inc - tolerance), arranged so no step overflows.
	diff := (r.tolerance - r.inc) - ahead
	if diff < 0 {
		return decision{limited: true, wait: -diff, ttl: ahead}
	}
	newTAT := base + r.inc
	return decision{wait: -1, ttl: newTAT - now, tat: newTAT}
}

// mulOK returns a*b and whether it fits in int64; a and b must be >= 0.
func mulOK(a, b int64) (int64, bool) {
	if a != 0 && b > math.MaxInt64/a {
		return 0, false
	}
	return a * b, true
}

// ceilDiv is x/d rounded up, for x >= 0 and d > 0.
func ceilDiv(x, d int64) int64 {
	q := x / d
	if x%d != 0 {
		q++
	}
	return q
}

// sanitize makes client-supplied bytes safe inside an error line, the way
// Redis formats module errors: the text ends at the first NUL (it passes
// through a C string), trailing CR/LF are trimmed and any other CR or LF
// becomes a space.
func sanitize(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	b = bytes.TrimRight(b, "\r\n")
	out := make([]byte, len(b)) // the caller's buffer is not ours to edit
	for i, c := range b {
		if c == '\r' || c == '\n' {
			c = ' '
		}
		out[i] = c
	}
	return string(out)
}
