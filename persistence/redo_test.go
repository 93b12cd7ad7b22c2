package persistence

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/keyspace"
)

// redoCrashImage writes n keys and deletes k0000, each followed by a Wait, with an interval
// so long that no batch is written, and returns a copy of the directory taken while the
// store is open, as a kill -9 leaves it: the changes only in the redo log. It also returns
// the redo file's path in the copy.
func redoCrashImage(t *testing.T, n int) (dir, redo string) {
	t.Helper()
	live := t.TempDir()
	s, ks := open(t, live, t0, Options{Interval: time.Hour})
	for i := range n {
		set(ks, fmt.Sprintf("k%04d", i), keyspace.Value{Kind: keyspace.String, Bytes: []byte("value")})
		require.NoError(t, s.Wait())
	}
	sh := ks.Shard([]byte("k0000"))
	sh.Lock()
	sh.DeleteLocked([]byte("k0000"))
	sh.Unlock()
	require.NoError(t, s.Wait())
	require.Zero(t, s.Info().Batches, "no batch: the redo log holds every change")
	dir = crashCopy(t, live)
	require.NoError(t, s.Close())
	logs, err := listRedo(s.redoFS, dir)
	require.NoError(t, err)
	require.Len(t, logs, 1)
	require.NotZero(t, logs[0].size)
	return dir, filepath.Join(dir, logs[0].name)
}

// crashCopy returns a copy of the directory live, taken while its store is open, as a
// kill -9 leaves it.
func crashCopy(t *testing.T, live string) string {
	t.Helper()
	dir := t.TempDir()
	entries, err := os.ReadDir(live)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(live, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
	}
	return dir
}

