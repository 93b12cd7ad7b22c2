package main

import (
	"fmt"
	"strings"
)

// always measures appendfsync always on both servers, at P=1 and 16 over random and hot keys:
// CL.THROTTLE on throttled, and INCR and gcra.lua on redis-server with its AOF synced at every
// write. Each server syncs before it replies to a write, so these rows are bound by the disk.
func (r *runner) always() ([]row, error) {
	t, err := r.track(startThrottled("throttled (always)", r.cfg.bin, r.tmp+"/always", "--appendfsync", "always"))
	if err != nil {
		return nil, err
	}
	redis, err := r.track(startRedis(r.tmp, "--appendonly", "yes", "--appendfsync", "always", "--appendfilename", "always.aof"))
	if err != nil {
		return nil, err
	}
	sc, err := loadScripts(redis)
	if err != nil {
		return nil, err
	}
	return r.throughput([]workload{{name: "GCRA, appendfsync always", variants: []variant{
		{label: "throttled CL.THROTTLE (always)", srv: t, prefix: "cl",
			args: func(k string) []string { return []string{"CL.THROTTLE", k, "100", "10", "60", "1"} }},
		{label: "redis EVALSHA gcra.lua (always)", srv: redis, prefix: "gc",
			args: func(k string) []string { return []string{"EVALSHA", sc.gcra, "1", k, "100", "10", "60000", "1"} }},
		{label: "redis INCR (always)", srv: redis, prefix: "in",
			args: func(k string) []string { return []string{"INCR", k} }},
	}}})
}

// alwaysSection renders the always rows beside the same commands without persistence.
func alwaysSection(rows, base []row) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## appendfsync always\n\n")
	p("Both servers sync before they reply to a write: throttled with `--appendfsync always`, redis-server\n")
	p("with `--appendonly yes --appendfsync always`. \"vs no persistence\" divides by the same command on the\n")
	p("same server without persistence, from the table above (same run, same P and keys).\n\n")
	p("| command | P | keys | req/s | p99 | vs no persistence |\n|---|--:|---|--:|--:|--:|\n")
	for _, rw := range rows {
		ratio := "-"
		label := strings.TrimSuffix(rw.v.label, " (always)")
		if label == "throttled CL.THROTTLE" {
			label += " (appendonly no)"
		}
		for _, o := range base {
			if o.v.label == label && o.pipeline == rw.pipeline && o.hot == rw.hot {
				ratio = fmt.Sprintf("%.2f", rw.res.PerSecond()/o.res.PerSecond())
			}
		}
		p("| %s | %d | %s | %s | %s | %s |\n", rw.v.label, rw.pipeline, rw.keys(), thousands(rw.res.PerSecond()),
			latency(rw.res.Latency.Quantile(0.99)), ratio)
	}
	return b.String()
}
