package server

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"
)

// The hot hash commands of a token bucket kept in a hash, as the classic Lua limiters keep
// it: HSET of its two fields and HMGET of them, over 10,000 keys drawn at random.

func BenchmarkHSet(b *testing.B) {
	benchHash(b, true, "HSET", "k", "tokens", "9", "last_refill", "1732512345123")
}

func BenchmarkHMGet(b *testing.B) {
	benchHash(b, true, "HMGET", "k", "tokens", "last_refill")
}

func BenchmarkHIncrBy(b *testing.B) {
	benchHash(b, true, "HINCRBY", "k", "tokens", "1")
}

// benchHash runs args, its "k" a random one of 10,000 keys, which hold the two-field hash
// first when filled.
func benchHash(b *testing.B, filled bool, args ...string) {
	cfg := DefaultConfig() // 256 shards, as cmd/throttled starts it
	cfg.AppendOnly = false
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	a, z := net.Pipe()
	b.Cleanup(func() { a.Close(); z.Close() })
	c := s.newClient(a)
	keys := benchKeyNames(10_000)
	if filled {
		for _, k := range keys {
			s.run(c, [][]byte{[]byte("HSET"), k, []byte("tokens"), []byte("10"), []byte("last_refill"), []byte("1732512345000")})
		}
	}
	var seed atomic.Uint64
	b.ResetTimer()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := s.newClient(nc)
		req := make([][]byte, len(args))
		for i, a := range args {
			req[i] = []byte(a)
		}
		rng := rand.New(rand.NewPCG(seed.Add(1), 0))
		for pb.Next() {
			req[1] = keys[rng.IntN(len(keys))]
			s.run(c, req)
			if c.w.B[0] == '-' {
				b.Fatalf("%q: %s", req, c.w.B)
			}
			c.w.B = c.w.B[:0]
		}
	})
}
