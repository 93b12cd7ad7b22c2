package collection

import (
	"crypto/rand"
	"encoding/binary"
	"hash/maphash"
)

// A sorted set or a hash past its listpack limits (Redis's skiplist and hashtable
// encodings) keeps an index in front of its pack, so that its commands cost what they cost
// on Redis's skip list and dict rather than a walk of the whole pack: the pack stays the
// one copy of its entries (a member and its score, a field and its value), in order, and
// every read of a small one works on a big one unchanged. The index has two parts:
//
//   - groups: the pack cut into runs of 32 to 64 entries, each known by the offset of its
//     first entry and its count. A place by score, member or rank is a binary search over
//     the groups' first entries and a walk of one group (in a set, ordered); a rank is the
//     counts before it.
//   - slots: a hash table of the members (or fields), open addressing with linear probing,
//     each slot the member's group and 39 bits of its hash, so that finding a member walks
//     only the group its slot names. Two members with the same 39 bits have the same home slot, so
//     either's slot serves either: moving one to another group may relabel the other's.
//     The hash's seed is the process's, named in the index by a random epoch: an index
//     written by another process (read from the log, or sent by a primary) is used for its
//     groups only, finds members by walking, and has its slots rebuilt at its next write.
//
// An index is: the epoch (8 bytes), the number of slots (4, a power of 2), of groups (4)
// and of deleted slots (4); then the slots (8 bytes each), then the groups (the first
// entry's offset in the pack and the count, 4 bytes each). An index costs 11 to 22 bytes a
// member (a set of 1,000 timestamps: 16.7), where Redis's skip list and dict cost some 45
// beside the members themselves.

// ixGroup is the entries of each half of a group that splits at twice as many (a
// variable for the tests, which make groups small).
var ixGroup = 32

const (
	ixHead    = 20
	slotLive  = 1 << 63
	slotGone  = 1 // a deleted slot, which probes pass over
	slotHash  = 1<<39 - 1
	slotShift = 39
	maxGroups = 1 << 24
)

var (
	ixSeed  = maphash.MakeSeed()
	ixEpoch = func() uint64 {
		var b [8]byte
		rand.Read(b[:])
		return binary.LittleEndian.Uint64(b[:]) | 1
	}()
)

// index is an index as it stands in front of a pack.
type index []byte

func (x index) epoch() uint64 { return binary.LittleEndian.Uint64(x) }
func (x index) nslots() int   { return int(binary.LittleEndian.Uint32(x[8:])) }
func (x index) ngroups() int  { return int(binary.LittleEndian.Uint32(x[12:])) }
func (x index) ngone() int    { return int(binary.LittleEndian.Uint32(x[16:])) }
func (x index) setNGone(n int) {
	binary.LittleEndian.PutUint32(x[16:], uint32(n))
}

// hashed reports whether x's slots are this process's to use.
func (x index) hashed() bool { return len(x) > 0 && x.epoch() == ixEpoch && x.nslots() > 0 }

func (x index) slot(i int) uint64 { return binary.LittleEndian.Uint64(x[ixHead+8*i:]) }
func (x index) setSlot(i int, s uint64) {
	binary.LittleEndian.PutUint64(x[ixHead+8*i:], s)
}

func (x index) groupAt(g int) int { return ixHead + 8*x.nslots() + 8*g }
func (x index) group(g int) (off, n int) {
	at := x.groupAt(g)
	return int(binary.LittleEndian.Uint32(x[at:])), int(binary.LittleEndian.Uint32(x[at+4:]))
}
func (x index) setGroup(g, off, n int) {
	at := x.groupAt(g)
	binary.LittleEndian.PutUint32(x[at:], uint32(off))
	binary.LittleEndian.PutUint32(x[at+4:], uint32(n))
}

// ixLen returns the length of the index at the start of b, 0 when b cannot start with one.
func ixLen(b []byte) int {
	if len(b) < ixHead {
		return 0
	}
	n := ixHead + 8*uint64(binary.LittleEndian.Uint32(b[8:])) + 8*uint64(binary.LittleEndian.Uint32(b[12:]))
	if n > uint64(len(b)) {
		return 0
	}
	return int(n)
}

// memberHash hashes a member as its pack element's bytes (canonical: equal members, equal
// bytes).
func memberHash(raw []byte) uint64 { return maphash.Bytes(ixSeed, raw) }