// TestRedoRoundInOrder: one event-loop round's changes go to the redo log in order, as one
// record, and replay ends each key at its last change: a key set twice, one deleted and set
// again, one set and deleted, and a long value (which the feed takes at the drain) that
// replaced a short one.
func TestRedoRoundInOrder(t *testing.T) {
	live := t.TempDir()
	s, ks := open(t, live, t0, Options{Interval: time.Hour})
	long := strings.Repeat("x", 300)
	set(ks, "gone", keyspace.Value{Kind: keyspace.String, Bytes: []byte("old")})
	require.NoError(t, s.Wait())
	set(ks, "a", keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	set(ks, "a", keyspace.Value{Kind: keyspace.GCRA, Num: 2})
	set(ks, "b", keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	del(ks, "b")
	set(ks, "b", keyspace.Value{Kind: keyspace.GCRA, Num: 3})
	set(ks, "c", keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	del(ks, "c")
	del(ks, "gone")
	set(ks, "l", keyspace.Value{Kind: keyspace.String, Bytes: []byte("short")})
	set(ks, "l", keyspace.Value{Kind: keyspace.String, Bytes: []byte(long)})
	require.NoError(t, s.Wait())
	require.Zero(t, s.Info().Batches, "no batch: the redo log holds every change")
	dir := crashCopy(t, live)
	require.NoError(t, s.Close())
	redo, err := listRedo(s.redoFS, dir)
	require.NoError(t, err)
	require.Len(t, redo, 1)
	data, err := os.ReadFile(filepath.Join(dir, redo[0].name))
	require.NoError(t, err)
	rec, ok := redoRecordAt(data)
	require.True(t, ok)
	rest, ok := redoRecordAt(data[len(rec):])
	require.True(t, ok)
	require.Len(t, data, len(rec)+len(rest), "two rounds, two records")
	require.Equal(t, byte(redoBatch), rest[redoHeader])

	_, ks2, logs, err := tryOpen(t, dir, Salvage{})
	require.NoError(t, err, logs)
	require.Equal(t, map[string]keyspace.Value{
		"a": {Kind: keyspace.GCRA, Num: 2},
		"b": {Kind: keyspace.GCRA, Num: 3},
		"l": {Kind: keyspace.String, Bytes: []byte(long)},
	}, contents(ks2, t0))
}

// TestRedoReadsRecordPerChange: a redo file of an earlier version, a record per change,
// replays as before.
func TestRedoReadsRecordPerChange(t *testing.T) {
	disk := vfs.NewMem()
	s, err := Open("/data", keyspace.New(1), Options{FS: disk, Logger: testLogger(t), Now: func() int64 { return t0 }})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	logs, err := listRedo(disk, "/data")
	require.NoError(t, err)
	require.Len(t, logs, 1)
	record := func(payload []byte) []byte {
		rec := make([]byte, redoHeader, redoHeader+len(payload))
		rec = append(rec, payload...)
		binary.LittleEndian.PutUint32(rec[4:], uint32(len(payload)))
		binary.LittleEndian.PutUint32(rec, crc32.Checksum(rec[4:], castagnoli))
		return rec
	}
	put := func(key string, v keyspace.Value) []byte {
		p := append([]byte{redoPut, byte(len(key))}, key...)
		p = append(p, make([]byte, keyspace.EncodedLen(v))...)
		keyspace.Encode(p[2+len(key):], v)
		return record(p)
	}
	old := append(put("a", keyspace.Value{Kind: keyspace.GCRA, Num: 7}), put("b", keyspace.Value{Kind: keyspace.GCRA, Num: 8})...)
	old = append(old, record([]byte{redoDelete, 1, 'b'})...)
	f, err := disk.OpenReadWrite(disk.PathJoin("/data", logs[0].name), vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	_, err = f.WriteAt(old, logs[0].size)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s, ks := open(t, "/data", t0, Options{FS: disk})
	defer s.Close()
	require.Equal(t, int64(3), s.Info().RedoRecords)
	require.Equal(t, map[string]keyspace.Value{"a": {Kind: keyspace.GCRA, Num: 7}}, contents(ks, t0))
}

func TestRedoReplayedAfterCrash(t *testing.T) {
	dir, _ := redoCrashImage(t, 300)
	s, ks, logs, err := tryOpen(t, dir, Salvage{})
	require.NoError(t, err, logs)
	require.Equal(t, 299, ks.Len())
	_, ok := get(ks, "k0000", t0)
	require.False(t, ok, "the deletion is replayed")
	v, ok := get(ks, "k0299", t0)
	require.True(t, ok)
	require.Equal(t, "value", string(v.Bytes))
	require.Contains(t, logs, "redo log replayed")

	// The replayed keys are written to the store by the next batch, after which the old
	// redo file is removed: a clean restart has them without it.
	require.NoError(t, s.Save())
	redo, err := listRedo(s.redoFS, dir)
	require.NoError(t, err)
	require.Len(t, redo, 1)
	require.Zero(t, redo[0].size)
	require.NoError(t, s.Close())
	_, ks, logs, err = tryOpen(t, dir, Salvage{})
	require.NoError(t, err, logs)
	require.Equal(t, 299, ks.Len())
	require.NotContains(t, logs, "redo log replayed")
}

func TestRedoTornTail(t *testing.T) {
	dir, redo := redoCrashImage(t, 300)
	const cut = 5 // into the last record, the deletion of k0000
	requireTornTailRecovered(t, dir, redo, cut, 300, "the redo log ends with a torn write")
}

func TestRedoCorruptRefused(t *testing.T) {
	dir, redo := redoCrashImage(t, 300)
	size := fileSize(t, redo)
	flipByte(t, redo, size/2)
	before := dirSums(t, dir)
	_, _, logs, err := tryOpen(t, dir, Salvage{})
	require.ErrorIs(t, err, ErrCorrupt, logs)
	require.Contains(t, err.Error(), redo+" is corrupt at offset ")
	require.Equal(t, before, dirSums(t, dir), "a refusal changes nothing")

	s, ks, logs, err := tryOpen(t, dir, Salvage{Broken: true, BrokenMaxSize: size})
	require.NoError(t, err, logs)
	require.Equal(t, "broken", s.Info().Recovery.Status)
	require.Greater(t, ks.Len(), 100)
	require.Less(t, ks.Len(), 200)
}

func TestRedoFlushAll(t *testing.T) {
	live := t.TempDir()
	s, ks := open(t, live, t0, Options{Interval: time.Hour})
	set(ks, "a", keyspace.Value{Kind: keyspace.String, Bytes: []byte("1")})
	require.NoError(t, s.Save())
	set(ks, "b", keyspace.Value{Kind: keyspace.String, Bytes: []byte("2")})
	require.NoError(t, s.Wait())
	// A FLUSHALL recorded in the redo log only, then a key after it.
	s.redoMu.Lock()
	ks.Flush()
	s.redoClearing = true
	s.redoMu.Unlock()
	set(ks, "c", keyspace.Value{Kind: keyspace.String, Bytes: []byte("3")})
	require.NoError(t, s.Wait())
	dir := t.TempDir()
	entries, err := os.ReadDir(live)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(live, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
	}
	require.NoError(t, s.Close())
	s, ks, logs, err := tryOpen(t, dir, Salvage{})
	require.NoError(t, err, logs)
	require.Equal(t, 1, ks.Len())
	_, ok := get(ks, "c", t0)
	require.True(t, ok)
	require.NoError(t, s.Close())
	_, ks, logs, err = tryOpen(t, dir, Salvage{})
	require.NoError(t, err, logs)
	require.Equal(t, 1, ks.Len(), "the next batch emptied the store")
}

// redoSyncDisk is a file system in memory that counts the syncs of redo files, and fails
// them while fail is set.
type redoSyncDisk struct {
	vfs.FS
	syncs atomic.Int64
	fail  atomic.Bool
}

func newRedoSyncDisk() *redoSyncDisk {
	d := &redoSyncDisk{}
	d.FS = errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData:
		default:
			return nil
		}
		if !strings.HasPrefix(filepath.Base(op.Path), redoPrefix) {
			return nil
		}
		if d.fail.Load() {
			return fmt.Errorf("%s: %w", op.Path, syscall.EIO)
		}
		d.syncs.Add(1)
		return nil
	}))
	return d
}

