package keyspace

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/throttledhq/throttled/notify"
)

// An entry holds one key and its state in a block of the shard's arena:
//
//	offset 0   header: the Kind (6 bits), hdrWide, hdrBytes
//	       1   record id, uint32 little-endian, with idRoom, idExpire, idNum and idDirty in
//	           its top bits
//	       5   the access clock: the second of the last access, 24 bits little-endian (clock.go)
//	       8   Expire, int64 little-endian, only when idExpire (it is not 0)
//	    then   Num, int64 little-endian, only when idNum (it is not 0)
//	    then   Num2, int64 little-endian, only when hdrWide (it is not 0)
//	    then   the key's length, uvarint
//	    then   the key, unless longer than maxInlineKey (then it is in Shard.big)
//	    then   only when hdrBytes, the byte value: its length, uvarint; only when idRoom,
//	           the length of its room, one byte; the bytes; the room, unused. A value
//	           longer than maxInlineValue is in Shard.vals, and its length is written 0
//
// The fields come first so that reading and updating them needs no decoding; a lookup
// touches the index slot and this entry and nothing else. A field that is 0 takes no bytes:
// a key without an expiry, a hash or a string saves 8 bytes each for Expire and Num. A write
// that changes the size of an entry (a field turning zero or not, a byte value outgrowing its room, shrinking so
// much that more than maxRoom bytes would be left over, or going in or out of Shard.vals)
// moves it to the tail; any other write is made in place. A byte value that grows moves
// with room after it (growRoom), so that a value growing a few bytes at every write (a
// sliding log, an admission at a time) moves once every few writes, not at every one:
// each move leaves dead bytes behind, and compacting them moves other entries too.
const (
	eID      = 1
	eClock   = 5 // the access clock's 3 bytes
	eFields  = 8 // where Expire, Num and Num2 start, those present
	hdrKind  = 0x3f
	hdrWide  = 0x40 // Num2 != 0: the entry has its 8 bytes
	hdrBytes = 0x80 // the key has a byte value (Value.Bytes is not empty)
	// idRoom, the top bit of the record id word, says the inline byte value has room after
	// it, and the byte before the value says how much. Record ids stay below it.
	idRoom = 1 << 31
	// idExpire and idNum, the next bits of the record id word, say that Expire and Num are
	// in the entry: they are not 0.
	idExpire = 1 << 30
	idNum    = 1 << 29
	// idDirty says that the DiskFeed holds the key's record id to drain (track.go): a
	// write that finds it set costs the feed nothing but this bit, which is in the cache
	// line the write touched anyway. It moves with the entry.
	idDirty = 1 << 28
	idFlags = idRoom | idExpire | idNum | idDirty
	// growRoom is the room a byte value that grew past its room gets when it moves: a
	// sliding log's next ten admissions over a one-minute window (3 bytes each), so that
	// it moves at one admission in eleven. maxRoom is the most room a value keeps in
	// place: it may grow into its room, and shrink leaving at most maxRoom.
	growRoom = 32
	maxRoom  = 2 * growRoom

	// maxInlineKey is the longest key kept in an entry; longer keys live in Shard.big, so
	// that an entry always fits a block.
	maxInlineKey = 1024
	// The bits of Shard.loan. A byte value GetLocked returns stays valid until the lock is
	// released or its key is written, but writes to other keys may move its entry to the
	// tail (compaction) and free its block. So once GetLocked has lent bytes (loanBytes),
	// a block freed is kept from reuse until Unlock (loanSpare): it may hold them.
	loanBytes = 1
	loanSpare = 2

	// maxInlineValue is the longest byte value kept in an entry; longer values live in
	// Shard.vals. A sliding log of 100 admissions takes about 300 bytes over a minute's
	// window and 400 over an hour's (algorithms.SlidingLog), and stays inline. A value kept
	// in Shard.vals costs a map slot, a slice header and its own heap object besides.
	maxInlineValue = 512

	blockShift = 13
	blockSize  = 1 << blockShift // a block is one 8 KiB object of the runtime
	blockMask  = blockSize - 1
	// maxBlocks keeps every entry offset + 1 within the 32 bits an index slot has for it.
	maxBlocks = 1<<(32-blockShift) - 1
	// freeID marks a free record id in Shard.ids. No entry starts there.
	freeID = math.MaxUint32
	// maxIDs keeps record ids below the id word's flags (and freeID).
	maxIDs = idDirty - 1

	// minIndex is the smallest index. Indexes grow past load maxLoadNum/maxLoadDen and
	// shrink below minLoadNum/minLoadDen, to about 4/7 (targetIndex).
	minIndex   = 8
	maxLoadNum = 4
	maxLoadDen = 5
	minLoadNum = 1
	minLoadDen = 5

	// Active expiry (Keyspace.ExpireStep) takes samples of sampleSize keys with an expiry,
	// as Redis does. A sample ends after sampleWork keys all the same, so that a shard whose
	// keys mostly have no expiry costs little. A shard is done for the round once at most
	// acceptableStale percent of a sample had expired: Redis's
	// ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE.
	sampleSize      = 20
	sampleWork      = 20 * sampleSize
	acceptableStale = 10
	// lockWork bounds the keys active expiry examines under one hold of a shard's lock:
	// about 100 microseconds at most, however much the shard has to remove.
	lockWork = 1000
	// scanDone is what scanLocked returns when it reached the end of the shard.
	scanDone = math.MaxUint32
)

// block is a piece of a shard's arena. It holds no pointers: the GC never scans it.
type block [blockSize]byte

