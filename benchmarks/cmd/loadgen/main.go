// Command loadgen measures throttled against redis-server in one run: it starts ./bin/throttled
// twice (--appendonly no, and appendfsync everysec) and redis-server on free loopback ports,
// checks the Lua scripts that stand for each algorithm on Redis, then measures requests per second
// and latency percentiles for each workload at 50 connections, pipeline 1 and 16, over random
// keys and over one hot key, the resident memory per key of each algorithm, and the keys and
// memory held under a churn of short-lived keys (churn.go), and EVALSHA of the limiter scripts
// clients send, redis_rate's among them, on both servers (evalsha.go), and the memory of
// 5,000 sliding logs on both (zsetmem.go). It prints a markdown report and
// writes it to benchmarks/RESULTS.md. Run it from the repository root:
//
//	make bench
//	go run ./benchmarks/cmd/loadgen [-duration 2s] [-out benchmarks/RESULTS.md]
//	go run ./benchmarks/cmd/loadgen -only churn [-churn 16s]
//	go run ./benchmarks/cmd/loadgen -only upstream [-duration 2s]
//	go run ./benchmarks/cmd/loadgen -only policies [-duration 2s]
//	go run ./benchmarks/cmd/loadgen -only collections [-duration 2s]
//	go run ./benchmarks/cmd/loadgen -only scripts [-duration 2s]
//	go run ./benchmarks/cmd/loadgen -only latency [-duration 2s]
//	go run ./benchmarks/cmd/loadgen -only everysec [-before old/throttled]
//	go run ./benchmarks/cmd/loadgen -only bigvalues
//	go run ./benchmarks/cmd/loadgen -only zsetmem [-zsets 5000] [-zsetrounds 3]
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// config is what the flags set.
type config struct {
	bin      string
	out      string
	conns    int
	keys     int
	memKeys  int
	warmup   time.Duration
	duration time.Duration
	churn    time.Duration
	only     string
	before   string // another throttled binary for -only everysec to compare with

	durableKeys int
	zsets       int // sorted sets for -only zsetmem
	zsetRounds  int // rounds of -only zsetmem
}

func main() {
	var cfg config
	flag.StringVar(&cfg.bin, "bin", "./bin/throttled", "throttled binary (make build)")
	flag.StringVar(&cfg.out, "out", "benchmarks/RESULTS.md", "where to write the report; empty for stdout only")
	flag.IntVar(&cfg.conns, "conns", 50, "connections per measurement")
	flag.IntVar(&cfg.keys, "keys", 100000, "random keys per workload")
	flag.IntVar(&cfg.memKeys, "memkeys", 300000, "keys per algorithm for the memory measurement")
	flag.DurationVar(&cfg.warmup, "warmup", 500*time.Millisecond, "uncounted time before each measurement")
	flag.DurationVar(&cfg.duration, "duration", 2*time.Second, "time of each measurement")
	flag.IntVar(&cfg.durableKeys, "durablekeys", 1000000, "new keys for the memory measurement with and without persistence")
	flag.IntVar(&cfg.zsets, "zsets", 5000, "sliding logs (sorted sets of 100) for the memory measurement of -only zsetmem")
	flag.IntVar(&cfg.zsetRounds, "zsetrounds", 3, "rounds of -only zsetmem, each on a fresh pair of servers")
	flag.DurationVar(&cfg.churn, "churn", 16*time.Second, "time of each churn measurement")
	flag.StringVar(&cfg.only, "only", "", "run only this part: bigvalues, churn, collections, durable, everysec, policies, replication, scripts, upstream or zsetmem (the report goes to -out only if that is given)")
	flag.StringVar(&cfg.before, "before", "", "with -only everysec: a throttled binary (an earlier build) to measure everysec and appendonly no against as well")
	flag.Parse()
	outSet := false
	flag.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if cfg.only != "" && !outSet {
		cfg.out = "" // a part alone never replaces the whole report
	}
	log.SetFlags(0)
	log.SetPrefix("loadgen: ")

	r := &runner{cfg: cfg}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		r.stopAll()
		os.Exit(1)
	}()
	report, err := r.run()
	r.stopAll()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(report)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(report), 0o644); err != nil {
			log.Fatal(err)
		}
		log.Printf("wrote %s", cfg.out)
	}
}

// runner owns the servers of one run.
type runner struct {
	cfg     config
	mu      sync.Mutex // guards servers
	servers []*server
	tmp     string
}

// track remembers s so that stopAll ends it.
func (r *runner) track(s *server, err error) (*server, error) {
	if err == nil {
		r.mu.Lock()
		r.servers = append(r.servers, s)
		r.mu.Unlock()
	}
	return s, err
}