// TestEverySecSyncsRedoLog: with everysec, the writer syncs the redo log once a second
// and leaves Pebble alone until the redo log is large or old; a redo log that cannot be
// synced is relieved by a synced batch at once.
func TestEverySecSyncsRedoLog(t *testing.T) {
	disk := newRedoSyncDisk()
	s, ks := open(t, "/data", t0, Options{FS: disk, Interval: time.Millisecond})
	defer s.Close()
	for i := range 100 {
		set(ks, fmt.Sprint("k", i), keyspace.Value{Kind: keyspace.GCRA, Num: int64(i)})
		require.NoError(t, s.Wait())
	}
	eventually(t, func() bool { return disk.syncs.Load() > 0 }, "the redo log is synced within a second")
	require.Zero(t, s.Info().Batches, "no batch while the redo log covers the changes")
	s.redoMu.Lock()
	require.False(t, s.redoUnsynced)
	require.True(t, s.redoDirDone, "the directory is synced with the new file's first sync")
	s.redoMu.Unlock()

	// Large enough, the redo log is relieved by a synced batch, which rotates it.
	s.redoMu.Lock()
	s.redoMaxSize = 1
	s.redoMu.Unlock()
	set(ks, "big", keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	require.NoError(t, s.Wait())
	eventually(t, func() bool { return s.Info().Syncs > 0 }, "a synced batch relieves a large redo log")
	require.Equal(t, int64(101), s.Info().KeysWritten)
	s.redoMu.Lock()
	s.redoMaxSize = redoBatchBytes
	s.redoMu.Unlock()

	// A failed sync of the redo log: batches are due again, synced once a second, until
	// one rotates the redo log.
	disk.fail.Store(true)
	set(ks, "failed", keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	require.NoError(t, s.Wait())
	syncs := s.Info().Syncs
	eventually(t, func() bool { return s.Info().Syncs > syncs }, "a synced batch replaces a redo log that cannot be synced")
	disk.fail.Store(false)
	require.Equal(t, int64(102), s.Info().KeysWritten)
}

// TestLoadTimeCoversRedoReplay: after a crash, INFO's load time covers the redo log's
// replay, and the records and bytes replayed are reported; a clean restart replays none.
func TestLoadTimeCoversRedoReplay(t *testing.T) {
	dir, redo := redoCrashImage(t, 300)
	size := fileSize(t, redo)
	// A slow disk: every read of a redo file, at the check and at the replay, takes 2 ms.
	var slow atomic.Int64
	disk := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileRead && strings.HasPrefix(filepath.Base(op.Path), redoPrefix) {
			time.Sleep(2 * time.Millisecond)
			slow.Add(int64(2 * time.Millisecond))
		}
		return nil
	}))
	s, ks := open(t, dir, t0, Options{FS: disk})
	in := s.Info()
	require.Equal(t, 299, ks.Len())
	require.Equal(t, int64(301), in.RedoRecords, "300 writes and a deletion, one record each")
	require.Equal(t, size, in.RedoBytes)
	require.GreaterOrEqual(t, in.LoadTime, time.Duration(slow.Load()), "the load time covers the replay's reads too")
	require.NoError(t, s.Close())

	s, ks = open(t, dir, t0, Options{})
	defer s.Close()
	in = s.Info()
	require.Equal(t, 299, ks.Len())
	require.Zero(t, in.RedoRecords, "the clean close wrote the replayed changes to the store")
	require.Zero(t, in.RedoBytes)
	require.Positive(t, in.LoadTime)
}

