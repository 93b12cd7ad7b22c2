package main

import (
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
)

// The collections part measures the data types the Lua limiters keep their state in, with
// the same commands on throttled (appendonly no) and on redis-server: a token bucket's hash
// of two fields (HSET, HMGET) and a sliding log's sorted set of 100 timestamps (ZADD,
// ZREMRANGEBYSCORE, ZCARD), in paired rounds at P=1 and 16, and the resident memory of the
// same data in each, and of small sets (an allow list of names, an intset of ids).

// logBase is the first timestamp (Unix ms) of the sliding logs; logWindow their window.
// The long logs are bigKeys sets of bigMembers timestamps over bigWindow: a limit of
// 100,000 requests an hour, each admission a write to a big sorted set (issue 40).
const (
	logBase    = 1732512345000
	logWindow  = 60000
	logMembers = 100
	bigKeys    = 8
	bigMembers = 100000
	bigWindow  = 3600000
)

// collRun is what the collections part measured.
type collRun struct {
	pairs []pair
	mem   []memRow
}

func (r *runner) collections() (collRun, error) {
	var run collRun
	t, err := r.track(startThrottled("throttled (collections)", r.cfg.bin, r.tmp+"/coll", "--appendonly", "no"))
	if err != nil {
		return run, err
	}
	redis, err := r.track(startRedis(r.tmp))
	if err != nil {
		return run, err
	}
	hset := func(k string) []string { return []string{"HSET", k, "tokens", "99.5", "last_refill", "1732512345123"} }
	zlog := func(k string) []string { return slidingLog(k) }
	one := func(args func(k string) []string) func(k string) []byte {
		return func(k string) []byte { return loadtest.Encode(args(k)...) }
	}
	for _, m := range []struct {
		name, text, prefix string
		keys, commands     int
		req                func(k string) []byte
	}{
		{"hash, 2 fields (a token bucket)", "HSET k tokens 99.5 last_refill 1732512345123", "mh", r.cfg.memKeys, 1, one(hset)},
		{"hash, 2 fields with an expiry", "the same, then PEXPIRE k 3600000", "mx", r.cfg.memKeys, 2,
			func(k string) []byte {
				return append(loadtest.Encode(hset(k)...), loadtest.Encode("PEXPIRE", k, "3600000")...)
			}},
		{"sorted set, 100 timestamps (a sliding log)", "ZADD k t1 t1 ... t100 t100 (ms)", "mz", r.cfg.memKeys / 10, 1, one(zlog)},
		{"set, 5 names (an allow list)", "SADD k user:1001 ... user:1005", "ms", r.cfg.memKeys, 1, one(setNames)},
		{"set, 10 integer ids (an intset)", "SADD k 1001 ... 1010", "mi", r.cfg.memKeys, 1, one(setIDs)},
	} {
		req := func(i int) []byte { return m.req(fmt.Sprintf("%s:%010d", m.prefix, i)) }
		tb, err := perKeyN(t, m.keys, m.commands, req)
		if err != nil {
			return run, fmt.Errorf("memory %s: throttled: %w", m.name, err)
		}
		rb, err := perKeyN(redis, m.keys, m.commands, req)
		if err != nil {
			return run, fmt.Errorf("memory %s: redis: %w", m.name, err)
		}
		log.Printf("memory %-44s throttled %7.1f B/key, redis %7.1f B/key", m.name, tb, rb)
		run.mem = append(run.mem, memRow{name: m.name, verb: m.text, lua: "the same", throttled: tb, redis: rb})
	}
	for _, s := range []*server{t, redis} {
		if err := s.pipe(func(i int) []byte { return loadtest.Encode(zlog(fmt.Sprintf("zs:%09d", i))...) }, r.cfg.keys); err != nil {
			return run, fmt.Errorf("sliding logs on %s: %w", s.name, err)
		}
		if err := s.pipe(func(i int) []byte { return loadtest.Encode(bigLog(fmt.Sprintf("zb:%d", i))...) }, bigKeys); err != nil {
			return run, fmt.Errorf("long sliding logs on %s: %w", s.name, err)
		}
	}
	hmget := func(k string) []string { return []string{"HMGET", k, "tokens", "last_refill"} }
	rng := rand.New(rand.NewPCG(1, 2))
	admit := func(k string) []byte { // one admission of a sliding log: add, drop what left the window, count
		now := logBase + logWindow + rng.Int64N(logWindow)
		ts := strconv.FormatInt(now, 10)
		return append(append(loadtest.Encode("ZADD", k, ts, ts),
			loadtest.Encode("ZREMRANGEBYSCORE", k, "-inf", "("+strconv.FormatInt(now-logWindow, 10))...),
			loadtest.Encode("ZCARD", k)...)
	}
	admitBig := func(k string) []byte { // the same on one of the long logs, whatever key k the load names
		n, _ := strconv.Atoi(k[strings.LastIndexByte(k, ':')+1:])
		k = "zb:" + strconv.Itoa(n%bigKeys)
		now := logBase + bigWindow + rng.Int64N(bigWindow)
		ts := strconv.FormatInt(now, 10)
		return append(append(loadtest.Encode("ZADD", k, ts, ts),
			loadtest.Encode("ZREMRANGEBYSCORE", k, "-inf", "("+strconv.FormatInt(now-bigWindow, 10))...),
			loadtest.Encode("ZCARD", k)...)
	}
	pairsAt := func(p int, suffix string) []pair {
		return []pair{
			{prefix: "hs", pipeline: p, a: side{label: "throttled HSET 2 fields" + suffix, srv: t, args: hset}, b: side{label: "redis HSET 2 fields", srv: redis, args: hset}},
			{prefix: "hs", pipeline: p, a: side{label: "throttled HMGET 2 fields" + suffix, srv: t, args: hmget}, b: side{label: "redis HMGET 2 fields", srv: redis, args: hmget}},
			{prefix: "zs", pipeline: p, a: side{label: "throttled ZADD+ZREMRANGEBYSCORE+ZCARD" + suffix, srv: t, request: admit, commands: 3},
				b: side{label: "redis ZADD+ZREMRANGEBYSCORE+ZCARD", srv: redis, request: admit, commands: 3}},
			{prefix: "zb", pipeline: p, a: side{label: "throttled ZADD+ZREMRANGEBYSCORE+ZCARD, 100,000 timestamps" + suffix, srv: t, request: admitBig, commands: 3},
				b: side{label: "redis ZADD+ZREMRANGEBYSCORE+ZCARD, 100,000 timestamps", srv: redis, request: admitBig, commands: 3}},
		}
	}
	run.pairs = append(pairsAt(1, ""), pairsAt(16, "")...)
	if err := r.measurePairs(run.pairs); err != nil {
		return run, err
	}
	// The load shares the two cores with the server it measures (at P=1 a request is mostly
	// the kernel's work on both sides): measured again with each server on a core of its own
	// (CPU 1; one is loaded at a time) and the load on the other, as a deployment runs them.
	all := "0-" + strconv.Itoa(runtime.NumCPU()-1)
	if err := pinAll(map[*server]string{t: "1", redis: "1"}, "0"); err != nil {
		return run, err
	}
	pinned := append(pairsAt(1, ownCore), pairsAt(16, ownCore)...)
	err = r.measurePairs(pinned)
	run.pairs = append(run.pairs, pinned...)
	return run, errors.Join(err, pinAll(map[*server]string{t: all, redis: all}, all))
}

