package keyspace

import (
	"encoding/binary"
	"math/bits"
)

// Capture: the replication feed drains every millisecond or so, and a burst of writes to
// random keys leaves it one changed key per write; reading each key's entry back at the
// drain would cost a cache miss per change on the primary. A capturing tracker copies the
// change instead as it is written, while the entry is in the cache, into a log the drain
// reads in order. Each key has one copy per drain: a later write of the same size writes
// over it; one of another size turns it into a reference, which the drain reads from the
// entry as the other feeds do. A deletion kills the key's copy.
//
// A copy is: record id (4 bytes, little-endian), its state (one byte), the key's length
// (uvarint) and the key, the encoded value's length (uvarint) and the value (Encode). A
// reference's key and value are empty or stale.

// The states of a copy.
const (
	copyLive = iota // the key and value are the key's current state
	copyRef         // the key's state is its entry's
	copyDead        // the key was deleted
)

// maxCaptured is the longest encoded value copied; a longer one is a reference, so that a
// write never copies more than this.
const maxCaptured = 128

// captureWrite records that key, record id, was set to v.
func (t *tracker) captureWrite(id uint32, key []byte, v Value) {
	n := EncodedLen(v)
	if !t.markDirty(id) {
		c := t.log[t.copies.get(id):]
		if c[4] != copyLive {
			return
		}
		klen, w := uvarint(c[5:])
		at := 5 + w + klen
		vlen, w := uvarint(c[at:])
		if at += w; vlen == n {
			Encode(c[at:at+n], v)
		} else {
			c[4] = copyRef
		}
		return
	}
	t.copies.put(id, uint32(len(t.log)))
	t.log = binary.LittleEndian.AppendUint32(t.log, id)
	if n > maxCaptured {
		t.log = append(t.log, copyRef, 0, 0)
	} else {
		t.log = append(t.log, copyLive)
		t.log = binary.AppendUvarint(t.log, uint64(len(key)))
		t.log = append(t.log, key...)
		t.log = binary.AppendUvarint(t.log, uint64(n))
		at := len(t.log)
		t.log = append(t.log, make([]byte, n)...)
		Encode(t.log[at:], v)
	}
	t.added()
}

// captureDelete kills the copy of record id, which is being deleted.
func (t *tracker) captureDelete(id uint32) {
	if t.dirty(id) {
		t.log[t.copies.get(id)+4] = copyDead
		t.dirtyBits[id/64] &^= 1 << (id % 64)
		t.pending.Add(-1) // the deletion counts instead
	}
}

// drainCaptured is Drain's second part for a capturing tracker t of s, after the deletions:
// the copies in log order. It reports whether it stopped early.
func (s *Shard) drainCaptured(t *tracker, f Feed, r Recorder) (more bool) {
	er, encoded := r.(EncodedRecorder)
	for t.logHead < len(t.log) {
		c := t.log[t.logHead:]
		id, state := binary.LittleEndian.Uint32(c), c[4]
		klen, w := uvarint(c[5:])
		key := c[5+w : 5+w+klen]
		at := 5 + w + klen
		vlen, w := uvarint(c[at:])
		at += w
		val := c[at : at+vlen]
		t.logHead += at + vlen
		if state == copyDead {
			continue
		}
		t.dirtyBits[id/64] &^= 1 << (id % 64)
		t.pending.Add(-1)
		switch {
		case state == copyRef:
			e := s.entry(s.ids[id])
			s.put(r, f, s.keyIn(e), s.value(e))
		case encoded:
			er.PutEncoded(key, val)
		default:
			v, err := DecodeValue(val)
			if err != nil {
				panic("keyspace: a captured value does not decode: " + err.Error())
			}
			r.Put(key, v)
		}
		if r.Full() && t.logHead < len(t.log) {
			return true
		}
	}
	t.trim(len(s.ids))
	return false
}

// copyIndex finds the copy of a record id in the log: a small open-addressing table of
// id<<32 | position + 1, sized to the keys written since the last drain (a few per shard
// at the replication feed's pace), so that it stays in the cache, unlike an array over
// every record id.
type copyIndex struct {
	slots []uint64
	n     int
	shift uint8 // 32 - log2(len(slots))
}

func (x *copyIndex) home(id uint32) int { return int((id * 0x9e3779b1) >> x.shift) }

// put sets the position of id's copy, replacing any it had.
func (x *copyIndex) put(id, pos uint32) {
	if (x.n+1)*2 > len(x.slots) {
		x.grow()
	}
	for i := x.home(id); ; i = (i + 1) & (len(x.slots) - 1) {
		switch sl := x.slots[i]; {
		case sl == 0:
			x.n++
			fallthrough
		case uint32(sl>>32) == id:
			x.slots[i] = uint64(id)<<32 | uint64(pos+1)
			return
		}
	}
}

// get returns the position of id's copy, which put set.
func (x *copyIndex) get(id uint32) int {
	for i := x.home(id); ; i = (i + 1) & (len(x.slots) - 1) {
		if sl := x.slots[i]; uint32(sl>>32) == id && sl != 0 {
			return int(uint32(sl)) - 1
		}
	}
}

func (x *copyIndex) grow() {
	old := x.slots
	x.slots, x.n = make([]uint64, max(16, 2*len(old))), 0
	x.shift = uint8(32 - bits.TrailingZeros(uint(len(x.slots))))
	for _, sl := range old {
		if sl != 0 {
			x.put(uint32(sl>>32), uint32(sl)-1)
		}
	}
}

// reset empties the index, keeping its memory unless a burst grew it.
func (x *copyIndex) reset() {
	if x.n == 0 {
		return // empty already: a drain of a feed that does not use it costs nothing
	}
	if len(x.slots) > 4096 {
		x.slots = nil
	} else {
		clear(x.slots)
	}
	x.n = 0
}
