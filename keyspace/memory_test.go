package keyspace

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// memoryKeys is the number of keys the memory measurement inserts.
const memoryKeys = 1_000_000

// memSample is the process's memory at one moment, after a full GC.
type memSample struct {
	heapInuse, sys, rss uint64
}

func sampleMemory() memSample {
	runtime.GC()
	debug.FreeOSMemory() // a GC, and unused pages back to the OS, so that RSS means live memory
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{heapInuse: ms.HeapInuse, sys: ms.Sys, rss: residentBytes()}
}

// residentBytes returns the process's resident set size from /proc/self/statm, 0 elsewhere.
func residentBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// perKey is the growth from before to after, in bytes per key.
type perKey struct{ heapInuse, sys, rss float64 }

// measure builds a store with build, keeping it alive until it has been measured.
func measure(build func(keys [][]byte) any) perKey {
	keys := gcraKeys(memoryKeys) // outside the measurement: the caller's request buffers
	before := sampleMemory()
	store := build(keys)
	after := sampleMemory()
	runtime.KeepAlive(store)
	runtime.KeepAlive(keys)
	delta := func(a, b uint64) float64 { return (float64(a) - float64(b)) / memoryKeys }
	return perKey{delta(after.heapInuse, before.heapInuse), delta(after.sys, before.sys), delta(after.rss, before.rss)}
}

// buildKeyspace inserts 1,000,000 GCRA keys with 14-byte names and an expiry.
func buildKeyspace(keys [][]byte) any {
	ks := New(256)
	for i, k := range keys {
		s := ks.Shard(k)
		s.Lock()
		s.SetLocked(k, Value{Kind: GCRA, Expire: 2e18 + int64(i), Num: 1e18 + int64(i)})
		s.Unlock()
	}
	return ks
}

// buildMap is the naive design, for comparison: a Go map of string to *entry.
func buildMap(keys [][]byte) any {
	type entry struct {
		kind        Kind
		expire, num int64
		num2        int64
		bytes       []byte
	}
	m := make(map[string]*entry)
	for i, k := range keys {
		m[string(k)] = &entry{kind: GCRA, expire: 2e18 + int64(i), num: 1e18 + int64(i)}
	}
	return m
}

// BenchmarkMemoryPerGCRAKey reports the memory 1,000,000 GCRA keys (14-byte names, an
// expiry) take, per key. Run it alone and once:
//
//	go test -run '^$' -bench MemoryPerGCRAKey -benchtime 1x ./keyspace
func BenchmarkMemoryPerGCRAKey(b *testing.B) {
	for _, tc := range []struct {
		name  string
		build func([][]byte) any
	}{{"keyspace", buildKeyspace}, {"map", buildMap}} {
		b.Run(tc.name, func(b *testing.B) {
			var m perKey
			for range b.N {
				m = measure(tc.build)
			}
			b.ReportMetric(m.heapInuse, "heap-B/key")
			b.ReportMetric(m.rss, "rss-B/key")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// TestMemoryPerKey holds the keyspace to its memory budget. It takes a few seconds and a few
// hundred MB, so it runs only with THROTTLED_MEMORY_TEST=1:
//
//	THROTTLED_MEMORY_TEST=1 go test -run TestMemoryPerKey -v ./keyspace
func TestMemoryPerKey(t *testing.T) {
	if os.Getenv("THROTTLED_MEMORY_TEST") == "" {
		t.Skip("set THROTTLED_MEMORY_TEST=1 to measure memory per key")
	}
	m := measure(buildKeyspace)
	t.Logf("per GCRA key: heap in use %.1f B, resident %.1f B (runtime Sys %.1f B)", m.heapInuse, m.rss, m.sys)
	require.Less(t, m.heapInuse, 60.0, "heap bytes per key")
	if m.rss != 0 {
		require.Less(t, m.rss, 64.0, "resident bytes per key")
	}
}
