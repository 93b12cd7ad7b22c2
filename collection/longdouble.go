package collection

import (
	"errors"
	"math/big"
)

// Redis's INCRBYFLOAT and HINCRBYFLOAT compute in C's long double, which on x86-64 is the
// x87 80-bit format: a 64-bit mantissa with its integer bit explicit, exponents down to
// 2^-16382 for normal numbers and subnormals below, to 2^-16445, and the largest finite
// value just under 2^16384. It parses both operands with strtold, adds them with one
// rounding to nearest even, and writes the sum as printf's "%.17Lf" with the trailing zeros
// of the fraction and a trailing dot removed ("-0" becomes "0"). float64 would give other
// bytes: 10.5 + 0.1 is "10.6" in long double but 10.59999999999999964 in double at 17
// places. So the arithmetic here is exact, on big integers: a long double is an integer
// mantissa times a power of two, parsing and adding round once to that grid, and
// formatting turns the binary value into decimal exactly before rounding to 17 places.
// The common case, short decimals of moderate size, takes a path without big integers
// (longdouble_fast.go) that gives the same bytes.

// The long double format.
const (
	ldMantBits = 64     // the mantissa's precision, its integer bit included
	ldMinExp   = -16382 // the exponent of the smallest normal number, 2^ldMinExp
	ldMaxExp   = 16384  // every finite value is below 2^ldMaxExp
	ldQuantum  = ldMinExp - ldMantBits + 1
	// ldMaxChars is Redis's MAX_LONG_DOUBLE_CHARS: a longer string is no float to it.
	ldMaxChars = 5 * 1024
	// ldFracDigits are the decimals "%.17Lf" writes.
	ldFracDigits = 17
)

var (
	// ErrNotFloat is an operand that strtold does not read whole, NaN, or out of range.
	ErrNotFloat = errors.New("value is not a valid float")
	// ErrNaNOrInf is a sum that is not finite: an operand was infinite, or it overflowed.
	ErrNaNOrInf = errors.New("increment would produce NaN or Infinity")
)

// longDouble is a long double: (-1)^neg * mant * 2^exp, or an infinity. A finite value
// is on the format's grid: mant has at most 64 bits and exp >= ldQuantum.
type longDouble struct {
	neg  bool
	inf  bool
	mant big.Int
	exp  int
}

// AddLongDouble appends to dst the sum of the numbers cur and incr as INCRBYFLOAT writes it,
// computed as Redis computes it in long double. A missing key counts as "0" to Redis: the
// caller passes that (an empty string is not a number). It returns ErrNotFloat when cur or
// incr is not a number as Redis reads one (cur is read first), ErrNaNOrInf when the sum is
// not finite.
func AddLongDouble(dst, cur, incr []byte) ([]byte, error) {
	if out, ok := addFast(dst, cur, incr); ok {
		return out, nil
	}
	return addExact(dst, cur, incr)
}

// addExact is AddLongDouble on big integers, for every input.
func addExact(dst, cur, incr []byte) ([]byte, error) {
	var a, b longDouble
	if !a.parse(cur) || !b.parse(incr) {
		return dst, ErrNotFloat
	}
	if a.inf || b.inf {
		return dst, ErrNaNOrInf // inf + finite is inf, inf - inf is NaN
	}
	var s longDouble
	if !s.add(&a, &b) {
		return dst, ErrNaNOrInf
	}
	return s.appendHuman(dst), nil
}

// IsLongDouble reports whether strtold reads s whole as a number Redis accepts: finite or
// an infinity, not NaN, neither overflowing nor underflowing to zero.
func IsLongDouble(s []byte) bool {
	ok, _ := LongDoubleInf(s)
	return ok
}

// LongDoubleInf is IsLongDouble, and whether the number is an infinity (HINCRBYFLOAT
// refuses one as its increment before it reads the field).
func LongDoubleInf(s []byte) (ok, inf bool) {
	var x longDouble
	ok = x.parse(s)
	return ok, ok && x.inf
}

