package command

import "math"

// ParseInt parses a whole base-10 int64 as Redis's string2ll does: an optional minus,
// digits, no leading zeros, no blanks, no overflow.
func ParseInt(b []byte) (int64, bool) {
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
