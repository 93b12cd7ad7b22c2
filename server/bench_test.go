package server

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/throttledhq/throttled/resp"
)

// benchVerb runs one request through dispatch, handler, keyspace and reply
// encoding (no network), on 1000 keys from each goroutine.
// benchPrepare, when set, prepares each benchmark's server, and benchClient each client
// (BenchmarkLatencyTracking).
var (
	benchPrepare func(*Server)
	benchClient  func(testing.TB, *Server, *client)
)

func benchVerb(b *testing.B, args ...string) {
	benchKeys(b, 1000, false, args...)
}

// benchKeys is benchVerb on nkeys keys: each goroutine's own, in turn, or with
// random all goroutines' keys, drawn uniformly as redis-benchmark's -r does.
// Random keys are loadgen's workload without the network: a server as
// cmd/throttled starts it (256 shards), whose clock moves 2µs a call, as it
// does serving about 500,000 calls a second, so that the state a key is left
// with does not depend on how fast the benchmark runs (a sliding log's deltas
// are about 0.2s: 3 bytes). Each goroutine has a clock of its own
// (benchClock): one clock that every call moved would be the one line all
// goroutines write, and the benchmark would measure itself.
func benchKeys(b *testing.B, nkeys int, random bool, args ...string) {
	benchFilled(b, nkeys, random, nil, args...)
}

// benchStart is where the benchmarks' clocks start.
var benchStart = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// benchServer is a server as cmd/throttled starts it (256 shards), without persistence,
// whose own clock stands at benchStart: its clients' clocks are their goroutines' own
// (benchClock).
func benchServer(b *testing.B) *Server {
	cfg := DefaultConfig()
	cfg.AppendOnly = false
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	start := benchStart.UnixNano()
	cfg.Now = func() time.Time { return time.Unix(0, start) } // read by all, written by none
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchClock gives c a clock of its own, which moves 2µs at each reading from benchStart,
// on cache lines of its own (benchLocal).
func benchClock(c *client) {
	env := *c.Env
	clock := benchLocal[int64](1)
	clock[0] = benchStart.UnixNano()
	env.Clock = func() int64 {
		clock[0] += 2000
		return clock[0]
	}
	c.Env = &env
}

// benchLocal returns n zero Ts with a cache line pair of nothing on each side: what one of
// a benchmark's goroutines writes at every call (its clock, its random source, its request,
// its client's reply) must share no line with another's. Small objects made one after
// another lie side by side: those of two goroutines that started on one P would, and each
// call of one would then take their line from the other's core.
func benchLocal[T any](n int) []T {
	var zero T
	pad := cacheLine/max(1, int(unsafe.Sizeof(zero))) + 1
	return make([]T, n+2*pad)[pad : pad+n : pad+n]
}

// benchRand is a random source of a goroutine's own, seeded with seed (benchLocal).
func benchRand(seed uint64) *rand.Rand {
	pcg := &benchLocal[rand.PCG](1)[0]
	pcg.Seed(seed, 0)
	return rand.New(pcg)
}

// benchOwn gives c's replies and scratch space room of their own (benchLocal), made once:
// grown at its first calls, they would be small objects beside another goroutine's.
func benchOwn(c *client) {
	c.W.B = benchLocal[byte](512)[:0]
	c.Scratch = benchLocal[byte](512)[:0]
}

// benchFilled is benchKeys, its random keys first set by fill (its "k" each key) when fill
// is not nil.
func benchFilled(b *testing.B, nkeys int, random bool, fill []string, args ...string) {
	var s *Server
	var shared [][]byte
	if random {
		s = benchServer(b)
		shared = benchKeyNames(nkeys)
		if fill != nil {
			benchFill(b, s, shared, fill)
		}
	} else {
		s, _ = fuzzServer(b)
	}
	if benchPrepare != nil {
		benchPrepare(s)
	}
	var seed atomic.Uint64
	b.ResetTimer()
	b.ReportAllocs()
	defer reportCPU(b, cpuNanos()) // cpu-ns/op: unlike ns/op, the same at -cpu 2 when nothing is shared, however busy the machine
	b.RunParallel(func(pb *testing.PB) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := s.newClient(nc)
		if random {
			benchClock(c)
			benchOwn(c)
		}
		if benchClient != nil {
			benchClient(b, s, c)
		}
		req := benchLocal[[]byte](len(args))
		for i, a := range args {
			req[i] = []byte(a)
		}
		keys := shared
		if keys == nil {
			keys = benchKeyNames(nkeys)
		}
		rng := benchRand(seed.Add(1))
		at := 1 // the argument "k" is the one that varies
		for i, a := range args {
			if a == "k" {
				at = i
			}
		}
		for i := 0; pb.Next(); i++ {
			if random {
				req[at] = keys[rng.IntN(len(keys))]
			} else {
				req[at] = keys[i%len(keys)]
			}
			s.run(c, req)
			if c.W.B[0] == '-' {
				b.Fatalf("%q: %s", req, c.W.B)
			}
			c.W.B = c.W.B[:0]
		}
	})
}

