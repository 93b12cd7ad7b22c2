package main

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
	"github.com/throttledhq/throttled/scripting/native"
)

// The scripts part measures EVALSHA of the limiter scripts clients send unchanged, on throttled
// (appendonly no) and on redis-server: redis_rate's GCRA and a token bucket in a hash with
// fractional tokens. Each script is loaded on both (SCRIPT LOAD), both are checked to answer
// alike, then measured in paired rounds over random keys at P=1 and 16, shared and with each
// server on a core of its own, as the collections part does.

// redisRateAllowN is the script github.com/go-redis/redis_rate/v10 v10.0.1 sends for
// Limiter.AllowN, byte for byte as package native keeps it (its digest is the library's).
// KEYS[1] "rate:" + key; ARGV: burst, rate, period (s), cost.
// Reply: allowed (cost or 0), remaining, retry_after (s), reset_after (s); the last two as text.
const redisRateAllowN = native.RedisRateAllowN

// hashBucketScript is the classic token bucket in a hash: the tokens, a fraction of them
// refilled every moment, and the time of the last refill (s, with µs), read with HMGET and
// written back with HMSET, the key expiring once the bucket would be full again. The clock is
// ARGV[4] when the client sends one (as Stripe's limiter does), redis.call('TIME') otherwise.
// KEYS[1] key; ARGV: capacity, refill tokens per second, cost, [now (s)].
// Reply: allowed (1 or 0), whole tokens left, the tokens left as text.
const hashBucketScript = `
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local state = redis.call('HMGET', KEYS[1], 'tokens', 'last')
local tokens = tonumber(state[1]) or capacity
local last = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - last) * rate)
local allowed = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
end
redis.call('HMSET', KEYS[1], 'tokens', tokens, 'last', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate * 1000) + 1000)
return {allowed, math.floor(tokens), tostring(tokens)}
`

// evalshaScript is one script of the part, with the arguments the load sends it.
type evalshaScript struct {
	name, body, prefix string
	argv               []string // after the key
	text               string   // the arguments, for the report
	native             bool     // package native runs it as Go code
}

// evalshaScripts: redis_rate.PerSecond(10) (burst 10, rate 10, period 1 s, as Allow sends it,
// its key prefixed "rate:"), and a bucket of 10 tokens refilled at 0.5 a second; then the
// other scripts package native runs as Go code: redis_rate's AllowAtMost with the same limit,
// rate-limit-redis's increment and get (a window of a minute) and rate-limiter-flexible's
// incrTtl (a point in a window of a minute), each with the arguments its library sends.
var evalshaScripts = []evalshaScript{
	{name: "redis_rate v10 AllowN (GCRA)", body: redisRateAllowN, prefix: "rate", argv: []string{"10", "10", "1", "1"},
		text: "EVALSHA sha 1 rate:k 10 10 1 1", native: true},
	{name: "token bucket in a hash", body: hashBucketScript, prefix: "bucket", argv: []string{"10", "0.5", "1"},
		text: "EVALSHA sha 1 k 10 0.5 1"},
	{name: "redis_rate v10 AllowAtMost", body: native.RedisRateAllowAtMost, prefix: "ratemost", argv: []string{"10", "10", "1", "1"},
		text: "EVALSHA sha 1 rate:k 10 10 1 1", native: true},
	{name: "rate-limit-redis increment", body: native.RateLimitRedisIncrement, prefix: "rl", argv: []string{"60000"},
		text: "EVALSHA sha 1 rl:k 60000", native: true},
	{name: "rate-limit-redis get", body: native.RateLimitRedisGet, prefix: "rl", argv: nil,
		text: "EVALSHA sha 1 rl:k", native: true},
	{name: "rate-limiter-flexible incrTtl", body: native.RateLimiterFlexible, prefix: "rlflx", argv: []string{"1", "60"},
		text: "EVALSHA sha 1 rlflx:k 1 60", native: true},
}

// interpreterSide marks the pairs measured with lua-native-scripts off: the native
// scripts on the interpreter, not as Go code.
const interpreterSide = ", interpreter"

// evalshaRun is what the scripts part measured.
type evalshaRun struct {
	checks []scriptCheck
	pairs  []pair
}

// scriptCheck is one call, or a sequence of calls on one key, made on both servers.
type scriptCheck struct {
	script, name string
	exact        bool // the replies are byte-identical; else alike up to the clock
	calls        int
}

