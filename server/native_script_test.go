package server

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/bits"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/redistest"
	"github.com/throttledhq/throttled/scripting/native"
)

// The native scripts (package scripting/native) against the interpreter: two servers on
// one injected clock, one running the scripts it recognises as Go code and one running
// every script on Lua, get the same calls and must give byte-identical replies and be
// left with identical keyspaces (every key's type, bytes and expiry).

// nativePair is the two servers, and a client of each.
type nativePair struct {
	clock      atomic.Int64 // Unix nanoseconds: TIME, and the keyspace's expiry, on both
	native     *Server
	interp     *Server
	nc, ic     *client
	keys       []string
	calls, rej int
}

func newNativePair(t testing.TB, start time.Time) *nativePair {
	p := &nativePair{keys: []string{"rl:a", "rl:b", "rl:c", "rl:h"}}
	p.clock.Store(start.UnixNano())
	mk := func(native bool) (*Server, *client) {
		cfg := DefaultConfig()
		cfg.Shards = 4
		cfg.AppendOnly = false
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		cfg.Now = func() time.Time { return time.Unix(0, p.clock.Load()) }
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		s.scripts.eng.SetNative(native)
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return s, s.newClient(a)
	}
	p.native, p.nc = mk(true)
	p.interp, p.ic = mk(false)
	return p
}

// do runs args on both servers and returns both replies.
func (p *nativePair) do(args ...string) (native, interp string) {
	req := make([][]byte, len(args))
	for i, a := range args {
		req[i] = []byte(a)
	}
	run := func(s *Server, c *client) string {
		c.W.B = c.W.B[:0]
		s.run(c, req)
		return string(c.W.B)
	}
	return run(p.native, p.nc), run(p.interp, p.ic)
}

// state is every key's type, value and absolute expiry, on one server.
func (p *nativePair) state(s *Server, c *client) string {
	var b strings.Builder
	run := func(args ...string) string {
		req := make([][]byte, len(args))
		for i, a := range args {
			req[i] = []byte(a)
		}
		c.W.B = c.W.B[:0]
		s.run(c, req)
		return string(c.W.B)
	}
	keys := strings.Split(run("KEYS", "*"), "\r\n") // not DBSIZE: it counts expired keys that active expiry, on its own time, has not reclaimed yet
	slices.Sort(keys)
	b.WriteString(strings.Join(keys, " "))
	for _, k := range p.keys {
		typ := run("TYPE", k)
		b.WriteString(k + " " + typ + run("PEXPIRETIME", k))
		switch typ {
		case "+string\r\n":
			b.WriteString(run("GET", k))
		case "+hash\r\n":
			b.WriteString(run("HGETALL", k))
		}
	}
	return b.String()
}

// nativeScripts are the scripts package native knows, by name.
var nativeScripts = map[string]string{
	"allowN":      redisRateAllowN,
	"allowAtMost": redisRateAllowAtMost,
	"increment":   rateLimitRedisIncrement,
	"get":         rateLimitRedisGet,
	"flexible":    rateLimiterFlexible,
}

// nativeArg is a random argument of a limiter: mostly what the libraries send, sometimes
// what only the interpreter can read.
func nativeArg(r *rand.Rand) string {
	switch r.IntN(12) {
	case 0:
		return strconv.FormatFloat(r.Float64()*100, 'f', -1, 64)
	case 1:
		return strconv.FormatFloat(r.NormFloat64()*1e3, 'g', -1, 64)
	case 2:
		return []string{"0", "-0", "010", " 5", "5 ", "+5", "0x10", "1e400", "inf", "nan", "", "abc", "1.", ".5", "1e", "-1", "1e-300", "1e300", "3.5e2"}[r.IntN(19)]
	case 3:
		return strconv.Itoa(r.IntN(1_000_000))
	}
	return strconv.Itoa(1 + r.IntN(20))
}

