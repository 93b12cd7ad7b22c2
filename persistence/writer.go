package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/throttledhq/throttled/keyspace"
)

// epoch is what clients wait on until the changes they made are synced. The writer swaps
// in a new epoch as it starts the drain of a synced batch and releases the old one when
// that batch is synced: a client that made its change and then took the current epoch is
// released only by a batch drained after its change. One sync releases every client
// waiting, however many, and a pipeline waits once.
type epoch struct {
	done     chan struct{}
	released atomic.Bool
	err      error // why the changes may not be on disk; set before done is closed
}

func newEpoch() *epoch { return &epoch{done: make(chan struct{})} }

// release lets the epoch's waiters go, with err when their changes may not be synced.
func (e *epoch) release(err error) {
	if e.released.CompareAndSwap(false, true) {
		e.err = err
		close(e.done)
	}
}

// Fsync returns the current appendfsync mode.
func (s *Store) Fsync() Fsync { return Fsync(s.mode.Load()) }

// SetFsync changes the appendfsync mode (CONFIG SET appendfsync).
func (s *Store) SetFsync(f Fsync) {
	s.mode.Store(int32(f))
	s.nudge()
}

// nudge asks the writer for a batch now.
func (s *Store) nudge() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Wait blocks until the changes made before the call are durable as the appendfsync mode
// promises, or the disk is failing, or the store is closed: with always, synced; with
// everysec and no, written to the redo log (redo.go), so that they survive the process
// (kill -9), as Redis writes its AOF before it replies. The server calls it before it
// writes the replies of a client that changed state; one write serves every client
// waiting. It does not allocate.
func (s *Store) Wait() error {
	// With always too, so that the RedoFeed's copies never pile up; a synced batch rotates.
	if s.flushRedo() && s.Fsync() != Always {
		if s.ks.DeletionsHigh(keyspace.DiskFeed) && !s.failing() {
			// A shard's log of deletions for the next batch is half full: a batch now,
			// before it overflows and forces a full rewrite (keyspace.Drain). Waiting
			// for it holds back the clients that delete faster than batches drain.
			w := s.written.Load()
			s.nudge()
			<-w.done
		}
		return nil
	}
	// always, or the redo log failed: a synced batch drained after the changes.
	e := s.epoch.Load()
	s.wantSync.Store(true)
	s.nudge()
	<-e.done
	return e.err
}

// Save writes and syncs every change made before the call (SAVE). It fails at once while
// the disk is failing.
func (s *Store) Save() error {
	if s.failing() {
		s.lastSaveErr.Store(true)
		return fmt.Errorf("persistence: the disk is failing: %s", s.lastError())
	}
	e := s.epoch.Load()
	s.wantSync.Store(true)
	s.nudge()
	<-e.done
	s.lastSaveErr.Store(e.err != nil)
	return e.err
}

// BGSave asks for a synced batch now and returns (BGSAVE).
func (s *Store) BGSave() {
	s.wantSync.Store(true)
	s.nudge()
}

// FlushAll empties the keyspace and the store (FLUSHALL) and waits until that is synced.
// Changes drained before stay before it in the store, changes made after it after.
func (s *Store) FlushAll() error {
	s.drainMu.Lock()
	s.redoMu.Lock()
	s.ks.Flush()
	s.flushPending, s.redoClearing = true, true
	s.redoMu.Unlock()
	s.drainMu.Unlock()
	if s.failing() {
		return nil // in memory now; on disk when the disk works again
	}
	return s.Save()
}

