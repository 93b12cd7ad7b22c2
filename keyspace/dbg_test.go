package keyspace
import ("testing";"math/rand/v2")
func BenchmarkDbgRandomSerial(b *testing.B) {
	keys := gcraKeys(benchKeys)
	ks := filled(keys)
	r := rand.New(rand.NewPCG(1, 0))
	b.ResetTimer()
	for range b.N { throttle(ks, keys[r.IntN(benchKeys)], 1e18) }
}
func BenchmarkDbgSmallParallel(b *testing.B) {
	keys := gcraKeys(4096)
	ks := filled(keys)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 0))
		for pb.Next() { throttle(ks, keys[r.IntN(4096)], 1e18) }
	})
}
func BenchmarkDbgSmallSerial(b *testing.B) {
	keys := gcraKeys(4096)
	ks := filled(keys)
	r := rand.New(rand.NewPCG(1, 0))
	b.ResetTimer()
	for range b.N { throttle(ks, keys[r.IntN(4096)], 1e18) }
}
func BenchmarkDbgMapRandomSerial(b *testing.B) {
	keys := gcraKeys(benchKeys)
	type entry struct{ kind Kind; expire, num, num2 int64; bytes []byte }
	m := map[string]*entry{}
	for _, k := range keys { m[string(k)] = &entry{kind: GCRA} }
	r := rand.New(rand.NewPCG(1, 0))
	b.ResetTimer()
	for range b.N { e := m[string(keys[r.IntN(benchKeys)])]; e.num++; e.expire = e.num }
}
func BenchmarkDbgRandomGetOnly(b *testing.B) {
	keys := gcraKeys(benchKeys)
	ks := filled(keys)
	r := rand.New(rand.NewPCG(1, 0))
	b.ResetTimer()
	for range b.N { k := keys[r.IntN(benchKeys)]; s := ks.Shard(k); s.Lock(); s.GetLocked(k, 0); s.Unlock() }
}
func BenchmarkDbgRandomHashOnly(b *testing.B) {
	keys := gcraKeys(benchKeys)
	ks := filled(keys)
	r := rand.New(rand.NewPCG(1, 0))
	b.ResetTimer()
	n := 0
	for range b.N { k := keys[r.IntN(benchKeys)]; s := ks.Shard(k); n += s.ord }
}
func BenchmarkDbgRandomOneShard(b *testing.B) {
	keys := gcraKeys(benchKeys)
	ks := New(1)
	for i, k := range keys { ks.shards[0].SetLocked(k, Value{Kind: GCRA, Num: int64(i)}) }
	r := rand.New(rand.NewPCG(1, 0))
	b.ResetTimer()
	for range b.N { throttle(ks, keys[r.IntN(benchKeys)], 1e18) }
}
