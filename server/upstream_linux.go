//go:build linux

package server

// submitUpstream sends call to the upstream: a loop's client's at the end of the loop's
// round, with the calls of its other clients, so that they share a round trip.
func (c *client) submitUpstream(call *upCall) {
	if c.loop != nil {
		c.loop.calls = append(c.loop.calls, call)
		return
	}
	c.s.up.client.Submit(call)
}

// submitCalls sends the calls the loop's round parked.
func (l *loop) submitCalls() {
	if len(l.calls) > 0 {
		l.s.up.client.Submit(l.calls...)
		clear(l.calls)
		l.calls = l.calls[:0]
	}
}

// resumeUpstream hands c back once its parked calls are decided: to its event loop, or to
// the goroutine waiting in flush. It runs on the upstream's dispatcher and never blocks.
func (c *client) resumeUpstream() {
	if c.loop != nil {
		c.loop.resume(c)
		return
	}
	select {
	case c.up.wake <- struct{}{}:
	default:
	}
}

// resume queues c, whose parked calls are decided, for the loop to write its replies.
func (l *loop) resume(c *client) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping {
		return
	}
	l.ready = append(l.ready, c)
	if len(l.ready) == 1 { // else the wake written for the first is not taken yet
		l.wakeLocked()
	}
}

// resumed writes the replies of a client whose parked calls are decided, unless it has
// gone or parked more since.
func (l *loop) resumed(c *client) {
	if c.fd >= len(l.clients) || l.clients[c.fd] != c || c.up.pending.Load() != 0 || len(c.up.calls) == 0 {
		return
	}
	c.spliceUpstream()
	if c.mustSync {
		l.syncing = append(l.syncing, c)
		return
	}
	l.finish(c)
}
