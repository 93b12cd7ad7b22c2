package server

import (
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/pubsub"
	"github.com/throttledhq/throttled/replication"
	"github.com/throttledhq/throttled/resp"
)

// client is one connection: its reader, its pending replies and what CLIENT shows of it.
type client struct {
	command.Ctx // what its commands see: the reply, the keyspace, the clock, the scratch
	s           *Server
	id          int64
	nc          net.Conn // nil when an event loop serves the socket
	raddr       string
	laddr       string
	rd          *resp.Reader
	authed      bool
	user        atomic.Pointer[acl.User] // the ACL user: default until AUTH
	created     time.Time
	cmdName     []byte // lower-cased command name, reused

	lastName   []byte    // the command name last looked up, as sent
	lastLookup *cmdEntry // what it named

	aheadKeys [][]byte // prefetchKeys's keys

	door door // the door an edge decision came in by (edge.go): RESP's for a connection

	tx      *transaction        // between MULTI and EXEC or DISCARD; nil otherwise
	txHeld  uint64              // the transaction stripes EXEC holds while it runs (scripting.go)
	script  *scriptRun          // the client's script run, kept for the next (scripting.go)
	watch   keyspace.Watch      // marked when a watched key changes
	watched map[string]struct{} // the keys WATCHed

	kind  atomic.Int32 // a clientKind: what CLIENT LIST and CLIENT KILL TYPE know it as
	multi atomic.Int32 // for CLIENT LIST: 1 + the requests queued in MULTI; 0 outside MULTI
	reply replyMode    // CLIENT REPLY (clientctl.go)
	// silencing: the replies written since replyMark (and the upstream's to the calls
	// parked since replyCalls) are dropped at the end of the request.
	silencing  bool
	replyMark  int
	replyCalls int
	noEvict    atomic.Bool // CLIENT NO-EVICT ON
	paused     atomic.Bool // its command waits for CLIENT PAUSE to end
	killed     atomic.Bool // CLIENT KILL hung it up: gone from CLIENT LIST and KILL at once, as Redis frees it

	// A replica's link, on its primary.
	follower *replication.Follower // after PSYNC
	replIP   string                // REPLCONF ip-address
	replPort int                   // REPLCONF listening-port

	lastCmd    atomic.Pointer[cmdEntry]
	lastActive atomic.Int64           // Unix ns
	ended      int64                  // when the command running ended, if it knows (a native script: its last command's end); 0 for timed to read the clock
	closing    bool                   // close after the pending replies are written
	mustSync   bool                   // a write command ran: the replies wait for the store (Server.syncWrites)
	handoff    bool                   // a command needs c detached: its event loop hands it over
	held       *keyspace.Shard        // the shard its event loop holds for its pipeline's requests (batch.go); Held too
	deniedRun  deniedRun              // the denials of one key run under held, not yet in TOPDENIED (batch.go)
	out        *outbox                // a detached client's output, which others may queue on too; nil before
	nwritten   int64                  // bytes written since the last takeNet (netstats.go)
	writes     int64                  // writes since the last takeNet
	net        netFigures             // what a client no loop serves read and wrote, folded once per pipeline
	bufs       clientBufs             // its buffers' sizes, for other clients' CLIENT LIST
	outPub     atomic.Pointer[outbox] // out, for other goroutines
	up         clientUpstream         // calls waiting for the upstream (upstream.go)
	loopConn

	mu      sync.Mutex         // guards name, libName, libVer, resp, and sub for other goroutines
	resp    int                // the protocol version, for other clients' CLIENT LIST
	sub     *pubsub.Subscriber // nil until the first SUBSCRIBE or PSUBSCRIBE; set once
	name    string
	libName string
	libVer  string

	// Clients are made one after another by the accepting goroutine, so one's memory ends
	// where the next's begins, and different event loops serve them: two cache lines
	// (the prefetcher fetches lines in pairs) keep one's writes off the other's.
	_ [cacheLine]byte
}

// clientKind is what a client is to CLIENT LIST's flags and CLIENT KILL TYPE.
type clientKind int32

const (
	kindNormal  clientKind = iota
	kindPubSub             // subscribed to a channel or pattern
	kindReplica            // a replica streaming from this primary (after SYNC or PSYNC)
	kindMonitor            // after MONITOR
)