// hash is memberHash of the element k encodes.
func (k *zmemberKey) hash() uint64 {
	var h maphash.Hash
	h.SetSeed(ixSeed)
	h.Write(k.head[:k.n])
	h.Write(k.body)
	return h.Sum64()
}

// groupOf returns the group holding the entry at off: the last whose first entry is not after it.
func (x index) groupOf(off int) int {
	lo, hi := 0, x.ngroups()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if o, _ := x.group(m); o <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return max(lo-1, 0)
}

// rankOf returns the entries in the groups before g.
func (x index) rankOf(g int) int {
	r := 0
	for i := range g {
		_, n := x.group(i)
		r += n
	}
	return r
}

// seek returns the first entry of z for which past (false, then true, along the set) is
// true: its offset (len(z) when none), rank and group (where an entry put at that offset
// belongs; -1 when there are no groups).
func (x index) seek(z []byte, past func(e []byte, score float64) bool) (off, rank, g int) {
	ng := x.ngroups()
	if ng == 0 {
		return 0, 0, -1
	}
	lo, hi := 1, ng // groups from 1 whose first entry is not past come before
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		o, _ := x.group(m)
		if zpast(z[o:], past) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	g = lo - 1
	off, n := x.group(g)
	rank = x.rankOf(g)
	for ; n > 0 && off < len(z); n-- {
		if zpast(z[off:], past) {
			return off, rank, g
		}
		k := zskip(z[off:])
		if k == 0 {
			break
		}
		off += k
		rank++
	}
	return off, rank, g
}

// zpast calls past with the entry at the start of z.
func zpast(z []byte, past func(e []byte, score float64) bool) bool {
	k := Skip(z)
	s, _ := zreadScore(z[k:])
	return past(z, s)
}

// find finds the entry of z whose first element is member (a set's member, a hash's
// field) by the slots: its offset, the bytes of that element, and its group and place in
// the group (its rank is x.rankOf(g) + r, which costs a pass over the groups: only a
// sorted set's rank needs it).
func (x index) find(z, member []byte) (at, k, g, r int, ok bool) {
	key := zkeyOf(member)
	h := key.hash()
	mask := x.nslots() - 1
	want := h & slotHash
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := x.slot(i)
		if s == 0 {
			return 0, 0, 0, 0, false
		}
		if s&slotLive == 0 || s&slotHash != want {
			continue
		}
		g := int(s>>slotShift) & (maxGroups - 1)
		if g >= x.ngroups() {
			continue
		}
		off, n := x.group(g)
		for r := 0; r < n && off < len(z); r++ {
			k := Skip(z[off:])
			if k == 0 {
				break
			}
			if key.equal(z[off:], k) {
				return off, k, g, r, true
			}
			e := zskip(z[off:])
			if e == 0 {
				break
			}
			off += e
		}
	}
}

// ZSet is a sorted set's bytes as the keyspace keeps them, read: its pack, and the index in
// front of it when it has one.
type ZSet struct {
	Pack []byte
	ix   index
}

// ZSetOf reads b, a sorted set's bytes; indexed tells whether they start with an index.
func ZSetOf(b []byte, indexed bool) ZSet {
	if !indexed {
		return ZSet{Pack: b}
	}
	n := ixLen(b)
	return ZSet{Pack: b[n:], ix: index(b[:n])}
}

// Find finds member: its entry, rank and score.
func (z ZSet) Find(member []byte) ZLoc {
	if !z.ix.hashed() {
		return ZFind(z.Pack, member)
	}
	at, k, g, r, ok := z.ix.find(z.Pack, member)
	if !ok {
		return ZLoc{}
	}
	rank := z.ix.rankOf(g) + r
	s, j := zreadScore(z.Pack[at+k:])
	return ZLoc{Found: true, At: at, End: at + k + j, Rank: rank, Score: s}
}

// Locate is ZLocate of the set: member, and where an entry of score for it goes.
func (z ZSet) Locate(member []byte, score float64) ZLoc {
	if len(z.ix) == 0 || z.ix.ngroups() == 0 {
		return ZLocate(z.Pack, member, score)
	}
	loc := z.Find(member)
	loc.Ins, _, _ = z.ix.seek(z.Pack, func(e []byte, s float64) bool {
		return s >= score && zafter(e, s, score, member)
	})
	return loc
}

