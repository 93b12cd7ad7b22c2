//go:build linux

package server

import (
	"time"

	"github.com/throttledhq/throttled/latency"
)

// An event loop's latencies are its own memory: only the goroutine running the loop counts
// into them, reads them and clears them, so a call is counted with a plain increment and no
// cache line moves between cores. A reader (INFO latencystats, LATENCY HISTOGRAM, /metrics,
// CONFIG RESETSTAT) queues a request on each loop and wakes it, as attach does with a new
// client; the loop answers in its next round (admit). A call is counted before its reply
// is written, so every call whose reply was written before the request is in the answer,
// and a reset is done before CONFIG RESETSTAT replies.

// latRead is a reader's request to an event loop: add its counts to snaps, or clear them.
type latRead struct {
	reset bool
	snaps []*latency.Snapshot // by command id, this loop's alone
	done  chan struct{}       // closed once answered
	ended bool                // the loop was stopping: done is the loop's, closed once it ended
}

// loopLatencies adds every event loop's counts to snaps, or (reset) clears them. The loop
// running c's command (c nil for none), if any, is this goroutine: it reads its own
// recorder. Each other
// loop gets a request; the reader waits at most latencyReadWait in all, then takes the last
// answer of a loop still busy (none since a reset: its counts are left out), so that a loop
// held in a long command delays no reader long and a scraper's counts never go down. A
// reset not yet answered stays queued: the loop clears its counts before it answers a later
// read. While it waits, a reader on a loop answers its own loop's requests: two readers on
// two loops do not wait on each other.
func (s *Server) loopLatencies(c *client, snaps []*latency.Snapshot, reset bool) {
	s.mu.Lock()
	loops := s.loops
	s.mu.Unlock()
	var own *loop // the loop whose goroutine this is: the one whose recorder c counts in
	var ownWake chan struct{}
	for _, l := range loops {
		if c != nil && c.lat == l.lat {
			own, ownWake = l, l.readWake
		}
	}
	reqs := make([]*latRead, len(loops))
	for i, l := range loops {
		if l == own {
			own.answerReads()
			own.apply(snaps, reset)
			continue
		}
		r := &latRead{reset: reset, done: make(chan struct{})}
		if !reset {
			r.snaps = make([]*latency.Snapshot, len(snaps))
		}
		if !l.request(r) {
			r.done, r.ended = l.done, true
		}
		reqs[i] = r
	}
	deadline := time.NewTimer(s.latency.wait)
	defer deadline.Stop()
	expired := false
	for i, r := range reqs {
		if r == nil {
			continue
		}
		answered := false
		for !answered && !expired {
			select {
			case <-r.done:
				answered = true
			case <-ownWake:
				own.answerReads()
			case <-deadline.C:
				expired = true
			}
		}
		l := loops[i]
		switch {
		case answered && r.ended: // its recorder is no goroutine's now
			l.ended.Lock()
			l.apply(snaps, reset)
			l.ended.Unlock()
		case reset:
		case answered:
			latency.Merge(snaps, r.snaps)
		default:
			l.mu.Lock()
			last := l.latLast
			l.mu.Unlock()
			latency.Merge(snaps, last)
		}
	}
}

// apply adds the loop's counts to snaps, or clears them (and its last answer); for its
// goroutine alone, or once it has ended.
func (l *loop) apply(snaps []*latency.Snapshot, reset bool) {
	if !reset {
		l.lat.AddTo(snaps)
		return
	}
	l.lat.Reset()
	l.mu.Lock()
	l.latLast = nil
	l.mu.Unlock()
}

// request queues r for the loop and wakes it; false when the loop is stopping.
func (l *loop) request(r *latRead) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping {
		return false
	}
	if r.reset {
		l.latLast = nil
	}
	l.reads = append(l.reads, r)
	l.wakeLocked()
	select {
	case l.readWake <- struct{}{}:
	default:
	}
	return true
}

// answerReads answers the readers' requests queued, in order; on the loop's goroutine.
func (l *loop) answerReads() {
	l.mu.Lock()
	reads := l.reads
	l.reads = nil
	l.mu.Unlock()
	for _, r := range reads {
		l.apply(r.snaps, r.reset)
		if !r.reset {
			l.mu.Lock()
			l.latLast = r.snaps
			l.mu.Unlock()
		}
		close(r.done)
	}
}
