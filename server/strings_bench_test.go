package server

import (
	"net"
	"sync/atomic"
	"testing"
)

// benchOnStrings is benchVerb on keys that hold a string first ("SET key 10.5"): each
// goroutine goes over 1000 keys of its own, each "k" of args replaced by one.
func benchOnStrings(b *testing.B, args ...string) {
	s, _ := fuzzServer(b)
	var next atomic.Int64
	b.ResetTimer()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := s.newClient(nc)
		keys := benchKeyNames(1000)
		prefix := []byte{byte('a' + next.Add(1)%26), ':'}
		for i, k := range keys {
			keys[i] = append(append([]byte(nil), prefix...), k...)
			s.run(c, [][]byte{[]byte("SET"), keys[i], []byte("10.5")})
		}
		c.w.B = c.w.B[:0]
		req := make([][]byte, len(args))
		for i, a := range args {
			req[i] = []byte(a)
		}
		for i := 0; pb.Next(); i++ {
			for j, a := range args {
				if a == "k" {
					req[j] = keys[i%len(keys)]
				}
			}
			s.run(c, req)
			if c.w.B[0] == '-' {
				b.Fatalf("%q: %s", req, c.w.B)
			}
			c.w.B = c.w.B[:0]
		}
	})
}

func BenchmarkGetEx(b *testing.B)          { benchOnStrings(b, "GETEX", "k") }
func BenchmarkGetExPersist(b *testing.B)   { benchOnStrings(b, "GETEX", "k", "PERSIST") }
func BenchmarkGetExPXAT(b *testing.B)      { benchOnStrings(b, "GETEX", "k", "PXAT", "4102444800000") }
func BenchmarkExpireAt(b *testing.B)       { benchOnStrings(b, "EXPIREAT", "k", "4102444800") }
func BenchmarkStrlen(b *testing.B)         { benchOnStrings(b, "STRLEN", "k") }
func BenchmarkGetRange(b *testing.B)       { benchOnStrings(b, "GETRANGE", "k", "0", "-2") }
func BenchmarkSetRange(b *testing.B)       { benchOnStrings(b, "SETRANGE", "k", "1", "1") }
func BenchmarkIncrByFloat(b *testing.B)    { benchOnStrings(b, "INCRBYFLOAT", "k", "0.1") }
func BenchmarkObjectEncoding(b *testing.B) { benchOnStrings(b, "OBJECT", "ENCODING", "k") }
func BenchmarkTouch(b *testing.B)          { benchOnStrings(b, "TOUCH", "k") }
func BenchmarkRenameSelf(b *testing.B)     { benchOnStrings(b, "RENAME", "k", "k") }