// nativeClock moves the shared clock forward: mostly by a little, sometimes by hours
// or years. Never back: active expiry reads the clock on its own time, and a reading
// from before a step back would delete keys the commands after it still see.
func (p *nativePair) nativeClock(r *rand.Rand) {
	switch r.IntN(20) {
	case 0:
		p.clock.Add(int64(r.IntN(1000)) * int64(time.Hour))
	case 1:
		if p.clock.Load() < nativeClockEnd {
			p.clock.Add(int64(r.IntN(10)) * 365 * 24 * int64(time.Hour))
		}
	case 2:
		p.clock.Add(int64(r.IntN(1_000_000))) // within a microsecond or a few
	default:
		p.clock.Add(int64(r.IntN(300_000_000)))
	}
}

// nativeClockEnd is where the clock stops leaping years: Unix nanoseconds end in 2262.
var nativeClockEnd = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// step makes one random call, on both servers, and fails when they differ.
func (p *nativePair) step(t testing.TB, r *rand.Rand) {
	p.nativeClock(r)
	key := p.keys[r.IntN(len(p.keys))]
	switch r.IntN(40) {
	case 0:
		p.do("SET", key, nativeArg(r))
		return
	case 1:
		p.do("DEL", key)
		return
	case 2:
		p.do("HSET", key, "f", "1")
		return
	case 3:
		p.do("SET", key, strconv.FormatFloat(float64(p.clock.Load())/1e9-1483228800+r.Float64()*10, 'g', 17, 64), "PX", strconv.Itoa(1+r.IntN(5000)))
		return
	case 4:
		p.do("SET", key, difftest.Pick(r, "1", "41", "9223372036854775806", "9223372036854775807", "-5", "x"), "PX", strconv.Itoa(1+r.IntN(5000)))
		return
	case 5:
		p.do("PEXPIRE", key, strconv.Itoa(1+r.IntN(5000)))
		return
	}
	names := []string{"allowN", "allowAtMost", "increment", "get", "flexible"}
	name := names[r.IntN(len(names))]
	body := nativeScripts[name]
	args := []string{"EVALSHA", scriptSHA(body), "1", key, nativeArg(r), nativeArg(r), nativeArg(r), nativeArg(r)}
	switch r.IntN(20) {
	case 0:
		args[0], args[1] = "EVAL", body
	case 1:
		args = args[:4+r.IntN(4)] // an ARGV missing
	case 2:
		args[2] = "0"
		args = append(args[:3], args[4:]...) // no key
	case 3:
		args[0] = "EVALSHA_RO"
	case 4:
		args = append(args, "extra")
	}
	switch {
	case r.IntN(4) == 0 && (name == "allowN" || name == "allowAtMost"):
		// go-redis/redis_rate's own arguments: burst, rate, period (seconds), cost.
		args = append(args[:4], strconv.Itoa(1+r.IntN(100)), strconv.Itoa(1+r.IntN(100)), difftest.Pick(r, "1", "60", "3600", "0.5"), strconv.Itoa(r.IntN(5)))
	case r.IntN(2) == 0 && len(args) >= 5 && (name == "increment" || name == "get"):
		args = append(args[:4], difftest.Pick(r, "1000", "60000", "1", "500", "1e3", "2.5")) // rate-limit-redis's windowMs
	case r.IntN(3) > 0 && len(args) >= 6 && name == "flexible":
		// rate-limiter-flexible's points and window (s), then its points and duration again.
		args = append(args[:4], difftest.Pick(r, "1", "2", "-1", "0", "5", "100"), difftest.Pick(r, "1", "5", "60", "3600", "0", "-1", "999999999", "1000000000"), "10", "60")
	}
	proto := 2 + r.IntN(2)
	p.nc.W.Proto, p.ic.W.Proto = proto, proto
	n, i := p.do(args...)
	p.nc.W.Proto, p.ic.W.Proto = 2, 2
	p.calls++
	if n != i {
		t.Fatalf("RESP%d %q:\nnative:      %q\ninterpreter: %q", proto, args, n, i)
	}
	if ns, is := p.state(p.native, p.nc), p.state(p.interp, p.ic); ns != is {
		t.Fatalf("RESP%d %q left\nnative:      %q\ninterpreter: %q", proto, args, ns, is)
	}
}

