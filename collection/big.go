package collection

import (
	"math"
	"slices"
)

// Big is a sorted set or a hash past its listpack limits as the keyspace holds it: by
// reference (keyspace.Value.Obj), changed in place. Its entries are those of the pack the
// set or hash would be (the same elements, in the same order), cut into chunks of up to
// chunkMax() entries and maxChunk bytes, each an allocation of its own: a write rewrites
// the bytes of one chunk, not a copy of the whole (doc.go has the design).
//
//   - refs: the chunks in order, with what a walk needs without touching them: each one's
//     count (a rank is the counts before it), its first score (a sorted set's place by
//     score is a binary search of these), and its seq.
//   - seqs rise along refs, so that the chunk a slot names is found in refs by a binary
//     search of its seq; a chunk put between two others takes the seq half way (all are
//     numbered anew in the rare case that there is no room).
//   - slots: a hash table of the members (or fields), open addressing with linear probing,
//     each slot the member's chunk id and 31 bits of its hash: finding a member walks only
//     that chunk. Growing the table reads the hashes from the slots, no member.
type Big struct {
	sorted   bool  // a sorted set: entries in order of score, then member; else a hash's, as they came
	refs     []ref // the chunks, in order
	byID     []*chunk
	freeIDs  []uint32
	slots    []uint64
	used     int                // live slots: the entries
	gone     int                // deleted slots, which probes pass over
	bytes    int                // the packs' bytes
	setHead  bool               // a big set's: its bytes form has an empty index in front (set.go)
	feeds    [Feeds]feedChanges // what each feed copying b has not taken yet (bigchunks.go)
	tracked  uint8              // the feeds that copy b (Feeds)
	opsFeeds uint8              // those of them that take ops rather than chunks
}

// ref is a chunk's place in Big.refs.
type ref struct {
	c     *chunk
	seq   uint64
	n     int     // entries
	first float64 // a sorted set's: the first entry's score
}

// chunk is a run of a Big's entries, back to back as in a pack.
type chunk struct {
	pack  []byte
	id    uint32
	seq   uint64
	feeds uint8 // bit f: changed since feed f last took b's changes (bigchunks.go)
}

// chunkMax returns the most entries a chunk holds: a write walks and moves about half
// of them, and a chunk splitting moves the refs after it, fewer the more a chunk holds.
func chunkMax() int { return 4 * ixGroup }

const (
	// maxChunk is the most bytes a chunk grows to, unless it holds a single entry: a
	// write moves at most this many.
	maxChunk = 4096
	seqStep  = 1 << 24
	bigLive  = 1 << 63
	bigGone  = 1 // a deleted slot
	bigHash  = 1<<31 - 1
	bigShift = 31
)

// NewBig returns the sorted set (sorted) or hash whose pack is pack, as a Big.
func NewBig(pack []byte, sorted bool) *Big {
	if sorted {
		pack = ZPlain(nil, pack) // its members hashed as their elements: in full
	}
	b := &Big{sorted: sorted}
	b.Rewrite() // new to every feed
	b.rehash(Count(pack) / 2)
	fill, fillBytes := max(chunkMax()*3/4, 1), maxChunk*3/4
	for off := 0; off < len(pack); {
		// A chunk 3/4 full, so that writes find room in it.
		end, n := off, 0
		for n < fill && end < len(pack) {
			k := zskip(pack[end:])
			if k == 0 || n > 0 && end+k-off > fillBytes {
				break
			}
			end += k
			n++
		}
		if n == 0 {
			break // a damaged pack: the whole entries before the damage
		}
		i := len(b.refs)
		c := b.newChunk(i)
		c.pack = append(make([]byte, 0, grow(end-off)), pack[off:end]...)
		b.refs[i].n = n
		b.bytes += end - off
		for at := 0; at < len(c.pack); at += zskip(c.pack[at:]) {
			b.addSlot(memberHash(c.pack[at:at+Skip(c.pack[at:])]), c.id)
		}
		b.refirst(i)
		off = end
	}
	return b
}

