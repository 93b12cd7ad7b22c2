package keyspace

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

const benchKeys = 1 << 20

// gcraKeys returns n 14-byte keys such as "user:000000042".
func gcraKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user:%09d", i)
	}
	return keys
}

// shuffled returns the keys of gcraKeys(n) back to back in a random order, so that a
// benchmark reads its keys sequentially while the keyspace sees random keys, as a server
// with many clients does.
func shuffled(n int) []byte {
	keys := gcraKeys(n)
	flat := make([]byte, 0, 14*n)
	for _, i := range rand.New(rand.NewPCG(1, 2)).Perm(n) {
		flat = append(flat, keys[i]...)
	}
	return flat
}

func filled(n int) *Keyspace {
	ks := New(256)
	for i, k := range gcraKeys(n) {
		s := ks.Shard(k)
		s.Lock()
		s.SetLocked(k, Value{Kind: GCRA, Expire: 2e18, Num: int64(i)})
		s.Unlock()
	}
	return ks
}

// throttle is the server's path for an existing GCRA key: lock, read, write back, unlock.
func throttle(ks *Keyspace, k []byte, now int64) {
	s := ks.Shard(k)
	s.Lock()
	v, _ := s.GetLocked(k, now)
	v.Num = max(v.Num, now) + 1000
	v.Expire = v.Num + 1e9
	v.Kind = GCRA
	s.SetLocked(k, v)
	s.Unlock()
}

// BenchmarkGetSetExisting is GetLocked + SetLocked of random existing keys among 1M.
func BenchmarkGetSetExisting(b *testing.B) {
	ks, flat := filled(benchKeys), shuffled(benchKeys)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % benchKeys * 14
		throttle(ks, flat[j:j+14], 1e18)
	}
}

// BenchmarkGetSetHot is the same on 1,000 keys, which stay in the CPU caches.
func BenchmarkGetSetHot(b *testing.B) {
	ks, flat := filled(1000), shuffled(1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % 1000 * 14
		throttle(ks, flat[j:j+14], 1e18)
	}
}

func BenchmarkGetSetExistingParallel(b *testing.B) {
	ks, flat := filled(benchKeys), shuffled(benchKeys)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(benchKeys)
		for pb.Next() {
			j := i % benchKeys * 14
			throttle(ks, flat[j:j+14], 1e18)
			i++
		}
	})
}

func BenchmarkGetMissing(b *testing.B) {
	ks, flat := filled(benchKeys), shuffled(2*benchKeys)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % (2 * benchKeys) * 14
		k := flat[j : j+14]
		s := ks.Shard(k)
		s.Lock()
		s.GetLocked(k, 0)
		s.Unlock()
	}
}

// BenchmarkInsert inserts new keys, index resizes and new blocks included.
func BenchmarkInsert(b *testing.B) {
	flat := shuffled(benchKeys)
	b.ReportAllocs()
	b.ResetTimer()
	ks := New(256)
	for i := range b.N {
		if i%benchKeys == 0 && i > 0 {
			b.StopTimer()
			ks = New(256)
			b.StartTimer()
		}
		j := i % benchKeys * 14
		k := flat[j : j+14]
		s := ks.Shard(k)
		s.Lock()
		s.SetLocked(k, Value{Kind: GCRA, Expire: 1e18, Num: int64(i)})
		s.Unlock()
	}
}

// BenchmarkInsertExpire is the steady state of a rate limiter: each key comes back every 1M
// calls but is idle after 500k, so half the calls create a key, and ExpireCycle removes
// the idle ones.
func BenchmarkInsertExpire(b *testing.B) {
	flat := shuffled(benchKeys)
	ks := New(256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now := int64(i)
		j := i % benchKeys * 14
		k := flat[j : j+14]
		s := ks.Shard(k)
		s.Lock()
		v, _ := s.GetLocked(k, now)
		s.SetLocked(k, Value{Kind: GCRA, Num: v.Num + 1, Expire: now + benchKeys/2})
		s.Unlock()
		if i%1000 == 0 {
			ks.ExpireCycle(now, 2000)
		}
	}
}

func BenchmarkScan(b *testing.B) {
	ks := filled(benchKeys)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	cursor := uint64(0)
	for range b.N {
		cursor = ks.Scan(cursor, 1, 0, func([]byte, Value) { n++ })
	}
}

