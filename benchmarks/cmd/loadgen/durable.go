package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
)

// pebbleFixed is the memory persistence may hold whatever the number of keys: Pebble's two
// 32 MiB memtables (the one being filled and the one being flushed, or the arena kept for
// the next) and its 8 MiB block cache (persistence/store.go: memTableSize, cacheSize).
const pebbleFixed = 72 << 20

// durableRow is the memory one server took for cfg.durableKeys new GCRA keys.
type durableRow struct {
	label      string
	growth     float64 // resident bytes per key after the burst settled
	peak       float64 // the high-water mark's growth per key
	usedMemory int64   // INFO memory used_memory after the burst
}

// durableMemory sends cfg.durableKeys new GCRA keys, as fast as one pipelined connection
// goes, to a fresh throttled with and without persistence and a fresh redis-server with and
// without AOF, and reports the resident growth per key and the peak's.
func (r *runner) durableMemory() ([]durableRow, error) {
	n := r.cfg.durableKeys
	servers := []struct {
		label string
		start func() (*server, error)
		req   func(sc scripts, k string) []string
	}{
		{"throttled, appendonly no", func() (*server, error) {
			return startThrottled("throttled (durable memory, no)", r.cfg.bin, r.tmp+"/dno", "--appendonly", "no")
		}, clThrottle},
		{"throttled, appendfsync everysec (default)", func() (*server, error) {
			return startThrottled("throttled (durable memory, everysec)", r.cfg.bin, r.tmp+"/dsec")
		}, clThrottle},
		{"redis, no persistence, gcra.lua", func() (*server, error) { return startRedis(r.tmp) }, luaGCRA},
		{"redis, appendonly yes, appendfsync everysec, gcra.lua", func() (*server, error) {
			return startRedis(r.tmp, "--appendonly", "yes", "--appendfsync", "everysec", "--appendfilename", "durable.aof")
		}, luaGCRA},
	}
	var out []durableRow
	for _, sv := range servers {
		s, err := r.track(sv.start())
		if err != nil {
			return nil, err
		}
		var sc scripts
		if strings.HasPrefix(sv.label, "redis") {
			if sc, err = loadScripts(s); err != nil {
				return nil, err
			}
		}
		time.Sleep(500 * time.Millisecond)
		before, err := s.rss()
		if err != nil {
			return nil, err
		}
		err = s.pipe(func(i int) []byte { return loadtest.Encode(sv.req(sc, fmt.Sprintf("m:%012d", i))...) }, n)
		if err != nil {
			return nil, fmt.Errorf("durable memory %s: %w", sv.label, err)
		}
		time.Sleep(2 * time.Second) // a batch, a memtable flush, the allocator settling
		after, err := s.rss()
		if err != nil {
			return nil, err
		}
		peak, err := s.status("VmHWM")
		if err != nil {
			return nil, err
		}
		row := durableRow{label: sv.label, growth: float64(after-before) / float64(n),
			peak: float64(peak-before) / float64(n), usedMemory: s.usedMemory()}
		log.Printf("durable memory %-52s growth %6.1f B/key, peak %6.1f B/key", sv.label, row.growth, row.peak)
		out = append(out, row)
		s.stop()
	}
	return out, nil
}

func clThrottle(_ scripts, k string) []string {
	return []string{"CL.THROTTLE", k, "100", "10", "3600", "1"}
}

func luaGCRA(sc scripts, k string) []string {
	return []string{"EVALSHA", sc.gcra, "1", k, "100", "10", "3600000", "1"}
}

// usedMemory returns INFO memory's used_memory, or -1.
func (s *server) usedMemory() int64 {
	n, err := strconv.ParseInt(s.infoField("memory", "used_memory"), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// status returns a field of /proc/PID/status in bytes (VmRSS, VmHWM).
func (s *server) status(field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == field+":" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no " + field)
}

// durableBound is the bound the everysec growth and peak must keep: 1.25 times the growth
// without persistence, plus pebbleFixed spread over the keys.
func durableBound(rows []durableRow, keys int) (no, sec *durableRow, bound float64) {
	for i := range rows {
		switch rows[i].label {
		case "throttled, appendonly no":
			no = &rows[i]
		case "throttled, appendfsync everysec (default)":
			sec = &rows[i]
		}
	}
	if no == nil || sec == nil {
		return nil, nil, 0
	}
	return no, sec, 1.25*no.growth + float64(pebbleFixed)/float64(keys)
}

// durableSection renders the measurement.
func durableSection(cfg config, rows []durableRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("\n## Memory with persistence\n\n")
	p("%d new GCRA keys (`CL.THROTTLE m:<12 digits> 100 10 3600 1`, or gcra.lua on Redis) sent as fast as one\n", cfg.durableKeys)
	p("pipelined connection goes to a fresh process of each server; resident growth (VmRSS) two seconds\n")
	p("after the burst, and the growth of the high-water mark (VmHWM), per key.\n\n")
	p("| server | growth B/key | peak B/key | used_memory after |\n|---|--:|--:|--:|\n")
	for _, r := range rows {
		p("| %s | %.1f | %.1f | %s |\n", r.label, r.growth, r.peak, thousands(float64(r.usedMemory)))
	}
	if _, _, bound := durableBound(rows, cfg.durableKeys); bound > 0 {
		p("\nThe bound for everysec: 1.25 x the growth with appendonly no, plus %d MiB that Pebble holds\n", pebbleFixed>>20)
		p("whatever the keys (two 32 MiB memtables and an 8 MiB block cache), here %.1f B/key.\n", bound)
	}
	return b.String()
}

// durableTargets checks the everysec growth and peak against durableBound.
func durableTargets(rows []durableRow, keys int) []target {
	no, sec, bound := durableBound(rows, keys)
	if bound == 0 {
		return nil
	}
	what := fmt.Sprintf("at most 1.25x appendonly no's %.1f B/key plus %d MiB of Pebble over %d keys (%.1f B/key)",
		no.growth, pebbleFixed>>20, keys, bound)
	return []target{
		{"everysec: resident growth per key " + what, fmt.Sprintf("%.1f B/key", sec.growth), sec.growth <= bound},
		{"everysec: peak per key under the same bound", fmt.Sprintf("%.1f B/key", sec.peak), sec.peak <= bound},
	}
}