// TestNativeScriptsDifferential runs random calls of the native scripts, random clocks
// and random stored values through both paths.
func TestNativeScriptsDifferential(t *testing.T) {
	for _, start := range []time.Time{
		time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC),
		time.Date(2016, 12, 31, 23, 59, 0, 0, time.UTC), // the scripts' now below 0, then crossing it
		time.Unix(0, 0),
		time.Date(2048, 9, 9, 1, 40, 0, 0, time.UTC), // where the scripts' comment says their floats run out of digits
	} {
		t.Run(start.Format("2006-01-02"), func(t *testing.T) {
			p := newNativePair(t, start)
			seed := uint64(time.Now().UnixNano())
			r := rand.New(rand.NewPCG(seed, 2))
			n := 10_000
			if testing.Short() {
				n = 1000
			}
			for range n {
				p.step(t, r)
			}
			nst, ist := p.native.scripts.eng.Stats(), p.interp.scripts.eng.Stats()
			t.Logf("seed %d: native %d, fallbacks %d, interpreted %d; interpreter-only server %d", seed, nst.Natives, nst.Fallbacks, nst.Calls, ist.Calls)
			require.Zero(t, ist.Natives)
			require.Greater(t, nst.Natives, int64(n/4), "the native path served too few calls")
			require.Greater(t, nst.Fallbacks, int64(0), "no call took the fallback")
		})
	}
}

// FuzzNativeScripts is the same differential over fuzzer-chosen seeds: each input is a
// run of random calls from its seed, on the servers the previous inputs left.
func FuzzNativeScripts(f *testing.F) {
	p := newNativePair(f, time.Date(2016, 12, 31, 23, 59, 0, 0, time.UTC))
	for i := range uint64(8) {
		f.Add(i, uint8(10))
	}
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		r := rand.New(rand.NewPCG(seed, 3))
		for range int(n)%64 + 1 {
			p.step(t, r)
		}
	})
}

// TestNativeScriptsDigests checks the texts package native recognises are the libraries'
// byte for byte: the digests redis_rate v10.0.1 (of lua.go's texts) and rate-limit-redis
// 6.0.1 send EVALSHA with (rate-limit-redis's and rate-limiter-flexible 11.4.0's as Node computes them from
// the libraries' sources).
func TestNativeScriptsDigests(t *testing.T) {
	sum := func(s string) string { d := sha1.Sum([]byte(s)); return hex.EncodeToString(d[:]) }
	require.Equal(t, "f52a5b566060d79fd321d695df55bc918339c4aa", sum(redisRateAllowN))
	require.Equal(t, "054143318f521948424aa25df61d7f7ba835a9d7", sum(redisRateAllowAtMost))
	require.Equal(t, "895b92e1712734e1b464999be23953485475357b", sum(rateLimitRedisIncrement))
	require.Equal(t, "6aeb97ed6086dcdeafdc6fda3999a0d0e38ec96a", sum(rateLimitRedisGet))
	require.Equal(t, "a1de965f42e177aa339706bd580f049065eca79a", sum(rateLimiterFlexible))
	p := newNativePair(t, time.Now())
	for name, body := range nativeScripts {
		t.Run(name, func(t *testing.T) {
			n, i := p.do("SCRIPT", "LOAD", body)
			require.Equal(t, i, n)
			n, _ = p.do("EVALSHA", sum(body), "1", "rl:digest:"+name, "10", "10", "1", "1")
			require.Equal(t, byte('*'), n[0], n)
		})
	}
	before := p.native.scripts.eng.Stats().Natives
	p.do("SCRIPT", "FLUSH")
	n, _ := p.do("EVAL", redisRateAllowN, "1", "rl:b", "10", "10", "1", "1")
	require.Equal(t, byte('*'), n[0], n)
	require.Equal(t, before+1, p.native.scripts.eng.Stats().Natives, "EVAL after SCRIPT FLUSH takes the native path")
	info, _ := p.do("INFO", "scripting")
	require.Contains(t, info, "script_calls_native:")
	require.Contains(t, info, "script_calls_interpreted:")
}

// redisRateAllowAtMost is go-redis/redis_rate v10.0.1's other script, as package native
// recognises it.
const redisRateAllowAtMost = native.RedisRateAllowAtMost