// newClient makes a client of nc and counts it in; nil once the server is closed.
func (s *Server) newClient(nc net.Conn) *client {
	c := s.makeClient(nc)
	if !s.register(c) {
		return nil
	}
	return c
}

// makeClient makes a client of nc, served by a goroutine until attach says otherwise.
func (s *Server) makeClient(nc net.Conn) *client {
	c := &client{
		s:       s,
		id:      s.nextID.Add(1),
		nc:      nc,
		rd:      resp.NewReader(nc, s.cfg.ProtoMaxBulkLen),
		Ctx:     s.newCtx(),
		resp:    2,
		created: time.Now(),
		raddr:   nc.RemoteAddr().String(),
		laddr:   nc.LocalAddr().String(),
	}
	c.Conn = c
	c.Slot = s.slotFor(c.id)
	c.user.Store(s.acl.Default())
	c.rd.Open = s.acl.DefaultOpen
	c.rd.Ahead = c.prefetchKeys
	c.setAuthed(!s.passwordSet())
	c.lastActive.Store(c.created.UnixNano())
	c.bufs.seen[1] = int64(len(c.rd.Buf))
	c.bufs.qbufCap.Store(c.bufs.seen[1])
	c.startBatch()
	return c
}

// clock is the server's time now, as c's commands see it: the server's clock, or the one
// c's Env carries (a benchmark gives each goroutine's client a clock of its own, so that
// the clock is no line every call writes).
func (c *client) clock() time.Time {
	if c.Clock != nil {
		return time.Unix(0, c.Clock())
	}
	return c.s.now()
}

// bareClient makes a client with no connection, authenticated as the default user: a
// script's (its commands), or a decision's of the HTTP and gRPC doors.
func (s *Server) bareClient(raddr, laddr string) *client {
	c := &client{s: s, raddr: raddr, laddr: laddr, authed: true, Ctx: s.newCtx()}
	c.Conn = c
	c.Slot = s.slotFor(int64(s.nextSlot.Add(1))) // its users set their own where they have one
	return c
}

// register makes c one of the server's clients (CLIENT LIST, KILL, Close); false once the
// server is closed.
func (s *Server) register(c *client) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.clients[c.id] = c
	s.connected.Add(1)
	return true
}

// serve is the goroutine of a client that no event loop serves: it reads requests and
// answers them in order; replies to a pipeline are written together once no further
// request is waiting in the buffer. first, when not nil, is a request to run before
// reading: the one a loop handed c over for.
func (c *client) serve(first [][]byte) {
	defer func() {
		if c.sub != nil {
			c.sub.Close() // nothing more is queued on c's output
		}
		if c.out != nil {
			c.out.stop() // what is queued goes out first, unless the connection is gone
		}
		c.nc.Close()
		c.close()
	}()
	newBatch := true // the next request starts a pipeline: note the time once for all of it
	for {
		args := first
		first = nil
		if args == nil {
			var err error
			if args, err = c.rd.Next(); err != nil {
				var pe resp.ProtocolError
				if errors.As(err, &pe) {
					c.W.ErrorText("ERR " + pe.Error())
					c.flush()
				}
				return
			}
		}
		if newBatch {
			now := time.Now()
			c.lastActive.Store(now.UnixNano())
			c.Tick = c.s.obs.since(now)
			newBatch = false
		}
		c.s.run(c, args)
		if c.closing {
			c.flush()
			return
		}
		// A detached client's replies are queued after each request, so that the messages
		// others queue for it meanwhile come between replies, as Redis sends them.
		if !c.rd.Buffered() || len(c.W.B) > resp.KeepWriteBuf || c.out != nil {
			if !c.flush() {
				return
			}
			newBatch = true
		}
	}
}

// flush writes the pending replies; false when the connection is gone. Replies to write
// commands wait for the batch that writes their changes to the log (and with appendfsync
// always syncs it): once for a whole pipeline, and one batch serves every client waiting.
func (c *client) flush() bool {
	if len(c.up.calls) > 0 {
		if !c.waitUpstream() {
			return false
		}
		c.spliceUpstream()
	}
	if len(c.W.B) == 0 {
		c.foldNet()
		return true
	}
	if c.mustSync {
		c.mustSync = false
		c.s.waitStore()
	}
	var err error
	if c.out != nil {
		if !c.out.push(c.W.B, c.W.Proto) {
			c.hangup()
			err = errOutputClosed
		}
	} else {
		var n int
		n, err = c.nc.Write(c.W.B)
		if n > 0 {
			c.nwritten += int64(n)
			c.writes++
		}
	}
	c.foldNet()
	pending := len(c.W.B)
	if cap(c.W.B) > resp.KeepWriteBuf {
		c.W.B = nil
	} else {
		c.W.B = c.W.B[:0]
	}
	c.noteBufs(pending)
	return err == nil
}

