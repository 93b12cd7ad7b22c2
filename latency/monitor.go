package latency

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
)

// The latency monitor, as Redis's (latency.c): when an event (a command, an expiry cycle, a
// sync of the log) takes at least latency-monitor-threshold milliseconds, the server adds a
// sample of it here. Each event keeps the latest SeriesLen seconds that had a spike, one
// sample a second (the worst of that second), and its all-time worst. The caller passes the
// time in: the monitor reads no clock, so that its tests are exact.

// Events the server records, by Redis's names.
const (
	EventCommand        = "command"          // a command not flagged fast
	EventFastCommand    = "fast-command"     // a command flagged fast
	EventExpireCycle    = "expire-cycle"     // an active expiry cycle
	EventEvictionCycle  = "eviction-cycle"   // a round of maxmemory's evictions
	EventFsyncAlways    = "aof-fsync-always" // a reply waiting for the log's sync (appendfsync always)
	EventWriteAlone     = "aof-write-alone"  // a reply waiting for the redo log's write (everysec, no)
	EventEvictionDelete = "eviction-del"     // reserved: throttled frees an evicted key in O(1)
)

// SeriesLen is the samples an event keeps: Redis's LATENCY_TS_LEN.
const SeriesLen = 160

// graphCols is the width of LATENCY GRAPH's sparkline: Redis's LATENCY_GRAPH_COLS.
const graphCols = 80

// Sample is an event's worst latency in one second: Time in Unix seconds, Ms in
// milliseconds.
type Sample struct {
	Time, Ms int64
}

// series is an event's samples, a ring: idx is the next to write.
type series struct {
	idx     int
	samples [SeriesLen]Sample
	max     int64
}

// Monitor holds the events' samples. Its zero value is ready; it is safe for concurrent use.
type Monitor struct {
	mu     sync.Mutex // guards events
	events map[string]*series
}

// Add notes that event took ms milliseconds at now (Unix seconds), as latencyAddSample: a
// second sample within the same second keeps the worse of the two.
func (m *Monitor) Add(event string, ms, now int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.events[event]
	if ts == nil {
		if m.events == nil {
			m.events = make(map[string]*series)
		}
		ts = &series{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	prev := &ts.samples[(ts.idx+SeriesLen-1)%SeriesLen]
	if prev.Time == now {
		prev.Ms = max(prev.Ms, ms)
		return
	}
	ts.samples[ts.idx] = Sample{Time: now, Ms: ms}
	ts.idx = (ts.idx + 1) % SeriesLen
}

// Latest is one event's line of LATENCY LATEST.
type Latest struct {
	Event         string
	Time, Ms, Max int64 // the latest sample, and the all-time worst
}

// Latest returns each event's latest sample, by event name.
func (m *Monitor) Latest() []Latest {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Latest, 0, len(m.events))
	for name, ts := range m.events {
		last := ts.samples[(ts.idx+SeriesLen-1)%SeriesLen]
		out = append(out, Latest{Event: name, Time: last.Time, Ms: last.Ms, Max: ts.max})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Event < out[j].Event })
	return out
}

// History returns event's samples, oldest first; none for an event never seen.
func (m *Monitor) History(event string) []Sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.historyLocked(event)
}

func (m *Monitor) historyLocked(event string) []Sample {
	ts := m.events[event]
	if ts == nil {
		return nil
	}
	var out []Sample
	for j := range SeriesLen {
		if s := ts.samples[(ts.idx+j)%SeriesLen]; s.Time != 0 {
			out = append(out, s)
		}
	}
	return out
}

// Reset forgets the events named, or every event when none is, and returns how many it
// forgot.
func (m *Monitor) Reset(events ...string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(events) == 0 {
		n := len(m.events)
		m.events = nil
		return n
	}
	n := 0
	for _, e := range events {
		if _, ok := m.events[e]; ok {
			delete(m.events, e)
			n++
		}
	}
	return n
}

