package latency

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBuckets: every duration falls in the bucket whose bounds hold it, and a bucket's
// middle is within 0.8% of every duration in it.
func TestBuckets(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for range 100000 {
		ns := int64(math.Exp(r.Float64() * math.Log(1<<34)))
		i := index(ns)
		lo, hi := bounds(i)
		require.True(t, lo <= ns && ns < hi, "%d in bucket %d [%d, %d)", ns, i, lo, hi)
		if ns >= 1000 {
			require.InEpsilon(t, float64(ns), Mid(i), 0.008, "%d", ns)
		}
	}
	require.Equal(t, Buckets-1, index(1<<40))
	require.Equal(t, 0, index(-5))
	for i := 1; i < Buckets; i++ {
		_, hi := bounds(i - 1)
		lo, _ := bounds(i)
		require.Equal(t, hi, lo, "bucket %d follows %d", i, i-1)
	}
}

// TestPercentiles records a long-tailed load from several recorders at once and compares
// the merged percentiles with the exact ones: within 1% from 1 us to 10 s.
func TestPercentiles(t *testing.T) {
	var set Set
	const cmd = 3
	var all []int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		rec := NewRecorder(8)
		set.Add(rec)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			mine := make([]int64, 0, 50000)
			for range 50000 {
				ns := int64(1000 * math.Exp(r.NormFloat64()*1.5+1)) // a log-normal around 2.7 us
				if r.IntN(1000) == 0 {
					ns = 1e6 + r.Int64N(1e10) // the tail: 1 ms to 10 s
				}
				rec.Record(cmd, ns)
				mine = append(mine, ns)
				if len(mine)%10000 == 0 {
					set.Merge(cmd) // a reader meanwhile
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(all)
	snap, ok := set.Merge(cmd)
	require.True(t, ok)
	require.Equal(t, uint64(len(all)), snap.Total)
	for _, p := range []float64{50, 90, 99, 99.9, 99.99} {
		exact := all[int(math.Ceil(p/100*float64(len(all))))-1]
		require.InEpsilon(t, float64(exact), snap.Percentile(p), 0.01, "p%v", p)
	}
	_, ok = set.Merge(cmd + 1)
	require.False(t, ok, "a command never called has no histogram")
	set.Reset()
	snap, _ = set.Merge(cmd)
	require.Nil(t, snap.Steps())
	require.Zero(t, snap.Total)
}

// TestSteps: LATENCY HISTOGRAM's steps as Redis names them, cumulative, only where calls fell.
func TestSteps(t *testing.T) {
	var set Set
	rec := NewRecorder(1)
	set.Add(rec)
	for _, ns := range []int64{500, 900, 1500, 3000, 3100, 40000, 2e6} {
		rec.Record(0, ns)
	}
	snap, _ := set.Merge(0)
	require.Equal(t, []Step{{1, 2}, {2, 3}, {4, 5}, {66, 6}, {2113, 7}}, snap.Steps())
	require.Equal(t, uint64(5), snap.Below(5000))
}

// BenchmarkRecord is the cost a command pays for its latency.
func BenchmarkRecord(b *testing.B) {
	rec := NewRecorder(4)
	ns := int64(1234)
	for b.Loop() {
		rec.Record(2, ns)
		ns ^= 0x155
	}
}
