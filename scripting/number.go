package scripting

import (
	"math"
	"strconv"
)

// Numbers cross between Lua and Redis as C writes and reads them, not as Go does: Redis hands
// a Lua number to a command as printf's "%.17g", Lua 5.1 turns one into a string (tostring,
// concatenation) as "%.14g", and reads strings with strtod. Go's shortest formatting would
// store a bucket's 1.0140000000000002 tokens as the same bytes but print 1/3 as
// 0.3333333333333333 where Lua prints 0.33333333333333: a script's replies and keys would differ.

// appendG appends f as C's printf("%.<prec>g") writes it: prec significant digits, trailing
// zeros dropped, an exponent of at least two digits past 1e<prec> or below 1e-4, and inf,
// -inf, nan or -nan as glibc spells them (0/0 on x86 is a negative NaN: "-nan").
func appendG(dst []byte, f float64, prec int) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		if math.Signbit(f) {
			return append(dst, "-nan"...)
		}
		return append(dst, "nan"...)
	}
	return strconv.AppendFloat(dst, f, 'g', prec, 64)
}

// appendArgNumber appends a number given to redis.call as an argument: "%.17g".
func appendArgNumber(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e17 && (f != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(dst, int64(f), 10) // an integer below 1e17: the same bytes, faster
	}
	return appendG(dst, f, 17)
}

// appendLuaNumber appends a number as Lua 5.1 turns it into a string: "%.14g".
func appendLuaNumber(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e14 && (f != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(dst, int64(f), 10) // the common case, the same bytes, faster
	}
	return appendG(dst, f, 14)
}

// luaNumberString is a number as Lua 5.1's tostring writes it.
func luaNumberString(f float64) string {
	var b [32]byte
	return string(appendLuaNumber(b[:0], f))
}

// toInteger is C's (long long) cast of a reply's number on x86-64: truncation, and the
// smallest integer for NaN and for values out of range.
func toInteger(f float64) int64 {
	if f != f || f >= 9223372036854775807 || f < -9223372036854775808 {
		return math.MinInt64
	}
	return int64(f)
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

// strtod reads the longest prefix of s that C's strtod reads as a number (glibc: leading
// blanks, a sign, decimal with an optional exponent, hexadecimal, inf, infinity, nan),
// and returns it and the bytes it read; n is 0 when there is none.
func strtod(s string) (f float64, n int) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if word := matchFold(s[i:], "infinity"); word > 0 || matchFold(s[i:], "inf") > 0 {
		if word == 0 {
			word = 3
		}
		return signed(math.Inf(1), neg), i + word
	}
	if matchFold(s[i:], "nan") > 0 {
		j := i + 3
		nan := glibcNaN
		if j < len(s) && s[j] == '(' { // nan(chars)
			k := j + 1
			for k < len(s) && (isAlnum(s[k]) || s[k] == '_') {
				k++
			}
			if k < len(s) && s[k] == ')' {
				if payload, ok := nanPayload(s[j+1 : k]); ok {
					nan = math.Float64frombits(math.Float64bits(glibcNaN) | payload&(1<<51-1))
				}
				j = k + 1
			}
		}
		return signed(nan, neg), j
	}
	if i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') {
		if f, m := hexFloat(s[i+2:]); m > 0 {
			return signed(f, neg), i + 2 + m
		}
		return signed(0, neg), i + 1 // "0x" alone reads as 0
	}
	j, digits := i, 0
	for j < len(s) && isDigit(s[j]) {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	f, err := strconv.ParseFloat(s[start:j], 64)
	if err != nil { // out of range: ParseFloat returns ±Inf or 0, as strtod does
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, 0
		}
	}
	return f, j
}

