package collection

import (
	"math/bits"
	"strconv"
)

// The fast path of AddLongDouble, in 64- and 128-bit integers without allocating, for
// operands of at most 19 significant decimal digits between 1e-19 and 1e38 or so, whose
// sum's integer part fits 64 bits: counters, prices, tokens. Anything else, errors
// included, goes to the exact path (addExact), which gives the same bytes (the fuzz target
// compares the two).

// pow10u64[n] is 10^n, up to the largest power of ten in a uint64.
var pow10u64 = [20]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
	1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// fastLD is a long double as mant * 2^exp with mant's top bit set, or zero (mant 0).
type fastLD struct {
	neg  bool
	mant uint64
	exp  int
}

// addFast is AddLongDouble when its operands and sum are in the fast path's range; ok is
// false otherwise, and then dst is untouched.
func addFast(dst, cur, incr []byte) ([]byte, bool) {
	a, ok := parseFast(cur)
	if !ok {
		return dst, false
	}
	b, ok := parseFast(incr)
	if !ok {
		return dst, false
	}
	s, ok := addFastLD(a, b)
	if !ok {
		return dst, false
	}
	return appendFast(dst, s)
}

// parseFast reads a plain decimal: an optional sign, digits with an optional dot, an
// optional exponent, at most 19 significant digits and a value within 10^±19 of them.
func parseFast(s []byte) (fastLD, bool) {
	var x fastLD
	if len(s) == 0 || len(s) > 64 {
		return x, false
	}
	i := 0
	if s[0] == '+' || s[0] == '-' {
		x.neg = s[0] == '-'
		i++
	}
	var m uint64
	sig, frac, digits, dot := 0, 0, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' && !dot {
			dot = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		digits++
		if dot {
			frac++
		}
		if m == 0 && c == '0' {
			continue
		}
		if sig == 19 {
			return x, false
		}
		sig++
		m = m*10 + uint64(c-'0')
	}
	if digits == 0 {
		return x, false
	}
	e := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		start := i
		for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			if e > 99 {
				return x, false
			}
			e = e*10 + int(s[i]-'0')
		}
		if i == start {
			return x, false // strtold leaves the e unread: no number to Redis, the exact path says so
		}
		if eneg {
			e = -e
		}
	}
	if i != len(s) {
		return x, false
	}
	if m == 0 {
		return fastLD{neg: x.neg}, true
	}
	e -= frac
	switch {
	case e >= 0 && e <= 19:
		hi, lo := bits.Mul64(m, pow10u64[e])
		x.mant, x.exp = round128(hi, lo, 0)
	case e < 0 && e >= -19:
		x.mant, x.exp = quoRound(m, pow10u64[-e])
	default:
		return x, false
	}
	return x, true
}

// round128 returns hi:lo * 2^exp rounded to nearest even on 64 bits, as a normalized
// mantissa and exponent; hi:lo is not zero.
func round128(hi, lo uint64, exp int) (uint64, int) {
	if hi == 0 {
		z := bits.LeadingZeros64(lo)
		return lo << z, exp - z
	}
	t := 64 - bits.LeadingZeros64(hi) // the bits past 64, 1 to 64
	mant := hi<<(64-t) | lo>>t
	rem := lo & (1<<t - 1)
	half := uint64(1) << (t - 1)
	if rem > half || rem == half && mant&1 == 1 {
		mant++
		if mant == 0 {
			return 1 << 63, exp + t + 1
		}
	}
	return mant, exp + t
}

// quoRound returns m/d rounded to nearest even on 64 bits, normalized; m and d are not zero.
func quoRound(m, d uint64) (uint64, int) {
	// s such that 2^63 <= m*2^s/d < 2^64: the quotient is the whole mantissa and the
	// remainder decides the rounding.
	s := 64 - bits.Len64(m) + bits.Len64(d)
	hi, lo := shl128(m, s)
	if hi >= d {
		s--
		hi, lo = shl128(m, s)
	}
	q, r := bits.Div64(hi, lo, d)
	if r > d-r || r == d-r && q&1 == 1 {
		q++
		if q == 0 {
			return 1 << 63, -s + 1
		}
	}
	return q, -s
}

