package server

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/latency"
	"github.com/throttledhq/throttled/persistence"
)

// The latency monitor, as Redis's: with latency-monitor-threshold at N > 0 ms, what takes
// N ms or more is sampled (package latency's Monitor) under Redis's event names where
// throttled has the same thing:
//
//   - command, fast-command: a command's run (timed), fast-command for those flagged fast;
//   - expire-cycle: a cycle of active expiry (expireFor);
//   - eviction-cycle: a round of maxmemory's evictions (enforceMemory);
//   - aof-fsync-always: replies waiting for the log's fsync with appendfsync always,
//     aof-write-alone: waiting for the redo log's write otherwise (waitStore), as Redis's
//     AOF write before its replies.
//
// Threshold 0, the default, costs each command one atomic load.

// monitor is the latency monitor's state.
type monitor struct {
	threshold atomic.Int64 // latency-monitor-threshold, ms; 0: off
	events    latency.Monitor
}

// latencySpike samples event, which took d ns, when the monitor is on and d is at least
// its threshold.
func (s *Server) latencySpike(event string, d time.Duration) {
	if t := s.latmon.threshold.Load(); t > 0 && d >= time.Duration(t)*time.Millisecond {
		s.latmon.events.Add(event, int64(d/time.Millisecond), time.Now().Unix())
	}
}

// commandSpike samples a call of cmd that took d ns; called only when the monitor is on.
func (s *Server) commandSpike(cmd *cmdEntry, d int64) {
	event := latency.EventCommand
	if cmd.has(flagFast) {
		event = latency.EventFastCommand
	}
	s.latencySpike(event, time.Duration(d))
}

// waitStore waits until the changes made so far are durable as appendfsync says
// (persistence.Store.Wait), timed for the latency monitor when it is on.
func (s *Server) waitStore() {
	if s.latmon.threshold.Load() == 0 {
		s.store.Wait()
		return
	}
	start := time.Now()
	s.store.Wait()
	event := latency.EventWriteAlone
	if s.store.Fsync() == persistence.Always {
		event = latency.EventFsyncAlways
	}
	s.latencySpike(event, time.Since(start))
}

// latencyMonitorParams is latency-monitor-threshold.
func (s *Server) latencyMonitorParams() []*param {
	m := &s.latmon
	return []*param{
		{name: "latency-monitor-threshold", def: "0", file: plainValue,
			get: func() string { return strconv.FormatInt(m.threshold.Load(), 10) },
			set: func(v string) (func(), error) {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, errors.New("argument couldn't be parsed into an integer")
				}
				if n < 0 {
					return nil, errors.New("argument must be between 0 and " + strconv.FormatInt(math.MaxInt64, 10) + " inclusive")
				}
				return func() { m.threshold.Store(n) }, nil
			}},
	}
}

// LATENCY LATEST: each event's latest sample, its time and its all-time worst.
func cmdLatencyLatest(c *client, args [][]byte) error {
	latest := c.s.latmon.events.Latest()
	c.W.Array(len(latest))
	for _, l := range latest {
		c.W.Array(4)
		c.W.BulkString(l.Event)
		c.W.Int(l.Time)
		c.W.Int(l.Ms)
		c.W.Int(l.Max)
	}
	return nil
}

// LATENCY HISTORY event: its samples, oldest first; none for an event never seen.
func cmdLatencyHistory(c *client, args [][]byte) error {
	h := c.s.latmon.events.History(string(args[2]))
	c.W.Array(len(h))
	for _, s := range h {
		c.W.Array(2)
		c.W.Int(s.Time)
		c.W.Int(s.Ms)
	}
	return nil
}

// LATENCY RESET [event ...]: forgets the events named, or all; replies how many.
func cmdLatencyReset(c *client, args [][]byte) error {
	events := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		events = append(events, string(a))
	}
	c.W.Int(int64(c.s.latmon.events.Reset(events...)))
	return nil
}

// LATENCY GRAPH event
func cmdLatencyGraph(c *client, args [][]byte) error {
	g, ok := c.s.latmon.events.Graph(string(args[2]), time.Now().Unix())
	if !ok {
		return errors.New("No samples available for event '" + string(args[2]) + "'")
	}
	c.W.Verbatim(g)
	return nil
}

// LATENCY DOCTOR
func cmdLatencyDoctor(c *client, args [][]byte) error {
	s := c.s
	a := latency.Advice{
		ThresholdMs:        s.latmon.threshold.Load(),
		SlowlogSlowerThan:  s.obs.slowerThan.Load(),
		FsyncAlways:        s.store != nil && s.store.Fsync() == persistence.Always,
		Hz:                 int(time.Second / expirePeriod),
		AnonHugePagesBytes: anonHugePages(),
	}
	c.W.Verbatim(s.latmon.events.Doctor(a, time.Now().Unix()))
	return nil
}

// anonHugePages returns the bytes of transparent huge pages the process maps, from
// /proc/self/smaps_rollup; 0 where there is none.
func anonHugePages() int64 {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("AnonHugePages:")); ok {
			f := bytes.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}
