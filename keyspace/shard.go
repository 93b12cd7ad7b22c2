package keyspace

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"
)

const (
	// chunkLen records of 20 bytes fill 8180 bytes of the runtime's 8 KiB size class.
	chunkLen = 409
	// chunkBytes is what a chunk takes on the heap.
	chunkBytes = 8192
	// chunkWords is the length of a chunk's bitmap of free records.
	chunkWords = (chunkLen + 63) / 64
	// maxChunks keeps every record id + 1 within the 32 bits an index slot has for it.
	maxChunks = (math.MaxUint32 - 1) / chunkLen

	// The header byte of an arena entry: the Kind and two flags.
	hdrKind  = 0x3f
	hdrWide  = 0x40 // 8 bytes of Num2 follow the key (Num2 != 0)
	hdrBytes = 0x80 // the record has a byte value in vals

	// maxInlineKey is the longest key kept in the arena; longer ones go to bigKeys, so that a
	// few huge keys cannot fill a shard's 4 GiB of arena offsets.
	maxInlineKey = 1024
	// maxArena bounds the arena so that every offset fits a record's uint32.
	maxArena = math.MaxUint32

	// minIndex is the smallest index; indexes grow past load maxLoadNum/maxLoadDen and shrink
	// below minLoadNum/minLoadDen to targetLoad.
	minIndex   = 8
	maxLoadNum = 4
	maxLoadDen = 5
	minLoadNum = 1
	minLoadDen = 5
	// minCompact is the arena size below which garbage is left alone.
	minCompact = 4096
	// sampleSize is the number of keys with an expiry in one of ExpireCycle's samples.
	sampleSize = 20
	// scanDone is what scanLocked returns when it reached the end of the shard.
	scanDone = math.MaxUint32
)

// record is the fixed-size part of a key's state. It is 20 bytes with 4-byte alignment: the
// int64s are kept as halves so that Go does not pad the struct to 24 bytes.
type record struct {
	exp [2]uint32 // Value.Expire
	num [2]uint32 // Value.Num
	key uint32    // offset of the key's entry in the arena
}

func (r *record) expire() int64 { return int64(uint64(r.exp[0]) | uint64(r.exp[1])<<32) }
func (r *record) number() int64 { return int64(uint64(r.num[0]) | uint64(r.num[1])<<32) }

func (r *record) setExpire(v int64) { r.exp = [2]uint32{uint32(v), uint32(uint64(v) >> 32)} }
func (r *record) setNumber(v int64) { r.num = [2]uint32{uint32(v), uint32(uint64(v) >> 32)} }

// chunk holds the records with ids c*chunkLen ... c*chunkLen+chunkLen-1.
type chunk [chunkLen]record

// chunkMeta says which records of a chunk are in use.
type chunkMeta struct {
	free [chunkWords]uint64 // bit set: the record is free
	used int                // records in use
}

func freshMeta() chunkMeta {
	var m chunkMeta
	for i := range m.free {
		m.free[i] = math.MaxUint64
	}
	m.free[chunkWords-1] = 1<<(chunkLen%64) - 1
	return m
}

// Shard is one lock stripe of the keyspace. Callers lock it, call its *Locked methods and
// unlock it.
type Shard struct {
	mu sync.Mutex // guards the fields below; the counters are written under it and read without

	seed maphash.Seed
	ord  int // position in Keyspace.shards: the order LockKeys locks in

	// index maps keys to record ids: a slot is hash<<32 | id+1 (0 is empty), where hash is the
	// high 32 bits of the key's maphash. A key's probe starts at home(hash, len(index)).
	index []uint64
	count int // keys in the index: records in use

	chunks []*chunk          // nil: all records of the chunk are free, and its memory given back
	meta   []chunkMeta       // one per chunk
	avail  []uint64          // bit c set: chunks[c] has a free record (or is nil)
	spare  *chunk            // a zeroed chunk kept back, so that a key coming and going does not allocate
	arena  []byte            // the records' entries; see entry layout in the package comment
	dead   int               // bytes of arena no record points at
	vals   map[uint32][]byte // byte values by record id (entries with hdrBytes)
	big    map[uint32][]byte // keys longer than maxInlineKey, by record id

	sweep uint32 // the record id ExpireCycle examines next

	keys    atomic.Int64 // Keyspace.Len
	expires atomic.Int64 // Keyspace.Expires
	expired atomic.Int64 // Keyspace.ExpiredTotal

	_ [64]byte // keeps the counters of neighbouring shards off this cache line
}

