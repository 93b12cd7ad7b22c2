package persistence

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/keyspace"
)

const t0 = int64(1_700_000_000) * int64(time.Second)

// testLogger logs to the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimSpace(p)))
	return len(p), nil
}

// open opens dir with a keyspace of 8 shards at time now.
func open(t testing.TB, dir string, now int64, o Options) (*Store, *keyspace.Keyspace) {
	t.Helper()
	ks := keyspace.New(8)
	o.Now = func() int64 { return now }
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	s, err := Open(dir, ks, o)
	require.NoError(t, err)
	return s, ks
}

func set(ks *keyspace.Keyspace, key string, v keyspace.Value) {
	sh := ks.Shard([]byte(key))
	sh.Lock()
	sh.SetLocked([]byte(key), v)
	sh.Unlock()
}

func get(ks *keyspace.Keyspace, key string, now int64) (keyspace.Value, bool) {
	sh := ks.Shard([]byte(key))
	sh.Lock()
	defer sh.Unlock()
	v, ok := sh.GetLocked([]byte(key), now)
	v.Bytes = bytes.Clone(v.Bytes)
	return v, ok
}

func del(ks *keyspace.Keyspace, key string) {
	sh := ks.Shard([]byte(key))
	sh.Lock()
	sh.DeleteLocked([]byte(key))
	sh.Unlock()
}

// contents returns every key and value of ks live at now.
func contents(ks *keyspace.Keyspace, now int64) map[string]keyspace.Value {
	m := map[string]keyspace.Value{}
	for cursor := uint64(0); ; {
		cursor = ks.Scan(cursor, 100, now, func(key []byte, v keyspace.Value) {
			v.Bytes = bytes.Clone(v.Bytes)
			m[string(key)] = v
		})
		if cursor == 0 {
			return m
		}
	}
}