// evalsha runs the scripts part.
func (r *runner) evalsha() (evalshaRun, error) {
	var run evalshaRun
	t, err := r.track(startThrottled("throttled (scripts)", r.cfg.bin, r.tmp+"/scripts", "--appendonly", "no"))
	if err != nil {
		return run, err
	}
	redis, err := r.track(startRedis(r.tmp))
	if err != nil {
		return run, err
	}
	shas := make([]string, len(evalshaScripts))
	for i, sc := range evalshaScripts {
		for _, s := range []*server{redis, t} {
			v, err := s.do("SCRIPT", "LOAD", sc.body)
			if err != nil {
				return run, fmt.Errorf("SCRIPT LOAD %s on %s: %w", sc.name, s.name, err)
			}
			if shas[i] != "" && v != shas[i] {
				return run, fmt.Errorf("SCRIPT LOAD %s: digest %v on %s, %s on redis", sc.name, v, s.name, shas[i])
			}
			shas[i], _ = v.(string)
		}
	}
	if run.checks, err = checkScripts(redis, t, shas); err != nil {
		return run, err
	}
	log.Print("scripts answer alike on both servers; measuring")
	pairsAt := func(p int, suffix string) []pair {
		var out []pair
		for i, sc := range evalshaScripts {
			req := func(k string) []byte {
				return loadtest.Encode(append([]string{"EVALSHA", shas[i], "1", k}, sc.argv...)...)
			}
			out = append(out, pair{prefix: sc.prefix, pipeline: p,
				a: side{label: "throttled " + sc.name + suffix, srv: t, request: req},
				b: side{label: "redis " + sc.name, srv: redis, request: req}})
		}
		return out
	}
	// The native scripts are recognised by their digest and run as Go code (scripting/native);
	// measured again with lua-native-scripts off, they take the interpreter as any other.
	interpreted := func(suffix string) ([]pair, error) {
		if _, err := t.do("CONFIG", "SET", "lua-native-scripts", "no"); err != nil {
			return nil, err
		}
		defer t.do("CONFIG", "SET", "lua-native-scripts", "yes")
		var ps []pair
		for i, p := range append(pairsAt(1, interpreterSide+suffix), pairsAt(16, interpreterSide+suffix)...) {
			if evalshaScripts[i%len(evalshaScripts)].native {
				ps = append(ps, p)
			}
		}
		return ps, r.measurePairs(ps)
	}
	run.pairs = append(pairsAt(1, ""), pairsAt(16, "")...)
	if err := r.measurePairs(run.pairs); err != nil {
		return run, err
	}
	ps, err := interpreted("")
	if err != nil {
		return run, err
	}
	run.pairs = append(run.pairs, ps...)
	// As in the collections part: again with each server on CPU 1 and the load on CPU 0.
	all := "0-" + strconv.Itoa(runtime.NumCPU()-1)
	if err := pinAll(map[*server]string{t: "1", redis: "1"}, "0"); err != nil {
		return run, err
	}
	pinned := append(pairsAt(1, ownCore), pairsAt(16, ownCore)...)
	err = r.measurePairs(pinned)
	run.pairs = append(run.pairs, pinned...)
	if err == nil {
		ps, err = interpreted(ownCore)
		run.pairs = append(run.pairs, ps...)
	}
	return run, errors.Join(err, pinAll(map[*server]string{t: all, redis: all}, all))
}

