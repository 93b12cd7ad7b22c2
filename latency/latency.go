// Package latency keeps the distribution of each command's latency, as Redis 7's latency
// tracking does, without costing the request path a shared write: each event loop records
// into a Recorder of its own (one histogram per command, made at its first call) with plain
// increments, as only the loop touches it; a reader asks each loop to add its counts to a
// Snapshot (INFO latencystats, LATENCY HISTOGRAM, the Prometheus histogram) and merges them.
// The clients no loop serves record into a few Shared recorders, whose counts are atomic.
//
// A histogram is log-linear, as HdrHistogram's: durations below 128 ns each have a bucket
// of their own; above, each power of two is cut into 64 buckets, so a bucket is at most
// 1/64 of its lower bound wide, and its middle, which a percentile reports, is within 0.8%
// of any duration in it. 1,856 buckets cover 0 to 2^34 ns (17 s); longer durations count
// in the last.
//
// Besides: Monitor, Redis's latency monitor (the events that took longer than a threshold,
// for LATENCY LATEST, HISTORY, GRAPH and DOCTOR), and Slowlog.
//
// The package is also the LATENCY command family (Commands): the server samples the
// monitor's events and records the histograms on its request path; the family's handlers
// only read them, through what its Config declares, and never import the server.
package latency

import (
	"math"
	"math/bits"
	"sync/atomic"
)

const (
	subBits  = 6
	sub      = 1 << subBits // buckets per power of two
	linear   = 2 * sub      // the durations under this, in ns, have a bucket each
	maxShift = 34 - subBits - 1
	// Buckets is the number of buckets of a histogram.
	Buckets = linear + maxShift*sub
)

// index returns the bucket of a duration of ns nanoseconds, in a few instructions and no
// branch: a duration of shift+7 bits is cut to its top 7 (64 to 127) and lands at shift*64
// plus those; under 128 ns, shift is 0 and the bucket is the duration itself. A negative
// duration counts as 0, one from 2^34 ns in the last bucket.
func index(ns int64) int {
	u := uint64(ns) &^ uint64(ns>>63)
	shift := uint(bits.Len64(u|(linear-1))) - subBits - 1
	return int(min(shift<<subBits+uint(u>>shift), Buckets-1))
}

// bounds returns the durations bucket i holds: from lo to below hi.
func bounds(i int) (lo, hi int64) {
	if i < linear {
		return int64(i), int64(i) + 1
	}
	shift := (i-linear)/sub + 1
	m := int64((i-linear)%sub + sub)
	return m << shift, (m + 1) << shift
}

// Mid returns the middle of bucket i, what a percentile that falls in it reports.
func Mid(i int) float64 {
	lo, hi := bounds(i)
	if i < linear {
		return float64(lo)
	}
	return float64(lo+hi-1) / 2
}

// Recorder is one event loop's histograms, by command id. Only one goroutine at a time may
// use it (the loop's): its counts are plain memory, which no other core writes or reads.
type Recorder struct {
	hists []*[Buckets]uint64
}

// NewRecorder returns a recorder for command ids below n.
func NewRecorder(n int) *Recorder {
	return &Recorder{hists: make([]*[Buckets]uint64, n)}
}

// Record counts one call of command cmd that took ns nanoseconds; the first call of a
// command makes its histogram.
func (r *Recorder) Record(cmd int, ns int64) {
	if !r.Count(cmd, ns) {
		r.hists[cmd] = new([Buckets]uint64)
		r.Count(cmd, ns)
	}
}

// Count is Record without the first call of a command: it reports false then, having
// counted nothing. Without a call of its own, it is inlined on the request path.
func (r *Recorder) Count(cmd int, ns int64) bool {
	if uint(cmd) >= uint(len(r.hists)) {
		return true // no such command: not counted
	}
	h := r.hists[cmd]
	if h == nil {
		return false
	}
	h[index(ns)]++
	return true
}

// AddTo adds the recorder's counts to snaps, by command id, making the snapshots missing.
func (r *Recorder) AddTo(snaps []*Snapshot) {
	for cmd, h := range r.hists[:min(len(r.hists), len(snaps))] {
		if h != nil {
			snap := snapshotOf(snaps, cmd)
			for i, n := range h {
				snap.Counts[i] += n
				snap.Total += n
			}
		}
	}
}

// Reset clears every count (CONFIG RESETSTAT).
func (r *Recorder) Reset() {
	for _, h := range r.hists {
		if h != nil {
			clear(h[:])
		}
	}
}

