package gcra

import (
	"math"
	"strconv"
)

// parseRustInt reads b the way Rust's i64::from_str does (redis-cell parses
// its arguments so): an optional '+' or '-', then one or more ASCII digits,
// nothing else, within int64. Leading zeros are fine.
func parseRustInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	return accumulate(b, neg)
}

// parseRedisInt reads b the way Redis's string2ll does: the canonical
// spelling only. "0", or an optional '-' and a digit 1-9 followed by digits,
// within int64: no '+', no leading zeros, no "-0", no spaces.
func parseRedisInt(b []byte) (int64, bool) {
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	return accumulate(b, neg)
}

// accumulate turns one or more ASCII digits into an int64, negated when neg,
// failing on anything else and on overflow.
func accumulate(b []byte, neg bool) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (math.MaxUint64-9)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(-v), true // -(1<<63) wraps to math.MinInt64 as wanted
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// parseRedisFloat reads b the way Redis's getDoubleFromObject does: the
// whole string must be a decimal floating-point number (sign, digits,
// optional fraction, optional exponent) or inf/infinity in any case, with
// nothing before or after it. NaN is refused, and so is a finite number that
// overflows to infinity or underflows to zero; subnormals are accepted.
func parseRedisFloat(b []byte) (float64, bool) {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	if rest := b[i:]; asciiEqualFold(rest, "inf") || asciiEqualFold(rest, "infinity") {
		if b[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	digits, nonzero := 0, false
	for ; i < len(b) && isDigit(b[i]); i++ {
		digits++
		nonzero = nonzero || b[i] != '0'
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && isDigit(b[i]); i++ {
			digits++
			nonzero = nonzero || b[i] != '0'
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for ; i < len(b) && isDigit(b[i]); i++ {
		}
		if i == start {
			return 0, false
		}
	}
	if i != len(b) {
		return 0, false
	}
	// The syntax is now plain decimal, which strconv reads with correct
	// rounding, as strtod does. The conversion does not escape, so it does
	// not allocate for short arguments.
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(f, 0) || (f == 0 && nonzero) {
		return 0, false
	}
	return f, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// asciiEqualFold reports whether b equals the lower-case ASCII word s,
// ignoring ASCII case only (as C's strcasecmp in the C locale; unlike
// bytes.EqualFold, no Unicode folding such as the Kelvin sign to 'k').
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
