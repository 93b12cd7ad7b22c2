package persistence

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/datatype"
	"github.com/throttledhq/throttled/keyspace"
)

// A big sorted set goes to the store and the redo log by the chunks each write changed
// (keyspace.Chunked): a crash image taken after many small writes, some in the store and
// the rest only in the redo log as changes, loads into exactly the set that was written.
func TestChunkedCrashReplay(t *testing.T) {
	live := t.TempDir()
	ks := keyspace.New(8)
	ks.SetObjectify(datatype.Objectify)
	s, err := Open(live, ks, Options{Now: func() int64 { return t0 }, Interval: time.Hour, Logger: testLogger(t)})
	require.NoError(t, err)
	key := []byte("log")
	b := collection.NewBig(nil, true)
	rng := rand.New(rand.NewPCG(1, 2))
	write := func(n int) {
		for range n {
			m := []byte("m" + strconv.Itoa(rng.IntN(20000)))
			if rng.IntN(4) == 0 {
				b.ZRemove(m)
			} else {
				b.ZAdd(m, float64(rng.IntN(1e6)), collection.ZAddFlags{})
			}
			set(ks, string(key), keyspace.Value{Kind: keyspace.ZSet, Num: int64(b.Len()), Num2: datatype.BigEncoding, Obj: b})
			require.NoError(t, s.Wait())
		}
	}
	write(20000)
	require.NoError(t, s.Save()) // the set in the store, chunk by chunk
	write(3000)                  // these in the redo log, as changes (and in a batch, if one was due)
	dir := t.TempDir()
	entries, err := os.ReadDir(live)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(live, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644))
	}
	want := b.AppendEncoded(nil)
	require.NoError(t, s.Close())
	logs, err := listRedo(s.redoFS, dir)
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	require.NotZero(t, logs[len(logs)-1].size, "the crash image has changes in its redo log")

	for _, d := range []string{dir, live} { // the crash image, and the store closed cleanly
		ks2 := keyspace.New(8)
		ks2.SetObjectify(datatype.Objectify)
		s2, err := Open(d, ks2, Options{Now: func() int64 { return t0 }, Logger: testLogger(t)})
		require.NoError(t, err)
		v, ok := get(ks2, string(key), t0)
		require.True(t, ok)
		require.IsType(t, &collection.Big{}, v.Obj)
		require.Equal(t, want, v.Obj.AppendEncoded(nil), d)
		require.NoError(t, s2.Close())
	}
}