// TestDeletionChurnNeedsNoRewrite: with everysec, deletions faster than a shard's log of
// them (256 KiB) holds until the next batch bring the batch early, so that none is lost
// and no full rewrite is needed.
func TestDeletionChurnNeedsNoRewrite(t *testing.T) {
	ks := keyspace.New(1)
	s, err := Open("/data", ks, Options{FS: vfs.NewMem(), Logger: testLogger(t), Now: func() int64 { return t0 },
		Interval: time.Millisecond})
	require.NoError(t, err)
	s.redoMu.Lock()
	s.redoMaxAge = time.Hour // no batch for age during the test
	s.redoMu.Unlock()
	const n = 40000 // 40000 deletions of 6-byte keys overflow the 256 KiB log
	for i := range n {
		set(ks, fmt.Sprintf("k%05d", i), keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	}
	require.NoError(t, s.Save())
	batches := s.Info().Batches
	// Event-loop rounds of 100 deletions, each followed by a Wait, as the server does.
	for i := 0; i < n-1; i += 100 {
		for j := i; j < min(i+100, n-1); j++ {
			del(ks, fmt.Sprintf("k%05d", j))
		}
		require.NoError(t, s.Wait())
	}
	in := s.Info()
	require.Greater(t, in.Batches, batches, "a batch came before the log overflowed")
	require.Zero(t, in.Rewrites)
	require.NoError(t, s.Close())
	require.Zero(t, s.Info().Rewrites, "the last batch needs no rewrite either")

	s, ks = open(t, "/data", t0, Options{FS: s.redoFS})
	defer s.Close()
	require.Equal(t, map[string]keyspace.Value{
		fmt.Sprintf("k%05d", n-1): {Kind: keyspace.GCRA, Num: 1},
	}, contents(ks, t0))
}

// TestReplayOfManyDeletionsNeedsNoRewrite: a redo log that deletes more keys than a shard's
// log of deletions holds (256 KiB) is replayed in pieces written to the store as it goes,
// so that the first batch after the start need not rewrite every key.
func TestReplayOfManyDeletionsNeedsNoRewrite(t *testing.T) {
	disk := vfs.NewMem()
	openOne := func() (*Store, *keyspace.Keyspace) {
		ks := keyspace.New(1)
		s, err := Open("/data", ks, Options{FS: disk, Logger: testLogger(t), Now: func() int64 { return t0 }})
		require.NoError(t, err)
		return s, ks
	}
	s, ks := openOne()
	const n = 40000 // 40000 deletions of 6-byte keys overflow the 256 KiB log
	for i := range n {
		set(ks, fmt.Sprintf("k%05d", i), keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	}
	require.NoError(t, s.Close())

	// The redo file the closed store left for its next changes gets the deletions of every
	// key but the last, as a crash after they were flushed would leave it.
	logs, err := listRedo(disk, "/data")
	require.NoError(t, err)
	require.Len(t, logs, 1)
	var r redoRecorder
	r.start()
	for i := range n - 1 {
		r.Delete([]byte(fmt.Sprintf("k%05d", i)))
	}
	r.finish()
	f, err := disk.OpenReadWrite(disk.PathJoin("/data", logs[0].name), vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	_, err = f.WriteAt(r.buf, logs[0].size)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())

	s, ks = openOne()
	in := s.Info()
	require.Equal(t, int64(n-1), in.RedoRecords)
	require.Equal(t, int64(len(r.buf)), in.RedoBytes)
	require.Equal(t, 1, ks.Len())
	require.NoError(t, s.Close())
	require.Zero(t, s.Info().Rewrites)

	s, ks = openOne()
	defer s.Close()
	require.Zero(t, s.Info().RedoRecords)
	require.Equal(t, map[string]keyspace.Value{
		fmt.Sprintf("k%05d", n-1): {Kind: keyspace.GCRA, Num: 1},
	}, contents(ks, t0))
}
