package persistence

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/throttledhq/throttled/keyspace"
)

// Fsync says when written changes are synced to the disk: Redis's appendfsync.
type Fsync int32

// The appendfsync choices.
const (
	EverySec Fsync = iota // sync once a second: a crash loses about a second at most
	Always                // sync before a client that changed state gets its replies
	No                    // never sync: the operating system writes back when it likes
)

// String returns the appendfsync name of f.
func (f Fsync) String() string {
	switch f {
	case Always:
		return "always"
	case No:
		return "no"
	}
	return "everysec"
}

// ParseFsync reads an appendfsync value: always, everysec or no, in any case.
func ParseFsync(s string) (Fsync, error) {
	switch strings.ToLower(s) {
	case "always":
		return Always, nil
	case "everysec":
		return EverySec, nil
	case "no":
		return No, nil
	}
	return 0, fmt.Errorf("%q is not one of always, everysec, no", s)
}

// Options configure a Store.
type Options struct {
	// Fsync says when changes are synced; the zero value is EverySec.
	Fsync Fsync
	// Logger receives the store's logs, Pebble's among them; nil discards them.
	Logger *slog.Logger
	// FS is the file system; nil is the operating system's. Tests use vfs.NewMem and
	// file systems that fail on demand.
	FS vfs.FS
	// Now is the time in Unix ns against which loading drops expired keys; nil is the
	// wall clock.
	Now func() int64
	// Interval is the shortest time between two batches; 0 is DefaultInterval.
	Interval time.Duration
	// Salvage says what Open may drop from damaged logs (see checkLogs); the zero value
	// drops a torn tail of the newest log and refuses corruption.
	Salvage Salvage
	// Checkpoint, when set, is called before each drain of the keyspace; what it returns
	// is stored with the changes drained then, in the same batch, so that the stored
	// keyspace is at least as new as the checkpoint says (the replication offset it
	// applied). nil leaves the stored checkpoint as it is, an empty slice deletes it.
	// Store.Checkpoint returns what Open loaded.
	Checkpoint func() []byte
}

// DefaultInterval is the shortest time between two batches when no client waits for one.
// Under load the interval grows so that writing takes at most a twentieth of the time (see Store.run),
// up to a second.
const DefaultInterval = 100 * time.Millisecond

// The errors Open returns, wrapped with the directory and the details.
var (
	// ErrNotThrottled is returned for a directory that holds something else.
	ErrNotThrottled = errors.New("persistence: not a throttled data directory")
	// ErrDamaged is returned for a store that Pebble cannot open or read.
	ErrDamaged = errors.New("persistence: data directory is damaged")
	// ErrNewer is returned for a store written by a newer throttled in a format this one cannot read.
	ErrNewer = errors.New("persistence: data directory was written by a newer throttled")
	// ErrClosed is returned by the methods of a closed Store.
	ErrClosed = errors.New("persistence: store is closed")
)

// untouched is the advice every refusal to open ends with.
const untouched = "nothing in it was changed; point dir at an empty or new directory, or restore the old one"

