package keyspace

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func setKey(ks *Keyspace, key string, v Value) {
	s := ks.Shard([]byte(key))
	s.Lock()
	s.SetLocked([]byte(key), v)
	s.Unlock()
}

func idle(t *testing.T, ks *Keyspace, key string, now int64) int64 {
	t.Helper()
	s := ks.Shard([]byte(key))
	s.Lock()
	defer s.Unlock()
	n, ok := s.IdleLocked([]byte(key), now)
	require.True(t, ok, key)
	return n
}

func TestAccessClock(t *testing.T) {
	const sec = int64(1e9)
	base := int64(1_700_000_000) * sec
	ks := New(4)
	ks.SetClock(base)
	setKey(ks, "k", Value{Kind: String, Bytes: []byte("v")})
	setKey(ks, "g", Value{Kind: GCRA, Num: base, Expire: base + 3600*sec})
	setKey(ks, "long", Value{Kind: String, Bytes: make([]byte, 600)})
	ks.SetClock(base + 7*sec)
	for _, k := range []string{"k", "g", "long"} {
		require.Equal(t, int64(7), idle(t, ks, k, base), k)
	}

	t.Run("peek and idle note no access", func(t *testing.T) {
		s := ks.Shard([]byte("k"))
		s.Lock()
		_, ok := s.PeekLocked([]byte("k"), base)
		s.Unlock()
		require.True(t, ok)
		require.Equal(t, int64(7), idle(t, ks, "k", base))
	})
	t.Run("a read notes an access", func(t *testing.T) {
		s := ks.Shard([]byte("k"))
		s.Lock()
		_, ok := s.GetLocked([]byte("k"), base)
		s.Unlock()
		require.True(t, ok)
		require.Equal(t, int64(0), idle(t, ks, "k", base))
	})
	t.Run("writes note an access, in place or moved", func(t *testing.T) {
		setKey(ks, "g", Value{Kind: GCRA, Num: base + 1, Expire: base + 3600*sec}) // in place
		require.Equal(t, int64(0), idle(t, ks, "g", base))
		setKey(ks, "long", Value{Kind: String, Bytes: []byte("short now")}) // moves
		require.Equal(t, int64(0), idle(t, ks, "long", base))
	})
	t.Run("set idle", func(t *testing.T) {
		for _, tc := range []struct {
			idle, want int64
		}{{0, 0}, {100, 100}, {1 << 30, 1<<clockBits - clockMax/2}} {
			s := ks.Shard([]byte("k"))
			s.Lock()
			require.True(t, s.SetIdleLocked([]byte("k"), tc.idle))
			s.Unlock()
			require.Equal(t, tc.want, idle(t, ks, "k", base), "idle %d", tc.idle)
		}
	})
	t.Run("the clock wraps", func(t *testing.T) {
		ks := New(1)
		ks.SetClock(int64(clockMask) * sec)
		setKey(ks, "w", Value{Kind: String, Bytes: []byte("v")})
		ks.SetClock(int64(clockMask+3) * sec)
		require.Equal(t, int64(3), idle(t, ks, "w", 0))
	})
	t.Run("compaction keeps the clock", func(t *testing.T) {
		ks := New(1)
		ks.SetClock(base)
		for i := range 2000 {
			setKey(ks, "c"+strconv.Itoa(i), Value{Kind: String, Bytes: []byte("value")})
		}
		ks.SetClock(base + 5*sec)
		for i := range 1900 { // more than half of the blocks dies: their live entries move
			s := ks.Shard([]byte("c" + strconv.Itoa(i)))
			s.Lock()
			s.DeleteLocked([]byte("c" + strconv.Itoa(i)))
			s.Unlock()
		}
		for i := 1900; i < 2000; i++ {
			require.Equal(t, int64(5), idle(t, ks, "c"+strconv.Itoa(i), base))
		}
	})
}

func TestRandomKey(t *testing.T) {
	const now = int64(1_000_000)
	ks := New(8)
	_, ok := ks.RandomKey(now)
	require.False(t, ok, "empty")

	setKey(ks, "only", Value{Kind: String, Bytes: []byte("v")})
	for i := range 50 {
		setKey(ks, "gone"+strconv.Itoa(i), Value{Kind: String, Bytes: []byte("v"), Expire: now})
	}
	setKey(ks, "__policies", Value{Kind: Policies, Bytes: []byte("p")})
	for range 20 {
		k, ok := ks.RandomKey(now)
		require.True(t, ok)
		require.Equal(t, "only", string(k))
	}

	ks.Flush()
	for i := range 50 {
		setKey(ks, "gone"+strconv.Itoa(i), Value{Kind: String, Bytes: []byte("v"), Expire: now})
	}
	setKey(ks, "__policies", Value{Kind: Policies, Bytes: []byte("p")})
	_, ok = ks.RandomKey(now)
	require.False(t, ok, "expired keys and records only")
	require.Equal(t, 1, ks.Len(), "the expired keys were removed on the way; the record stays")

	seen := map[string]bool{}
	for i := range 20 {
		setKey(ks, "r"+strconv.Itoa(i), Value{Kind: String, Bytes: []byte("v")})
	}
	for range 2000 {
		k, ok := ks.RandomKey(now)
		require.True(t, ok)
		seen[string(k)] = true
	}
	require.Len(t, seen, 20)
}

func TestLRUEvictsTheLongestIdle(t *testing.T) {
	const sec = int64(1e9)
	ks := New(1)
	for i := range 1000 {
		ks.SetClock(int64(i) * sec)
		setKey(ks, "k"+strconv.Itoa(i), Value{Kind: String, Bytes: []byte("v")})
	}
	require.Equal(t, 500, ks.Evict(AllKeysLRU, 500, 10, 0))
	// Sampling 10 at a time evicts mostly the old half.
	old := 0
	for i := range 500 {
		s := ks.Shard([]byte("k" + strconv.Itoa(i)))
		s.Lock()
		if _, ok := s.PeekLocked([]byte("k"+strconv.Itoa(i)), 0); ok {
			old++
		}
		s.Unlock()
	}
	require.Less(t, old, 100, "keys of the older half left")
}
