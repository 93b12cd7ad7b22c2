package server

import (
	"net"
	"strconv"
	"testing"
)

// benchVerb runs one request through dispatch, handler, keyspace and reply
// encoding (no network), on 1000 keys from each goroutine.
func benchVerb(b *testing.B, args ...string) {
	s, _ := fuzzServer(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := s.newClient(nc)
		req := make([][]byte, len(args))
		for i, a := range args {
			req[i] = []byte(a)
		}
		keys := make([][]byte, 1000)
		for i := range keys {
			keys[i] = []byte("bench:key:" + strconv.Itoa(i))
		}
		at := 1 // the argument "k" is the one that varies
		for i, a := range args {
			if a == "k" {
				at = i
			}
		}
		for i := 0; pb.Next(); i++ {
			req[at] = keys[i%len(keys)]
			s.run(c, req)
			if c.w.b[0] == '-' {
				b.Fatalf("%q: %s", req, c.w.b)
			}
			c.w.b = c.w.b[:0]
		}
	})
}

func BenchmarkCellThrottle(b *testing.B) { benchVerb(b, "CL.THROTTLE", "k", "100", "10", "60", "1") }
func BenchmarkGCRA(b *testing.B)         { benchVerb(b, "GCRA", "k", "100", "10", "60") }
func BenchmarkThrottle(b *testing.B)     { benchVerb(b, "THROTTLE", "k", "100", "10", "1m", "COST", "1") }
func BenchmarkIncr(b *testing.B)         { benchVerb(b, "INCR", "k") }
func BenchmarkGet(b *testing.B)          { benchVerb(b, "GET", "k") }

// BenchmarkReader parses a pipeline of requests.
func BenchmarkReader(b *testing.B) {
	req := []byte("*6\r\n$11\r\nCL.THROTTLE\r\n$5\r\nk:123\r\n$3\r\n100\r\n$2\r\n10\r\n$2\r\n60\r\n$1\r\n1\r\n")
	r := &reader{buf: make([]byte, readChunk), maxBulk: defaultMaxArg}
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for i := 0; i < b.N; i++ {
		r.start, r.end = 0, copy(r.buf, req)
		if _, err := r.next(); err != nil {
			b.Fatal(err)
		}
	}
}
func BenchmarkTokenBucket(b *testing.B) { benchVerb(b, "TOKENBUCKET", "k", "100", "10", "1s") }
func BenchmarkLeakyBucket(b *testing.B) { benchVerb(b, "LEAKYBUCKET", "k", "100", "10", "1s") }
func BenchmarkSlide(b *testing.B)       { benchVerb(b, "SLIDE", "k", "100", "1m") }
func BenchmarkSlideApprox(b *testing.B) { benchVerb(b, "SLIDE", "k", "100", "1m", "APPROX") }
func BenchmarkWindow(b *testing.B)      { benchVerb(b, "WINDOW", "k", "100", "1m") }
func BenchmarkConcurrency(b *testing.B) {
	benchVerb(b, "CONCURRENCY.ACQUIRE", "k", "10", "1m", "worker-1")
}
func BenchmarkAllOf(b *testing.B) {
	benchVerb(b, "ALLOF", "THROTTLE", "k", "100", "10", "1m", "WINDOW", "k2", "100", "1m")
}
