package collection

import (
	"crypto/rand"
	"encoding/binary"
	"hash/maphash"
)

// A sorted set past its listpack limits (Redis's skiplist encoding) keeps an index in
// front of its pack, so that its commands cost what they cost on Redis's skip list and
// dict rather than a walk of the whole pack: the pack stays the set's one copy of its
// entries, in order, and every read of a small set works on a big one unchanged. The
// index has two parts:
//
//   - groups: the pack cut into runs of 32 to 64 entries, each known by the offset of its
//     first entry and its count. A place by score, member or rank is a binary search over
//     the groups' first entries and a walk of one group; a rank is the counts before it.
//   - slots: a hash table of the members, open addressing with linear probing, each slot
//     the member's group and 39 bits of its hash, so that finding a member walks only the
//     group its slot names. Two members with the same 39 bits have the same home slot, so
//     either's slot serves either: moving one to another group may relabel the other's.
//     The hash's seed is the process's, named in the index by a random epoch: an index
//     written by another process (read from the log, or sent by a primary) is used for its
//     groups only, finds members by walking, and has its slots rebuilt at its next write.
//
// An index is: the epoch (8 bytes), the number of slots (4, a power of 2), of groups (4)
// and of deleted slots (4); then the slots (8 bytes each), then the groups (the first
// entry's offset in the pack and the count, 4 bytes each). A set's index costs about 20
// bytes a member, where Redis's skip list and dict cost some 80.

// zixGroup is the entries of each half of a group that splits at twice as many (a
// variable for the tests, which make groups small).
var zixGroup = 32

const (
	zixHead   = 20
	slotLive  = 1 << 63
	slotGone  = 1 // a deleted slot, which probes pass over
	slotHash  = 1<<39 - 1
	slotShift = 39
	maxGroups = 1 << 24
)

var (
	zixSeed  = maphash.MakeSeed()
	zixEpoch = func() uint64 {
		var b [8]byte
		rand.Read(b[:])
		return binary.LittleEndian.Uint64(b[:]) | 1
	}()
)

// zix is an index as it stands in front of a pack.
type zix []byte

func (x zix) epoch() uint64 { return binary.LittleEndian.Uint64(x) }
func (x zix) nslots() int   { return int(binary.LittleEndian.Uint32(x[8:])) }
func (x zix) ngroups() int  { return int(binary.LittleEndian.Uint32(x[12:])) }
func (x zix) ngone() int    { return int(binary.LittleEndian.Uint32(x[16:])) }
func (x zix) setNGone(n int) {
	binary.LittleEndian.PutUint32(x[16:], uint32(n))
}

// hashed reports whether x's slots are this process's to use.
func (x zix) hashed() bool { return len(x) > 0 && x.epoch() == zixEpoch && x.nslots() > 0 }

func (x zix) slot(i int) uint64 { return binary.LittleEndian.Uint64(x[zixHead+8*i:]) }
func (x zix) setSlot(i int, s uint64) {
	binary.LittleEndian.PutUint64(x[zixHead+8*i:], s)
}

func (x zix) groupAt(g int) int { return zixHead + 8*x.nslots() + 8*g }
func (x zix) group(g int) (off, n int) {
	at := x.groupAt(g)
	return int(binary.LittleEndian.Uint32(x[at:])), int(binary.LittleEndian.Uint32(x[at+4:]))
}
func (x zix) setGroup(g, off, n int) {
	at := x.groupAt(g)
	binary.LittleEndian.PutUint32(x[at:], uint32(off))
	binary.LittleEndian.PutUint32(x[at+4:], uint32(n))
}

// zixLen returns the length of the index at the start of b, 0 when b cannot start with one.
func zixLen(b []byte) int {
	if len(b) < zixHead {
		return 0
	}
	n := zixHead + 8*uint64(binary.LittleEndian.Uint32(b[8:])) + 8*uint64(binary.LittleEndian.Uint32(b[12:]))
	if n > uint64(len(b)) {
		return 0
	}
	return int(n)
}

