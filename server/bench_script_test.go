package server

import (
	"net"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/throttledhq/throttled/scripting/native"
)

// redisRateAllowN is go-redis/redis_rate v10.0.1's GCRA script (lua.go), as package native
// recognises it: the most run limiter script there is.
const redisRateAllowN = native.RedisRateAllowN

// benchScript runs EVALSHA of body through dispatch, the interpreter and the keyspace (no
// network) over 100,000 random keys, as benchKeys does a verb; argv follows the key (it
// repeats every 1,024 calls).
func benchScript(b *testing.B, body string, argv func(i int) []string) {
	benchScriptPath(b, body, argv, true)
}

// benchScriptPath is benchScript, with the scripts package native knows run as Go code
// (native) or on the interpreter.
func benchScriptPath(b *testing.B, body string, argv func(i int) []string, native bool) {
	s := benchServer(b) // each goroutine's client has a clock of its own (benchClock)
	s.scripts.eng.SetNative(native)
	sc, err := s.scripts.eng.Load([]byte(body))
	if err != nil {
		b.Fatal(err)
	}
	keys := benchKeyNames(100_000)
	argvs := make([][][]byte, 1024) // argv(i) for i mod 1024, as bytes: the loop allocates nothing of its own
	for i := range argvs {
		for _, a := range argv(i) {
			argvs[i] = append(argvs[i], []byte(a))
		}
	}
	fill := [][]byte{[]byte("EVALSHA"), []byte(sc.SHA), []byte("1"), nil}
	fill = append(fill, argvs[0]...)
	fnc, fpeer := net.Pipe()
	defer fpeer.Close()
	filler := s.newClient(fnc)
	benchClock(filler)
	for _, k := range keys { // each key called once: the steady state is measured, not the keys' creation
		fill[3] = k
		s.run(filler, fill)
		filler.W.B = filler.W.B[:0]
	}
	var seed atomic.Uint64
	b.ResetTimer()
	b.ReportAllocs()
	defer reportCPU(b, cpuNanos())
	b.RunParallel(func(pb *testing.PB) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := s.newClient(nc)
		benchClock(c)
		benchOwn(c)
		rng := benchRand(seed.Add(1))
		head := [][]byte{[]byte("EVALSHA"), []byte(sc.SHA), []byte("1"), nil}
		req := benchLocal[[]byte](len(head) + len(argvs[0]))[:0] // every argv(i) is as long
		for i := 0; pb.Next(); i++ {
			req = append(req[:0], head...)
			req[3] = keys[rng.IntN(len(keys))]
			req = append(req, argvs[i%len(argvs)]...)
			s.run(c, req)
			if c.W.B[0] == '-' {
				b.Fatalf("%q: %s", req, c.W.B)
			}
			c.W.B = c.W.B[:0]
		}
	})
}

// BenchmarkEvalshaGCRA is redis_rate's Allow: EVALSHA of its GCRA script (allowN), run
// as Go code (package scripting/native) and on the interpreter.
func BenchmarkEvalshaGCRA(b *testing.B) {
	args := []string{"10", "10", "1", "1"} // burst, rate, period (s), cost
	b.Run("native", func(b *testing.B) { benchScriptPath(b, redisRateAllowN, func(int) []string { return args }, true) })
	b.Run("interpreter", func(b *testing.B) { benchScriptPath(b, redisRateAllowN, func(int) []string { return args }, false) })
}

// BenchmarkEvalshaRedisRate is BenchmarkEvalshaGCRA's native run as a benchmark of its own,
// without sub-benchmarks, so that one -bench pattern selects it beside BenchmarkGet and the
// rest (benchmarks/cmd/scaling).
func BenchmarkEvalshaRedisRate(b *testing.B) {
	benchScriptPath(b, redisRateAllowN, func(int) []string { return []string{"10", "10", "1", "1"} }, true)
}

// BenchmarkEvalshaGCRAAtMost is redis_rate's AllowAtMost: its other script.
func BenchmarkEvalshaGCRAAtMost(b *testing.B) {
	args := []string{"10", "10", "1", "3"}
	b.Run("native", func(b *testing.B) { benchScriptPath(b, redisRateAllowAtMost, func(int) []string { return args }, true) })
	b.Run("interpreter", func(b *testing.B) {
		benchScriptPath(b, redisRateAllowAtMost, func(int) []string { return args }, false)
	})
}

// BenchmarkEvalshaTokenBucket is the classic token bucket in a hash, with fractional
// tokens (the differential test's script), its clock in ARGV.
func BenchmarkEvalshaTokenBucket(b *testing.B) {
	body := limiterScripts[0].body
	now := make([]string, 1024)
	for i := range now {
		now[i] = strconv.FormatFloat(1000+float64(i)*0.0137, 'f', 3, 64)
	}
	benchScript(b, body, func(i int) []string { return []string{"10", "100", now[i%len(now)], "1"} })
}

// BenchmarkEvalshaReturn is the fixed cost of a script call: EVALSHA of "return 1".
func BenchmarkEvalshaReturn(b *testing.B) {
	benchScript(b, "return 1", func(int) []string { return nil })
}

// BenchmarkEvalshaFixedWindow is rate-limit-redis's increment (express-rate-limit's
// store): PTTL, then SET PX or INCR, run as Go code and on the interpreter.
func BenchmarkEvalshaFixedWindow(b *testing.B) {
	args := []string{"60000"}
	b.Run("native", func(b *testing.B) {
		benchScriptPath(b, native.RateLimitRedisIncrement, func(int) []string { return args }, true)
	})
	b.Run("interpreter", func(b *testing.B) {
		benchScriptPath(b, native.RateLimitRedisIncrement, func(int) []string { return args }, false)
	})
}