// NewBigSet returns the big set whose bytes form is b: the pack of a hash of empty
// values, behind an index or not.
func NewBigSet(b []byte) *Big {
	big := NewBig(b[ixLen(b):], false)
	big.setHead = true
	return big
}

// Len returns the entries.
func (b *Big) Len() int { return b.used }

// EncodedLen returns the length of the set's or hash's pack.
func (b *Big) EncodedLen() int {
	if b.setHead {
		return ixHead + b.bytes
	}
	return b.bytes
}

// AppendEncoded appends the set's or hash's pack to dst: the form it has outside the
// process, and in the keyspace before it is read (a sorted set's or hash's Value.Num2
// without IndexedPack; a set's behind an empty index, NewBigSet's).
func (b *Big) AppendEncoded(dst []byte) []byte {
	dst = slices.Grow(dst, b.EncodedLen())
	if b.setHead {
		dst = append(dst, make([]byte, ixHead)...) // no epoch, slots or groups: read by walking
	}
	for _, r := range b.refs {
		dst = append(dst, r.c.pack...)
	}
	return dst
}

// Footprint returns the heap bytes b holds.
func (b *Big) Footprint() int {
	n := 8*cap(b.slots) + 32*cap(b.refs) + 8*cap(b.byID) + 4*cap(b.freeIDs)
	for _, f := range b.feeds {
		n += 8*cap(f.seqs) + cap(f.ops)
	}
	for _, r := range b.refs {
		n += 48 + cap(r.c.pack)
	}
	return n
}

// Chunks yields the packs of b's chunks in order; together they are b's pack. They alias
// b: valid until it changes.
func (b *Big) Chunks(yield func(pack []byte) bool) {
	for _, r := range b.refs {
		if !yield(r.c.pack) {
			return
		}
	}
}

// grow returns the capacity of a chunk's pack that needs n bytes: some room to grow
// into, none for one past maxChunk (a single big entry costs its size).
func grow(n int) int {
	if n > maxChunk {
		return n
	}
	return min(n+n/4+16, maxChunk+maxChunk/8)
}

// newChunk puts an empty chunk at refs[i] and returns it.
func (b *Big) newChunk(i int) *chunk {
	var id uint32
	if n := len(b.freeIDs); n > 0 {
		id, b.freeIDs = b.freeIDs[n-1], b.freeIDs[:n-1]
	} else {
		id = uint32(len(b.byID))
		b.byID = append(b.byID, nil)
	}
	lo, hi := uint64(0), uint64(0)
	if i > 0 {
		lo = b.refs[i-1].seq
	}
	if i < len(b.refs) {
		hi = b.refs[i].seq
	} else {
		hi = lo + 2*seqStep
	}
	if hi-lo < 2 {
		b.Rewrite() // the feeds know the chunks by their seqs
		for j := range b.refs {
			s := uint64(j+1) * seqStep
			if j >= i {
				s += seqStep
			}
			b.refs[j].seq, b.refs[j].c.seq = s, s
		}
		lo, hi = uint64(i)*seqStep, uint64(i+1)*seqStep
	}
	c := &chunk{id: id, seq: lo + (hi-lo)/2}
	b.byID[id] = c
	b.refs = slices.Insert(b.refs, i, ref{c: c, seq: c.seq})
	b.touch(c)
	return c
}

// dropChunks takes refs[i:j] out, freeing their ids; their slots must be gone already.
func (b *Big) dropChunks(i, j int) {
	for _, r := range b.refs[i:j] {
		b.dropped(r.c)
		b.byID[r.c.id] = nil
		b.freeIDs = append(b.freeIDs, r.c.id)
	}
	b.refs = slices.Delete(b.refs, i, j)
}

// indexOf returns where c is in refs.
func (b *Big) indexOf(c *chunk) int {
	i, _ := b.seqIndex(c.seq)
	return i
}

// refirst notes the first score of chunk i, of a sorted set.
func (b *Big) refirst(i int) {
	if b.sorted && i < len(b.refs) && b.refs[i].n > 0 {
		p := b.refs[i].c.pack
		b.refs[i].first, _ = zreadScore(p[Skip(p):])
	}
}

// The slots.

