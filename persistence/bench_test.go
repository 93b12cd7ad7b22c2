package persistence

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/keyspace"
)

// BenchmarkLoadMillionKeys measures a start on a store of a million GCRA keys named as
// redis-benchmark names them (k:000000123456), and the bytes each takes on disk:
//
//	go test -run '^$' -bench LoadMillionKeys -benchtime 3x ./persistence
func BenchmarkLoadMillionKeys(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	ks := keyspace.New(256)
	s, err := Open(dir, ks, Options{Now: func() int64 { return t0 }})
	require.NoError(b, err)
	for i := range n {
		key := []byte(fmt.Sprintf("k:%012d", i))
		sh := ks.Shard(key)
		sh.Lock()
		sh.SetLocked(key, keyspace.Value{Kind: keyspace.GCRA, Num: t0 + int64(i)*1000, Expire: t0 + 3600e9 + int64(i)*1000})
		sh.Unlock()
	}
	require.NoError(b, s.Save())
	require.NoError(b, s.Close())
	size := dirSize(b, dir)

	b.ResetTimer()
	for range b.N {
		ks := keyspace.New(256)
		start := time.Now()
		s, err := Open(dir, ks, Options{Now: func() int64 { return t0 }, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(b, err)
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/load")
		b.StopTimer()
		require.Equal(b, n, ks.Len())
		require.NoError(b, s.Close())
		b.StartTimer()
	}
	b.ReportMetric(float64(size)/n, "disk-bytes/key")
}

// dirSize adds up the sizes of the files in dir.
func dirSize(t testing.TB, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var n int64
	for _, e := range entries {
		info, err := os.Stat(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		n += info.Size()
	}
	return n
}

// benchWrites changes b.N GCRA keys, in turn among keys, calling round after every n.
func benchWrites(b *testing.B, ks *keyspace.Keyspace, keys [][]byte, n int, round func()) {
	for i := range b.N {
		key := keys[(i*7919)%len(keys)]
		sh := ks.Shard(key)
		sh.Lock()
		sh.SetLocked(key, keyspace.Value{Kind: keyspace.GCRA, Num: t0 + int64(i), Expire: t0 + 60e9 + int64(i)})
		sh.Unlock()
		if i%n == n-1 {
			round()
		}
	}
}

// BenchmarkWrite measures the writer's cost per changed key: drain, encode, commit, and
// Pebble's flushes and compactions behind, for GCRA keys changed at random among 100000.
//
//	go test -run '^$' -bench Write -benchtime 1000000x ./persistence
func BenchmarkWrite(b *testing.B) {
	s, ks, keys := openWithKeys(b)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	benchWrites(b, ks, keys, 4000, func() { require.NoError(b, s.write(false)) })
	require.NoError(b, s.write(true))
	require.NoError(b, s.db.Flush()) // and what Pebble does in the background, which write started
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkWriteEverySecond is the writer under a load that changes each of 100,000 keys
// between two batches, as CL.THROTTLE over random keys does at P=16: each op changes every
// key and writes them. cpu-ns/key is the writer goroutine's own CPU per key (draining,
// sorting, and Pebble's insert into its memtable, which the committing goroutine does);
// Pebble's flushes and compactions run elsewhere and are not counted.
//
//	go test -run '^$' -bench WriteEverySecond -benchtime 30x ./persistence
func BenchmarkWriteEverySecond(b *testing.B) {
	s, ks, keys := openWithKeys(b)
	runtime.LockOSThread() // threadCPU measures this goroutine
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	var writer int64
	for i := range b.N {
		for j, key := range keys {
			sh := ks.Shard(key)
			sh.Lock()
			sh.SetLocked(key, keyspace.Value{Kind: keyspace.GCRA, Num: t0 + int64(i*len(keys)+j), Expire: t0 + 60e9})
			sh.Unlock()
		}
		start := threadCPU()
		require.NoError(b, s.write(false))
		writer += threadCPU() - start
	}
	b.ReportMetric(float64(writer)/float64(b.N*len(keys)), "cpu-ns/key")
}

// threadCPU is the CPU time the calling thread used, user and system, in ns.
func threadCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_THREAD, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// openWithKeys opens a store whose writer runs only when the benchmark calls write, and
// names 100,000 keys as redis-benchmark does.
func openWithKeys(b *testing.B) (*Store, *keyspace.Keyspace, [][]byte) {
	ks := keyspace.New(256)
	s, err := Open(b.TempDir(), ks, Options{Now: func() int64 { return t0 }, Interval: time.Hour})
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	keys := make([][]byte, 100000)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("k:%012d", i))
	}
	return s, ks, keys
}

// cpuTime is the CPU time the process used, user and system, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkWaitRound is an event-loop round's cost to the redo log with everysec: a round
// of n writes to random keys among 100,000 in 256 shards, then the Wait that writes them
// to the redo log before the replies. n=10 is about a round of 50 connections at P=1 on
// two loops, n=400 one at P=16. ns/op and cpu-ns/op (the process's CPU: on a busy machine,
// the steadier figure) are per write.
//
//	go test -run '^$' -bench WaitRound ./persistence
func BenchmarkWaitRound(b *testing.B) {
	for _, n := range []int{1, 10, 400} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s, ks, keys := openWithKeys(b)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			benchWrites(b, ks, keys, n, func() { require.NoError(b, s.Wait()) })
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