func TestRestartKeepsState(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s, ks := open(t, dir, t0, Options{})
	want := map[string]keyspace.Value{
		"gcra":    {Kind: keyspace.GCRA, Num: t0 + 5e9, Expire: t0 + 10e9},
		"string":  {Kind: keyspace.String, Bytes: []byte("hello")},
		"wide":    {Kind: keyspace.TokenBucket, Num: -1, Num2: 7, Expire: t0 + 1e9},
		"":        {Kind: keyspace.String, Bytes: []byte{0, 1, 2}},
		"kind 63": {Kind: keyspace.MaxKind, Num: 1}, // a kind from a later server
	}
	for k, v := range want {
		set(ks, k, v)
	}
	set(ks, "deleted", keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	require.NoError(t, s.Save())
	del(ks, "deleted")
	require.NoError(t, s.Close())

	s, ks = open(t, dir, t0, Options{})
	defer s.Close()
	require.Equal(t, want, contents(ks, t0))
	require.Equal(t, len(want), s.Info().LoadedKeys)
}

// TestBurstInPieces writes a burst of new keys, with a FLUSHALL before it, in pieces of
// about pieceBytes, never as one batch the size of the burst, and keeps every key.
func TestBurstInPieces(t *testing.T) {
	dir := t.TempDir()
	s, ks := open(t, dir, t0, Options{})
	set(ks, "before flushall", keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	require.NoError(t, s.Save())
	require.NoError(t, s.FlushAll())
	batches := s.Info().Batches

	const n = 20_000 // about 520 bytes a key in a piece: three pieces
	want := map[string]keyspace.Value{}
	s.drainMu.Lock() // hold the writer off until the whole burst is in
	for i := range n {
		k := fmt.Sprintf("burst:%08d", i)
		v := keyspace.Value{Kind: keyspace.String, Bytes: fmt.Appendf(nil, "%0500d", i), Expire: t0 + 1e12}
		set(ks, k, v)
		want[k] = v
	}
	s.drainMu.Unlock()
	require.NoError(t, s.Save())
	in := s.Info()
	require.GreaterOrEqual(t, in.Batches-batches, int64(3), "a burst of %d keys goes in pieces", n)
	require.Equal(t, int64(n), in.KeysWritten-1)
	require.NoError(t, s.Close())

	s, ks = open(t, dir, t0, Options{})
	defer s.Close()
	require.Equal(t, want, contents(ks, t0))
}

func TestRecorderPieceSize(t *testing.T) {
	var r recorder
	v := keyspace.Value{Kind: keyspace.String, Bytes: make([]byte, 100)}
	for i := 0; !r.Full(); i++ {
		r.Put([]byte(strconv.Itoa(i)), v)
	}
	b := new(pebble.Batch)
	r.writeTo(b)
	require.InDelta(t, pieceBytes, len(b.Repr()), pieceBytes/10, "a full recorder makes a batch of about pieceBytes")
}

func TestExpiredDroppedAtLoad(t *testing.T) {
	dir := t.TempDir()
	s, ks := open(t, dir, t0, Options{})
	set(ks, "short", keyspace.Value{Kind: keyspace.GCRA, Num: t0, Expire: t0 + 5e9})
	set(ks, "long", keyspace.Value{Kind: keyspace.GCRA, Num: t0, Expire: t0 + 50e9})
	require.NoError(t, s.Close())

	// The server was down for 10 s of wall time: the TTLs kept counting.
	later := t0 + 10e9
	s, ks = open(t, dir, later, Options{})
	require.Equal(t, map[string]keyspace.Value{"long": {Kind: keyspace.GCRA, Num: t0, Expire: t0 + 50e9}}, contents(ks, later))
	require.Equal(t, 1, s.Info().ExpiredAtLoad)
	require.NoError(t, s.Close())

	// The expired key was deleted from the store too, not only skipped.
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	_, _, err = db.Get(dataKey(nil, []byte("short")))
	require.ErrorIs(t, err, pebble.ErrNotFound)
}

func TestFsyncModes(t *testing.T) {
	for _, mode := range []Fsync{Always, EverySec, No} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			s, ks := open(t, dir, t0, Options{Fsync: mode})
			for i := range 1000 {
				set(ks, strconv.Itoa(i%10), keyspace.Value{Kind: keyspace.GCRA, Num: int64(i)})
			}
			require.NoError(t, s.Wait())
			if mode == Always {
				require.Zero(t, s.Info().Changes, "Wait returns once the changes are synced")
			}
			require.NoError(t, s.Save())
			in := s.Info()
			require.Zero(t, in.Changes)
			require.Equal(t, int64(10), in.KeysWritten, "ten keys changed a thousand times: ten writes")
			require.NoError(t, s.Close())
		})
	}
}

func TestParseFsync(t *testing.T) {
	for _, f := range []Fsync{Always, EverySec, No} {
		got, err := ParseFsync(f.String())
		require.NoError(t, err)
		require.Equal(t, f, got)
	}
	_, err := ParseFsync("sometimes")
	require.ErrorContains(t, err, `"sometimes"`)
}

