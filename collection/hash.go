package collection

import "iter"

// A hash's pack is field, value, field, value... in the order the fields were first set, as
// Redis's listpack keeps them: a new field goes at the end, a field set again keeps its
// place, a deleted one leaves the others where they were. HGETALL, HKEYS, HSCAN and the
// whole-hash HRANDFIELD list the fields in that order, as Redis does while the hash is a
// listpack.

// fieldKey is a field as the pack stores it, worked out once so that a scan compares each
// stored field without parsing the wanted one again: an integer field is only ever stored
// as an integer element and any other as a string element.
type fieldKey struct {
	s     []byte
	n     int64
	isInt bool
}

func keyOf(field []byte) fieldKey {
	n, ok := canonicalInt(field)
	return fieldKey{s: field, n: n, isInt: ok}
}

func (k fieldKey) matches(e Elem) bool {
	if k.isInt {
		return e.Kind == Int && e.Int == k.n
	}
	return e.Kind == Str && string(e.Str) == string(k.s)
}

// nextPair returns the field at the start of h, the bytes it takes and the bytes its value
// takes; ok is false at the end of h or at a damaged pair.
func nextPair(h []byte) (field Elem, fn, vn int, ok bool) {
	field, fn = Read(h)
	if fn == 0 {
		return Elem{}, 0, 0, false
	}
	vn = Skip(h[fn:])
	return field, fn, vn, vn != 0
}

// HashGet returns the value of field in the hash h, false when h has no such field. The
// value's bytes alias h.
func HashGet(h, field []byte) (Elem, bool) {
	k := keyOf(field)
	for {
		f, fn, vn, ok := nextPair(h)
		if !ok {
			return Elem{}, false
		}
		if k.matches(f) {
			v, _ := Read(h[fn : fn+vn])
			return v, true
		}
		h = h[fn+vn:]
	}
}

// HashSet appends to dst the hash h with pairs (field, value, field, value...) set, and
// returns it with the number of fields that were new. A field already in h keeps its place
// and a new one goes at the end, at its first place in pairs; a field named twice in pairs
// takes its last value, as HSET setting the pairs one after the other leaves it.
func HashSet(dst, h []byte, pairs [][]byte) ([]byte, int) {
	var inH uint64 // bit i: pairs[2i] names a field of h, for the first 64 pairs
	for rest := h; ; {
		f, fn, vn, ok := nextPair(rest)
		if !ok {
			break
		}
		last := -1
		for i := 0; i+1 < len(pairs); i += 2 {
			if f.Equal(pairs[i]) {
				last = i + 1
				if i/2 < 64 {
					inH |= 1 << (i / 2)
				}
			}
		}
		dst = append(dst, rest[:fn]...)
		if last >= 0 {
			dst = AppendString(dst, pairs[last])
		} else {
			dst = append(dst, rest[fn:fn+vn]...)
		}
		rest = rest[fn+vn:]
	}
	added := 0
	for i := 0; i+1 < len(pairs); i += 2 {
		if i/2 < 64 && inH&(1<<(i/2)) != 0 || namedBefore(pairs[:i], pairs[i]) {
			continue
		}
		if i/2 >= 64 {
			if _, ok := HashGet(h, pairs[i]); ok {
				continue
			}
		}
		dst = AppendString(dst, pairs[i])
		dst = AppendString(dst, pairs[lastValue(pairs, pairs[i])])
		added++
	}
	return dst, added
}

// lastValue returns the index in pairs of the value last given to field.
func lastValue(pairs [][]byte, field []byte) int {
	for i := len(pairs) - 2; i >= 0; i -= 2 {
		if string(pairs[i]) == string(field) {
			return i + 1
		}
	}
	return -1
}

// namedBefore reports whether field is one of the fields in pairs.
func namedBefore(pairs [][]byte, field []byte) bool {
	for i := 0; i < len(pairs); i += 2 {
		if string(pairs[i]) == string(field) {
			return true
		}
	}
	return false
}

// HashDel appends to dst the hash h without fields, and returns it with the number of
// fields removed (a field named twice counts once, as HDEL counts it).
func HashDel(dst, h []byte, fields [][]byte) ([]byte, int) {
	removed := 0
	for {
		f, fn, vn, ok := nextPair(h)
		if !ok {
			return dst, removed
		}
		if named(fields, f) {
			removed++
		} else {
			dst = append(dst, h[:fn+vn]...)
		}
		h = h[fn+vn:]
	}
}

