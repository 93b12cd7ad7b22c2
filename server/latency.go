package server

import (
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/latency"
	"github.com/throttledhq/throttled/metrics"
)

// Latency tracking, as Redis 7's (latency-tracking yes): each command's latency in a
// histogram that each event loop keeps for itself (package latency), read by INFO
// latencystats, LATENCY HISTOGRAM and the Prometheus histogram. A loop's histograms are its
// own memory, counted without an atomic: a reader asks each loop for a copy (loop_linux.go).

// tracking is the server's latency-tracking state.
type tracking struct {
	on          atomic.Bool
	percentiles atomic.Pointer[[]float64] // latency-tracking-info-percentiles
	shared      []*latency.Shared         // the clients no event loop serves, by counter slot (sharedRecorder)
	byID        []*cmdEntry               // commands by aclID, for the replies
	wait        time.Duration             // how long a reader waits for busy event loops (latencyReadWait)
}

// latencyReadWait is how long a reader waits for busy event loops' histograms; past it, a
// loop's counts are those of its last answer.
const latencyReadWait = 100 * time.Millisecond

// initLatency prepares tracking once the commands have their ids (openACL).
func (s *Server) initLatency() {
	t := &s.latency
	t.byID = make([]*cmdEntry, 0, len(s.commands))
	for _, cmd := range s.sortedCommands() {
		for _, cc := range append([]*cmdEntry{cmd}, sortedSubcommands(cmd)...) {
			for len(t.byID) <= cc.aclID {
				t.byID = append(t.byID, nil)
			}
			t.byID[cc.aclID] = cc
		}
	}
	t.shared = make([]*latency.Shared, len(s.slots))
	for i := range t.shared {
		t.shared[i] = latency.NewShared(len(t.byID))
	}
	t.on.Store(s.cfg.LatencyTracking)
	t.wait = latencyReadWait
	p, _ := latency.ParsePercentiles(s.cfg.LatencyTrackingInfoPercentiles)
	t.percentiles.Store(&p)
}

// sharedRecorder is where the commands of c, which no event loop serves, count their
// latency: the recorder of its counter slot, where its calls count (counters.go). A
// script's client counts in its caller's slot: by its own id, 0 for them all, every
// script's commands wrote one histogram, whose lines went from core to core at each call.
func (c *client) sharedRecorder() *latency.Shared {
	return c.s.latency.shared[c.Slot]
}

// recordLatency counts a call of cmd that took d ns: in the recorder of the event loop that
// runs it, which only that loop touches, else in a shared one.
func (s *Server) recordLatency(c *client, cmd *cmdEntry, d int64) {
	if !s.latency.on.Load() {
		return
	}
	if r := c.lat; r == nil {
		c.sharedRecorder().Record(cmd.aclID, d)
	} else if !r.Count(cmd.aclID, d) {
		r.Record(cmd.aclID, d) // the command's first call on this loop
	}
}

// latencySnapshots returns every command's counts, by aclID (nil for those never called),
// merged over the shared recorders and every event loop's; c, nil for none, is the client
// that asks: its own loop, if one serves it, is read directly.
func (s *Server) latencySnapshots(c *client) []*latency.Snapshot {
	snaps := make([]*latency.Snapshot, len(s.latency.byID))
	for _, r := range s.latency.shared {
		r.AddTo(snaps)
	}
	s.loopLatencies(c, snaps, false)
	return snaps
}

// resetLatency clears every count (CONFIG RESETSTAT), c's as in latencySnapshots.
func (s *Server) resetLatency(c *client) {
	for _, r := range s.latency.shared {
		r.Reset()
	}
	s.loopLatencies(c, nil, true)
}

