package latency

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/throttledhq/throttled/command"
)

// The LATENCY command family: the latency monitor's reports (LATEST, HISTORY, RESET,
// GRAPH, DOCTOR) and the commands' histograms (HISTOGRAM). The server samples the events
// and records the histograms on its request path; the family only reads them, through
// Config.

// Config is what the LATENCY commands read of the server.
type Config struct {
	// Monitor holds the events the server samples.
	Monitor *Monitor
	// Advice returns LATENCY DOCTOR's inputs but AnonHugePagesBytes, which the family
	// reads itself.
	Advice func() Advice
	// Commands returns every command and subcommand, whose ID is the index of its
	// snapshot, in the order LATENCY HISTOGRAM without names gives them.
	Commands func() []Command
	// Named returns the command called name as LATENCY HISTOGRAM takes it ("get",
	// "config|set"), in any case, followed by its subcommands by name for a container;
	// none when there is no such command.
	Named func(name string) []Command
	// Snapshots returns every command's counts, by ID (nil for those never called), merged
	// from every recorder; c is the connection that asks.
	Snapshots func(c *command.Ctx) []*Snapshot
}

// Command is a command as LATENCY HISTOGRAM names it.
type Command struct {
	Name string // its full name: "get", "config|set"
	ID   int    // the index of its snapshot
}

// Commands are the LATENCY container and its subcommands, each one literal.
func Commands(cfg Config) []*command.Spec {
	const flags = "admin noscript loading stale"
	return []*command.Spec{
		{Name: "latency", Arity: -2, Group: "server", Since: "2.8.13", Summary: "A container for latency diagnostics commands.",
			Subcommands: []*command.Spec{
				{Name: "histogram", Arity: -2, Flags: flags, Group: "server", Since: "7.0.0", Summary: "Returns the cumulative distribution of latencies of a subset or all commands.", Syntax: "[command ...]", Handler: cfg.histogram},
				{Name: "latest", Arity: 2, Flags: flags, Group: "server", Since: "2.8.13", Summary: "Returns the latest latency samples for all events.", Handler: cfg.latest},
				{Name: "history", Arity: 3, Flags: flags, Group: "server", Since: "2.8.13", Summary: "Returns timestamp-latency samples for an event.", Syntax: "event", Handler: cfg.history},
				{Name: "reset", Arity: -2, Flags: flags, Group: "server", Since: "2.8.13", Summary: "Resets the latency data for one or more events.", Syntax: "[event ...]", Handler: cfg.reset},
				{Name: "doctor", Arity: 2, Flags: flags, Group: "server", Since: "2.8.13", Summary: "Returns a human-readable latency analysis report.", Handler: cfg.doctor},
				{Name: "graph", Arity: 3, Flags: flags, Group: "server", Since: "2.8.13", Summary: "Returns a latency graph for an event.", Syntax: "event", Handler: cfg.graph},
				{Name: "help", Arity: 2, Flags: "loading stale", Group: "server", Since: "2.8.13", Summary: "Returns helpful text about the different subcommands.", Handler: help},
			}},
	}
}

// LATENCY LATEST: each event's latest sample, its time and its all-time worst.
func (cfg Config) latest(c *command.Ctx, args [][]byte) error {
	latest := cfg.Monitor.Latest()
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
func (cfg Config) history(c *command.Ctx, args [][]byte) error {
	h := cfg.Monitor.History(string(args[2]))
	c.W.Array(len(h))
	for _, s := range h {
		c.W.Array(2)
		c.W.Int(s.Time)
		c.W.Int(s.Ms)
	}
	return nil
}

// LATENCY RESET [event ...]: forgets the events named, or all; replies how many.
func (cfg Config) reset(c *command.Ctx, args [][]byte) error {
	events := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		events = append(events, string(a))
	}
	c.W.Int(int64(cfg.Monitor.Reset(events...)))
	return nil
}

// LATENCY GRAPH event
func (cfg Config) graph(c *command.Ctx, args [][]byte) error {
	g, ok := cfg.Monitor.Graph(string(args[2]), time.Now().Unix())
	if !ok {
		return errors.New("No samples available for event '" + string(args[2]) + "'")
	}
	c.W.Verbatim(g)
	return nil
}

// LATENCY DOCTOR
func (cfg Config) doctor(c *command.Ctx, args [][]byte) error {
	a := cfg.Advice()
	a.AnonHugePagesBytes = anonHugePages()
	c.W.Verbatim(cfg.Monitor.Doctor(a, time.Now().Unix()))
	return nil
}

// anonHugePages returns the bytes of transparent huge pages the process maps, from
// /proc/self/smaps_rollup; 0 where there is none.
func anonHugePages() int64 {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	return parseAnonHugePages(b)
}

// parseAnonHugePages returns the AnonHugePages line's bytes of smaps, 0 without one.
func parseAnonHugePages(smaps []byte) int64 {
	for _, line := range bytes.Split(smaps, []byte("\n")) {
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

// LATENCY HISTOGRAM [command ...]: for each command named (a container with its
// subcommands; every one called, when none is), its calls and the cumulative counts by
// power of two of µs, as Redis 7 answers.
func (cfg Config) histogram(c *command.Ctx, args [][]byte) error {
	var cmds []Command
	if len(args) == 2 {
		cmds = cfg.Commands()
	} else {
		seen := make(map[int]bool)
		for _, a := range args[2:] {
			// A container stands for itself and its subcommands, as on Redis.
			for _, cmd := range cfg.Named(string(a)) {
				if !seen[cmd.ID] {
					seen[cmd.ID] = true
					cmds = append(cmds, cmd)
				}
			}
		}
	}
	type entry struct {
		name  string
		total uint64
		steps []Step
	}
	var found []entry
	snaps := cfg.Snapshots(c)
	for _, cmd := range cmds {
		if snap := snaps[cmd.ID]; snap != nil && snap.Total > 0 {
			found = append(found, entry{cmd.Name, snap.Total, snap.Steps()})
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

// LATENCY HELP
func help(c *command.Ctx, args [][]byte) error {
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

// ParseThreshold reads latency-monitor-threshold: a number of milliseconds, 0 or more.
func ParseThreshold(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, errors.New("argument couldn't be parsed into an integer")
	}
	if n < 0 {
		return 0, errors.New("argument must be between 0 and " + strconv.FormatInt(math.MaxInt64, 10) + " inclusive")
	}
	return n, nil
}