// Lock locks the shard.
func (s *Shard) Lock() { s.mu.Lock() }

// Unlock unlocks the shard.
func (s *Shard) Unlock() { s.mu.Unlock() }

// GetLocked returns the value at key and true, or false when there is none. A key that has
// expired at now (now >= Expire) is deleted then and reported missing. Bytes of the value
// alias the shard's memory: they are valid only until the lock is released or the key is
// written. GetLocked does not allocate.
func (s *Shard) GetLocked(key []byte, now int64) (Value, bool) {
	pos, id, ok := s.find(key, s.hash(key))
	if !ok {
		return Value{}, false
	}
	r := s.rec(id)
	if exp := r.expire(); exp != 0 && now >= exp {
		s.remove(pos, id)
		s.expired.Add(1)
		return Value{}, false
	}
	return s.value(id, r), true
}

// SetLocked stores v at key, replacing what was there (an expired key is replaced too).
// It copies key and v.Bytes. A Value of Kind None deletes the key. Replacing an existing key
// whose Num2 stays zero or non-zero, and whose bytes fit the old ones' capacity, does not
// allocate; nor does the record id change (see Scan).
func (s *Shard) SetLocked(key []byte, v Value) {
	if v.Kind == None {
		s.DeleteLocked(key)
		return
	}
	if v.Kind > maxKind {
		panic("keyspace: Kind " + strconv.Itoa(int(v.Kind)) + " out of range")
	}
	h := s.hash(key)
	pos, id, ok := s.find(key, h)
	if ok {
		s.replace(id, key, v)
		return
	}
	if (s.count+1)*maxLoadDen > len(s.index)*maxLoadNum {
		s.resize(targetIndex(s.count + 1))
		pos, _, _ = s.find(key, h)
	}
	wide := v.Num2 != 0
	s.reserve(entrySize(len(key), wide)) // before the record exists: reserve may compact
	id = s.allocRecord()
	r := s.rec(id)
	r.setExpire(v.Expire)
	r.setNumber(v.Num)
	r.key = s.appendEntry(key, v.Kind, wide, v.Num2)
	if len(key) > maxInlineKey {
		if s.big == nil {
			s.big = make(map[uint32][]byte)
		}
		s.big[id] = bytes.Clone(key)
	}
	s.setBytes(id, v.Bytes)
	s.index[pos] = uint64(h)<<32 | uint64(id+1)
	s.count++
	s.keys.Add(1)
	if v.Expire != 0 {
		s.expires.Add(1)
	}
}

// DeleteLocked removes key and reports whether it was stored. A key that has expired but was
// not removed yet counts as stored; DeleteAtLocked counts it as gone.
func (s *Shard) DeleteLocked(key []byte) bool {
	pos, id, ok := s.find(key, s.hash(key))
	if ok {
		s.remove(pos, id)
	}
	return ok
}

// DeleteAtLocked removes key and reports whether it was live at now, as Redis's DEL counts:
// a key that had expired is removed as expired and false is returned.
func (s *Shard) DeleteAtLocked(key []byte, now int64) bool {
	pos, id, ok := s.find(key, s.hash(key))
	if !ok {
		return false
	}
	exp := s.rec(id).expire()
	s.remove(pos, id)
	if exp != 0 && now >= exp {
		s.expired.Add(1)
		return false
	}
	return true
}

