package keyspace

import (
	"encoding/binary"
	mathbits "math/bits"
	"sync/atomic"
)

// Change tracking, for persistence and replication: with Track on for a feed, every shard
// remembers which keys changed since the feed's last Drain, so that a writer of the state
// elsewhere sends the latest state of each changed key once per batch, however often the
// key changed in between. Each feed has a tracker of its own in every shard and drains it
// at its own pace: the disk writer every few milliseconds to a second, the replication
// stream every millisecond, the redo log once per event-loop round that changed state.

// A Feed is one consumer of the changes.
type Feed int

const (
	DiskFeed    Feed = iota // the persistence writer
	ReplicaFeed             // the replication stream
	RedoFeed                // the persistence redo log, written at the end of every event-loop round
	feeds
)

// A Recorder receives a shard's changes from Drain or DrainAll. Its methods run under the
// shard's lock: key and v.Bytes are valid only during the call, and they must not call
// the keyspace.
type Recorder interface {
	// Delete is called for a key that was deleted or expired.
	Delete(key []byte)
	// Put is called with the current state of a key that changed.
	Put(key []byte, v Value)
	// Full reports whether the recorder holds as much as it wants at once: Drain then
	// stops and leaves the rest of the shard's changes queued for its next call.
	Full() bool
}

// An EncodedRecorder is a Recorder that takes a capturing feed's copy of a change as it is
// (PutEncoded: the key and the value as Encode wrote it) instead of Put, so that a drain
// does not decode a value only for the recorder to encode it again (the redo log).
type EncodedRecorder interface {
	Recorder
	// PutEncoded is called instead of Put with a key's current state encoded; key and
	// enc are valid only during the call.
	PutEncoded(key, enc []byte)
}

// A Patcher is a Recorder that takes a Chunked value's changes instead of its whole state,
// where the feed's copy of the key holds the object as of the feed's previous Drain.
type Patcher interface {
	Recorder
	// Patch is called instead of Put for a key that holds a Chunked object: head is the
	// key's Kind, Expire, Num and Num2 (no Bytes, no Obj), changes what ApplyChanges of
	// the copy's object takes (Keyspace.Patch). They are valid only during the call.
	Patch(key []byte, head Value, changes []byte)
}

// put hands feed f's recorder r the state of key, v: a Patcher the changes of a Chunked
// value, when it need not take the whole.
func (s *Shard) put(r Recorder, f Feed, key []byte, v Value) {
	if c, ok := v.Obj.(Chunked); ok {
		if p, ok := r.(Patcher); ok {
			buf, whole := c.AppendChanges(s.patchBuf[:0], int(f))
			s.patchBuf = buf
			if cap(buf) > 1<<20 {
				s.patchBuf = nil
			}
			if !whole {
				p.Patch(key, Value{Kind: v.Kind, Expire: v.Expire, Num: v.Num, Num2: v.Num2}, buf)
				return
			}
		}
	}
	r.Put(key, v)
}

// defaultMaxLog is the most bytes of deleted keys a shard keeps between two drains: a
// writer that stops draining (a disk that is full) costs bounded memory; past it the
// shard asks for a full rewrite instead (Drain returns false).
const defaultMaxLog = 256 << 10

// tracker is a shard's record of its changes since its last Drain. Recording a change
// allocates nothing but the amortized growth of these slices.
//
// A write touches a tracker of every feed on, in every shard, and the misses showed (a
// fifth of the redo log's cost per write at P=16 was its drain missing the tracker's
// later lines): each tracker starts a cache line of its own (Shard.trk) and takes three
// (TestTrackerLayout), the first holding what every write reads and all that an appending
// feed's write and drain touch, the second what a write queued by record id touches.
type tracker struct {
	// The first cache line.
	track   bool  // Keyspace.Track is on for the feed
	capture bool  // see below
	appends bool  // the feed is an appending one (RedoFeed): changelog.go
	lost    bool  // delLog (appending: log) overflowed: the changes are known only by a full rewrite
	high    bool  // delLog holds half of maxLog or more: counted in *highs
	queued  bool  // appending: dirtyIDs holds records since the last full drain (see drainAppended)
	inEntry bool  // the DiskFeed: a record in dirtyIDs has idDirty in its entry, not a bit in dirtyBits
	bit     uint8 // the shard's bit in *changed: 1<<bit
	maxLog  int   // the limit of delLog (appending: of log), in bytes
	pending atomic.Int64
	log     []byte // the changes' copies, each key once (appending: every change, in order)
	logHead int    // log[:logHead] was drained already (a Drain that stopped early)
	// changed is the word of Keyspace.changed that holds the shard's bit: a capturing
	// tracker sets it as it records a change with none pending, and when a Drain leaves
	// changes behind.
	changed *atomic.Uint64

	// The second cache line.
	// dirtyBits is a bit set by record id: the record is in dirtyIDs; for inEntry, only a
	// record whose key was deleted while queued, so that a key taking over its id is not
	// queued a second time (a churn of keys would grow dirtyIDs without bound).
	dirtyBits []uint64
	dirtyIDs  []uint32 // the records written since the last drain, each once
	head      int      // dirtyIDs[:head] were drained already (a Drain that stopped early)
	// highs is Keyspace.highs of the feed: how many of its shards' deletion logs are half
	// full (DeletionsHigh).
	highs *atomic.Int32

	// The third. A capturing feed (ReplicaFeed, RedoFeed) copies each change as it is
	// written, while the entry is in the cache, into log, instead of queueing its record
	// id: see capture.go.
	delLog []byte // the keys deleted since the last drain: uvarint length, key
	copies copyIndex
}

