package collection

import "iter"

// A set takes one of three encodings, as Redis 7.0's intset and hashtable:
//
//   - Intset: every member an integer, at most set-max-intset-entries of them; the pack
//     is the members as integer elements in ascending order, as Redis's intset keeps
//     them, so that SMEMBERS and SSCAN list them in Redis's order.
//   - SmallSet: Redis's hashtable, kept as a pack while it is small (at most
//     set-max-listpack-entries members, none longer than set-max-listpack-value bytes):
//     the members in the order they came.
//   - BigSet: Redis's hashtable past those limits: a hash whose values are empty (one
//     byte each), held in chunks as a big hash is (a Big, which SetOfBig reads): a member
//     is found without walking the pack, and added or removed in place. Its bytes form
//     (SetEditor.Bytes, and the Big's outside the process) is that hash's pack behind an
//     index of no slots and no groups, which tells an older reader to walk.
//
// A set goes from Intset to SmallSet at its first member that is no integer or past the
// intset's limit, and to BigSet past the small one's; never back, as Redis never converts a
// set back. A set made anew (SADD to a new key, the STORE commands, SPOP's rebuilt rest)
// starts as an Intset, as Redis's does.

// SetEncoding is one of a set's encodings.
type SetEncoding uint8

// The set encodings.
const (
	Intset SetEncoding = iota
	SmallSet
	BigSet
)

// SetLimits are the thresholds of a set's encodings, as Redis's set-max-intset-entries,
// set-max-listpack-entries and set-max-listpack-value.
type SetLimits struct {
	IntsetEntries, ListpackEntries, ListpackValue int64
}

// Set is a set's bytes as the keyspace keeps them, read.
type Set struct {
	Pack []byte
	Enc  SetEncoding
	ix   index
	big  *Big // a BigSet held in chunks: Pack is empty
}

// SetOfBig reads b, a big set held in chunks.
func SetOfBig(b *Big) Set { return Set{Enc: BigSet, big: b} }

// SetOf reads b, a set's bytes in encoding enc.
func SetOf(b []byte, enc SetEncoding) Set {
	if enc != BigSet {
		return Set{Pack: b, Enc: enc}
	}
	n := ixLen(b)
	return Set{Pack: b[n:], Enc: enc, ix: index(b[:n])}
}

// Has reports whether member is in the set.
func (s Set) Has(member []byte) bool {
	if s.big != nil {
		_, ok := s.big.HashGet(member)
		return ok
	}
	switch s.Enc {
	case Intset:
		n, ok := canonicalInt(member)
		if !ok {
			return false
		}
		for p := s.Pack; len(p) > 0; {
			e, k := Read(p)
			if k == 0 || e.Int > n {
				return false
			}
			if e.Int == n {
				return true
			}
			p = p[k:]
		}
		return false
	case SmallSet:
		_, _, ok := setFind(s.Pack, member)
		return ok
	}
	_, ok := Hash{Pack: s.Pack, ix: s.ix}.Get(member)
	return ok
}

// setFind finds member in a pack of single members: its offset and the bytes it takes.
// The member is encoded once and compared as bytes (equal members, equal elements), which
// costs a small set's walk a fraction of reading each element.
func setFind(p, member []byte) (at, k int, ok bool) {
	var buf [80]byte
	if ElemLen(member) > len(buf) {
		return setFindKey(p, keyOf(member))
	}
	raw := AppendString(buf[:0], member)
	for at < len(p) {
		k := Skip(p[at:])
		if k == 0 {
			return 0, 0, false
		}
		if k == len(raw) && string(p[at:at+k]) == string(raw) {
			return at, k, true
		}
		at += k
	}
	return 0, 0, false
}

// setFindKey is setFind of a long member, read element by element.
func setFindKey(p []byte, key fieldKey) (at, k int, ok bool) {
	for at < len(p) {
		e, k := Read(p[at:])
		if k == 0 {
			return 0, 0, false
		}
		if key.matches(e) {
			return at, k, true
		}
		at += k
	}
	return 0, 0, false
}

// step returns the bytes an entry of the set takes at the start of p: a member, and its
// empty value in a big set.
func (s Set) step(p []byte) int {
	if s.Enc == BigSet {
		return zskip(p)
	}
	return Skip(p)
}

// Members yields the set's members in order; their bytes alias the set.
func (s Set) Members() iter.Seq[Elem] {
	return func(yield func(Elem) bool) {
		if s.big != nil {
			for _, r := range s.big.refs {
				for p := r.c.pack; len(p) > 0; p = p[zskip(p):] {
					if e, _ := Read(p); !yield(e) {
						return
					}
				}
			}
			return
		}
		for p := s.Pack; len(p) > 0; {
			e, _ := Read(p)
			k := s.step(p)
			if k == 0 || !yield(e) {
				return
			}
			p = p[k:]
		}
	}
}

