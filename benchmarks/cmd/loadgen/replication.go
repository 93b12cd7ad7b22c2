package main

import (
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
)

// replRun is what the replication part measured: the cost of one replica at P=1 and 16, and
// the lag of the replica under load.
type replRun struct {
	pairs    []pair   // throttled with a replica against alone, at P=1 and 16
	redis    []pair   // redis-server with a replica against alone, INCR at P=16
	cpuWith  float64  // ns of the primary's CPU per CL.THROTTLE at P=16, with a replica
	cpuAlone float64  // the same, alone
	lags     []lagRun // at P=1 and 16
	// redisLags is redis-server's own lag on the same machine under INCR, for scale.
	redisLags []lagRun

	// The same with the replica on a core of its own, as on a host of its own: the primaries
	// and the load on CPU 0, the replica on CPU 1. Empty on a machine of one core.
	pinnedPairs []pair
	pinnedLags  []lagRun
}

// lagRun is the replication lag probed under CL.THROTTLE at one pipeline depth.
type lagRun struct {
	pipeline int
	lags     []time.Duration // sorted
	load     float64         // req/s on the primary meanwhile
}

// replication measures CL.THROTTLE over random keys on a primary with one replica against
// a like primary without, both with the default appendfsync everysec, in interleaved rounds;
// then, under the same load at P=16, how long a change takes to reach the replica: a probe
// key written on the primary every 10 ms, read on the replica until it is there.
func (r *runner) replication() (replRun, error) {
	var run replRun
	with, err := r.track(startThrottled("throttled primary (one replica)", r.cfg.bin, r.tmp+"/primary"))
	if err != nil {
		return run, err
	}
	alone, err := r.track(startThrottled("throttled primary (no replica)", r.cfg.bin, r.tmp+"/alone"))
	if err != nil {
		return run, err
	}
	host, port, _ := strings.Cut(with.addr, ":")
	replica, err := r.track(startThrottled("throttled replica", r.cfg.bin, r.tmp+"/replica", "--replicaof", host, port))
	if err != nil {
		return run, err
	}
	for deadline := time.Now().Add(10 * time.Second); replica.infoField("replication", "master_link_status") != "up"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return run, fmt.Errorf("the replica did not connect to its primary")
		}
	}
	cl := func(k string) []string { return []string{"CL.THROTTLE", k, "100", "10", "60", "1"} }
	a := side{label: "CL.THROTTLE, primary with a replica", srv: with, args: cl}
	b := side{label: "CL.THROTTLE, primary alone", srv: alone, args: cl}
	run.pairs = []pair{{pipeline: 1, a: a, b: b}, {pipeline: 16, a: a, b: b}}
	if err := r.measurePairs(run.pairs); err != nil {
		return run, err
	}
	if run.cpuWith, run.cpuAlone, err = r.primaryCPU(with, alone); err != nil {
		return run, err
	}
	if run.lags, err = r.lags(with, replica, -1, cl); err != nil {
		return run, err
	}
	if runtime.NumCPU() >= 2 {
		if err := pinAll(map[*server]string{with: "0", alone: "0", replica: "1"}, "0"); err != nil {
			return run, err
		}
		run.pinnedPairs = []pair{{pipeline: 1, a: a, b: b}, {pipeline: 16, a: a, b: b}}
		err := r.measurePairs(run.pinnedPairs)
		if err == nil {
			run.pinnedLags, err = r.lags(with, replica, 1, cl)
		}
		all := fmt.Sprintf("0-%d", runtime.NumCPU()-1)
		if err := errors.Join(err, pinAll(map[*server]string{with: all, alone: all, replica: all}, all)); err != nil {
			return run, err
		}
	}

	// What a replica costs Redis on the same machine, for scale.
	rWith, err := r.track(startRedis(r.tmp, "--dbfilename", "primary.rdb"))
	if err != nil {
		return run, err
	}
	rAlone, err := r.track(startRedis(r.tmp, "--dbfilename", "alone.rdb"))
	if err != nil {
		return run, err
	}
	host, port, _ = strings.Cut(rWith.addr, ":")
	rReplica, err := r.track(startRedis(r.tmp, "--dbfilename", "replica.rdb", "--replicaof", host, port))
	if err != nil {
		return run, err
	}
	for deadline := time.Now().Add(10 * time.Second); rReplica.infoField("replication", "master_link_status") != "up"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return run, fmt.Errorf("the redis replica did not connect to its primary")
		}
	}
	incr := func(k string) []string { return []string{"INCR", k} }
	run.redis = []pair{{pipeline: 16, a: side{label: "redis INCR, primary with a replica", srv: rWith, args: incr}, b: side{label: "redis INCR, primary alone", srv: rAlone, args: incr}}}
	if err := r.measurePairs(run.redis); err != nil {
		return run, err
	}
	run.redisLags, err = r.lags(rWith, rReplica, -1, incr)
	return run, err
}

