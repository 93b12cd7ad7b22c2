package collection

import (
	"bytes"
	"math/big"
)

// INCRBYFLOAT and HINCRBYFLOAT compute in C's long double, on x86-64 the x87's 80-bit
// format: a 64-bit mantissa, exponents to 2^16383, denormals down to 2^-16445. A float64
// gives other bytes (10.5 + 0.1 is 10.6 in long double, 10.59999999999999964 in float64),
// so these functions emulate it with big.Float at 64 bits of precision, rounding to nearest
// even as the x87 and glibc's strtold do. A big.Float has no denormals: a number below
// 2^-16382 keeps 64 bits here where the x87 keeps fewer, which no reply shows, since
// AppendLongDouble writes every such number as "0".

const (
	// ldMaxExp is big.Float's exponent (mantissa in [0.5, 1)) of the largest finite long double.
	ldMaxExp = 16384
	// ldZeroExp is big.Float's exponent of 2^-16446, half the least denormal: strtold rounds
	// a number up to it to zero, and Redis refuses such a number.
	ldZeroExp = -16445
	// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS: a longer string is not a number
	// to it.
	maxLongDoubleChars = 5 * 1024
)

// ParseLongDouble parses s as Redis 7.0's string2ld does with glibc's strtold: decimal
// ("1.5", ".5", "5.", "1e-3", "+2"), hexadecimal ("0x1p3"), "inf" and "infinity" in any
// case, rounded to a long double. It refuses what Redis refuses: an empty string or one of
// 5120 bytes or more, a leading blank, a NUL or anything left after the number, "nan", and
// a number that rounds to an infinity or, not being zero, to zero. An infinity is returned
// as one (big.Float.IsInf); callers decide whether it is allowed.
func ParseLongDouble(s []byte) (*big.Float, bool) {
	if len(s) == 0 || len(s) >= maxLongDoubleChars || isSpace(s[0]) || bytes.IndexByte(s, 0) >= 0 {
		return nil, false
	}
	neg := s[0] == '-'
	if s[0] == '-' || s[0] == '+' {
		s = s[1:]
	}
	x := newLongDouble()
	var ok bool
	switch {
	case equalFoldASCII(s, "inf") || equalFoldASCII(s, "infinity"):
		x.SetInf(false)
		ok = true
	case len(s) >= 2 && s[0] == '0' && s[1]|0x20 == 'x':
		ok = parseHexLongDouble(x, s[2:])
	default:
		ok = parseDecimalLongDouble(x, s)
	}
	if !ok {
		return nil, false
	}
	if neg {
		x.Neg(x)
	}
	return x, true
}

// AddLongDouble returns x + y rounded to a long double, false when the sum is infinite or
// not a number (an infinite operand, or an overflow).
func AddLongDouble(x, y *big.Float) (*big.Float, bool) {
	if x.IsInf() || y.IsInf() {
		return nil, false
	}
	z := newLongDouble().Add(x, y)
	return z, z.MantExp(nil) <= ldMaxExp
}

// AppendLongDouble appends x as Redis's ld2string writes it for INCRBYFLOAT and
// HINCRBYFLOAT (LD_STR_HUMAN): printf's "%.17Lf" with the trailing zeros after the point
// and then a trailing point removed, "-0" written as "0", and "inf" or "-inf".
func AppendLongDouble(dst []byte, x *big.Float) []byte {
	if x.IsInf() {
		if x.Sign() < 0 {
			return append(dst, "-inf"...)
		}
		return append(dst, "inf"...)
	}
	start := len(dst)
	dst = x.Append(dst, 'f', 17) // the exact value rounded half to even, as glibc's printf
	dst = bytes.TrimRight(dst, "0")
	dst = bytes.TrimSuffix(dst, []byte("."))
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}

// LongDoubleFromInt returns n as a long double, exactly (it has 64 bits of mantissa).
func LongDoubleFromInt(n int64) *big.Float { return newLongDouble().SetInt64(n) }

func newLongDouble() *big.Float { return new(big.Float).SetPrec(64).SetMode(big.ToNearestEven) }