// Nth returns the member of rank i (from 0), of a set of more than i members: in a big set
// found by the index's groups, without walking the pack.
func (s Set) Nth(i int) Elem {
	if s.big != nil {
		g, off, _ := s.big.place(i)
		e, _ := Read(s.big.refs[g].c.pack[off:])
		return e
	}
	off := 0
	if s.Enc == BigSet {
		off = ZSet{Pack: s.Pack, ix: s.ix}.Seek(i)
	} else {
		for ; i > 0 && off < len(s.Pack); i-- {
			k := Skip(s.Pack[off:])
			if k == 0 {
				break
			}
			off += k
		}
	}
	e, _ := Read(s.Pack[off:])
	return e
}

// Offsets appends where each of the set's members starts to dst, so that At reads any of
// them at once (SRANDMEMBER's repeated picks); in a set held in chunks, their ranks.
func (s Set) Offsets(dst []int) []int {
	if s.big != nil {
		for i := range s.big.Len() {
			dst = append(dst, i)
		}
		return dst
	}
	for off := 0; off < len(s.Pack); {
		k := s.step(s.Pack[off:])
		if k == 0 {
			break
		}
		dst = append(dst, off)
		off += k
	}
	return dst
}

// At returns the member at off, an offset Offsets returned.
func (s Set) At(off int) Elem {
	if s.big != nil {
		return s.Nth(off)
	}
	e, _ := Read(s.Pack[off:])
	return e
}

// SetEditor edits a set copy-on-write, member by member, taking its encodings as its
// limits say: what SADD, SREM, SMOVE and SPOP do to a set, and how the STORE commands build
// one.
type SetEditor struct {
	Enc SetEncoding
	Num int64 // members
	lim SetLimits
	// p is a small set's pack: first the one the editor started from, which it never
	// writes into (the keyspace's memory), then, once owned, its copy in buf.
	p       []byte
	buf     []byte
	owned   bool
	big     *Big // a big set's, changed in place
	changed bool // big was
}

// NewSetEditor starts editing s, a set of num members, under lim, building in buf (its
// bytes reused).
func NewSetEditor(s Set, num int64, lim SetLimits, buf []byte) SetEditor {
	e := SetEditor{Enc: s.Enc, Num: num, lim: lim, p: s.Pack, buf: buf[:0], big: s.big}
	if s.Enc == BigSet && s.big == nil { // its bytes form: in chunks now
		e.big, e.p = NewBig(s.Pack, false), nil
		e.big.setHead = true
	}
	return e
}

// NewSet starts a set anew, as Redis makes one: an intset until a member says otherwise.
func NewSet(lim SetLimits, buf []byte) SetEditor {
	return NewSetEditor(Set{}, 0, lim, buf)
}

// Changed reports whether the set is no longer the one the editor started from.
func (e *SetEditor) Changed() bool {
	if e.Enc == BigSet {
		return e.changed
	}
	return e.owned
}

// Bytes returns the set as the keyspace keeps it, once Changed.
func (e *SetEditor) Bytes() []byte {
	if e.Enc == BigSet {
		return e.big.AppendEncoded(nil)
	}
	return e.p
}

// Big returns a big set as the Big that holds it, nil when the set is not big.
func (e *SetEditor) Big() *Big { return e.big }

// Buf returns the buffer the editor built in, to be kept for the next one.
func (e *SetEditor) Buf() []byte {
	return e.buf
}

// Set returns the set as it stands (valid until the next change).
func (e *SetEditor) Set() Set {
	if e.Enc == BigSet {
		return SetOfBig(e.big)
	}
	return Set{Pack: e.p, Enc: e.Enc}
}

// own makes p the editor's copy.
func (e *SetEditor) own() {
	if !e.owned {
		e.buf = append(e.buf[:0], e.p...)
		e.p = e.buf
		e.owned = true
	}
}

// insert puts the element of member at p[at:], which must be owned.
func (e *SetEditor) insert(at int, member []byte) {
	n := ElemLen(member)
	old := len(e.p)
	e.p = append(e.p, make([]byte, n)...)
	copy(e.p[at+n:], e.p[at:old])
	AppendString(e.p[at:at], member)
	e.buf = e.p
}