// rehash makes the table hold n members below 3/4 load, without deleted slots.
func (b *Big) rehash(n int) {
	size := 16
	for size*3 < n*4 {
		size *= 2
	}
	old := b.slots
	b.slots, b.gone = make([]uint64, size), 0
	mask := size - 1
	for _, s := range old {
		if s&bigLive == 0 {
			continue
		}
		i := int(s&bigHash) & mask
		for b.slots[i] != 0 {
			i = (i + 1) & mask
		}
		b.slots[i] = s
	}
}

func (b *Big) addSlot(h uint64, id uint32) {
	if (b.used+b.gone+1)*4 > len(b.slots)*3 {
		b.rehash(b.used + 1)
	}
	mask := len(b.slots) - 1
	i := int(h&bigHash) & mask
	for b.slots[i]&bigLive != 0 {
		i = (i + 1) & mask
	}
	if b.slots[i] == bigGone {
		b.gone--
	}
	b.slots[i] = bigLive | uint64(id)<<bigShift | h&bigHash
	b.used++
}

// slotOf returns the slot of a member of hash h in chunk id, -1 when there is none.
func (b *Big) slotOf(h uint64, id uint32) int {
	mask := len(b.slots) - 1
	want := bigLive | uint64(id)<<bigShift | h&bigHash
	for i := int(h&bigHash) & mask; ; i = (i + 1) & mask {
		switch s := b.slots[i]; s {
		case 0:
			return -1
		case want:
			return i
		}
	}
}

func (b *Big) deleteSlot(h uint64, id uint32) {
	if i := b.slotOf(h, id); i >= 0 {
		b.slots[i] = bigGone
		b.gone++
		b.used--
	}
}

// moveSlots relabels the slots of the entries of pack from chunk id to chunk to.
func (b *Big) moveSlots(pack []byte, id, to uint32) {
	for off := 0; off < len(pack); {
		k := Skip(pack[off:])
		if i := b.slotOf(memberHash(pack[off:off+k]), id); i >= 0 {
			b.slots[i] = b.slots[i]&^(math.MaxUint32<<bigShift&^bigLive) | uint64(to)<<bigShift
		}
		off += k + Skip(pack[off+k:])
	}
}

// forget deletes the slots of the entries of pack, of chunk id.
func (b *Big) forget(pack []byte, id uint32) (n int) {
	for off := 0; off < len(pack); n++ {
		k := Skip(pack[off:])
		if k == 0 {
			break
		}
		b.deleteSlot(memberHash(pack[off:off+k]), id)
		off += k + Skip(pack[off+k:])
	}
	return n
}

// find finds the entry whose first element is key's: its chunk (nil when there is
// none), offset and the bytes of that element.
func (b *Big) find(key *zmemberKey, h uint64) (c *chunk, at, k int) {
	if len(b.slots) == 0 {
		return nil, 0, 0
	}
	mask := len(b.slots) - 1
	want := h & bigHash
	for i := int(want) & mask; ; i = (i + 1) & mask {
		s := b.slots[i]
		if s == 0 {
			return nil, 0, 0
		}
		if s&bigLive == 0 || s&bigHash != want {
			continue
		}
		c := b.byID[uint32(s>>bigShift)]
		for off := 0; off < len(c.pack); {
			k := Skip(c.pack[off:])
			if key.equal(c.pack[off:], k) {
				return c, off, k
			}
			off += k + Skip(c.pack[off+k:])
		}
	}
}

// The chunks' bytes.

// room makes sz bytes of room for an entry at offset at of chunk i, which must exist:
// there, or, when the chunk is full, in one of the halves it splits into, or in a chunk
// of its own beside it (an entry going at the end of the last chunk, or beside a chunk
// of a single entry). It returns the chunk's place and the room, counted in the chunk.
func (b *Big) room(i, at, sz int) (int, []byte) {
	for {
		r := &b.refs[i]
		if r.n < chunkMax() && (len(r.c.pack)+sz <= maxChunk || r.n == 0) {
			r.n++
			b.touch(r.c)
			return i, r.c.makeRoom(at, sz)
		}
		if r.n == 1 || at == len(r.c.pack) && i == len(b.refs)-1 {
			if at > 0 {
				i++
			}
			b.newChunk(i)
			at = 0
			continue
		}
		mid, n := b.cut(i)
		b.split(i, mid, n)
		if at >= mid {
			i, at = i+1, at-mid
		}
	}
}