// lags probes the replication lag at P=1 and 16 under the load cmd, the probe's thread on
// CPU cpu unless it is negative.
func (r *runner) lags(primary, replica *server, cpu int, cmd func(string) []string) ([]lagRun, error) {
	var out []lagRun
	for _, p := range []int{1, 16} {
		lr, err := r.lag(primary, replica, p, cpu, cmd)
		if err != nil {
			return nil, err
		}
		out = append(out, lr)
	}
	return out, nil
}

// pinAll sets the CPUs of every thread of each server, and of this process (the load).
func pinAll(cpus map[*server]string, load string) error {
	for s, c := range cpus {
		if err := pin(s.cmd.Process.Pid, c); err != nil {
			return err
		}
	}
	return pin(os.Getpid(), load)
}

// pin sets the CPUs of every thread of process pid, as taskset -a does.
func pin(pid int, cpus string) error {
	if out, err := exec.Command("taskset", "-a", "-c", "-p", cpus, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return fmt.Errorf("taskset %s %d: %w: %s", cpus, pid, err, out)
	}
	return nil
}

// primaryCPU measures the CPU time the primary's process spends per CL.THROTTLE at P=16,
// with its replica and alone, in three alternating rounds each: what a replica costs the
// primary itself, apart from the cores the replica takes on this shared machine.
func (r *runner) primaryCPU(with, alone *server) (float64, float64, error) {
	reqs := make([][]byte, r.cfg.keys)
	for k := range reqs {
		reqs[k] = loadtest.Encode("CL.THROTTLE", fmt.Sprintf("cpu:%09d", k), "100", "10", "60", "1")
	}
	measure := func(s *server) (float64, error) {
		before, err := cpuTicks(s)
		if err != nil {
			return 0, err
		}
		res, err := loadtest.Run(loadtest.Load{Addr: s.addr, Conns: r.cfg.conns, Pipeline: 16, Requests: reqs, Duration: r.cfg.duration})
		if err != nil {
			return 0, err
		}
		after, err := cpuTicks(s)
		return float64(after-before) * 1e7 / float64(res.Requests), err // a tick is 10 ms
	}
	var w, a []float64
	for round := range 3 {
		order := []*server{with, alone}
		if round%2 == 1 {
			order = []*server{alone, with}
		}
		for _, s := range order {
			ns, err := measure(s)
			if err != nil {
				return 0, 0, err
			}
			if s == with {
				w = append(w, ns)
			} else {
				a = append(a, ns)
			}
		}
	}
	log.Printf("primary CPU per CL.THROTTLE at P=16: with a replica %.0f ns, alone %.0f ns", median(w), median(a))
	return median(w), median(a), nil
}

// cpuTicks returns the user and system time of s's process so far, in clock ticks.
func cpuTicks(s *server) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	_, rest, _ := strings.Cut(string(b), ") ") // the command name may hold spaces
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", s.cmd.Process.Pid, b)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", s.cmd.Process.Pid, b)
	}
	return u + st, nil
}