// Seek returns the offset of the entry of rank i, len(z.Pack) when there are not that many.
func (z ZSet) Seek(i int) int {
	if len(z.ix) == 0 || z.ix.ngroups() == 0 {
		return ZSeek(z.Pack, i)
	}
	for g := range z.ix.ngroups() {
		off, n := z.ix.group(g)
		if i < n {
			return off + ZSeek(z.Pack[off:], i)
		}
		i -= n
	}
	return len(z.Pack)
}

// ScoreSpan is ZScoreSpan of the set.
func (z ZSet) ScoreSpan(r ScoreRange) (from, to int, n int64, rank int) {
	if len(z.ix) == 0 || z.ix.ngroups() == 0 {
		return ZScoreSpan(z.Pack, r)
	}
	if r.Empty() {
		return 0, 0, 0, 0
	}
	from, rank, _ = z.ix.seek(z.Pack, func(_ []byte, s float64) bool { return r.GteMin(s) })
	to, end, _ := z.ix.seek(z.Pack, func(_ []byte, s float64) bool { return !r.LteMax(s) })
	if end <= rank {
		return 0, 0, 0, 0
	}
	return from, to, int64(end - rank), rank
}

// ixSize returns the slots and groups of the index of a set of num members.
func ixSize(num int) (nslots, ngroups int) {
	nslots = 16
	for nslots*3 < num*4 {
		nslots *= 2
	}
	ngroups = (num + ixGroup - 1) / ixGroup
	if ngroups > maxGroups {
		nslots = 0 // too many groups for a slot to name: members are found by walking
	}
	return nslots, ngroups
}

// ixBuild writes into x, ixSize(num) long, the index of z, a pack of num entries.
func ixBuild(x index, z []byte, num int) {
	nslots, ngroups := ixSize(num)
	clear(x)
	binary.LittleEndian.PutUint64(x, ixEpoch)
	binary.LittleEndian.PutUint32(x[8:], uint32(nslots))
	binary.LittleEndian.PutUint32(x[12:], uint32(ngroups))
	off := 0
	for g := range ngroups {
		n := min(ixGroup, num-g*ixGroup)
		x.setGroup(g, off, n)
		for range n {
			k := Skip(z[off:])
			if nslots > 0 {
				x.insertSlot(memberHash(z[off:off+k]), g)
			}
			off += k + Skip(z[off+k:])
		}
	}
}

// insertSlot puts a slot for a member of hash h in group g.
func (x index) insertSlot(h uint64, g int) {
	mask := x.nslots() - 1
	i := int(h) & mask
	for ; x.slot(i)&slotLive != 0; i = (i + 1) & mask {
	}
	if x.slot(i) == slotGone {
		x.setNGone(x.ngone() - 1)
	}
	x.setSlot(i, slotLive|uint64(g)<<slotShift|h&slotHash)
}

// slotOf returns the slot of a member of hash h in group g, -1 when there is none.
func (x index) slotOf(h uint64, g int) int {
	mask := x.nslots() - 1
	want := slotLive | uint64(g)<<slotShift | h&slotHash
	for i := int(h) & mask; ; i = (i + 1) & mask {
		switch s := x.slot(i); s {
		case 0:
			return -1
		case want:
			return i
		}
	}
}

// deleteSlot deletes the slot of a member of hash h in group g.
func (x index) deleteSlot(h uint64, g int) {
	if i := x.slotOf(h, g); i >= 0 {
		x.setSlot(i, slotGone)
		x.setNGone(x.ngone() + 1)
	}
}

// moveSlot relabels the slot of a member of hash h from group g to group to.
func (x index) moveSlot(h uint64, g, to int) {
	if i := x.slotOf(h, g); i >= 0 {
		x.setSlot(i, slotLive|uint64(to)<<slotShift|h&slotHash)
	}
}

// renumber moves every slot of a group from g on by delta.
func (x index) renumber(g, delta int) {
	for i := range x.nslots() {
		s := x.slot(i)
		if s&slotLive != 0 {
			if sg := int(s>>slotShift) & (maxGroups - 1); sg >= g {
				x.setSlot(i, slotLive|uint64(sg+delta)<<slotShift|s&slotHash)
			}
		}
	}
}