// checkScripts makes the same calls on both servers and fails at the first pair of replies
// that differ. A reply that does not depend on the clock must be byte-identical: a fresh
// key's (the state starts from now whatever now is), and every reply of the token bucket
// given its clock in ARGV, with the hash it leaves. The others (later calls of redis_rate on
// one key) must have the same integers, and texts that are numbers within a second.
func checkScripts(redis, t *server, shas []string) ([]scriptCheck, error) {
	rate, bucket := shas[0], shas[1]
	type call struct {
		key  string
		argv []string
	}
	same := func(key string, n int, argv ...string) []call {
		out := make([]call, n)
		for i := range out {
			out[i] = call{key, argv}
		}
		return out
	}
	bucketAt := func(key string, cost string, nows ...string) []call {
		var out []call
		for _, now := range nows {
			out = append(out, call{key, []string{"5", "0.37", cost, now}})
		}
		return out
	}
	cases := []struct {
		check scriptCheck
		sha   string
		calls []call
		after []string // a command on the key whose reply must be identical too
	}{
		{scriptCheck{script: "redis_rate", name: "fresh key, allowed (burst 10, 1/s)", exact: true}, rate,
			same("rate:check1", 1, "10", "1", "1", "1"), nil},
		{scriptCheck{script: "redis_rate", name: "fresh key, cost 5 over a burst of 3: denied", exact: true}, rate,
			same("rate:check2", 1, "3", "1", "1", "5"), nil},
		{scriptCheck{script: "redis_rate", name: "fresh key, cost 0 (10/s)", exact: true}, rate,
			same("rate:check3", 1, "10", "10", "1", "0"), nil},
		{scriptCheck{script: "redis_rate", name: "fresh key, 5 per hour, burst 2", exact: true}, rate,
			same("rate:check4", 1, "2", "5", "3600", "1"), nil},
		{scriptCheck{script: "redis_rate", name: "one key, burst 3 of 1 per hour: 4 allowed, then denied"}, rate,
			same("rate:check5", 6, "3", "1", "3600", "1"), nil},
		{scriptCheck{script: "token bucket", name: "clock in ARGV: refills of 0.37/s, drained and refilled, then HGETALL", exact: true}, bucket,
			append(bucketAt("bucket:check1", "1", "1000", "1000.25", "1000.5", "1000.75", "1001", "1001.000001", "1001.1", "1003.7", "1010"),
				bucketAt("bucket:check1", "0.5", "1010", "1010.3", "1010.3", "1010.3", "1010.3", "1010.3", "1010.3")...),
			[]string{"HGETALL", "bucket:check1"}},
		{scriptCheck{script: "token bucket", name: "fresh key, server clock", exact: true}, bucket,
			same("bucket:check2", 1, "10", "0.5", "1"), []string{"HMGET", "bucket:check2", "tokens"}},
		{scriptCheck{script: "token bucket", name: "one key, server clock: 10 calls on a bucket of 3"}, bucket,
			same("bucket:check3", 10, "3", "0.5", "1"), nil},
	}
	var out []scriptCheck
	for _, c := range cases {
		for _, s := range []*server{redis, t} {
			if _, err := s.do("DEL", c.calls[0].key); err != nil {
				return nil, err
			}
		}
		for i, cl := range c.calls {
			args := append([]string{"EVALSHA", c.sha, "1", cl.key}, cl.argv...)
			want, err := redis.raw(args...)
			if err != nil {
				return nil, fmt.Errorf("check %s: %s: redis: %w", c.check.script, c.check.name, err)
			}
			got, err := t.raw(args...)
			if err != nil {
				return nil, fmt.Errorf("check %s: %s: throttled: %w", c.check.script, c.check.name, err)
			}
			if alike(want, got, c.check.exact) {
				continue
			}
			return nil, fmt.Errorf("check %s: %s: call %d (%s): redis replied %q, throttled %q",
				c.check.script, c.check.name, i+1, strings.Join(cl.argv, " "), want, got)
		}
		if c.after != nil {
			want, err := redis.raw(c.after...)
			if err != nil {
				return nil, err
			}
			got, err := t.raw(c.after...)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(want, got) {
				return nil, fmt.Errorf("check %s: %s: %s: redis replied %q, throttled %q",
					c.check.script, c.check.name, strings.Join(c.after, " "), want, got)
			}
		}
		c.check.calls = len(c.calls)
		out = append(out, c.check)
	}
	return out, nil
}

// alike compares two replies: byte for byte when exact, else as values, integers equal and
// texts that are numbers within a second (written a moment apart).
func alike(a, b []byte, exact bool) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if exact {
		return false
	}
	va, err1 := loadtest.NewReader(bytes.NewReader(a)).Value()
	vb, err2 := loadtest.NewReader(bytes.NewReader(b)).Value()
	if err1 != nil || err2 != nil {
		return false
	}
	xs, ok1 := va.([]any)
	ys, ok2 := vb.([]any)
	if !ok1 || !ok2 || len(xs) != len(ys) {
		return false
	}
	for i := range xs {
		if reflect.DeepEqual(xs[i], ys[i]) {
			continue
		}
		sx, ok1 := xs[i].(string)
		sy, ok2 := ys[i].(string)
		if !ok1 || !ok2 {
			return false
		}
		fx, err1 := strconv.ParseFloat(sx, 64)
		fy, err2 := strconv.ParseFloat(sy, 64)
		if err1 != nil || err2 != nil || math.Abs(fx-fy) > 1 {
			return false
		}
	}
	return true
}

