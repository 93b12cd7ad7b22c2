package command

import (
	"encoding/binary"
	"math"
)

// ParseInt parses a whole base-10 int64 as Redis's string2ll does: an optional minus,
// digits, no leading zeros, no blanks, no overflow.
func ParseInt(b []byte) (int64, bool) {
	if len(b) > 0 && len(b) < 19 && b[0] > '0' {
		// The common case, a positive number of at most 18 digits, cannot overflow: no
		// check a digit.
		var n int64
		for _, c := range b {
			if c -= '0'; c > 9 {
				return 0, false
			}
			n = n*10 + int64(c)
		}
		return n, true
	}
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] == '0' && (len(b) > 1 || neg) {
		return 0, false // "01" and "-0" are not integers to Redis
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxUint64-9)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case neg && n <= 1<<63:
		return -int64(n), true // 1<<63 wraps to math.MinInt64, as it should
	case !neg && n <= math.MaxInt64:
		return int64(n), true
	}
	return 0, false
}

// Word returns an argument of at most 8 bytes as one number, to tell a command's options
// apart with one comparison each: its bytes with bit 5 set, the first the lowest. The only
// bytes that become a lower-case letter there are that letter and its upper case, so that
// a word of lower-case letters w (written 'n' | 'x'<<8 for "nx") equals Word(b) exactly
// when EqualFold(b, w) does; no byte becomes 0, so that the length counts too. 0 for a
// longer or an empty argument.
func Word(b []byte) uint64 {
	// Two loads that overlap in the middle of the word read it whatever its length.
	var w uint64
	switch n := len(b); {
	case n >= 4 && n <= 8:
		w = uint64(binary.LittleEndian.Uint32(b)) | uint64(binary.LittleEndian.Uint32(b[n-4:]))<<(8*(n-4))
	case n >= 2 && n <= 3:
		w = uint64(binary.LittleEndian.Uint16(b)) | uint64(binary.LittleEndian.Uint16(b[n-2:]))<<(8*(n-2))
	case n == 1:
		w = uint64(b[0])
	default:
		return 0
	}
	return w | 0x2020202020202020>>(64-8*len(b))
}

// EqualFold compares an argument with a lower-case ASCII word, ignoring case, without
// allocating.
func EqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