// indexed is a pack of pairs being edited copy-on-write, with its index in front when it
// has one: Z and ix as they stand, first those it started from (which it never writes
// into: the keyspace's memory), then, from own on, its copy in the caller's buffer, which
// later changes edit in place, the index kept up to date by every one.
type indexed struct {
	Z     []byte
	ix    index
	buf   []byte
	owned bool
}

// Changed reports whether Z is no longer the pack the editor started from.
func (e *indexed) Changed() bool { return e.owned }

// Bytes returns the pack as the keyspace keeps it, once Changed: its index, if any, then Z.
func (e *indexed) Bytes() []byte { return e.buf }

// Buf returns the buffer the editor built in, to be kept for the next one.
func (e *indexed) Buf() []byte { return e.buf }

// own makes Z the editor's copy; with an index of this process's when indexing (Z holds
// num entries).
func (e *indexed) own(indexing bool, num int) {
	if e.owned {
		return
	}
	if indexing && !e.ix.hashed() {
		e.reindex(num)
		return
	}
	e.buf = append(append(e.buf[:0], e.ix...), e.Z...)
	e.owned = true
	e.reslice(len(e.ix))
}

// reslice points ix and Z into buf, whose first n bytes are the index.
func (e *indexed) reslice(n int) {
	e.ix, e.Z = index(e.buf[:n:n]), e.buf[n:]
}

// reindex builds the index of Z, num entries, anew, in front of it in buf.
func (e *indexed) reindex(num int) {
	nslots, ngroups := ixSize(num)
	n := ixHead + 8*nslots + 8*ngroups
	if !e.owned {
		e.buf = append(e.buf[:0], make([]byte, n)...)
		e.buf = append(e.buf, e.Z...)
		e.owned = true
	} else if d := n - len(e.ix); d != 0 {
		z := len(e.Z)
		if d > 0 {
			e.buf = append(e.buf, make([]byte, d)...)
		}
		copy(e.buf[n:n+z], e.buf[len(e.ix):len(e.ix)+z])
		e.buf = e.buf[:n+z]
	}
	e.reslice(n)
	ixBuild(e.ix, e.Z, num)
}

// makeRoom makes n bytes of room at Z[at], which must be owned, and returns it.
func (e *indexed) makeRoom(at, n int) []byte {
	ixn := len(e.ix)
	old := len(e.buf)
	e.buf = append(e.buf, make([]byte, n)...)
	copy(e.buf[ixn+at+n:], e.buf[ixn+at:old])
	e.reslice(ixn)
	return e.Z[at : at+n]
}

// resize makes the bytes Z[at:at+old] n long, keeping what comes before and after (a
// value set anew in place); the groups after it move.
func (e *indexed) resize(at, old, n int) []byte {
	ixn := len(e.ix)
	if d := n - old; d > 0 {
		end := len(e.buf)
		e.buf = append(e.buf, make([]byte, d)...)
		copy(e.buf[ixn+at+n:], e.buf[ixn+at+old:end])
	} else if d < 0 {
		e.buf = e.buf[:ixn+at+n+copy(e.buf[ixn+at+n:], e.buf[ixn+at+old:])]
	}
	e.reslice(ixn)
	if ixn > 0 && n != old {
		for g := e.ix.groupOf(at) + 1; g < e.ix.ngroups(); g++ {
			o, c := e.ix.group(g)
			e.ix.setGroup(g, o+n-old, c)
		}
	}
	return e.Z[at : at+n]
}

// indexInsert indexes the entry of size bytes just put at Z[at]; num is the entries before it.
func (e *indexed) indexInsert(at, size, num int) {
	if len(e.ix) == 0 {
		return
	}
	if e.ix.ngroups() == 0 {
		e.addGroup(0, 0, 0)
	}
	x := e.ix
	g := x.groupOf(at)
	for j := g + 1; j < x.ngroups(); j++ {
		off, c := x.group(j)
		x.setGroup(j, off+size, c)
	}
	off, c := x.group(g)
	x.setGroup(g, off, c+1)
	if x.nslots() > 0 {
		if (num+1+x.ngone())*4 > x.nslots()*3 {
			e.reindex(num + 1)
			return
		}
		x.insertSlot(memberHash(e.Z[at:at+Skip(e.Z[at:])]), g)
	}
	if c+1 > 2*ixGroup {
		e.split(g)
	}
}

