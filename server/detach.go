package server

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/throttledhq/throttled/resp"
)

// A client is detached when a command needs it on a goroutine of its own (command.detach):
// SUBSCRIBE, whose messages other goroutines publish at any time, and later commands that
// block. An event loop first hands the client over (loop.handOff); a client with a
// goroutine already stays on it. Either way its output becomes an outbox, which a writer
// goroutine of its own empties into the socket: the client's replies and what others queue
// for it (pub/sub messages) go out in the order they were queued, never interleaved within
// a reply, and nobody who queues waits for the socket.

// outputLimit bounds what a detached client's output holds, queued and being written, when
// client-output-buffer-limit sets no hard limit for its class (normal clients, by default):
// a client that sends requests without reading their replies is disconnected past it.
// Subscribers have the pubsub class's limits (outputlimit.go).
const outputLimit = 32 << 20

// errOutputClosed is a detached client's output cut off: its connection is gone or it overflowed.
var errOutputClosed = errors.New("output closed")

// outbox is a detached client's output.
type outbox struct {
	c      *client
	nc     net.Conn
	mu     sync.Mutex  // guards w, queued, stopping, dead
	cond   sync.Cond   // signalled when w has bytes, or stopping or dead is set
	w      resp.Writer // bytes waiting for the writer goroutine, in the client's protocol
	queued int         // bytes in w and being written: what outputLimit bounds
	// stopping: the client is done, the writer ends once w is written; dead: the
	// connection failed or overflowed, nothing more is written.
	stopping, dead bool
	softSince      time.Time     // since when queued is over the class's soft limit; zero when under
	done           chan struct{} // closed when the writer goroutine has ended
}

// startOutput makes c's output an outbox and starts its writer; c has a goroutine of its own.
func (c *client) startOutput() {
	o := &outbox{c: c, nc: c.nc, done: make(chan struct{})}
	o.cond.L = &o.mu
	o.w.Proto = c.W.Proto
	c.out = o
	c.outPub.Store(o)
	go o.run()
}

// push queues the client's own replies, encoded in proto; false when the connection is
// gone or now overflows.
func (o *outbox) push(b []byte, proto int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead {
		return false
	}
	o.w.Proto = proto
	o.w.B = append(o.w.B, b...)
	return o.queuedLocked(len(b))
}

// queuedLocked counts n more bytes queued and wakes the writer; false, with the output
// dropped, when that goes past outputLimit.
func (o *outbox) queuedLocked(n int) bool {
	o.queued += n
	if over, limit := o.overLimitLocked(); over {
		o.dead = true
		o.w.B = nil
		o.cond.Signal()
		o.c.s.log.Warn("client closed for overcoming its output buffer limit",
			"client", o.c.raddr, "id", o.c.id, "limit", limit)
		return false
	}
	o.cond.Signal()
	return true
}

// run is the writer goroutine: it writes what is queued, a batch at a time, until the
// client stops and all is written, or the connection fails.
func (o *outbox) run() {
	defer close(o.done)
	var out []byte // the batch being written; the two buffers take turns
	for {
		o.mu.Lock()
		for len(o.w.B) == 0 && !o.stopping && !o.dead {
			o.cond.Wait()
		}
		if o.dead || len(o.w.B) == 0 {
			o.mu.Unlock()
			return
		}
		out, o.w.B = o.w.B, out[:0]
		o.mu.Unlock()

		n, err := o.nc.Write(out)
		if n > 0 {
			o.c.net.out.Add(int64(n))
			o.c.net.writes.Add(1)
		}
		o.mu.Lock()
		o.queued -= len(out)
		if err != nil {
			o.dead = true
			o.w.B = nil
		}
		o.mu.Unlock()
		if err != nil {
			o.c.hangup() // the reader sees it too and lets the client go
			return
		}
		if cap(out) > resp.KeepWriteBuf {
			out = nil
		}
	}
}

// stop waits until the writer has written what is queued, or has given up on the connection.
func (o *outbox) stop() {
	o.mu.Lock()
	o.stopping = true
	o.cond.Signal()
	o.mu.Unlock()
	<-o.done
}
