package main

import (
	"fmt"
	"log"
	"slices"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
)

// scripts holds the SHA1 of each Lua script loaded into Redis.
type scripts struct{ gcra, tokenBucket, slidingLog string }

// loadScripts loads the Lua scripts with SCRIPT LOAD.
func loadScripts(redis *server) (scripts, error) {
	var sc scripts
	for _, s := range []struct {
		sha  *string
		body string
	}{{&sc.gcra, gcraScript}, {&sc.tokenBucket, tokenBucketScript}, {&sc.slidingLog, slidingLogScript}} {
		v, err := redis.do("SCRIPT", "LOAD", s.body)
		if err != nil {
			return sc, fmt.Errorf("SCRIPT LOAD: %w", err)
		}
		*s.sha = v.(string)
	}
	return sc, nil
}

// variant is one server and command measured in a workload.
type variant struct {
	label  string
	srv    *server
	prefix string // key prefix, distinct per variant on a server so that states never mix
	args   func(key string) []string
	// base marks the rows others are compared with: "lua" or "incr".
	base string
}

// workload is one algorithm, measured on every variant.
type workload struct {
	name     string
	variants []variant
}

// workloads returns what is measured: each throttled verb on both throttled servers, against its
// Lua script on Redis, and plain INCR as the floor of what Redis does per request.
func workloads(tNo, tSec, redis *server, sc scripts) []workload {
	both := func(verb, prefix string, args func(key string) []string) []variant {
		return []variant{
			{label: "throttled " + verb + " (appendonly no)", srv: tNo, prefix: prefix, args: args},
			{label: "throttled " + verb + " (everysec)", srv: tSec, prefix: prefix, args: args},
		}
	}
	lua := func(name, sha, prefix string, params ...string) variant {
		return variant{label: "redis EVALSHA " + name, srv: redis, prefix: prefix, base: "lua",
			args: func(k string) []string { return append([]string{"EVALSHA", sha, "1", k}, params...) }}
	}
	gcra := slices.Concat(
		both("CL.THROTTLE", "cl", func(k string) []string { return []string{"CL.THROTTLE", k, "100", "10", "60", "1"} }),
		both("THROTTLE", "th", func(k string) []string { return []string{"THROTTLE", k, "100", "10", "60s"} }),
		[]variant{
			lua("gcra.lua", sc.gcra, "gc", "100", "10", "60000", "1"),
			{label: "redis INCR", srv: redis, prefix: "in", base: "incr",
				args: func(k string) []string { return []string{"INCR", k} }},
		})
	return []workload{
		{name: "GCRA 100 burst, 10/60s", variants: gcra},
		{name: "token bucket 100, 10/60s", variants: append(
			both("TOKENBUCKET", "tb", func(k string) []string { return []string{"TOKENBUCKET", k, "100", "10", "60s"} }),
			lua("tokenbucket.lua", sc.tokenBucket, "tb", "100", "10", "60000", "1"))},
		{name: "sliding log 100/60s", variants: append(
			both("SLIDE", "sl", func(k string) []string { return []string{"SLIDE", k, "100", "60s"} }),
			lua("slidinglog.lua", sc.slidingLog, "sl", "100", "60000"))},
	}
}

// row is one measurement.
type row struct {
	workload string
	v        variant
	pipeline int
	hot      bool
	res      *loadtest.Result
}

// throughput measures every variant of every workload at pipeline 1 and 16, random and hot keys.
func (r *runner) throughput(ws []workload) ([]row, error) {
	var rows []row
	for _, w := range ws {
		for _, p := range []int{1, 16} {
			for _, hot := range []bool{false, true} {
				for _, v := range w.variants {
					var reqs [][]byte
					if hot {
						reqs = [][]byte{loadtest.Encode(v.args(v.prefix + ":hot")...)}
					} else {
						reqs = make([][]byte, r.cfg.keys)
						for i := range reqs {
							reqs[i] = loadtest.Encode(v.args(fmt.Sprintf("%s:%09d", v.prefix, i))...)
						}
					}
					res, err := loadtest.Run(loadtest.Load{Addr: v.srv.addr, Conns: r.cfg.conns, Pipeline: p,
						Requests: reqs, Warmup: r.cfg.warmup, Duration: r.cfg.duration})
					if err != nil {
						return nil, fmt.Errorf("%s, %s P=%d: %w", w.name, v.label, p, err)
					}
					rw := row{workload: w.name, v: v, pipeline: p, hot: hot, res: res}
					log.Printf("%-26s %-40s P=%-2d %-6s %10.0f req/s  p99 %s", w.name, v.label, p, rw.keys(),
						res.PerSecond(), latency(res.Latency.Quantile(0.99)))
					rows = append(rows, rw)
				}
			}
		}
	}
	return rows, nil
}

// keys names the key pattern of the row.
func (rw row) keys() string {
	if rw.hot {
		return "hot"
	}
	return "random"
}
