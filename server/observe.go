package server

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/latency"
	"github.com/throttledhq/throttled/resp"
	"github.com/throttledhq/throttled/topk"
)

// The operator's tools: each command's time (INFO commandstats, SLOWLOG), MONITOR, the most
// denied keys (TOPDENIED) and the deny events on pub/sub (deny.go). A command is timed with
// one read of the monotonic clock at its end: its start is the end of the client's command
// before, or the start of the pipeline the client sent (client.tick).

// The start of a pipeline costs a read only when no reading is at hand: the first client an
// event loop serves after epoll_wait starts at the time the loop reads anyway, a client on a
// goroutine of its own at lastActive's.

// Defaults of the tools' options, as Redis's where Redis has them.
const (
	defaultSlowlogSlowerThan = 10000 // µs
	defaultSlowlogMaxLen     = 128
	defaultDeniedEventsRate  = 1000 // per second
	topDeniedCounters        = 4096
	topDeniedPeriod          = time.Minute
)

// observer holds the tools' state.
type observer struct {
	base time.Time // the zero of tick: a monotonic clock reading

	slowerThan atomic.Int64 // slowlog-log-slower-than, µs; negative turns SLOWLOG off
	slowMaxLen atomic.Int64 // slowlog-max-len
	slowlog    latency.Slowlog

	monitoring atomic.Int32 // len(monitors), read without the lock at each command
	monMu      sync.Mutex   // guards monitors
	monitors   []*client

	denied    *topk.Top
	deniedAll []byte // deniedChannel
	events    denyEvents
}

func (o *observer) init(cfg Config, base time.Time) {
	o.base = base
	o.slowerThan.Store(cfg.SlowlogLogSlowerThan)
	o.slowMaxLen.Store(int64(cfg.SlowlogMaxLen))
	o.denied = topk.New(topDeniedCounters, int64(topDeniedPeriod))
	o.events.perSecond.Store(int64(cfg.DeniedEventsPerSecond))
	o.deniedAll = []byte(deniedChannel)
}

// initObserver prepares the tools once the command table is built: each rate-limit verb's
// deny channel.
func (s *Server) initObserver() {
	s.obs.init(s.cfg, s.clockBase)
	for _, cmd := range s.commands {
		if cmd.has(flagRatelimit) {
			cmd.deniedChannel = []byte(deniedChannel + ":" + cmd.name)
		}
	}
}

// mono is the monotonic clock in ns since the server started: one cheap read.
func (o *observer) mono() int64 { return int64(time.Since(o.base)) }

// since is t on mono's clock: no clock is read, t's monotonic reading serves.
func (o *observer) since(t time.Time) int64 { return int64(t.Sub(o.base)) }

// startBatch notes when c's next requests start: they are timed from here.
func (c *client) startBatch() { c.Tick = c.s.obs.mono() }

// timed counts a call of cmd, which c started at start, with its time, logs it when slow
// and shows it to the monitors; its end is the start of c's next command.
func (s *Server) timed(c *client, cmd *cmdEntry, args [][]byte, start int64) {
	end := c.ended
	if end == 0 {
		end = s.obs.mono()
	} else {
		c.ended = 0
	}
	c.Tick = end
	d := end - start
	// calls and nsec are c's slot's (counters.go): no other loop writes their line.
	cc := c.counts(cmd)
	cc.calls.Add(1)
	cc.nsec.Add(d)
	s.recordLatency(c, cmd, d)
	if s.latmon.threshold.Load() > 0 {
		s.commandSpike(cmd, d)
	}
	if t := s.obs.slowerThan.Load(); t >= 0 && d >= t*1000 {
		s.logSlow(c, cmd, args, d)
	}
	if s.obs.monitoring.Load() != 0 && !cmd.has(flagSkipMonitor) {
		s.feedMonitors(c, cmd, args) // after it ran, as Redis: RESET leaves MONITOR unseen
	}
}

// monitorScript shows a script's call (EVAL, FCALL and their kin, which skip_monitor keeps
// from being shown after they ran) to the monitors before it runs, so that the commands it
// calls follow it, as Redis's evalCommand and fcallCommand feed them.
func (c *client) monitorScript(args [][]byte) {
	if c.s.obs.monitoring.Load() != 0 {
		c.s.feedMonitors(c, nil, args)
	}
}

// logSlow adds an entry to SLOWLOG, passwords redacted; EXEC is not logged, as in Redis
// (its commands are, one by one), nor the commands that detach (they wait).
func (s *Server) logSlow(c *client, cmd *cmdEntry, args [][]byte, d int64) {
	switch {
	case cmd.detach, cmd.name == "exec":
		return
	}
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	e := latency.NewSlowEntry(acl.Redact(args), time.Now().Unix(), d/1000, c.raddr, name)
	s.obs.slowlog.Add(e, int(s.obs.slowMaxLen.Load()))
}

func observeCommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "slowlog", arity: -2, flags: "admin loading stale", group: "server", since: "2.2.12", summary: "A container for slow log commands."},
		{name: "monitor", noScript: true, arity: 1, flags: "admin noscript loading stale no-multi", group: "server", since: "1.0.0", summary: "Listens for all requests received by the server in real-time.", handler: cmdMonitor, detach: true},
		{name: "topdenied", arity: -1, flags: "readonly loading stale", group: "ratelimit", since: "0.1.0", summary: "Returns the most denied keys of the last one to two minutes, most denied first, with their estimated denials.", syntax: "[count]", handler: cmdTopDenied},
	}
}

func slowlogSubcommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "get", arity: -2, flags: "admin loading stale", group: "server", since: "2.2.12", summary: "Returns the slow log's entries.", syntax: "[count]", handler: cmdSlowlogGet},
		{name: "len", arity: 2, flags: "admin loading stale", group: "server", since: "2.2.12", summary: "Returns the number of entries in the slow log.", handler: cmdSlowlogLen},
		{name: "reset", arity: 2, flags: "admin loading stale", group: "server", since: "2.2.12", summary: "Clears all entries from the slow log.", handler: cmdSlowlogReset},
		{name: "help", arity: 2, flags: "loading stale", group: "server", since: "6.2.0", summary: "Show helpful text about the different subcommands", handler: cmdSlowlogHelp},
	}
}

// SLOWLOG GET [count]
func cmdSlowlogGet(c *client, args [][]byte) error {
	count := int64(10)
	if len(args) > 3 {
		return subcommandSyntax(args[1], "SLOWLOG")
	}
	if len(args) == 3 {
		n, ok := command.ParseInt(args[2])
		if !ok || n < -1 {
			return errors.New("count should be greater than or equal to -1")
		}
		count = n
	}
	entries := c.s.obs.slowlog.Latest(int(count))
	c.W.Array(len(entries))
	for _, e := range entries {
		c.W.Array(6)
		c.W.Int(e.ID)
		c.W.Int(e.At)
		c.W.Int(e.Usec)
		c.W.StringArray(e.Args)
		c.W.BulkString(e.Peer)
		c.W.BulkString(e.Name)
	}
	return nil
}

// SLOWLOG LEN
func cmdSlowlogLen(c *client, args [][]byte) error {
	c.W.Int(int64(c.s.obs.slowlog.Len()))
	return nil
}

// SLOWLOG RESET
func cmdSlowlogReset(c *client, args [][]byte) error {
	c.s.obs.slowlog.Reset()
	c.W.OK()
	return nil
}

// SLOWLOG HELP
func cmdSlowlogHelp(c *client, args [][]byte) error {
	c.WriteHelp("SLOWLOG", []string{
		"GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN", "    Return the length of the slowlog.",
		"RESET", "    Reset the slowlog.",
	})
	return nil
}

// MONITOR: c receives every command the server runs from then on, as Redis prints them.
func cmdMonitor(c *client, args [][]byte) error {
	if c.out == nil {
		return errors.New("MONITOR is not allowed in this context")
	}
	if clientKind(c.kind.Load()) == kindMonitor {
		c.W.OK()
		return nil
	}
	c.W.OK()
	c.flush() // +OK goes before the first line fed
	c.kind.Store(int32(kindMonitor))
	o := &c.s.obs
	o.monMu.Lock()
	o.monitors = append(o.monitors, c)
	o.monitoring.Store(int32(len(o.monitors)))
	o.monMu.Unlock()
	return nil
}

// unmonitor takes c off the monitors, when it was one: it is gone, or RESET.
func (s *Server) unmonitor(c *client) {
	if clientKind(c.kind.Load()) != kindMonitor {
		return
	}
	c.kind.Store(int32(kindNormal))
	o := &s.obs
	o.monMu.Lock()
	for i, m := range o.monitors {
		if m == c {
			o.monitors = append(o.monitors[:i], o.monitors[i+1:]...)
			break
		}
	}
	o.monitoring.Store(int32(len(o.monitors)))
	o.monMu.Unlock()
}

// feedMonitors sends c's request to every monitor as Redis does:
// +1700000000.123456 [0 127.0.0.1:1234] "cmd" "arg", passwords redacted. Administrative
// commands are not shown, as in Redis.
func (s *Server) feedMonitors(c *client, cmd *cmdEntry, args [][]byte) {
	if cmd != nil && strings.Contains(cmd.flags, "admin") {
		return
	}
	args = acl.Redact(args)
	now := time.Now()
	line := make([]byte, 0, 64)
	line = append(line, '+')
	line = strconv.AppendInt(line, now.Unix(), 10)
	line = append(line, '.')
	usec := now.Nanosecond() / 1000
	line = append(line, fmt.Sprintf("%06d", usec)...)
	line = append(line, " [0 "...)
	line = append(line, c.raddr...)
	line = append(line, "] "...)
	for i, a := range args {
		if i > 0 {
			line = append(line, ' ')
		}
		line = resp.AppendRepr(line, a)
	}
	line = append(line, "\r\n"...)
	o := &s.obs
	o.monMu.Lock()
	monitors := append([]*client(nil), o.monitors...)
	o.monMu.Unlock()
	for _, m := range monitors {
		m.queueRaw(line)
	}
}