// close forgets c once its connection is closed, with its transaction and watched keys.
func (c *client) close() {
	if c.follower != nil {
		c.follower.Close()
	}
	c.endMulti()
	c.unwatchAll()
	c.s.unmonitor(c)
	c.s.mu.Lock()
	delete(c.s.clients, c.id)
	c.s.netGone.plus(c.net.load())
	c.s.netGone.plus(c.takeNet())
	c.s.mu.Unlock()
	c.s.connected.Add(-1)
}

// info is the client's line in CLIENT LIST and CLIENT INFO, in Redis's format, as seen by
// by, whose command running now is args.
func (c *client) info(now time.Time, by *client, args [][]byte) string {
	c.mu.Lock()
	name, lib, ver, resp, sub := c.name, c.libName, c.libVer, c.resp, c.sub
	c.mu.Unlock()
	var channels, patterns int
	if sub != nil {
		channels, patterns = sub.Counts()
	}
	cmd := "NULL"
	if lc := c.lastCmd.Load(); lc != nil {
		cmd = lc.fullName()
	}
	var b strings.Builder
	b.WriteString("id=")
	b.WriteString(itoa(c.id))
	b.WriteString(" addr=" + c.raddr)
	b.WriteString(" laddr=" + c.laddr)
	b.WriteString(" fd=0 name=" + name)
	b.WriteString(" age=" + itoa(int64(now.Sub(c.created)/time.Second)))
	b.WriteString(" idle=" + itoa((now.UnixNano()-c.lastActive.Load())/int64(time.Second)))
	b.WriteString(" flags=" + c.flags() + " db=0")
	b.WriteString(" sub=" + itoa(int64(channels)) + " psub=" + itoa(int64(patterns)))
	b.WriteString(" ssub=0 multi=" + itoa(int64(c.multi.Load()-1)))
	m := c.memory(by, args)
	b.WriteString(" qbuf=" + itoa(m.qbuf) + " qbuf-free=" + itoa(m.qbufFree) + " argv-mem=" + itoa(m.argv))
	b.WriteString(" multi-mem=" + itoa(m.multi) + " rbs=" + itoa(m.rbs) + " rbp=" + itoa(m.rbp))
	b.WriteString(" obl=" + itoa(m.obl) + " oll=" + itoa(m.oll) + " omem=" + itoa(m.omem) + " tot-mem=" + itoa(m.total()) + " events=r")
	b.WriteString(" cmd=" + cmd)
	b.WriteString(" user=" + c.user.Load().Name() + " redir=-1 resp=" + itoa(int64(resp)))
	b.WriteString(" lib-name=" + lib + " lib-ver=" + ver)
	return b.String()
}

// flags is CLIENT LIST's flags field, as Redis's: S a replica, P subscribed, x in MULTI,
// d a watched key changed, N none of these.
func (c *client) flags() string {
	var f []byte
	switch clientKind(c.kind.Load()) {
	case kindReplica:
		f = append(f, 'S')
	case kindPubSub:
		f = append(f, 'P')
	case kindMonitor:
		f = append(f, 'O')
	}
	if c.multi.Load() != 0 {
		f = append(f, 'x')
	}
	if c.watch.Changed() {
		f = append(f, 'd')
	}
	if c.noEvict.Load() {
		f = append(f, 'e')
	}
	if c.paused.Load() {
		f = append(f, 'b') // blocked until CLIENT PAUSE ends, as Redis shows it
	}
	if len(f) == 0 {
		return "N"
	}
	return string(f)
}

// lowerName returns the command name in lower case without allocating.
func (c *client) lowerName(name []byte) []byte {
	c.cmdName = c.cmdName[:0]
	for _, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		c.cmdName = append(c.cmdName, ch)
	}
	return c.cmdName
}
