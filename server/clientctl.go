package server

import (
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/command"
)

// What a client may ask of the server about its own replies and everyone's commands:
// CLIENT REPLY, CLIENT NO-EVICT, CLIENT PAUSE and CLIENT UNPAUSE.

// replyMode is CLIENT REPLY's state of a client.
type replyMode uint8

const (
	replyOn       replyMode = iota
	replyOff                // no replies until CLIENT REPLY ON
	replySkipNext           // CLIENT REPLY SKIP ran: the next command's reply is dropped
	replySkip               // this command's reply is dropped
)

func clientCtlSubcommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "reply", arity: 3, flags: "noscript loading stale", group: "connection", since: "3.2.0", summary: "Instructs the server whether to reply to commands.", syntax: "ON|OFF|SKIP", handler: cmdClientReply},
		{name: "no-evict", arity: 3, flags: "admin noscript loading stale", group: "connection", since: "7.0.0", summary: "Sets the client eviction mode of the connection.", syntax: "ON|OFF", handler: cmdClientNoEvict},
		{name: "pause", arity: -3, flags: "admin noscript loading stale", group: "connection", since: "3.0.0", summary: "Suspends commands processing.", syntax: "timeout [WRITE|ALL]", handler: cmdClientPause},
		{name: "unblock", arity: -3, flags: "admin noscript loading stale", group: "connection", since: "5.0.0", summary: "Unblocks a client blocked by a blocking command from a different connection.", syntax: "client-id [TIMEOUT|ERROR]", handler: cmdClientUnblock},
		{name: "unpause", arity: 2, flags: "admin noscript loading stale", group: "connection", since: "6.2.0", summary: "Resumes processing commands from paused clients.", handler: cmdClientUnpause},
	}
}

// run executes one request on c, as dispatch does, and keeps CLIENT REPLY's word as Redis
// does, reply by reply: with replies off, or this request's skipped, what it writes is
// taken back, but for what follows a CLIENT REPLY ON it runs (in EXEC, say). A client
// that never said CLIENT REPLY pays two comparisons.
func (s *Server) run(c *client, args [][]byte) {
	if c.reply != replyOn {
		c.silencing = c.reply == replyOff || c.reply == replySkip
		c.replyMark, c.replyCalls = len(c.W.B), len(c.up.calls)
	}
	s.dispatch(c, args)
	if s.ks.AnyReady() {
		s.serveReady(c.Tick) // the clients blocked on the keys it wrote (blocking.go)
	}
	if (c.reply != replyOn || c.silencing) && !c.handoff { // a handed-off request runs again
		c.endReplies()
	}
}

// endReplies ends a request run with replies not all on: what it wrote since the mark is
// dropped while silencing; a skipped request's skip is over, a SKIP's starts.
func (c *client) endReplies() {
	if c.silencing {
		c.W.B = c.W.B[:c.replyMark]
		for _, call := range c.up.calls[c.replyCalls:] {
			call.silent = true
		}
		c.silencing = false
	}
	switch c.reply {
	case replySkip:
		c.reply = replyOn
	case replySkipNext:
		c.reply = replySkip
	}
}

// CLIENT REPLY ON|OFF|SKIP
func cmdClientReply(c *client, args [][]byte) error {
	switch strings.ToLower(string(args[2])) {
	case "on":
		if c.silencing { // what this request wrote before stays unsent
			c.W.B = c.W.B[:c.replyMark]
			for _, call := range c.up.calls[c.replyCalls:] {
				call.silent = true
			}
			c.silencing = false
		}
		c.reply = replyOn
		c.W.OK()
	case "off":
		if !c.silencing {
			c.silencing = true
			c.replyMark, c.replyCalls = len(c.W.B), len(c.up.calls)
		}
		c.reply = replyOff
	case "skip":
		if c.reply != replyOff {
			c.reply = replySkipNext
		}
	default:
		return command.ErrSyntax
	}
	return nil
}

// CLIENT NO-EVICT ON|OFF: throttled evicts no clients (Redis's maxmemory-clients); the mode
// is kept and shown, as the e flag of CLIENT LIST.
func cmdClientNoEvict(c *client, args [][]byte) error {
	switch strings.ToLower(string(args[2])) {
	case "on":
		c.noEvict.Store(true)
	case "off":
		c.noEvict.Store(false)
	default:
		return command.ErrSyntax
	}
	c.W.OK()
	return nil
}

// Pause modes, as clientPause.mode holds them.
const (
	pauseNone int32 = iota
	pauseWrite
	pauseAll
)