// Store keeps a keyspace durable in a Pebble store. After Open it writes the keyspace's
// changes in batches from one goroutine; Close writes the last ones.
type Store struct {
	dir  string
	db   *pebble.DB
	ks   *keyspace.Keyspace
	log  *slog.Logger
	fs   *retryFS
	wal  *walFS       // above fs: makes a log sync a write unless a real one is asked for
	mode atomic.Int32 // Fsync

	interval time.Duration
	kick     chan struct{} // a batch is wanted now: a waiter, SAVE, FLUSHALL; 1-buffered
	wantSync atomic.Bool   // the next batch syncs, whatever the mode (SAVE, BGSAVE)
	stop     chan struct{} // closed by Close: run returns
	done     chan struct{} // closed when run has returned

	// epoch is what a client waits on for its changes to be synced: the next synced batch
	// releases it. inflight is the epoch a synced batch being written releases. written and
	// writing are the same for any batch: what a client waits on for its changes to be in
	// the operating system (everysec, no).
	epoch    atomic.Pointer[epoch]
	inflight atomic.Pointer[epoch]
	written  atomic.Pointer[epoch]
	writing  atomic.Pointer[epoch]

	drainMu      sync.Mutex // guards flushPending and orders FLUSHALL against a batch's drain
	flushPending bool       // FLUSHALL emptied the keyspace: the next batch empties the store

	// The redo log (redo.go). redoStarted counts the flushes started; redoMu guards the
	// rest, and is taken after drainMu when both are.
	redoMu       sync.Mutex
	redoFS       vfs.FS
	redoFile     vfs.File  // the file flushes append to; nil when it could not be created
	redoGen      uint64    // its generation
	redoFrom     uint64    // the generation the store held at Open
	redoLive     []logFile // Open's: the files checkRedo found to replay
	redoRec      redoRecorder
	redoShards   []int // the shards a flush drains (keyspace.Changed)
	redoStarted  atomic.Uint64
	redoDone     uint64        // the last flush done
	redoLastFail uint64        // the last flush that could not write all it drained
	redoDirty    bool          // the file holds records
	redoSize     int64         // the bytes written to the file
	redoUnsynced bool          // the file holds records written since its last sync (everysec)
	redoDirDone  bool          // the directory was synced since the file was created (everysec)
	redoMaxSize  int64         // everysec: a batch is due once the file holds this much (redoBatchBytes)
	redoMaxAge   time.Duration // or once the last batch is this old (redoBatchEvery)
	redoBad      bool          // a flush failed since the last rotation: waiters wait for a synced batch
	redoClearing bool          // FLUSHALL: the next flush starts with a clear record

	mu        sync.Mutex // guards writes to db, closed, unsynced, rec, batch
	closed    bool
	unsynced  bool          // a batch was written without a sync since the last one
	rec       recorder      // the piece being drained
	batch     *pebble.Batch // the batch a piece is committed in, reused; nil until the first
	closeOnce sync.Once
	closeErr  error
	abandoned atomic.Bool // Close gave up on a failing disk: the closing goroutine must not touch Pebble again

	mark       func() []byte // Options.Checkpoint
	checkpoint []byte        // the checkpoint Open loaded

	stats
}

// stats are what Info reports.
type stats struct {
	loadedKeys    int
	expiredAtLoad int
	loadTime      time.Duration // Open's, from its start to the end of the redo log's replay
	redoRecords   int64         // the redo records Open replayed
	redoBytes     int64         // the bytes of the redo files Open replayed
	recovery      Recovery      // what Open dropped from the logs

	batches      atomic.Int64
	syncs        atomic.Int64
	puts         atomic.Int64 // keys written
	deletes      atomic.Int64 // keys deleted
	rewrites     atomic.Int64 // full rewrites after a shard lost track
	unsaved      atomic.Int64 // changes written since the last sync
	lastSave     atomic.Int64 // Unix s of the last sync of everything drained before it
	lastSaveErr  atomic.Bool  // the last SAVE or BGSAVE failed
	diskBytes    atomic.Int64 // the store's size on disk, as of the last synced batch
	memTables    atomic.Int64 // bytes of Pebble's memtables, as of the last batch
	blockCache   atomic.Int64 // bytes in Pebble's block cache, as of the last batch
	failingSince atomic.Int64 // Unix ns when the disk started failing; 0 when it works
	lastErr      atomic.Pointer[string]
	lastFailLog  atomic.Int64 // Unix ns of the last failure logged, to log one every few seconds
	sizeChecked  time.Time    // when diskBytes was updated; run's
}