// raw sends one command on a connection of its own and returns its reply's bytes.
func (s *server) raw(args ...string) ([]byte, error) {
	c, err := net.DialTimeout("tcp", s.addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(loadtest.Encode(args...)); err != nil {
		return nil, err
	}
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		n, err := c.Read(chunk)
		buf = append(buf, chunk[:n]...)
		size, _, serr := loadtest.Scan(buf) // an error reply is a reply like any other here
		if size > 0 {
			return buf[:size], nil
		}
		if serr != nil {
			return nil, fmt.Errorf("reply %q: %w", buf, serr)
		}
		if err != nil {
			return nil, err
		}
	}
}

func evalshaSection(cfg config, run evalshaRun) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## Scripts: EVALSHA of the limiters clients send\n\n")
	p("The same scripts, loaded with SCRIPT LOAD on throttled (`--appendonly no`) and on redis-server, called\n")
	p("with EVALSHA over %d random keys at %d connections, in paired rounds as above:\n\n", cfg.keys, cfg.conns)
	for _, sc := range evalshaScripts {
		p("- %s: `%s`\n", sc.name, sc.text)
	}
	p("\nredis_rate's scripts are go-redis/redis_rate v10.0.1's `allowN` and `allowAtMost` (lua.go) byte for byte,\n")
	p("rate-limit-redis 6.0.1's `increment` and `get` and rate-limiter-flexible 11.4.0's `incrTtl` as those\n")
	p("libraries send them (package scripting/native keeps them); the token bucket keeps fractional tokens in a\n")
	p("hash (HMGET, HMSET, PEXPIRE, in `benchmarks/cmd/loadgen/evalsha.go`). throttled recognises the five\n")
	p("library scripts by their digest and runs them as Go code (package scripting/native), byte-identical to\n")
	p("the interpreter; the rows marked \"interpreter\" ran them with `CONFIG SET lua-native-scripts no`, on the\n")
	p("Lua interpreter as every other script. The token bucket always takes the interpreter.\n")
	p("The rows marked \"own core\" ran with each server pinned to CPU 1 (one loaded at a time) and the load on CPU 0.\n\n")
	p("| comparison | P | throttled, req/s | redis, req/s | ratio per round | median |\n|---|--:|---|---|---|--:|\n")
	for _, c := range run.pairs {
		p("| %s | %d | %s | %s | %s | %.3f |\n", strings.TrimPrefix(c.a.label, "throttled "), c.pipeline,
			rounds(c.ra), rounds(c.rb), ratios(c), c.median)
	}
	p("\nThe CPU time each server's process spent per call in the same rounds (user and system, from\n")
	p("/proc/PID/stat): what a call costs, steadier than req/s when other work shares the cores. A ratio\n")
	p("above 1 means redis-server spent more per call than throttled.\n\n")
	p("| comparison | P | throttled, µs/call | redis, µs/call | redis / throttled, median |\n|---|--:|---|---|--:|\n")
	for _, c := range run.pairs {
		p("| %s | %d | %s | %s | %.3f |\n", strings.TrimPrefix(c.a.label, "throttled "), c.pipeline,
			micros(c.ca), micros(c.cb), cpuRatio(c))
	}
	p("\nBefore measuring, the same calls were made on both servers (fresh keys), each reply compared:\n\n")
	p("| script | calls | replies |\n|---|---|---|\n")
	for _, c := range run.checks {
		how := "alike: integers equal, times within a second (they depend on the clock)"
		if c.exact {
			how = "byte-identical"
		}
		p("| %s | %s (%d) | %s |\n", c.script, c.name, c.calls, how)
	}
	return b.String()
}

// micros formats each round's ns as µs.
func micros(ns []float64) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = fmt.Sprintf("%.2f", n/1000)
	}
	return strings.Join(out, " ")
}

// cpuRatio is the median over the rounds of redis's CPU per call over throttled's.
func cpuRatio(c pair) float64 {
	rs := make([]float64, len(c.ca))
	for i := range c.ca {
		rs[i] = c.cb[i] / c.ca[i]
	}
	return median(rs)
}

// evalshaTargets: each script at least as fast as on Redis, at each P.
func evalshaTargets(run evalshaRun) []target {
	var out []target
	for _, c := range run.pairs {
		out = append(out, target{fmt.Sprintf("P=%d: EVALSHA %s at least Redis", c.pipeline, strings.TrimPrefix(c.a.label, "throttled ")),
			fmt.Sprintf("%.2f (median of %d interleaved rounds)", c.median, len(c.ra)), c.median >= 1})
	}
	return out
}
