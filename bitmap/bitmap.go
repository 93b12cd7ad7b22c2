// Package bitmap holds the bit operations Redis's strings answer (SETBIT, GETBIT, BITCOUNT)
// on a string's bytes. Bit 0 is the most significant bit of the first byte, as in Redis.
// The package is pure: the server locks the key, grows the string and stores it.
package bitmap

import "math/bits"

// Get returns bit off of b, 0 past its end.
func Get(b []byte, off int64) int {
	i := off >> 3
	if i >= int64(len(b)) {
		return 0
	}
	return int(b[i]>>(7-uint(off&7))) & 1
}

// Set sets bit off of b, which holds it (len(b) > off/8), to on, and returns its value
// before.
func Set(b []byte, off int64, on bool) int {
	i, mask := off>>3, byte(1)<<(7-uint(off&7))
	old := 0
	if b[i]&mask != 0 {
		old = 1
	}
	if on {
		b[i] |= mask
	} else {
		b[i] &^= mask
	}
	return old
}

// Count returns the bits set in b from start to end inclusive, as BITCOUNT reads them:
// byte indexes, or bit indexes when bit; negative ones count from the end; the range is
// clamped to b, and an empty one counts 0.
func Count(b []byte, start, end int64, bit bool) int64 {
	n := int64(len(b))
	if bit {
		n <<= 3
	}
	if start < 0 && end < 0 && start > end {
		return 0
	}
	if start < 0 {
		start = max(n+start, 0)
	}
	if end < 0 {
		end = max(n+end, 0)
	}
	end = min(end, n-1)
	if start > end {
		return 0
	}
	var first, last byte // the bits of the edge bytes out of the range
	if bit {
		first = ^byte(0xff >> uint(start&7))
		last = byte(1)<<(7-uint(end&7)) - 1
		start, end = start>>3, end>>3
	}
	c := int64(0)
	for _, x := range b[start : end+1] {
		c += int64(bits.OnesCount8(x))
	}
	c -= int64(bits.OnesCount8(b[start]&first) + bits.OnesCount8(b[end]&last))
	return c
}

// Pos returns the position of the first bit of b set to one (or zero), from the most
// significant bit of b[0], as Redis's redisBitpos: -1 when no bit is one; len(b)*8 when
// no bit is zero (the bit after, as if the string went on with zeros).
func Pos(b []byte, one bool) int64 {
	for i, x := range b {
		if !one {
			x = ^x
		}
		if x != 0 {
			return int64(i)*8 + int64(bits.LeadingZeros8(x))
		}
	}
	if one {
		return -1
	}
	return int64(len(b)) * 8
}