// parse reads s as Redis's string2ld does with strtold: no leading blank, an optional sign,
// then a decimal number with an optional exponent, a hexadecimal one ("0x1.8p3"), or
// "inf"/"infinity" in any case; nothing may follow. NaN is refused, and so is a value that
// overflows or that underflows to zero, as strtold's ERANGE makes Redis refuse it.
func (x *longDouble) parse(s []byte) bool {
	if len(s) == 0 || len(s) >= ldMaxChars {
		return false
	}
	i := 0
	if s[0] == '+' || s[0] == '-' {
		x.neg = s[0] == '-'
		i++
	}
	rest := s[i:]
	if (len(rest) == 3 || len(rest) == 8) && lowerPrefix(rest, 8) == "infinity"[:len(rest)] {
		x.inf = true
		return true
	}
	if len(rest) > 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X') {
		return x.parseHex(rest[2:])
	}
	return x.parseDecimal(rest)
}

// lowerPrefix returns up to n bytes of b in lower case (ASCII).
func lowerPrefix(b []byte, n int) string {
	var buf [8]byte
	out := buf[:0]
	for i := 0; i < n && i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out = append(out, c)
	}
	return string(out)
}

// digitsOf returns the digits of s in base (10 or 16) before any other byte, with those
// after a single dot: the mantissa's integer (leading zeros ignored), how many digits it
// has without them, how many came after the dot, and the bytes that follow. ok is false
// without a digit.
func digitsOf(s []byte, base int) (m *big.Int, sig, frac int, rest []byte, ok bool) {
	m = new(big.Int)
	var word uint64 // digits gathered into m in words, not one big multiplication a digit
	var wordMul uint64 = 1
	flush := func() {
		if wordMul > 1 {
			m.Mul(m, new(big.Int).SetUint64(wordMul))
			m.Add(m, new(big.Int).SetUint64(word))
			word, wordMul = 0, 1
		}
	}
	dot, any := false, false
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		d := digitValue(c, base)
		if d < 0 {
			if c == '.' && !dot {
				dot = true
				continue
			}
			break
		}
		any = true
		if dot {
			frac++
		}
		if d == 0 && sig == 0 {
			continue // a leading zero adds nothing to the mantissa
		}
		sig++
		word = word*uint64(base) + uint64(d)
		wordMul *= uint64(base)
		if wordMul >= 1<<56 {
			flush()
		}
	}
	flush()
	return m, sig, frac, s[i:], any
}

func digitValue(c byte, base int) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case base == 16 && 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case base == 16 && 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// exponentOf reads an exponent after its letter: an optional sign and digits, the value
// clamped far beyond any that matters. ok is false when no digit follows, and then
// strtold leaves the letter unread.
func exponentOf(s []byte) (e int, rest []byte, ok bool) {
	i, neg := 0, false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start := i
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		if e < 1<<40 {
			e = e*10 + int(s[i]-'0')
		}
	}
	if i == start {
		return 0, s, false
	}
	if neg {
		e = -e
	}
	return e, s[i:], true
}

func (x *longDouble) parseDecimal(s []byte) bool {
	m, sig, frac, rest, ok := digitsOf(s, 10)
	if !ok {
		return false
	}
	exp := 0
	if len(rest) > 0 && (rest[0] == 'e' || rest[0] == 'E') {
		if e, r, ok := exponentOf(rest[1:]); ok {
			exp, rest = e, r
		}
	}
	if len(rest) != 0 {
		return false
	}
	if sig == 0 {
		return true // zero, whatever the exponent
	}
	exp -= frac
	// The value is below 10^(sig+exp) and at least 10^(sig+exp-1). Past these bounds it
	// overflows (the largest is about 1.19e4932) or is below half the smallest subnormal
	// (about 3.6e-4951) and rounds to zero: either way strtold reports ERANGE.
	switch {
	case sig+exp-1 >= 4933:
		return false
	case sig+exp <= -4952:
		return false
	}
	num, den := m, big.NewInt(1)
	if exp >= 0 {
		num.Mul(num, pow10(exp))
	} else {
		den = pow10(-exp)
	}
	return x.round(num, den, 0)
}

func (x *longDouble) parseHex(s []byte) bool {
	m, sig, frac, rest, ok := digitsOf(s, 16)
	if !ok {
		return false // "0x" alone: strtold reads the 0 and stops at the x
	}
	exp := 0
	if len(rest) > 0 && (rest[0] == 'p' || rest[0] == 'P') {
		if e, r, ok := exponentOf(rest[1:]); ok {
			exp, rest = e, r
		}
	}
	if len(rest) != 0 {
		return false
	}
	if sig == 0 {
		return true
	}
	exp -= 4 * frac
	bits := m.BitLen()
	switch {
	case bits+exp-1 >= ldMaxExp:
		return false
	case bits+exp <= ldQuantum-1:
		return false // below half the smallest subnormal, or exactly half: rounds to zero
	}
	return x.round(m, big.NewInt(1), exp)
}