// Open opens the store in dir, creating it when dir is missing or empty, checks that it is
// throttled's, loads every key that has not expired by now into ks (which must be empty),
// turns on ks's change tracking and starts writing the changes. A directory that holds
// something else, or a store that is damaged, is refused before anything in it is written:
// the error wraps ErrNotThrottled, ErrDamaged or ErrNewer.
func Open(dir string, ks *keyspace.Keyspace, o Options) (*Store, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Now == nil {
		o.Now = func() int64 { return time.Now().UnixNano() }
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	s := &Store{
		dir:      dir,
		ks:       ks,
		mark:     o.Checkpoint,
		log:      o.Logger,
		interval: o.Interval,

		redoMaxSize: redoBatchBytes,
		redoMaxAge:  redoBatchEvery,
		kick:        make(chan struct{}, 1),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
	}
	s.mode.Store(int32(o.Fsync))
	s.epoch.Store(newEpoch())
	s.written.Store(newEpoch())
	s.recovery = Recovery{Status: "ok"}
	s.fs = newRetryFS(o.FS, s.diskFailed, s.diskRecovered)
	s.redoFS = o.FS
	s.wal = &walFS{FS: s.fs}

	fresh, err := inspectDir(o.FS, dir)
	if err != nil {
		return nil, err
	}
	var expired [][]byte
	start := time.Now()
	if !fresh {
		// Check and load from a read-only Pebble first: a foreign or damaged store is
		// then left exactly as it was.
		if err := s.checkLogs(o.FS, o.Salvage); err != nil {
			ks.Flush()
			return nil, err
		}
		if expired, err = s.load(o.FS, o.Now()); err != nil {
			ks.Flush()
			return nil, err
		}
		if err := s.checkRedo(o.Salvage); err != nil {
			ks.Flush()
			return nil, err
		}
	}
	s.db, err = pebble.Open(dir, s.pebbleOptions(s.wal, false, !fresh))
	if err != nil {
		ks.Flush()
		return nil, fmt.Errorf("persistence: open %s: %w", dir, err)
	}
	b := s.db.NewBatch()
	b.Set(metaKey, []byte(strconv.Itoa(formatVersion)), nil) // an older server refuses it now (formatVersion)
	for _, k := range expired {
		b.Delete(k, nil)
		if _, ok := s.rec.chunked[string(k[1:])]; ok {
			delete(s.rec.chunked, string(k[1:]))
			start, end := chunkRange(k[1:])
			b.DeleteRange(start, end, nil)
		}
	}
	if err := s.commitBatch(b, true); err != nil {
		s.db.Close()
		ks.Flush()
		return nil, fmt.Errorf("persistence: open %s: %w", dir, err)
	}
	b.Close()
	s.lastSave.Store(time.Now().Unix())
	s.refreshSize(true)
	ks.Track(keyspace.DiskFeed, true)
	if err := s.replayRedo(o.Now()); err != nil {
		ks.Track(keyspace.DiskFeed, false)
		s.db.Close()
		ks.Flush()
		return nil, err
	}
	if !fresh {
		// Loading ends with the redo log's replay, which after a crash under load can take
		// longer than the rest.
		s.loadTime = time.Since(start)
	}
	s.removeRedoBelow(s.redoFrom)
	ks.Track(keyspace.RedoFeed, true)
	go s.run()
	return s, nil
}

// inspectDir decides whether dir is to be created (missing or empty) or opened (it holds
// a Pebble store), and refuses anything else.
func inspectDir(fs vfs.FS, dir string) (fresh bool, err error) {
	info, err := fs.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("persistence: %s: %w", dir, err)
	}
	if !info.IsDir() {
		return false, fmt.Errorf("%w: %s is not a directory; %s", ErrNotThrottled, dir, untouched)
	}
	names, err := fs.List(dir)
	if err != nil {
		return false, fmt.Errorf("persistence: %s: %w", dir, err)
	}
	pebbleFiles := false
	var others []string
	for _, n := range names {
		switch {
		case n == "LOCK":
		case n == "CURRENT" || strings.HasPrefix(n, "MANIFEST-") || strings.HasPrefix(n, "marker.manifest."):
			pebbleFiles = true
		case strings.HasPrefix(n, "OPTIONS-") || strings.HasPrefix(n, "marker.") || strings.HasPrefix(n, redoPrefix) ||
			strings.HasSuffix(n, ".log") || strings.HasSuffix(n, ".sst") || strings.HasSuffix(n, ".blob"):
		default:
			others = append(others, n)
		}
	}
	if pebbleFiles {
		return false, nil
	}
	if len(others) == 0 && len(names) <= 1 {
		return true, nil // empty, or a LOCK left by a first start that stopped there
	}
	slices.Sort(names)
	return false, fmt.Errorf("%w: %s holds %s and no Pebble store; %s", ErrNotThrottled, dir, sample(names), untouched)
}