// benchFill runs fill on each of keys, its "k" the key.
func benchFill(b *testing.B, s *Server, keys [][]byte, fill []string) {
	nc, peer := net.Pipe()
	defer peer.Close()
	c := s.newClient(nc)
	benchClock(c)
	req := make([][]byte, len(fill))
	for _, k := range keys {
		for i, a := range fill {
			req[i] = []byte(a)
			if a == "k" {
				req[i] = k
			}
		}
		s.run(c, req)
		if c.W.B[0] == '-' {
			b.Fatalf("%q: %s", req, c.W.B)
		}
		c.W.B = c.W.B[:0]
	}
}

// benchKeyNames returns n key names.
func benchKeyNames(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte("bench:key:" + strconv.Itoa(i))
	}
	return keys
}

// The verbs whose figures at -cpu 1 and -cpu 2 make bench's scaling table shows
// (benchmarks/cmd/scaling) run over 100,000 random keys, as loadgen's workloads do, each key
// called once before the timer starts: what is measured is the steady state, not the
// creation of the keys, which would be most of a short run's calls (GET's keys hold a
// value first, so that each GET is a hit).
func BenchmarkCellThrottle(b *testing.B) { benchRandom(b, "CL.THROTTLE", "k", "100", "10", "60", "1") }
func BenchmarkGCRA(b *testing.B)         { benchVerb(b, "GCRA", "k", "100", "10", "60") }
func BenchmarkThrottle(b *testing.B)     { benchRandom(b, "THROTTLE", "k", "100", "10", "1m", "COST", "1") }
func BenchmarkIncr(b *testing.B)         { benchRandom(b, "INCR", "k") }
func BenchmarkGet(b *testing.B) {
	benchFilled(b, 100_000, true, []string{"SET", "k", "12345"}, "GET", "k")
}

// benchRandom is benchKeys over 100,000 random keys, each called once first.
func benchRandom(b *testing.B, args ...string) { benchFilled(b, 100_000, true, args, args...) }

// BenchmarkIncrEx is INCREX as a window counter uses it, beside BenchmarkIncr: bounded,
// saturated, its expiry set where the key has none.
func BenchmarkIncrEx(b *testing.B) {
	benchVerb(b, "INCREX", "k", "BYINT", "1", "UBOUND", "1000000000", "SATURATE", "EX", "60", "ENX")
}

// BenchmarkIncrExFloat is INCREX in BYFLOAT mode, beside BenchmarkIncrEx.
func BenchmarkIncrExFloat(b *testing.B) {
	benchVerb(b, "INCREX", "k", "BYFLOAT", "0.5", "LBOUND", "0", "UBOUND", "1e12")
}