// LenLocked returns the number of keys in the shard, expired ones not yet removed included.
func (s *Shard) LenLocked() int { return s.count }

func (s *Shard) hash(key []byte) uint32 { return uint32(maphash.Bytes(s.seed, key) >> 32) }

// home is the slot where the probe for hash h starts in an index of n slots.
func home(h uint32, n int) int { return int(uint64(h) * uint64(n) >> 32) }

// targetIndex is the index size for n keys after a resize.
func targetIndex(n int) int { return max(minIndex, n+n*3/4) }

func (s *Shard) rec(id uint32) *record {
	c := id / chunkLen
	return &s.chunks[c][id-c*chunkLen]
}

// find returns the index slot holding key and its record id, or the empty slot where key
// would go and false (-1 when the index is empty).
func (s *Shard) find(key []byte, h uint32) (int, uint32, bool) {
	n := len(s.index)
	if n == 0 {
		return -1, 0, false
	}
	for i := home(h, n); ; {
		e := s.index[i]
		if e == 0 {
			return i, 0, false
		}
		if uint32(e>>32) == h {
			if id := uint32(e) - 1; bytes.Equal(s.keyOf(id), key) {
				return i, id, true
			}
		}
		if i++; i == n {
			i = 0
		}
	}
}

// slotOf returns the index slot of a record in use.
func (s *Shard) slotOf(id uint32) int {
	n := len(s.index)
	want := uint64(id + 1)
	for i := home(s.hash(s.keyOf(id)), n); ; {
		if s.index[i]&math.MaxUint32 == want {
			return i
		}
		if i++; i == n {
			i = 0
		}
	}
}

// resize rebuilds the index with n slots; n must exceed s.count.
func (s *Shard) resize(n int) {
	old := s.index
	s.index = make([]uint64, n)
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := home(uint32(e>>32), n)
		for s.index[i] != 0 {
			if i++; i == n {
				i = 0
			}
		}
		s.index[i] = e
	}
}

// unlink empties index slot i, shifting back the entries after it that may move closer to
// their home, so that no probe ever needs a tombstone.
func (s *Shard) unlink(i int) {
	n := len(s.index)
	for j := i; ; {
		if j++; j == n {
			j = 0
		}
		e := s.index[j]
		if e == 0 {
			break
		}
		// The entry at j stays when its home lies cyclically in (i, j].
		k := home(uint32(e>>32), n)
		if i <= j {
			if i < k && k <= j {
				continue
			}
		} else if i < k || k <= j {
			continue
		}
		s.index[i] = e
		i = j
	}
	s.index[i] = 0
}

// remove deletes the key at index slot pos, whose record is id.
func (s *Shard) remove(pos int, id uint32) {
	s.unlink(pos)
	s.freeRecord(id)
	s.count--
	s.keys.Add(-1)
	switch {
	case s.count == 0:
		s.index = nil
		if cap(s.arena) > minCompact {
			s.arena = nil
		}
		s.arena, s.dead = s.arena[:0], 0
	case len(s.index) > minIndex && s.count*minLoadDen < len(s.index)*minLoadNum:
		s.resize(targetIndex(s.count))
	}
	if s.dead > len(s.arena)/2 && len(s.arena) >= minCompact {
		s.compact(0)
	}
}

// allocRecord takes the lowest free record id, making a chunk if none is free.
func (s *Shard) allocRecord() uint32 {
	c := -1
	for w, b := range s.avail {
		if b != 0 {
			c = w*64 + bits.TrailingZeros64(b)
			break
		}
	}
	if c < 0 {
		c = len(s.chunks)
		if c >= maxChunks {
			panic("keyspace: shard full") // 4 billion keys in one shard
		}
		s.chunks = append(s.chunks, nil)
		s.meta = append(s.meta, freshMeta())
		if c/64 == len(s.avail) {
			s.avail = append(s.avail, 0)
		}
		s.avail[c/64] |= 1 << (c % 64)
	}
	if s.chunks[c] == nil {
		if s.spare != nil {
			s.chunks[c], s.spare = s.spare, nil
		} else {
			s.chunks[c] = new(chunk)
		}
	}
	m := &s.meta[c]
	slot := 0
	for w, b := range m.free {
		if b != 0 {
			slot = w*64 + bits.TrailingZeros64(b)
			m.free[w] = b & (b - 1)
			break
		}
	}
	if m.used++; m.used == chunkLen {
		s.avail[c/64] &^= 1 << (c % 64)
	}
	return uint32(c*chunkLen + slot)
}

