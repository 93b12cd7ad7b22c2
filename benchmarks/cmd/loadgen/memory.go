package main

import (
	"fmt"
	"log"
	"time"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
)

// memRow is the resident bytes per key of one algorithm on both servers.
type memRow struct {
	name             string
	verb, lua        string
	throttled, redis float64
}

// memory loads cfg.memKeys keys of each algorithm, one admission each, into a fresh throttled
// (appendonly no) and a fresh redis-server, and divides the growth of VmRSS by the keys.
// Key names are 14 bytes, as in benchmarks/memory.sh.
func (r *runner) memory(sc scripts) ([]memRow, error) {
	t, err := r.track(startThrottled("throttled (memory)", r.cfg.bin, r.tmp+"/mem", "--appendonly", "no"))
	if err != nil {
		return nil, err
	}
	redis, err := r.track(startRedis(r.tmp))
	if err != nil {
		return nil, err
	}
	if sc, err = loadScripts(redis); err != nil {
		return nil, err
	}
	rows := []struct {
		name, prefix, verbText, luaText string
		verb, lua                       func(k string) []string
	}{
		{"GCRA", "gcra", "CL.THROTTLE k 100 10 3600 1", "gcra.lua (string TAT, PX)",
			func(k string) []string { return []string{"CL.THROTTLE", k, "100", "10", "3600", "1"} },
			func(k string) []string { return []string{"EVALSHA", sc.gcra, "1", k, "100", "10", "3600000", "1"} }},
		{"token bucket", "tokb", "TOKENBUCKET k 100 10 1h", "tokenbucket.lua (hash tokens, ts)",
			func(k string) []string { return []string{"TOKENBUCKET", k, "100", "10", "1h"} },
			func(k string) []string {
				return []string{"EVALSHA", sc.tokenBucket, "1", k, "100", "10", "3600000", "1"}
			}},
		{"sliding log, 1 admission", "slid", "SLIDE k 100 1h", "slidinglog.lua (sorted set)",
			func(k string) []string { return []string{"SLIDE", k, "100", "1h"} },
			func(k string) []string { return []string{"EVALSHA", sc.slidingLog, "1", k, "100", "3600000"} }},
	}
	var out []memRow
	for _, m := range rows {
		key := func(i int) string { return fmt.Sprintf("%s:%09d", m.prefix, i) }
		tb, err := perKey(t, r.cfg.memKeys, func(i int) []byte { return loadtest.Encode(m.verb(key(i))...) })
		if err != nil {
			return nil, fmt.Errorf("memory %s: throttled: %w", m.name, err)
		}
		rb, err := perKey(redis, r.cfg.memKeys, func(i int) []byte { return loadtest.Encode(m.lua(key(i))...) })
		if err != nil {
			return nil, fmt.Errorf("memory %s: redis: %w", m.name, err)
		}
		log.Printf("memory %-26s throttled %6.1f B/key, redis %6.1f B/key", m.name, tb, rb)
		out = append(out, memRow{name: m.name, verb: m.verbText, lua: m.luaText, throttled: tb, redis: rb})
	}
	return out, nil
}

// perKey sends n requests and returns the growth of the resident set per request.
func perKey(s *server, n int, req func(i int) []byte) (float64, error) { return perKeyN(s, n, 1, req) }

// perKeyN is perKey with requests of several commands each.
func perKeyN(s *server, n, commands int, req func(i int) []byte) (float64, error) {
	time.Sleep(500 * time.Millisecond)
	before, err := s.rss()
	if err != nil {
		return 0, err
	}
	if err := s.pipeN(req, n, commands); err != nil {
		return 0, err
	}
	time.Sleep(time.Second) // let the allocator settle, as memory.sh does
	after, err := s.rss()
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(n), nil
}