// makeRoom makes sz bytes of room at pack[at] and returns them.
func (c *chunk) makeRoom(at, sz int) []byte {
	n := len(c.pack) + sz
	if n > cap(c.pack) {
		p := make([]byte, n, grow(n))
		copy(p, c.pack[:at])
		copy(p[at+sz:], c.pack[at:])
		c.pack = p
	} else {
		c.pack = c.pack[:n]
		copy(c.pack[at+sz:], c.pack[at:n-sz])
	}
	return c.pack[at : at+sz]
}

// cut returns where chunk i, of two entries or more, splits: half its entries when it
// is full of them, else about half its bytes, at least one entry each side.
func (b *Big) cut(i int) (mid, n int) {
	r := b.refs[i]
	half := len(r.c.pack) / 2
	for ; n < r.n-1; n++ {
		if n > 0 && (r.n >= chunkMax() && n >= r.n/2 || r.n < chunkMax() && mid >= half) {
			break
		}
		mid += zskip(r.c.pack[mid:])
	}
	return mid, n
}

// split cuts chunk i at mid, after its first n entries; the rest go to a new chunk after it.
func (b *Big) split(i, mid, n int) {
	c := b.refs[i].c
	d := b.newChunk(i + 1)
	rest := c.pack[mid:]
	d.pack = append(make([]byte, 0, grow(len(rest))), rest...)
	b.refs[i+1].n = b.refs[i].n - n
	b.refs[i].n = n
	c.pack = c.pack[:mid]
	if cap(c.pack) > grow(mid)+maxChunk/8 {
		c.pack = append(make([]byte, 0, grow(mid)), c.pack...)
	}
	b.moveSlots(d.pack, c.id, d.id)
	b.touch(c)
	b.refirst(i + 1)
}

// deleteAt removes the entry of sz bytes at offset at of chunk i, whose slot must be gone.
func (b *Big) deleteAt(i, at, sz int) {
	r := &b.refs[i]
	c := r.c
	c.pack = c.pack[:at+copy(c.pack[at:], c.pack[at+sz:])]
	b.touch(c)
	r.n--
	b.bytes -= sz
	b.settle(i)
}

// settle fixes up chunk i after entries left it: dropped when empty, merged with a
// neighbour when it has few, its memory given back when it holds much less than it did.
func (b *Big) settle(i int) {
	r := &b.refs[i]
	switch {
	case r.n == 0:
		b.dropChunks(i, i+1)
		return
	case r.n < chunkMax()/8:
		if i+1 < len(b.refs) && b.merge(i) || i > 0 && b.merge(i-1) {
			return
		}
	}
	if c := r.c; cap(c.pack) > 2*len(c.pack)+maxChunk/8 {
		c.pack = append(make([]byte, 0, grow(len(c.pack))), c.pack...)
	}
	b.refirst(i)
}

// merge moves chunk i+1's entries into chunk i when together they fill at most 3/4 of a
// chunk, and reports whether it did.
func (b *Big) merge(i int) bool {
	r, s := &b.refs[i], &b.refs[i+1]
	if r.n+s.n > chunkMax()*3/4 || len(r.c.pack)+len(s.c.pack) > maxChunk*3/4 {
		return false
	}
	c, d := r.c, s.c
	c.pack = append(slices.Grow(c.pack[:len(c.pack):len(c.pack)], grow(len(c.pack)+len(d.pack))-len(c.pack)), d.pack...)
	r.n += s.n
	b.touch(c)
	b.moveSlots(d.pack, d.id, c.id)
	b.dropChunks(i+1, i+2)
	b.refirst(i)
	return true
}

// rankOf returns the rank of the entry n-th in chunk i.
func (b *Big) rankOf(i, n int) int {
	for _, r := range b.refs[:i] {
		n += r.n
	}
	return n
}