// low forgets that delLog was half full, once it was drained.
func (t *tracker) low() {
	if t.high {
		t.high = false
		t.highs.Add(-1)
	}
}

// added counts a change of a capturing tracker, and marks the shard changed when it is
// the first since the last drain: once a drain, so that the word shared by every shard
// is written seldom.
func (t *tracker) added() {
	if t.pending.Add(1) == 1 {
		t.mark()
	}
}

// appended is added for an appending tracker, which counts only whether it holds changes
// (pending is 1 then): an atomic add per change cost a tenth of the change's recording.
func (t *tracker) appended() {
	if t.pending.Load() == 0 {
		t.pending.Store(1)
		t.mark()
	}
}

// mark marks the shard changed for the feed (see Keyspace.Changed).
func (t *tracker) mark() {
	if bit := uint64(1) << t.bit; t.changed.Load()&bit == 0 {
		t.changed.Or(bit)
	}
}

// noteWrite notes that record id, whose entry is at off, was written, for each feed tracking.
// The DiskFeed, the one feed that queues record ids instead of copying changes, marks a
// record queued in its entry (idDirty): a key written again before the feed's next Drain
// (every few seconds with everysec) costs it a bit test in the entry just written, and not
// a look at its tracker.
func (s *Shard) noteWrite(id, off uint32) {
	fs := s.tracked
	if fs&(1<<DiskFeed) != 0 {
		if e := s.entry(off); !idFlag(e, idDirty) {
			e[eID+3] |= idDirty >> 24
			if t := &s.trk[DiskFeed]; !t.dirty(id) {
				t.dirtyIDs = append(t.dirtyIDs, id)
				t.pending.Add(1)
			} else {
				t.dirtyBits[id/64] &^= 1 << (id % 64) // queued for a key deleted since
			}
		}
		fs &^= 1 << DiskFeed
	}
	for ; fs != 0; fs &= fs - 1 {
		// From the entry as written: the value given to SetLocked may alias where the
		// entry was.
		e := s.entry(off)
		if t := &s.trk[mathbits.TrailingZeros8(fs)]; t.appends {
			if e[0]&hdrBytes == 0 {
				t.appendEntry(id, s.keyIn(e), e, nil)
			} else if val := inlineBytes(e); val != nil {
				t.appendEntry(id, s.keyIn(e), e, val)
			} else {
				t.appendWrite(id, s.keyIn(e), s.value(e))
			}
		} else {
			t.captureWrite(id, s.keyIn(e), s.value(e))
		}
	}
}

// clearDirtyLocked clears idDirty in every entry: the DiskFeed forgot its records.
func (s *Shard) clearDirtyLocked() {
	for _, off := range s.ids {
		if off != freeID {
			s.entry(off)[eID+3] &^= idDirty >> 24
		}
	}
}

// noteDelete notes that key, record id, was deleted, for each feed tracking.
// queued says that its entry had idDirty: the DiskFeed holds the id in dirtyIDs.
func (s *Shard) noteDelete(id uint32, key []byte, queued bool) {
	for fs := s.tracked; fs != 0; fs &= fs - 1 {
		if t := &s.trk[mathbits.TrailingZeros8(fs)]; t.appends {
			t.appendDelete(id, key)
		} else if t.track {
			if t.capture {
				t.captureDelete(id)
			} else if queued {
				t.markDirty(id) // see dirtyBits
			}
			t.noteDelete(key)
		}
	}
}

// markDirty sets id's dirty bit and reports whether it was clear.
func (s *tracker) markDirty(id uint32) bool {
	w := int(id / 64)
	if w >= len(s.dirtyBits) {
		s.dirtyBits = append(s.dirtyBits, make([]uint64, w+1-len(s.dirtyBits))...)
	}
	bit := uint64(1) << (id % 64)
	if s.dirtyBits[w]&bit != 0 {
		return false
	}
	s.dirtyBits[w] |= bit
	return true
}