// run is the writer: it writes a batch when asked (a waiting client, SAVE) or when the
// interval has passed. The interval grows with the time the last batch took, to 19
// times it, so that writing (with the flushes and compactions it causes, about as much
// again) takes at most about a twentieth of the time and a busier server coalesces more
// changes per key into a batch; it never exceeds a second, which bounds what a crash loses.
//
// With everysec, the redo log holds every change since the last batch, so the writer
// syncs it once a second instead of writing a batch, as Redis syncs its AOF, and writes a
// (synced) batch only when the redo log is large or old (redoDue), or failed, or when a
// shard's log of deletions is half full (keyspace.DeletionsHigh): past its 256 KiB the
// shard loses track of them and the next batch must rewrite every key.
func (s *Store) run() {
	defer close(s.done)
	timer := time.NewTimer(s.interval)
	defer timer.Stop()
	lastSync, lastBatch := time.Now(), time.Now()
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		case <-timer.C:
		}
		// Changes no client waits for (expiry, a replica's stream) must not pile up in the
		// RedoFeed either.
		s.flushRedo()
		start := time.Now()
		mode := s.Fsync()
		want := s.wantSync.Swap(false)
		sync := want || mode == Always
		if mode == EverySec && !want {
			works, due := s.redoDue(start, lastBatch)
			due = due || s.ks.DeletionsHigh(keyspace.DiskFeed)
			if works && !due {
				if start.Sub(lastSync) >= time.Second-s.interval/2 {
					s.syncRedo()
					s.refreshSize(false)
					lastSync = start
				}
				timer.Reset(s.interval)
				continue
			}
			// A batch due relieves the redo log: synced, it rotates it. Without a redo
			// log, batches as appendfsync no writes them, synced once a second.
			sync = works || start.Sub(lastSync) >= time.Second-s.interval/2
		}
		if err := s.write(sync); err != nil {
			s.log.Error("persistence: write", "dir", s.dir, "err", err)
		}
		lastBatch = start
		if sync {
			lastSync = start
		}
		timer.Reset(min(max(s.interval, 19*time.Since(start)), time.Second))
	}
}

// write drains the keyspace's changes into Pebble and commits them, synced or not. A
// burst of changes goes in pieces of about pieceBytes, each its own batch, so that what
// the writer and Pebble hold on the heap stays bounded whatever the burst (see
// pieceBytes); the last piece carries the sync. A crash between two pieces keeps some
// keys' latest states and others' older ones, as a crash before the batch would. A disk
// that fails holds a commit up inside Pebble (see retryFS) until it works again.
func (s *Store) write(sync bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	w := s.written.Swap(newEpoch())
	s.writing.Store(w)
	defer s.writing.Store(nil)
	var e *epoch
	if sync {
		e = s.epoch.Swap(newEpoch())
		s.inflight.Store(e)
		defer s.inflight.Store(nil)
	}
	failed := func(err error) error {
		w.release(err)
		if e != nil {
			e.release(err)
		}
		return err
	}
	r := &s.rec
	defer r.reset()
	if err := s.drain(r, sync || s.Fsync() == No); err != nil {
		return failed(err)
	}
	redo := r.redo
	if r.empty() && (!sync || !s.unsynced) {
		// Every batch before is in the operating system already, and synced if it must be.
		w.release(nil)
		if sync {
			s.saved(e)
		}
		return nil
	}
	if err := s.commit(r, sync); err != nil {
		return failed(err)
	}
	if redo != 0 {
		s.removeRedoBelow(redo)
	}
	w.release(nil)
	if sync {
		s.saved(e)
	}
	return nil
}

// drain takes the keyspace's changes into r, committing every piece that fills r without
// a sync, and leaves the last piece in r. With rotate, it first starts a new redo file,
// whose generation goes with the last piece (see redo.go): every shard is drained after
// the rotation.
func (s *Store) drain(r *recorder, rotate bool) error {
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	if rotate {
		s.redoMu.Lock()
		gen := s.rotateRedoLocked()
		s.redoMu.Unlock()
		if gen != 0 {
			defer func() { r.redo = gen }()
		}
	}
	if s.flushPending {
		r.clear = true
		clear(r.chunked)
		s.flushPending = false
	}
	if s.mark != nil {
		r.mark = s.mark()
	}
	for i := range s.ks.Shards() {
		for more := true; more; {
			var ok bool
			if more, ok = s.ks.Drain(keyspace.DiskFeed, i, r); !ok {
				s.rewriteAll(r)
				return nil
			}
			if r.Full() {
				mark := r.mark
				r.mark = nil // it goes with the last piece: after every change drained with it
				if err := s.commit(r, false); err != nil {
					return err
				}
				r.reset()
				r.mark = mark
			}
		}
	}
	return nil
}

