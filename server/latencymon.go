package server

import (
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
				n, err := latency.ParseThreshold(v)
				if err != nil {
					return nil, err
				}
				return func() { m.threshold.Store(n) }, nil
			}},
	}
}

// latencyAdvice is what LATENCY DOCTOR's advice reads of the server.
func (s *Server) latencyAdvice() latency.Advice {
	return latency.Advice{
		ThresholdMs:       s.latmon.threshold.Load(),
		SlowlogSlowerThan: s.obs.slowerThan.Load(),
		FsyncAlways:       s.store != nil && s.store.Fsync() == persistence.Always,
		Hz:                int(time.Second / expirePeriod),
	}
}
