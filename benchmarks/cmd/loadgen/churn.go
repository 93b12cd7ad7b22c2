package main

import (
	"bytes"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The churn: short-lived keys written as fast as the server takes them, by redis-benchmark
// itself: `redis-benchmark -c 20 -P 8 -r 100000000 SET c:__rand_int__ v PX 1000`. Almost
// every request makes a new key that nobody touches again, so only active expiry frees it:
// the key count and the resident memory stay flat only if the server expires keys as fast
// as they come. redis-benchmark drives the load, rather than the loadtest package, because
// it names a new random key in every request, and loadtest draws from requests encoded once.
const (
	churnConns    = 20
	churnPipeline = 8
	churnKeys     = 100_000_000
	// churnFlat is how much the peak of the last quarter of a run may exceed the peak of
	// its second quarter for the run to count as flat: a server that keeps up holds a
	// steady state, though the keys swing with the rate it serves at and the moment a cycle
	// of expiry ran; one that falls behind grows with the time the load lasts, twice as
	// much in the last quarter as by the second.
	churnFlat = 1.5
)

// churnSample is the state of a server at one moment of a churn run.
type churnSample struct {
	at   time.Duration // since the load started
	keys int64         // DBSIZE: expired keys not yet removed count
	rss  int64         // VmRSS, bytes
}

// churnRun is one server under one churn command.
type churnRun struct {
	cmd, server string
	perSecond   float64       // redis-benchmark's overall rate
	samples     []churnSample // one a second
}

// churn runs both churn commands against a fresh redis-server, a fresh throttled with
// --appendonly no and one with appendfsync everysec, one at a time, each for cfg.churn.
// Redis has no THROTTLE: it runs the GCRA script with the same period.
func (r *runner) churn() ([]churnRun, error) {
	set := []string{"SET", "c:__rand_int__", "v", "PX", "1000"}
	throttle := []string{"THROTTLE", "t:__rand_int__", "0", "1", "1s"}
	redis := func(dir string) (*server, error) { return startRedis(dir) }
	tNo := func(dir string) (*server, error) {
		return startThrottled("throttled (appendonly no)", r.cfg.bin, dir, "--appendonly", "no")
	}
	tSec := func(dir string) (*server, error) {
		return startThrottled("throttled (everysec)", r.cfg.bin, dir, "--appendonly", "yes", "--appendfsync", "everysec")
	}
	sides := []struct {
		label string
		start func(dir string) (*server, error)
		args  []string // nil: the GCRA script
	}{
		{"redis", redis, set}, {"throttled (appendonly no)", tNo, set}, {"throttled (everysec)", tSec, set},
		{"redis", redis, nil}, {"throttled (appendonly no)", tNo, throttle}, {"throttled (everysec)", tSec, throttle},
	}
	var runs []churnRun
	for i, sd := range sides {
		dir := fmt.Sprintf("%s/churn%d", r.tmp, i)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		s, err := r.track(sd.start(dir))
		if err != nil {
			return nil, err
		}
		args := sd.args
		if args == nil {
			sc, err := loadScripts(s)
			if err != nil {
				return nil, err
			}
			args = []string{"EVALSHA", sc.gcra, "1", "t:__rand_int__", "0", "1", "1000", "1"}
		}
		run, err := churnOne(s, args, r.cfg.churn)
		s.stop() // frees its memory for the next run; stopAll stops it again, harmlessly
		if err != nil {
			return nil, fmt.Errorf("churn %s: %w", sd.label, err)
		}
		run.server = sd.label
		last := run.samples[len(run.samples)-1]
		keys := make([]string, len(run.samples))
		for i, s := range run.samples {
			keys[i] = count(s.keys)
		}
		log.Printf("churn %-40s %-26s %8.0f req/s  %6.0f MiB at %s; keys each second: %s", run.cmd, run.server,
			run.perSecond, float64(last.rss)/(1<<20), last.at.Round(time.Second), strings.Join(keys, " "))
		runs = append(runs, run)
	}
	return runs, nil
}

// churnOne drives args at s with redis-benchmark for d, and samples the key count and the
// resident memory each second.
func churnOne(s *server, args []string, d time.Duration) (churnRun, error) {
	cmdText := strings.Join(args, " ")
	if args[0] == "EVALSHA" {
		cmdText = "EVALSHA gcra.lua " + strings.Join(args[2:], " ")
	}
	run := churnRun{cmd: strings.ReplaceAll(cmdText, "__rand_int__", "<rand>")}
	host, port, err := net.SplitHostPort(s.addr)
	if err != nil {
		return run, err
	}
	bench := exec.Command("redis-benchmark", append([]string{"-h", host, "-p", port,
		"-c", strconv.Itoa(churnConns), "-P", strconv.Itoa(churnPipeline), "-r", strconv.Itoa(churnKeys),
		"-n", "2000000000"}, args...)...)
	var stdout, stderr bytes.Buffer
	bench.Stdout, bench.Stderr = &stdout, &stderr
	if err := bench.Start(); err != nil {
		return run, fmt.Errorf("redis-benchmark: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- bench.Wait() }()
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for range max(1, int(d/time.Second)) {
		select {
		case err := <-exited:
			return run, fmt.Errorf("redis-benchmark stopped: %v: %s", err, strings.TrimSpace(stderr.String()))
		case <-tick.C:
		}
		v, err := s.do("DBSIZE")
		if err != nil {
			return run, fmt.Errorf("DBSIZE: %w", err)
		}
		keys, _ := v.(int64)
		rss, err := s.rss()
		if err != nil {
			return run, err
		}
		run.samples = append(run.samples, churnSample{at: time.Since(start), keys: keys, rss: rss})
	}
	bench.Process.Kill()
	<-exited
	// A progress line is "SET ...: rps=290560.0 (overall: 211022.4) avg_msec=...": the
	// last one's overall rps is the rate.
	out := stdout.String()
	_, last, ok := strings.Cut(out[max(0, strings.LastIndex(out, "rps=")):], "(overall: ")
	if !ok {
		return run, fmt.Errorf("redis-benchmark printed no rate: %q", out)
	}
	rate, _, _ := strings.Cut(last, ")")
	run.perSecond, err = strconv.ParseFloat(rate, 64)
	return run, err
}

// churnSection renders the churn runs in markdown.
func churnSection(cfg config, runs []churnRun) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## Churn of short-lived keys\n\n")
	p("`redis-benchmark -c %d -P %d -r %d -n 2000000000 <command>` for %s: each request names a random key of\n",
		churnConns, churnPipeline, churnKeys, cfg.churn)
	p("%s, which lives about a second and is never touched again, so that only active expiry frees it.\n", thousands(churnKeys))
	p("Each server is started fresh. Redis has no THROTTLE: it runs the GCRA script with the same period.\n")
	p("req/s is redis-benchmark's overall rate when it was stopped. live is req/s times the\n")
	p("second a key lives: the keys a server that expired each one on time would hold. keys is DBSIZE\n")
	p("(it counts keys expired but not yet removed), RSS is VmRSS, both sampled every second. flat: the peak of\n")
	p("the last quarter of the run within %.2fx the peak of its second quarter, for keys and for RSS.\n\n", churnFlat)
	var at []int
	n := 0
	if len(runs) > 0 {
		n = len(runs[0].samples)
	}
	for q := 1; q <= 4 && n > 0; q++ {
		at = append(at, max(1, n*q/4)-1)
	}
	when := make([]string, len(at))
	for i, j := range at {
		when[i] = fmt.Sprintf("%d s", j+1)
	}
	p("| command | server | req/s | live | keys at %s | peak keys | RSS at %s | peak RSS | flat |\n",
		strings.Join(when, ", "), strings.Join(when, ", "))
	p("|---|---|--:|--:|--:|--:|--:|--:|---|\n")
	for _, r := range runs {
		var keys, rss []string
		var peakKeys, peakRSS int64
		for _, s := range r.samples {
			peakKeys, peakRSS = max(peakKeys, s.keys), max(peakRSS, s.rss)
		}
		for _, j := range at {
			if j < len(r.samples) {
				keys = append(keys, count(r.samples[j].keys))
				rss = append(rss, mib(r.samples[j].rss))
			}
		}
		p("| `%s` | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.cmd, r.server, thousands(r.perSecond),
			count(int64(r.perSecond)), strings.Join(keys, ", "), count(peakKeys), strings.Join(rss, ", "), mib(peakRSS), flat(r.samples))
	}
	return b.String()
}

// flat says whether the peak of the last quarter of the samples is within churnFlat of the
// peak of the second quarter, for keys and for RSS, and by how much it grew when not.
func flat(samples []churnSample) string {
	q := len(samples) / 4
	if q == 0 {
		return "-"
	}
	peak := func(from, to int) (keys, rss int64) {
		for _, s := range samples[from:to] {
			keys, rss = max(keys, s.keys), max(rss, s.rss)
		}
		return max(1, keys), max(1, rss)
	}
	midKeys, midRSS := peak(q, 2*q)
	lastKeys, lastRSS := peak(len(samples)-q, len(samples))
	k, m := float64(lastKeys)/float64(midKeys), float64(lastRSS)/float64(midRSS)
	if k <= churnFlat && m <= churnFlat {
		return "yes"
	}
	return fmt.Sprintf("no: keys %.2fx, RSS %.2fx", k, m)
}

// count formats a key count in thousands or millions.
func count(n int64) string {
	if n >= 1e6 {
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0fk", float64(n)/1e3)
}

// mib formats bytes in MiB.
func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// churnTargets says, for each throttled run, whether its keys and memory stayed flat.
func churnTargets(runs []churnRun) []target {
	var out []target
	for _, r := range runs {
		if strings.HasPrefix(r.server, "throttled") {
			f := flat(r.samples)
			out = append(out, target{fmt.Sprintf("churn `%s`, %s: keys and RSS stay flat", r.cmd, r.server), f, f == "yes"})
		}
	}
	return out
}