// parseDecimalLongDouble sets x to the decimal number s (digits, an optional point and
// more digits, an optional exponent), rounded, and reports whether strtold takes all of s
// and Redis the number.
func parseDecimalLongDouble(x *big.Float, s []byte) bool {
	intPart, s := leadingDigits(s, 10)
	var frac []byte
	if len(s) > 0 && s[0] == '.' {
		frac, s = leadingDigits(s[1:], 10)
	}
	if len(intPart)+len(frac) == 0 {
		return false
	}
	exp, s, ok := exponent(s, 'e')
	if !ok || len(s) > 0 {
		return false
	}
	digits := bytes.TrimLeft(append(append([]byte(nil), intPart...), frac...), "0")
	if len(digits) == 0 {
		x.SetInt64(0)
		return true
	}
	// The number is digits * 10^exp10, and at least 10^(len(digits)-1+exp10).
	exp10 := exp - int64(len(frac))
	switch {
	case int64(len(digits))-1+exp10 > 4932+1:
		return false // above 10^4933, beyond the largest long double, 1.19e4932
	case int64(len(digits))+exp10 < -4951-1:
		return false // below 10^-4952, under half the least denormal, 1.8e-4951
	}
	m, _ := new(big.Int).SetString(string(digits), 10)
	if exp10 >= 0 {
		x.SetInt(m.Mul(m, new(big.Int).Exp(big.NewInt(10), big.NewInt(exp10), nil)))
		return x.MantExp(nil) <= ldMaxExp
	}
	r := new(big.Rat).SetFrac(m, new(big.Int).Exp(big.NewInt(10), big.NewInt(-exp10), nil))
	x.SetRat(r)
	if x.MantExp(nil) > ldZeroExp {
		return x.MantExp(nil) <= ldMaxExp
	}
	return r.Cmp(halfLeastDenormal()) > 0
}

// parseHexLongDouble sets x to the hexadecimal number s (after "0x": hex digits, an
// optional point and more, an optional binary exponent "p-3"), rounded, and reports whether
// strtold takes all of s and Redis the number.
func parseHexLongDouble(x *big.Float, s []byte) bool {
	intPart, s := leadingDigits(s, 16)
	var frac []byte
	if len(s) > 0 && s[0] == '.' {
		frac, s = leadingDigits(s[1:], 16)
	}
	if len(intPart)+len(frac) == 0 {
		return false
	}
	exp, s, ok := exponent(s, 'p')
	if !ok || len(s) > 0 {
		return false
	}
	m, _ := new(big.Int).SetString(string(intPart)+string(frac), 16)
	if m.Sign() == 0 {
		x.SetInt64(0)
		return true
	}
	// The number is m * 2^exp2, in [2^(e-1), 2^e).
	exp2 := exp - 4*int64(len(frac))
	e := int64(m.BitLen()) + exp2
	switch {
	case e > ldMaxExp:
		return false
	case e < ldZeroExp:
		return false
	case e == ldZeroExp && m.BitLen()-1 == int(m.TrailingZeroBits()):
		return false // exactly half the least denormal: rounds to zero
	}
	x.SetInt(m)
	x.SetMantExp(x, int(exp2))
	return x.MantExp(nil) <= ldMaxExp
}

// halfLeastDenormal is 2^-16446: strtold rounds a positive number up to it to zero.
func halfLeastDenormal() *big.Rat {
	return new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), 16446))
}

// leadingDigits splits s after its leading digits in base 10 or 16.
func leadingDigits(s []byte, base int) (digits, rest []byte) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || base == 16 && (s[i]|0x20 >= 'a' && s[i]|0x20 <= 'f')) {
		i++
	}
	return s[:i], s[i:]
}

// exponent reads an exponent "e-12" (or "p-12") at the start of s, 0 when there is none.
// ok is false when the marker is there without digits: strtold would stop before it. A
// huge exponent is clamped: the number is then out of range either way.
func exponent(s []byte, marker byte) (exp int64, rest []byte, ok bool) {
	if len(s) == 0 || s[0]|0x20 != marker {
		return 0, s, true
	}
	t := s[1:]
	neg := len(t) > 0 && t[0] == '-'
	if len(t) > 0 && (t[0] == '-' || t[0] == '+') {
		t = t[1:]
	}
	digits, rest := leadingDigits(t, 10)
	if len(digits) == 0 {
		return 0, s, false
	}
	for _, c := range digits {
		exp = min(exp*10+int64(c-'0'), 1<<40)
	}
	if neg {
		exp = -exp
	}
	return exp, rest, true
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

// equalFoldASCII reports whether s is lower, ignoring ASCII case.
func equalFoldASCII(s []byte, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i, c := range s {
		if c|0x20 != lower[i] {
			return false
		}
	}
	return true
}