// rewriteAll puts every key in r, after a range deletion of the store: a shard lost track
// of its deletions (the disk was failing for long). This one is a single batch the size of
// the keyspace, so that a crash sees the old store or the new one; it is rare.
func (s *Store) rewriteAll(r *recorder) {
	s.log.Warn("persistence: rewriting every key", "dir", s.dir, "keys", s.ks.Len())
	s.rewrites.Add(1)
	r.reset()
	r.clear = true // covers what earlier pieces wrote
	for j := range s.ks.Shards() {
		s.ks.DrainAll(keyspace.DiskFeed, j, r)
	}
}

// commit writes what r holds as one batch, synced or not.
func (s *Store) commit(r *recorder, sync bool) error {
	if s.batch == nil {
		s.batch = s.db.NewBatch(pebble.WithMaxRetainedSizeBytes(2 * pieceBytes))
	}
	b := s.batch
	defer b.Reset()
	r.writeTo(b)
	if b.Empty() {
		b.LogData(nil, nil) // an empty batch is not written: this one syncs the log
	}
	if err := s.commitBatch(b, sync); err != nil {
		return err
	}
	s.batches.Add(1)
	s.puts.Add(int64(r.puts))
	s.deletes.Add(int64(r.dels))
	if !sync {
		s.unsynced = true
		s.unsaved.Add(int64(r.puts + r.dels))
	}
	s.refreshSize(false)
	return nil
}

// commitBatch commits b and returns once its bytes are in the operating system, and on
// the disk if sync (see walFS). Only the writer commits, one batch at a time, so realSync
// covers exactly this commit's log sync.
func (s *Store) commitBatch(b *pebble.Batch, sync bool) error {
	s.wal.realSync.Store(sync)
	defer s.wal.realSync.Store(false)
	return b.Commit(pebble.Sync)
}

// saved records a sync that covered everything drained before it, and releases e.
func (s *Store) saved(e *epoch) {
	s.unsynced = false
	s.unsaved.Store(0)
	s.syncs.Add(1)
	s.lastSave.Store(time.Now().Unix())
	e.release(nil)
}

// refreshSize updates the size on disk and the memory that Info reports, at most once a
// second: INFO must not call into Pebble, which a failing disk can hold up.
func (s *Store) refreshSize(now bool) {
	if !now && time.Since(s.sizeChecked) < time.Second {
		return
	}
	s.sizeChecked = time.Now()
	m := s.db.Metrics()
	s.diskBytes.Store(int64(m.DiskSpaceUsage()))
	s.memTables.Store(int64(m.MemTable.Size))
	s.blockCache.Store(m.BlockCache.Size)
}

// pieceBytes is about the most a recorder holds before it is Full and its piece is
// committed. Pebble copies a batch into its memtable (off the Go heap), except a batch over
// half the memtable, which it keeps whole on the heap as a memtable of its own until the
// next flush: one batch for a burst of a million new keys held about 90 MB there. Pieces
// must not be small either: the memtable inserts a sorted batch fast only when its keys
// lie close together in the memtable's skiplist, so a piece of 1 MiB (20,000 of 100,000
// keys changing each second) cost 670 ns a key to insert against 270 for 4 MiB or more
// (BenchmarkWriteEverySecond). The recorder and the batch it fills are kept for the next
// piece: the writer holds at most about 4 x pieceBytes, 16 MiB, whatever the burst.
const pieceBytes = 4 << 20