// place returns the chunk, offset and place in the chunk of the entry of rank k; the end
// of the last chunk when there are not that many.
func (b *Big) place(k int) (i, off, n int) {
	for i = range b.refs {
		if k < b.refs[i].n {
			return i, ZSeek(b.refs[i].c.pack, k), k
		}
		k -= b.refs[i].n
	}
	if len(b.refs) == 0 {
		return 0, 0, 0
	}
	i = len(b.refs) - 1
	return i, len(b.refs[i].c.pack), b.refs[i].n
}

// deleteSpan removes the entries from offset off of chunk i to offset off2 of chunk j,
// and returns how many it removed.
func (b *Big) deleteSpan(i, off, j, off2 int) int {
	if i == j {
		if off2 <= off {
			return 0
		}
		c := b.refs[i].c
		b.logDels(c.pack[off:off2])
		gone := b.forget(c.pack[off:off2], c.id)
		b.refs[i].n -= gone
		b.bytes -= off2 - off
		c.pack = c.pack[:off+copy(c.pack[off:], c.pack[off2:])]
		b.touch(c)
		b.settle(i)
		return gone
	}
	removed := 0
	b.logDels(b.refs[i].c.pack[off:])
	for k := i + 1; k < j; k++ {
		c := b.refs[k].c
		b.logDels(c.pack)
		removed += b.forget(c.pack, c.id)
		b.bytes -= len(c.pack)
	}
	// The head of chunk j, then the tail of chunk i, then the chunks between: each
	// settle may drop its chunk, which moves those after it.
	c := b.refs[j].c
	b.logDels(c.pack[:off2])
	gone := b.forget(c.pack[:off2], c.id)
	b.refs[j].n -= gone
	b.bytes -= off2
	c.pack = c.pack[:copy(c.pack, c.pack[off2:])]
	b.touch(c)
	removed += gone
	c = b.refs[i].c
	gone = b.forget(c.pack[off:], c.id)
	b.refs[i].n -= gone
	b.bytes -= len(c.pack) - off
	c.pack = c.pack[:off]
	b.touch(c)
	removed += gone
	b.dropChunks(i+1, j)
	j = i + 1
	if j < len(b.refs) {
		b.settle(j)
	}
	b.settle(i)
	return removed
}

// DeleteRanks removes the n entries from rank first.
func (b *Big) DeleteRanks(first, n int) int {
	if n <= 0 || first >= b.used {
		return 0
	}
	i, off, _ := b.place(first)
	j, off2, _ := b.place(first + n)
	return b.deleteSpan(i, off, j, off2)
}

// Sorted sets.

// zpred says which entries of a sorted set come after a place: those of a score above
// score, and at score, those whose member is above member, or all when member is nil
// and orEqual.
type zpred struct {
	score   float64
	member  []byte
	orEqual bool
}

func (p *zpred) past(e []byte, s float64) bool {
	if s != p.score {
		return s > p.score
	}
	if p.member != nil {
		m, _ := Read(e)
		return m.Compare(p.member) > 0
	}
	return p.orEqual
}

// zseek returns the place of the first entry past p: its chunk, offset and place in the
// chunk (the end of the last chunk when none is past).
func (b *Big) zseek(p *zpred) (i, off, n int) {
	// The first chunk past p, by a binary search written out: sort.Search's closure
	// was a tenth of a sliding log's admission.
	g, hi := 0, len(b.refs)
	for g < hi {
		m := int(uint(g+hi) >> 1)
		r := &b.refs[m]
		var past bool
		switch {
		case r.first != p.score:
			past = r.first > p.score
		case p.member == nil:
			past = p.orEqual
		default:
			past = p.past(r.c.pack, r.first)
		}
		if past {
			hi = m
		} else {
			g = m + 1
		}
	}
	if g == 0 {
		return 0, 0, 0
	}
	i = g - 1
	r := b.refs[i]
	z := r.c.pack
	for ; n < r.n; n++ {
		k := 1 + int(z[off]) // a short member's tag is its length: the walk is most of a write
		if z[off] > tagMaxShort {
			k = Skip(z[off:])
		}
		s, j := zreadScore(z[off+k:])
		if s >= p.score && p.past(z[off:], s) { // below score, never past
			return i, off, n
		}
		off += k + j
	}
	return i, off, n
}

