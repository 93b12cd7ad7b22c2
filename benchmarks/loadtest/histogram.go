package loadtest

import (
	"math/bits"
	"time"
)

// A Histogram counts durations in nanoseconds in log-linear buckets: values below 2^subBits
// have a bucket each, and every power of two above is split into 2^subBits equal buckets, so a
// bucket is never wider than 1/64 (1.6%) of the values in it. 64 powers of two cover any
// int64 in 4096 buckets.
type Histogram struct {
	counts [64 << subBits]uint64
	n      uint64
}

// subBits is log2 of the buckets per power of two.
const subBits = 6

// bucket returns the index of the bucket that holds v.
func bucket(v uint64) int {
	if v < 1<<subBits {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1 // v>>shift is in [2^subBits, 2^(subBits+1))
	return (shift+1)<<subBits + int(v>>shift) - 1<<subBits
}

// lowest returns the smallest value that falls in bucket i; bucket i holds [lowest(i), lowest(i+1)).
func lowest(i int) uint64 {
	if i < 1<<subBits {
		return uint64(i)
	}
	shift := i>>subBits - 1
	return uint64(i&(1<<subBits-1)+1<<subBits) << shift
}

// Record counts one duration; negative ones count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucket(uint64(d))]++
	h.n++
}

// Merge adds the counts of o to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// Count returns how many durations were recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile returns the duration below which a fraction q of the recorded ones fall, as the
// middle of its bucket; 0 when nothing was recorded.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := lowest(i), lowest(i+1)
			return time.Duration(lo + (hi-lo)/2)
		}
	}
	return 0 // not reached: the counts sum to n
}
