package keyspace

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestLockKeysOrder(t *testing.T) {
	ks := New(16)
	keys := make([][]byte, 50)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "k%d", i%20) // duplicates too
	}
	prior := &Shard{ord: -1}
	got := ks.LockKeys(keys, []*Shard{prior})
	require.Same(t, prior, got[0], "LockKeys appends to buf")
	locked := got[1:]
	for i := 1; i < len(locked); i++ {
		require.Less(t, locked[i-1].ord, locked[i].ord, "ascending and distinct")
	}
	for _, k := range keys {
		require.Contains(t, locked, ks.Shard(k))
		require.False(t, ks.Shard(k).mu.TryLock(), "locked")
	}
	UnlockShards(locked)
	for _, s := range locked {
		require.True(t, s.mu.TryLock(), "unlocked")
		s.mu.Unlock()
	}
	require.Empty(t, ks.LockKeys(nil, nil))
}

// TestLockKeysNoDeadlock has many goroutines lock overlapping random key sets and increment
// every key they locked; the counts prove the locks excluded each other.
func TestLockKeysNoDeadlock(t *testing.T) {
	ks := New(8)
	const workers, rounds, pool = 16, 2000, 40
	want := make([][pool]int64, workers)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			var buf []*Shard
			keys := make([][]byte, 0, 8)
			for range rounds {
				keys = keys[:0]
				for range 1 + r.IntN(8) {
					i := r.IntN(pool)
					keys = append(keys, fmt.Appendf(nil, "key%d", i))
					want[w][i]++
				}
				buf = ks.LockKeys(keys, buf[:0])
				for _, k := range keys {
					s := ks.Shard(k)
					v, _ := s.GetLocked(k, 0)
					v.Kind = GCRA
					v.Num++
					s.SetLocked(k, v)
				}
				UnlockShards(buf)
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("deadlock")
	}
	for i := range pool {
		total := int64(0)
		for w := range workers {
			total += want[w][i]
		}
		got, _ := get(ks, fmt.Sprint("key", i), 0)
		require.Equal(t, total, got.Num, "key%d", i)
	}
}

func TestConcurrentShards(t *testing.T) {
	ks := New(4)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 2))
			for i := range 20000 {
				k := fmt.Sprint("k", r.IntN(2000))
				switch r.IntN(4) {
				case 0:
					set(ks, k, Value{Kind: String, Expire: int64(i), Bytes: []byte(k)})
				case 1:
					del(ks, k)
				case 2:
					if v, ok := get(ks, k, int64(i/2)); ok {
						require.Equal(t, k, string(v.Bytes))
					}
				case 3:
					ks.ExpireCycle(int64(i), 50)
					_ = ks.Len() + ks.Expires()
					_ = ks.ExpiredTotal()
				}
			}
		}()
	}
	wg.Wait()
	checkInvariants(t, ks)
}

// TestShardHotLine checks that what a read or an INCR writes in its shard besides the entry
// (the lock, the lookups' counts, a short number's text in NumBuf) lies in the shard's first
// cache line, which the lock's transfer between cores brings along. A Shard is made alone,
// in a size class whose objects start on a line.
func TestShardHotLine(t *testing.T) {
	var s Shard
	require.LessOrEqual(t, unsafe.Offsetof(s.misses)+8, uintptr(64))
	require.LessOrEqual(t, unsafe.Offsetof(s.numBuf)+32, uintptr(64))
	require.Equal(t, uintptr(0), unsafe.Offsetof(s.mu))
}
