// Package bitmap holds the bit operations Redis's strings answer (SETBIT, GETBIT, BITCOUNT)
// on a string's bytes. Bit 0 is the most significant bit of the first byte, as in Redis.
// The package is pure: the server locks the key, grows the string and stores it.
package bitmap

import (
	"math"
	"math/bits"
)

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

// Field reads the bits-wide unsigned field at bit offset off of b (wholly within b), most
// significant bit first, as Redis's getUnsignedBitfield.
func Field(b []byte, off, bits uint64) uint64 {
	var v uint64
	for j := uint64(0); j < bits; j++ {
		v = v<<1 | uint64(b[off>>3]>>(7-off&7))&1
		off++
	}
	return v
}

// SignedField is Field read as a two's complement integer of bits bits.
func SignedField(b []byte, off, bits uint64) int64 {
	v := int64(Field(b, off, bits))
	if bits < 64 && v&(1<<(bits-1)) != 0 {
		v |= -1 << bits
	}
	return v
}

// SetField writes the low bits bits of v at bit offset off of b (wholly within b).
func SetField(b []byte, off, bits, v uint64) {
	for j := uint64(0); j < bits; j++ {
		bit := byte(v>>(bits-1-j)) & 1
		i, sh := off>>3, 7-off&7
		b[i] = b[i]&^(1<<sh) | bit<<sh
		off++
	}
}

// The overflow behaviours of BITFIELD's SET and INCRBY.
const (
	Wrap = iota // the result wraps around
	Sat         // the result saturates at the type's least or greatest value
	Fail        // nothing is done
)

// UnsignedOverflow is Redis's checkUnsignedBitfieldOverflow: whether value+incr leaves the
// range of a bits-wide unsigned field, and the value to store under mode ow when it does.
func UnsignedOverflow(value uint64, incr int64, bits uint64, ow int) (limit uint64, overflow bool) {
	maxv := uint64(1)<<bits - 1
	if bits == 64 {
		maxv = ^uint64(0)
	}
	maxIncr := int64(maxv - value)
	minIncr := -int64(value)
	switch {
	case value > maxv || incr > 0 && incr > maxIncr:
		limit = maxv
	case incr < 0 && incr < minIncr:
		limit = 0
	default:
		return 0, false
	}
	if ow == Wrap {
		limit = (value + uint64(incr)) &^ (^uint64(0) << bits)
	}
	return limit, true
}

// SignedOverflow is Redis's checkSignedBitfieldOverflow for a bits-wide signed field.
func SignedOverflow(value, incr int64, bits uint64, ow int) (limit int64, overflow bool) {
	maxv := int64(1)<<(bits-1) - 1
	if bits == 64 {
		maxv = math.MaxInt64
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := minv - value
	switch {
	case value > maxv || bits != 64 && incr > maxIncr || value >= 0 && incr > 0 && incr > maxIncr:
		limit = maxv
	case value < minv || bits != 64 && incr < minIncr || value < 0 && incr < 0 && incr < minIncr:
		limit = minv
	default:
		return 0, false
	}
	if ow == Wrap {
		c := uint64(value) + uint64(incr)
		if bits < 64 {
			mask := ^uint64(0) << bits
			if c&(1<<(bits-1)) != 0 {
				c |= mask
			} else {
				c &^= mask
			}
		}
		limit = int64(c)
	}
	return limit, true
}