// logFilled returns a keyspace of n keys, each holding a sliding log of logValue bytes.
func logFilled(n int) *Keyspace {
	ks := New(256)
	val := make([]byte, logValue)
	for i, k := range gcraKeys(n) {
		s := ks.Shard(k)
		s.Lock()
		s.SetLocked(k, Value{Kind: SlidingLog, Expire: 2e18, Num: int64(i), Bytes: val})
		s.Unlock()
	}
	return ks
}

// slide is the server's path for an existing sliding-log key: the new log is built in a
// scratch buffer, 3 bytes longer than the old one (an admission), dropping its oldest 3
// bytes once it has 48 (admissions that left the window), and written back.
func slide(ks *Keyspace, k []byte, now int64, scratch []byte) []byte {
	s := ks.Shard(k)
	s.Lock()
	v, _ := s.GetLocked(k, now)
	old := v.Bytes
	if len(old) >= 48 {
		old = old[3:]
	}
	v.Bytes = append(append(scratch[:0], old...), 1, 2, 3)
	v.Expire = now + 1e9
	s.SetLocked(k, v)
	s.Unlock()
	return v.Bytes
}

// BenchmarkGetSetLogExisting is GetLocked + SetLocked of random existing sliding-log keys
// among 1M, their value changing size at most writes.
func BenchmarkGetSetLogExisting(b *testing.B) {
	ks, flat := logFilled(benchKeys), shuffled(benchKeys)
	var scratch []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % benchKeys * 14
		scratch = slide(ks, flat[j:j+14], 1e18, scratch)
	}
}

// BenchmarkGetSetLogHot is the same on 1,000 keys, which stay in the CPU caches.
func BenchmarkGetSetLogHot(b *testing.B) {
	ks, flat := logFilled(1000), shuffled(1000)
	var scratch []byte
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % 1000 * 14
		scratch = slide(ks, flat[j:j+14], 1e18, scratch)
	}
}

// discard is a Recorder that keeps nothing, as cheap as a feed's consumer can be.
type discard struct{ n int }

func (d *discard) Delete([]byte)     {}
func (d *discard) Put([]byte, Value) { d.n++ }
func (d *discard) Full() bool        { return false }

// BenchmarkTrackedWrites writes GCRA states to random keys among 100,000 with one feed
// tracking, drained every 2,000 writes (a millisecond of a busy primary): the cost a feed
// adds to a write, on both sides of the drain. The disk's feed queues record ids and reads
// the entries back at the drain; the replicas' copies each change as it is written.
func BenchmarkTrackedWrites(b *testing.B) {
	for _, f := range []struct {
		name string
		feed Feed
	}{{"none", feeds}, {"disk", DiskFeed}, {"replica", ReplicaFeed}} {
		b.Run(f.name, func(b *testing.B) {
			const n = 100_000
			ks := filled(n)
			if f.feed != feeds {
				ks.Track(f.feed, true)
			}
			keys := shuffled(n)
			var r discard
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := keys[(i%n)*14 : (i%n)*14+14]
				s := ks.Shard(k)
				s.Lock()
				v, _ := s.GetLocked(k, 0)
				v.Num++
				s.SetLocked(k, v)
				s.Unlock()
				if f.feed != feeds && i%2000 == 1999 {
					for j := range ks.Shards() {
						ks.Drain(f.feed, j, &r)
					}
				}
			}
		})
	}
}

// BenchmarkGetSetBatch is BenchmarkGetSetExisting by batches of 16 keys, as a pipeline
// brings them, without and with Prefetch of the batch first; ns/op is per key.
func BenchmarkGetSetBatch(b *testing.B) {
	ks, flat := filled(benchKeys), shuffled(benchKeys)
	const batch = 16
	for _, pre := range []bool{false, true} {
		b.Run(fmt.Sprintf("prefetch=%v", pre), func(b *testing.B) {
			keys := make([][]byte, batch)
			b.ReportAllocs()
			for i := 0; i < b.N; i += batch {
				for k := range keys {
					j := (i + k) % benchKeys * 14
					keys[k] = flat[j : j+14]
				}
				if pre {
					ks.Prefetch(keys)
				}
				for _, k := range keys {
					throttle(ks, k, 1e18)
				}
			}
		})
	}
}
