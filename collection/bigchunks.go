package collection

import (
	"cmp"
	"encoding/binary"
	"errors"
	"math"
	"slices"
)

// Writing a Big outside the process by chunks: persistence and replication keep a copy of
// each big collection (the store, the redo log, a replica), and a write to one member must
// not send them the whole collection. So a Big remembers, for each feed that copies it (up
// to Feeds of them, numbered as the keyspace numbers its feeds), which of its chunks
// changed since that feed last took its changes (AppendChanges): a bit per feed in each
// chunk, and per feed the seqs of the chunks changed or dropped, each once. The feed then
// writes those chunks only: the chunk form below, one entry per chunk changed, an empty
// one for a chunk dropped. The copy applies them (ApplyChanges) chunk by chunk, keyed by
// seq, which is why a chunk keeps its seq as long as it lives and seqs rise along the
// collection. When the seqs are numbered anew, or a feed's list grows past the number of
// chunks (chunks dropped and made anew, a feed not drained), the feed takes the whole instead
// (AppendChanges reports whole, and the feed writes AppendChunks), and its list goes.
//
// The chunk form, of a whole Big (AppendChunks) as of a feed's changes: entries back to
// back, each the chunk's seq (8 bytes, little-endian), its pack's length (uvarint) and the
// pack. Its order is the chunks', so a whole one read back (NewBigChunks) is the same Big,
// seqs included.

// Feeds is the most feeds a Big tracks its changes for.
const Feeds = 4

// ErrChunks is what ApplyChanges and NewBigChunks return for bytes that are not the chunk
// form, or changes.
var ErrChunks = errors.New("collection: bad chunk form")

// The changes AppendChanges appends start with their form: chunks (the chunk form of the
// chunks changed, an empty entry for one dropped), or ops, the members' changes in order:
// opSet and the member (uvarint length, bytes) and a sorted set's score (8 bytes, its
// bits) or a hash's value (uvarint length, bytes); opDel and the member. A feed that is a
// store of chunks (the disk) takes chunks; a feed that is a log replayed in order (the
// redo log, the replication stream) takes ops, which cost what the write changed even
// where it touched most chunks (a ZADD of 10,000 members into a set of 1M).
const (
	formChunks = 'c'
	formOps    = 'o'
	opSet      = 's'
	opDel      = 'd'
)

// feedChanges is what a feed has not taken yet of a Big.
type feedChanges struct {
	seqs  []uint64 // chunks: the chunks changed or dropped since the feed's last call, each once
	ops   []byte   // ops: the members' changes since the feed's last call
	whole bool     // the feed takes the whole Big at its next call
}

// Feeds says which feeds copy b: b records its changes for those in tracked only (the
// others take it whole when they start), as ops for those in ops, else as chunks. The
// keyspace says so at each write.
func (b *Big) Feeds(tracked, ops uint8) {
	if tracked == b.tracked && ops == b.opsFeeds {
		return
	}
	for f := range b.feeds {
		if tracked&(1<<f) == 0 || (ops^b.opsFeeds)&(1<<f) != 0 {
			b.feeds[f] = feedChanges{whole: true}
		}
	}
	b.tracked, b.opsFeeds = tracked, ops
}

// recording returns the feeds that take b's changes as ops (ops) or as chunks, and are not
// to take it whole.
func (b *Big) recording(ops bool) uint8 {
	m := b.tracked &^ b.opsFeeds
	if ops {
		m = b.tracked & b.opsFeeds
	}
	for f := range b.feeds {
		if b.feeds[f].whole {
			m &^= 1 << f
		}
	}
	return m
}

// touch notes that chunk c changed (or is new), for the feeds that take chunks.
func (b *Big) touch(c *chunk) {
	if b.tracked&^b.opsFeeds == 0 {
		return
	}
	for f := range b.feeds {
		bit := uint8(1) << f
		if c.feeds&bit != 0 || b.feeds[f].whole || b.tracked&^b.opsFeeds&bit == 0 {
			continue
		}
		c.feeds |= bit
		b.note(f, c.seq)
	}
}

// dropped notes that chunk c is dropped, for the feeds that take chunks.
func (b *Big) dropped(c *chunk) {
	if b.tracked&^b.opsFeeds == 0 {
		return
	}
	for f := range b.feeds {
		bit := uint8(1) << f
		if c.feeds&bit == 0 && !b.feeds[f].whole && b.tracked&^b.opsFeeds&bit != 0 {
			b.note(f, c.seq) // a seq noted and then dropped is found missing: a drop
		}
	}
}

// note adds seq to feed f's list, or gives the feed the whole Big once the list is long.
func (b *Big) note(f int, seq uint64) {
	ch := &b.feeds[f]
	if len(ch.seqs) > 16+len(b.refs) { // each chunk once, and the dropped: past that, whole
		ch.seqs, ch.whole = nil, true
		return
	}
	ch.seqs = append(ch.seqs, seq)
}