// recorder collects drained changes and writes them into a Pebble batch sorted by key:
// Pebble's memtable inserts a sorted batch several times faster than a random one (each
// insert starts from where the previous one ended), which is most of the writer's cost.
type recorder struct {
	buf        []byte   // the records' keys and values, back to back
	recs       []record // in drain order until sorted
	tmp        []record // sort's scratch
	puts, dels int
	clear      bool   // the batch empties the store first (FLUSHALL, a full rewrite)
	mark       []byte // Options.Checkpoint's value to store with the batch; nil for none
	redo       uint64 // the redo generation to store with the batch; 0 for none

	chunks  []chunkRec          // the chunk keys' changes (codec.go), in drain order
	form    []byte              // Put's scratch: a Chunked value's chunk form
	chunked map[string]struct{} // the keys stored in chunks, for the batches to come too
}

// chunkRec is one change of chunk keys: the store key of a chunk at off and vlen bytes of
// value (chunkSet), a chunk's store key (chunkDel), or a user key whose chunks all go
// (chunkDrop).
type chunkRec struct {
	off, klen, vlen uint32
	op              uint8
}

const (
	chunkSet = iota
	chunkDel
	chunkDrop
)

// addChunk records op on key's chunk seq (chunkSet: with b; chunkDrop: all of them).
func (r *recorder) addChunk(op uint8, key []byte, seq uint64, b []byte) {
	off := len(r.buf)
	if op == chunkDrop {
		r.buf = append(r.buf, key...)
	} else {
		r.buf = chunkKey(r.buf, key, seq)
	}
	klen := len(r.buf) - off
	r.buf = append(r.buf, b...)
	r.chunks = append(r.chunks, chunkRec{off: uint32(off), klen: uint32(klen), vlen: uint32(len(b)), op: op})
}

// unchunk drops the chunks of key when it was stored in chunks: it is deleted, or now
// holds a value of another kind.
func (r *recorder) unchunk(key []byte) {
	if len(r.chunked) == 0 {
		return
	}
	if _, ok := r.chunked[string(key)]; ok {
		delete(r.chunked, string(key))
		r.addChunk(chunkDrop, key, 0, nil)
	}
}

// chunk notes that key is stored in chunks.
func (r *recorder) chunk(key []byte) {
	if r.chunked == nil {
		r.chunked = make(map[string]struct{})
	}
	if _, ok := r.chunked[string(key)]; !ok {
		r.chunked[string(key)] = struct{}{}
	}
}

// Patch records the changes of key's Chunked value: its head, and the chunks that changed.
func (r *recorder) Patch(key []byte, head keyspace.Value, changes []byte) {
	if len(changes) == 0 || changes[0] != keyspace.ChangedChunks {
		panic("persistence: the disk feed got changes that are not chunks")
	}
	head.Chunks = true
	r.put(key, head)
	r.chunk(key)
	for p := changes[1:]; len(p) > 0; {
		seq, b, rest, err := keyspace.NextChunk(p)
		if err != nil {
			break // the object's own changes: cannot be
		}
		p = rest
		if len(b) == 0 {
			r.addChunk(chunkDel, key, seq, nil)
		} else {
			r.addChunk(chunkSet, key, seq, b)
		}
	}
}

// record is one change in recorder.buf: the key at off, then vlen bytes of value.
type record struct {
	off  uint32
	klen uint32
	vlen int32 // -1 for a deletion
}

func (r *recorder) Delete(key []byte) {
	r.unchunk(key)
	r.recs = append(r.recs, record{off: uint32(len(r.buf)), klen: uint32(len(key)), vlen: -1})
	r.buf = append(r.buf, key...)
	r.dels++
}

