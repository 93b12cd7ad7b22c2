package main

import (
	"fmt"
	"log"
	"net"
	"strings"
	"time"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
)

// The cost of big values (issue 40: "1 GB of 1 MB values at most 1.3 GB resident"): a hash
// given bigValues fields of 1 MB each, one HSET at a time, on a fresh throttled (appendonly
// no) and a fresh redis-server. Before collections changed in place, each HSET copied the
// whole hash: 701 MB written in 40 s, 3.6 GB resident.
const (
	bigValues    = 1000
	bigValueSize = 1 << 20
)

// bigRow is one server's figures.
type bigRow struct {
	name     string
	rss      int64 // resident bytes after the writes
	grew     int64 // resident growth over the writes
	duration time.Duration
}

// bigValuesRun writes the values to both servers and reads their resident memory.
func (r *runner) bigValuesRun() ([]bigRow, error) {
	t, err := r.track(startThrottled("throttled (big values)", r.cfg.bin, r.tmp+"/big", "--appendonly", "no"))
	if err != nil {
		return nil, err
	}
	redis, err := r.track(startRedis(r.tmp))
	if err != nil {
		return nil, err
	}
	var out []bigRow
	for _, s := range []struct {
		name string
		srv  *server
	}{{"throttled", t}, {"redis-server", redis}} {
		row, err := writeBigValues(s.srv)
		if err != nil {
			return nil, fmt.Errorf("big values: %s: %w", s.name, err)
		}
		row.name = s.name
		log.Printf("big values %-12s %.2f GB resident (grew %.2f GB) in %v", s.name, float64(row.rss)/1e9, float64(row.grew)/1e9, row.duration)
		s.srv.stop()
		out = append(out, row)
	}
	return out, nil
}

// writeBigValues sends the HSETs on one connection, each waiting for its reply.
func writeBigValues(s *server) (bigRow, error) {
	before, err := s.rss()
	if err != nil {
		return bigRow{}, err
	}
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		return bigRow{}, err
	}
	defer c.Close()
	rd := loadtest.NewReader(c)
	value := strings.Repeat("v", bigValueSize)
	start := time.Now()
	for i := range bigValues {
		if _, err := c.Write(loadtest.Encode("HSET", "big", fmt.Sprintf("f%04d", i), value)); err != nil {
			return bigRow{}, err
		}
		if _, err := rd.Next(); err != nil {
			return bigRow{}, err
		}
	}
	took := time.Since(start)
	time.Sleep(time.Second) // let the allocator settle, as perKey does
	after, err := s.rss()
	if err != nil {
		return bigRow{}, err
	}
	return bigRow{rss: after, grew: after - before, duration: took}, nil
}

// bigValuesSection is the report's section.
func bigValuesSection(rows []bigRow) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## Big values\n\n")
	p("%d values of 1 MiB written into one hash (`HSET big f<i> <1 MiB>`, one at a time) on a fresh\n", bigValues)
	p("server each; the target is at most 1.3 times the values' size resident.\n\n")
	p("| server | resident after | grew | vs the values | time |\n|---|---|---|---|---|\n")
	size := float64(bigValues * bigValueSize)
	for _, r := range rows {
		p("| %s | %.2f GB | %.2f GB | %.2fx | %.1f s |\n", r.name, float64(r.rss)/1e9, float64(r.grew)/1e9, float64(r.rss)/size, r.duration.Seconds())
	}
	return b.String()
}
