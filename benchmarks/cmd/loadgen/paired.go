package main

import (
	"fmt"
	"log"
	"slices"
	"strconv"
	"time"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
)

// pairRounds is how many times measurePairs measures each side. One pair of 2s measurements on a
// shared 2-core machine differs by up to a tenth between identical runs, as much as some of
// the differences the targets ask about; the median of interleaved rounds does not.
const pairRounds = 5

// batchWindow is how long each round of a pair with an everysec side measures, and
// batchRounds how many rounds such a pair has: everysec writes Pebble a batch only every
// 10 s (persistence's redoBatchEvery) or 64 MiB of redo log, so that 2 s rounds leave the
// batch, its merge and compactions, out of most rounds and out of the median. A round of
// batchWindow holds about one; the report says how many each held. Three such rounds keep
// -only everysec under about 4 minutes.
const (
	batchWindow = 10 * time.Second
	batchRounds = 3
)

// side is one server and command of a paired comparison.
type side struct {
	label string
	srv   *server
	args  func(key string) []string
	// request, when set, encodes the request for a key instead of args: several commands
	// back to back (commands of them), or arguments drawn at random.
	request  func(key string) []byte
	commands int
	// everysec marks a server with appendfsync everysec: its rounds last batchWindow, and
	// the batches it wrote to Pebble in each are counted.
	everysec bool
}

// pair is two sides measured alternately at one pipeline depth over random keys: req/s of
// each round, and the median over the rounds of a's req/s over b's.
type pair struct {
	prefix   string // of the keys, when not pairN
	pipeline int
	a, b     side
	ra, rb   []float64
	median   float64
	// ca and cb are the CPU time (ns) each side's server process spent per request in each
	// round: on a machine others load, a steadier measure of cost than req/s.
	ca, cb []float64
	// cpuMedian is the median over the rounds of ca over cb.
	cpuMedian float64
	// duration is how long each round's measurement lasted.
	duration time.Duration
	// batches counts, for an everysec side a, the batches its server wrote to Pebble in
	// each round's measurement (INFO persistence aof_batches).
	batches []int64
}

// window returns how long each round of p measures, and how many rounds it has.
func (p *pair) window(cfg config) (time.Duration, int) {
	if p.a.everysec || p.b.everysec {
		return max(cfg.duration, batchWindow), batchRounds
	}
	return cfg.duration, pairRounds
}

// pairs returns the comparisons the targets rest on: CL.THROTTLE against Redis INCR at P=1,
// and CL.THROTTLE with appendfsync everysec against it without persistence at P=1 and 16.
func pairs(tNo, tSec, redis *server) []pair {
	cl := func(k string) []string { return []string{"CL.THROTTLE", k, "100", "10", "60", "1"} }
	no := side{label: "throttled CL.THROTTLE (appendonly no)", srv: tNo, args: cl}
	sec := side{label: "throttled CL.THROTTLE (everysec)", srv: tSec, args: cl, everysec: true}
	incr := side{label: "redis INCR", srv: redis, args: func(k string) []string { return []string{"INCR", k} }}
	return []pair{
		{pipeline: 1, a: no, b: incr},
		{pipeline: 1, a: sec, b: no},
		{pipeline: 16, a: sec, b: no},
	}
}

// beforeLabel and beforeNoLabel are the sides of the -before binary, with everysec and
// without persistence.
const (
	beforeLabel   = "throttled CL.THROTTLE (everysec, -before)"
	beforeNoLabel = "throttled CL.THROTTLE (appendonly no, -before)"
)

// everysec measures only the everysec pairs (-only everysec): CL.THROTTLE with appendfsync
// everysec against it without persistence at P=1 and 16, and, with -before, each against
// the same on an earlier build, so that a change to the writer (everysec) or to the path of
// a command (appendonly no) is measured against what it replaces in one run.
func (r *runner) everysec() ([]pair, error) {
	tNo, err := r.track(startThrottled("throttled (appendonly no)", r.cfg.bin, r.tmp+"/no", "--appendonly", "no"))
	if err != nil {
		return nil, err
	}
	tSec, err := r.track(startThrottled("throttled (everysec)", r.cfg.bin, r.tmp+"/everysec",
		"--appendonly", "yes", "--appendfsync", "everysec"))
	if err != nil {
		return nil, err
	}
	ps := pairs(tNo, tSec, nil)[1:]
	if r.cfg.before != "" {
		old, err := r.track(startThrottled("throttled (everysec, -before)", r.cfg.before, r.tmp+"/before",
			"--appendonly", "yes", "--appendfsync", "everysec"))
		if err != nil {
			return nil, err
		}
		oldNo, err := r.track(startThrottled("throttled (appendonly no, -before)", r.cfg.before, r.tmp+"/beforeno",
			"--appendonly", "no"))
		if err != nil {
			return nil, err
		}
		cl := func(k string) []string { return []string{"CL.THROTTLE", k, "100", "10", "60", "1"} }
		sec, no := ps[0].a, ps[0].b
		before, beforeNo := side{label: beforeLabel, srv: old, args: cl, everysec: true}, side{label: beforeNoLabel, srv: oldNo, args: cl}
		ps = append(ps, pair{prefix: "before1", pipeline: 1, a: sec, b: before},
			pair{prefix: "before16", pipeline: 16, a: sec, b: before},
			pair{prefix: "beforeno1", pipeline: 1, a: no, b: beforeNo},
			pair{prefix: "beforeno16", pipeline: 16, a: no, b: beforeNo})
	}
	return ps, r.measurePairs(ps)
}

