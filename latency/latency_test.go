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

// TestPercentiles records a long-tailed load from several goroutines at once, each into a
// recorder of its own and two into a shared one that a reader reads meanwhile, and compares
// the merged percentiles with the exact ones: within 1% from 1 us to 10 s.
func TestPercentiles(t *testing.T) {
	const cmd, n = 3, 8
	shared := NewShared(n)
	var all []int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	total := make([]*Snapshot, n)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := NewRecorder(n)
			record := rec.Record
			if g >= 4 {
				record = shared.Record
			}
			r := rand.New(rand.NewPCG(uint64(g), 7))
			mine := make([]int64, 0, 50000)
			for range 50000 {
				ns := int64(1000 * math.Exp(r.NormFloat64()*1.5+1)) // a log-normal around 2.7 us
				if r.IntN(1000) == 0 {
					ns = 1e6 + r.Int64N(1e10) // the tail: 1 ms to 10 s
				}
				record(cmd, ns)
				mine = append(mine, ns)
				if len(mine)%10000 == 0 {
					shared.AddTo(make([]*Snapshot, n)) // a reader meanwhile
				}
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, mine...)
			rec.AddTo(total)
		}()
	}
	wg.Wait()
	shared.AddTo(total)
	slices.Sort(all)
	snap := total[cmd]
	require.Equal(t, uint64(len(all)), snap.Total)
	for _, p := range []float64{50, 90, 99, 99.9, 99.99} {
		exact := all[int(math.Ceil(p/100*float64(len(all))))-1]
		require.InEpsilon(t, float64(exact), snap.Percentile(p), 0.01, "p%v", p)
	}
	for i, s := range total {
		if i != cmd {
			require.Nil(t, s, "a command never called has no histogram")
		}
	}
}

// TestRecorders: a recorder and a shared one count alike, merge, ignore command ids they do
// not have, and reset.
func TestRecorders(t *testing.T) {
	durations := []int64{-5, 0, 127, 128, 1500, 1500, 3e6, 1 << 40}
	type recorder interface {
		Record(cmd int, ns int64)
		AddTo([]*Snapshot)
		Reset()
	}
	for _, tc := range []struct {
		name string
		rec  recorder
	}{
		{"Recorder", NewRecorder(2)},
		{"Shared", NewShared(2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			record, addTo, reset := tc.rec.Record, tc.rec.AddTo, tc.rec.Reset
			for _, ns := range durations {
				record(1, ns)
			}
			record(2, 1000)  // no such command: not counted
			record(-1, 1000) // nor this one
			snaps := make([]*Snapshot, 3)
			addTo(snaps)
			require.Nil(t, snaps[0])
			require.Nil(t, snaps[2])
			require.Equal(t, uint64(len(durations)), snaps[1].Total)
			require.Equal(t, uint64(2), snaps[1].Counts[0], "a negative duration counts as 0")
			require.Equal(t, uint64(1), snaps[1].Counts[Buckets-1], "past 17 s, the last bucket")
			require.Equal(t, uint64(2), snaps[1].Counts[index(1500)])

			into := make([]*Snapshot, 3)
			Merge(into, snaps)
			Merge(into, snaps)
			require.Equal(t, 2*snaps[1].Total, into[1].Total)
			require.Equal(t, 2*snaps[1].Counts[index(3e6)], into[1].Counts[index(3e6)])

			reset()
			after := make([]*Snapshot, 3)
			addTo(after)
			require.Zero(t, after[1].Total)
			require.Nil(t, after[1].Steps())
		})
	}
}

// TestSteps: LATENCY HISTOGRAM's steps as Redis names them, cumulative, only where calls fell.
func TestSteps(t *testing.T) {
	rec := NewRecorder(1)
	for _, ns := range []int64{500, 900, 1500, 3000, 3100, 40000, 2e6} {
		rec.Record(0, ns)
	}
	snaps := make([]*Snapshot, 1)
	rec.AddTo(snaps)
	require.Equal(t, []Step{{1, 2}, {2, 3}, {4, 5}, {66, 6}, {2113, 7}}, snaps[0].Steps())
	require.Equal(t, uint64(5), snaps[0].Below(5000))
}

// BenchmarkRecord is the cost a command pays for its latency: on an event loop, and on a
// goroutine of its own (the shared recorders' atomic add).
func BenchmarkRecord(b *testing.B) {
	for _, tc := range []struct {
		name   string
		record func(int, int64)
	}{{"loop", NewRecorder(4).Record}, {"shared", NewShared(4).Record}} {
		b.Run(tc.name, func(b *testing.B) {
			ns := int64(1234)
			tc.record(2, ns)
			b.ReportAllocs()
			for b.Loop() {
				tc.record(2, ns)
				ns ^= 0x155
			}
		})
	}
}