// sample names a few of names.
func sample(names []string) string {
	const show = 3
	q := make([]string, 0, show)
	for _, n := range names[:min(show, len(names))] {
		q = append(q, strconv.Quote(n))
	}
	s := strings.Join(q, ", ")
	if len(names) > show {
		s += fmt.Sprintf(" and %d more", len(names)-show)
	}
	return s
}

// load opens the store read-only, checks its marker and loads its live keys into s.ks.
// It returns the store keys of the keys that had expired, for Open to delete.
func (s *Store) load(fs vfs.FS, now int64) ([][]byte, error) {
	db, err := pebble.Open(s.dir, s.pebbleOptions(fs, true, true))
	if err != nil {
		return nil, openError(s.dir, err)
	}
	defer db.Close()
	if err := checkMarker(db, s.dir); err != nil {
		return nil, err
	}
	if v, closer, err := db.Get(markKey); err == nil {
		s.checkpoint = bytes.Clone(v)
		closer.Close()
	}
	if v, closer, err := db.Get(redoKey); err == nil {
		s.redoFrom, err = strconv.ParseUint(string(v), 10, 64)
		closer.Close()
		if err != nil {
			return nil, fmt.Errorf("%w: %s: redo generation %q; %s", ErrDamaged, s.dir, v, untouched)
		}
	}
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: dataStart, UpperBound: dataEnd})
	if err != nil {
		return nil, damaged(s.dir, err)
	}
	defer it.Close()
	s.log.Info("loading the keyspace", "dir", s.dir)
	start, lastLog := time.Now(), time.Now()
	var expired [][]byte
	for it.First(); it.Valid(); it.Next() {
		raw, err := it.ValueAndErr()
		if err != nil {
			break // it.Error reports it
		}
		v, err := keyspace.DecodeValue(raw)
		if err == nil && v.Kind > keyspace.MaxKind {
			err = fmt.Errorf("%w: kind %d", keyspace.ErrBadValue, v.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: key %q: %v; %s", ErrDamaged, s.dir, it.Key()[1:], err, untouched)
		}
		if v.Expire != 0 && now >= v.Expire {
			expired = append(expired, bytes.Clone(it.Key()))
			if v.Chunks {
				s.rec.chunk(it.Key()[1:]) // its chunks go with it (Open's unchunk)
			}
			continue
		}
		key := it.Key()[1:]
		if v.Chunks {
			if v, err = s.loadChunks(db, key, v); err != nil {
				return nil, fmt.Errorf("%w: %s: key %q: %v; %s", ErrDamaged, s.dir, key, err, untouched)
			}
			s.rec.chunk(key)
		}
		sh := s.ks.Shard(key)
		sh.Lock()
		sh.SetLocked(key, v)
		sh.Unlock()
		if s.loadedKeys++; s.loadedKeys%65536 == 0 && time.Since(lastLog) >= time.Second {
			lastLog = time.Now()
			s.log.Info("loading the keyspace", "keys", s.loadedKeys, "elapsed", lastLog.Sub(start).Round(time.Millisecond))
		}
	}
	if err := it.Error(); err != nil {
		return nil, damaged(s.dir, err)
	}
	s.expiredAtLoad = len(expired)
	s.log.Info("keyspace loaded", "keys", s.loadedKeys, "expired", len(expired),
		"took", time.Since(start).Round(time.Millisecond))
	return expired, nil
}