// Add adds member and reports whether it was new.
func (e *SetEditor) Add(member []byte) bool {
	switch e.Enc {
	case Intset:
		n, ok := canonicalInt(member)
		if !ok {
			e.convert(int64(len(member)))
			return e.Add(member)
		}
		at := 0
		for at < len(e.p) {
			x, k := Read(e.p[at:])
			if k == 0 || x.Int > n {
				break
			}
			if x.Int == n {
				return false
			}
			at += k
		}
		e.own()
		e.insert(at, member)
		e.Num++
		if e.Num > e.lim.IntsetEntries {
			e.convert(0)
		}
		return true
	case SmallSet:
		if _, _, ok := setFind(e.p, member); ok {
			return false
		}
		if e.Num+1 > e.lim.ListpackEntries || int64(len(member)) > e.lim.ListpackValue {
			e.toBig()
			return e.Add(member)
		}
		e.own()
		e.insert(len(e.p), member)
		e.Num++
		return true
	}
	if e.Set().Has(member) { // so that the set is left unchanged, as Redis leaves it
		return false
	}
	e.big.HashSet(member, nil)
	e.Num++
	e.changed = true
	return true
}

// convert takes an intset to a small set, or to a big one when it has more members than a
// small one holds or longest (the longest member about to come) is longer.
func (e *SetEditor) convert(longest int64) {
	e.Enc = SmallSet
	if e.Num > e.lim.ListpackEntries || longest > e.lim.ListpackValue || e.longest() > e.lim.ListpackValue {
		e.toBig()
	}
}

// longest returns the length of the longest member of a small set.
func (e *SetEditor) longest() int64 {
	n := 0
	for m := range e.Set().Members() {
		n = max(n, m.Len())
	}
	return int64(n)
}

// toBig makes a small set a big one: its members paired with empty values, indexed.
func (e *SetEditor) toBig() {
	pairs := make([]byte, 0, len(e.p)+int(e.Num))
	for p := e.p; len(p) > 0; {
		k := Skip(p)
		if k == 0 {
			break
		}
		pairs = append(append(pairs, p[:k]...), 0)
		p = p[k:]
	}
	e.big = NewBig(pairs, false)
	e.big.setHead = true
	e.Enc, e.p, e.owned, e.changed = BigSet, nil, false, true
}

// Remove removes member and reports whether it was there.
func (e *SetEditor) Remove(member []byte) bool {
	if e.Num == 0 {
		return false
	}
	if e.Enc == BigSet {
		if e.big.HashDel(member) {
			e.Num--
			e.changed = true
			return true
		}
		return false
	}
	if _, isInt := canonicalInt(member); e.Enc == Intset && !isInt {
		return false
	}
	at, k, ok := setFind(e.p, member)
	if !ok {
		return false
	}
	if !e.owned {
		e.buf = append(append(e.buf[:0], e.p[:at]...), e.p[at+k:]...)
		e.p, e.owned = e.buf, true
	} else {
		e.p = e.p[:at+copy(e.p[at:], e.p[at+k:])]
		e.buf = e.p
	}
	e.Num--
	return true
}

// Pop removes the member of rank i (the caller's random pick, from 0 to Num-1) and returns
// dst with its string form appended.
func (e *SetEditor) Pop(i int, dst []byte) []byte {
	m := e.Set().Nth(i)
	start := len(dst)
	dst = m.Append(dst)
	e.Remove(dst[start:])
	return dst
}

// SetPack appends to dst the members of s as a pack of members alone, in s's order (a big
// set's without its index and empty values): a set as a payload carries it (DUMP).
func SetPack(dst []byte, s Set) []byte {
	if s.big != nil {
		for m := range s.Members() {
			dst = AppendString(dst, m.Bytes(nil))
		}
		return dst
	}
	for p := s.Pack; len(p) > 0; {
		k, n := Skip(p), s.step(p)
		if k == 0 || n == 0 {
			break
		}
		dst = append(dst, p[:k]...)
		p = p[n:]
	}
	return dst
}

// SetFromPack builds, in new memory, the set of the members pack lists (SetPack's form),
// as an intset when intset, else as a small set or, past lim, a big one; ok is false when
// pack is no such set: an element cut short, a member twice, an intset's member that is no
// integer or out of order. An intset past lim's takes the hashtable encoding, as Redis's.
func SetFromPack(pack []byte, intset bool, lim SetLimits) (e SetEditor, ok bool) {
	if intset {
		e = NewSet(lim, nil)
	} else {
		e = NewSetEditor(Set{Enc: SmallSet}, 0, lim, nil)
	}
	var prev int64
	var buf [24]byte
	for p := pack; len(p) > 0; {
		m, n := Read(p)
		if n == 0 || m.Kind == Float || intset && (m.Kind != Int || e.Num > 0 && m.Int <= prev) {
			return e, false
		}
		prev = m.Int
		if !e.Add(m.Append(buf[:0])) {
			return e, false
		}
		p = p[n:]
	}
	return e, e.Num > 0
}
