package server

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/command"
)

// Blocked clients (BLPOP, BZPOPMIN, BLMOVE...). A blocking command's handler that finds
// nothing to take sets command.Ctx.Block; the client then waits (park) on a goroutine of
// its own, never on an event loop: a client on a loop is handed over first, and its
// request runs again there. A waiter is queued on each of its keys, in the order clients
// blocked, and each key is registered on its shard (keyspace.Shard.BlockLocked), so that
// a write to it puts it on the keyspace's ready list. Once a command is over (a whole
// transaction, a whole script: run is where requests end), its connection serves the
// ready keys (serveReady): for each, the waiters in order get the key through
// Block.Serve, which replies on the waiter's own context, until the key has nothing
// more. A pop there is a write of the keyspace as any other: persistence and replicas
// see its new state.

// errUnblocked is a blocked client's reply to CLIENT UNBLOCK id ERROR.
var errUnblocked = &command.Error{Code: "UNBLOCKED", Msg: "client unblocked via CLIENT UNBLOCK"}

// blockedSet is the clients waiting on keys.
type blockedSet struct {
	mu   sync.Mutex           // guards keys and byID; takes no other lock
	keys map[string][]*waiter // by key, in the order they blocked
	byID map[int64]*waiter    // by client id, for CLIENT UNBLOCK
	// serving serializes serveReady, so that a key's waiters are served in order.
	serving sync.Mutex
	n       atomic.Int64 // INFO's blocked_clients
}

// waiter is one blocked client.
type waiter struct {
	c *client
	b *command.Block
	// mu guards done, and is held while Serve runs on the client's context.
	mu      sync.Mutex
	done    bool
	served  chan struct{} // closed once served
	unblock chan bool     // CLIENT UNBLOCK: true for ERROR
}

// parkIfBlocked makes c wait when its command set Ctx.Block.
func (s *Server) parkIfBlocked(c *client) {
	if c.Block == nil {
		return
	}
	if c.NoBlock {
		c.Block = nil
		return
	}
	if c.onLoop() {
		c.Block = nil
		c.handoff = true // it waits on a goroutine of its own: the request runs again there
		return
	}
	s.park(c)
}

// park queues c on its Block's keys and waits until it is served, times out, is
// unblocked, or the server stops.
func (s *Server) park(c *client) {
	b := c.Block
	c.Block = nil
	w := &waiter{c: c, b: b, served: make(chan struct{}), unblock: make(chan bool, 1)}
	bs := &s.blocked
	bs.mu.Lock()
	if bs.keys == nil {
		bs.keys, bs.byID = make(map[string][]*waiter), make(map[int64]*waiter)
	}
	for _, k := range b.Keys {
		bs.keys[string(k)] = append(bs.keys[string(k)], w)
	}
	bs.byID[c.id] = w
	bs.mu.Unlock()
	bs.n.Add(1)
	for _, k := range b.Keys {
		sh := s.ks.Shard(k)
		sh.Lock()
		sh.BlockLocked(k)
		sh.Unlock()
		s.ks.MarkReady(k) // written between the handler's look and now: served below
	}
	s.serveReady(c.Tick)

	var timeout <-chan time.Time
	if b.Timeout > 0 {
		t := time.NewTimer(time.Duration(b.Timeout))
		defer t.Stop()
		timeout = t.C
	}
	gone, stopWatch := watchHangup(c.nc)
	select {
	case <-gone:
		s.endWait(w, nil)
		c.closing = true // nobody to reply to
	case <-w.served:
	case <-timeout:
		s.endWait(w, nil)
	case asError := <-w.unblock:
		if asError {
			s.endWait(w, errUnblocked)
		} else {
			s.endWait(w, nil)
		}
	case <-s.shutdown:
		s.endWait(w, errors.New("server is shutting down"))
	}
	stopWatch()

	bs.mu.Lock()
	for _, k := range b.Keys {
		ws := bs.keys[string(k)]
		for i, x := range ws {
			if x == w {
				ws = append(ws[:i:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(bs.keys, string(k))
		} else {
			bs.keys[string(k)] = ws
		}
	}
	delete(bs.byID, c.id)
	bs.mu.Unlock()
	bs.n.Add(-1)
	for _, k := range b.Keys {
		sh := s.ks.Shard(k)
		sh.Lock()
		sh.UnblockLocked(k)
		sh.Unlock()
	}
}

// endWait ends w's wait unless it was served meanwhile: a null array (a timeout), or err.
func (s *Server) endWait(w *waiter, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	w.done = true
	if err != nil {
		s.replyError(w.c, err)
	} else {
		w.c.W.NullArray()
	}
}

// serveReady serves the clients waiting on the keys written since the last time, first
// blocked first served, until no key is ready (a BLMOVE served may make its destination
// ready). tick is the time of the command that wrote them.
func (s *Server) serveReady(tick int64) {
	bs := &s.blocked
	bs.serving.Lock()
	defer bs.serving.Unlock()
	for s.ks.AnyReady() {
		for _, key := range s.ks.TakeReady() {
			bs.mu.Lock()
			ws := append([]*waiter(nil), bs.keys[string(key)]...)
			bs.mu.Unlock()
			for _, w := range ws {
				w.serve(key, tick)
			}
		}
	}
}

// serve offers key to w; true when w took from it.
func (w *waiter) serve(key []byte, tick int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return false
	}
	w.c.Tick = tick
	if !w.b.Serve(&w.c.Ctx, key) {
		return false
	}
	w.done = true
	close(w.served)
	return true
}

// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
func cmdClientUnblock(c *client, args [][]byte) error {
	id, err := strconv.ParseInt(string(args[2]), 10, 64)
	if err != nil {
		return command.ErrNotInteger
	}
	asError := false
	if len(args) == 4 {
		switch strings.ToLower(string(args[3])) {
		case "timeout":
		case "error":
			asError = true
		default:
			return errors.New("CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
		}
	} else if len(args) > 4 {
		return command.ErrSyntax
	}
	bs := &c.s.blocked
	bs.mu.Lock()
	w := bs.byID[id]
	bs.mu.Unlock()
	if w == nil {
		c.W.Int(0)
		return nil
	}
	select {
	case w.unblock <- asError:
		c.W.Int(1)
	default:
		c.W.Int(0) // unblocked already
	}
	return nil
}
