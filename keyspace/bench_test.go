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

func filled(keys [][]byte) *Keyspace {
	ks := New(256)
	for i, k := range keys {
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

func BenchmarkGetSetExisting(b *testing.B) {
	keys := gcraKeys(benchKeys)
	ks := filled(keys)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		throttle(ks, keys[i&(benchKeys-1)], 1e18)
	}
}

func BenchmarkGetSetExistingParallel(b *testing.B) {
	keys := gcraKeys(benchKeys)
	ks := filled(keys)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		for pb.Next() {
			throttle(ks, keys[r.IntN(benchKeys)], 1e18)
		}
	})
}

func BenchmarkGetMissing(b *testing.B) {
	keys := gcraKeys(2 * benchKeys)
	ks := filled(keys[:benchKeys])
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := keys[benchKeys+i&(benchKeys-1)]
		s := ks.Shard(k)
		s.Lock()
		s.GetLocked(k, 0)
		s.Unlock()
	}
}

// BenchmarkInsert inserts new keys, resizes and chunk allocations included.
func BenchmarkInsert(b *testing.B) {
	keys := gcraKeys(benchKeys)
	b.ReportAllocs()
	b.ResetTimer()
	ks := New(256)
	for i := range b.N {
		if i&(benchKeys-1) == 0 {
			b.StopTimer()
			ks = New(256)
			b.StartTimer()
		}
		k := keys[i&(benchKeys-1)]
		s := ks.Shard(k)
		s.Lock()
		s.SetLocked(k, Value{Kind: GCRA, Expire: 1e18, Num: int64(i)})
		s.Unlock()
	}
}

// BenchmarkInsertExpire is the steady state of a rate limiter: new keys come, idle ones are
// expired by ExpireCycle.
func BenchmarkInsertExpire(b *testing.B) {
	keys := gcraKeys(benchKeys)
	ks := New(256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		now := int64(i)
		k := keys[i&(benchKeys-1)]
		s := ks.Shard(k)
		s.Lock()
		v, _ := s.GetLocked(k, now)
		// Each key comes back every benchKeys calls, but is idle after benchKeys/2: half
		// the calls insert a new key.
		s.SetLocked(k, Value{Kind: GCRA, Num: v.Num + 1, Expire: now + benchKeys/2})
		s.Unlock()
		if i%1000 == 0 {
			ks.ExpireCycle(now, 2000)
		}
	}
}

func BenchmarkScan(b *testing.B) {
	keys := gcraKeys(benchKeys)
	ks := filled(keys)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	cursor := uint64(0)
	for range b.N {
		cursor = ks.Scan(cursor, 1, 0, func([]byte, Value) { n++ })
	}
}