func TestFlushAll(t *testing.T) {
	dir := t.TempDir()
	s, ks := open(t, dir, t0, Options{})
	for i := range 100 {
		set(ks, fmt.Sprint(i), keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	}
	require.NoError(t, s.Save())
	require.NoError(t, s.FlushAll())
	set(ks, "after", keyspace.Value{Kind: keyspace.GCRA, Num: 2})
	require.NoError(t, s.Close())
	s, ks = open(t, dir, t0, Options{})
	defer s.Close()
	require.Equal(t, map[string]keyspace.Value{"after": {Kind: keyspace.GCRA, Num: 2}}, contents(ks, t0))
}

func TestForeignDirectories(t *testing.T) {
	t.Run("files", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
		_, err := Open(dir, keyspace.New(1), Options{})
		require.ErrorIs(t, err, ErrNotThrottled)
		require.ErrorContains(t, err, `"notes.txt"`)
		names, _ := os.ReadDir(dir)
		require.Len(t, names, 1)
	})
	t.Run("a file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "f")
		require.NoError(t, os.WriteFile(path, nil, 0o644))
		_, err := Open(path, keyspace.New(1), Options{})
		require.ErrorIs(t, err, ErrNotThrottled)
	})
	t.Run("another pebble store", func(t *testing.T) {
		dir := t.TempDir()
		db, err := pebble.Open(dir, &pebble.Options{})
		require.NoError(t, err)
		require.NoError(t, db.Set([]byte("theirs"), []byte("v"), pebble.Sync))
		require.NoError(t, db.Close())
		before := snapshot(t, dir)
		_, err = Open(dir, keyspace.New(1), Options{})
		require.ErrorIs(t, err, ErrNotThrottled)
		require.Equal(t, before, snapshot(t, dir))
	})
	t.Run("newer format", func(t *testing.T) {
		dir := t.TempDir()
		s, _ := open(t, dir, t0, Options{})
		require.NoError(t, s.Close())
		db, err := pebble.Open(dir, &pebble.Options{})
		require.NoError(t, err)
		require.NoError(t, db.Set(metaKey, []byte(strconv.Itoa(formatVersion+1)), pebble.Sync))
		require.NoError(t, db.Close())
		_, err = Open(dir, keyspace.New(1), Options{})
		require.ErrorIs(t, err, ErrNewer)
	})
	t.Run("older format", func(t *testing.T) {
		// Read as it is, and marked with this server's format once opened: what it writes
		// there an older server must refuse.
		dir := t.TempDir()
		s, ks := open(t, dir, t0, Options{})
		set(ks, "k", keyspace.Value{Kind: keyspace.GCRA, Num: 7})
		require.NoError(t, s.Close())
		marker := func(v string) string {
			db, err := pebble.Open(dir, &pebble.Options{})
			require.NoError(t, err)
			defer db.Close()
			if v != "" {
				require.NoError(t, db.Set(metaKey, []byte(v), pebble.Sync))
			}
			got, closer, err := db.Get(metaKey)
			require.NoError(t, err)
			defer closer.Close()
			return string(got)
		}
		marker("1")
		s, ks = open(t, dir, t0, Options{})
		require.Equal(t, int64(7), contents(ks, t0)["k"].Num)
		require.NoError(t, s.Close())
		require.Equal(t, strconv.Itoa(formatVersion), marker(""))
	})
}

func TestDamagedManifest(t *testing.T) {
	dir := t.TempDir()
	s, ks := open(t, dir, t0, Options{})
	for i := range 1000 {
		set(ks, fmt.Sprint(i), keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	}
	require.NoError(t, s.Close())
	names, err := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, n := range names {
		b, err := os.ReadFile(n)
		require.NoError(t, err)
		for i := 8; i < len(b); i += 16 {
			b[i] ^= 0xff
		}
		require.NoError(t, os.WriteFile(n, b, 0o644))
	}
	before := snapshot(t, dir)
	ks = keyspace.New(8)
	_, err = Open(dir, ks, Options{Logger: testLogger(t)})
	t.Log(err)
	require.ErrorIs(t, err, ErrDamaged)
	require.Zero(t, ks.Len())
	require.Equal(t, before, snapshot(t, dir), "nothing deleted, added or rewritten")
}

// snapshot maps every file of dir to its contents.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		m[e.Name()] = string(b)
	}
	return m
}

var _ = vfs.NewMem

// TestCheckpointGoesWithItsChanges: the checkpoint is stored with the changes drained after
// it was taken, survives a restart, and an empty one deletes it, with FLUSHALL's batch.
func TestCheckpointGoesWithItsChanges(t *testing.T) {
	dir := t.TempDir()
	var mark atomic.Pointer[[]byte]
	setMark := func(s string) { b := []byte(s); mark.Store(&b) }
	opts := Options{Checkpoint: func() []byte { return *mark.Load() }}
	setMark("one")
	s, ks := open(t, dir, t0, opts)
	require.Nil(t, s.Checkpoint())
	set(ks, "k", keyspace.Value{Kind: keyspace.GCRA, Num: 1})
	require.NoError(t, s.Save())
	setMark("two") // no change drained with it: not stored
	require.NoError(t, s.Close())

	s, ks = open(t, dir, t0, opts)
	require.Equal(t, []byte("one"), s.Checkpoint())
	setMark("")
	require.NoError(t, s.FlushAll())
	require.NoError(t, s.Close())

	s, _ = open(t, dir, t0, Options{})
	defer s.Close()
	require.Nil(t, s.Checkpoint(), "deleted with the FLUSHALL")
	require.Empty(t, contents(ks, t0))
}
