//go:build !linux

package server

// resumeUpstream wakes the goroutine waiting in flush for c's parked calls.
func (c *client) resumeUpstream() {
	select {
	case c.up.wake <- struct{}{}:
	default:
	}
}

// submitUpstream sends call to the upstream.
func (c *client) submitUpstream(call *upCall) { c.s.up.client.Submit(call) }