// blockMeta accounts for a block's bytes.
type blockMeta struct {
	used int32 // bytes written, from the start: entries lie back to back up to here
	dead int32 // bytes of entries that no record points at any more
}

// Shard is one lock stripe of the keyspace. Callers lock it, call its *Locked methods and
// unlock it.
type Shard struct {
	mu   sync.Mutex // guards the fields below; the counters are written under it and read without
	loan uint8      // loanBytes, loanSpare: what the byte values lent under the lock held now pin

	// What a call writes besides its entry shares the lock's cache line: the lookups' counts
	// and the start of NumBuf (a number of up to 32 characters). The shards a call locks are
	// random, and each line it writes is one that another core may have to give up.
	hits, misses int64 // reads' lookups (lookups.go)

	numBuf [48]byte // NumBuf's

	// The runtime puts a shard (an object of over 512 bytes holding pointers) 8 bytes past
	// the start of its slot, after its malloc header, in a size class of whole cache lines:
	// trk, 56 bytes past a multiple of 64 in the shard, starts a cache line, as each tracker
	// does (see tracker). TestTrackerLayout checks shards as New allocates them.
	_   [40]byte
	trk [feeds]tracker // each feed's changes since its last Drain, when Keyspace.Track is on for it

	patchBuf []byte // put's: a Chunked value's changes for a Patcher

	seed maphash.Seed
	ord  int // position in Keyspace.shards: the order LockKeys locks in

	// index finds a key's entry: a slot is hash<<32 | offset+1 (0 is empty), hash being the
	// high 32 bits of the key's maphash. The probe for a key starts at home(hash, len(index))
	// and goes on slot after slot (linear probing).
	index []uint64
	count int // keys stored: used slots of index, used ids

	// ids gives every key a record id that stays the same while the key lives, whatever is
	// written to it and wherever its entry moves: ids[id] is the offset of its entry, or
	// freeID. Free ids are reused lowest first, so that ids stays dense.
	ids     []uint32
	freeIDs []uint64 // bit set: the id is free
	freeSum []uint64 // bit w set: freeIDs[w] has a free id

	// The arena: an entry's offset is block<<blockShift | position. Entries are appended
	// to the tail block; a block more than half dead is compacted into the tail and freed.
	blocks     []*block // nil: a freed block, its number is in freeBlocks
	meta       []blockMeta
	freeBlocks []int32
	tail       int    // the block entries are appended to; -1 when none
	spare      *block // a freed block kept back, so that keys coming and going do not allocate
	queue      []int32
	compacting bool // a compaction is running: further ones queue up

	vals map[uint32][]byte // byte values longer than maxInlineValue, by record id
	objs map[uint32]Object // values held by reference (Value.Obj), by record id
	big  map[uint32][]byte // keys longer than maxInlineKey, by record id

	// sweep is where active expiry goes on in the index, as a position in hash order:
	// the slot home(sweep, len(index)), whatever size the index has grown or shrunk to.
	sweep uint32

	tracking bool  // some feed tracks
	tracked  uint8 // a bit per Feed that tracks: noteWrite reads no tracker of another

	watchers map[string][]*Watch // the keys WATCHed and their watches; nil when none
	blocked  map[string]int      // the keys clients wait on (blocked.go), and how many; nil when none
	ready    *readyList          // Keyspace.ready

	clock *atomic.Uint32 // Keyspace.clock: the second entries note as their last access

	keys    atomic.Int64 // Keyspace.Len
	expires atomic.Int64 // Keyspace.Expires
	expired atomic.Int64 // Keyspace.ExpiredTotal
	evicted atomic.Int64 // Keyspace.EvictedTotal

	events *notify.Notifier // Keyspace.SetNotifier's; nil fires nothing

	// keeps the counters off the next shard's mutex: two cache lines, as the adjacent-line
	// prefetcher of x86 fetches lines in pairs
	_ [128]byte
}

func newShard(seed maphash.Seed, ord int, clock *atomic.Uint32, ready *readyList) *Shard {
	return &Shard{seed: seed, ord: ord, tail: -1, clock: clock, ready: ready}
}

// Lock locks the shard.
func (s *Shard) Lock() { s.mu.Lock() }

// EndLoans tells the shard that no byte value GetLocked lent is in use any more, as Unlock
// does, for a caller that keeps the lock for its next command (a pipeline's requests on one
// shard, run under one lock).
func (s *Shard) EndLoans() { s.loan = 0 }

// Unlock unlocks the shard.
func (s *Shard) Unlock() {
	s.loan = 0
	s.mu.Unlock()
}

// GetLocked returns the value at key and true, or false when there is none. A key that has
// expired at now (now >= Expire) is deleted then and reported missing. Bytes of the value
// alias the shard's memory: they are valid only until the lock is released or the key is
// written (set or deleted); writes to other keys leave them alone. GetLocked does not
// allocate.
func (s *Shard) GetLocked(key []byte, now int64) (Value, bool) {
	pos, off, ok := s.find(key, s.hash(key))
	if !ok {
		return Value{}, false
	}
	e := s.entry(off)
	exp, num, num2 := fields(e)
	if exp != 0 && now >= exp {
		s.fireEntry(notify.Expired, "expired", e)
		s.remove(pos, off)
		s.expired.Add(1)
		return Value{}, false
	}
	// As in value, inlined: returning value's result costs a copy through memory.
	hdr := e[0]
	var b []byte
	var obj Object
	if hdr&hdrBytes != 0 {
		b = s.bytesOf(e)
		if b == nil {
			obj = s.objs[getID(e)]
		}
		s.loan |= loanBytes
	}
	touchClock(e, s.clock.Load())
	return Value{Kind: Kind(hdr & hdrKind), Expire: exp, Num: num, Num2: num2, Bytes: b, Obj: obj}, true
}

