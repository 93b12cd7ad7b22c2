package server

import (
	"net"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

// listBenchKeys is how many lists each goroutine of a benchmark spreads over.
const listBenchKeys = 1000

// fillLists pushes n elements of the kind a rate limiter's log holds (millisecond
// timestamps) onto each of keys.
func fillLists(b *testing.B, s *Server, keys [][]byte, n int) {
	nc, peer := net.Pipe()
	defer peer.Close()
	c := s.newClient(nc)
	for _, k := range keys {
		for i := range n {
			s.run(c, [][]byte{[]byte("RPUSH"), k, strconv.AppendInt(nil, 1732512345123+int64(i), 10)})
			if c.w.B[0] == '-' {
				b.Fatalf("%s", c.w.B)
			}
			c.w.B = c.w.B[:0]
		}
	}
}

// benchListPair runs push then pop as one op, each goroutine on lists of its own that
// hold about n elements throughout.
func benchListPair(b *testing.B, n int, push, pop string) {
	s, _ := fuzzServer(b)
	procs := runtime.GOMAXPROCS(0) // RunParallel's goroutines
	keys := make([][][]byte, procs)
	for g := range keys {
		keys[g] = make([][]byte, listBenchKeys)
		for i := range keys[g] {
			keys[g][i] = []byte("list:" + strconv.Itoa(g) + ":" + strconv.Itoa(i))
		}
		fillLists(b, s, keys[g], n)
	}
	var next atomic.Int64
	b.ResetTimer()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		own := keys[int(next.Add(1)-1)%procs]
		nc, peer := net.Pipe()
		defer peer.Close()
		c := s.newClient(nc)
		in := [][]byte{[]byte(push), nil, []byte("1732512345999")}
		out := [][]byte{[]byte(pop), nil}
		for i := 0; pb.Next(); i++ {
			k := own[i%len(own)]
			in[1], out[1] = k, k
			s.run(c, in)
			s.run(c, out)
			if c.w.B[0] == '-' {
				b.Fatalf("%s", c.w.B)
			}
			c.w.B = c.w.B[:0]
		}
	})
}

// BenchmarkListQueue is a queue: RPUSH of one element, then LPOP of one, on lists of
// about ten elements.
func BenchmarkListQueue(b *testing.B) { benchListPair(b, 10, "RPUSH", "LPOP") }

// BenchmarkListLog is a log kept newest first, as scripts keep one: LPUSH, then RPOP of the
// oldest, which walks the list (the pack has no back-links).
func BenchmarkListLog(b *testing.B) { benchListPair(b, 10, "LPUSH", "RPOP") }

// BenchmarkListRange is LRANGE key 0 9 over lists of 20 elements.
func BenchmarkListRange(b *testing.B) {
	s, _ := fuzzServer(b)
	fillLists(b, s, benchKeyNames(listBenchKeys), 20)
	benchOn(b, s, "LRANGE", "k", "0", "9")
}