// loadChunks returns v, the head of key's value stored in chunks, with its chunks put
// back together into its object.
func (s *Store) loadChunks(db *pebble.DB, key []byte, v keyspace.Value) (keyspace.Value, error) {
	start, end := chunkRange(key)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: start, UpperBound: end})
	if err != nil {
		return v, err
	}
	defer it.Close()
	var form []byte
	for it.First(); it.Valid(); it.Next() {
		b, err := it.ValueAndErr()
		if err != nil {
			break
		}
		k := it.Key()
		if len(k) != len(start)+8 {
			return v, fmt.Errorf("a chunk key of %d bytes", len(k))
		}
		form = keyspace.AppendChunk(form, binary.BigEndian.Uint64(k[len(start):]), b)
	}
	if err := it.Error(); err != nil {
		return v, err
	}
	v.Bytes = form
	return s.ks.Objectify(v)
}

// checkMarker checks that db is throttled's, in a format this server reads. An empty store
// without the marker is a first start that stopped before writing it: Open adopts it.
func checkMarker(db *pebble.DB, dir string) error {
	v, closer, err := db.Get(metaKey)
	if errors.Is(err, pebble.ErrNotFound) {
		it, err := db.NewIter(nil)
		if err != nil {
			return damaged(dir, err)
		}
		empty := !it.First()
		it.Close()
		if empty {
			return nil
		}
		return fmt.Errorf("%w: %s holds a Pebble store without throttled's marker; %s", ErrNotThrottled, dir, untouched)
	}
	if err != nil {
		return damaged(dir, err)
	}
	defer closer.Close()
	n, err := strconv.Atoi(string(v))
	switch {
	case err != nil || n < 1:
		return fmt.Errorf("%w: %s: format marker %q; %s", ErrDamaged, dir, v, untouched)
	case n > formatVersion:
		return fmt.Errorf("%w: %s is in format %d, this server reads %d; %s", ErrNewer, dir, n, formatVersion, untouched)
	}
	return nil
}

// damaged is the error for a store Pebble cannot read: Pebble's text names the file and,
// for a table, the block (offset/length) whose checksum failed. The line cockroachdb/errors
// adds for the details it keeps out of the text is dropped.
func damaged(dir string, err error) error {
	msg := strings.ReplaceAll(err.Error(), "\n<corruption detail carrier>", "")
	return fmt.Errorf("%w: %s: %s; %s", ErrDamaged, dir, msg, untouched)
}

// openError explains why Pebble could not open an existing store.
func openError(dir string, err error) error {
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("persistence: %s is in use by another process: %w", dir, err)
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("persistence: %s: %w", dir, err)
	}
	return damaged(dir, err)
}

// memTableSize is Pebble's write buffer: larger ones flush less often, and a flush writes
// only the newest version of each key. 32 MiB holds about four versions of each of 100,000
// keys changing at random, which took Pebble's flushes and compactions from about 4% of the
// server's CPU to under 2% (CL.THROTTLE at 125k req/s, everysec, pprof); 64 MiB saved
// little more for twice the memory.
//
// It is most of what persistence costs in memory, and a fixed amount: under a burst the
// memtable being filled and the one being flushed are both resident, and after the flush
// Pebble keeps one arena for the next memtable, so the store holds up to 2 x 32 MiB off the
// Go heap, plus its block cache (cacheSize), whatever the number of keys. The writer's own
// buffers are bounded by pieceBytes.
const memTableSize = 32 << 20

// cacheSize is Pebble's block cache. The store is read only at startup, by one pass over
// it, so the cache helps little: Pebble's default, 8 MiB, is kept as a bound.
const cacheSize = 8 << 20