// NumBuf returns an empty buffer of the shard's, with room for a number's text, valid while
// the lock is held: INCR's new value is formatted there, then copied by SetLocked. A buffer on
// the caller's stack would move to the heap at each call, since SetLocked keeps Value.Obj and
// escape analysis cannot tell Obj's pointer from Bytes'.
func (s *Shard) NumBuf() []byte { return s.numBuf[:0] }

// SetLocked stores v at key, replacing what was there (an expired key is replaced too).
// It copies key and v.Bytes, which may alias bytes GetLocked returned. A Value of Kind None
// deletes the key. Replacing the value of an existing key keeps its record id (see Scan).
// It is done in place, without allocating, when the entry keeps its size: Num2 stays zero
// or non-zero and the bytes fit where the old ones and their room were, leaving at most
// maxRoom, or stay longer than maxInlineValue and fit the old ones' capacity. Otherwise the
// entry moves to the tail of the arena, which allocates only when a block fills and no
// freed one is at hand.
func (s *Shard) SetLocked(key []byte, v Value) {
	if v.Kind == None {
		s.DeleteLocked(key)
		return
	}
	if v.Kind > maxKind || v.Chunks {
		panic("keyspace: Kind " + strconv.Itoa(int(v.Kind)) + " out of range, or a value in chunk form not objectified")
	}
	if s.blocked != nil {
		s.signal(key)
	}
	h := s.hash(key)
	pos, off, ok := s.find(key, h)
	if ok {
		s.replace(pos, off, key, v)
		return
	}
	if (s.count+1)*maxLoadDen > len(s.index)*maxLoadNum {
		s.resize(targetIndex(s.count + 1))
		pos, _, _ = s.find(key, h)
	}
	off, e := s.appendEntry(entrySize(len(key), vlenOf(v), 0, v)) // may compact: only then take the id
	id := s.allocID()
	writeEntry(e, id, key, v, 0, s.clock.Load())
	s.ids[id] = off
	if len(key) > maxInlineKey {
		if s.big == nil {
			s.big = make(map[uint32][]byte)
		}
		s.big[id] = bytes.Clone(key)
	}
	if vlenOf(v) > maxInlineValue {
		s.putOut(id, v)
	}
	s.index[pos] = uint64(h)<<32 | uint64(off+1)
	if s.tracking {
		s.noteWrite(id, off)
	}
	if s.watchers != nil {
		s.touch(key)
	}
	s.count++
	s.keys.Add(1)
	if v.Expire != 0 {
		s.expires.Add(1)
	}
	s.fireEntry(notify.NewKey, "new", e)
}

// SwapLocked stores v, which must hold an Obj, at key in place of its live value, which
// holds the same state in another form (bytes read from the log, or sent by a primary). It
// is no write: nothing is noted for persistence, replication or watches. A missing key is
// left alone.
func (s *Shard) SwapLocked(key []byte, v Value) {
	pos, off, ok := s.find(key, s.hash(key))
	if !ok || v.Obj == nil {
		return
	}
	v.Bytes = nil
	s.replaceSized(pos, off, key, v)
}

// DeleteLocked removes key and reports whether it was stored. A key that has expired but was
// not removed yet counts as stored; DeleteAtLocked counts it as gone.
func (s *Shard) DeleteLocked(key []byte) bool {
	pos, off, ok := s.find(key, s.hash(key))
	if ok {
		s.remove(pos, off)
	}
	return ok
}

