package ratelimit

import (
	"math"

	"github.com/throttledhq/throttled/gcra"
	"github.com/throttledhq/throttled/keyspace"
)

// The fallback share of each kind of limit: the units it admits at once and per period
// are cut to share (rounded down, at least 1); share 1 changes nothing.

func shareOf(n int64, share float64) int64 {
	if share >= 1 {
		return n
	}
	return max(1, int64(math.Floor(float64(n)*share)))
}

// share cuts l to the fallback share.
func (l *limit) share(share float64) {
	switch l.kind {
	case keyspace.GCRA:
		l.quota.MaxBurst = shareOf(l.quota.MaxBurst+1, share) - 1
		l.quota.Count = shareOf(l.quota.Count, share)
	case keyspace.TokenBucket:
		l.tb.Capacity, l.tb.Refill = shareOf(l.tb.Capacity, share), shareOf(l.tb.Refill, share)
	case keyspace.LeakyBucket:
		l.lb.Capacity, l.lb.Leak = shareOf(l.lb.Capacity, share), shareOf(l.lb.Leak, share)
	case keyspace.SlidingLog:
		l.sl.Limit = shareOf(l.sl.Limit, share)
	case keyspace.SlidingCounter:
		l.sc.Limit = shareOf(l.sc.Limit, share)
	case keyspace.FixedWindow:
		l.fw.Limit = shareOf(l.fw.Limit, share)
	case keyspace.Concurrency:
		l.cc.Limit = shareOf(l.cc.Limit, share)
	}
}

func shareCell(p *gcra.CellParams, share float64) {
	p.MaxBurst = shareOf(p.MaxBurst+1, share) - 1
	p.Count = shareOf(p.Count, share)
}

func shareGCRA(p *gcra.GCRAParams, share float64) {
	p.MaxBurst = shareOf(p.MaxBurst+1, share) - 1
	p.Tokens = shareOf(p.Tokens, share)
}
