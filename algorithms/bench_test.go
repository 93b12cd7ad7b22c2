package algorithms

import (
	"strconv"
	"testing"
)

// Each benchmark drives one existing key per goroutine as the server would:
// the state goes in, the stored state comes back and is kept, and two
// scratch buffers take turns (a new state must not overlap the old). The
// limits are boxed in an Algorithm once, as a server holding them would:
// converting a struct to an interface on every call would allocate.

// bench runs a on a key that prepare has filled, calling step for each
// call's time and cost.
func bench(b *testing.B, a func(i int) Algorithm, prepare int, step func(i int) (at, cost int64)) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var st State
		var exists bool
		var bufs [2][]byte
		take := func(i int) {
			at, cost := step(i)
			_, next, store, err := a(i).Take(at, st, exists, cost, bufs[i&1][:0])
			if err != nil {
				b.Fatal(err)
			}
			if store {
				st, exists = next, true
				bufs[i&1] = next.Bytes
			}
		}
		i := 0
		for ; i < prepare; i++ {
			take(i)
		}
		for pb.Next() {
			take(i)
			i++
		}
	})
}

func BenchmarkTokenBucket(b *testing.B) {
	var p Algorithm = TokenBucket{Capacity: 100, Refill: 3_000_000, Period: 7 * sec}
	bench(b, func(int) Algorithm { return p }, 0, func(i int) (int64, int64) { return base + int64(i)*1000, 1 })
}

func BenchmarkLeakyBucket(b *testing.B) {
	var p Algorithm = LeakyBucket{Capacity: 100, Leak: 3_000_000, Period: 7 * sec}
	bench(b, func(int) Algorithm { return p }, 0, func(i int) (int64, int64) { return base + int64(i)*1000, 1 })
}

func BenchmarkSlidingLog(b *testing.B) {
	// An admission every 600ms in a one-minute window: 100 in the log, and
	// each call drops the oldest.
	var p Algorithm = SlidingLog{Limit: 1000, Window: 60 * sec}
	bench(b, func(int) Algorithm { return p }, 100, func(i int) (int64, int64) { return base + int64(i)*600*ms, 1 })
}

func BenchmarkSlidingLogGrowing(b *testing.B) {
	// SLIDE's load test: each key gets a handful of admissions, none of which
	// leaves the one-minute window, so every call appends to the log. Here a
	// key gets 20, 200ms apart (3-byte entries), and is then dropped for a new
	// one: logs of 10 entries on average.
	var p Algorithm = SlidingLog{Limit: 100, Window: 60 * sec}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var st State
		var bufs [2][]byte
		for i := 0; pb.Next(); i++ {
			n := i % 20
			_, next, store, err := p.Take(base+int64(n)*200*ms, st, n > 0, 1, bufs[i&1][:0])
			if err != nil || !store {
				b.Fatal(err, store)
			}
			st, bufs[i&1] = next, next.Bytes
		}
	})
}

func BenchmarkSlidingCounter(b *testing.B) {
	var p Algorithm = SlidingCounter{Limit: 1_000_000, Window: sec}
	bench(b, func(int) Algorithm { return p }, 0, func(i int) (int64, int64) { return base + int64(i)*1000, 1 })
}

func BenchmarkFixedWindow(b *testing.B) {
	var p Algorithm = FixedWindow{Limit: 1_000_000, Window: sec}
	bench(b, func(int) Algorithm { return p }, 0, func(i int) (int64, int64) { return base + int64(i)*1000, 1 })
}

func BenchmarkConcurrency(b *testing.B) {
	// 50 holders with 16-byte ids renewing in turn, one every 100µs.
	ids := make([]Algorithm, 50)
	for i := range ids {
		ids[i] = Concurrency{Limit: 100, Lease: 10 * sec, ID: []byte("worker-" + strconv.Itoa(100000000+i))}
	}
	bench(b, func(i int) Algorithm { return ids[i%len(ids)] }, 50, func(i int) (int64, int64) { return base + int64(i)*100_000, 1 })
}
