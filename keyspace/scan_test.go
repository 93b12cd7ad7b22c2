package keyspace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// scanAll runs a whole iteration and returns how often each key came back.
func scanAll(ks *Keyspace, count int, now int64) map[string]int {
	seen := map[string]int{}
	for cursor := uint64(0); ; {
		cursor = ks.Scan(cursor, count, now, func(key []byte, v Value) { seen[string(key)]++ })
		if cursor == 0 {
			return seen
		}
	}
}

func TestScanFull(t *testing.T) {
	for _, tc := range []struct{ shards, keys, count int }{
		{1, 0, 10}, {1, 1, 10}, {1, 5000, 1}, {16, 5000, 10}, {256, 3000, 100}, {4, 10000, 100000}, {4, 100, 0},
	} {
		t.Run(fmt.Sprintf("%d shards %d keys count %d", tc.shards, tc.keys, tc.count), func(t *testing.T) {
			ks := New(tc.shards)
			for i := range tc.keys {
				v := Value{Kind: GCRA, Num: int64(i)}
				if i%3 == 0 {
					v.Expire = 100 // expired at the scan's now: skipped
				}
				set(ks, fmt.Sprint("key", i), v)
			}
			// Holes in the record ids.
			for i := 1; i < tc.keys; i += 7 {
				del(ks, fmt.Sprint("key", i))
			}
			seen := scanAll(ks, tc.count, 100)
			want := map[string]int{}
			for i := range tc.keys {
				if i%3 != 0 && (i < 1 || (i-1)%7 != 0) {
					want[fmt.Sprint("key", i)] = 1
				}
			}
			require.Equal(t, want, seen)
		})
	}
}

func TestScanCountIsApproximate(t *testing.T) {
	ks := New(1)
	for i := range 1000 {
		set(ks, fmt.Sprint(i), Value{Kind: GCRA})
	}
	n := 0
	cursor := ks.Scan(0, 10, 0, func([]byte, Value) { n++ })
	require.NotZero(t, cursor)
	require.Equal(t, 10, n)
}

func TestScanBadCursor(t *testing.T) {
	ks := New(4)
	for i := range 2000 {
		set(ks, fmt.Sprint(i), Value{Kind: GCRA})
	}
	r := rand.New(rand.NewPCG(1, 2))
	cursors := []uint64{1, math.MaxUint64, math.MaxUint32, 3 << 32, 4 << 32, 1<<32 | math.MaxUint32, 5000, 0xdeadbeef}
	for range 100 {
		cursors = append(cursors, r.Uint64(), r.Uint64N(4<<32))
	}
	for _, c := range cursors {
		calls := 0
		for ; c != 0; calls++ {
			c = ks.Scan(c, 10, 0, func([]byte, Value) {})
			require.Less(t, calls, 1000, "the iteration ends")
		}
	}
}

// TestScanConcurrentWrites checks Redis's guarantee: a key present for the whole iteration is
// returned, while other goroutines insert, delete and rewrite keys, moving arena entries,
// compacting blocks and resizing indexes.
func TestScanConcurrentWrites(t *testing.T) {
	ks := New(8)
	const stable = 3000
	for i := range stable {
		set(ks, fmt.Sprint("stable", i), Value{Kind: GCRA, Num: int64(i)})
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for !stop.Load() {
				for range 1000 {
					k := fmt.Sprint("churn", r.IntN(30000))
					switch r.IntN(3) {
					case 0:
						set(ks, k, Value{Kind: String, Bytes: make([]byte, r.IntN(30))})
					case 1:
						del(ks, k)
					case 2:
						// Rewrite a stable key: a new kind, Num2 toggling moves its entry.
						i := r.IntN(stable)
						set(ks, fmt.Sprint("stable", i), Value{Kind: Kind(1 + r.IntN(2)), Num: int64(i), Num2: r.Int64N(2), Bytes: make([]byte, r.IntN(3))})
					}
				}
				// Waves: sometimes delete a lot, so that blocks empty and indexes shrink.
				if r.IntN(10) == 0 {
					for i := range 30000 {
						del(ks, fmt.Sprint("churn", i))
					}
				}
			}
		}()
	}
	for iter := range 20 {
		seen := scanAll(ks, 1+iter%20, 0)
		for i := range stable {
			require.Positive(t, seen[fmt.Sprint("stable", i)], "iteration %d missed stable%d", iter, i)
		}
	}
	stop.Store(true)
	wg.Wait()
	checkInvariants(t, ks)
}
