package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"log"
	"net"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Upstream mode: a throttled instance whose limits live in a redis-server, against the GCRA
// script sent straight to that redis-server. redis-benchmark drives both sides with the same
// connections and pipeline: over random keys, where every allowed call costs the upstream a
// compare-and-set, and flooding one denied key, which throttled answers from the state it
// last saw. Each measurement takes the median of upstreamRounds runs, the sides interleaved.
const (
	upstreamConns  = 50
	upstreamKeys   = 100000
	upstreamRounds = 3
)

// ceiling is the side that measures the client itself: redis-server answering PING, the most
// any server can be sent with these connections and pipeline on this machine.
const ceiling = "redis PING (the client's ceiling)"

// upstreamRow is one measurement.
type upstreamRow struct {
	workload, side string
	pipeline       int
	perSecond      float64
}

// upstreamRun measures both sides at P=1 and 16, over random keys and on a denied key.
func (r *runner) upstreamRun() ([]upstreamRow, error) {
	redis, err := r.track(startRedis(r.tmp))
	if err != nil {
		return nil, err
	}
	t, err := r.track(startThrottled("throttled (upstream)", r.cfg.bin, r.tmp+"/upstream",
		"--appendonly", "no", "--upstream", "redis://"+redis.addr))
	if err != nil {
		return nil, err
	}
	sc, err := loadScripts(redis)
	if err != nil {
		return nil, err
	}
	workloads := []struct {
		name  string
		sides []upstreamSide
	}{
		{"GCRA 100 burst, 10/60s, random keys", []upstreamSide{
			{"redis EVALSHA gcra.lua", redis, []string{"EVALSHA", sc.gcra, "1", "gc:__rand_int__", "100", "10", "60000", "1"}},
			{"throttled THROTTLE (upstream)", t, []string{"THROTTLE", "th:__rand_int__", "100", "10", "60s"}},
		}},
		{"denied key flood (GCRA 0 burst, 1/1h)", []upstreamSide{
			{"redis EVALSHA gcra.lua", redis, []string{"EVALSHA", sc.gcra, "1", "gc:denied", "0", "1", "3600000", "1"}},
			{"throttled THROTTLE (upstream)", t, []string{"THROTTLE", "th:denied", "0", "1", "1h"}},
			{ceiling, redis, []string{"PING"}},
		}},
	}
	var rows []upstreamRow
	for _, w := range workloads {
		for _, p := range []int{1, 16} {
			got, err := measureSides(w.name, w.sides, p, r.cfg.duration)
			if err != nil {
				return nil, err
			}
			rows = append(rows, got...)
		}
	}
	// The same random keys with throttled on a core of its own, as beside its clients on a
	// host of their own: for both sides the redis-server and the load share CPU 0, and
	// throttled alone has CPU 1.
	all := fmt.Sprintf("0-%d", runtime.NumCPU()-1)
	if err := pinAll(map[*server]string{redis: "0", t: "1"}, "0"); err != nil {
		return nil, err
	}
	for _, p := range []int{1, 16} {
		got, err := measureSides(pinnedRandom, workloads[0].sides, p, r.cfg.duration)
		if err != nil {
			return nil, errors.Join(err, pinAll(map[*server]string{redis: all, t: all}, all))
		}
		rows = append(rows, got...)
	}
	if err := pinAll(map[*server]string{redis: all, t: all}, all); err != nil {
		return nil, err
	}
	log.Printf("throttled INFO upstream: round trips %s, conflicts %s, local %s, degraded %s",
		t.infoField("upstream", "upstream_round_trips"), t.infoField("upstream", "upstream_conflicts"),
		t.infoField("upstream", "upstream_local_decisions"), t.infoField("upstream", "upstream_degraded_decisions"))
	return rows, nil
}

// upstreamSide is one server and command of an upstream workload.
type upstreamSide struct {
	label string
	srv   *server
	args  []string
}

// pinnedRandom is the random-keys workload with throttled on a core of its own.
const pinnedRandom = "GCRA 100 burst, 10/60s, random keys, throttled on a core of its own"

// measureSides runs each side at pipeline p upstreamRounds times, interleaved, and returns
// each side's median.
func measureSides(name string, sides []upstreamSide, p int, d time.Duration) ([]upstreamRow, error) {
	rates := make([][]float64, len(sides))
	for round := range upstreamRounds {
		for i := range sides {
			j := (i + round) % len(sides)
			rate, err := benchmark(sides[j].srv, sides[j].args, p, d)
			if err != nil {
				return nil, fmt.Errorf("%s, %s P=%d: %w", name, sides[j].label, p, err)
			}
			rates[j] = append(rates[j], rate)
		}
	}
	var rows []upstreamRow
	for i, s := range sides {
		rw := upstreamRow{workload: name, side: s.label, pipeline: p, perSecond: median(rates[i])}
		log.Printf("%-40s %-32s P=%-2d %10.0f req/s", name, s.label, p, rw.perSecond)
		rows = append(rows, rw)
	}
	return rows, nil
}