// dirty reports whether id's dirty bit is set.
func (s *tracker) dirty(id uint32) bool {
	w := int(id / 64)
	return w < len(s.dirtyBits) && s.dirtyBits[w]&(1<<(id%64)) != 0
}

// noteDelete notes that key was deleted. Its record id may stay queued in dirtyIDs: Drain skips
// it when it is free, and reports the key that took it over otherwise.
func (s *tracker) noteDelete(key []byte) {
	if s.lost {
		return
	}
	if len(s.delLog)+binary.MaxVarintLen64+len(key) > s.maxLog {
		s.lost = true
		s.delLog = nil
		return
	}
	s.delLog = binary.AppendUvarint(s.delLog, uint64(len(key)))
	s.delLog = append(s.delLog, key...)
	if !s.high && len(s.delLog) >= s.maxLog/2 {
		s.high = true
		s.highs.Add(1)
	}
	if s.capture {
		s.added()
	} else {
		s.pending.Add(1)
	}
}

// forget drops the recorded changes and the memory they hold.
func (s *tracker) forget() {
	s.dirtyBits, s.dirtyIDs, s.head, s.delLog, s.lost, s.queued = nil, nil, 0, nil, false, false
	s.low()
	s.log, s.logHead, s.copies = nil, 0, copyIndex{}
	s.pending.Store(0)
}

// Track turns change tracking on or off for feed f in every shard. Off, it costs nothing;
// on, a write costs a bit test, and the first write to a key since the last drain a few
// bytes. Turning it off drops the changes recorded.
func (ks *Keyspace) Track(f Feed, on bool) {
	for _, s := range ks.shards {
		s.mu.Lock()
		t := &s.trk[f]
		if !on && t.inEntry {
			s.clearDirtyLocked()
		}
		t.track, t.capture, t.appends, t.maxLog = on, on && f != DiskFeed, on && f == RedoFeed, defaultMaxLog
		t.inEntry = on && f == DiskFeed
		if t.appends {
			t.maxLog = appendMaxLog
		}
		if !on {
			t.forget()
		}
		s.tracking, s.tracked = false, 0
		for i := range s.trk {
			if s.trk[i].track {
				s.tracking, s.tracked = true, s.tracked|1<<i
			}
		}
		s.Unlock()
	}
}

// Drain hands feed f's changes of shard i since its previous Drain to r and forgets them: first
// every key deleted or expired, in order, then the current state of every key written and
// still stored (expired or not). Applied in that order to a copy of the state as of the
// previous Drain, they make it equal to the shard now.
//
// Drain stops early when r says it is Full after a Put, so that a burst of changes reaches
// the copy in pieces of the size r chooses: it then returns more = true, keeping the keys
// not handed over yet queued for the next call, which hands over the deletions made
// meanwhile first and then goes on with them. The copy is then as of a moment when those
// keys had not changed yet, so the order stays right.
//
// Drain returns ok = false, calling nothing and keeping the changes, when the shard could
// not keep track of its deletions: then only a full rewrite (DrainAll of every shard, after
// clearing the copy) is right.
func (ks *Keyspace) Drain(f Feed, i int, r Recorder) (more, ok bool) {
	sh := ks.shards[i]
	if sh.trk[f].pending.Load() == 0 {
		return false, true // nothing recorded: the shard's lock is left to its users
	}
	sh.mu.Lock()
	defer sh.Unlock()
	s := &sh.trk[f]
	if s.lost {
		if s.capture {
			s.mark()
		}
		return false, false
	}
	if s.appends {
		if more = sh.drainAppended(s, f, r); more {
			s.mark()
		}
		return more, true
	}
	dels := int64(0)
	for b := s.delLog; len(b) > 0; dels++ {
		n, w := binary.Uvarint(b)
		r.Delete(b[w : w+int(n)])
		b = b[w+int(n):]
	}
	s.delLog = s.delLog[:0]
	s.low()
	if s.capture {
		s.pending.Add(-dels)
		if more = sh.drainCaptured(s, f, r); more {
			s.mark()
		}
		return more, true
	}
	if sh.drainDirty(s, f, r) {
		s.pending.Store(int64(len(s.dirtyIDs) - s.head))
		return true, true
	}
	return false, true
}