// memberHash hashes a member as its pack element's bytes (canonical: equal members, equal
// bytes).
func memberHash(raw []byte) uint64 { return maphash.Bytes(zixSeed, raw) }

// keyHash is memberHash of the element k encodes.
func (k *zmemberKey) hash() uint64 {
	var h maphash.Hash
	h.SetSeed(zixSeed)
	h.Write(k.head[:k.n])
	h.Write(k.body)
	return h.Sum64()
}

// groupOf returns the group holding the entry at off: the last whose first entry is not after it.
func (x zix) groupOf(off int) int {
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
func (x zix) rankOf(g int) int {
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
func (x zix) seek(z []byte, past func(e []byte, score float64) bool) (off, rank, g int) {
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

// find finds member in z by the slots.
func (x zix) find(z, member []byte) ZLoc {
	key := zkeyOf(member)
	h := key.hash()
	mask := x.nslots() - 1
	want := h & slotHash
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := x.slot(i)
		if s == 0 {
			return ZLoc{}
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
			sc, j := zreadScore(z[off+k:])
			if j == 0 {
				break
			}
			if key.equal(z[off : off+k]) {
				return ZLoc{Found: true, At: off, End: off + k + j, Rank: x.rankOf(g) + r, Score: sc}
			}
			off += k + j
		}
	}
}

// ZSet is a sorted set's bytes as the keyspace keeps them, read: its pack, and the index in
// front of it when it has one.
type ZSet struct {
	Pack []byte
	ix   zix
}

// ZSetOf reads b, a sorted set's bytes; indexed tells whether they start with an index.
func ZSetOf(b []byte, indexed bool) ZSet {
	if !indexed {
		return ZSet{Pack: b}
	}
	n := zixLen(b)
	return ZSet{Pack: b[n:], ix: zix(b[:n])}
}

// Find finds member: its entry, rank and score.
func (z ZSet) Find(member []byte) ZLoc {
	if z.ix.hashed() {
		return z.ix.find(z.Pack, member)
	}
	return ZFind(z.Pack, member)
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

// zixSize returns the slots and groups of the index of a set of num members.
func zixSize(num int) (nslots, ngroups int) {
	nslots = 16
	for nslots*3 < num*4 {
		nslots *= 2
	}
	ngroups = (num + zixGroup - 1) / zixGroup
	if ngroups > maxGroups {
		nslots = 0 // too many groups for a slot to name: members are found by walking
	}
	return nslots, ngroups
}

// zixBuild writes into x, zixSize(num) long, the index of z, a pack of num entries.
func zixBuild(x zix, z []byte, num int) {
	nslots, ngroups := zixSize(num)
	clear(x)
	binary.LittleEndian.PutUint64(x, zixEpoch)
	binary.LittleEndian.PutUint32(x[8:], uint32(nslots))
	binary.LittleEndian.PutUint32(x[12:], uint32(ngroups))
	off := 0
	for g := range ngroups {
		n := min(zixGroup, num-g*zixGroup)
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
func (x zix) insertSlot(h uint64, g int) {
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
func (x zix) slotOf(h uint64, g int) int {
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
func (x zix) deleteSlot(h uint64, g int) {
	if i := x.slotOf(h, g); i >= 0 {
		x.setSlot(i, slotGone)
		x.setNGone(x.ngone() + 1)
	}
}

// moveSlot relabels the slot of a member of hash h from group g to group to.
func (x zix) moveSlot(h uint64, g, to int) {
	if i := x.slotOf(h, g); i >= 0 {
		x.setSlot(i, slotLive|uint64(to)<<slotShift|h&slotHash)
	}
}

// renumber moves every slot of a group from g on by delta.
func (x zix) renumber(g, delta int) {
	for i := range x.nslots() {
		s := x.slot(i)
		if s&slotLive != 0 {
			if sg := int(s>>slotShift) & (maxGroups - 1); sg >= g {
				x.setSlot(i, slotLive|uint64(sg+delta)<<slotShift|s&slotHash)
			}
		}
	}
}