// freeRecord releases record id and what it holds. The index must no longer point at it.
func (s *Shard) freeRecord(id uint32) {
	r := s.rec(id)
	off := int(r.key)
	hdr := s.arena[off]
	klen, _ := uvarint(s.arena[off+1:])
	s.dead += s.entrySizeAt(off)
	if klen > maxInlineKey {
		delete(s.big, id)
	}
	if hdr&hdrBytes != 0 {
		delete(s.vals, id)
	}
	if r.expire() != 0 {
		s.expires.Add(-1)
	}
	*r = record{}

	c, slot := int(id/chunkLen), int(id%chunkLen)
	m := &s.meta[c]
	m.free[slot/64] |= 1 << (slot % 64)
	m.used--
	s.avail[c/64] |= 1 << (c % 64)
	if m.used > 0 {
		return
	}
	// The chunk is empty (and zeroed): give it back, keeping one spare.
	if s.spare == nil {
		s.spare = s.chunks[c]
	}
	s.chunks[c] = nil
	for n := len(s.chunks); n > 0 && s.chunks[n-1] == nil; n-- {
		s.avail[(n-1)/64] &^= 1 << ((n - 1) % 64)
		s.chunks, s.meta = s.chunks[:n-1], s.meta[:n-1]
		if (n-1)%64 == 0 {
			s.avail = s.avail[:(n-1)/64]
		}
	}
	if len(s.chunks) == 0 {
		s.chunks, s.meta, s.avail, s.spare = nil, nil, nil, nil
	}
}

// isFree reports whether record id is free.
func (s *Shard) isFree(c int, slot int) bool {
	return s.meta[c].free[slot/64]&(1<<(slot%64)) != 0
}

// replace writes v over the key's record id, keeping the id.
func (s *Shard) replace(id uint32, key []byte, v Value) {
	r := s.rec(id)
	if oldExp := r.expire(); (oldExp != 0) != (v.Expire != 0) {
		if v.Expire != 0 {
			s.expires.Add(1)
		} else {
			s.expires.Add(-1)
		}
	}
	r.setExpire(v.Expire)
	r.setNumber(v.Num)
	wide := v.Num2 != 0
	off := int(r.key)
	if hdr := s.arena[off]; (hdr&hdrWide != 0) == wide {
		s.arena[off] = hdr&(hdrBytes|hdrWide) | byte(v.Kind)
		if wide {
			binary.LittleEndian.PutUint64(s.arena[s.num2At(off):], uint64(v.Num2))
		}
	} else {
		// The entry changes size: write it anew at the end of the arena.
		s.reserve(entrySize(len(key), wide)) // may compact, moving r.key
		off = int(r.key)
		hdr = s.arena[off]
		s.dead += s.entrySizeAt(off)
		r.key = s.appendEntry(key, v.Kind, wide, v.Num2)
		s.arena[r.key] |= hdr & hdrBytes
	}
	s.setBytes(id, v.Bytes)
}