// queueRaw queues bytes already encoded on a detached client's output; when that overflows
// the client is disconnected.
func (c *client) queueRaw(b []byte) {
	o := c.out
	o.mu.Lock()
	ok := true
	if !o.dead {
		o.w.B = append(o.w.B, b...)
		ok = o.queuedLocked(len(b))
	}
	o.mu.Unlock()
	if !ok {
		c.hangup()
	}
}

// TOPDENIED [count]: the most denied keys of the recent window, most first, each with its
// estimated denials; flat under RESP2, a map under RESP3.
func cmdTopDenied(c *client, args [][]byte) error {
	n := int64(10)
	if len(args) > 2 {
		return command.ErrSyntax
	}
	if len(args) == 2 {
		v, ok := command.ParseInt(args[1])
		if !ok || v < 1 {
			return errors.New("count must be a positive integer")
		}
		n = min(v, int64(c.s.obs.denied.Capacity()))
	}
	top := c.s.topDenied(int(n), readableKeys(c.user.Load()))
	if c.W.Proto == 3 {
		c.W.Map(len(top))
	} else {
		c.W.Array(2 * len(top))
	}
	for _, e := range top {
		c.W.BulkString(e.Key)
		c.W.Int(e.Count)
	}
	return nil
}

// topDenied returns the n most denied keys that see allows (nil: every key), most first.
func (s *Server) topDenied(n int, see func(key string) bool) []topk.Entry {
	if see == nil {
		top, _ := s.obs.denied.Top(n, s.nowNano())
		return top
	}
	top, _ := s.obs.denied.Top(s.obs.denied.Capacity(), s.nowNano())
	top = slices.DeleteFunc(top, func(e topk.Entry) bool { return !see(e.Key) })
	return top[:min(len(top), n)]
}

// readableKeys is what u may see of the keys the server lists (TOPDENIED, the status page;
// the deny events judge theirs in seesEvent): those its patterns let it read, the others
// being other tenants'; nil when it may see every key.
func readableKeys(u *acl.User) func(key string) bool {
	p := u.Perms()
	if p.All {
		return nil
	}
	return func(key string) bool { return p.CanKey([]byte(key), acl.Read) }
}

// infoCommandStats is INFO commandstats, as Redis's: each command that ran or was refused.
func (s *Server) infoCommandStats() [][2]string {
	var out [][2]string
	for _, cmd := range s.sortedCommands() {
		for _, cc := range append([]*cmdEntry{cmd}, sortedSubcommands(cmd)...) {
			t := s.cmdTotals(cc)
			calls, rejected, failed := t.calls, t.rejected, t.failed
			if calls == 0 && rejected == 0 && failed == 0 {
				continue
			}
			usec := t.nsec / 1000
			perCall := 0.0
			if calls > 0 {
				perCall = float64(usec) / float64(calls)
			}
			out = append(out, [2]string{"cmdstat_" + cc.name, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
				calls, usec, perCall, rejected, failed)})
		}
	}
	return out
}

// resetObserved clears what CONFIG RESETSTAT clears of the tools (the commands' counters
// are resetCounters', their latencies resetLatency's).
func (s *Server) resetObserved() {
	s.obs.events.published.Store(0)
	s.obs.events.dropped.Store(0)
}

// observeParams are the tools' configuration parameters.
func (s *Server) observeParams() []*param {
	def := DefaultConfig()
	o := &s.obs
	integer := func(name string, n *atomic.Int64, lo, hi int64) func(string) (func(), error) {
		return func(v string) (func(), error) {
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, errors.New("argument couldn't be parsed into an integer")
			}
			if x < lo || x > hi {
				return nil, fmt.Errorf("argument must be between %d and %d inclusive", lo, hi)
			}
			return func() {
				n.Store(x)
				if name == "slowlog-max-len" {
					o.slowlog.Trim(int(x))
				}
			}, nil
		}
	}
	num := func(n *atomic.Int64) func() string { return func() string { return itoa(n.Load()) } }
	return []*param{
		{name: "slowlog-log-slower-than", get: num(&o.slowerThan), def: itoa(def.SlowlogLogSlowerThan), file: plainValue,
			set: integer("slowlog-log-slower-than", &o.slowerThan, -1, math.MaxInt64/1000)},
		{name: "slowlog-max-len", get: num(&o.slowMaxLen), def: strconv.Itoa(def.SlowlogMaxLen), file: plainValue,
			set: integer("slowlog-max-len", &o.slowMaxLen, 0, math.MaxInt32)},
		{name: "denied-events-per-second", get: num(&o.events.perSecond), def: strconv.Itoa(def.DeniedEventsPerSecond), file: plainValue,
			set: integer("denied-events-per-second", &o.events.perSecond, 0, math.MaxInt32)},
		{name: "metrics-port", get: func() string { return strconv.Itoa(s.cfg.MetricsPort) }, def: "0", file: plainValue},
	}
}