// TestNativeScriptsRedis makes fixed calls of redis_rate's scripts on redis-server and on
// throttled, where they take the native path, each on both one after the other. Both read
// their own clocks (TIME): the cases are those whose replies do not depend on the instant
// (fresh keys, and costs and intervals that are whole seconds, which the scripts' floats
// add exactly), and those must be byte-identical, with the same TTL left; the stored tat is
// the instant plus a whole number of seconds, so it is compared as a number within a
// second. The sequences on one key compare their integers exactly and their times within a
// second.
func TestNativeScriptsRedis(t *testing.T) {
	rs := redistest.Start(t)
	ts := startServer(t, func(c *Config) { c.Now = nil })
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			want, got := difftest.Dial(t, rs.Addr, proto), difftest.Dial(t, ts.addr, proto)
			for name, body := range nativeScripts {
				sha := scriptSHA(body)
				require.Equal(t, want.Do(t, cmd("SCRIPT", "LOAD", body)), got.Do(t, cmd("SCRIPT", "LOAD", body)))
				cases := []struct {
					argv  []string // burst, rate, period, cost
					calls int
				}{
					{[]string{"10", "1", "1", "1"}, 1},   // allowed
					{[]string{"3", "1", "1", "5"}, 1},    // denied: cost over the burst
					{[]string{"10", "10", "1", "0"}, 1},  // cost 0: nothing stored
					{[]string{"2", "1", "3600", "1"}, 4}, // 1 an hour, burst 2: allowed, then denied
					{[]string{"5", "1", "60", "2"}, 5},
					{[]string{"4", "2", "2", "3"}, 3},
				}
				if name == "flexible" { // rate-limiter-flexible: points, window (s)
					cases = cases[:0]
					cases = append(cases, struct {
						argv  []string
						calls int
					}{[]string{"1", "60"}, 1}, struct {
						argv  []string
						calls int
					}{[]string{"2", "3600", "10", "3600"}, 4})
				}
				if name == "increment" || name == "get" { // rate-limit-redis: windowMs
					cases = cases[:0]
					cases = append(cases, struct {
						argv  []string
						calls int
					}{[]string{"60000"}, 1}, struct {
						argv  []string
						calls int
					}{[]string{"3600000"}, 4})
				}
				for i, tc := range cases {
					key := fmt.Sprintf("rl:%s:%d", name, i)
					for n := range tc.calls {
						c := cmd(append([]string{"EVALSHA", sha, "1", key}, tc.argv...)...)
						w, g := want.Do(t, c), got.Do(t, c)
						if n == 0 && name != "flexible" { // its PTTL is read a moment after its SET: it may have moved
							require.Equal(t, w, g, "%s %v", name, tc.argv)
						} else {
							require.True(t, numbersAlike(w, g), "%s %v call %d: redis %q, throttled %q", name, tc.argv, n+1, w, g)
						}
					}
					require.Equal(t, want.Do(t, cmd("TYPE", key)), got.Do(t, cmd("TYPE", key)))
					require.Equal(t, want.Do(t, cmd("TTL", key)), got.Do(t, cmd("TTL", key)))
					require.True(t, numbersAlike(want.Do(t, cmd("GET", key)), got.Do(t, cmd("GET", key))))
				}
			}
			before := ts.scripts.eng.Stats().Natives
			require.Positive(t, before, "throttled ran the scripts natively")
		})
	}
}

// numbersAlike compares two replies token by token: equal, or both numbers within a second:
// texts in seconds, and integers of 1000 or more, which are milliseconds (PTTL's); smaller
// integers (allowed, remaining, hits) must be equal.
func numbersAlike(a, b string) bool {
	as, bs := strings.Split(a, "\r\n"), strings.Split(b, "\r\n")
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		x, y := as[i], bs[i]
		if x == y || (x != "" && y != "" && x[0] == '$' && y[0] == '$') {
			continue // a bulk string's length may differ with its digits
		}
		tolerance := 1.0
		if strings.HasPrefix(x, ":") && strings.HasPrefix(y, ":") {
			x, y, tolerance = x[1:], y[1:], 1000
		}
		fx, err1 := strconv.ParseFloat(x, 64)
		fy, err2 := strconv.ParseFloat(y, 64)
		if err1 != nil || err2 != nil || fx-fy > tolerance || fy-fx > tolerance || (tolerance == 1000 && min(fx, fy) < 1000) {
			return false
		}
	}
	return true
}

