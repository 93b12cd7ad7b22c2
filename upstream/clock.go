package upstream

import (
	"sync/atomic"
	"time"
)

// clock is the upstream's time: the local monotonic clock plus the offset last measured
// against the upstream's TIME. A new measurement may move the offset back by a few
// microseconds; the clock then stands still until it catches up, never going back.
type clock struct {
	start  time.Time // monotonic
	wall   int64     // Unix ns at start
	offset atomic.Int64
	last   atomic.Int64
	fixed  func() int64 // a clock given instead (tests)
}

func (c *clock) init(fixed func() int64) {
	c.start = time.Now()
	c.wall = c.start.UnixNano()
	c.fixed = fixed
}

// local is the local monotonic clock in Unix ns.
func (c *clock) local() int64 { return c.wall + int64(time.Since(c.start)) }

// set takes a new offset of the upstream's clock over the local one.
func (c *clock) set(offset int64) { c.offset.Store(offset) }

// at is the clock at local, a reading of the local clock (Unix ns) the caller took: never
// before the last time now handed out, but it does not move that time on, for a decision
// that changes nothing (no write for every core to contend on).
func (c *clock) at(local int64) int64 {
	if c.fixed != nil {
		return c.fixed()
	}
	return max(local+c.offset.Load(), c.last.Load())
}

func (c *clock) now() int64 {
	if c.fixed != nil {
		return c.fixed()
	}
	t := c.local() + c.offset.Load()
	for {
		l := c.last.Load()
		if t <= l {
			return l
		}
		if c.last.CompareAndSwap(l, t) {
			return t
		}
	}
}