// clientPause is CLIENT PAUSE's state. While it lasts, the commands it holds wait, on a
// goroutine of the client's own (an event loop hands such a client over), until it ends:
// by its timeout, CLIENT UNPAUSE or the server's shutdown.
type clientPause struct {
	mode  atomic.Int32 // pauseNone, pauseWrite or pauseAll: read at every command
	mu    sync.Mutex   // guards until, timer, done
	until time.Time
	timer *time.Timer
	done  chan struct{} // closed when the pause ends
}

// CLIENT PAUSE timeout [WRITE|ALL]
func cmdClientPause(c *client, args [][]byte) error {
	ms, ok := command.ParseInt(args[2])
	if !ok {
		return errors.New("timeout is not an integer or out of range")
	}
	if ms < 0 {
		return errors.New("timeout is negative")
	}
	mode := pauseAll
	switch {
	case len(args) == 3:
	case len(args) == 4 && strings.EqualFold(string(args[3]), "write"):
		mode = pauseWrite
	case len(args) == 4 && strings.EqualFold(string(args[3]), "all"):
	default:
		return errors.New("CLIENT PAUSE mode must be WRITE or ALL")
	}
	c.s.pauseClients(mode, time.Now().Add(time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond)))*time.Millisecond))
	c.W.OK()
	return nil
}

// CLIENT UNPAUSE
func cmdClientUnpause(c *client, args [][]byte) error {
	c.s.unpauseClients()
	c.W.OK()
	return nil
}

// pauseClients pauses in mode until the later of until and the end of a pause under way,
// as Redis: the last mode given holds.
func (s *Server) pauseClients(mode int32, until time.Time) {
	p := &s.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		p.done = make(chan struct{})
	}
	if until.After(p.until) {
		p.until = until
		if p.timer != nil {
			p.timer.Stop()
		}
		p.timer = time.AfterFunc(time.Until(until), s.endPauseAtTimeout)
	}
	p.mode.Store(mode)
}

// endPauseAtTimeout ends the pause when its time has come; a later pause keeps it going.
func (s *Server) endPauseAtTimeout() {
	p := &s.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	if !time.Now().Before(p.until) {
		p.endLocked()
	}
}

// unpauseClients ends the pause now.
func (s *Server) unpauseClients() {
	p := &s.pause
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endLocked()
}

func (p *clientPause) endLocked() {
	p.mode.Store(pauseNone)
	p.until = time.Time{}
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if p.done != nil {
		close(p.done)
		p.done = nil
	}
}

// pausedFor reports whether the pause in mode holds cmd, sent by c: every command under
// ALL; under WRITE, those that write or may (scripts and functions that may write, PUBLISH,
// a rate-limit verb unless it PEEKs, EXEC of a transaction holding one of these).
// Replicas are never paused, as in Redis.
func (c *client) pausedFor(mode int32, cmd *cmdEntry, args [][]byte) bool {
	if clientKind(c.kind.Load()) == kindReplica {
		return false
	}
	if mode == pauseAll {
		return true
	}
	if c.tx != nil && !cmd.has(flagNoQueue) {
		return false // queued; EXEC waits if it must
	}
	if cmd.name == "exec" && c.tx != nil {
		for _, q := range c.tx.queued {
			if writes(q.cmd, q.args) {
				return true
			}
		}
		return false
	}
	return writes(cmd, args)
}

// writes reports whether a request may write, for CLIENT PAUSE WRITE.
func writes(cmd *cmdEntry, args [][]byte) bool {
	switch cmd.name {
	case "eval", "evalsha", "fcall", "publish":
		return true
	}
	if !cmd.has(flagWrite) {
		return false
	}
	if cmd.has(flagRatelimit) {
		for _, a := range args[1:] {
			if strings.EqualFold(string(a), "peek") {
				return false
			}
		}
	}
	return true
}

// waitUnpaused holds c's request until the pause no longer holds it; false when the
// server shuts down meanwhile.
func (s *Server) waitUnpaused(c *client, cmd *cmdEntry, args [][]byte) bool {
	c.paused.Store(true)
	defer c.paused.Store(false)
	for {
		mode := s.pause.mode.Load()
		if mode == pauseNone || !c.pausedFor(mode, cmd, args) {
			return true
		}
		p := &s.pause
		p.mu.Lock()
		done := p.done
		p.mu.Unlock()
		if done == nil {
			continue // ended between the two looks
		}
		select {
		case <-done:
		case <-s.shutdown:
			return false
		}
	}
}