// BenchmarkReader parses a pipeline of requests.
func BenchmarkReader(b *testing.B) {
	req := []byte("*6\r\n$11\r\nCL.THROTTLE\r\n$5\r\nk:123\r\n$3\r\n100\r\n$2\r\n10\r\n$2\r\n60\r\n$1\r\n1\r\n")
	r := &resp.Reader{Buf: make([]byte, resp.ReadChunk), MaxBulk: resp.DefaultMaxBulk}
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for i := 0; i < b.N; i++ {
		r.Start, r.End = 0, copy(r.Buf, req)
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}
func BenchmarkTokenBucket(b *testing.B) { benchRandom(b, "TOKENBUCKET", "k", "100", "10", "1s") }
func BenchmarkLeakyBucket(b *testing.B) { benchVerb(b, "LEAKYBUCKET", "k", "100", "10", "1s") }
func BenchmarkSlide(b *testing.B)       { benchVerb(b, "SLIDE", "k", "100", "1m") }

// BenchmarkSlideRandom is loadgen's sliding-log workload without the network:
// keys drawn uniformly from 100,000, so that each gets a handful of admissions
// and its log grows by one entry at every call. -benchtime 2000000x makes it
// redis-benchmark's -n 2000000 -r 100000: 20 admissions a key.
func BenchmarkSlideRandom(b *testing.B) { benchKeys(b, 100_000, true, "SLIDE", "k", "100", "60s") }

// BenchmarkThrottleRandom is BenchmarkSlideRandom's workload on THROTTLE, for comparison.
func BenchmarkThrottleRandom(b *testing.B) {
	benchKeys(b, 100_000, true, "THROTTLE", "k", "100", "10", "60s")
}

func BenchmarkSlideApprox(b *testing.B) { benchVerb(b, "SLIDE", "k", "100", "1m", "APPROX") }
func BenchmarkWindow(b *testing.B)      { benchVerb(b, "WINDOW", "k", "100", "1m") }
func BenchmarkConcurrency(b *testing.B) {
	benchVerb(b, "CONCURRENCY.ACQUIRE", "k", "10", "1m", "worker-1")
}
func BenchmarkAllOf(b *testing.B) {
	benchVerb(b, "ALLOF", "THROTTLE", "k", "100", "10", "1m", "WINDOW", "k2", "100", "1m")
}

// BenchmarkPublish runs PUBLISH through dispatch where nobody subscribes to anything, where
// only others listen (a Sentinel on its hello channel), and to one subscriber whose writer
// goroutine drains into a pipe. The deny events publish on every denial, mostly where
// nobody listens: that must cost next to nothing and allocate nothing.
func BenchmarkPublish(b *testing.B) {
	const channel, message = "__throttled__:denied", "throttle user:42 1500"
	cases := []struct{ name, subscribe, reply string }{
		{"nobody", "", ":0\r\n"},
		{"others", "__sentinel__:hello", ":0\r\n"},
		{"one subscriber", channel, ":1\r\n"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			s, _ := fuzzServer(b)
			var sub *client
			if tc.subscribe != "" {
				nc, peer := net.Pipe()
				b.Cleanup(func() { nc.Close(); peer.Close() })
				go io.Copy(io.Discard, peer)
				sub = s.newClient(nc)
				s.run(sub, [][]byte{[]byte("SUBSCRIBE"), []byte(tc.subscribe)})
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				nc, peer := net.Pipe()
				defer peer.Close()
				c := s.newClient(nc)
				req := [][]byte{[]byte("PUBLISH"), []byte(channel), []byte(message)}
				for pb.Next() {
					s.run(c, req)
					if string(c.W.B) != tc.reply {
						b.Fatalf("PUBLISH: %q", c.W.B)
					}
					c.W.B = c.W.B[:0]
				}
			})
			if sub != nil {
				sub.out.mu.Lock()
				dead := sub.out.dead
				sub.out.mu.Unlock()
				if dead {
					b.Fatal("the subscriber fell behind its output limit")
				}
			}
		})
	}
}