// Shared is a recorder that any goroutine may record into and read at any time: its
// counts are atomic. It serves the clients no event loop serves.
type Shared struct {
	hists []atomic.Pointer[[Buckets]atomic.Uint64]
}

// NewShared returns a shared recorder for command ids below n.
func NewShared(n int) *Shared {
	return &Shared{hists: make([]atomic.Pointer[[Buckets]atomic.Uint64], n)}
}

// Record counts one call of command cmd that took ns nanoseconds.
func (r *Shared) Record(cmd int, ns int64) {
	if uint(cmd) >= uint(len(r.hists)) {
		return
	}
	h := r.hists[cmd].Load()
	if h == nil {
		h = new([Buckets]atomic.Uint64)
		if !r.hists[cmd].CompareAndSwap(nil, h) {
			h = r.hists[cmd].Load()
		}
	}
	h[index(ns)].Add(1)
}

// AddTo adds the recorder's counts to snaps, by command id, making the snapshots missing.
func (r *Shared) AddTo(snaps []*Snapshot) {
	for cmd := range r.hists[:min(len(r.hists), len(snaps))] {
		if h := r.hists[cmd].Load(); h != nil {
			snap := snapshotOf(snaps, cmd)
			for i := range h {
				n := h[i].Load()
				snap.Counts[i] += n
				snap.Total += n
			}
		}
	}
}

// Reset clears every count (CONFIG RESETSTAT).
func (r *Shared) Reset() {
	for i := range r.hists {
		if h := r.hists[i].Load(); h != nil {
			for j := range h {
				h[j].Store(0)
			}
		}
	}
}

// Snapshot is a command's counts merged from recorders.
type Snapshot struct {
	Counts [Buckets]uint64
	Total  uint64
}

// snapshotOf returns snaps[cmd], made if missing.
func snapshotOf(snaps []*Snapshot, cmd int) *Snapshot {
	if snaps[cmd] == nil {
		snaps[cmd] = new(Snapshot)
	}
	return snaps[cmd]
}

// Merge adds each snapshot of from to into's of the same command, making those missing.
func Merge(into, from []*Snapshot) {
	for cmd, snap := range from[:min(len(from), len(into))] {
		if snap != nil {
			snapshotOf(into, cmd).Add(snap)
		}
	}
}

// Add adds o's counts to s.
func (s *Snapshot) Add(o *Snapshot) {
	for i, n := range o.Counts {
		s.Counts[i] += n
	}
	s.Total += o.Total
}

// Percentile returns the duration, in ns, under which p percent of the calls fell (the
// middle of its bucket): the smallest bucket whose calls and those below reach p% of all.
func (s *Snapshot) Percentile(p float64) float64 {
	if s.Total == 0 {
		return 0
	}
	want := uint64(math.Ceil(p / 100 * float64(s.Total)))
	want = min(max(want, 1), s.Total)
	var seen uint64
	for i, n := range s.Counts {
		if seen += n; seen >= want {
			return Mid(i)
		}
	}
	return Mid(Buckets - 1)
}

// Below returns the calls that took at most ns nanoseconds, counting a bucket when its
// middle is not above ns (a Prometheus bucket's cumulative count).
func (s *Snapshot) Below(ns float64) uint64 {
	var seen uint64
	for i, n := range s.Counts {
		if Mid(i) > ns {
			break
		}
		seen += n
	}
	return seen
}

// Step is one line of Redis's LATENCY HISTOGRAM: the calls that took at most Usec
// microseconds, counting every one below.
type Step struct {
	Usec       int64
	Cumulative uint64
}

// Steps returns the histogram as Redis 7's LATENCY HISTOGRAM gives it: steps that double
// from 1,024 ns, each named by the microseconds of its highest duration at Redis's
// precision (1, 2, 4, 8, 16, 33, 66, 132, ...), each given only when calls fell in it,
// until all are counted.
func (s *Snapshot) Steps() []Step {
	var out []Step
	var seen, prev uint64
	i := 0
	for step := 0; seen < s.Total && step < 40; step++ {
		upper := int64(1024)<<step + int64(8)<<step - 1 // HdrHistogram's highest equivalent value at 2 significant digits
		for ; i < Buckets && (Mid(i) <= float64(upper) || step == 39); i++ {
			seen += s.Counts[i]
		}
		if seen > prev {
			out = append(out, Step{Usec: upper / 1000, Cumulative: seen})
			prev = seen
		}
	}
	return out
}