// Graph returns LATENCY GRAPH's text for event at now (Unix seconds): a title line, a rule
// and a sparkline of its samples, each labelled with how long ago it was; false when the
// event has no samples.
func (m *Monitor) Graph(event string, now int64) (string, bool) {
	m.mu.Lock()
	samples := m.historyLocked(event)
	var all int64
	if ts := m.events[event]; ts != nil {
		all = ts.max
	}
	m.mu.Unlock()
	if samples == nil {
		return "", false
	}
	lo, hi := samples[0].Ms, samples[0].Ms
	values := make([]float64, len(samples))
	labels := make([]string, len(samples))
	for i, s := range samples {
		lo, hi = min(lo, s.Ms), max(hi, s.Ms)
		values[i] = float64(s.Ms)
		switch ago := now - s.Time; {
		case ago < 60:
			labels[i] = fmt.Sprintf("%ds", ago)
		case ago < 3600:
			labels[i] = fmt.Sprintf("%dm", ago/60)
		case ago < 24*3600:
			labels[i] = fmt.Sprintf("%dh", ago/3600)
		default:
			labels[i] = fmt.Sprintf("%dd", ago/(24*3600))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", event, hi, lo, all)
	b.WriteString(strings.Repeat("-", graphCols) + "\n")
	sparkline(&b, values, labels, graphCols, 4)
	return b.String(), true
}

// sparkline renders values as Redis's sparklineRender with SPARKLINE_FILL does: rows rows
// of "_o#" and '|', then each value's label written downwards, columns values a block.
func sparkline(b *strings.Builder, values []float64, labels []string, columns, rows int) {
	const fill = "_o#"
	lo, hi := values[0], values[0]
	for _, v := range values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	rel := hi - lo
	if rel == 0 {
		rel = 1
	}
	steps := len(fill) * rows
	for start := 0; start < len(values); start += columns {
		if start != 0 {
			b.WriteByte('\n')
		}
		n := min(columns, len(values)-start)
		chars := make([]byte, n)
		for row := 0; ; row++ {
			more := false
			for j := range chars {
				chars[j] = ' '
			}
			for j := 0; j < n; j++ {
				i := start + j
				if row < rows {
					step := int((values[i] - lo) * float64(steps) / rel)
					step = max(0, min(step, steps-1))
					more = true
					switch idx := step - (rows-row-1)*len(fill); {
					case idx >= 0 && idx < len(fill):
						chars[j] = fill[idx]
					case idx >= len(fill):
						chars[j] = '|'
					}
					continue
				}
				if row-rows < 1 { // the margin above the labels
					more = true
					break
				}
				if at := row - rows - 1; at < len(labels[i]) {
					more = true
					chars[j] = labels[i][at]
				}
			}
			if !more {
				break
			}
			b.Write(chars)
			b.WriteByte('\n')
		}
	}
}

// Advice is what LATENCY DOCTOR's advice depends on besides the events.
type Advice struct {
	ThresholdMs        int64 // latency-monitor-threshold; 0 when off
	SlowlogSlowerThan  int64 // slowlog-log-slower-than, µs; negative when off
	FsyncAlways        bool  // appendfsync always
	Hz                 int   // how often a second active expiry runs (Redis's hz)
	AnonHugePagesBytes int64 // the process's transparent huge pages
}

// Doctor returns LATENCY DOCTOR's report at now (Unix seconds): Redis's text, event by
// event (by name), then its advice.
func (m *Monitor) Doctor(a Advice, now int64) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.events) == 0 && a.ThresholdMs == 0 {
		return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"
	}
	names := make([]string, 0, len(m.events))
	for name := range m.events {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	advices := 0
	var slowlogOn, slowlogTune, slowlogInspect, scheduler, relaxFsync, hz, largeObjects, massEviction, diskWrite, thp bool
	for i, name := range names {
		if i == 0 {
			b.WriteString("Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n")
		}
		ts := m.events[name]
		st := analyze(ts, now)
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.",
			i+1, name, st.samples, st.avg, st.mad, float64(st.period)/float64(st.samples), ts.max)
		switch name {
		case EventCommand:
			if a.SlowlogSlowerThan < 0 {
				slowlogOn = true
				advices++
			} else if a.SlowlogSlowerThan/1000 > a.ThresholdMs {
				slowlogTune = true
				advices++
			}
			slowlogInspect, largeObjects = true, true
			advices += 2
		case EventFastCommand:
			scheduler = true
			advices++
		case EventWriteAlone:
			diskWrite = true
			advices += 3
		case EventFsyncAlways:
			relaxFsync = true
			advices++
		case EventExpireCycle:
			hz, largeObjects = true, true
			advices += 2
		case EventEvictionDelete:
			largeObjects = true
			advices++
		case EventEvictionCycle:
			massEviction = true
			advices++
		}
		b.WriteByte('\n')
	}
	if a.AnonHugePagesBytes > 0 {
		thp = true
		advices++
	}
	switch {
	case len(names) == 0 && advices == 0:
		b.WriteString("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n")
		return b.String()
	case len(names) > 0 && advices == 0:
		b.WriteString("\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please use the Redis community to get some help, providing this report in your help request.\n")
		return b.String()
	}
	b.WriteString("\nI have a few advices for you:\n\n")
	if slowlogOn {
		fmt.Fprintf(&b, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %d'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n", a.ThresholdMs*1000)
	}
	if slowlogTune {
		fmt.Fprintf(&b, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %d'.\n", a.ThresholdMs*1000)
	}
	if slowlogInspect {
		b.WriteString("- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n")
	}
	if scheduler {
		b.WriteString("- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n" +
			"  1) Lower the system load.\n" +
			"  2) Use a computer / VM just for Redis if you are running other software in the same system.\n" +
			"  3) Check if you have a \"noisy neighbour\" problem.\n" +
			"  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n" +
			"  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n")
	}
	if diskWrite {
		b.WriteString("- It is strongly advised to use local disks for persistence, especially if you are using AOF. Remote disks provided by platform-as-a-service providers are known to be slow.\n")
		b.WriteString("- SSD disks are able to reduce fsync latency, and total time needed for snapshotting and AOF log rewriting (resulting in smaller memory usage). With extremely high write load SSD disks can be a good option. However Redis should perform reasonably with high load using normal disks. Use this advice as a last resort.\n")
		b.WriteString("- Mounting ext3/4 filesystems with data=writeback can provide a performance boost compared to data=ordered, however this mode of operation provides less guarantees, and sometimes it can happen that after a hard crash the AOF file will have a half-written command at the end and will require to be repaired before Redis restarts.\n")
	}
	if relaxFsync && a.FsyncAlways {
		b.WriteString("- Your fsync policy is set to 'always'. It is very hard to get good performances with such a setup, if possible try to relax the fsync policy to 'onesec'.\n")
	}
	if hz && a.Hz < 100 {
		b.WriteString("- In order to make the Redis keys expiring process more incremental, try to set the 'hz' configuration parameter to 100 using 'CONFIG SET hz 100'.\n")
	}
	if largeObjects {
		b.WriteString("- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n")
	}
	if massEviction {
		b.WriteString("- Sudden changes to the 'maxmemory' setting via 'CONFIG SET', or allocation of large objects via sets or sorted sets intersections, STORE option of SORT, Redis Cluster large keys migrations (RESTORE command), may create sudden memory pressure forcing the server to block trying to evict keys. \n")
	}
	if thp {
		b.WriteString("- I detected a non zero amount of anonymous huge pages used by your process. This creates very serious latency events in different conditions, especially when Redis is persisting on disk. To disable THP support use the command 'echo never > /sys/kernel/mm/transparent_hugepage/enabled', make sure to also add it into /etc/rc.local so that the command will be executed again after a reboot. Note that even if you have already disabled THP, you still need to restart the Redis process to get rid of the huge pages already created.\n")
	}
	return b.String()
}

// stats are an event's figures in LATENCY DOCTOR, as analyzeLatencyForEvent's.
type stats struct {
	samples  int
	avg, mad int64 // the mean and the mean absolute deviation, ms
	period   int64 // seconds since the oldest sample, at least 1
}

func analyze(ts *series, now int64) stats {
	var st stats
	var sum, oldest int64
	for _, s := range ts.samples {
		if s.Time == 0 {
			continue
		}
		st.samples++
		sum += s.Ms
		if oldest == 0 || s.Time < oldest {
			oldest = s.Time
		}
	}
	if st.samples == 0 {
		return st
	}
	st.avg = sum / int64(st.samples)
	st.period = max(now-oldest, 1)
	var dev int64
	for _, s := range ts.samples {
		if s.Time != 0 {
			d := st.avg - s.Ms
			if d < 0 {
				d = -d
			}
			dev += d
		}
	}
	st.mad = dev / int64(st.samples)
	return st
}