func (r *recorder) Put(key []byte, v keyspace.Value) {
	c, ok := v.Obj.(keyspace.Chunked)
	if !ok {
		r.unchunk(key)
		r.put(key, v)
		return
	}
	// The whole value: its head, and every chunk in place of those stored.
	r.put(key, keyspace.Value{Kind: v.Kind, Expire: v.Expire, Num: v.Num, Num2: v.Num2, Chunks: true})
	if _, ok := r.chunked[string(key)]; ok {
		r.addChunk(chunkDrop, key, 0, nil)
	}
	r.chunk(key)
	r.form = c.AppendChunks(r.form[:0])
	for p := r.form; len(p) > 0; {
		seq, b, rest, err := keyspace.NextChunk(p)
		if err != nil {
			break
		}
		p = rest
		r.addChunk(chunkSet, key, seq, b)
	}
	if cap(r.form) > pieceBytes {
		r.form = nil
	}
}

// put records v at key as it is.
func (r *recorder) put(key []byte, v keyspace.Value) {
	n := keyspace.EncodedLen(v)
	r.recs = append(r.recs, record{off: uint32(len(r.buf)), klen: uint32(len(key)), vlen: int32(n)})
	r.buf = append(r.buf, key...)
	r.buf = append(r.buf, make([]byte, n)...)
	keyspace.Encode(r.buf[len(r.buf)-n:], v)
	r.puts++
}

// Full reports whether r holds a piece: keyspace.Drain then stops.
func (r *recorder) Full() bool { return len(r.buf)+16*(len(r.recs)+len(r.chunks)) >= pieceBytes }

// empty reports whether r holds no change.
func (r *recorder) empty() bool {
	return len(r.recs) == 0 && len(r.chunks) == 0 && !r.clear && r.redo == 0
}

func (r *recorder) key(rec record) []byte { return r.buf[rec.off : rec.off+rec.klen] }

// sort orders the records by key, stably: the records of one key keep the order they were
// drained in (offsets alone cannot tell it: deleting and then setting the empty key with
// an empty value makes two records of no bytes). It is a radix sort on the key bytes,
// faster than comparisons on a batch of 95,000 keys sharing a prefix
// (BenchmarkSortRecords), the writer's largest cost besides Pebble.
func (r *recorder) sort() {
	if cap(r.tmp) < len(r.recs) {
		r.tmp = make([]record, len(r.recs))
	}
	r.radix(r.recs, r.tmp[:len(r.recs)], 0)
}

// radixSmall is the size under which a bucket is insertion-sorted.
const radixSmall = 24