// drainDirty puts into r, each as it is now, the records t queued by id from t.head on,
// until r is full: true when it stopped early. An id whose bit is clear was unqueued (an
// appending feed's deletion) or queued twice: a record that was deleted, its id taken by
// another key then written, is queued twice, and so is one whose entry lost idDirty.
func (s *Shard) drainDirty(t *tracker, f Feed, r Recorder) bool {
	for t.head < len(t.dirtyIDs) {
		id := t.dirtyIDs[t.head]
		t.head++
		var e []byte
		if t.inEntry {
			if t.dirty(id) {
				t.dirtyBits[id/64] &^= 1 << (id % 64) // its key was deleted: see dirtyBits
			}
			if int(id) >= len(s.ids) || s.ids[id] == freeID {
				continue
			}
			if e = s.entry(s.ids[id]); !idFlag(e, idDirty) {
				continue
			}
			e[eID+3] &^= idDirty >> 24
		} else {
			if !t.dirty(id) {
				continue
			}
			t.dirtyBits[id/64] &^= 1 << (id % 64)
			if int(id) >= len(s.ids) || s.ids[id] == freeID {
				continue
			}
			e = s.entry(s.ids[id])
		}
		s.put(r, f, s.keyIn(e), s.value(e))
		if r.Full() && t.head < len(t.dirtyIDs) {
			return true
		}
	}
	t.trim(len(s.ids))
	return false
}

// Changed appends to buf the shards where feed f, a capturing feed (ReplicaFeed, RedoFeed),
// recorded changes since the shards were last returned, and forgets that they did: a
// Drain of the shards returned hands over what they recorded, and a Drain that leaves some
// behind marks its shard again. It returns buf. A feed drained after every event-loop
// round reads a few words instead of a counter in every shard.
func (ks *Keyspace) Changed(f Feed, buf []int) []int {
	for w := range ks.changed[f] {
		if ks.changed[f][w].Load() == 0 {
			continue
		}
		for bits := ks.changed[f][w].Swap(0); bits != 0; bits &= bits - 1 {
			buf = append(buf, w*64+mathbits.TrailingZeros64(bits))
		}
	}
	return buf
}

// DrainAll hands the current state of every key of shard i to r, expired or not, and
// forgets feed f's changes of the shard: the full rewrite Drain may ask for.
func (ks *Keyspace) DrainAll(f Feed, i int, r Recorder) {
	sh := ks.shards[i]
	sh.mu.Lock()
	defer sh.Unlock()
	s := &sh.trk[f]
	for _, off := range sh.ids {
		if off != freeID {
			e := sh.entry(off)
			r.Put(sh.keyIn(e), sh.value(e))
			if s.inEntry {
				e[eID+3] &^= idDirty >> 24
			}
		}
	}
	if s.inEntry {
		clear(s.dirtyBits)
	} else {
		for _, id := range s.dirtyIDs[s.head:] {
			s.dirtyBits[id/64] &^= 1 << (id % 64)
		}
	}
	if s.capture {
		clear(s.dirtyBits)
	}
	s.lost = false
	s.trim(len(sh.ids))
}

// trim empties the drained tracker, keeping its memory unless a burst grew it well past
// what the shard's ids records need.
func (s *tracker) trim(ids int) {
	s.dirtyIDs, s.head, s.delLog, s.queued = s.dirtyIDs[:0], 0, s.delLog[:0], false
	s.low()
	s.emptyLog()
	s.copies.reset()
	if cap(s.dirtyIDs) > 1024 && cap(s.dirtyIDs) > 2*ids {
		s.dirtyIDs = nil
	}
	if cap(s.delLog) > 64<<10 {
		s.delLog = nil
	}
	if words := (ids + 63) / 64; len(s.dirtyBits) > 2*words+16 {
		s.dirtyBits = nil // every bit is clear: it regrows on demand
	}
	s.pending.Store(0)
}

// emptyLog empties the change log of a drained tracker, letting a big one go.
func (s *tracker) emptyLog() {
	s.log, s.logHead = s.log[:0], 0
	if cap(s.log) > 1<<20 {
		s.log = nil
	}
}

// DeletionsHigh reports whether a shard's log of the keys feed f deleted since its last
// Drain is half full or more: past its limit (about 256 KiB a shard) the shard loses track
// and only a full rewrite is right, so a consumer that drains seldom (the disk writer with
// appendfsync everysec) drains early instead. It reads one word.
func (ks *Keyspace) DeletionsHigh(f Feed) bool { return ks.highs[f].Load() > 0 }

// Pending returns about how many changes feed f recorded and did not drain yet: keys
// written (each counted once) and keys deleted; for an appending feed (RedoFeed), the
// shards that hold changes.
func (ks *Keyspace) Pending(f Feed) int {
	n := int64(0)
	for _, s := range ks.shards {
		n += s.trk[f].pending.Load()
	}
	return int(n)
}

// trackerMemory returns the bytes the trackers hold.
func (s *Shard) trackerMemory() int {
	n := 0
	for i := range s.trk {
		t := &s.trk[i]
		n += 8*cap(t.dirtyBits) + 4*cap(t.dirtyIDs) + cap(t.delLog)
	}
	return n
}

// MaxKind is the largest Kind a key can hold: a reader of stored state rejects larger ones
// instead of letting SetLocked panic.
const MaxKind = maxKind
