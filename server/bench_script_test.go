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
)

// redisRateAllowN is go-redis/redis_rate v10.0.1's GCRA script (lua.go), test data here:
// the most run limiter script there is.
const redisRateAllowN = `
-- this script has side-effects, so it requires replicate commands mode
redis.replicate_commands()

local rate_limit_key = KEYS[1]
local burst = ARGV[1]
local rate = ARGV[2]
local period = ARGV[3]
local cost = tonumber(ARGV[4])

local emission_interval = period / rate
local increment = emission_interval * cost
local burst_offset = emission_interval * burst

-- redis returns time as an array containing two integers: seconds of the epoch
-- time (10 digits) and microseconds (6 digits). for convenience we need to
-- convert them to a floating point number. the resulting number is 16 digits,
-- bordering on the limits of a 64-bit double-precision floating point number.
-- adjust the epoch to be relative to Jan 1, 2017 00:00:00 GMT to avoid floating
-- point problems. this approach is good until "now" is 2,483,228,799 (Wed, 09
-- Sep 2048 01:46:39 GMT), when the adjusted value is 16 digits.
local jan_1_2017 = 1483228800
local now = redis.call("TIME")
now = (now[1] - jan_1_2017) + (now[2] / 1000000)

local tat = redis.call("GET", rate_limit_key)

if not tat then
  tat = now
else
  tat = tonumber(tat)
end

tat = math.max(tat, now)

local new_tat = tat + increment
local allow_at = new_tat - burst_offset

local diff = now - allow_at
local remaining = diff / emission_interval

if remaining < 0 then
  local reset_after = tat - now
  local retry_after = diff * -1
  return {
    0, -- allowed
    0, -- remaining
    tostring(retry_after),
    tostring(reset_after),
  }
end

local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", rate_limit_key, new_tat, "EX", math.ceil(reset_after))
end
local retry_after = -1
return {cost, remaining, tostring(retry_after), tostring(reset_after)}
`

// benchScript runs EVALSHA of body through dispatch, the interpreter and the keyspace (no
// network) over 100,000 random keys, as benchKeys does a verb; argv follows the key.
func benchScript(b *testing.B, body string, argv func(i int) []string) {
	benchScriptPath(b, body, argv, true)
}

// benchScriptPath is benchScript, with the scripts package native knows run as Go code
// (native) or on the interpreter.
func benchScriptPath(b *testing.B, body string, argv func(i int) []string, native bool) {
	cfg := DefaultConfig()
	cfg.AppendOnly = false
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	var clock atomic.Int64
	clock.Store(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	cfg.Now = func() time.Time { return time.Unix(0, clock.Add(2000)) }
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	s.scripts.eng.SetNative(native)
	sc, err := s.scripts.eng.Load([]byte(body))
	if err != nil {
		b.Fatal(err)
	}
	keys := benchKeyNames(100_000)
	var seed atomic.Uint64
	b.ResetTimer()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		nc, peer := net.Pipe()
		defer peer.Close()
		c := s.newClient(nc)
		rng := rand.New(rand.NewPCG(seed.Add(1), 0))
		head := [][]byte{[]byte("EVALSHA"), []byte(sc.SHA), []byte("1"), nil}
		var req [][]byte
		for i := 0; pb.Next(); i++ {
			req = append(req[:0], head...)
			req[3] = keys[rng.IntN(len(keys))]
			for _, a := range argv(i) {
				req = append(req, []byte(a))
			}
			s.run(c, req)
			if c.w.b[0] == '-' {
				b.Fatalf("%q: %s", req, c.w.b)
			}
			c.w.b = c.w.b[:0]
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
