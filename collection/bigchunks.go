package collection

import (
	"encoding/binary"
	"errors"
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
// collection. When the seqs are numbered anew, or a feed's list grows past a quarter of
// the chunks (a feed that is not drained), the feed takes the whole collection instead
// (AppendChanges reports whole, and the feed writes AppendChunks), and its list goes.
//
// The chunk form, of a whole Big (AppendChunks) as of a feed's changes: entries back to
// back, each the chunk's seq (8 bytes, little-endian), its pack's length (uvarint) and the
// pack. Its order is the chunks', so a whole one read back (NewBigChunks) is the same Big,
// seqs included.

// Feeds is the most feeds a Big tracks its changes for.
const Feeds = 4

// ErrChunks is what ApplyChanges and NewBigChunks return for bytes that are not the chunk form.
var ErrChunks = errors.New("collection: bad chunk form")

// feedChanges is what a feed has not taken yet of a Big.
type feedChanges struct {
	seqs  []uint64 // the chunks changed or dropped since the feed's last call, each once
	whole bool     // the feed takes the whole Big at its next call
}

// touch notes that chunk c changed (or is new), for every feed.
func (b *Big) touch(c *chunk) {
	for f := range b.feeds {
		bit := uint8(1) << f
		if c.feeds&bit != 0 || b.feeds[f].whole {
			continue
		}
		c.feeds |= bit
		b.note(f, c.seq)
	}
}

// dropped notes that chunk c is dropped, for every feed.
func (b *Big) dropped(c *chunk) {
	for f := range b.feeds {
		if c.feeds&(1<<f) == 0 && !b.feeds[f].whole {
			b.note(f, c.seq) // a seq noted and then dropped is found missing: a drop
		}
	}
}

// note adds seq to feed f's list, or gives the feed the whole Big once the list is long.
func (b *Big) note(f int, seq uint64) {
	ch := &b.feeds[f]
	if len(ch.seqs) > 16+len(b.refs)/4 {
		ch.seqs, ch.whole = nil, true
		return
	}
	ch.seqs = append(ch.seqs, seq)
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

// AppendChanges appends to dst, in the chunk form, the chunks of b that changed since feed
// f's last call (an empty entry for each one dropped), and forgets them for f. It reports
// whole, appending nothing, when f must take the whole of b instead (AppendChunks).
func (b *Big) AppendChanges(dst []byte, f int) ([]byte, bool) {
	ch := &b.feeds[f]
	bit := uint8(1) << f
	if ch.whole {
		ch.whole, ch.seqs = false, ch.seqs[:0]
		for _, r := range b.refs {
			r.c.feeds &^= bit
		}
		return dst, true
	}
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
	return slices.BinarySearchFunc(b.refs, seq, func(r ref, seq uint64) int {
		switch {
		case r.seq < seq:
			return -1
		case r.seq > seq:
			return 1
		}
		return 0
	})
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
