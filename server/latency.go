package server

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

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
	shared      [16]*latency.Shared       // the clients no event loop serves, by id: few share one
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
	for i := range t.shared {
		t.shared[i] = latency.NewShared(len(t.byID))
	}
	t.on.Store(s.cfg.LatencyTracking)
	t.wait = latencyReadWait
	p, _ := latency.ParsePercentiles(s.cfg.LatencyTrackingInfoPercentiles)
	t.percentiles.Store(&p)
}

// sharedRecorder is where the commands of c, which no event loop serves, count their
// latency.
func (c *client) sharedRecorder() *latency.Shared {
	return c.s.latency.shared[uint64(c.id)%uint64(len(c.s.latency.shared))]
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
				switch strings.ToLower(v) {
				case "yes":
					return func() { t.on.Store(true) }, nil
				case "no":
					return func() { t.on.Store(false) }, nil
				}
				return nil, errors.New("argument must be 'yes' or 'no'")
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

// LATENCY HISTOGRAM [command ...]: for each command named (a container with its
// subcommands; every one called, when none is), its calls and the cumulative counts by
// power of two of µs, as Redis 7 answers.
func cmdLatencyHistogram(c *client, args [][]byte) error {
	t := &c.s.latency
	var cmds []*cmdEntry
	if len(args) == 2 {
		cmds = t.byID
	} else {
		seen := make(map[*cmdEntry]bool)
		for _, a := range args[2:] {
			cmd := c.s.commandNamed(string(a))
			if cmd == nil {
				continue
			}
			// A container stands for itself and its subcommands, as on Redis.
			for _, cc := range append([]*cmdEntry{cmd}, sortedSubcommands(cmd)...) {
				if !seen[cc] {
					seen[cc] = true
					cmds = append(cmds, cc)
				}
			}
		}
	}
	type entry struct {
		name  string
		total uint64
		steps []latency.Step
	}
	var found []entry
	snaps := c.s.latencySnapshots(c)
	for _, cmd := range cmds {
		if snap := snaps[cmd.aclID]; snap != nil && snap.Total > 0 {
			found = append(found, entry{cmd.name, snap.Total, snap.Steps()})
		}
	}
	c.W.Map(len(found))
	for _, e := range found {
		c.W.BulkString(e.name)
		c.W.Map(2)
		c.W.BulkString("calls")
		c.W.Int(int64(e.total))
		c.W.BulkString("histogram_usec")
		c.W.Map(len(e.steps))
		for _, st := range e.steps {
			c.W.Int(st.Usec)
			c.W.Int(int64(st.Cumulative))
		}
	}
	return nil
}

// commandNamed finds a command by its name as LATENCY HISTOGRAM takes it: "get",
// "config|set".
func (s *Server) commandNamed(name string) *cmdEntry {
	name = strings.ToLower(name)
	parent, sub, ok := strings.Cut(name, "|")
	cmd := s.commands[parent]
	if cmd == nil || !ok {
		return cmd
	}
	return cmd.subcommands[sub]
}

// LATENCY HELP
func cmdLatencyHelp(c *client, args [][]byte) error {
	c.WriteHelp("LATENCY", []string{
		"DOCTOR", "    Return a human readable latency analysis report.",
		"GRAPH <event>", "    Return an ASCII latency graph for the <event> class.",
		"HISTORY <event>", "    Return time-latency samples for the <event> class.",
		"LATEST", "    Return the latest latency samples for all events.",
		"RESET [<event> ...]", "    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
		"HISTOGRAM [COMMAND ...]", "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
		"    If no commands are specified then all histograms are replied.",
	})
	return nil
}

func latencySubcommands() []*cmdEntry {
	const flags = "admin noscript loading stale"
	return []*cmdEntry{
		{name: "histogram", arity: -2, flags: flags, group: "server", since: "7.0.0", summary: "Returns the cumulative distribution of latencies of a subset or all commands.", syntax: "[command ...]", handler: cmdLatencyHistogram},
		{name: "latest", arity: 2, flags: flags, group: "server", since: "2.8.13", summary: "Returns the latest latency samples for all events.", handler: cmdLatencyLatest},
		{name: "history", arity: 3, flags: flags, group: "server", since: "2.8.13", summary: "Returns timestamp-latency samples for an event.", syntax: "event", handler: cmdLatencyHistory},
		{name: "reset", arity: -2, flags: flags, group: "server", since: "2.8.13", summary: "Resets the latency data for one or more events.", syntax: "[event ...]", handler: cmdLatencyReset},
		{name: "doctor", arity: 2, flags: flags, group: "server", since: "2.8.13", summary: "Returns a human-readable latency analysis report.", handler: cmdLatencyDoctor},
		{name: "graph", arity: 3, flags: flags, group: "server", since: "2.8.13", summary: "Returns a latency graph for an event.", syntax: "event", handler: cmdLatencyGraph},
		{name: "help", arity: 2, flags: "loading stale", group: "server", since: "2.8.13", summary: "Returns helpful text about the different subcommands.", handler: cmdLatencyHelp},
	}
}