// lag probes the replication lag while cmd runs on the primary over random keys at
// P=pipeline, for twice the time of a measurement.
func (r *runner) lag(primary, replica *server, pipeline, cpu int, cmd func(string) []string) (lagRun, error) {
	run := lagRun{pipeline: pipeline}
	if cpu >= 0 {
		// Off the core the load saturates, or the probe would time its own waits for it.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return run, fmt.Errorf("the probe's CPU: %w", err)
		}
	}
	reqs := make([][]byte, r.cfg.keys)
	for k := range reqs {
		reqs[k] = loadtest.Encode(cmd(fmt.Sprintf("lag:%09d", k))...)
	}
	var wg sync.WaitGroup
	var res *loadtest.Result
	var loadErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, loadErr = loadtest.Run(loadtest.Load{Addr: primary.addr, Conns: r.cfg.conns, Pipeline: pipeline,
			Requests: reqs, Warmup: r.cfg.warmup, Duration: 2 * r.cfg.duration})
	}()
	time.Sleep(r.cfg.warmup)
	pc, err := net.Dial("tcp", primary.addr)
	if err != nil {
		return run, err
	}
	defer pc.Close()
	rc, err := net.Dial("tcp", replica.addr)
	if err != nil {
		return run, err
	}
	defer rc.Close()
	pr, rr := loadtest.NewReader(pc), loadtest.NewReader(rc)
	var lags []time.Duration
	for end := time.Now().Add(2*r.cfg.duration - 100*time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		val := fmt.Sprint(len(lags))
		if _, err := pc.Write(loadtest.Encode("SET", "lag:probe", val)); err != nil {
			return run, err
		}
		if _, err := pr.Next(); err != nil {
			return run, err
		}
		start := time.Now() // the primary holds the write: from here on it is the replication's time
		for {
			if _, err := rc.Write(loadtest.Encode("GET", "lag:probe")); err != nil {
				return run, err
			}
			v, err := rr.Value()
			if err != nil {
				return run, err
			}
			if v == val {
				break
			}
			if time.Since(start) > 5*time.Second {
				return run, fmt.Errorf("the replica did not get a probe within 5s")
			}
			time.Sleep(50 * time.Microsecond)
		}
		lags = append(lags, time.Since(start))
	}
	wg.Wait()
	if loadErr != nil {
		return run, loadErr
	}
	slices.Sort(lags)
	run.lags, run.load = lags, res.PerSecond()
	log.Printf("replication lag of %s at P=%d, %.0f req/s: %d probes, p50 %v, p99 %v", primary.name, pipeline, run.load, len(lags), quantile(lags, 0.5), quantile(lags, 0.99))
	return run, nil
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// replicationSection renders the replication part.
func replicationSection(cfg config, run replRun) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## Replication\n\n")
	p("CL.THROTTLE over %d random keys, %d connections, on a primary with one replica attached against a like\n", cfg.keys, cfg.conns)
	p("primary without one (both with appendfsync everysec), %d interleaved rounds of %v; the median ratio.\n\n", pairRounds, cfg.duration)
	p("| P | with a replica req/s | alone req/s | ratio |\n|--:|--:|--:|--:|\n")
	for _, pr := range run.pairs {
		p("| %d | %s | %s | %.3f |\n", pr.pipeline, thousands(median(pr.ra)), thousands(median(pr.rb)), pr.median)
	}
	p("\nOn this shared 2-core machine the replica's own work (applying every change, and writing it to its\n")
	p("Pebble store) takes cores the primary and the load tool need. What the replica costs the primary\n")
	p("itself, its CPU per CL.THROTTLE at P=16 (user + system, from /proc; median of 3 alternating rounds):\n")
	p("%.0f ns with a replica, %.0f ns alone (%.2fx).\n", run.cpuWith, run.cpuAlone, run.cpuWith/run.cpuAlone)
	for _, pr := range run.redis {
		p("\nFor scale, a replica costs redis-server on the same machine, INCR over random keys at P=%d: %s req/s\n", pr.pipeline, thousands(median(pr.ra)))
		p("with a replica, %s alone (%.3f).\n", thousands(median(pr.rb)), pr.median)
	}
	p("\nReplication lag while the primary serves CL.THROTTLE over random keys: a key written on the primary\n")
	p("every 10 ms, then read on the replica until it is there: the time from the primary's reply to the\n")
	p("replica's (it includes the last read's round trip), for %v.\n\n", 2*cfg.duration)
	lagTable(p, run.lags)
	if len(run.pinnedPairs) > 0 {
		p("\nThe same with the replica on a core of its own, as it would be on a host of its own: both primaries\n")
		p("and the load tool on CPU 0, the replica and the lag probe's thread on CPU 1 (taskset).\n\n")
		p("| P | with a replica req/s | alone req/s | ratio |\n|--:|--:|--:|--:|\n")
		for _, pr := range run.pinnedPairs {
			p("| %d | %s | %s | %.3f |\n", pr.pipeline, thousands(median(pr.ra)), thousands(median(pr.rb)), pr.median)
		}
		p("\n")
		lagTable(p, run.pinnedLags)
	}
	if len(run.redisLags) > 0 {
		p("\nFor scale, redis-server's own lag on the same machine, probed the same way under INCR over random keys\n")
		p("(it writes to its replica in the event loop's round that ran the command):\n\n")
		lagTable(p, run.redisLags)
	}
	return b.String()
}

// lagTable renders lag runs.
func lagTable(p func(string, ...any), lags []lagRun) {
	p("| P | primary req/s | probes | p50 | p99 | max |\n|--:|--:|--:|--:|--:|--:|\n")
	for _, l := range lags {
		if len(l.lags) > 0 {
			p("| %d | %s | %d | %s | %s | %s |\n", l.pipeline, thousands(l.load), len(l.lags), latency(quantile(l.lags, 0.5)),
				latency(quantile(l.lags, 0.99)), latency(l.lags[len(l.lags)-1]))
		}
	}
}

// replicationTargets: a replica costs under 10%, and the lag's p99 is under 10 ms.
func replicationTargets(run replRun) []target {
	var out []target
	for _, pr := range run.pairs {
		out = append(out, target{fmt.Sprintf("one replica costs CL.THROTTLE under 10%% at P=%d", pr.pipeline),
			fmt.Sprintf("%.3f", pr.median), pr.median >= 0.9})
	}
	for _, pr := range run.pinnedPairs {
		out = append(out, target{fmt.Sprintf("one replica on a core of its own costs CL.THROTTLE under 10%% at P=%d", pr.pipeline),
			fmt.Sprintf("%.3f", pr.median), pr.median >= 0.9})
	}
	if run.cpuAlone > 0 {
		r := run.cpuWith / run.cpuAlone
		out = append(out, target{"one replica costs the primary's CPU per CL.THROTTLE under 10% at P=16",
			fmt.Sprintf("%.2fx (%.0f against %.0f ns)", r, run.cpuWith, run.cpuAlone), r < 1.1})
	}
	lagTargets := func(lags []lagRun, where string) {
		for _, l := range lags {
			if len(l.lags) > 0 {
				p99 := quantile(l.lags, 0.99)
				out = append(out, target{fmt.Sprintf("replication lag p99 under 10 ms at P=%d%s", l.pipeline, where), latency(p99), p99 < 10*time.Millisecond})
			}
		}
	}
	lagTargets(run.lags, "")
	lagTargets(run.pinnedLags, ", the replica on a core of its own")
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
