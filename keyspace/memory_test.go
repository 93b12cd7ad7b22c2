package keyspace

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// memoryKeys is the number of keys the GCRA memory measurement inserts, logKeys the
// number the byte-value one does.
const (
	memoryKeys = 1_000_000
	logKeys    = 300_000
)

// logValue is the size of the byte value of logValueOf's keys: a sliding log with one
// admission takes about 10 bytes.
const logValue = 12

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

// measure builds a store of n keys with build, keeping it alive until it has been measured.
func measure(n int, build func(keys [][]byte) any) perKey {
	keys := gcraKeys(n) // outside the measurement: the caller's request buffers
	before := sampleMemory()
	store := build(keys)
	after := sampleMemory()
	runtime.KeepAlive(store)
	runtime.KeepAlive(keys)
	delta := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	return perKey{delta(after.heapInuse, before.heapInuse), delta(after.sys, before.sys), delta(after.rss, before.rss)}
}

// gcraValue is the value of the i-th key of the GCRA measurement: a TAT and an expiry.
func gcraValue(i int, _ []byte) Value {
	return Value{Kind: GCRA, Expire: 2e18 + int64(i), Num: 1e18 + int64(i)}
}

// logValueOf is the value of the i-th key of the sliding-log measurement: a log of logValue
// bytes, as SLIDE leaves after one admission, built in scratch (the server's buffer).
func logValueOf(i int, scratch []byte) Value {
	binary.LittleEndian.PutUint64(scratch, uint64(i))
	return Value{Kind: SlidingLog, Expire: 2e18 + int64(i), Num: 1e12 + int64(i), Bytes: scratch[:logValue]}
}

// inKeyspace returns a builder that inserts the keys, with 14-byte names, into a keyspace.
func inKeyspace(value func(int, []byte) Value) func([][]byte) any {
	return func(keys [][]byte) any {
		ks := New(256)
		scratch := make([]byte, logValue)
		for i, k := range keys {
			s := ks.Shard(k)
			s.Lock()
			s.SetLocked(k, value(i, scratch))
			s.Unlock()
		}
		return ks
	}
}

// grownAdmissions is the number of admissions of the grown-log measurement: a log of
// 1 + 3*19 = 58 bytes, as SLIDE's load test leaves its keys.
const grownAdmissions = 20

// grownInKeyspace returns a builder that gives each key, with 14-byte names, a sliding log
// of admissions admissions as SLIDE writes it: an admission to every key in turn, the log
// growing 3 bytes (an admission 64ms to 1s after the one before) each time, built in a
// scratch buffer.
func grownInKeyspace(admissions int) func([][]byte) any {
	return func(keys [][]byte) any {
		ks := New(256)
		scratch := make([]byte, 0, 1+3*admissions)
		for adm := range admissions {
			for i, k := range keys {
				s := ks.Shard(k)
				s.Lock()
				v, _ := s.GetLocked(k, 0)
				scratch = append(scratch[:0], v.Bytes...)
				if adm == 0 {
					scratch = append(scratch, 0)
				} else {
					scratch = append(scratch, 0x80, 0x80, byte(1+i%127))
				}
				s.SetLocked(k, Value{Kind: SlidingLog, Expire: 2e18 + int64(i), Num: 1e12 + int64(i), Bytes: scratch})
				s.Unlock()
			}
		}
		return ks
	}
}

// inMap returns the same builder in the naive design, for comparison: a Go map of string
// to *entry.
func inMap(value func(int, []byte) Value) func([][]byte) any {
	type entry struct {
		kind        Kind
		expire, num int64
		num2        int64
		bytes       []byte
	}
	return func(keys [][]byte) any {
		m := make(map[string]*entry)
		scratch := make([]byte, logValue)
		for i, k := range keys {
			v := value(i, scratch)
			m[string(k)] = &entry{kind: v.Kind, expire: v.Expire, num: v.Num, num2: v.Num2, bytes: bytes.Clone(v.Bytes)}
		}
		return m
	}
}