// hexFloat reads hexadecimal digits with an optional point and binary exponent (the part
// after "0x"); n is 0 when no digit comes.
func hexFloat(s string) (f float64, n int) {
	i, digits := 0, 0
	var mant float64
	exp := 0
	for i < len(s) && isHex(s[i]) {
		mant = mant*16 + float64(hexVal(s[i]))
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHex(s[i]) {
			mant = mant*16 + float64(hexVal(s[i]))
			exp -= 4
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if i < len(s) && (s[i] == 'p' || s[i] == 'P') {
		k := i + 1
		neg := false
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			neg = s[k] == '-'
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			e := 0
			for k < len(s) && isDigit(s[k]) {
				if e < 100000 {
					e = e*10 + int(s[k]-'0')
				}
				k++
			}
			if neg {
				e = -e
			}
			exp += e
			i = k
		}
	}
	return math.Ldexp(mant, exp), i
}

// str2number reads a whole string as a number as Lua 5.1 does (luaO_str2d): strtod, then
// only blanks may follow. Lua reads the string as C does, up to its first NUL ("10\0" is 10).
func str2number(s string) (float64, bool) {
	if f, ok := smallInteger(s); ok {
		return f, true
	}
	s = cString(s)
	f, n := strtod(s)
	if n == 0 {
		return 0, false
	}
	for ; n < len(s); n++ {
		if !isSpace(s[n]) {
			return 0, false
		}
	}
	return f, true
}

// smallInteger reads the common case fast: an optional minus and up to 15 decimal digits,
// nothing else (strtod's result for them, -0 included).
func smallInteger(s string) (float64, bool) {
	i := 0
	if len(s) > 0 && s[0] == '-' {
		i = 1
	}
	if i == len(s) || len(s)-i > 15 {
		return 0, false
	}
	var v int64
	for ; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		v = v*10 + int64(s[i]-'0')
	}
	f := float64(v)
	if s[0] == '-' {
		f = -f
	}
	return f, true
}

// strtoul reads s in base as C's strtoul does for tonumber(s, base): leading blanks, a sign
// (a minus negates, modulo 2^64), "0x" in base 16, then digits; n is the bytes read.
func strtoul(s string, base int) (v float64, n int) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if base == 16 && i+2 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && digitIn(s[i+2], 16) {
		i += 2
	}
	var u uint64
	overflow := false
	j := i
	for j < len(s) && digitIn(s[j], base) {
		d := uint64(digitVal(s[j]))
		if u > (math.MaxUint64-d)/uint64(base) {
			overflow = true
		}
		u = u*uint64(base) + d
		j++
	}
	if j == i {
		return 0, 0
	}
	if overflow {
		u = math.MaxUint64
	} else if neg {
		u = -u
	}
	return float64(u), j
}

// nanPayload reads the chars of "nan(chars)" as glibc does, with strtoull in base 0
// (decimal, 0x hexadecimal, 0 octal, all ones past 64 bits); ok only when it reads them
// all. Its low 51 bits are the NaN's payload.
func nanPayload(s string) (uint64, bool) {
	base := uint64(10)
	switch {
	case len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isHex(s[2]):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base = 8
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d := uint64(digitVal(s[i]))
		if d >= base {
			return 0, false
		}
		if v > (math.MaxUint64-d)/base {
			v = math.MaxUint64
			continue
		}
		v = v*base + d
	}
	return v, true
}

// glibcNaN is the NaN glibc's strtod reads "nan" as (Go's math.NaN has another payload,
// which LuaBitOp's bit.band(x, 1) would show).
var glibcNaN = math.Float64frombits(0x7ff8000000000000)

func signed(f float64, neg bool) float64 {
	if neg {
		return -f
	}
	return f
}

// matchFold returns len(word) when s starts with word in any case, else 0.
func matchFold(s, word string) int {
	if len(s) < len(word) {
		return 0
	}
	for i := 0; i < len(word); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[i] {
			return 0
		}
	}
	return len(word)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') }
func isAlnum(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func hexVal(c byte) int { return digitVal(c) }

// digitVal is c's value as a digit in bases up to 36, or 99.
func digitVal(c byte) int {
	switch {
	case isDigit(c):
		return int(c - '0')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'Z':
		return int(c-'A') + 10
	}
	return 99
}

func digitIn(c byte, base int) bool { return digitVal(c) < base }

// The conversions native code (Engine.Natives) needs to give the interpreter's bytes.

// AppendArgNumber appends f as redis.call hands a Lua number to a command: "%.17g".
func AppendArgNumber(dst []byte, f float64) []byte { return appendArgNumber(dst, f) }

// AppendLuaNumber appends f as Lua 5.1's tostring writes it: "%.14g".
func AppendLuaNumber(dst []byte, f float64) []byte { return appendLuaNumber(dst, f) }

// ReplyInteger is the integer a Lua number returned by a script becomes: C's cast,
// truncation toward zero (the smallest integer for NaN and out of range).
func ReplyInteger(f float64) int64 { return toInteger(f) }