// BenchmarkCheck is CHECK of a policy holding THROTTLE's numbers, to set against
// BenchmarkThrottle: the same work plus the policy's lookup and the key's derivation.
func BenchmarkCheck(b *testing.B) {
	s, c := fuzzServer(b)
	s.run(c, [][]byte{[]byte("POLICY.SET"), []byte("api"), []byte("THROTTLE"), []byte("100"), []byte("10"), []byte("1m")})
	if c.W.B[0] == '-' {
		b.Fatalf("%s", c.W.B)
	}
	benchOn(b, s, "CHECK", "api", "k", "COST", "1")
}

// BenchmarkCheckWithLists is BenchmarkCheck with a policy that has exact, prefix and CIDR
// entries none of the subjects match.
func BenchmarkCheckWithLists(b *testing.B) {
	s, c := fuzzServer(b)
	for _, cmd := range [][]string{
		{"POLICY.SET", "api", "THROTTLE", "100", "10", "1m"},
		{"POLICY.ALLOW", "api", "vip"},
		{"POLICY.DENY", "api", "bot*"},
		{"POLICY.DENY", "api", "10.0.0.0/8"},
	} {
		req := make([][]byte, len(cmd))
		for i, a := range cmd {
			req[i] = []byte(a)
		}
		s.run(c, req)
		if c.W.B[0] == '-' {
			b.Fatalf("%s", c.W.B)
		}
		c.W.B = c.W.B[:0]
	}
	benchOn(b, s, "CHECK", "api", "k", "COST", "1")
}

// benchOn is benchVerb on the server s, prepared by the caller.
func benchOn(b *testing.B, s *Server, args ...string) {
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
		keys := benchKeyNames(1000)
		at := 0
		for i, a := range args {
			if a == "k" {
				at = i
			}
		}
		for i := 0; pb.Next(); i++ {
			req[at] = keys[i%len(keys)]
			s.run(c, req)
			if c.W.B[0] == '-' {
				b.Fatalf("%q: %s", req, c.W.B)
			}
			c.W.B = c.W.B[:0]
		}
	})
}

// BenchmarkHotKey is CL.THROTTLE of one key from every goroutine, each a connection whose
// reads bring 16 requests at once, run as an event loop runs them: batched, the requests
// of one read share one acquisition of the key's shard lock (batch.go); one by one, each
// takes it. Allowed or denied, each is its own decision; the limit admits every call.
func BenchmarkHotKey(b *testing.B) {
	// A billion an hour: every call allowed, and the key lives on (a period of a second
	// would leave it idle, expired and made again at each call, at the benchmark's clock).
	b.Run("batched", func(b *testing.B) { benchHotKey(b, true, "1000000000", "3600") })
	b.Run("one-by-one", func(b *testing.B) { benchHotKey(b, false, "1000000000", "3600") })
	// denied: one attacker's address, which the limit denies nearly always.
	b.Run("denied/batched", func(b *testing.B) { benchHotKey(b, true, "1", "3600") })
	b.Run("denied/one-by-one", func(b *testing.B) { benchHotKey(b, false, "1", "3600") })
}

func benchHotKey(b *testing.B, batched bool, rate, period string) {
	s := benchServer(b)
	req := pipeline(16, "CL.THROTTLE", "hot", rate, rate, period, "1")
	b.ResetTimer()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := s.newClient(nc)
		benchClock(c)
		for pb.Next() {
			if !c.rd.Buffered() {
				c.letGo()
				if len(c.W.B) > 0 && c.W.B[0] == '-' {
					b.Fatalf("%s", c.W.B)
				}
				c.W.B = c.W.B[:0]
				c.rd.Start, c.rd.End = 0, copy(c.rd.Buf, req)
			}
			args, err := c.rd.Next()
			if err != nil {
				b.Fatal(err)
			}
			if batched {
				s.hold(c, args)
			}
			s.run(c, args)
		}
		c.letGo()
	})
}
