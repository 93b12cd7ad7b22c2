package main

import (
	"fmt"
	"strings"
)

// policiesPairs measures CHECK of a named policy against THROTTLE with the same numbers on
// one throttled without persistence, at 50 connections, P=1 and P=16, over random subjects
// (keys): what a policy costs over sending the numbers with each request. Target: CHECK
// within 15% of THROTTLE (a ratio of req/s of at least 0.85).
func (r *runner) policiesPairs() ([]pair, error) {
	s, err := r.track(startThrottled("throttled (policies)", r.cfg.bin, r.tmp+"/policies", "--appendonly", "no"))
	if err != nil {
		return nil, err
	}
	if _, err := s.do("POLICY.SET", "api", "THROTTLE", "100", "10", "60"); err != nil {
		return nil, err
	}
	check := side{label: "throttled CHECK api", srv: s, args: func(k string) []string { return []string{"CHECK", "api", k} }}
	throttle := side{label: "throttled THROTTLE", srv: s, args: func(k string) []string { return []string{"THROTTLE", k, "100", "10", "60"} }}
	ps := []pair{{pipeline: 1, a: check, b: throttle}, {pipeline: 16, a: check, b: throttle}}
	return ps, r.measurePairs(ps)
}

// policiesSection renders policiesPairs' measurements.
func policiesSection(cfg config, ps []pair) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Policies: CHECK against THROTTLE\n\n%d connections, %d random subjects, %s per measurement, median of %d interleaved rounds.\n\n",
		cfg.conns, cfg.keys, cfg.duration, pairRounds)
	b.WriteString("| pipeline | CHECK req/s (rounds) | THROTTLE req/s (rounds) | median CHECK/THROTTLE | within 15% |\n|---|---|---|---|---|\n")
	for _, p := range ps {
		fmt.Fprintf(&b, "| %d | %s | %s | %.3f | %s |\n", p.pipeline, rounds(p.ra), rounds(p.rb), p.median, yesNo(p.median >= 0.85))
	}
	return b.String()
}

func rounds(rs []float64) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%.0f", r))
	}
	return strings.Join(parts, " ")
}

// policiesTargets: CHECK within 15% of THROTTLE at each pipeline depth.
func policiesTargets(ps []pair) []target {
	var out []target
	for _, p := range ps {
		out = append(out, target{fmt.Sprintf("P=%d: CHECK of a policy within 15%% of THROTTLE", p.pipeline),
			fmt.Sprintf("%.3f (median of %d interleaved rounds)", p.median, len(p.ra)), p.median >= 0.85})
	}
	return out
}
