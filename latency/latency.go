// Package latency keeps the distribution of each command's latency, as Redis 7's
// latency tracking does, without costing the request path a shared write: each event loop
// records into a Recorder of its own (one histogram per command, made at its first call),
// and a reader merges the recorders when it asks (INFO latencystats, LATENCY HISTOGRAM,
// the Prometheus histogram).
//
// A histogram is log-linear, as HdrHistogram's: durations below 128 ns each have a bucket
// of their own; above, each power of two is cut into 64 buckets, so a bucket is at most
// 1/64 of its lower bound wide, and its middle, which a percentile reports, is within 0.8%
// of any duration in it. 1,856 buckets cover 0 to 2^34 ns (17 s); longer durations count
// in the last. A count is an atomic add on the recorder's own memory: no other loop writes
// it, so no cache line moves between cores on the path.
package latency

import (
	"math"
	"math/bits"
	"sync"
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

// index returns the bucket of a duration of ns nanoseconds.
func index(ns int64) int {
	if ns < linear {
		return int(max(ns, 0))
	}
	shift := bits.Len64(uint64(ns)) - subBits - 1 // ns>>shift is in [sub, 2*sub)
	if shift > maxShift {
		return Buckets - 1
	}
	return linear + (shift-1)*sub + int(ns>>shift) - sub
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

// histogram is one command's counts in one recorder.
type histogram [Buckets]atomic.Uint64

// Recorder is one event loop's histograms, by command id. Record is for the loop alone
// (or, for a shared recorder, for anyone: the counts are atomic); the others read.
type Recorder struct {
	hists []atomic.Pointer[histogram]
}

// NewRecorder returns a recorder for command ids below n.
func NewRecorder(n int) *Recorder {
	return &Recorder{hists: make([]atomic.Pointer[histogram], n)}
}

// Record counts one call of command cmd that took ns nanoseconds.
func (r *Recorder) Record(cmd int, ns int64) {
	if cmd < 0 || cmd >= len(r.hists) {
		return
	}
	h := r.hists[cmd].Load()
	if h == nil {
		h = new(histogram)
		if !r.hists[cmd].CompareAndSwap(nil, h) {
			h = r.hists[cmd].Load()
		}
	}
	h[index(ns)].Add(1)
}

// Set is every recorder of a server.
type Set struct {
	mu   sync.Mutex
	recs []*Recorder
}

// Add makes r one of the set's.
func (s *Set) Add(r *Recorder) {
	s.mu.Lock()
	s.recs = append(s.recs, r)
	s.mu.Unlock()
}

// Snapshot is a command's counts merged from every recorder.
type Snapshot struct {
	Counts [Buckets]uint64
	Total  uint64
}

// Merge returns command cmd's counts over every recorder, false when it has none.
func (s *Set) Merge(cmd int) (*Snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var snap *Snapshot
	for _, r := range s.recs {
		if cmd >= len(r.hists) {
			continue
		}
		h := r.hists[cmd].Load()
		if h == nil {
			continue
		}
		if snap == nil {
			snap = new(Snapshot)
		}
		for i := range h {
			n := h[i].Load()
			snap.Counts[i] += n
			snap.Total += n
		}
	}
	return snap, snap != nil && snap.Total > 0
}

// Reset clears every count (CONFIG RESETSTAT).
func (s *Set) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		for i := range r.hists {
			if h := r.hists[i].Load(); h != nil {
				for j := range h {
					h[j].Store(0)
				}
			}
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
