package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/throttledhq/throttled/keyspace"
)

// The redo log is what makes a reply safe to send with everysec and no: at the end of every
// event-loop round that changed state, Store.Wait drains the keyspace's RedoFeed (the
// changes since the previous flush, in order) and appends them to the redo file as one
// batch record with one write(2), without Pebble. Pebble gets the merged batches every
// interval as before (with everysec, far less often: see redoBatchBytes), and a batch that
// is synced (or any batch with appendfsync no) rotates the redo log: it starts a new file and
// stores the new file's generation with the batch (redoKey), after which the older files hold
// nothing the store lacks and are removed. With everysec the writer syncs the redo file once
// a second in between (syncRedo).
//
// A flush drains only the shards that recorded a change since the last one
// (keyspace.Changed): a round of a few writes costs those shards, not a look at every one.
//
// Order: a flush drains the RedoFeed and writes under redoMu, and a rotating batch switches
// files under redoMu before it drains any shard, so every record of an older file was
// written before the batch drained: a key with no record in the files replayed (generation
// >= the stored one) has in the store a state newer than its last acknowledged change,
// whose flush wrote to an older file. A key with records there ends at its last record,
// which is newer than the records of older files and, like them, at least the state of
// every change acknowledged before it: a client's reply waits for a flush that started
// after its change. The store may hold a newer state than that last record (a batch
// drained after it, or during the flush): replay then sets the key back to the record,
// losing only changes nobody was answered for, as a crash a moment earlier would. Flushes
// therefore need not wait for a batch's drain, only for the file switch.
//
// The RedoFeed is an appending feed (keyspace/changelog.go): each shard logs every change
// as it is written, in the form a batch holds, so that a flush appends each changed shard's
// log as it is instead of finding and reading each changed key. A key written twice in a
// round is written twice; the last record is its state, as in Redis's AOF. Within a shard
// the log keeps the order of the changes, and a key's changes are all in its shard's log,
// so replay ends each key at its last change.
//
// A flush that cannot write (the disk fails) or that finds a shard that lost track of its
// deletions makes the redo log useless until the next rotation: its waiters, and all until
// then, wait for a synced batch instead, as appendfsync always does.
//
// A record is a CRC-32C of the rest, the length of the payload (4 bytes, little-endian) and
// the payload: an op byte, then for a put the key's length (uvarint), the key and the value
// as the store encodes it (keyspace.Encode); for a deletion the length and the key; for a
// clear (FLUSHALL) nothing; for a batch, changes back to back, each its length (uvarint)
// and a payload of the others (the keyspace's change log form, which the RedoFeed hands over
// as it is: keyspace.LogRecorder). A flush writes one batch: one header and one CRC for a
// round's changes, not one per change (each took a tenth of the redo log's cost per write).
// Files of older versions hold one record per change; they are read as well.

// redoKey holds the generation of the oldest redo file that is not yet in the store.
var redoKey = []byte("\x00throttled.redo")

// redoPrefix starts the name of a redo file; the generation follows in decimal.
const redoPrefix = "REDO-"

const (
	redoPut    = keyspace.LogPut
	redoDelete = keyspace.LogDelete
	redoClear  = 'C'
	redoPatch  = 'X' // a Chunked value's changes: its head's length (uvarint), its head, the changes
	redoBatch  = 'B' // a flush's changes: each its length (uvarint) and one of the payloads above
)

// redoHeader is the bytes before a record's payload: its CRC and its length.
const redoHeader = 8

func redoName(gen uint64) string { return fmt.Sprintf("%s%012d", redoPrefix, gen) }

// redoRecorder appends a flush's drained changes to buf as one redo record, a batch: a
// CRC over all of it, so that a round costs one header and one CRC, not one per change.
type redoRecorder struct{ buf []byte }

// start starts the batch.
func (r *redoRecorder) start() {
	r.buf = append(r.buf[:0], make([]byte, redoHeader)...)
	r.buf = append(r.buf, redoBatch)
}