// benchmark runs redis-benchmark against s for about d (sized by a short first run) and
// returns its rate.
func benchmark(s *server, args []string, pipeline int, d time.Duration) (float64, error) {
	rate, err := benchmarkN(s, args, pipeline, 20000)
	if err != nil {
		return 0, err
	}
	return benchmarkN(s, args, pipeline, max(20000, int(rate*d.Seconds())))
}

// benchmarkTimeout bounds one redis-benchmark run (sized for seconds): a server that dies
// mid-run leaves redis-benchmark retrying at full CPU, spoiling every run after it.
const benchmarkTimeout = time.Minute

// benchmarkN runs redis-benchmark for n requests and returns its rate.
func benchmarkN(s *server, args []string, pipeline, n int) (float64, error) {
	host, port, err := net.SplitHostPort(s.addr)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), benchmarkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "redis-benchmark", append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(upstreamConns),
		"-P", strconv.Itoa(pipeline), "-r", strconv.Itoa(upstreamKeys), "-n", strconv.Itoa(n), "--csv"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("redis-benchmark: no result within %v (is %s up?)", benchmarkTimeout, s.addr)
		}
		return 0, fmt.Errorf("redis-benchmark: %w: %s", err, stderr.String())
	}
	recs, err := csv.NewReader(&stdout).ReadAll()
	if err != nil || len(recs) < 2 || len(recs[len(recs)-1]) < 2 {
		return 0, fmt.Errorf("redis-benchmark: unreadable output %q", stdout.String())
	}
	return strconv.ParseFloat(recs[len(recs)-1][1], 64)
}

// upstreamTargets: through one upstream Redis, at least 0.8x the GCRA script sent straight to
// it over random keys, and 5x under a flood on a denied key, at each pipeline depth.
func upstreamTargets(rows []upstreamRow) []target {
	var out []target
	for _, goal := range []struct {
		workload string
		want     float64
	}{{"GCRA 100 burst, 10/60s, random keys", 0.8}, {pinnedRandom, 0.8}, {"denied key flood (GCRA 0 burst, 1/1h)", 5}} {
		for _, p := range []int{1, 16} {
			var lua, up, most float64
			for _, rw := range rows {
				if rw.workload == goal.workload && rw.pipeline == p {
					switch {
					case rw.side == ceiling:
						most = rw.perSecond
					case strings.HasPrefix(rw.side, "redis"):
						lua = rw.perSecond
					default:
						up = rw.perSecond
					}
				}
			}
			if lua == 0 {
				continue
			}
			measured := fmt.Sprintf("%.2fx (%s / %s req/s)", up/lua, thousands(up), thousands(lua))
			if most > 0 {
				measured += fmt.Sprintf("; the client's ceiling (PING) is %.2fx", most/lua)
			}
			out = append(out, target{fmt.Sprintf("upstream mode, %s, P=%d: THROTTLE through one Redis >= %gx gcra.lua on it", goal.workload, p, goal.want),
				measured, up/lua >= goal.want})
		}
	}
	return out
}

// upstreamSection renders the rows.
func upstreamSection(rows []upstreamRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## Upstream mode\n\n")
	p("throttled `--upstream redis://...` keeps every limit in one redis-server; the baseline sends the GCRA\n")
	p("script straight to that redis-server. `redis-benchmark -c %d -P <P> -r %d` drives both, the median of\n", upstreamConns, upstreamKeys)
	p("%d interleaved runs. Random keys: each allowed call is a compare-and-set on the upstream, pipelined with\n", upstreamRounds)
	p("others. Denied key: throttled answers from the state it last saw, without the upstream; PING on the\n")
	p("redis-server beside it is the most this client can send at that pipeline depth on this machine.\n")
	p("\"On a core of its own\": for both sides the redis-server and the load share CPU 0, and throttled alone\n")
	p("has CPU 1 (taskset), as it would beside its clients on a host of their own.\n\n")
	p("| workload | server / command | P | req/s |\n|---|---|--:|--:|\n")
	for _, rw := range rows {
		p("| %s | %s | %d | %s |\n", rw.workload, rw.side, rw.pipeline, thousands(rw.perSecond))
	}
	return b.String()
}