// ZFind finds member: its score and rank.
func (b *Big) ZFind(member []byte) (score float64, rank int, ok bool) {
	key := zkeyOf(member)
	c, at, k := b.find(&key, key.hash())
	if c == nil {
		return 0, 0, false
	}
	score, _ = zreadScore(c.pack[at+k:])
	i := b.indexOf(c)
	return score, b.rankOf(i, Count(c.pack[:at])/2), true
}

// ZScore returns member's score.
func (b *Big) ZScore(member []byte) (float64, bool) {
	key := zkeyOf(member)
	c, at, k := b.find(&key, key.hash())
	if c == nil {
		return 0, false
	}
	s, _ := zreadScore(c.pack[at+k:])
	return s, true
}

// ZAdd is ZEditor.Add of a big set: the member's score after it and what it did.
func (b *Big) ZAdd(member []byte, score float64, f ZAddFlags) (float64, ZAddOutcome) {
	if math.IsNaN(score) {
		return 0, ZNaN
	}
	key := zkeyOf(member)
	h := key.hash()
	c, at, k := b.find(&key, h)
	if c != nil {
		old, j := zreadScore(c.pack[at+k:])
		if f.NX {
			return old, ZNop
		}
		if f.Incr {
			score += old
			if math.IsNaN(score) {
				return 0, ZNaN
			}
		}
		if f.LT && score >= old || f.GT && score <= old {
			return old, ZNop
		}
		if score == old {
			return score, ZUnchanged
		}
		b.deleteSlot(h, c.id)
		b.deleteAt(b.indexOf(c), at, k+j)
		b.zinsert(member, score, h)
		return score, ZUpdated
	}
	if f.XX {
		return 0, ZNop
	}
	b.zinsert(member, score, h)
	return score, ZAdded
}

// zinsert puts the entry of member, of hash h, and score in its place.
func (b *Big) zinsert(member []byte, score float64, h uint64) {
	if len(b.refs) == 0 {
		b.newChunk(0)
	}
	i, at, _ := b.zseek(&zpred{score: score, member: member})
	var sbuf [9]byte
	s := AppendScore(sbuf[:0], score)
	sz := ElemLen(member) + len(s)
	i, room := b.room(i, at, sz)
	copy(room[len(AppendString(room[:0], member)):], s)
	b.bytes += sz
	b.addSlot(h, b.refs[i].c.id)
	b.refirst(i)
	b.logSet(member, score, nil)
}

// ZRemove removes member, and reports whether it was there.
func (b *Big) ZRemove(member []byte) bool { return b.remove(member) }

// remove removes the entry of member (a sorted set's member, a hash's field), and reports
// whether it was there.
func (b *Big) remove(member []byte) bool {
	key := zkeyOf(member)
	h := key.hash()
	c, at, k := b.find(&key, h)
	if c == nil {
		return false
	}
	b.deleteSlot(h, c.id)
	b.deleteAt(b.indexOf(c), at, k+Skip(c.pack[at+k:]))
	b.logDel(member)
	return true
}

// ZScoreSpan returns the places of the entries with scores in r: from chunk i, offset off
// (n-th in it) up to chunk j, offset off2 (n2-th), and their count.
func (b *Big) zscoreSpan(r ScoreRange) (i, off, n, j, off2, n2, count int) {
	if r.Empty() || len(b.refs) == 0 {
		return 0, 0, 0, 0, 0, 0, 0
	}
	i, off, n = b.zseek(&zpred{score: r.Min, orEqual: !r.MinEx})
	j, off2, n2 = b.zseek(&zpred{score: r.Max, orEqual: r.MaxEx})
	if j < i {
		return i, off, n, j, off2, n2, 0
	}
	count = n2 - n // the counts between, not the ranks: a sliding log's span is at its start
	for _, r := range b.refs[i:j] {
		count += r.n
	}
	return i, off, n, j, off2, n2, max(count, 0)
}

