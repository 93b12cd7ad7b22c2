package collection

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
)

// The element tags; doc.go describes the layout.
const (
	tagMaxShort = 0xbf // a string of up to this many bytes has its length in the tag
	tagLong     = 0xc0 // a string with a uvarint length
	tagInt      = 0xc0 // tagInt+n: an integer in n bytes, 1 <= n <= 8
	tagFloat    = 0xc9
	tagSmall    = 0xca // tagSmall+n: the integer n, 0 <= n <= maxSmall
	maxSmall    = 0xff - tagSmall
	// maxScoreInt is the largest magnitude of a score stored as an integer: every integer up
	// to it is a float64 exactly.
	maxScoreInt = 1 << 53
	// maxSuffix is the longest suffix of a member written as its score (zscoreMember), so
	// that the member's text (at most 20 digits and the suffix) fits the 32-byte buffers
	// its readers write it in.
	maxSuffix = 11
)

// ElemKind says what an element holds.
type ElemKind uint8

// The kinds of element.
const (
	Str   ElemKind = iota // a string: Elem.Str
	Int                   // an integer, read as its decimal string: Elem.Int
	Float                 // a float64 score: Elem.Float
)

// Elem is one element of a pack as Read returns it.
type Elem struct {
	Kind ElemKind
	// Str is a Str's bytes, aliasing the pack; for an Int, what follows its decimal (a
	// sorted set's member written as its score and a suffix: "1732512345000-42"), most
	// often nothing.
	Str   []byte
	Int   int64
	Float float64
}

// Read returns the element at the start of b and the bytes it takes, or n == 0 when b
// does not start with a whole element (a damaged pack: callers stop there).
func Read(b []byte) (e Elem, n int) {
	if len(b) == 0 {
		return Elem{}, 0
	}
	t := b[0]
	switch {
	case t <= tagMaxShort:
		end := 1 + int(t)
		if end > len(b) {
			return Elem{}, 0
		}
		return Elem{Kind: Str, Str: b[1:end]}, end
	case t == tagLong && len(b) > 1 && b[1] == 0:
		return readScoreMember(b)
	case t == tagLong:
		l, k := binary.Uvarint(b[1:])
		if k <= 0 || l > uint64(len(b)-1-k) {
			return Elem{}, 0
		}
		end := 1 + k + int(l)
		return Elem{Kind: Str, Str: b[1+k : end]}, end
	case t <= tagInt+8:
		w := int(t - tagInt)
		if 1+w > len(b) {
			return Elem{}, 0
		}
		var u uint64
		for i := w; i >= 1; i-- {
			u = u<<8 | uint64(b[i])
		}
		shift := 64 - 8*uint(w)
		return Elem{Kind: Int, Int: int64(u<<shift) >> shift}, 1 + w
	case t == tagFloat:
		if len(b) < 9 {
			return Elem{}, 0
		}
		return Elem{Kind: Float, Float: math.Float64frombits(binary.LittleEndian.Uint64(b[1:]))}, 9
	default:
		return Elem{Kind: Int, Int: int64(t - tagSmall)}, 1
	}
}

// readScoreMember reads a sorted set's member written as its score (zscoreMember), b[0]
// and b[1] being its mark: its integer is the score's, which follows it.
func readScoreMember(b []byte) (Elem, int) {
	if len(b) < 3 || b[2] > maxSuffix || 3+int(b[2]) > len(b) {
		return Elem{}, 0
	}
	end := 3 + int(b[2])
	n, k := readInt(b[end:])
	if k == 0 || end > 3 && isDigit(b[3]) {
		return Elem{}, 0
	}
	e := Elem{Kind: Int, Int: n}
	if end > 3 {
		e.Str = b[3:end]
	}
	return e, end
}