// DeleteAtLocked removes key and reports whether it was live at now, as Redis's DEL counts:
// a key that had expired is removed as expired and false is returned.
func (s *Shard) DeleteAtLocked(key []byte, now int64) bool {
	pos, off, ok := s.find(key, s.hash(key))
	if !ok {
		return false
	}
	e := s.entry(off)
	exp := expireOf(e)
	if exp != 0 && now >= exp {
		s.fireEntry(notify.Expired, "expired", e)
	}
	s.remove(pos, off)
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

// entry returns the arena from offset off to the end of its block.
func (s *Shard) entry(off uint32) []byte {
	// Through unsafe.Slice, not s.blocks[b][...]: slicing the *block checks it for nil by
	// reading the block's first byte, a cache line and often a page other than the entry's,
	// and so a miss of its own on most lookups in a large keyspace.
	b := unsafe.Pointer(s.blocks[off>>blockShift])
	return unsafe.Slice((*byte)(b), blockSize)[off&blockMask:]
}

func getInt(e []byte, at int) int64    { return int64(binary.LittleEndian.Uint64(e[at:])) }
func putInt(e []byte, at int, v int64) { binary.LittleEndian.PutUint64(e[at:], uint64(v)) }
func getID(e []byte) uint32            { return binary.LittleEndian.Uint32(e[eID:]) &^ idFlags }

// idFlag reports whether entry e's id word has flag, one of idRoom, idExpire, idNum, idDirty.
func idFlag(e []byte, flag uint32) bool { return e[eID+3]&byte(flag>>24) != 0 }

// fields returns entry e's Expire, Num and Num2, 0 for those it has not.
func fields(e []byte) (exp, num, num2 int64) {
	at := eFields
	if idFlag(e, idExpire) {
		exp = getInt(e, at)
		at += 8
	}
	if idFlag(e, idNum) {
		num = getInt(e, at)
		at += 8
	}
	if e[0]&hdrWide != 0 {
		num2 = getInt(e, at)
	}
	return exp, num, num2
}

// expireOf returns entry e's Expire, 0 when it has none.
func expireOf(e []byte) int64 {
	if idFlag(e, idExpire) {
		return getInt(e, eFields)
	}
	return 0
}

// layoutOf returns the id word's flags and the header's hdrWide that an entry of v has.
func layoutOf(v Value) (flags uint32, hdr byte) {
	if v.Expire != 0 {
		flags |= idExpire
	}
	if v.Num != 0 {
		flags |= idNum
	}
	if v.Num2 != 0 {
		hdr = hdrWide
	}
	return flags, hdr
}

// sameLayout reports whether v's fields fit entry e's as they are: each zero or not alike.
func sameLayout(e []byte, v Value) bool {
	flags, hdr := layoutOf(v)
	return binary.LittleEndian.Uint32(e[eID:])&(idExpire|idNum) == flags && e[0]&hdrWide == hdr
}

// fixedSize is the length of the fixed part of an entry with these fields.
func fixedSize(flags uint32, hdr byte) int {
	n := eFields
	if flags&idExpire != 0 {
		n += 8
	}
	if flags&idNum != 0 {
		n += 8
	}
	if hdr&hdrWide != 0 {
		n += 8
	}
	return n
}

// hasRoom reports whether entry e has idRoom: the byte before its inline value's bytes
// gives the length of the room after them.
func hasRoom(e []byte) bool { return idFlag(e, idRoom) }

// fixedLen is the length of entry e's fixed part.
func fixedLen(e []byte) int {
	return fixedSize(binary.LittleEndian.Uint32(e[eID:])&(idExpire|idNum), e[0]&hdrWide)
}

// entrySize is the size of the entry of a key of klen bytes with v's fields, a byte value
// of vlen and, when it is inline, room bytes of room.
func entrySize(klen, vlen, room int, v Value) int {
	n := fixedSize(layoutOf(v)) + uvarintLen(klen)
	if klen <= maxInlineKey {
		n += klen
	}
	switch {
	case vlen > maxInlineValue:
		n++ // the length 0
	case vlen > 0:
		n += uvarintLen(vlen) + vlen
		if room > 0 {
			n += 1 + room
		}
	}
	return n
}

// keyEnd returns where the key of entry e ends: where its byte value starts, if it has one.
func keyEnd(e []byte) int {
	at := fixedLen(e)
	klen, n := uvarint(e[at:])
	at += n
	if klen <= maxInlineKey {
		at += klen
	}
	return at
}

// sizeOf returns the size of the entry e starts with.
func sizeOf(e []byte) int {
	at := keyEnd(e)
	if e[0]&hdrBytes != 0 {
		_, field := valueField(e, at)
		at += field
	}
	return at
}

// valueField returns the length of the byte value of entry e, which has hdrBytes, and the
// size of its field (its length, room length, bytes and room), which starts at at. The
// length is 0 for a value in Shard.vals.
func valueField(e []byte, at int) (vlen, field int) {
	vlen, n := uvarint(e[at:])
	field = n + vlen
	if hasRoom(e) {
		field += 1 + int(e[at+n])
	}
	return vlen, field
}

// inVals reports whether entry e has a byte value and keeps it in Shard.vals.
func inVals(e []byte) bool {
	return e[0]&hdrBytes != 0 && e[keyEnd(e)] == 0 // the first byte of a uvarint is 0 only for 0
}

// writeEntry writes an entry for key and v into e, which is entrySize long, an inline byte
// value with room bytes of room. A byte value longer than maxInlineValue is left for the
// caller to put in Shard.vals.
func writeEntry(e []byte, id uint32, key []byte, v Value, room int, clock uint32) {
	flags, hdr := layoutOf(v)
	e[0] = byte(v.Kind) | hdr
	binary.LittleEndian.PutUint32(e[eID:], id|flags)
	putClock(e, clock)
	at := putFields(e, v)
	at += binary.PutUvarint(e[at:], uint64(len(key)))
	if len(key) <= maxInlineKey {
		at += copy(e[at:], key)
	}
	switch b := v.Bytes; {
	case len(b) > maxInlineValue || v.Obj != nil:
		e[0] |= hdrBytes
		e[at] = 0
	case len(b) > 0:
		e[0] |= hdrBytes
		at += binary.PutUvarint(e[at:], uint64(len(b)))
		if room > 0 {
			e[eID+3] |= idRoom >> 24
			e[at] = byte(room)
			at++
		}
		copy(e[at:], b) // b may alias the entry this one replaces, never e
	}
}

// keyIn returns the key of entry e, aliasing the shard's memory.
func (s *Shard) keyIn(e []byte) []byte {
	at := fixedLen(e)
	klen, n := uvarint(e[at:])
	if klen > maxInlineKey {
		return s.big[getID(e)]
	}
	at += n
	return e[at : at+klen : at+klen]
}

// bytesOf returns the byte value of entry e, which has hdrBytes, aliasing the shard's
// memory. The slice's capacity ends with the value, so that appending to it never writes
// over the next entry.
func (s *Shard) bytesOf(e []byte) []byte {
	at := keyEnd(e)
	vlen, n := uvarint(e[at:])
	if vlen == 0 {
		return s.vals[getID(e)]
	}
	at += n
	if hasRoom(e) {
		at++
	}
	return e[at : at+vlen : at+vlen]
}

// inlineBytes returns the byte value of entry e, which has hdrBytes, when it is in the
// entry, aliasing the shard's memory; nil when it is in Shard.vals or an Obj.
func inlineBytes(e []byte) []byte {
	at := keyEnd(e)
	vlen, n := uvarint(e[at:])
	if vlen == 0 {
		return nil
	}
	at += n
	if hasRoom(e) {
		at++
	}
	return e[at : at+vlen : at+vlen]
}

// value assembles the Value of entry e.
func (s *Shard) value(e []byte) Value {
	hdr := e[0]
	exp, num, num2 := fields(e)
	var b []byte
	var obj Object
	if hdr&hdrBytes != 0 {
		if b = s.bytesOf(e); b == nil {
			obj = s.objs[getID(e)]
		}
	}
	return Value{Kind: Kind(hdr & hdrKind), Expire: exp, Num: num, Num2: num2, Bytes: b, Obj: obj}
}

// find returns the index slot holding key and its entry's offset, or the empty slot where
// key would go and false (-1 when the index is empty).
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
			if off := uint32(e) - 1; bytes.Equal(s.keyIn(s.entry(off)), key) {
				return i, off, true
			}
		}
		if i++; i == n {
			i = 0
		}
	}
}