// addGroup inserts group g, of n entries from off.
func (e *indexed) addGroup(g, off, n int) {
	x := e.ix
	at := x.groupAt(g)
	e.buf = append(e.buf, make([]byte, 8)...)
	copy(e.buf[at+8:], e.buf[at:])
	binary.LittleEndian.PutUint32(e.buf[12:], uint32(x.ngroups()+1))
	e.reslice(len(x) + 8)
	e.ix.setGroup(g, off, n)
}

// split cuts group g in two, its first ixGroup entries and the rest.
func (e *indexed) split(g int) {
	off, c := e.ix.group(g)
	mid := off + ZSeek(e.Z[off:], ixGroup)
	e.ix.setGroup(g, off, ixGroup)
	e.addGroup(g+1, mid, c-ixGroup)
	x := e.ix
	if x.nslots() == 0 {
		return
	}
	x.renumber(g+1, 1)
	for at, i := mid, ixGroup; i < c; i++ {
		k := Skip(e.Z[at:])
		x.moveSlot(memberHash(e.Z[at:at+k]), g, g+1)
		at += zskip(e.Z[at:])
	}
}

// deleteSpan removes the entries Z[from:to] and their index, building the copy without
// them when it is the first change (a sliding log's oldest entries then cost no move).
// indexing and num are own's.
func (e *indexed) deleteSpan(from, to int, indexing bool, num int) {
	if e.owned || indexing && !e.ix.hashed() {
		e.own(indexing, num)
		e.delete(from, to)
		return
	}
	z, ix := e.Z, e.ix
	e.buf = append(append(append(e.buf[:0], ix...), z[:from]...), z[to:]...)
	e.owned = true
	e.reslice(len(ix))
	if len(ix) > 0 {
		e.forget(z[from:to], from)
		e.closeGap(from, to)
	}
}

// shrunk rebuilds the index of Z, now num entries, if it has shrunk a lot: smaller
// slots, fuller groups.
func (e *indexed) shrunk(num int) {
	if x := e.ix; len(x) > 0 && num > 0 &&
		(x.nslots() > 16 && num*8 < x.nslots() || x.ngroups() > num/16+2) {
		e.reindex(num)
	}
}

// delete removes the entries of Z[from:to], which must be owned, and their index.
func (e *indexed) delete(from, to int) {
	n := len(e.ix)
	if n > 0 {
		e.forget(e.Z[from:to], from)
	}
	e.buf = e.buf[:n+from+copy(e.buf[n+from:], e.buf[n+to:])]
	e.reslice(n)
	if n > 0 {
		e.closeGap(from, to)
	}
}

// forget takes out of the index the entries of span, which were at Z[from:]: their
// groups count them no more, and their slots are deleted.
func (e *indexed) forget(span []byte, from int) {
	x := e.ix
	ng := x.ngroups()
	g := x.groupOf(from)
	for off := 0; off < len(span); {
		for g+1 < ng {
			if o, _ := x.group(g + 1); o > from+off {
				break
			}
			g++
		}
		k := Skip(span[off:])
		if x.nslots() > 0 {
			x.deleteSlot(memberHash(span[off:off+k]), g)
		}
		o, c := x.group(g)
		x.setGroup(g, o, c-1)
		k = zskip(span[off:])
		if k == 0 {
			break
		}
		off += k
	}
}

// closeGap moves the groups past Z[from:to], whose entries forget took out, back over
// it, and drops the groups left empty.
func (e *indexed) closeGap(from, to int) {
	x := e.ix
	ng := x.ngroups()
	d := to - from
	empty, emptyEnd := -1, -1
	for j := range ng {
		o, c := x.group(j)
		switch {
		case c == 0:
			if empty < 0 {
				empty = j
			}
			emptyEnd = j + 1
			continue
		case o > from && o < to:
			o = from
		case o >= to:
			o -= d
		}
		x.setGroup(j, o, c)
	}
	if empty < 0 {
		return
	}
	gone := emptyEnd - empty
	at, end := x.groupAt(empty), x.groupAt(emptyEnd)
	e.buf = e.buf[:at+copy(e.buf[at:], e.buf[end:])]
	binary.LittleEndian.PutUint32(e.buf[12:], uint32(ng-gone))
	e.reslice(len(x) - 8*gone)
	if e.ix.nslots() > 0 {
		e.ix.renumber(emptyEnd, -gone)
	}
}