// ownCore marks the pairs measured with each server on a core of its own.
const ownCore = ", own core"

// setNames is an allow list of 5 names; setIDs a set of 10 integer ids, which Redis keeps
// as an intset.
func setNames(k string) []string {
	return []string{"SADD", k, "user:1001", "user:1002", "user:1003", "user:1004", "user:1005"}
}

func setIDs(k string) []string {
	return []string{"SADD", k, "1001", "1002", "1003", "1004", "1005", "1006", "1007", "1008", "1009", "1010"}
}

// slidingLog returns a ZADD of a full sliding log: logMembers admissions over the window,
// each member its own timestamp.
func slidingLog(k string) []string {
	args := []string{"ZADD", k}
	for j := range logMembers {
		ts := strconv.FormatInt(logBase+int64(j)*logWindow/logMembers, 10)
		args = append(args, ts, ts)
	}
	return args
}

// bigLog returns a ZADD of a full long sliding log: bigMembers admissions over bigWindow.
func bigLog(k string) []string {
	args := []string{"ZADD", k}
	for j := range bigMembers {
		ts := strconv.FormatInt(logBase+int64(j)*bigWindow/bigMembers, 10)
		args = append(args, ts, ts)
	}
	return args
}

func collectionsSection(cfg config, run collRun) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## Hashes and sorted sets\n\n")
	p("The state the Lua limiters keep, with the same commands on throttled (`--appendonly no`) and on\n")
	p("redis-server: a token bucket's hash of 2 fields, and a sliding log's sorted set of %d millisecond\n", logMembers)
	p("timestamps (one admission: ZADD, ZREMRANGEBYSCORE of what left the window, ZCARD; a request is the\n")
	p("three). Paired rounds over %d random keys, as above; memory over %d hashes and %d sorted sets.\n",
		cfg.keys, cfg.memKeys, cfg.memKeys/10)
	p("The rows of 100,000 timestamps admit to %d long logs of an hour's window instead (a limit of\n", bigKeys)
	p("100,000 requests an hour): each write is to a big sorted set (Redis's skip list).\n")
	p("The rows marked \"own core\" ran with each server pinned to CPU 1 (one loaded at a time) and the load on CPU 0.\n\n")
	p("| comparison | P | throttled, req/s | redis, req/s | ratio per round | median |\n|---|--:|---|---|---|--:|\n")
	for _, c := range run.pairs {
		p("| %s | %d | %s | %s | %s | %.3f |\n", strings.TrimPrefix(c.a.label, "throttled "), c.pipeline,
			rounds(c.ra), rounds(c.rb), ratios(c), c.median)
	}
	p("\n| data | commands | throttled bytes/key | redis bytes/key | throttled / redis |\n|---|---|--:|--:|--:|\n")
	for _, m := range run.mem {
		p("| %s | `%s` | %.1f | %.1f | %.2f |\n", m.name, m.verb, m.throttled, m.redis, m.throttled/m.redis)
	}
	return b.String()
}

func ratios(c pair) string {
	out := make([]string, len(c.ra))
	for i := range c.ra {
		out[i] = fmt.Sprintf("%.3f", c.ra[i]/c.rb[i])
	}
	return strings.Join(out, ", ")
}

// collectionsTargets: each command at least as fast as Redis; a 2-field hash at most 0.6x
// Redis's memory (with an expiry or without), a 100-member sorted set at most 0.8x.
func collectionsTargets(run collRun) []target {
	var out []target
	for _, c := range run.pairs {
		out = append(out, target{fmt.Sprintf("P=%d: %s at least Redis", c.pipeline, strings.TrimPrefix(c.a.label, "throttled ")),
			fmt.Sprintf("%.2f (median of %d interleaved rounds)", c.median, len(c.ra)), c.median >= 1})
	}
	for i, want := range []float64{0.6, 0.6, 0.8} {
		if i < len(run.mem) {
			m := run.mem[i]
			out = append(out, target{fmt.Sprintf("memory of a %s at most %.1fx Redis's", m.name, want),
				fmt.Sprintf("%.1f B against %.1f B (%.2f)", m.throttled, m.redis, m.throttled/m.redis), m.throttled <= want*m.redis})
		}
	}
	return out
}
