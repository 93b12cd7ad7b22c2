package persistence

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/keyspace"
)

// brokenDisk is a file system in memory whose writes fail with errno while it is set:
// a full disk (ENOSPC on writes) or a read-only one (EROFS on every change, removals too).
type brokenDisk struct {
	vfs.FS
	errno atomic.Value // syscall.Errno; 0 when the disk works
}

func newBrokenDisk() *brokenDisk {
	d := &brokenDisk{}
	d.errno.Store(syscall.Errno(0))
	d.FS = errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		errno := d.errno.Load().(syscall.Errno)
		if errno == 0 {
			return nil
		}
		switch op.Kind {
		case errorfs.OpCreate, errorfs.OpLink, errorfs.OpRename, errorfs.OpReuseForWrite, errorfs.OpMkdirAll,
			errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFileSync, errorfs.OpFileSyncData,
			errorfs.OpFileSyncTo, errorfs.OpFilePreallocate:
			return fmt.Errorf("%s: %w", op.Path, errno)
		case errorfs.OpRemove, errorfs.OpRemoveAll:
			if errno == syscall.EROFS {
				return fmt.Errorf("%s: %w", op.Path, errno)
			}
		}
		return nil
	}))
	return d
}

func (d *brokenDisk) set(errno syscall.Errno) { d.errno.Store(errno) }

func eventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 5*time.Millisecond, msg)
}

func TestDiskFailureKeepsServingAndRetries(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EROFS} {
		t.Run(errno.Error(), func(t *testing.T) {
			disk := newBrokenDisk()
			s, ks := open(t, "/data", t0, Options{FS: disk, Fsync: Always})
			for i := range 100 {
				set(ks, fmt.Sprint("before", i), keyspace.Value{Kind: keyspace.GCRA, Num: int64(i)})
			}
			require.NoError(t, s.Save())

			disk.set(errno)
			for i := range 100 {
				set(ks, fmt.Sprint("during", i), keyspace.Value{Kind: keyspace.GCRA, Num: int64(i)})
			}
			del(ks, "before0")
			// A client waiting for a sync is let go once the disk fails, not held for as
			// long as it fails.
			require.ErrorIs(t, s.Wait(), errno)
			in := s.Info()
			require.False(t, in.WriteOK)
			require.Contains(t, in.WriteError, errno.Error())
			require.ErrorContains(t, s.Save(), errno.Error())
			require.ErrorIs(t, s.Wait(), errno, "while the disk fails, nobody waits")
			// Memory answers meanwhile.
			v, ok := get(ks, "during7", t0)
			require.True(t, ok)
			require.Equal(t, int64(7), v.Num)

			disk.set(0)
			eventually(t, func() bool { return s.Info().WriteOK }, "the writes go through once the disk works")
			set(ks, "after", keyspace.Value{Kind: keyspace.GCRA, Num: 1})
			require.NoError(t, s.Save())
			require.Greater(t, s.Info().Retries, int64(0))
			want := contents(ks, t0)
			require.NoError(t, s.Close())

			s, ks = open(t, "/data", t0, Options{FS: disk})
			defer s.Close()
			require.Equal(t, want, contents(ks, t0), "nothing written before, during or after the failure is lost")
			require.Len(t, want, 200)
		})
	}
}

// TestDiskFailureLongOutageRewrites: deletions pile up while the disk is full until a
// shard stops logging them; once the disk works, the store is rewritten whole.
func TestDiskFailureLongOutageRewrites(t *testing.T) {
	disk := newBrokenDisk()
	ks := keyspace.New(1)
	s, err := Open("/data", ks, Options{FS: disk, Logger: testLogger(t), Now: func() int64 { return t0 }})
	require.NoError(t, err)
	const n = 40000 // 40000 deletions of 6-byte keys overflow the 256 KiB log
	for i := range n {
		set(ks, fmt.Sprintf("k%05d", i), keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	}
	require.NoError(t, s.Save())
	disk.set(syscall.ENOSPC)
	set(ks, "trigger", keyspace.Value{Kind: keyspace.GCRA, Num: 2})
	s.BGSave()
	eventually(t, func() bool { return !s.Info().WriteOK }, "the disk fails")
	for i := range n - 1 {
		del(ks, fmt.Sprintf("k%05d", i))
	}
	disk.set(0)
	eventually(t, func() bool { return s.Info().WriteOK }, "the disk works again")
	require.NoError(t, s.Save())
	require.Equal(t, int64(1), s.Info().Rewrites)
	require.NoError(t, s.Close())

	s, ks = open(t, "/data", t0, Options{FS: disk})
	defer s.Close()
	require.Equal(t, map[string]keyspace.Value{
		"trigger":                 {Kind: keyspace.GCRA, Num: 2},
		fmt.Sprintf("k%05d", n-1): {Kind: keyspace.GCRA, Num: 1},
	}, contents(ks, t0))
}

// TestCloseGivesUpOnDeadDisk: SIGTERM on a dead disk still stops the server.
func TestCloseGivesUpOnDeadDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for closeTimeout")
	}
	disk := newBrokenDisk()
	// The closing goroutine Close gives up on outlives the test: it must not log to t.
	s, ks := open(t, "/data", t0, Options{FS: disk, Logger: slog.New(slog.DiscardHandler)})
	disk.set(syscall.EROFS)
	set(ks, "x", keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	s.BGSave()
	eventually(t, func() bool { return !s.Info().WriteOK }, "the disk fails")
	start := time.Now()
	require.ErrorContains(t, s.Close(), "read-only file system")
	require.Less(t, time.Since(start), closeTimeout+2*time.Second)
	require.ErrorIs(t, s.Wait(), ErrClosed, "a closed store lets waiters go")
}

func TestDirSizeFollowsLiveKeys(t *testing.T) {
	dir := t.TempDir()
	s, ks := open(t, dir, t0, Options{})
	defer s.Close()
	const n = 50000
	for i := range n {
		set(ks, fmt.Sprintf("key:%06d", i), keyspace.Value{Kind: keyspace.GCRA, Num: t0 + int64(i), Expire: t0 + 1e12})
	}
	require.NoError(t, s.Save())
	compact := func() int64 {
		require.NoError(t, s.db.Flush())
		require.NoError(t, s.db.Compact(context.Background(), dataStart, dataEnd, false))
		// The tables hold the keys; the log and the MANIFEST are a few MB whatever the keys.
		return int64(s.db.Metrics().Table.Local.LiveSize)
	}
	full := compact()
	for i := range n {
		del(ks, fmt.Sprintf("key:%06d", i))
	}
	require.NoError(t, s.Save())
	empty := compact()
	t.Logf("%d keys: %d bytes of tables; none: %d bytes", n, full, empty)
	require.Less(t, empty, full/100, "deleted keys leave the store")
}
