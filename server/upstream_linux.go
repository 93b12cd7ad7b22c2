//go:build linux

package server

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