func pow10(n int) *big.Int {
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

// round sets x's magnitude to num/den * 2^shift rounded to nearest even on the long
// double grid, keeping x.neg. It reports false when the result overflows or when a
// nonzero value rounds to zero (strtold's ERANGE cases that Redis refuses). num and den
// are positive, and num may be changed.
func (x *longDouble) round(num, den *big.Int, shift int) bool {
	// e: the exponent of the value's leading bit, 2^e <= v < 2^(e+1).
	e := num.BitLen() - den.BitLen() + shift
	if cmpShifted(num, den, e-shift) < 0 {
		e--
	}
	q := max(e-ldMantBits+1, ldQuantum) // the value of the mantissa's last bit, 2^q
	// mant = num * 2^(shift-q) / den, rounded.
	n, d := num, new(big.Int).Set(den)
	if k := shift - q; k >= 0 {
		n.Lsh(n, uint(k))
	} else {
		d.Lsh(d, uint(-k))
	}
	var r big.Int
	x.mant.QuoRem(n, d, &r)
	r.Lsh(&r, 1)
	if c := r.Cmp(d); c > 0 || c == 0 && x.mant.Bit(0) == 1 {
		x.mant.Add(&x.mant, big.NewInt(1))
	}
	x.exp = q
	if x.mant.Sign() == 0 {
		return false
	}
	return x.mant.BitLen()+q <= ldMaxExp
}

// cmpShifted compares num with den*2^k.
func cmpShifted(num, den *big.Int, k int) int {
	if k >= 0 {
		return num.Cmp(new(big.Int).Lsh(den, uint(k)))
	}
	return new(big.Int).Lsh(num, uint(-k)).Cmp(den)
}

// add sets x to a+b rounded once, and reports false when the sum overflows. An exact
// zero is +0, as in round to nearest, unless both are -0.
func (x *longDouble) add(a, b *longDouble) bool {
	lo := min(a.exp, b.exp)
	var sa, sb big.Int
	sa.Lsh(&a.mant, uint(a.exp-lo))
	sb.Lsh(&b.mant, uint(b.exp-lo))
	if a.neg {
		sa.Neg(&sa)
	}
	if b.neg {
		sb.Neg(&sb)
	}
	sa.Add(&sa, &sb)
	if sa.Sign() == 0 {
		*x = longDouble{neg: a.neg && b.neg && a.mant.Sign() == 0 && b.mant.Sign() == 0}
		return true
	}
	x.neg = sa.Sign() < 0
	sa.Abs(&sa)
	// Both operands are on the grid, so a sum below the smallest normal is exact: round
	// cannot find it zero. It can only overflow.
	return x.round(&sa, big.NewInt(1), lo)
}

// appendHuman appends x as Redis's ld2string with LD_STR_HUMAN: "%.17Lf" rounded to
// nearest even as glibc's printf does, the fraction's trailing zeros and a trailing dot
// removed, and "-0" written "0".
func (x *longDouble) appendHuman(dst []byte) []byte {
	// scaled = |x| * 10^17, rounded to an integer.
	scaled := new(big.Int).Mul(&x.mant, pow10(ldFracDigits))
	if x.exp >= 0 {
		scaled.Lsh(scaled, uint(x.exp))
	} else {
		var r big.Int
		den := new(big.Int).Lsh(big.NewInt(1), uint(-x.exp))
		scaled.QuoRem(scaled, den, &r)
		r.Lsh(&r, 1)
		if c := r.Cmp(den); c > 0 || c == 0 && scaled.Bit(0) == 1 {
			scaled.Add(scaled, big.NewInt(1))
		}
	}
	digits := scaled.Append(nil, 10)
	for len(digits) <= ldFracDigits {
		digits = append([]byte{'0'}, digits...)
	}
	whole, frac := digits[:len(digits)-ldFracDigits], digits[len(digits)-ldFracDigits:]
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	if x.neg && !(len(whole) == 1 && whole[0] == '0' && len(frac) == 0) {
		dst = append(dst, '-')
	}
	dst = append(dst, whole...)
	if len(frac) > 0 {
		dst = append(dst, '.')
		dst = append(dst, frac...)
	}
	return dst
}