// shl128 returns m*2^s as hi:lo, 0 <= s < 128.
func shl128(m uint64, s int) (hi, lo uint64) {
	if s >= 64 {
		return m << (s - 64), 0
	}
	return m >> (64 - s), m << s // for s == 0, m >> 64 is 0 in Go
}

// addFastLD returns a+b rounded once; ok is false when the exponents are too far apart
// for 128 bits.
func addFastLD(a, b fastLD) (fastLD, bool) {
	if a.mant == 0 {
		return b, true // a zero's sign does not show: "%.17Lf" of -0 is written 0
	}
	if b.mant == 0 {
		return a, true
	}
	if a.exp < b.exp {
		a, b = b, a
	}
	d := a.exp - b.exp
	if d > 63 {
		return fastLD{}, false
	}
	hi, lo := shl128(a.mant, d)
	neg := a.neg
	if a.neg == b.neg {
		var c uint64
		lo, c = bits.Add64(lo, b.mant, 0)
		hi += c
	} else if hi == 0 && lo < b.mant {
		lo, neg = b.mant-lo, b.neg
	} else {
		var c uint64
		lo, c = bits.Sub64(lo, b.mant, 0)
		hi -= c
	}
	if hi == 0 && lo == 0 {
		return fastLD{}, true
	}
	mant, exp := round128(hi, lo, b.exp)
	return fastLD{neg: neg, mant: mant, exp: exp}, true
}

// appendFast appends x as "%.17Lf" trimmed (appendHuman); ok is false when its integer
// part passes 64 bits.
func appendFast(dst []byte, x fastLD) ([]byte, bool) {
	if x.mant == 0 {
		return append(dst, '0'), true
	}
	if x.exp > 0 {
		return dst, false
	}
	k := -x.exp
	var whole, frac uint64
	if k < 64 {
		whole, frac = x.mant>>k, x.mant&(1<<k-1)
	} else {
		frac = x.mant
	}
	// q = frac * 10^17 / 2^k, rounded to nearest even.
	var q uint64
	if k > 0 && k < 128 { // k == 0: an integer; k >= 128: q is below a half
		hi, lo := bits.Mul64(frac, pow10u64[ldFracDigits])
		var rhi, rlo uint64 // the remainder, the low k bits
		if k >= 64 {
			q, rhi, rlo = hi>>(k-64), hi&(1<<(k-64)-1), lo
		} else {
			q, rhi, rlo = hi<<(64-k)|lo>>k, 0, lo&(1<<k-1)
		}
		var halfHi, halfLo uint64 // 2^(k-1)
		if k-1 >= 64 {
			halfHi = 1 << (k - 1 - 64)
		} else {
			halfLo = 1 << (k - 1)
		}
		if c := cmp128(rhi, rlo, halfHi, halfLo); c > 0 || c == 0 && q&1 == 1 {
			q++
		}
	}
	if q == pow10u64[ldFracDigits] {
		whole, q = whole+1, 0
	}
	if x.neg && (whole != 0 || q != 0) {
		dst = append(dst, '-')
	}
	dst = strconv.AppendUint(dst, whole, 10)
	if q == 0 {
		return dst, true
	}
	var buf [ldFracDigits]byte
	for i := ldFracDigits - 1; i >= 0; i-- {
		buf[i] = byte('0' + q%10)
		q /= 10
	}
	n := ldFracDigits
	for buf[n-1] == '0' {
		n--
	}
	dst = append(dst, '.')
	return append(dst, buf[:n]...), true
}

func cmp128(ahi, alo, bhi, blo uint64) int {
	switch {
	case ahi != bhi:
		if ahi < bhi {
			return -1
		}
		return 1
	case alo < blo:
		return -1
	case alo > blo:
		return 1
	}
	return 0
}