// slotOf returns the index slot that points at the entry at off.
func (s *Shard) slotOf(off uint32) int {
	n := len(s.index)
	want := uint64(off + 1)
	for i := home(s.hash(s.keyIn(s.entry(off))), n); ; {
		if s.index[i]&math.MaxUint32 == want {
			return i
		}
		if i++; i == n {
			i = 0
		}
	}
}

// resize rebuilds the index with n slots; n must exceed s.count. The hashes are in the
// slots: no key is read.
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

// remove deletes the key at index slot pos, whose entry is at off.
func (s *Shard) remove(pos int, off uint32) {
	s.removeKeepingIndex(pos, off)
	s.fitIndex()
}

// removeKeepingIndex is remove leaving the index its size, however few keys it holds: active
// expiry walks it, and a key it has not examined yet must not move behind it.
func (s *Shard) removeKeepingIndex(pos int, off uint32) {
	e := s.entry(off)
	id := getID(e)
	if s.tracking {
		s.noteDelete(id, s.keyIn(e), idFlag(e, idDirty))
	}
	if s.watchers != nil {
		s.touch(s.keyIn(e))
	}
	if inVals(e) {
		delete(s.vals, id)
		delete(s.objs, id)
	}
	if klen, _ := uvarint(e[fixedLen(e):]); klen > maxInlineKey {
		delete(s.big, id)
	}
	if idFlag(e, idExpire) {
		s.expires.Add(-1)
	}
	s.unlink(pos)
	s.releaseID(id)
	s.count--
	s.keys.Add(-1)
	s.kill(off, sizeOf(e))
}

// fitIndex shrinks an index that holds few keys for its size, and drops an empty one.
func (s *Shard) fitIndex() {
	if s.count == 0 {
		s.index = nil
	} else if len(s.index) > minIndex && s.count*minLoadDen < len(s.index)*minLoadNum {
		s.resize(targetIndex(s.count))
	}
}

// replace writes v over the key whose entry is at off and index slot pos.
func (s *Shard) replace(pos int, off uint32, key []byte, v Value) {
	e := s.entry(off)
	if idFlag(e, idExpire) != (v.Expire != 0) {
		if v.Expire != 0 {
			s.expires.Add(1)
		} else {
			s.expires.Add(-1)
		}
	}
	id := getID(e)
	if e[0]&hdrBytes == 0 && len(v.Bytes) == 0 && sameLayout(e, v) {
		// The fixed-size kinds' path: no sizes to work out.
		e[0] = e[0]&hdrWide | byte(v.Kind)
		putFields(e, v)
		touchClock(e, s.clock.Load())
	} else {
		off = s.replaceSized(pos, off, key, v) // it may have moved
		touchClock(s.entry(off), s.clock.Load())
	}
	if s.tracking {
		s.noteWrite(id, off)
	}
	if s.watchers != nil {
		s.touch(key)
	}
}