// setBytes stores b as the byte value of record id, reusing the old value's memory when it
// fits, and sets the entry's hdrBytes flag to match.
func (s *Shard) setBytes(id uint32, b []byte) {
	off := s.rec(id).key
	had := s.arena[off]&hdrBytes != 0
	if len(b) == 0 {
		if had {
			delete(s.vals, id)
			s.arena[off] &^= hdrBytes
		}
		return
	}
	var old []byte
	if had {
		old = s.vals[id]
	}
	var nb []byte
	switch {
	case cap(old) >= len(b) && cap(old)/4 <= len(b):
		nb = old[:len(b)]
	case had:
		nb = make([]byte, len(b), len(b)+len(b)/4) // a value that grows may grow again
	default:
		nb = make([]byte, len(b))
	}
	copy(nb, b) // b may alias old: copy is a memmove
	if s.vals == nil {
		s.vals = make(map[uint32][]byte)
	}
	s.vals[id] = nb
	s.arena[off] |= hdrBytes
}

// value assembles the Value of record id.
func (s *Shard) value(id uint32, r *record) Value {
	off := int(r.key)
	hdr := s.arena[off]
	v := Value{Kind: Kind(hdr & hdrKind), Expire: r.expire(), Num: r.number()}
	if hdr&hdrWide != 0 {
		v.Num2 = int64(binary.LittleEndian.Uint64(s.arena[s.num2At(off):]))
	}
	if hdr&hdrBytes != 0 {
		v.Bytes = s.vals[id]
	}
	return v
}

// keyOf returns the key of record id, aliasing the shard's memory.
func (s *Shard) keyOf(id uint32) []byte {
	a := s.arena[s.rec(id).key+1:]
	klen, n := uvarint(a)
	if klen > maxInlineKey {
		return s.big[id]
	}
	return a[n : n+klen : n+klen]
}

// num2At returns the offset of Num2 in the wide entry at off.
func (s *Shard) num2At(off int) int {
	klen, n := uvarint(s.arena[off+1:])
	if klen > maxInlineKey {
		klen = 0
	}
	return off + 1 + n + klen
}

// entrySizeAt returns the size of the entry at off.
func (s *Shard) entrySizeAt(off int) int {
	klen, _ := uvarint(s.arena[off+1:])
	return entrySize(klen, s.arena[off]&hdrWide != 0)
}

// entrySize returns the size of the entry of a key of klen bytes.
func entrySize(klen int, wide bool) int {
	n := 1 + uvarintLen(klen)
	if klen <= maxInlineKey {
		n += klen
	}
	if wide {
		n += 8
	}
	return n
}

// reserve makes room for need more bytes at the end of the arena, compacting it when more
// than half is garbage.
func (s *Shard) reserve(need int) {
	if cap(s.arena)-len(s.arena) >= need {
		return
	}
	if s.dead >= len(s.arena)-s.dead {
		s.compact(need)
	} else {
		s.arena = slices.Grow(s.arena, need)
	}
	if len(s.arena)+need > maxArena {
		panic("keyspace: shard arena over 4 GiB")
	}
}

// appendEntry writes an entry at the end of the arena, which must have room, and returns its
// offset. The hdrBytes flag is left clear.
func (s *Shard) appendEntry(key []byte, k Kind, wide bool, num2 int64) uint32 {
	off := len(s.arena)
	hdr := byte(k)
	if wide {
		hdr |= hdrWide
	}
	s.arena = append(s.arena, hdr)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(key)))
	if len(key) <= maxInlineKey {
		s.arena = append(s.arena, key...)
	}
	if wide {
		s.arena = binary.LittleEndian.AppendUint64(s.arena, uint64(num2))
	}
	return uint32(off)
}

// compact copies the live entries to a new arena with room for need more bytes.
func (s *Shard) compact(need int) {
	live := len(s.arena) - s.dead
	old := s.arena
	s.arena = make([]byte, 0, live+need+(live+need)/8)
	for c, ch := range s.chunks {
		if ch == nil {
			continue
		}
		for slot := range ch {
			if s.isFree(c, slot) {
				continue
			}
			r := &ch[slot]
			off := int(r.key)
			n := s.entrySizeAtIn(old, off)
			r.key = uint32(len(s.arena))
			s.arena = append(s.arena, old[off:off+n]...)
		}
	}
	s.dead = 0
}