// logSet notes that member now has score (a sorted set's) or value, for the feeds that
// take ops.
func (b *Big) logSet(member []byte, score float64, value []byte) {
	if b.tracked&b.opsFeeds == 0 {
		return
	}
	for f := range b.feeds {
		if b.tracked&b.opsFeeds&(1<<f) == 0 || b.feeds[f].whole {
			continue
		}
		ch := &b.feeds[f]
		ch.ops = append(ch.ops, opSet)
		ch.ops = binary.AppendUvarint(ch.ops, uint64(len(member)))
		ch.ops = append(ch.ops, member...)
		if b.sorted {
			ch.ops = binary.LittleEndian.AppendUint64(ch.ops, math.Float64bits(score))
		} else {
			ch.ops = binary.AppendUvarint(ch.ops, uint64(len(value)))
			ch.ops = append(ch.ops, value...)
		}
		b.boundOps(f)
	}
}

// logDel notes that member is gone, for the feeds that take ops.
func (b *Big) logDel(member []byte) {
	if b.tracked&b.opsFeeds == 0 {
		return
	}
	for f := range b.feeds {
		if b.tracked&b.opsFeeds&(1<<f) == 0 || b.feeds[f].whole {
			continue
		}
		ch := &b.feeds[f]
		ch.ops = append(ch.ops, opDel)
		ch.ops = binary.AppendUvarint(ch.ops, uint64(len(member)))
		ch.ops = append(ch.ops, member...)
		b.boundOps(f)
	}
}

// logDels notes that the entries of pack are gone, for the feeds that take ops.
func (b *Big) logDels(pack []byte) {
	if b.recording(true) == 0 {
		return
	}
	var buf [64]byte
	for off := 0; off < len(pack); {
		e, k := Read(pack[off:])
		if k == 0 {
			return
		}
		b.logDel(e.Append(buf[:0]))
		off += k + Skip(pack[off+k:])
	}
}

// boundOps gives feed f the whole Big instead once its ops outgrow a quarter of it.
func (b *Big) boundOps(f int) {
	if ch := &b.feeds[f]; len(ch.ops) > 4096+b.bytes/4 {
		ch.ops, ch.whole = nil, true
	}
}

// Rewrite makes every feed take the whole of b at its next call: b is new to them (a key
// given it, a Big read from bytes), or its seqs were numbered anew.
func (b *Big) Rewrite() {
	for f := range b.feeds {
		b.feeds[f] = feedChanges{whole: true}
	}
	for _, r := range b.refs {
		r.c.feeds = 0
	}
}

// ChunksLen returns the length of b's chunk form.
func (b *Big) ChunksLen() int {
	n := 0
	for _, r := range b.refs {
		n += 8 + uvarintLen(uint64(len(r.c.pack))) + len(r.c.pack)
	}
	return n
}

// AppendChunks appends b's chunk form to dst.
func (b *Big) AppendChunks(dst []byte) []byte {
	for _, r := range b.refs {
		dst = appendChunk(dst, r.seq, r.c.pack)
	}
	return dst
}

func appendChunk(dst []byte, seq uint64, pack []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	dst = binary.AppendUvarint(dst, uint64(len(pack)))
	return append(dst, pack...)
}

func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// AppendChanges appends to dst the changes of b since feed f's last call, ops or chunks
// as Feeds said, and forgets them for f. It reports whole, appending nothing, when f must
// take the whole of b instead (AppendChunks).
func (b *Big) AppendChanges(dst []byte, f int) ([]byte, bool) {
	ch := &b.feeds[f]
	bit := uint8(1) << f
	if ch.whole || b.tracked&bit == 0 {
		ch.whole, ch.seqs, ch.ops = false, ch.seqs[:0], ch.ops[:0]
		for _, r := range b.refs {
			r.c.feeds &^= bit
		}
		if b.tracked&bit == 0 {
			ch.whole = true // not tracked: nothing recorded for it
		}
		return dst, true
	}
	if b.opsFeeds&bit != 0 {
		dst = append(append(dst, formOps), ch.ops...)
		ch.ops = ch.ops[:0]
		if cap(ch.ops) > 4096+b.bytes/8 {
			ch.ops = nil
		}
		return dst, false
	}
	dst = append(dst, formChunks)
	for _, seq := range ch.seqs {
		i, ok := b.seqIndex(seq)
		switch {
		case !ok:
			dst = appendChunk(dst, seq, nil)
		case b.refs[i].c.feeds&bit != 0:
			b.refs[i].c.feeds &^= bit
			dst = appendChunk(dst, seq, b.refs[i].c.pack)
		} // else noted twice (dropped, and a chunk of the same seq made since): sent already
	}
	ch.seqs = ch.seqs[:0]
	if cap(ch.seqs) > 64+len(b.refs)/4 {
		ch.seqs = nil
	}
	return dst, false
}

// seqIndex returns where the chunk of seq is in refs, or would go, and whether it is there.
func (b *Big) seqIndex(seq uint64) (int, bool) {
	return slices.BinarySearchFunc(b.refs, seq, func(r ref, seq uint64) int { return cmp.Compare(r.seq, seq) })
}