// latencyParams are latency-tracking and latency-tracking-info-percentiles.
func (s *Server) latencyParams() []*param {
	t := &s.latency
	def := DefaultConfig()
	return []*param{
		{name: "latency-tracking", def: yesNo(def.LatencyTracking), file: plainValue,
			get: func() string { return yesNo(t.on.Load()) },
			set: func(v string) (func(), error) {
				on, err := parseYesNo(v)
				if err != nil {
					return nil, err
				}
				return func() { t.on.Store(on) }, nil
			}},
		{name: "latency-tracking-info-percentiles", def: def.LatencyTrackingInfoPercentiles, file: quoted,
			get: func() string { return latency.FormatPercentiles(*t.percentiles.Load()) },
			set: func(v string) (func(), error) {
				p, err := latency.ParsePercentiles(v)
				if err != nil {
					return nil, err
				}
				return func() { t.percentiles.Store(&p) }, nil
			}},
	}
}

// infoLatencyStats is INFO latencystats: each command's percentiles, in µs.
func (s *Server) infoLatencyStats(c *client) [][2]string {
	t := &s.latency
	ps := *t.percentiles.Load()
	snaps := s.latencySnapshots(c)
	var out [][2]string
	for _, cmd := range t.byID {
		snap := snaps[cmd.aclID]
		if snap == nil || snap.Total == 0 {
			continue
		}
		var b []byte
		for i, p := range ps {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, 'p')
			b = strconv.AppendFloat(b, p, 'f', -1, 64)
			b = append(b, '=')
			b = strconv.AppendFloat(b, snap.Percentile(p)/1000, 'f', 3, 64)
		}
		out = append(out, [2]string{"latency_percentiles_usec_" + cmd.name, string(b)})
	}
	return out
}

// latencies are the distributions /metrics shows: each decision verb's and CHECK's, and
// "other" for the other commands together.
func (s *Server) latencies() []metrics.Latency {
	var out []metrics.Latency
	var other latency.Snapshot
	var otherSum time.Duration
	add := func(name string, snap *latency.Snapshot, sum time.Duration) {
		l := metrics.Latency{Command: name, Count: snap.Total, Sum: sum, Buckets: make([]uint64, len(metrics.LatencyBuckets)),
			P50: time.Duration(snap.Percentile(50)), P99: time.Duration(snap.Percentile(99)), P999: time.Duration(snap.Percentile(99.9))}
		for i, b := range metrics.LatencyBuckets {
			l.Buckets[i] = snap.Below(b * 1e9)
		}
		out = append(out, l)
	}
	snaps := s.latencySnapshots(nil)
	for _, cmd := range s.latency.byID {
		snap := snaps[cmd.aclID]
		switch {
		case snap == nil || snap.Total == 0:
		case cmd.has(flagRatelimit) && cmd.parent == nil:
			add(cmd.name, snap, time.Duration(s.cmdTotals(cmd).nsec))
		default:
			other.Add(snap)
			otherSum += time.Duration(s.cmdTotals(cmd).nsec)
		}
	}
	if other.Total > 0 {
		add("other", &other, otherSum)
	}
	return out
}

// latencyCommands are the LATENCY commands, reading the monitor and the histograms.
func (s *Server) latencyCommands() []*command.Spec {
	named := func(cmds ...*cmdEntry) []latency.Command {
		out := make([]latency.Command, len(cmds))
		for i, cmd := range cmds {
			out[i] = latency.Command{Name: cmd.name, ID: cmd.aclID}
		}
		return out
	}
	return latency.Commands(latency.Config{
		Monitor:  &s.latmon.events,
		Advice:   s.latencyAdvice,
		Commands: func() []latency.Command { return named(s.latency.byID...) },
		Named: func(name string) []latency.Command {
			name = strings.ToLower(name)
			parent, sub, ok := strings.Cut(name, "|")
			cmd := s.commands[parent]
			switch {
			case cmd == nil:
				return nil
			case ok:
				if cmd = cmd.subcommands[sub]; cmd == nil {
					return nil
				}
			}
			return named(append([]*cmdEntry{cmd}, sortedSubcommands(cmd)...)...)
		},
		Snapshots: func(c *command.Ctx) []*latency.Snapshot { return s.latencySnapshots(c.Conn.(*client)) },
	})
}