// finish fills in the batch's header and returns it, or nothing when it holds no change.
func (r *redoRecorder) finish() []byte {
	if len(r.buf) <= redoHeader+1 {
		return nil
	}
	binary.LittleEndian.PutUint32(r.buf[4:], uint32(len(r.buf)-redoHeader))
	binary.LittleEndian.PutUint32(r.buf, crc32.Checksum(r.buf[4:], castagnoli))
	return r.buf
}

// Log takes the RedoFeed's changes as the keyspace logged them: they are in the form the
// batch holds.
func (r *redoRecorder) Log(changes []byte) { r.buf = append(r.buf, changes...) }

func (r *redoRecorder) Delete(key []byte) { r.buf = keyspace.AppendLogDelete(r.buf, key) }

func (r *redoRecorder) Put(key []byte, v keyspace.Value) {
	r.buf = keyspace.AppendLogPut(r.buf, key, v)
}

func (r *redoRecorder) Patch(key []byte, head keyspace.Value, changes []byte) {
	n := keyspace.EncodedLen(head)
	size := 1 + uvarintLen(len(key)) + len(key) + uvarintLen(n) + n + len(changes)
	r.buf = binary.AppendUvarint(r.buf, uint64(size))
	r.buf = append(r.buf, redoPatch)
	r.buf = binary.AppendUvarint(r.buf, uint64(len(key)))
	r.buf = append(r.buf, key...)
	r.buf = binary.AppendUvarint(r.buf, uint64(n))
	r.buf = append(r.buf, make([]byte, n)...)
	keyspace.Encode(r.buf[len(r.buf)-n:], head)
	r.buf = append(r.buf, changes...)
}

func (r *redoRecorder) clear() { r.buf = append(r.buf, 1, redoClear) }

func (r *redoRecorder) Full() bool { return false }

// uvarintLen returns the length of v as a uvarint.
func uvarintLen(v int) int { return (bits.Len64(uint64(v)|1) + 6) / 7 }

// discard is a Recorder that keeps nothing.
type discard struct{}

func (discard) Delete([]byte)              {}
func (discard) Put([]byte, keyspace.Value) {}
func (discard) Full() bool                 { return false }

// flushRedo makes sure that a flush of the redo log that started after the call has
// written, and reports whether every flush since then wrote all it drained. One flush
// serves every event loop waiting: the others find it done when they get redoMu.
func (s *Store) flushRedo() bool {
	target := s.redoStarted.Load() + 1
	s.redoMu.Lock()
	defer s.redoMu.Unlock()
	if s.redoDone < target {
		s.flushRedoLocked()
	}
	return s.redoLastFail < target
}

// flushRedoLocked drains the RedoFeed and appends it to the redo file in one write.
func (s *Store) flushRedoLocked() {
	n := s.redoStarted.Add(1)
	s.redoDone = n
	if s.redoBad || s.redoFile == nil {
		s.redoLastFail = n
		return
	}
	r := &s.redoRec
	r.start()
	if s.redoClearing {
		r.clear()
	}
	s.redoShards = s.ks.Changed(keyspace.RedoFeed, s.redoShards[:0])
	for _, i := range s.redoShards {
		if _, ok := s.ks.Drain(keyspace.RedoFeed, i, r); !ok {
			// The shard lost track of its changes (its log outgrew appendMaxLog in one
			// round: a script changing a key tens of thousands of times): only a
			// rotation covers them.
			s.ks.DrainAll(keyspace.RedoFeed, i, discard{})
			s.redoBad = true
		}
	}
	if b := r.finish(); !s.redoBad && b != nil {
		if _, err := s.redoFile.Write(b); err != nil {
			s.log.Error("persistence: write the redo log; replies wait for synced batches until the next one", "dir", s.dir, "err", err)
			s.redoBad = true
		} else {
			s.redoDirty, s.redoUnsynced = true, true
			s.redoSize += int64(len(b))
		}
	}
	if s.redoBad {
		s.redoLastFail = n
		return
	}
	s.redoClearing = false
	if cap(r.buf) > pieceBytes {
		r.buf = nil
	}
}