// stopAll ends every server started and removes their data.
func (r *runner) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.servers {
		s.stop()
	}
	r.servers = nil
	if r.tmp != "" {
		os.RemoveAll(r.tmp)
	}
}

// run does the whole measurement and returns the report.
func (r *runner) run() (string, error) {
	if _, err := os.Stat(r.cfg.bin); err != nil {
		return "", fmt.Errorf("%s: %w (run make build, from the repository root)", r.cfg.bin, err)
	}
	tmp, err := os.MkdirTemp("", "loadgen-")
	if err != nil {
		return "", err
	}
	r.tmp = tmp
	switch r.cfg.only {
	case "":
	case "churn":
		runs, err := r.churn()
		return churnSection(r.cfg, runs), err
	case "durable":
		rows, err := r.durableMemory()
		return durableSection(r.cfg, rows), err
	case "policies":
		ps, err := r.policiesPairs()
		return policiesSection(r.cfg, ps), err
	case "collections":
		run, err := r.collections()
		return targetTable(collectionsTargets(run)) + collectionsSection(r.cfg, run), err
	case "scripts":
		run, err := r.evalsha()
		return targetTable(evalshaTargets(run)) + evalshaSection(r.cfg, run), err
	case "everysec":
		ps, err := r.everysec()
		return targetTable(pairTargets(ps)) + pairsTable(r.cfg, ps), err
	case "latency":
		ps, err := r.latencyTracking()
		return targetTable(latencyTargets(ps)) + latencySection(r.cfg, ps), err
	case "replication":
		run, err := r.replication()
		return replicationSection(r.cfg, run), err
	case "bigvalues":
		rows, err := r.bigValuesRun()
		return bigValuesSection(rows), err
	case "zsetmem":
		rows, err := r.zsetMemory()
		return zsetMemSection(r.cfg, rows), err
	case "upstream":
		rows, err := r.upstreamRun()
		return targetTable(upstreamTargets(rows)) + upstreamSection(rows), err
	default:
		return "", fmt.Errorf("-only %q: the parts that run alone are bigvalues, churn, collections, durable, everysec, latency, policies, replication, scripts, upstream and zsetmem", r.cfg.only)
	}
	tNo, err := r.track(startThrottled("throttled (appendonly no)", r.cfg.bin, tmp+"/no", "--appendonly", "no"))
	if err != nil {
		return "", err
	}
	tSec, err := r.track(startThrottled("throttled (everysec)", r.cfg.bin, tmp+"/everysec",
		"--appendonly", "yes", "--appendfsync", "everysec"))
	if err != nil {
		return "", err
	}
	redis, err := r.track(startRedis(tmp))
	if err != nil {
		return "", err
	}
	sc, err := loadScripts(redis)
	if err != nil {
		return "", err
	}
	checks, err := verify(redis, tNo, sc)
	if err != nil {
		return "", err
	}
	log.Print("scripts agree with throttled; measuring")
	rows, err := r.throughput(workloads(tNo, tSec, redis, sc))
	if err != nil {
		return "", err
	}
	ps := pairs(tNo, tSec, redis)
	if err := r.measurePairs(ps); err != nil {
		return "", err
	}
	mem, err := r.memory(sc)
	if err != nil {
		return "", err
	}
	alwaysRows, err := r.always()
	if err != nil {
		return "", err
	}
	durable, err := r.durableMemory()
	if err != nil {
		return "", err
	}
	churn, err := r.churn()
	if err != nil {
		return "", err
	}
	repl, err := r.replication()
	if err != nil {
		return "", err
	}
	pol, err := r.policiesPairs()
	if err != nil {
		return "", err
	}
	up, err := r.upstreamRun()
	if err != nil {
		return "", err
	}
	coll, err := r.collections()
	if err != nil {
		return "", err
	}
	ev, err := r.evalsha()
	if err != nil {
		return "", err
	}
	lat, err := r.latencyTracking()
	if err != nil {
		return "", err
	}
	big, err := r.bigValuesRun()
	if err != nil {
		return "", err
	}
	zmem, err := r.zsetMemory()
	if err != nil {
		return "", err
	}
	log.Print("Go benchmarks of the server's verbs")
	micro, err := micro()
	if err != nil {
		return "", err
	}
	return render(r.cfg, machine(tNo, redis), checks, rows, alwaysRows, ps, mem, durable, churn, repl, pol, up, coll, ev, lat, micro) + bigValuesSection(big) + zsetMemSection(r.cfg, zmem), nil
}