// radix sorts recs, whose keys agree on their first depth bytes, by the bytes from depth
// on; tmp is as long as recs. A byte all the keys share costs a count and no move. Every
// bucket but the largest is sorted by a call, the largest by the loop, so that the calls
// nest at most log2(len(recs)) deep whatever the keys.
func (r *recorder) radix(recs, tmp []record, depth int) {
	for len(recs) > radixSmall {
		var count [257]int // [0]: keys that end before depth; [1+c]: keys with byte c at depth
		for _, rec := range recs {
			count[r.digit(rec, depth)]++
		}
		if d := r.digit(recs[0], depth); count[d] == len(recs) {
			if d == 0 {
				return // the same key throughout, in drain order
			}
			depth++
			continue
		}
		var next [257]int
		for d, sum := 0, 0; d < len(count); d++ {
			next[d], sum = sum, sum+count[d]
		}
		for _, rec := range recs {
			d := r.digit(rec, depth)
			tmp[next[d]] = rec
			next[d]++
		}
		copy(recs, tmp)
		big := 1
		for d := 2; d < len(count); d++ {
			if count[d] > count[big] {
				big = d
			}
		}
		for d := 1; d < len(count); d++ { // bucket 0 is one key: done
			if end := next[d]; d != big && count[d] > 1 {
				r.radix(recs[end-count[d]:end], tmp[end-count[d]:end], depth+1)
			}
		}
		end := next[big]
		recs, tmp, depth = recs[end-count[big]:end], tmp[end-count[big]:end], depth+1
	}
	for i := 1; i < len(recs); i++ {
		for j := i; j > 0 && r.less(recs[j], recs[j-1], depth); j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
}

// digit is the radix sort's digit of rec at depth: 0 when its key is shorter, else 1 + the
// byte.
func (r *recorder) digit(rec record, depth int) int {
	if depth >= int(rec.klen) {
		return 0
	}
	return 1 + int(r.buf[int(rec.off)+depth])
}

// less reports whether x's key sorts before y's; they agree on the first depth bytes.
func (r *recorder) less(x, y record, depth int) bool {
	return bytes.Compare(r.key(x)[depth:], r.key(y)[depth:]) < 0
}

// writeTo adds the changes to b sorted by key; the changes of one key keep their order.
func (r *recorder) writeTo(b *pebble.Batch) {
	if r.clear {
		b.DeleteRange(dataStart, dataEnd, nil)
		b.DeleteRange(chunkStart, chunkEnd, nil)
	}
	switch {
	case r.mark == nil:
	case len(r.mark) == 0:
		b.Delete(markKey, nil)
	default:
		b.Set(markKey, r.mark, nil)
	}
	if r.redo != 0 {
		b.Set(redoKey, strconv.AppendUint(nil, r.redo, 10), nil)
	}
	r.sort()
	for _, rec := range r.recs {
		key := r.key(rec)
		if rec.vlen < 0 {
			op := b.DeleteDeferred(1 + len(key))
			op.Key[0] = dataStart[0]
			copy(op.Key[1:], key)
			op.Finish()
			continue
		}
		op := b.SetDeferred(1+len(key), int(rec.vlen))
		op.Key[0] = dataStart[0]
		copy(op.Key[1:], key)
		copy(op.Value, r.buf[rec.off+rec.klen:])
		op.Finish()
	}
	// The chunks in drain order: a key's range deletion before the chunks that follow it.
	for _, c := range r.chunks {
		key := r.buf[c.off : c.off+c.klen]
		switch c.op {
		case chunkSet:
			b.Set(key, r.buf[c.off+c.klen:c.off+c.klen+c.vlen], nil)
		case chunkDel:
			b.Delete(key, nil)
		default:
			start, end := chunkRange(key)
			b.DeleteRange(start, end, nil)
		}
	}
}

// reset empties r for the next batch, keeping its memory unless a burst made it large.
func (r *recorder) reset() {
	r.buf, r.recs, r.puts, r.dels, r.clear, r.mark, r.redo = r.buf[:0], r.recs[:0], 0, 0, false, nil, 0
	r.chunks = r.chunks[:0]
	if cap(r.buf) > 2*pieceBytes {
		r.buf, r.recs, r.tmp, r.chunks = nil, nil, nil, nil
	}
}

// closeTimeout is how long Close waits for a failing disk before it gives up.
const closeTimeout = 5 * time.Second

// Close writes and syncs the last changes, and closes the store; clients still waiting
// are let go. If the disk is failing and does not recover within a few seconds, Close
// gives up and returns an error: what was durable stays so, the rest is lost. Close
// returns the same result to every caller.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		result := make(chan error, 1)
		go func() { result <- s.close() }()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for deadline := time.Now().Add(closeTimeout); ; {
			select {
			case s.closeErr = <-result:
				return
			case now := <-t.C:
				if !s.failing() {
					deadline = now.Add(closeTimeout)
				} else if now.After(deadline) {
					s.abandoned.Store(true)
					s.closeErr = fmt.Errorf("persistence: the disk is failing (%s): changes since the last sync are lost", s.lastError())
					s.epoch.Swap(closedEpoch).release(ErrClosed)
					s.written.Swap(closedEpoch).release(ErrClosed)
					return
				}
			}
		}
	})
	return s.closeErr
}

// closedEpoch is released: clients of a closed store do not wait.
var closedEpoch = func() *epoch { e := newEpoch(); e.release(ErrClosed); return e }()