func (s *Shard) entrySizeAtIn(a []byte, off int) int {
	klen, _ := uvarint(a[off+1:])
	return entrySize(klen, a[off]&hdrWide != 0)
}

func uvarint(b []byte) (int, int) {
	if b[0] < 0x80 {
		return int(b[0]), 1
	}
	v, n := binary.Uvarint(b)
	return int(v), n
}

func uvarintLen(v int) int { return (bits.Len64(uint64(v)|1) + 6) / 7 }

// scanLocked walks record ids from id on, calling fn for live keys, until want keys were
// emitted or budget slots visited. It returns the id to go on from (scanDone at the end of
// the shard), the keys emitted and the slots visited.
func (s *Shard) scanLocked(id uint32, now int64, want, budget int, fn func([]byte, Value)) (next uint32, emitted, visited int) {
	end := uint64(len(s.chunks)) * chunkLen
	for uint64(id) < end {
		if emitted >= want || visited >= budget {
			return id, emitted, visited
		}
		c, slot := int(id/chunkLen), int(id%chunkLen)
		visited++
		if s.chunks[c] == nil {
			id = uint32(c+1) * chunkLen
			continue
		}
		id++
		if s.isFree(c, slot) {
			continue
		}
		r := &s.chunks[c][slot]
		if exp := r.expire(); exp != 0 && now >= exp {
			continue
		}
		fn(s.keyOf(id-1), s.value(id-1, r))
		emitted++
	}
	return scanDone, emitted, visited
}

// expireLocked runs ExpireCycle's samples on the shard, examining at most budget slots, and
// returns the keys removed and the slots examined.
func (s *Shard) expireLocked(now int64, budget int) (removed, work int) {
	pass := len(s.chunks) * chunkLen // never sweep the shard more than once per call
	for work < budget && pass > 0 {
		sampled, expired := 0, 0
		for sampled < sampleSize && work < budget && pass > 0 {
			end := uint32(len(s.chunks)) * chunkLen
			if end == 0 {
				pass = 0 // the shard is empty now
				break
			}
			if s.sweep >= end {
				s.sweep = 0
			}
			id := s.sweep
			c, slot := int(id/chunkLen), int(id%chunkLen)
			work++
			if s.chunks[c] == nil {
				pass -= chunkLen - slot
				s.sweep = uint32(c+1) * chunkLen
				continue
			}
			pass--
			s.sweep++
			if s.isFree(c, slot) {
				continue
			}
			exp := s.chunks[c][slot].expire()
			if exp == 0 {
				continue
			}
			sampled++
			if now >= exp {
				s.remove(s.slotOf(id), id)
				expired++
			}
		}
		removed += expired
		s.expired.Add(int64(expired))
		if expired*4 <= sampled {
			break
		}
	}
	return removed, work
}

// resetLocked drops every key and the memory they held.
func (s *Shard) resetLocked() {
	s.index, s.count = nil, 0
	s.chunks, s.meta, s.avail, s.spare = nil, nil, nil, nil
	s.arena, s.dead, s.vals, s.big = nil, 0, nil, nil
	s.sweep = 0
	s.keys.Store(0)
	s.expires.Store(0)
}

// memoryLocked returns the bytes the shard's structures take.
func (s *Shard) memoryLocked() int64 {
	n := 8*cap(s.index) + 8*cap(s.chunks) + int(unsafe.Sizeof(chunkMeta{}))*cap(s.meta) + 8*cap(s.avail) + cap(s.arena)
	for _, ch := range s.chunks {
		if ch != nil {
			n += chunkBytes
		}
	}
	if s.spare != nil {
		n += chunkBytes
	}
	// A map entry costs its key, slice header and control byte, at about 7/8 load.
	for _, b := range s.vals {
		n += cap(b) + (4+24+1)*8/7
	}
	for _, b := range s.big {
		n += cap(b) + (4+24+1)*8/7
	}
	return int64(n)
}