// rateLimitRedisIncrement and rateLimitRedisGet are rate-limit-redis 6.0.1's scripts
// (dist/index.mjs, scripts.increment and scripts.get, as the library trims them), test
// data here.
const (
	rateLimitRedisIncrement = `local windowMs = tonumber(ARGV[1])
local timeToExpire = redis.call("PTTL", KEYS[1])
if timeToExpire <= 0 then
redis.call("SET", KEYS[1], 1, "PX", windowMs)
return { 1, windowMs }
end
local totalHits = redis.call("INCR", KEYS[1])        
return { totalHits, timeToExpire }`
	rateLimitRedisGet = `local totalHits = redis.call("GET", KEYS[1])
local timeToExpire = redis.call("PTTL", KEYS[1])
return { totalHits, timeToExpire }`
)

// rateLimiterFlexible is rate-limiter-flexible 11.4.0's script (lib/RateLimiterRedis.js,
// incrTtlLuaScript, its lines joined by their final backslashes), test data here.
const rateLimiterFlexible = `redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX') local consumed = redis.call('incrby', KEYS[1], ARGV[1]) local ttl = redis.call('pttl', KEYS[1]) if ttl == -1 then   redis.call('expire', KEYS[1], ARGV[2])   ttl = 1000 * ARGV[2] end return {consumed, ttl} `

// TestNativeScriptsErrorAfterWrite: rate-limiter-flexible's script writes first, so an
// error after its write cannot be left to the interpreter; the native path must end with
// the interpreter's error, and leave the same keys: an EXPIRE past the year 2262, and an
// ACL that lets the user SET but not INCRBY.
func TestNativeScriptsErrorAfterWrite(t *testing.T) {
	p := newNativePair(t, time.Unix(0, math.MaxInt64-5e9-1)) // SET EX 5 fits, EXPIRE 5 does not (its check is in ms)
	p.do("SET", "rl:a", "5")
	n, i := p.do("EVAL", rateLimiterFlexible, "1", "rl:a", "1", "5")
	require.Equal(t, i, n)
	require.Contains(t, n, "invalid expire time in 'expire' command script: ")
	require.Equal(t, p.state(p.interp, p.ic), p.state(p.native, p.nc))

	p.clock.Store(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	for _, c := range [][]string{{"ACL", "SETUSER", "lim", "on", "nopass", "~rl:*", "+@all", "-incrby"}, {"AUTH", "lim", "x"}} {
		n, i := p.do(c...)
		require.Equal(t, "+OK\r\n", n)
		require.Equal(t, i, n)
	}
	n, i = p.do("EVAL", rateLimiterFlexible, "1", "rl:b", "1", "60")
	require.Equal(t, i, n)
	require.Contains(t, n, "can't run this command or subcommand script: ")
	require.Equal(t, p.state(p.interp, p.ic), p.state(p.native, p.nc))
	require.Equal(t, int64(2), p.native.scripts.eng.Stats().Natives, "both took the native path")
}

// keepTTLIncrement is an interpreted read-modify-write of a counter that keeps its TTL:
// without isolation from the native runs on the same key, an increment is lost.
const keepTTLIncrement = `local v = tonumber(redis.call('GET', KEYS[1]))
for j = 1, 300 do end
redis.call('SET', KEYS[1], v + 1, 'KEEPTTL')
return v + 1`

// TestNativeScriptIsolation increments one counter from many clients at once: rate-limit-
// redis's increment (native, on its key's shard lock, or on the stripes when they are
// held), the interpreted read-modify-write above, plain INCR and INCR inside MULTI. Not
// an increment may be lost, and both native paths must have served.
func TestNativeScriptIsolation(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.IOThreads = 4 })
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, PoolSize: 16})
	t.Cleanup(func() { rdb.Close() })
	require.NoError(t, rdb.Set(ctx, "rl:x", 0, time.Hour).Err())
	increment := redis.NewScript(rateLimitRedisIncrement)
	rmw := redis.NewScript(keepTTLIncrement)
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				var err error
				switch (w + i) % 4 {
				case 0, 1:
					err = increment.Run(ctx, rdb, []string{"rl:x"}, 3_600_000).Err()
				case 2:
					err = rmw.Run(ctx, rdb, []string{"rl:x"}).Err()
				default:
					_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Incr(ctx, "rl:x").Err() })
				}
				require.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	n, err := rdb.Get(ctx, "rl:x").Int()
	require.NoError(t, err)
	require.Equal(t, workers*each, n)
	st := ts.scripts.eng.Stats()
	require.Equal(t, int64(workers*each/2), st.Natives, "every increment ran native")
	require.Zero(t, st.Fallbacks)
}