// ZCount returns the entries with scores in r.
func (b *Big) ZCount(r ScoreRange) int {
	_, _, _, _, _, _, n := b.zscoreSpan(r)
	return n
}

// ZScoreRank returns the rank of the first entry with a score in r and the count of them.
func (b *Big) ZScoreRank(r ScoreRange) (rank, count int) {
	i, _, n, _, _, _, count := b.zscoreSpan(r)
	if count == 0 {
		return 0, 0
	}
	return b.rankOf(i, n), count
}

// ZDeleteScores removes the entries with scores in r and returns how many.
func (b *Big) ZDeleteScores(r ScoreRange) int {
	i, off, _, j, off2, _, count := b.zscoreSpan(r)
	if count == 0 {
		return 0
	}
	return b.deleteSpan(i, off, j, off2)
}

// ZWalk yields the entries from rank first on, towards the end, or when rev towards the
// start, until yield returns false.
func (b *Big) ZWalk(first int, rev bool, yield func(m Elem, s float64) bool) {
	if first < 0 || first >= b.used {
		return
	}
	if !rev {
		i, off, _ := b.place(first)
		for ; i < len(b.refs); i, off = i+1, 0 {
			p := b.refs[i].c.pack
			for off < len(p) {
				m, s, k := ZNext(p[off:])
				if k == 0 || !yield(m, s) {
					return
				}
				off += k
			}
		}
		return
	}
	i, _, n := b.place(b.used - 1 - first)
	var stack [128]int
	for ; i >= 0; i, n = i-1, -1 {
		p := b.refs[i].c.pack
		offs := ZOffsets(stack[:0], p)
		if n < 0 {
			n = len(offs) - 1
		}
		for ; n >= 0; n-- {
			m, s, _ := ZNext(p[offs[n]:])
			if !yield(m, s) {
				return
			}
		}
	}
}

// Pair returns the elements of the entry of rank i (from 0, below Len): a hash's field
// and value, a sorted set's member and score. They alias b.
func (b *Big) Pair(i int) (first, second Elem) {
	g, off, _ := b.place(i)
	p := b.refs[g].c.pack[off:]
	first, k := Read(p)
	second, _ = Read(p[k:])
	return first, second
}

// Hashes.

// HashGet returns the value of field, false when there is none. It aliases b.
func (b *Big) HashGet(field []byte) (Elem, bool) {
	key := zkeyOf(field)
	c, at, k := b.find(&key, key.hash())
	if c == nil {
		return Elem{}, false
	}
	v, _ := Read(c.pack[at+k:])
	return v, true
}

// HashSet sets field to value, a new field going at the end, and reports whether it was new.
func (b *Big) HashSet(field, value []byte) bool {
	key := zkeyOf(field)
	h := key.hash()
	c, at, k := b.find(&key, h)
	vl := ElemLen(value)
	if c != nil {
		i := b.indexOf(c)
		old := Skip(c.pack[at+k:])
		b.bytes += vl - old
		if vl > old {
			c.makeRoom(at+k, vl-old)
		} else {
			c.pack = c.pack[:at+k+vl+copy(c.pack[at+k+vl:], c.pack[at+k+old:])]
		}
		AppendString(c.pack[at+k:at+k], value)
		b.touch(c)
		b.logSet(field, 0, value)
		if r := b.refs[i]; len(c.pack) > maxChunk && r.n > 1 {
			mid, n := b.cut(i)
			b.split(i, mid, n)
		}
		return false
	}
	if len(b.refs) == 0 {
		b.newChunk(0)
	}
	i := len(b.refs) - 1
	sz := ElemLen(field) + vl
	i, room := b.room(i, len(b.refs[i].c.pack), sz)
	AppendString(AppendString(room[:0], field), value)
	b.bytes += sz
	b.addSlot(h, b.refs[i].c.id)
	b.logSet(field, 0, value)
	return true
}

// HashDel deletes field, and reports whether it was there.
func (b *Big) HashDel(field []byte) bool { return b.remove(field) }

// shrink gives back the slots of a set that has lost most of its members.
func (b *Big) shrink() {
	if len(b.slots) > 16 && b.used*8 < len(b.slots) {
		b.rehash(b.used)
	}
}