// nextChunk reads the entry of the chunk form at the start of p: the seq, the pack and
// the rest.
func nextChunk(p []byte) (seq uint64, pack, rest []byte, err error) {
	if len(p) < 9 {
		return 0, nil, nil, ErrChunks
	}
	seq = binary.LittleEndian.Uint64(p)
	n, w := binary.Uvarint(p[8:])
	if w <= 0 || n > uint64(len(p)-8-w) {
		return 0, nil, nil, ErrChunks
	}
	at := 8 + w
	return seq, p[at : at+int(n)], p[at+int(n):], nil
}

// validChunk reports whether pack is whole entries of a sorted set's or a hash's pack.
func validChunk(pack []byte) bool {
	for at := 0; at < len(pack); {
		k := zskip(pack[at:])
		if k == 0 {
			return false
		}
		at += k
	}
	return true
}

// ApplyChanges applies changes, in the chunk form (AppendChanges's), to b: each chunk named
// takes the pack given, or is dropped when it is empty. b notes them as changes of its own,
// for the feeds that copy it in turn (a replica's store, its replicas).
func (b *Big) ApplyChanges(changes []byte) error {
	if len(changes) == 0 {
		return nil
	}
	switch changes[0] {
	case formChunks:
		return b.applyChunks(changes[1:])
	case formOps:
		return b.applyOps(changes[1:])
	}
	return ErrChunks
}

// applyOps applies ops, in order.
func (b *Big) applyOps(p []byte) error {
	for len(p) > 0 {
		op := p[0]
		n, w := binary.Uvarint(p[1:])
		if w <= 0 || n > uint64(len(p)-1-w) {
			return ErrChunks
		}
		member := p[1+w : 1+w+int(n)]
		p = p[1+w+int(n):]
		switch {
		case op == opDel && b.sorted:
			b.ZRemove(member)
		case op == opDel:
			b.HashDel(member)
		case op == opSet && b.sorted:
			if len(p) < 8 {
				return ErrChunks
			}
			score := math.Float64frombits(binary.LittleEndian.Uint64(p))
			p = p[8:]
			if _, o := b.ZAdd(member, score, ZAddFlags{}); o == ZNaN {
				return ErrChunks
			}
		case op == opSet:
			n, w := binary.Uvarint(p)
			if w <= 0 || n > uint64(len(p)-w) {
				return ErrChunks
			}
			b.HashSet(member, p[w:w+int(n)])
			p = p[w+int(n):]
		default:
			return ErrChunks
		}
	}
	b.shrink()
	return nil
}

// applyChunks applies chunk entries: each chunk named takes the pack given, or is dropped
// when it is empty.
func (b *Big) applyChunks(changes []byte) error {
	for p := changes; len(p) > 0; {
		seq, pack, rest, err := nextChunk(p)
		if err != nil || !validChunk(pack) {
			return ErrChunks
		}
		p = rest
		i, ok := b.seqIndex(seq)
		if ok {
			c := b.refs[i].c
			b.forget(c.pack, c.id)
			b.bytes -= len(c.pack)
			if len(pack) == 0 {
				b.dropChunks(i, i+1)
				continue
			}
		} else if len(pack) == 0 {
			continue
		} else {
			b.insertChunk(i, seq)
		}
		b.fillChunk(i, pack)
	}
	b.shrink()
	return nil
}

// insertChunk puts an empty chunk of seq at refs[i].
func (b *Big) insertChunk(i int, seq uint64) {
	var id uint32
	if n := len(b.freeIDs); n > 0 {
		id, b.freeIDs = b.freeIDs[n-1], b.freeIDs[:n-1]
	} else {
		id = uint32(len(b.byID))
		b.byID = append(b.byID, nil)
	}
	c := &chunk{id: id, seq: seq}
	b.byID[id] = c
	b.refs = slices.Insert(b.refs, i, ref{c: c, seq: seq})
}

// fillChunk makes pack the entries of chunk i, which has no slots.
func (b *Big) fillChunk(i int, pack []byte) {
	c := b.refs[i].c
	c.pack = append(make([]byte, 0, grow(len(pack))), pack...)
	n := 0
	for at := 0; at < len(c.pack); at += zskip(c.pack[at:]) {
		b.addSlot(memberHash(c.pack[at:at+Skip(c.pack[at:])]), c.id)
		n++
	}
	b.refs[i].n = n
	b.bytes += len(pack)
	b.refirst(i)
	b.touch(c)
}

// NewBigChunks returns the sorted set (sorted) or hash whose chunk form is form
// (AppendChunks), as a Big with the same chunks and seqs; set says it is a set's.
func NewBigChunks(form []byte, sorted, set bool) (*Big, error) {
	b := &Big{sorted: sorted, setHead: set}
	var last uint64
	for p := form; len(p) > 0; {
		seq, pack, rest, err := nextChunk(p)
		if err != nil || len(pack) == 0 || !validChunk(pack) || len(b.refs) > 0 && seq <= last {
			return nil, ErrChunks
		}
		p, last = rest, seq
		b.insertChunk(len(b.refs), seq)
		b.fillChunk(len(b.refs)-1, pack)
	}
	b.Rewrite()
	return b, nil
}