// TestNativeScriptWaitsForStripe holds the transaction stripe of a key, as EXEC or a
// script does: a native run on that key must wait for it, then run.
func TestNativeScriptWaitsForStripe(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	bit := ts.txStripe([]byte("rl:held"))
	mu := &ts.txLocks.stripes[bits.TrailingZeros64(bit)]
	mu.Lock()
	ts.txLocks.hold(bit)
	done := make(chan error, 1)
	go func() {
		done <- redis.NewScript(rateLimitRedisIncrement).Run(ctx, rdb, []string{"rl:held"}, 1000).Err()
	}()
	select {
	case err := <-done:
		t.Fatalf("the script ran while its key's stripe was held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	ts.unlockTx(bit)
	require.NoError(t, <-done)
	require.Equal(t, "1", rdb.Get(ctx, "rl:held").Val())
}

// TestScriptCommandTimes checks that a script's commands are timed each from the end of
// the one before (INFO commandstats): their times lie within the script's, one after the
// other, not each from the script's start.
func TestScriptCommandTimes(t *testing.T) {
	for _, nativeOn := range []bool{true, false} {
		t.Run(fmt.Sprint("native ", nativeOn), func(t *testing.T) {
			ts := startServer(t)
			ts.scripts.eng.SetNative(nativeOn)
			rdb := ts.client(t, 2)
			ctx := context.Background()
			sc := redis.NewScript(rateLimitRedisIncrement)
			for i := range 2000 {
				require.NoError(t, sc.Run(ctx, rdb, []string{fmt.Sprint("rl:", i%100)}, 60_000).Err())
			}
			nsec := func(name string) int64 { return ts.cmdTotals(ts.commands[name]).nsec }
			inner := nsec("pttl") + nsec("incr") + nsec("set")
			require.Equal(t, int64(4000), ts.cmdTotals(ts.commands["pttl"]).calls+ts.cmdTotals(ts.commands["incr"]).calls+ts.cmdTotals(ts.commands["set"]).calls)
			require.LessOrEqual(t, inner, nsec("evalsha")+nsec("eval"), "the commands' times overlap") // go-redis sends EVAL after NOSCRIPT
		})
	}
}

// TestNativeScriptsUnderMaxMemory floods the server with new keys through rate-limit-redis's
// increment over maxmemory with an eviction policy: a native run that must make room first
// (evicting locks shards, among them the one it would hold) starts again on the stripes;
// every call is answered and keys are evicted.
func TestNativeScriptsUnderMaxMemory(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.AppendOnly = false
		c.MaxMemory = 512 << 10 // 40,000 keys overflow it many times over
		c.MaxMemoryPolicy = "allkeys-lru"
	})
	rdb := ts.client(t, 2)
	ctx := context.Background()
	sc := redis.NewScript(rateLimitRedisIncrement)
	require.NoError(t, sc.Load(ctx, rdb).Err())
	for n := 0; n < 40_000; n += 1000 {
		pipe := rdb.Pipeline()
		for i := n; i < n+1000; i++ {
			sc.EvalSha(ctx, pipe, []string{"rl:flood:" + strconv.Itoa(i)}, 60_000)
		}
		cmds, err := pipe.Exec(ctx)
		require.NoError(t, err)
		for _, c := range cmds {
			require.Equal(t, []any{int64(1), int64(60_000)}, c.(*redis.Cmd).Val())
		}
		if n%5_000 == 0 {
			time.Sleep(15 * time.Millisecond) // the memory check runs every 10 ms
		}
	}
	evicted, _ := strconv.Atoi(infoOf(t, rdb, "stats", "evicted_keys"))
	require.Greater(t, evicted, 10_000)
	require.Equal(t, int64(40_000), ts.scripts.eng.Stats().Natives)
}