// pebbleOptions are the options for the store in dir: read-only for the first look,
// never creating a store where one is expected.
func (s *Store) pebbleOptions(fs vfs.FS, readOnly, mustExist bool) *pebble.Options {
	o := &pebble.Options{
		FS:               fs,
		ReadOnly:         readOnly,
		ErrorIfNotExists: mustExist,
		MemTableSize:     memTableSize,
		CacheSize:        cacheSize,
		Logger:           pebbleLogger{s.log, &s.abandoned},
		EventListener: &pebble.EventListener{
			BackgroundError: func(err error) {
				s.log.Error("persistence: background error", "dir", s.dir, "err", err)
			},
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				s.log.Error("persistence: data corruption", "dir", s.dir, "path", info.Path, "err", info.Details)
			},
			// A burst of changes fills memtables faster than Pebble flushes them: the
			// writer then waits, and the changes wait in the keyspace, coalescing. That is
			// back-pressure on the writer alone, never on clients: worth a debug line.
			WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
				s.log.Debug("persistence: writes stalled", "dir", s.dir, "reason", info.Reason)
			},
			WriteStallEnd: func() { s.log.Debug("persistence: writes resumed", "dir", s.dir) },
		},
	}
	if !readOnly {
		o.FormatMajorVersion = pebble.FormatNewest
	}
	return o
}

// pebbleLogger sends Pebble's logs to slog: its chatter at debug level. Pebble calls Fatalf
// only for broken invariants (write failures never reach it, see retryFS): it panics.
type pebbleLogger struct {
	log       *slog.Logger
	abandoned *atomic.Bool // Close gave up on the disk
}

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("pebble: " + fmt.Sprintf(format, args...))
	}
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Error("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := "pebble: " + fmt.Sprintf(format, args...)
	if l.abandoned.Load() {
		// Close gave up on a failing disk and the process is on its way out
		// with what the last sync kept: park this goroutine rather than crash.
		select {}
	}
	l.log.Error(msg)
	panic(msg)
}

// diskFailed is retryFS's report of a failed attempt: it is logged (every few seconds,
// not at every retry) and shown by Info, and clients waiting for a sync are let go.
func (s *Store) diskFailed(op, name string, err error) {
	now := time.Now().UnixNano()
	s.failingSince.CompareAndSwap(0, now)
	msg := op + " " + name + ": " + err.Error()
	s.lastErr.Store(&msg)
	if last := s.lastFailLog.Load(); now-last >= int64(5*time.Second) && s.lastFailLog.CompareAndSwap(last, now) {
		s.log.Error("persistence: the disk is failing; answering from memory and retrying",
			"dir", s.dir, "op", op, "file", name, "err", err, "retries", s.fs.retries.Load())
	}
	// Waiting clients would wait as long as the disk fails: they get their replies now,
	// as with appendonly no, while INFO and the log say why.
	for _, p := range []*atomic.Pointer[epoch]{&s.epoch, &s.inflight, &s.written, &s.writing} {
		if e := p.Load(); e != nil {
			e.release(err)
		}
	}
}

// diskRecovered is retryFS's report that every failing operation went through.
func (s *Store) diskRecovered() {
	for _, p := range []*atomic.Pointer[epoch]{&s.epoch, &s.written} {
		if e := p.Load(); e.released.Load() && e != closedEpoch {
			p.CompareAndSwap(e, newEpoch()) // waiters wait for the disk again
		}
	}
	since := s.failingSince.Swap(0)
	s.lastFailLog.Store(0)
	s.log.Warn("persistence: the disk works again", "dir", s.dir,
		"failed_for", time.Duration(time.Now().UnixNano()-since).Round(time.Millisecond))
}

// failing reports whether the disk is failing now. It stays true until diskRecovered has
// renewed the released epoch, so that a SAVE that sees the disk working waits for a sync.
func (s *Store) failing() bool { return s.fs.failing.Load() > 0 || s.failingSince.Load() != 0 }

// Checkpoint returns the checkpoint stored with the keyspace Open loaded (see
// Options.Checkpoint), nil when none.
func (s *Store) Checkpoint() []byte { return s.checkpoint }
