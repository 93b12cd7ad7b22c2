package keyspace
import ("testing";"fmt")
func TestDbgProbe(t *testing.T) {
	for _, shards := range []int{1, 256} {
	ks := filled(gcraKeys(benchKeys))
	if shards == 1 { ks = New(1); for i, k := range gcraKeys(benchKeys) { ks.shards[0].SetLocked(k, Value{Kind: GCRA, Num: int64(i)}) } }
	total, maxd, n := 0, 0, 0
	slots := 0
	for _, s := range ks.shards {
		slots += len(s.index)
		for i, e := range s.index {
			if e == 0 { continue }
			h := home(uint32(e>>32), len(s.index))
			d := (i - h + len(s.index)) % len(s.index)
			total += d; n++; maxd = max(maxd, d)
		}
	}
	fmt.Printf("shards %d: avg dist %.2f max %d load %.2f\n", shards, float64(total)/float64(n), maxd, float64(n)/float64(slots))
	}
}
