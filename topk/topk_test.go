package topk

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

const period = int64(60e9)

// TestSkewed records a Zipf-distributed stream over many more keys than counters, and checks
// Space-Saving's promises against exact counts: the true top 10 are the top 10 found, and
// every reported count is within its error of the truth, the error within N/k of a shard.
func TestSkewed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keys    uint64
		records int
		k       int
		s       float64
	}{
		{"zipf 1.1, 100k keys", 100000, 400000, 1024, 1.1},
		{"zipf 1.3, 1M keys", 1000000, 400000, 256, 1.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top := New(tc.k, period)
			zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), tc.s, 1, tc.keys-1)
			exact := make(map[string]int64)
			for i := 0; i < tc.records; i++ {
				key := "user:" + strconv.FormatUint(zipf.Uint64(), 10)
				exact[key]++
				top.Record([]byte(key), 1)
			}
			got, total := top.Top(10, 2)
			require.Equal(t, int64(tc.records), total)

			type kc struct {
				k string
				n int64
			}
			var truth []kc
			for k, n := range exact {
				truth = append(truth, kc{k, n})
			}
			sort.Slice(truth, func(i, j int) bool { return truth[i].n > truth[j].n })
			want := make(map[string]bool)
			for _, e := range truth[:10] {
				want[e.k] = true
			}
			perShard := int64(top.Capacity() / shards)
			for _, e := range got {
				require.True(t, want[e.Key], "%s (count %d) is not in the true top 10", e.Key, e.Count)
				n := exact[e.Key]
				require.GreaterOrEqual(t, e.Count, n, e.Key)
				require.LessOrEqual(t, e.Count-n, e.Error, e.Key)
				// Each shard's error is at most its recordings over its counters; a shard holds
				// about N/shards recordings, give it twice that.
				require.LessOrEqual(t, e.Error, 2*int64(tc.records)/shards/perShard+1, e.Key)
			}
			require.Len(t, got, 10)
		})
	}
}

// TestWindow checks that counts move to the last period, then out of the window.
func TestWindow(t *testing.T) {
	top := New(64, period)
	for i := 0; i < 5; i++ {
		top.Record([]byte("a"), 10)
	}
	top.Record([]byte("b"), period+10) // next period: a's counts are the last period's
	got, total := top.Top(10, period+20)
	require.Equal(t, []Entry{{Key: "a", Count: 5}, {Key: "b", Count: 1}}, got)
	require.Equal(t, int64(6), total)

	got, _ = top.Top(10, 2*period+20) // a's period is gone, b's is the last
	require.Equal(t, []Entry{{Key: "b", Count: 1}}, got)
	got, _ = top.Top(10, 5*period)
	require.Empty(t, got)
}

// TestEviction fills one shard past its counters and checks that the heap and the table
// stay consistent: every counted key is found again and counts add up.
func TestEviction(t *testing.T) {
	top := New(16*shards, period)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200000; i++ {
		top.Record([]byte("k"+strconv.Itoa(rng.IntN(5000))), 1)
	}
	for i := range top.shards {
		s := &top.shards[i].cur
		var sum int64
		for j := range s.slots {
			got, _ := s.find(s.key(j), s.slots[j].hash)
			require.Equal(t, j, got)
			require.Equal(t, int32(j), s.heap[s.slots[j].pos])
			if p := int(s.slots[j].pos); p > 0 {
				require.LessOrEqual(t, s.count((p-1)/2), s.slots[j].count)
			}
			sum += s.slots[j].count
		}
		require.Equal(t, s.total, sum) // Space-Saving's counters add up to the recordings
	}
}

func TestLongKey(t *testing.T) {
	top := New(16, period)
	long := make([]byte, 1000)
	top.Record(long, 1)
	got, _ := top.Top(1, 1)
	require.Len(t, got[0].Key, MaxKeyLen)
}

func TestRecordAllocs(t *testing.T) {
	top := New(64, period)
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = []byte("key:" + strconv.Itoa(i))
	}
	i := 0
	allocs := testing.AllocsPerRun(10000, func() {
		top.Record(keys[i%len(keys)], 1)
		i++
	})
	require.Equal(t, 0.0, allocs)
}

func BenchmarkRecord(b *testing.B) {
	top := New(1024, period)
	keys := make([][]byte, 100000)
	for i := range keys {
		keys[i] = []byte("user:" + strconv.Itoa(i))
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 1, uint64(len(keys)-1))
	seq := make([]int, 1<<16)
	for i := range seq {
		seq[i] = int(zipf.Uint64())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		top.Record(keys[seq[i&(len(seq)-1)]], 1)
	}
}

// BenchmarkRecordFits records 1000 keys in turn, fewer than the counters: no evictions.
func BenchmarkRecordFits(b *testing.B) {
	top := New(4096, period)
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = []byte("bench:key:" + strconv.Itoa(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		top.Record(keys[i%len(keys)], 1)
	}
}

// FuzzTop records a stream of keys drawn from the input into a Top of few counters and checks
// Space-Saving's invariants against exact counts: no key is undercounted, none overcounted by
// more than its error, and the counters add up to the recordings.
func FuzzTop(f *testing.F) {
	f.Add([]byte("aaabbbcccdaaaeeeffffgggghhhhaaaa"), uint8(2))
	f.Add([]byte{0, 1, 2, 3, 255, 0, 0, 0}, uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, keyLen uint8) {
		top := New(shards*4, period) // 4 counters a shard: evictions soon
		exact := make(map[string]int64)
		n := int(keyLen%3) + 1
		for i := 0; i+n <= len(stream); i += n {
			key := stream[i : i+n]
			exact[string(key)]++
			top.Record(key, 1)
		}
		got, total := top.Top(len(exact)+1, 1)
		var sum int64
		for _, c := range exact {
			sum += c
		}
		require.Equal(t, sum, total)
		for _, e := range got {
			require.GreaterOrEqual(t, e.Count, exact[e.Key], e.Key)
			require.LessOrEqual(t, e.Count-exact[e.Key], e.Error, e.Key)
		}
		for i := range top.shards {
			s := &top.shards[i].cur
			var counted int64
			for j := range s.slots {
				counted += s.slots[j].count
			}
			require.Equal(t, s.total, counted)
		}
	})
}

// TestRecordN: n occurrences at once count as n Records, for a key counted and a new one.
func TestRecordN(t *testing.T) {
	one, many := New(64, 1e12), New(64, 1e12)
	for i := range 300 {
		key := []byte("k" + strconv.Itoa(i%7))
		for range i % 5 {
			one.Record(key, 1)
		}
		many.RecordN(key, int64(i%5), 1)
	}
	a, na := one.Top(10, 2)
	b, nb := many.Top(10, 2)
	require.Equal(t, a, b)
	require.Equal(t, na, nb)
}
