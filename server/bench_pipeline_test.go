package server

import (
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// pipelineSource hands the reader one prepared pipeline a read, in turn, as a socket
// would give an event loop the requests redis-benchmark -P sent at once.
type pipelineSource struct {
	reads [][]byte
	next  int
	off   int // what of reads[next] the last read had no room for starts here
}

func (p *pipelineSource) Read(b []byte) (int, error) {
	n := copy(b, p.reads[p.next][p.off:])
	if p.off += n; p.off == len(p.reads[p.next]) {
		p.next, p.off = (p.next+1)%len(p.reads), 0
	}
	return n, nil
}

// benchPipeline runs requests the way an event loop serves a connection (loop.serve):
// read, parse, look ahead (prefetchKeys), hold, run, a pipeline of depth requests a read,
// over nkeys random keys each made first by args, as redis-benchmark -P depth -r nkeys
// sends them; one op is one request. batch is prefetch-batch-max-size. fill, when not nil,
// makes the keys instead of args (SET before GET).
func benchPipeline(b *testing.B, nkeys, depth, batch int, fill []string, args ...string) {
	if fill == nil {
		fill = args
	}
	s, keys := pipelineServer(b, nkeys, fill)
	s.prefetchBatch.Store(int64(batch))
	rng := rand.New(rand.NewPCG(1, 2))
	src := &pipelineSource{reads: make([][]byte, 4096)}
	for i := range src.reads {
		var w strings.Builder
		for range depth {
			w.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
			for _, a := range args {
				if a == "k" {
					a = string(keys[rng.IntN(len(keys))])
				}
				w.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
			}
		}
		src.reads[i] = []byte(w.String())
	}
	nc, peer := net.Pipe()
	defer peer.Close()
	c := s.newClient(nc)
	benchClock(c)
	c.rd.Src = src
	runtime.GC() // the fill's garbage: no collection runs meanwhile, with its write barriers
	growStack()
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b, cpuNanos())
	servePipeline(b, s, c)
}

// servePipeline is benchPipeline's measured loop, a function of its own so that a profiler
// can count only it (valgrind --tool=callgrind --toggle-collect='*servePipeline').
//
//go:noinline
func servePipeline(b *testing.B, s *Server, c *client) {
	for range b.N {
		if c.held != nil && !c.rd.Buffered() {
			c.letGo()
		}
		req, err := c.rd.Next()
		if err != nil {
			b.Fatal(err)
		}
		s.hold(c, req)
		s.run(c, req)
		if c.rd.End <= c.rd.Start {
			c.letGo()
			if c.W.B[0] == '-' {
				b.Fatalf("%s", c.W.B)
			}
			c.W.B = c.W.B[:0]
			c.startBatch()
		}
	}
	c.letGo()
}

// pipelineServers are benchPipeline's servers, each filled once a run (5,000,000 keys take
// a while), by key count and request.
var pipelineServers = map[string]*Server{}

// pipelineServer is the server of nkeys keys each made first by args, and the keys.
func pipelineServer(b *testing.B, nkeys int, args []string) (*Server, [][]byte) {
	keys := benchKeyNames(nkeys)
	id := strconv.Itoa(nkeys) + " " + strings.Join(args, " ")
	s := pipelineServers[id]
	if s == nil {
		s = benchServer(&testing.B{}) // kept for the run: its cleanup never runs
		benchFill(b, s, keys, args)
		pipelineServers[id] = s
	}
	return s, keys
}

// BenchmarkPipeline is INCREX and INCR as benchmarks/increx.sh sends them, at pipeline 1
// and 16, over 100,000 random keys (and over 5,000,000, where the keyspace is past the
// processor's caches), with and without the key prefetch.
func BenchmarkPipeline(b *testing.B) {
	for _, nkeys := range []int{100_000, 5_000_000} {
		for _, depth := range []int{1, 16} {
			for _, batch := range []int{0, defaultPrefetchBatch} {
				for _, req := range [][]string{{"INCR", "k"}, {"INCREX", "k"}, {"INCREX", "k", "BYINT", "1", "UBOUND", "100", "EX", "60"}} {
					name := strings.Join(req[:min(len(req), 3)], "_") + "/keys=" + strconv.Itoa(nkeys) +
						"/P=" + strconv.Itoa(depth) + "/prefetch=" + strconv.Itoa(batch)
					b.Run(name, func(b *testing.B) { benchPipeline(b, nkeys, depth, batch, nil, req...) })
				}
			}
		}
	}
}

// BenchmarkPipelineVerbs is GET and CL.THROTTLE as BenchmarkPipeline runs INCR, at pipeline
// 1 and 16 over 100,000 random keys with the key prefetch: what the reader, dispatch and the
// reply cost other commands beside INCREX (each GET a hit).
func BenchmarkPipelineVerbs(b *testing.B) {
	for _, depth := range []int{1, 16} {
		for _, req := range [][]string{{"GET", "k"}, {"CL.THROTTLE", "k", "100", "10", "60", "1"}} {
			fill := req
			if req[0] == "GET" {
				fill = []string{"SET", "k", "12345"}
			}
			b.Run(req[0]+"/P="+strconv.Itoa(depth), func(b *testing.B) {
				benchPipeline(b, 100_000, depth, defaultPrefetchBatch, fill, req...)
			})
		}
	}
}

// growStack grows the goroutine's stack before the measured loop, so that it does not
// grow (and move) inside it: a profiler that follows calls by the stack pointer
// (callgrind) loses its place when it does.
//
//go:noinline
func growStack() byte {
	var b [256 << 10]byte
	for i := range b {
		b[i] = byte(i)
	}
	return b[len(b)/3]
}