// replaceSized is replace for an entry that has or gets a byte value: in place when the
// entry keeps its layout (an inline value within its room), else written anew at the tail.
// It returns where the entry is now: written in place, where it was, without reading its
// id's offset (a cache miss on every INCR and SET of an existing key).
func (s *Shard) replaceSized(pos int, off uint32, key []byte, v Value) uint32 {
	e := s.entry(off)
	id := getID(e)
	at, vlen, field := keyEnd(e), 0, 0 // where the value field starts, the value's length, the field's
	if e[0]&hdrBytes != 0 {
		vlen, field = valueField(e, at)
	}
	wasBig, big := e[0]&hdrBytes != 0 && vlen == 0, vlenOf(v) > maxInlineValue
	size, room := at+field, 0
	if sameLayout(e, v) {
		switch {
		case wasBig && big:
			setFields(e, v)
			s.putOut(id, v)
			return off
		case vlen > 0 && len(v.Bytes) > 0 && !big: // inline before and after
			if putInline(e, at, field, vlen, v.Bytes) {
				setFields(e, v)
				return off
			}
			if len(v.Bytes) > vlen {
				room = growRoom
			}
		}
	}
	// v.Bytes may alias the old entry, which appendEntry may move: its bytes stay intact
	// all the same, since GetLocked lent them (see loanSpare).
	tail, dirty := s.tail, idFlag(e, idDirty)
	newOff, ne := s.appendEntry(entrySize(len(key), vlenOf(v), room, v))
	if s.tail != tail {
		off = s.ids[id] // compacting the old tail block may have moved the entry
	}
	writeEntry(ne, id, key, v, room, s.clock.Load())
	if dirty {
		ne[eID+3] |= idDirty >> 24 // still queued for the DiskFeed
	}
	slide := newOff == off+uint32(size) && off/blockSize == newOff/blockSize // in the same block: not one ending where the next begins
	if slide {
		// The old entry ends the tail block where the new one starts: the new one takes its
		// place, so that a key that changes size right after it was written (HSET, then
		// PEXPIRE: Expire takes bytes now) leaves no dead bytes behind.
		copy(s.blocks[s.tail][off&blockMask:], ne)
		s.meta[s.tail].used -= int32(size)
		newOff = off
	}
	s.ids[id] = newOff
	s.index[pos] = s.index[pos]&^math.MaxUint32 | uint64(newOff+1)
	if !slide {
		s.kill(off, size) // after the id moved: a compaction it starts sees the old entry dead
	}
	switch {
	case big:
		s.putOut(id, v)
	case wasBig:
		delete(s.vals, id)
		delete(s.objs, id)
	}
	return s.ids[id] // kill may have compacted the block the entry went to
}

// setFields writes the Kind and the fields of v over entry e, whose layout stays
// (sameLayout).
func setFields(e []byte, v Value) {
	e[0] = e[0]&(hdrWide|hdrBytes) | byte(v.Kind)
	putFields(e, v)
}

// putFields writes v's fields that are not 0 from eFields on and returns where they end.
func putFields(e []byte, v Value) int {
	at := eFields
	for _, x := range [...]int64{v.Expire, v.Num, v.Num2} {
		if x != 0 {
			putInt(e, at, x)
			at += 8
		}
	}
	return at
}

// putInline writes b, 1 to maxInlineValue bytes, as the inline byte value of entry e whose
// value field (length, room length, bytes, room) starts at at, is field bytes long and holds
// vlen bytes now, and reports whether it fitted: as the field's bytes exactly, or leaving
// room of at most maxRoom.
func putInline(e []byte, at, field, vlen int, b []byte) bool {
	n := uvarintLen(len(b))
	left := field - n - len(b) // the room, and its length byte when there is any
	if left < 0 || left > 1+maxRoom {
		return false
	}
	start := at + n
	if left > 0 {
		start++
	}
	// b may be the value's own bytes, from GetLocked, which the new length and room
	// length may overwrite: move them first (copy is a memmove).
	copy(e[start:start+len(b)], b)
	if len(b) == vlen {
		return true // the length and the room are as they were
	}
	binary.PutUvarint(e[at:], uint64(len(b)))
	if left > 0 {
		e[eID+3] |= idRoom >> 24
		e[at+n] = byte(left - 1)
	} else {
		e[eID+3] &^= idRoom >> 24
	}
	return true
}

// vlenOf returns the length an entry's value field takes v's value for: an Obj is kept
// out of the entry, as a byte value longer than maxInlineValue.
func vlenOf(v Value) int {
	if v.Obj != nil {
		return maxInlineValue + 1
	}
	return len(v.Bytes)
}

// putOut stores the value of v kept out of its entry (vlenOf past maxInlineValue) for
// record id: an Obj in objs, bytes in vals.
func (s *Shard) putOut(id uint32, v Value) {
	if v.Obj != nil {
		delete(s.vals, id)
		if s.objs == nil {
			s.objs = make(map[uint32]Object)
		}
		if c, ok := v.Obj.(Chunked); ok {
			if s.objs[id] != v.Obj {
				c.Rewrite() // new at this key: every feed takes it whole (RENAME, a load)
			}
			var tracked, logs uint8
			for f := range s.trk {
				if s.trk[f].track {
					tracked |= 1 << f
					if s.trk[f].capture {
						logs |= 1 << f
					}
				}
			}
			c.Feeds(tracked, logs)
		}
		s.objs[id] = v.Obj
		return
	}
	delete(s.objs, id)
	s.setBig(id, v.Bytes)
}

// setBig stores b, longer than maxInlineValue, as the byte value of record id in vals,
// reusing the memory of the value there when it fits.
func (s *Shard) setBig(id uint32, b []byte) {
	old := s.vals[id]
	var nb []byte
	switch {
	case cap(old) >= len(b) && cap(old)/4 <= len(b):
		nb = old[:len(b)]
	case old != nil:
		nb = make([]byte, len(b), len(b)+len(b)/4) // a value that grows may grow again
	default:
		nb = make([]byte, len(b))
	}
	copy(nb, b) // b may alias old: copy is a memmove
	if s.vals == nil {
		s.vals = make(map[uint32][]byte)
	}
	s.vals[id] = nb
}

// allocID takes the lowest free record id, or a new one. Its ids slot holds freeID.
func (s *Shard) allocID() uint32 {
	for i, sum := range s.freeSum {
		if sum != 0 {
			w := i*64 + bits.TrailingZeros64(sum)
			b := s.freeIDs[w]
			s.freeIDs[w] = b & (b - 1)
			if b&(b-1) == 0 {
				s.freeSum[i] &^= 1 << (w % 64)
			}
			return uint32(w*64 + bits.TrailingZeros64(b))
		}
	}
	id := len(s.ids)
	if id >= maxIDs {
		panic("keyspace: shard full") // 268 million keys in one shard
	}
	s.ids = append(s.ids, freeID)
	if id%64 == 0 {
		if id%(64*64) == 0 {
			s.freeSum = append(s.freeSum, 0)
		}
		s.freeIDs = append(s.freeIDs, 0)
	}
	return uint32(id)
}