// readInt reads the integer element at the start of b and the bytes it takes, 0 when b
// does not start with one.
func readInt(b []byte) (int64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	t := b[0]
	switch {
	case t >= tagSmall:
		return int64(t - tagSmall), 1
	case t > tagInt && t <= tagInt+8:
		w := int(t - tagInt)
		if w >= len(b) {
			return 0, 0
		}
		var u uint64
		if len(b) >= 9 {
			u = binary.LittleEndian.Uint64(b[1:]) // one load; the bytes past the integer shift out
		} else {
			for i := w; i >= 1; i-- {
				u = u<<8 | uint64(b[i])
			}
		}
		shift := 64 - 8*uint(w)
		return int64(u<<shift) >> shift, 1 + w
	}
	return 0, 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isScoreMember reports whether b starts with the mark of a member written as its score.
func isScoreMember(b []byte) bool { return len(b) > 1 && b[0] == tagLong && b[1] == 0 }

// Skip returns the bytes the element at the start of b takes, 0 when b does not start
// with a whole element.
func Skip(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	t := b[0]
	switch {
	case t <= tagMaxShort:
		if int(t) >= len(b) {
			return 0
		}
		return 1 + int(t)
	case t == tagLong && len(b) > 2 && b[1] == 0: // a member written as its score: its score follows
		if end := 3 + int(b[2]); b[2] <= maxSuffix && end < len(b) {
			return end
		}
		return 0
	case t == tagLong:
		_, n := Read(b)
		return n
	case t <= tagInt+8:
		if int(t-tagInt) >= len(b) {
			return 0
		}
		return 1 + int(t-tagInt)
	case t == tagFloat:
		if len(b) < 9 {
			return 0
		}
		return 9
	}
	return 1
}

// Count returns the elements of pack (a damaged pack: those before the damage).
func Count(pack []byte) int {
	n := 0
	for len(pack) > 0 {
		k := Skip(pack)
		if k == 0 {
			break
		}
		pack = pack[k:]
		n++
	}
	return n
}

// Append appends e's string form: a string's bytes, an integer's decimal, a float's as
// Redis replies a score (%.17g).
func (e Elem) Append(dst []byte) []byte {
	switch e.Kind {
	case Int:
		return append(strconv.AppendInt(dst, e.Int, 10), e.Str...)
	case Float:
		return AppendScoreText(dst, e.Float)
	}
	return append(dst, e.Str...)
}

// Bytes returns e's string form: a string's own bytes, or a number's written in buf.
func (e Elem) Bytes(buf []byte) []byte {
	if e.Kind == Str {
		return e.Str
	}
	return e.Append(buf)
}

// Len returns the length of e's string form (HSTRLEN).
func (e Elem) Len() int {
	if e.Kind == Str {
		return len(e.Str)
	}
	var buf [32]byte
	return len(e.Append(buf[:0]))
}

// Equal reports whether e's string form is s.
func (e Elem) Equal(s []byte) bool {
	switch e.Kind {
	case Str:
		return bytes.Equal(e.Str, s)
	case Int:
		if len(e.Str) > 0 {
			if len(s) <= len(e.Str) || !bytes.Equal(s[len(s)-len(e.Str):], e.Str) {
				return false
			}
			s = s[:len(s)-len(e.Str)]
		}
		n, ok := canonicalInt(s)
		return ok && n == e.Int
	}
	var buf [32]byte
	return bytes.Equal(e.Append(buf[:0]), s)
}

// Compare compares e's string form with s, byte by byte as Redis compares members.
func (e Elem) Compare(s []byte) int {
	if e.Kind == Str {
		return bytes.Compare(e.Str, s)
	}
	var buf [32]byte
	return bytes.Compare(e.Append(buf[:0]), s)
}

// Number returns e as a number: an integer or a float as it is, a string parsed (0 when it
// is not a number; a score is never stored as a string).
func (e Elem) Number() float64 {
	switch e.Kind {
	case Int:
		return float64(e.Int)
	case Float:
		return e.Float
	}
	f, _ := strconv.ParseFloat(string(e.Str), 64)
	return f
}

// AppendString appends s as an element: an integer when s is the canonical decimal of one.
func AppendString(dst, s []byte) []byte {
	if n, ok := canonicalInt(s); ok {
		return AppendInt(dst, n)
	}
	if len(s) <= tagMaxShort {
		dst = append(dst, byte(len(s)))
	} else {
		dst = append(dst, tagLong)
		dst = binary.AppendUvarint(dst, uint64(len(s)))
	}
	return append(dst, s...)
}

// AppendInt appends n as an element, in as few bytes as hold it.
func AppendInt(dst []byte, n int64) []byte {
	if n >= 0 && n <= maxSmall {
		return append(dst, byte(tagSmall+n))
	}
	w := 1
	for w < 8 && (n < -1<<(8*w-1) || n >= 1<<(8*w-1)) {
		w++
	}
	dst = append(dst, byte(tagInt+w))
	for i := 0; i < w; i++ {
		dst = append(dst, byte(n>>(8*i)))
	}
	return dst
}

// AppendScore appends a sorted set's score: an integer when it is one exactly.
func AppendScore(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) <= maxScoreInt && !(f == 0 && math.Signbit(f)) {
		return AppendInt(dst, int64(f))
	}
	dst = append(dst, tagFloat)
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
}

