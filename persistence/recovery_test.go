package persistence

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/keyspace"
)

// crashImage writes n keys, each in a batch of its own, and returns a copy of the directory
// taken while the store is open, as a kill -9 leaves it: the batches in the newest log, no
// table written yet. It also returns the newest log's path in the copy. It uses
// appendfsync always, whose replies wait for Pebble's log rather than the redo log.
func crashImage(t *testing.T, n int) (dir, log string) {
	t.Helper()
	live := t.TempDir()
	s, ks := open(t, live, t0, Options{Fsync: Always})
	for i := range n {
		set(ks, fmt.Sprintf("k%04d", i), keyspace.Value{Kind: keyspace.String, Bytes: []byte("value")})
		require.NoError(t, s.Wait())
	}
	dir = t.TempDir()
	entries, err := os.ReadDir(live)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(live, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
	}
	require.NoError(t, s.Close())
	logs, err := listLogs(vfs.Default, dir)
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	return dir, filepath.Join(dir, logs[len(logs)-1].name)
}

// logBuffer collects a store's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tryOpen opens dir, returning the error and what the store logged.
func tryOpen(t *testing.T, dir string, sv Salvage) (*Store, *keyspace.Keyspace, string, error) {
	t.Helper()
	var logs logBuffer
	ks := keyspace.New(8)
	s, err := Open(dir, ks, Options{Now: func() int64 { return t0 }, Salvage: sv,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if s != nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, ks, logs.String(), err
}

func flipByte(t *testing.T, path string, at int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[at] ^= 0x20
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	require.NoError(t, err)
	return info.Size()
}

func TestCrashImageLoadsWhole(t *testing.T) {
	dir, _ := crashImage(t, 300)
	s, ks, logs, err := tryOpen(t, dir, Salvage{})
	require.NoError(t, err, logs)
	require.Equal(t, 300, ks.Len())
	require.Equal(t, Recovery{Status: "ok"}, s.Info().Recovery)
}

func TestFlippedByteMidLogRefused(t *testing.T) {
	dir, log := crashImage(t, 300)
	flipByte(t, log, fileSize(t, log)/2)
	before := dirSums(t, dir)
	_, _, logs, err := tryOpen(t, dir, Salvage{})
	require.ErrorIs(t, err, ErrCorrupt, logs)
	require.Contains(t, err.Error(), log+" is corrupt at offset ")
	require.Equal(t, before, dirSums(t, dir), "a refusal changes nothing")

	// aof-load-broken with a max size under what would be dropped refuses too.
	_, _, _, err = tryOpen(t, dir, Salvage{Broken: true, BrokenMaxSize: 100})
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, before, dirSums(t, dir))
}

func TestBrokenLogSalvaged(t *testing.T) {
	dir, log := crashImage(t, 300)
	size := fileSize(t, log)
	flipByte(t, log, size/2)
	s, ks, logs, err := tryOpen(t, dir, Salvage{Broken: true, BrokenMaxSize: size})
	require.NoError(t, err)
	rec := s.Info().Recovery
	require.Equal(t, "broken", rec.Status)
	require.Equal(t, filepath.Base(log), rec.File)
	require.Less(t, rec.Offset, size/2+1)
	require.Equal(t, size-rec.Offset, rec.Dropped)
	require.Contains(t, logs, "dropping the corrupt end of the logs")
	require.Contains(t, logs, fmt.Sprintf("bytes_dropped=%d", rec.Dropped))
	// The keys of the batches before the bad one, and none after.
	n := ks.Len()
	require.Greater(t, n, 100)
	require.Less(t, n, 200)
	for i := range n {
		_, ok := get(ks, fmt.Sprintf("k%04d", i), t0)
		require.True(t, ok, i)
	}
	require.NoError(t, s.Close())

	// The log was cut: the next start is clean.
	s, ks, logs, err = tryOpen(t, dir, Salvage{})
	require.NoError(t, err, logs)
	require.Equal(t, n, ks.Len())
	require.Equal(t, "ok", s.Info().Recovery.Status)
}

func TestTornTailRecovered(t *testing.T) {
	dir, log := crashImage(t, 300)
	const cut = 7 // into the last record, which is longer
	requireTornTailRecovered(t, dir, log, cut, 299, "the newest log ends with a torn write")
}

// requireTornTailRecovered cuts the last cut bytes of log, a file of the crash image in dir,
// and requires a start with aof-load-truncated no to refuse it, changing nothing, and a
// start with the default to recover want keys, report what it dropped and log logLine.
func requireTornTailRecovered(t *testing.T, dir, log string, cut int64, want int, logLine string) {
	t.Helper()
	size := fileSize(t, log)
	require.NoError(t, os.Truncate(log, size-cut))

	t.Run("aof-load-truncated no", func(t *testing.T) {
		before := dirSums(t, dir)
		_, _, _, err := tryOpen(t, dir, Salvage{RefuseTruncated: true})
		require.ErrorIs(t, err, ErrCorrupt)
		require.Contains(t, err.Error(), log+" is torn at offset ")
		require.Equal(t, before, dirSums(t, dir))
	})

	s, ks, logs, err := tryOpen(t, dir, Salvage{})
	require.NoError(t, err, logs)
	require.Equal(t, want, ks.Len(), "every record but the torn one")
	rec := s.Info().Recovery
	require.Equal(t, "truncated", rec.Status)
	require.Equal(t, filepath.Base(log), rec.File)
	require.Equal(t, size-cut, rec.Offset+rec.Dropped)
	require.Contains(t, logs, logLine)
}

func TestCorruptTableRefused(t *testing.T) {
	dir := t.TempDir()
	s, ks := open(t, dir, t0, Options{})
	for i := range 20000 {
		set(ks, fmt.Sprintf("key:%06d", i), keyspace.Value{Kind: keyspace.String, Bytes: []byte(strings.Repeat("v", 40))})
	}
	require.NoError(t, s.Close()) // writes a table
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.NotEmpty(t, tables)
	flipByte(t, tables[0], fileSize(t, tables[0])/3)
	before := dirSums(t, dir)
	_, _, logs, err := tryOpen(t, dir, Salvage{Broken: true, BrokenMaxSize: 1 << 30})
	require.ErrorIs(t, err, ErrDamaged, logs)
	// Pebble's text: the table's number and the block's offset/length.
	require.Regexp(t, "file "+strings.TrimSuffix(filepath.Base(tables[0]), ".sst")+": block [0-9]+/[0-9]+: crc32c checksum mismatch", err.Error())
	require.NotContains(t, err.Error(), "carrier")
	require.Equal(t, before, dirSums(t, dir))
}

// dirSums maps each file of dir to its contents.
func dirSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(b)
	}
	return out
}