// rotateRedoLocked starts a new redo file when the current one holds anything (or failed),
// and returns its generation, which the batch being drained stores: once that batch is
// committed, the older files are in the store. It returns 0 when there is nothing to rotate.
// The batch drains every shard after it: every change of an older file is in the batch.
func (s *Store) rotateRedoLocked() uint64 {
	if !s.redoDirty && !s.redoBad && s.redoFile != nil {
		return 0
	}
	if s.redoFile != nil {
		s.redoFile.Close()
		s.redoFile = nil
	}
	s.redoGen++
	s.redoDirty, s.redoBad, s.redoClearing = false, false, false
	s.redoSize, s.redoUnsynced, s.redoDirDone = 0, false, false
	if err := s.createRedoLocked(); err != nil {
		s.log.Error("persistence: create the redo log; replies wait for synced batches until the next one", "dir", s.dir, "err", err)
		s.redoBad = true
	}
	return s.redoGen
}

// createRedoLocked creates the redo file of generation s.redoGen.
func (s *Store) createRedoLocked() error {
	f, err := s.redoFS.Create(s.redoFS.PathJoin(s.dir, redoName(s.redoGen)), vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	s.redoFile = f
	return nil
}

// redoBatchBytes and redoBatchEvery say when everysec writes a batch to Pebble: once the
// redo log holds redoBatchBytes, or redoBatchEvery after the last batch, whichever comes
// first. In between, the writer syncs the redo log once a second, as Redis syncs its AOF,
// and Pebble is not written at all: a batch writes every key changed since the previous
// one, and over 100,000 keys that change at random, batches a second apart wrote each key
// about every second (a third of the server's CPU went to Pebble's memtable inserts,
// flushes and compactions), while ten seconds apart they write it once in ten. The redo log
// grows by about 7 MB a second under such a load (CL.THROTTLE at -P 16 on a 2-core machine),
// and a restart after a crash replays 64 MiB (1.5 million records) in about 2 s there; its
// size bounds that.
const (
	redoBatchBytes = 64 << 20
	redoBatchEvery = 10 * time.Second
)

// redoDue reports whether the redo log works (its writes and syncs succeed) and, when it
// does, whether a batch is due to relieve it (everysec): it holds redoBatchBytes, or the
// last batch was redoBatchEvery before now.
func (s *Store) redoDue(now, lastBatch time.Time) (works, due bool) {
	s.redoMu.Lock()
	defer s.redoMu.Unlock()
	works = !s.redoBad && s.redoFile != nil
	return works, s.redoSize >= s.redoMaxSize || now.Sub(lastBatch) >= s.redoMaxAge
}

// syncRedo syncs the redo file when it holds records written since its last sync, and the
// directory once after the file was created, so that a machine crash keeps the file's
// records up to the sync. Only the writer calls it, and only the writer rotates the file
// (drain), so the file stays open during the sync while the event loops append to it. A
// failed sync makes the redo log useless until the next rotation, as a failed write does:
// the next batch is then due at once (redoDue).
func (s *Store) syncRedo() {
	s.redoMu.Lock()
	f, dirDone := s.redoFile, s.redoDirDone
	if f == nil || !s.redoUnsynced {
		s.redoMu.Unlock()
		return
	}
	s.redoUnsynced, s.redoDirDone = false, true
	s.redoMu.Unlock()
	err := f.Sync()
	if err == nil && !dirDone {
		err = syncDir(s.redoFS, s.dir)
	}
	if err != nil {
		s.log.Error("persistence: sync the redo log; replies wait for synced batches until the next one", "dir", s.dir, "err", err)
		s.redoMu.Lock()
		if s.redoFile == f {
			s.redoBad = true
		}
		s.redoMu.Unlock()
	}
}

// syncDir syncs the directory dir, so that the files created in it stay after a machine crash.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// listRedo returns dir's redo files, oldest first; a file's num is its generation.
func listRedo(fs vfs.FS, dir string) ([]logFile, error) {
	return listNumbered(fs, dir, func(name string) (uint64, bool) {
		gen, err := strconv.ParseUint(strings.TrimPrefix(name, redoPrefix), 10, 64)
		return gen, strings.HasPrefix(name, redoPrefix) && err == nil
	})
}

// removeRedoBelow removes the redo files older than generation gen: a committed batch
// holds what they held.
func (s *Store) removeRedoBelow(gen uint64) {
	logs, err := listRedo(s.redoFS, s.dir)
	if err != nil {
		s.log.Warn("persistence: list the redo logs", "dir", s.dir, "err", err)
		return
	}
	for _, l := range logs {
		if l.num >= gen {
			break
		}
		if err := s.redoFS.Remove(s.redoFS.PathJoin(s.dir, l.name)); err != nil {
			s.log.Warn("persistence: remove an old redo log", "file", l.name, "err", err)
		}
	}
}

// checkRedo reads the redo files the store does not cover yet (generation >= the one it
// stored) before the store is opened for writing, as checkLogs reads Pebble's: a torn tail
// of the newest file is cut off and logged (unless sv.RefuseTruncated); a record that
// cannot be read anywhere else refuses to start unless sv.Broken allows dropping what
// follows it. Refusing, it changes nothing.
func (s *Store) checkRedo(sv Salvage) error {
	logs, err := listRedo(s.redoFS, s.dir)
	if err != nil {
		return fmt.Errorf("persistence: %s: %w", s.dir, err)
	}
	var live []logFile
	for _, l := range logs {
		s.redoGen = max(s.redoGen, l.num)
		if l.num >= s.redoFrom {
			live = append(live, l)
		}
	}
	s.redoLive = live
	for i, l := range live {
		path := s.redoFS.PathJoin(s.dir, l.name)
		data, err := readAll(s.redoFS, path)
		if err != nil {
			return fmt.Errorf("persistence: read %s: %w", path, err)
		}
		off, n, torn, _ := s.applyRedo(data, 0, false)
		if off == len(data) {
			continue
		}
		dropped := int64(len(data) - off)
		for _, later := range live[i+1:] {
			dropped += later.size
		}
		s.redoLive = live[:i+1]
		if torn && i == len(live)-1 {
			if sv.RefuseTruncated {
				return fmt.Errorf("%w: %s is torn at offset %d after %d records (%d bytes after it; aof-load-truncated no): %s",
					ErrCorrupt, path, off, n, dropped, untouched)
			}
			s.log.Warn("persistence: the redo log ends with a torn write, as a machine crash leaves; dropping it (aof-load-truncated yes)",
				"file", path, "offset", off, "records_kept", n, "bytes_dropped", dropped)
			s.recovery = Recovery{Status: "truncated", File: l.name, Offset: int64(off), Dropped: dropped}
			return cutLogs(s.redoFS, s.dir, path, int64(off), nil)
		}
		what := fmt.Sprintf("%s is corrupt at offset %d after %d records, with %d bytes of the redo logs after it", path, off, n, dropped)
		if !sv.Broken || dropped > sv.BrokenMaxSize {
			return fmt.Errorf("%w: %s; %s (aof-load-broken with a large enough aof-load-broken-max-size drops them)", ErrCorrupt, what, untouched)
		}
		s.log.Warn("persistence: dropping the corrupt end of the redo logs (aof-load-broken yes)",
			"file", path, "offset", off, "records_kept", n, "bytes_dropped", dropped)
		s.recovery = Recovery{Status: "broken", File: l.name, Offset: int64(off), Dropped: dropped}
		return cutLogs(s.redoFS, s.dir, path, int64(off), live[i+1:])
	}
	return nil
}

// replayRedo applies the redo files checkRedo kept to the keyspace, in order, with the
// DiskFeed tracking them so that the next batch writes them, and starts the next file.
func (s *Store) replayRedo(now int64) error {
	records := 0
	for _, l := range s.redoLive {
		path := s.redoFS.PathJoin(s.dir, l.name)
		data, err := readAll(s.redoFS, path)
		if err != nil {
			return fmt.Errorf("persistence: read %s: %w", path, err)
		}
		off, n, _, err := s.applyRedo(data, now, true)
		if err != nil {
			return err
		}
		records += n
		s.redoRecords += int64(n)
		s.redoBytes += int64(off)
		if off != len(data) {
			return fmt.Errorf("%w: %s changed at offset %d while loading", ErrCorrupt, path, off)
		}
	}
	if records > 0 {
		s.log.Info("redo log replayed", "dir", s.dir, "records", records, "bytes", s.redoBytes, "files", len(s.redoLive))
	}
	// The next synced batch, which writes what was replayed, rotates and removes the files.
	s.redoDirty = len(s.redoLive) > 0
	s.redoLive = nil
	s.redoGen = max(s.redoGen+1, s.redoFrom, 1)
	return s.createRedoLocked()
}

// readAll returns the file at path.
func readAll(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// applyRedo applies data's whole records to the keyspace, and returns the offset where they
// end (len(data) when all were whole), how many changes they held, and whether what follows is a
// torn write: no whole record follows the bad bytes (a machine crash leaves a record cut
// short, or zeros). A record found after them means corruption. With apply false, it only
// reads them. Applying, it writes what it applied to the store whenever a shard's log of
// deletions is half full (writeReplayed), and returns the error of such a write.
func (s *Store) applyRedo(data []byte, now int64, apply bool) (off, n int, torn bool, err error) {
	for off < len(data) {
		rec, ok := redoRecordAt(data[off:])
		k := 0
		if ok {
			// Read through first, so that a batch is applied whole or not at all.
			k, err = eachChange(rec[redoHeader:], func(c []byte) error { return s.applyRecord(c, 0, false) })
			ok = err == nil
		}
		if ok && apply {
			_, err = eachChange(rec[redoHeader:], func(c []byte) error {
				if err := s.applyRecord(c, now, true); err != nil {
					return err
				}
				if s.ks.DeletionsHigh(keyspace.DiskFeed) {
					return s.writeReplayed()
				}
				return nil
			})
			if err != nil && !errors.Is(err, errBadRecord) {
				return off, n, false, err
			}
			ok = err == nil
		}
		if !ok {
			for p := off + 1; p < len(data); p++ {
				if _, ok := redoRecordAt(data[p:]); ok {
					return off, n, false, nil
				}
			}
			return off, n, true, nil
		}
		off += len(rec)
		n += k
	}
	return off, n, false, nil
}

// eachChange calls fn with each change of a record's payload p: p itself, or a batch's
// changes. It returns how many there were, and fn's first error; errBadRecord when p is a
// batch that cannot be read.
func eachChange(p []byte, fn func(change []byte) error) (int, error) {
	if len(p) == 0 || p[0] != redoBatch {
		return 1, fn(p)
	}
	n := 0
	for p = p[1:]; len(p) > 0; n++ {
		size, w := binary.Uvarint(p)
		if w <= 0 || size == 0 || size > uint64(len(p)-w) || p[w] == redoBatch {
			return n, errBadRecord
		}
		if err := fn(p[w : w+int(size)]); err != nil {
			return n, err
		}
		p = p[w+int(size):]
	}
	return n, nil
}

// writeReplayed writes the changes replayed so far to the store, unsynced, so that a replay
// of many deletions does not overflow a shard's log of them, which would make the first
// batch rewrite every key. The store's redo generation stays: a crash before the first
// synced batch replays the same files again, from their start, onto a store that may hold
// some of their changes, which ends where one replay does (the store may hold states newer
// than a key's records, as it may after any batch: see above).
func (s *Store) writeReplayed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &s.rec
	defer r.reset()
	if s.flushPending {
		r.clear = true
		clear(r.chunked)
		s.flushPending = false
	}
	for i := range s.ks.Shards() {
		for more := true; more; {
			var ok bool
			if more, ok = s.ks.Drain(keyspace.DiskFeed, i, r); !ok {
				s.rewriteAll(r)
				return s.commit(r, false)
			}
			if r.Full() {
				if err := s.commit(r, false); err != nil {
					return fmt.Errorf("persistence: write the replayed redo log: %w", err)
				}
				r.reset()
			}
		}
	}
	if err := s.commit(r, false); err != nil {
		return fmt.Errorf("persistence: write the replayed redo log: %w", err)
	}
	return nil
}

// redoRecordAt returns the record b starts with, and whether it is whole and its CRC holds.
func redoRecordAt(b []byte) ([]byte, bool) {
	if len(b) < redoHeader {
		return nil, false
	}
	size := binary.LittleEndian.Uint32(b[4:])
	if uint64(size) > uint64(len(b)-redoHeader) {
		return nil, false
	}
	rec := b[:redoHeader+int(size)]
	return rec, crc32.Checksum(rec[4:], castagnoli) == binary.LittleEndian.Uint32(rec)
}

// errBadRecord is a redo record whose CRC holds but whose payload cannot be read.
var errBadRecord = errors.New("persistence: bad redo record")

// applyRecord applies one record's payload to the keyspace, or with apply false only reads it.
func (s *Store) applyRecord(p []byte, now int64, apply bool) error {
	if len(p) == 0 {
		return errBadRecord
	}
	op := p[0]
	if op == redoClear {
		if len(p) != 1 {
			return errBadRecord
		}
		if !apply {
			return nil
		}
		s.ks.Flush()
		s.flushPending = true
		return nil
	}
	klen, w := binary.Uvarint(p[1:])
	if w <= 0 || klen > uint64(len(p)-1-w) {
		return errBadRecord
	}
	key := p[1+w : 1+w+int(klen)]
	val := p[1+w+int(klen):]
	sh := s.ks.Shard(key)
	switch op {
	case redoDelete:
		if len(val) != 0 {
			return errBadRecord
		}
		if !apply {
			return nil
		}
		sh.Lock()
		sh.DeleteLocked(key)
		sh.Unlock()
	case redoPatch:
		n, w := binary.Uvarint(val)
		if w <= 0 || n > uint64(len(val)-w) {
			return errBadRecord
		}
		head, err := keyspace.DecodeValue(val[w : w+int(n)])
		if err != nil || head.Kind > keyspace.MaxKind {
			return errBadRecord
		}
		if !apply {
			return nil
		}
		if head.Expire != 0 && now >= head.Expire {
			sh.Lock()
			sh.DeleteLocked(key)
			sh.Unlock()
			return nil
		}
		if err := s.ks.Patch(key, head, val[w+int(n):]); err != nil {
			return errBadRecord
		}
	case redoPut:
		v, err := keyspace.DecodeValue(val)
		if err != nil || v.Kind > keyspace.MaxKind {
			return errBadRecord
		}
		if !apply {
			return nil
		}
		if v, err = s.ks.Objectify(v); err != nil {
			return errBadRecord
		}
		sh.Lock()
		if v.Expire != 0 && now >= v.Expire {
			sh.DeleteLocked(key)
		} else {
			sh.SetLocked(key, v)
		}
		sh.Unlock()
	default:
		return errBadRecord
	}
	return nil
}