// ElemLen returns the bytes AppendString(nil, s) appends.
func ElemLen(s []byte) int {
	var buf [10]byte
	if n, ok := canonicalInt(s); ok {
		return len(AppendInt(buf[:0], n))
	}
	if len(s) <= tagMaxShort {
		return 1 + len(s)
	}
	return 1 + len(binary.AppendUvarint(buf[:0], uint64(len(s)))) + len(s)
}

// canonicalInt returns the integer s is the canonical decimal form of, as Redis's
// string2ll accepts it: an optional '-', no leading zero ("0" alone is one, "-0" is not),
// within int64.
func canonicalInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	digits := s
	if s[0] == '-' {
		digits = s[1:]
	}
	if len(digits) == 0 || digits[0] < '0' || digits[0] > '9' || digits[0] == '0' && (len(s) > 1) {
		return 0, false
	}
	var u uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if s[0] == '-' {
		if u > 1<<63 {
			return 0, false
		}
		return int64(-u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// AppendScoreText appends f as Redis 7.0 writes a double in a reply: %.17g, and "inf",
// "-inf" for the infinities.
func AppendScoreText(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

// CheckPack checks a pack that came from outside (RESTORE's payload) before it is stored:
// every element whole, and, with per 2 (a hash's or a sorted set's pairs), the names
// distinct; with zset, each score a number that is no NaN and the pairs in the sorted
// set's order. It returns the entries (elements over per) and the longest element's
// length; ok is false when the pack is none of these, or empty.
func CheckPack(pack []byte, per int, zset bool) (num int64, longest int, ok bool) {
	var elems []Elem
	for b := pack; len(b) > 0; {
		e, n := Read(b)
		if n == 0 || isScoreMember(b) && (!zset || len(elems)%2 != 0) {
			return 0, 0, false
		}
		elems = append(elems, e)
		longest = max(longest, e.Len())
		b = b[n:]
	}
	if len(elems) == 0 || len(elems)%per != 0 {
		return 0, 0, false
	}
	if per == 2 {
		seen := make(map[string]bool, len(elems)/2)
		var prev []byte
		for i := 0; i < len(elems); i += 2 {
			name := elems[i].Append(nil)
			if seen[string(name)] {
				return 0, 0, false
			}
			seen[string(name)] = true
			if !zset {
				continue
			}
			sc := elems[i+1]
			if sc.Kind == Str || math.IsNaN(sc.Number()) || elems[i].Kind == Float {
				return 0, 0, false
			}
			if i > 0 {
				ps := elems[i-1].Number()
				if ps > sc.Number() || ps == sc.Number() && bytes.Compare(prev, name) >= 0 {
					return 0, 0, false
				}
			}
			prev = name
		}
	}
	return int64(len(elems) / per), longest, true
}
