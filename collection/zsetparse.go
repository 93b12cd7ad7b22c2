package collection

import (
	"math"
	"strconv"
)

// Redis reads scores with C's strtod, and its three callers each judge what strtod read in
// their own way; so that every argument is taken or refused as Redis does, strtod's grammar
// is followed here to the byte (C locale): leading blanks, a sign, "inf", "infinity",
// "nan(...)" in any case, hexadecimal with a binary exponent, decimal with a decimal one.
// The conversion itself is strconv's, correctly rounded as glibc's is.

// ParseScore parses a score as ZADD and ZINCRBY take it (Redis's getDoubleFromObject): all
// of b as strtod reads it, with no leading blank, not NaN, and not so large that it
// overflows to an infinity nor so small that it underflows to 0 ("inf" itself is a score).
func ParseScore(b []byte) (float64, bool) {
	if len(b) == 0 || cIsSpace(b[0]) {
		return 0, false
	}
	if n, ok := canonicalInt(b); ok && n >= -maxScoreInt && n <= maxScoreInt {
		return float64(n), true // the common case, exact, without strtod's work
	}
	f, n, erange := strtod(b)
	if n != len(b) || math.IsNaN(f) || erange {
		return 0, false
	}
	return f, true
}

// ParseScoreRange parses ZRANGEBYSCORE's min and max (Redis's zslParseRange): each an
// optional "(" for an exclusive bound, then what strtod reads, which must end the argument
// or be followed by a NUL byte; NaN is refused, but blanks before it, overflow and nothing
// at all (0) are not.
func ParseScoreRange(min, max []byte) (ScoreRange, bool) {
	var r ScoreRange
	var ok1, ok2 bool
	r.Min, r.MinEx, ok1 = parseScoreBound(min)
	r.Max, r.MaxEx, ok2 = parseScoreBound(max)
	return r, ok1 && ok2
}

func parseScoreBound(b []byte) (f float64, ex, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		ex, b = true, b[1:]
	}
	if n, isInt := canonicalInt(b); isInt && n >= -maxScoreInt && n <= maxScoreInt {
		return float64(n), ex, true
	}
	f, n, _ := strtod(b)
	if n < len(b) && b[n] != 0 || math.IsNaN(f) {
		return 0, false, false
	}
	return f, ex, true
}

// ParseLexRange parses ZRANGEBYLEX's min and max (Redis's zslParseLexRange): each "-",
// "+", or "[" or "(" and a member.
func ParseLexRange(min, max []byte) (LexRange, bool) {
	var r LexRange
	var ok1, ok2 bool
	r.Min, ok1 = parseLexBound(min)
	r.Max, ok2 = parseLexBound(max)
	return r, ok1 && ok2
}

func parseLexBound(b []byte) (LexBound, bool) {
	if len(b) == 0 {
		return LexBound{}, false
	}
	switch b[0] {
	case '-', '+':
		// Redis reads the argument as a C string: "-" followed by a NUL byte is "-".
		if len(b) > 1 && b[1] != 0 {
			return LexBound{}, false
		}
		if b[0] == '-' {
			return LexBound{Inf: -1, Ex: true}, true
		}
		return LexBound{Inf: 1, Ex: true}, true
	case '(':
		return LexBound{S: b[1:], Ex: true}, true
	case '[':
		return LexBound{S: b[1:]}, true
	}
	return LexBound{}, false
}

func cIsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func cIsDigit(c byte) bool { return c >= '0' && c <= '9' }

func cIsXDigit(c byte) bool { return cIsDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }

// cHasPrefixFold reports whether b starts with lower, ignoring ASCII case.
func cHasPrefixFold(b []byte, lower string) bool {
	if len(b) < len(lower) {
		return false
	}
	for i := 0; i < len(lower); i++ {
		if b[i]|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// strtod reads a number at the start of b as C's strtod does: the value, the bytes it
// read (0 when it read none: no number there), and whether it was out of range (ERANGE:
// an overflow to an infinity, or an underflow to 0).
func strtod(b []byte) (f float64, n int, erange bool) {
	i := 0
	for i < len(b) && cIsSpace(b[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	switch {
	case cHasPrefixFold(b[i:], "inf"):
		f = math.Inf(1)
		if neg {
			f = -f
		}
		if cHasPrefixFold(b[i:], "infinity") {
			return f, i + 8, false
		}
		return f, i + 3, false
	case cHasPrefixFold(b[i:], "nan"):
		j := i + 3
		if j < len(b) && b[j] == '(' {
			k := j + 1
			for k < len(b) && (cIsDigit(b[k]) || b[k]|0x20 >= 'a' && b[k]|0x20 <= 'z' || b[k] == '_') {
				k++
			}
			if k < len(b) && b[k] == ')' {
				j = k + 1
			}
		}
		return math.NaN(), j, false
	case i+1 < len(b) && b[i] == '0' && b[i+1]|0x20 == 'x':
		if f, n, erange, ok := strtodHex(b, start, i+2); ok {
			return f, n, erange
		}
		// "0x" without a hexadecimal digit is the number 0, then an 'x'.
	}
	j := i
	digits, nonzero := 0, false
	for ; j < len(b) && cIsDigit(b[j]); j++ {
		digits++
		nonzero = nonzero || b[j] != '0'
	}
	if j < len(b) && b[j] == '.' {
		j++
		for ; j < len(b) && cIsDigit(b[j]); j++ {
			digits++
			nonzero = nonzero || b[j] != '0'
		}
	}
	if digits == 0 {
		return 0, 0, false
	}
	j = strtodExponent(b, j, 'e')
	f, err := strconv.ParseFloat(string(b[start:j]), 64)
	return f, j, err != nil || f == 0 && nonzero
}

// strtodHex reads the hexadecimal number whose digits start at b[i] (after "0x"; the sign
// and the 0 start at b[start]); ok is false when there is no hexadecimal digit.
func strtodHex(b []byte, start, i int) (f float64, n int, erange, ok bool) {
	j := i
	digits, nonzero := 0, false
	for ; j < len(b) && cIsXDigit(b[j]); j++ {
		digits++
		nonzero = nonzero || b[j] != '0'
	}
	if j < len(b) && b[j] == '.' {
		j++
		for ; j < len(b) && cIsXDigit(b[j]); j++ {
			digits++
			nonzero = nonzero || b[j] != '0'
		}
	}
	if digits == 0 {
		return 0, 0, false, false
	}
	end := strtodExponent(b, j, 'p')
	text := string(b[start:end])
	if end == j {
		text += "p0" // strconv wants the binary exponent that C takes as optional
	}
	f, err := strconv.ParseFloat(text, 64)
	return f, end, err != nil || f == 0 && nonzero, true
}

// strtodExponent returns where the number ending at b[j] ends with its exponent: the letter e
// (or p), an optional sign and at least one decimal digit; otherwise there is none.
func strtodExponent(b []byte, j int, letter byte) int {
	if j >= len(b) || b[j]|0x20 != letter {
		return j
	}
	k := j + 1
	if k < len(b) && (b[k] == '+' || b[k] == '-') {
		k++
	}
	if k >= len(b) || !cIsDigit(b[k]) {
		return j
	}
	for k < len(b) && cIsDigit(b[k]) {
		k++
	}
	return k
}

// ParseSortWeight reads a SORT weight as Redis's sortCommand does with strtod: blanks
// before it and nothing at all (0) are fine, anything after it, overflow or NaN are not.
func ParseSortWeight(b []byte) (float64, bool) {
	f, n, erange := strtod(b)
	return f, n == len(b) && !erange && !math.IsNaN(f)
}
