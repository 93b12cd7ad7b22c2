package main

import (
	"fmt"
	"log"
	"slices"
	"strconv"
	"strings"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
)

// The zsetmem part measures issue 39's figure: the resident memory of sliding logs, sorted sets
// of 100 members scored by their time in ms, on throttled and on redis-server 7.0 (a listpack
// there: zset-max-listpack-entries is 128), as the growth of each process's VmRSS over
// cfg.zsets such sets. It measures two kinds of member, each in a fresh pair of servers and
// in cfg.zsetRounds rounds: the time itself ("1732512345000"), and the time and a sequence
// number ("1732512345000-42"), as sliding log scripts make their members unique.

// zsetMemRow is one kind of sliding log's resident bytes per set, round by round.
type zsetMemRow struct {
	name, member     string
	throttled, redis []float64
}

// median returns the median of the rounds' ratios.
func (m zsetMemRow) median() float64 {
	r := m.ratios()
	slices.Sort(r)
	return r[len(r)/2]
}

func (m zsetMemRow) ratios() []float64 {
	r := make([]float64, len(m.throttled))
	for i := range r {
		r[i] = m.throttled[i] / m.redis[i]
	}
	return r
}

// zsetMemKinds are the members of the two kinds of log: j is the member's place, ts its time.
var zsetMemKinds = []struct {
	name, member string
	of           func(j int, ts string) string
}{
	{"sorted set, 100 timestamps", "1732512345000", func(_ int, ts string) string { return ts }},
	{"sorted set, 100 timestamped ids", "1732512345000-42", func(j int, ts string) string { return ts + "-" + strconv.Itoa(j) }},
}

// zsetLog returns a ZADD of a full sliding log of the kind of, over logWindow.
func zsetLog(k string, of func(j int, ts string) string) []string {
	args := []string{"ZADD", k}
	for j := range logMembers {
		ts := strconv.FormatInt(logBase+int64(j)*logWindow/logMembers, 10)
		args = append(args, ts, of(j, ts))
	}
	return args
}

func (r *runner) zsetMemory() ([]zsetMemRow, error) {
	var rows []zsetMemRow
	for ki, kind := range zsetMemKinds {
		row := zsetMemRow{name: kind.name, member: kind.member}
		for round := range r.cfg.zsetRounds {
			dir := fmt.Sprintf("%s/zm%d-%d", r.tmp, ki, round)
			t, err := startThrottled("throttled (sliding logs)", r.cfg.bin, dir, "--appendonly", "no")
			if err != nil {
				return nil, err
			}
			redis, err := start("redis", "redis-server", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--dir", r.tmp, "--daemonize", "no", "--loglevel", "warning")
			if err != nil {
				t.stop()
				return nil, err
			}
			req := func(i int) []byte {
				return loadtest.Encode(zsetLog(fmt.Sprintf("zm:%010d", i), kind.of)...)
			}
			tb, terr := perKey(t, r.cfg.zsets, req)
			rb, rerr := perKey(redis, r.cfg.zsets, req)
			t.stop()
			redis.stop()
			if terr != nil || rerr != nil {
				return nil, fmt.Errorf("memory of %s: throttled: %v, redis: %v", kind.name, terr, rerr)
			}
			log.Printf("memory %-32s round %d: throttled %7.1f B/set, redis %7.1f B/set (%.3f)", kind.name, round+1, tb, rb, tb/rb)
			row.throttled = append(row.throttled, tb)
			row.redis = append(row.redis, rb)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// zsetMemTargets: issue 39's, a sliding log at most 0.8x Redis's resident bytes.
func zsetMemTargets(rows []zsetMemRow) []target {
	var out []target
	for _, m := range rows {
		out = append(out, target{fmt.Sprintf("memory of a %s (`%s`) at most 0.8x Redis's", m.name, m.member),
			fmt.Sprintf("%.2f (median of %d rounds)", m.median(), len(m.throttled)), m.median() <= 0.8})
	}
	return out
}

func zsetMemSection(cfg config, rows []zsetMemRow) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## Sliding logs' memory\n\n")
	p("Resident growth (VmRSS) over %d sorted sets of %d members scored by their time in ms, %d ms\n", cfg.zsets, logMembers, logWindow/logMembers)
	p("apart, on throttled (`--appendonly no`) and on redis-server (a listpack), each round a fresh pair of servers\n")
	p("(`go run ./benchmarks/cmd/loadgen -only zsetmem`).\n\n")
	b.WriteString(targetTable(zsetMemTargets(rows)))
	p("\n")
	p("| data | member | throttled bytes/set | redis bytes/set | throttled / redis | median |\n|---|---|---|---|---|--:|\n")
	for _, m := range rows {
		f := func(v []float64) string {
			s := make([]string, len(v))
			for i := range v {
				s[i] = fmt.Sprintf("%.1f", v[i])
			}
			return strings.Join(s, ", ")
		}
		rs := m.ratios()
		rt := make([]string, len(rs))
		for i := range rs {
			rt[i] = fmt.Sprintf("%.3f", rs[i])
		}
		p("| %s | `%s` | %s | %s | %s | %.3f |\n", m.name, m.member, f(m.throttled), f(m.redis), strings.Join(rt, ", "), m.median())
	}
	return b.String()
}
