package main

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
)

// latencyTracking measures what latency-tracking costs a decision: CL.THROTTLE on a
// throttled with it (the default) against one without, over the network, P=1 and P=16,
// in paired rounds; then again with each server on a core of its own.
func (r *runner) latencyTracking() ([]pair, error) {
	on, err := r.track(startThrottled("throttled (latency-tracking yes)", r.cfg.bin, r.tmp+"/lat-yes", "--appendonly", "no"))
	if err != nil {
		return nil, err
	}
	off, err := r.track(startThrottled("throttled (latency-tracking no)", r.cfg.bin, r.tmp+"/lat-no", "--appendonly", "no",
		"--latency-tracking", "no"))
	if err != nil {
		return nil, err
	}
	cl := func(k string) []string { return []string{"CL.THROTTLE", k, "100", "10", "60", "1"} }
	at := func(p int, suffix string) pair {
		return pair{prefix: "lat", pipeline: p,
			a: side{label: "throttled CL.THROTTLE, latency-tracking yes" + suffix, srv: on, args: cl},
			b: side{label: "throttled CL.THROTTLE, latency-tracking no", srv: off, args: cl}}
	}
	ps := []pair{at(1, ""), at(16, "")}
	if err := r.measurePairs(ps); err != nil {
		return ps, err
	}
	all := "0-" + strconv.Itoa(runtime.NumCPU()-1)
	if err := pinAll(map[*server]string{on: "1", off: "1"}, "0"); err != nil {
		return ps, err
	}
	pinned := []pair{at(1, ownCore), at(16, ownCore)}
	err = r.measurePairs(pinned)
	return append(ps, pinned...), errors.Join(err, pinAll(map[*server]string{on: all, off: all}, all))
}

func latencySection(cfg config, ps []pair) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## What latency tracking costs\n\n")
	p("CL.THROTTLE over %d random keys at %d connections on two throttled servers (`--appendonly no`), one\n", cfg.keys, cfg.conns)
	p("with `latency-tracking yes` (the default: each call counted in its event loop's histogram) and one\n")
	p("with `no`, in paired rounds; \"own core\" rows with each server pinned to CPU 1 and the load on CPU 0.\n\n")
	p("| comparison | P | yes, req/s | no, req/s | ratio per round | median | CPU per call, no / yes |\n|---|--:|---|---|---|--:|--:|\n")
	for _, c := range ps {
		p("| %s | %d | %s | %s | %s | %.3f | %.3f |\n", strings.TrimPrefix(c.a.label, "throttled "), c.pipeline,
			rounds(c.ra), rounds(c.rb), ratios(c), c.median, cpuRatio(c))
	}
	return b.String()
}

// latencyTargets: latency tracking within 2% of none, at each P.
func latencyTargets(ps []pair) []target {
	var out []target
	for _, c := range ps {
		out = append(out, target{fmt.Sprintf("P=%d: CL.THROTTLE with latency-tracking within 2%% of without%s", c.pipeline,
			strings.TrimPrefix(c.a.label, "throttled CL.THROTTLE, latency-tracking yes")),
			fmt.Sprintf("%.3f (median of %d interleaved rounds)", c.median, len(c.ra)), c.median >= 0.98})
	}
	return out
}