// benchmarkMemory reports the memory n keys with value take per key, in the keyspace and
// in a map.
func benchmarkMemory(b *testing.B, n int, value func(int, []byte) Value) {
	for _, tc := range []struct {
		name  string
		build func([][]byte) any
	}{{"keyspace", inKeyspace(value)}, {"map", inMap(value)}} {
		b.Run(tc.name, func(b *testing.B) {
			var m perKey
			for range b.N {
				m = measure(n, tc.build)
			}
			b.ReportMetric(m.heapInuse, "heap-B/key")
			b.ReportMetric(m.rss, "rss-B/key")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkMemoryPerGCRAKey reports the memory 1,000,000 GCRA keys (14-byte names, an
// expiry) take, per key. Run it alone and once:
//
//	go test -run '^$' -bench MemoryPerGCRAKey -benchtime 1x ./keyspace
func BenchmarkMemoryPerGCRAKey(b *testing.B) { benchmarkMemory(b, memoryKeys, gcraValue) }

// BenchmarkMemoryPerLogKey reports the memory 300,000 keys with a small byte value take
// (14-byte names, an expiry, a 12-byte value: a sliding log after one admission), per key.
// Run it alone and once:
//
//	go test -run '^$' -bench MemoryPerLogKey -benchtime 1x ./keyspace
func BenchmarkMemoryPerLogKey(b *testing.B) { benchmarkMemory(b, logKeys, logValueOf) }

// BenchmarkMemoryPerGrownLogKey reports the memory 300,000 sliding-log keys take, per key,
// once each has had 20 admissions written one at a time (grownInKeyspace): the entries,
// the room the logs keep to grow in place, and the dead bytes their moves leave in the
// arena. Run it alone and once:
//
//	go test -run '^$' -bench MemoryPerGrownLogKey -benchtime 1x ./keyspace
func BenchmarkMemoryPerGrownLogKey(b *testing.B) {
	var m perKey
	for range b.N {
		m = measure(logKeys, grownInKeyspace(grownAdmissions))
	}
	b.ReportMetric(m.heapInuse, "heap-B/key")
	b.ReportMetric(m.rss, "rss-B/key")
	b.ReportMetric(0, "ns/op")
}

// TestMemoryPerKey holds the keyspace to its memory budget. It takes a few seconds and a few
// hundred MB, so it runs only with THROTTLED_MEMORY_TEST=1:
//
//	THROTTLED_MEMORY_TEST=1 go test -run TestMemoryPerKey -v ./keyspace
func TestMemoryPerKey(t *testing.T) {
	if os.Getenv("THROTTLED_MEMORY_TEST") == "" {
		t.Skip("set THROTTLED_MEMORY_TEST=1 to measure memory per key")
	}
	for _, tc := range []struct {
		name      string
		n         int
		build     func([][]byte) any
		heap, rss float64
	}{
		{"GCRA key", memoryKeys, inKeyspace(gcraValue), 60, 64},
		{"sliding-log key", logKeys, inKeyspace(logValueOf), 80, 84},
		// 58 bytes of log, up to growRoom bytes of room, and the dead bytes the moves leave
		// in the arena: about 180 (about 205 when every admission moved the entry).
		{"sliding-log key, 20 admissions", logKeys, grownInKeyspace(grownAdmissions), 195, 200},
	} {
		m := measure(tc.n, tc.build)
		t.Logf("per %s: heap in use %.1f B, resident %.1f B (runtime Sys %.1f B)", tc.name, m.heapInuse, m.rss, m.sys)
		require.Less(t, m.heapInuse, tc.heap, "heap bytes per %s", tc.name)
		if m.rss != 0 {
			require.Less(t, m.rss, tc.rss, "resident bytes per %s", tc.name)
		}
	}
}