// releaseID frees record id, dropping the free ids at the end of ids.
func (s *Shard) releaseID(id uint32) {
	s.ids[id] = freeID
	w := int(id / 64)
	s.freeIDs[w] |= 1 << (id % 64)
	s.freeSum[w/64] |= 1 << (w % 64)
	for n := len(s.ids); n > 0 && s.ids[n-1] == freeID; n-- {
		last := n - 1
		w := last / 64
		if s.freeIDs[w] &^= 1 << (last % 64); s.freeIDs[w] == 0 {
			s.freeSum[w/64] &^= 1 << (w % 64)
		}
		s.ids = s.ids[:last]
		if last%64 == 0 {
			s.freeIDs = s.freeIDs[:w]
			if w%64 == 0 {
				s.freeSum = s.freeSum[:w/64]
			}
		}
	}
	if c := cap(s.ids); c > 1024 && len(s.ids) < c/4 {
		s.ids = append([]uint32(nil), s.ids...)
		s.freeIDs = append([]uint64(nil), s.freeIDs...)
		s.freeSum = append([]uint64(nil), s.freeSum...)
	}
}

// appendEntry reserves size bytes at the tail of the arena and returns their offset. It may
// start a new tail block and compact the old one, moving entries.
func (s *Shard) appendEntry(size int) (uint32, []byte) {
	for s.tail < 0 || int(s.meta[s.tail].used)+size > blockSize {
		s.newTail() // the compaction it may start can fill the new tail too
	}
	m := &s.meta[s.tail]
	off := uint32(s.tail<<blockShift | int(m.used))
	m.used += int32(size)
	return off, s.blocks[s.tail][m.used-int32(size) : m.used]
}

// newTail makes a fresh block the tail.
func (s *Shard) newTail() {
	var b int
	if n := len(s.freeBlocks); n > 0 {
		b = int(s.freeBlocks[n-1])
		s.freeBlocks = s.freeBlocks[:n-1]
	} else {
		b = len(s.blocks)
		if b >= maxBlocks {
			panic("keyspace: shard arena over 4 GiB")
		}
		s.blocks = append(s.blocks, nil)
		s.meta = append(s.meta, blockMeta{})
	}
	if s.spare != nil && s.loan&loanSpare == 0 {
		s.blocks[b], s.spare = s.spare, nil
	} else {
		s.blocks[b] = new(block)
	}
	old := s.tail
	s.tail = b
	if old >= 0 {
		s.compactLater(old) // it was spared while it was the tail
	}
}

// kill accounts for the death of the entry of size bytes at off.
func (s *Shard) kill(off uint32, size int) {
	b := int(off >> blockShift)
	m := &s.meta[b]
	m.dead += int32(size)
	if b == s.tail {
		if m.dead == m.used { // nothing lives in the tail: start it over
			m.used, m.dead = 0, 0
		}
		return
	}
	s.compactLater(b)
}

// compactLater compacts block b if more than half of it is dead, and what that compaction
// leaves to compact, unless a compaction is running already, which then does it.
func (s *Shard) compactLater(b int) {
	if m := s.meta[b]; m.dead*2 <= m.used {
		return
	}
	s.queue = append(s.queue, int32(b))
	if s.compacting {
		return
	}
	s.compacting = true
	for len(s.queue) > 0 {
		b := int(s.queue[len(s.queue)-1])
		s.queue = s.queue[:len(s.queue)-1]
		if m := s.meta[b]; b != s.tail && s.blocks[b] != nil && m.dead*2 > m.used {
			s.compactBlock(b)
		}
	}
	s.compacting = false
}