// measurePairs measures each pair in pairRounds rounds (batchRounds of batchWindow with an
// everysec side), the side measured first swapping each round so that neither always
// follows the other's background work.
func (r *runner) measurePairs(ps []pair) error {
	for i := range ps {
		p := &ps[i]
		prefix := p.prefix
		if prefix == "" {
			prefix = fmt.Sprintf("pair%d", i)
		}
		requests := func(s side) [][]byte {
			out := make([][]byte, r.cfg.keys)
			for k := range out {
				key := fmt.Sprintf("%s:%09d", prefix, k)
				if s.request != nil {
					out[k] = s.request(key)
				} else {
					out[k] = loadtest.Encode(s.args(key)...)
				}
			}
			return out
		}
		reqsA, reqsB := requests(p.a), requests(p.b)
		duration, rounds := p.window(r.cfg)
		p.duration = duration
		batches := func(s side) int64 {
			n, _ := strconv.ParseInt(s.srv.infoField("persistence", "aof_batches"), 10, 64)
			return n
		}
		measure := func(s side, reqs [][]byte, cpu *[]float64, counted *[]int64) (float64, error) {
			type start struct{ ticks, batches int64 }
			started := make(chan start, 1)
			go func() { // the server's CPU time when the warm-up ends and counting starts
				time.Sleep(r.cfg.warmup)
				t, _ := cpuTicks(s.srv)
				started <- start{t, batches(s)}
			}()
			res, err := loadtest.Run(loadtest.Load{Addr: s.srv.addr, Conns: r.cfg.conns, Pipeline: p.pipeline,
				Requests: reqs, Commands: s.commands, Warmup: r.cfg.warmup, Duration: duration})
			before := <-started
			if err != nil {
				return 0, fmt.Errorf("%s P=%d: %w", s.label, p.pipeline, err)
			}
			after, _ := cpuTicks(s.srv)
			*cpu = append(*cpu, float64(after-before.ticks)*1e7/float64(res.Requests)) // a tick is 10 ms
			if s.everysec && counted != nil {
				*counted = append(*counted, batches(s)-before.batches)
			}
			return res.PerSecond(), nil
		}
		ratios, cpus := make([]float64, rounds), make([]float64, rounds)
		for round := range rounds {
			var a, b float64
			var err error
			if round%2 == 0 {
				if a, err = measure(p.a, reqsA, &p.ca, &p.batches); err == nil {
					b, err = measure(p.b, reqsB, &p.cb, nil)
				}
			} else {
				if b, err = measure(p.b, reqsB, &p.cb, nil); err == nil {
					a, err = measure(p.a, reqsA, &p.ca, &p.batches)
				}
			}
			if err != nil {
				return err
			}
			p.ra, p.rb = append(p.ra, a), append(p.rb, b)
			ratios[round], cpus[round] = a/b, p.ca[round]/p.cb[round]
			log.Printf("%s / %s P=%-2d round %d: %10.0f / %10.0f req/s = %.3f; server CPU %.0f / %.0f ns/req = %.3f%s", p.a.label, p.b.label,
				p.pipeline, round+1, a, b, ratios[round], p.ca[round], p.cb[round], cpus[round], p.batchNote(round))
		}
		slices.Sort(ratios)
		slices.Sort(cpus)
		p.median, p.cpuMedian = ratios[len(ratios)/2], cpus[len(cpus)/2]
	}
	return nil
}

// batchNote says how many Pebble batches side a wrote in round's measurement, for a log line.
func (p *pair) batchNote(round int) string {
	if round >= len(p.batches) {
		return ""
	}
	return fmt.Sprintf(" (%d Pebble batches)", p.batches[round])
}