func (s *Store) close() error {
	close(s.stop)
	<-s.done
	err := s.write(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.batch != nil {
		s.batch.Close()
		s.batch = nil
	}
	s.epoch.Swap(closedEpoch).release(ErrClosed)
	s.written.Swap(closedEpoch).release(ErrClosed)
	s.ks.Track(keyspace.DiskFeed, false)
	s.ks.Track(keyspace.RedoFeed, false)
	s.redoMu.Lock()
	if s.redoFile != nil {
		s.redoFile.Close()
		s.redoFile = nil
	}
	s.redoMu.Unlock()
	if s.abandoned.Load() {
		// Close has returned: flushing or closing on a disk that still fails
		// would make Pebble panic (it cannot create a new log), so leave the
		// store as the last sync left it.
		return err
	}
	if err == nil {
		// Flushing the memtable spares the next start a replay of the log.
		err = s.db.Flush()
	}
	return errors.Join(err, s.db.Close())
}

// Info is what INFO persistence shows.
type Info struct {
	Dir           string
	Fsync         Fsync
	LoadedKeys    int           // keys loaded at start
	ExpiredAtLoad int           // keys dropped at start because they had expired
	LoadTime      time.Duration // how long loading took, the redo log's replay included
	RedoRecords   int64         // redo records replayed at start
	RedoBytes     int64         // bytes of redo files replayed at start
	Recovery      Recovery      // what loading dropped from damaged logs
	Changes       int64         // changes not synced yet: keys written or deleted
	LastSave      time.Time     // the last sync of everything written before it
	LastSaveOK    bool          // the last SAVE or BGSAVE succeeded
	SaveWanted    bool          // a BGSAVE is waiting for the writer
	WriteOK       bool          // the disk works
	WriteError    string        // the last failure, while the disk fails
	FailingSince  time.Time     // when the disk started failing
	Retries       int64         // failed disk operations retried since start
	Batches       int64         // batches written
	Syncs         int64         // syncs
	KeysWritten   int64         // key states written
	KeysDeleted   int64         // key deletions written
	Rewrites      int64         // full rewrites
	DiskBytes     int64         // the store's size on disk
	// MemTableBytes and BlockCacheBytes are what Pebble's memtables and block cache hold.
	// OffHeap says they are allocated outside the Go heap (with cgo, as Pebble does), so
	// that the runtime's figures do not count them.
	MemTableBytes   int64
	BlockCacheBytes int64
	OffHeap         bool
}

// Info reports the store's state. It never waits for the disk.
func (s *Store) Info() Info {
	in := Info{
		Dir:           s.dir,
		Fsync:         s.Fsync(),
		LoadedKeys:    s.loadedKeys,
		ExpiredAtLoad: s.expiredAtLoad,
		LoadTime:      s.loadTime,
		RedoRecords:   s.redoRecords,
		RedoBytes:     s.redoBytes,
		Recovery:      s.recovery,
		Changes:       int64(s.ks.Pending(keyspace.DiskFeed)) + s.unsaved.Load(),
		LastSave:      time.Unix(s.lastSave.Load(), 0),
		LastSaveOK:    !s.lastSaveErr.Load(),
		SaveWanted:    s.wantSync.Load(),
		WriteOK:       !s.failing(),
		Retries:       s.fs.retries.Load(),
		Batches:       s.batches.Load(),
		Syncs:         s.syncs.Load(),
		KeysWritten:   s.puts.Load(),
		KeysDeleted:   s.deletes.Load(),
		Rewrites:      s.rewrites.Load(),
		DiskBytes:     s.diskBytes.Load(),

		MemTableBytes:   s.memTables.Load(),
		BlockCacheBytes: s.blockCache.Load(),
		OffHeap:         offHeap,
	}
	if !in.WriteOK {
		in.WriteError = s.lastError()
		in.FailingSince = time.Unix(0, s.failingSince.Load())
	}
	return in
}

func (s *Store) lastError() string {
	if p := s.lastErr.Load(); p != nil {
		return *p
	}
	return ""
}