func named(fields [][]byte, f Elem) bool {
	for _, s := range fields {
		if f.Equal(s) {
			return true
		}
	}
	return false
}

// HashPairs yields the hash h's fields and values in order; their bytes alias h.
func HashPairs(h []byte) iter.Seq2[Elem, Elem] {
	return func(yield func(Elem, Elem) bool) {
		for {
			f, fn, vn, ok := nextPair(h)
			if !ok {
				return
			}
			v, _ := Read(h[fn : fn+vn])
			if !yield(f, v) {
				return
			}
			h = h[fn+vn:]
		}
	}
}

// HashOffsets appends to dst where each of the hash h's pairs starts, so that HashPairAt
// reads any of them at once (HRANDFIELD's repeated random picks).
func HashOffsets(dst []int, h []byte) []int {
	for off := 0; ; {
		_, fn, vn, ok := nextPair(h[off:])
		if !ok {
			return dst
		}
		dst = append(dst, off)
		off += fn + vn
	}
}

// HashPairAt returns the field and value of the pair that starts at off in h, an offset
// HashOffsets returned.
func HashPairAt(h []byte, off int) (field, value Elem) {
	field, fn := Read(h[off:])
	value, _ = Read(h[off+fn:])
	return field, value
}

// Hash is a hash's bytes as the keyspace keeps them, read: its pack, and the index in front
// of it (index.go) when it has passed its listpack limits.
type Hash struct {
	Pack []byte
	ix   index
}

// HashOf reads b, a hash's bytes; indexed tells whether they start with an index.
func HashOf(b []byte, indexed bool) Hash {
	if !indexed {
		return Hash{Pack: b}
	}
	n := ixLen(b)
	return Hash{Pack: b[n:], ix: index(b[:n])}
}

// Get is HashGet of the hash.
func (h Hash) Get(field []byte) (Elem, bool) {
	if !h.ix.hashed() {
		return HashGet(h.Pack, field)
	}
	at, k, _, _, ok := h.ix.find(h.Pack, field)
	if !ok {
		return Elem{}, false
	}
	v, _ := Read(h.Pack[at+k:])
	return v, true
}

// HashEditor edits a big hash copy-on-write (indexed), field by field: what HashSet and
// HashDel do to a small one, at the cost of the fields named rather than of the hash.
type HashEditor struct {
	indexed
	Num int64 // fields
}

// NewHashEditor starts editing h, a big hash of num fields, building in buf (its bytes
// reused).
func NewHashEditor(h Hash, num int64, buf []byte) HashEditor {
	return HashEditor{indexed: indexed{Z: h.Pack, ix: h.ix, buf: buf[:0]}, Num: num}
}

// IndexHash returns the hash pack of num fields with an index in front, in new memory: a
// hash that has just passed its listpack limits.
func IndexHash(pack []byte, num int64) []byte {
	e := NewHashEditor(Hash{Pack: pack}, num, nil)
	e.own(true, int(num))
	return e.Bytes()
}

// Set sets field to value, a new field going at the end, and reports whether it was new.
func (e *HashEditor) Set(field, value []byte) bool {
	e.own(true, int(e.Num))
	if at, k, _, _, ok := e.ix.find(e.Z, field); ok {
		old := Skip(e.Z[at+k:])
		AppendString(e.resize(at+k, old, ElemLen(value))[:0], value)
		return false
	}
	at := len(e.Z)
	room := e.makeRoom(at, ElemLen(field)+ElemLen(value))
	AppendString(AppendString(room[:0], field), value)
	e.indexInsert(at, len(room), int(e.Num))
	e.Num++
	return true
}

// Del deletes field, and reports whether it was there.
func (e *HashEditor) Del(field []byte) bool {
	at, k, ok := 0, 0, false
	if e.ix.hashed() {
		at, k, _, _, ok = e.ix.find(e.Z, field)
	} else {
		at, k, ok = hashFind(e.Z, field)
	}
	if !ok {
		return false
	}
	e.deleteSpan(at, at+k+Skip(e.Z[at+k:]), true, int(e.Num))
	e.Num--
	e.shrunk(int(e.Num))
	return true
}

// hashFind finds field in the pack h by walking it: its offset and the bytes it takes.
func hashFind(h, field []byte) (at, k int, ok bool) {
	key := keyOf(field)
	for {
		f, fn, vn, ok := nextPair(h[at:])
		if !ok {
			return 0, 0, false
		}
		if key.matches(f) {
			return at, fn, true
		}
		at += fn + vn
	}
}