// compactBlock moves the live entries of block b to the tail and frees b.
func (s *Shard) compactBlock(b int) {
	blk := s.blocks[b]
	used := int(s.meta[b].used)
	for at := 0; at < used; {
		e := blk[at:used]
		size := sizeOf(e)
		off := uint32(b<<blockShift | at)
		at += size
		id := getID(e)
		if int(id) >= len(s.ids) || s.ids[id] != off {
			continue // dead
		}
		pos := s.slotOf(off)
		newOff, ne := s.appendEntry(size)
		copy(ne, e[:size])
		s.ids[id] = newOff
		s.index[pos] = s.index[pos]&^math.MaxUint32 | uint64(newOff+1)
	}
	s.blocks[b] = nil
	s.meta[b] = blockMeta{}
	if s.spare == nil {
		s.spare = blk
		if s.loan&loanBytes != 0 {
			s.loan |= loanSpare
		}
	}
	s.freeBlocks = append(s.freeBlocks, int32(b))
	// Free blocks at the end are dropped altogether.
	for n := len(s.blocks); n > 0 && s.blocks[n-1] == nil; n = len(s.blocks) {
		s.blocks, s.meta = s.blocks[:n-1], s.meta[:n-1]
		for i, fb := range s.freeBlocks {
			if int(fb) == n-1 {
				last := len(s.freeBlocks) - 1
				s.freeBlocks[i] = s.freeBlocks[last]
				s.freeBlocks = s.freeBlocks[:last]
				break
			}
		}
	}
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
// emitted or budget ids visited. It returns the id to go on from (scanDone at the end of
// the shard), the keys emitted and the ids visited.
func (s *Shard) scanLocked(id uint32, now int64, want, budget int, fn func([]byte, Value)) (next uint32, emitted, visited int) {
	for ; int(id) < len(s.ids); id++ {
		if emitted >= want || visited >= budget {
			return id, emitted, visited
		}
		visited++
		off := s.ids[id]
		if off == freeID {
			continue
		}
		e := s.entry(off)
		if exp := expireOf(e); exp != 0 && now >= exp {
			continue
		}
		fn(s.keyIn(e), s.value(e))
		emitted++
	}
	return scanDone, emitted, visited
}

// expireRound is a shard's part in a round of active expiry, carried from one call of
// Keyspace.ExpireStep to the next while the shard is not done.
type expireRound struct {
	begun   bool
	fresh   bool  // a sample was mostly fresh: the shard is done for the round
	left    int64 // the hash order the shard's one pass of the round has still to walk, of 1<<32
	keys    int   // keys examined in the sample in progress
	sampled int   // keys with an expiry among them
	expired int   // and of those, the ones removed
}

// expireLocked goes on with the shard's part in round r: it walks the index from the sweep
// on, in samples (see sampleSize), removes the keys that have expired at now, and takes
// another sample while more than acceptableStale percent of the last one had expired. It
// examines at most budget keys, and walks the index once a round at most. It returns the
// keys removed, the keys examined and whether the shard is done for the round.
//
// The walk follows the index, not the record ids, because the index is in hash order:
// a sample is a fair one of the shard's keys, as Redis's of its hash table. Record ids are
// in no such order: free ids are reused lowest first, so that the keys written since the
// sweep passed gather behind it. A sweep over ids that stops at a fresh sample leaves the
// keys behind it for a whole lap, and under a churn of short-lived keys that lap never
// ends: the ids grow at the end as fast as the sweep walks them.
//
// Removals leave the index its size until the shard is done for the round: a key moves
// only back to the slot the walk is at, never behind it, so that the pass examines every
// key the shard held when its turn came, unless writes between two calls resize the index.
func (s *Shard) expireLocked(now int64, budget int, r *expireRound) (removed, work int, done bool) {
	if !r.begun {
		*r = expireRound{begun: true, left: 1 << 32}
	}
	at := uint64(s.sweep)
	for done = s.expireDone(r); !done && work < budget; done = s.expireDone(r) {
		n := len(s.index)
		i := home(uint32(at), n)
		gone := false
		if e := s.index[i]; e != 0 {
			r.keys++
			work++
			off := uint32(e) - 1
			if exp := expireOf(s.entry(off)); exp != 0 {
				r.sampled++
				if gone = now >= exp; gone {
					s.fireEntry(notify.Expired, "expired", s.entry(off))
					// The slot then holds the next key of its run, if any: the walk stays.
					s.removeKeepingIndex(i, off)
					r.expired++
					removed++
				}
			}
		}
		if !gone {
			next := slotStart(i+1, n)
			r.left -= int64(next - at)
			at = next & (1<<32 - 1)
		}
		if r.sampled == sampleSize || r.keys == sampleWork {
			// A sample mostly fresh, or without keys that expire: the rest waits for later rounds.
			r.fresh = r.expired*100 <= r.sampled*acceptableStale
			r.keys, r.sampled, r.expired = 0, 0, 0
		}
	}
	s.sweep = uint32(at)
	if done {
		s.fitIndex()
	}
	if removed > 0 {
		s.expired.Add(int64(removed))
	}
	return removed, work, done
}

// expireDone reports whether the shard is done for round r: it has no key left, or a sample
// was mostly fresh, or the pass is over.
func (s *Shard) expireDone(r *expireRound) bool {
	return s.count == 0 || r.fresh || r.left <= 0
}

// slotStart returns the first position in hash order of slot i of an index of n slots: the
// least p with home(p, n) == i, and 1<<32 for i == n.
func slotStart(i, n int) uint64 { return (uint64(i)<<32 + uint64(n) - 1) / uint64(n) }

// resetLocked drops every key and the memory they held.
func (s *Shard) resetLocked() {
	if s.watchers != nil {
		s.touchAllLocked()
	}
	s.index, s.count = nil, 0
	s.ids, s.freeIDs, s.freeSum = nil, nil, nil
	s.blocks, s.meta, s.freeBlocks, s.tail, s.spare, s.queue = nil, nil, nil, -1, nil, nil
	s.vals, s.big, s.objs = nil, nil, nil
	s.sweep = 0
	for f := range s.trk {
		s.trk[f].forget()
	}
	s.keys.Store(0)
	s.expires.Store(0)
}

// memoryLocked returns the bytes the shard's structures take.
func (s *Shard) memoryLocked() int64 {
	n := 8*cap(s.index) + 4*cap(s.ids) + 8*cap(s.freeIDs) + 8*cap(s.freeSum) +
		8*cap(s.blocks) + 8*cap(s.meta) + 4*cap(s.freeBlocks) + s.trackerMemory()
	for _, b := range s.blocks {
		if b != nil {
			n += blockSize
		}
	}
	if s.spare != nil {
		n += blockSize
	}
	// A map entry costs its key, slice header and control byte, at about 7/8 load.
	for _, b := range s.vals {
		n += cap(b) + (4+24+1)*8/7
	}
	for _, b := range s.big {
		n += cap(b) + (4+24+1)*8/7
	}
	for _, o := range s.objs {
		n += o.Footprint() + (4+16+1)*8/7
	}
	return int64(n)
}