// TestNativeScriptTouchesWatch checks that a native run's write, made under its shard lock
// rather than the stripes, fails another client's WATCH as any write does.
func TestNativeScriptTouchesWatch(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	watcher, other := ts.client(t, 2), ts.client(t, 2)
	sc := redis.NewScript(rateLimitRedisIncrement)
	require.NoError(t, sc.Run(ctx, other, []string{"rl:w"}, 60_000).Err())
	err := watcher.Watch(ctx, func(tx *redis.Tx) error {
		require.NoError(t, sc.Run(ctx, other, []string{"rl:w"}, 60_000).Err()) // between WATCH and EXEC
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Get(ctx, "rl:w").Err() })
		return err
	}, "rl:w")
	require.ErrorIs(t, err, redis.TxFailedErr)
	require.Equal(t, int64(2), ts.scripts.eng.Stats().Natives)
}

// TestNativeScriptsCountCommands: a native script's commands, run directly on its key
// (scripting.Direct) or through the command table, count in INFO commandstats, the
// keyspace's hits and misses and MONITOR as the interpreter's do, command by command.
func TestNativeScriptsCountCommands(t *testing.T) {
	p := newNativePair(t, time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	// MONITOR's lines, without their times, as each server's monitor client sends them
	monitor := func(s *Server) func() string {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		s.run(s.newClient(a), [][]byte{[]byte("MONITOR")})
		var mu sync.Mutex
		var lines []string
		go func() {
			sc := bufio.NewScanner(b)
			for sc.Scan() {
				if _, rest, ok := strings.Cut(sc.Text(), " ["); ok {
					mu.Lock()
					lines = append(lines, rest)
					mu.Unlock()
				}
			}
		}()
		return func() string {
			mu.Lock()
			defer mu.Unlock()
			return strings.Join(lines, "\n")
		}
	}
	nm, im := monitor(p.native), monitor(p.interp)
	calls := [][]string{
		{"EVAL", rateLimitRedisIncrement, "1", "rl:a", "60000"}, {"EVAL", rateLimitRedisIncrement, "1", "rl:a", "60000"},
		{"EVAL", rateLimitRedisGet, "1", "rl:a"}, {"EVAL", rateLimitRedisGet, "1", "rl:b"},
		{"EVAL", rateLimiterFlexible, "1", "rl:c", "2", "60"}, {"EVAL", rateLimiterFlexible, "1", "rl:c", "1", "60"},
		{"SET", "rl:h", "3"}, {"EVAL", rateLimiterFlexible, "1", "rl:h", "1", "60"}, // no TTL: EXPIRE
		{"EVAL", redisRateAllowN, "1", "rl:b", "10", "10", "1", "1"}, {"EVAL", redisRateAllowN, "1", "rl:b", "10", "10", "1", "20"},
		{"EVAL", redisRateAllowAtMost, "1", "rl:b", "10", "10", "1", "3"},
	}
	for _, c := range calls {
		n, i := p.do(c...)
		require.Equal(t, i, n, "%q", c)
	}
	require.Equal(t, int64(10), p.native.scripts.eng.Stats().Natives)
	p.do("ECHO", "end")
	for _, m := range []func() string{nm, im} {
		require.Eventually(t, func() bool { return strings.HasSuffix(m(), `"ECHO" "end"`) }, 5*time.Second, time.Millisecond)
	}
	counts := func(s *Server, c *client, monitored func() string) string {
		mon := monitored() // before INFO, which the monitor sees too
		var b strings.Builder
		for _, name := range []string{"get", "set", "pttl", "incr", "incrby", "expire", "time"} {
			t := s.cmdTotals(s.commands[name])
			fmt.Fprintf(&b, "%s %d %d %d\n", name, t.calls, t.failed, t.rejected)
		}
		c.W.B = c.W.B[:0]
		s.run(c, [][]byte{[]byte("INFO"), []byte("stats")})
		for _, l := range strings.Split(string(c.W.B), "\r\n") {
			if strings.HasPrefix(l, "keyspace_") || strings.HasPrefix(l, "total_commands_processed") {
				b.WriteString(l + "\n")
			}
		}
		return b.String() + mon
	}
	want := counts(p.interp, p.ic, im)
	require.Contains(t, want, `"PTTL" "rl:a"`)
	require.Equal(t, want, counts(p.native, p.nc, nm))
}
