package server

import (
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"throttled/keyspace"
	"time"
)

// client is one connection: its reader, its pending replies and what CLIENT shows of it.
type client struct {
	s       *Server
	id      int64
	nc      net.Conn // nil when an event loop serves the socket
	raddr   string
	laddr   string
	rd      *reader
	w       writer
	authed  bool
	created time.Time
	cmdName []byte // lower-cased command name, reused

	lastName   []byte   // the command name last looked up, as sent
	lastLookup *command // what it named

	// Reused by the rate-limit verbs so that a call allocates nothing.
	scratch   []byte            // a variable-size state being built
	limits    []limit           // ALLOF's limits
	keys      [][]byte          // ALLOF's keys
	shards    []*keyspace.Shard // ALLOF's locked shards
	scratches [][]byte          // ALLOF: a scratch per limit
	pending   []pending         // ALLOF: each limit's outcome

	kind       atomic.Int32 // a clientKind: what CLIENT LIST and CLIENT KILL TYPE know it as
	lastCmd    atomic.Pointer[command]
	lastActive atomic.Int64   // Unix ns
	closing    bool           // close after the pending replies are written
	mustSync   bool           // a write command ran: the replies wait until it is synced
	up         clientUpstream // calls waiting for the upstream (upstream.go)
	loopConn

	mu      sync.Mutex // guards name, libName, libVer, resp
	resp    int        // the protocol version, for other clients' CLIENT LIST
	name    string
	libName string
	libVer  string
}

// clientKind is what a client is to CLIENT LIST's flags and CLIENT KILL TYPE.
type clientKind int32

const (
	kindNormal  clientKind = iota
	kindPubSub             // subscribed to a channel or pattern
	kindReplica            // a replica streaming from this primary (after SYNC or PSYNC)
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
		rd:      newReader(nc, s.cfg.ProtoMaxBulkLen),
		w:       writer{proto: 2},
		resp:    2,
		created: time.Now(),
		raddr:   nc.RemoteAddr().String(),
		laddr:   nc.LocalAddr().String(),
	}
	c.authed = !s.passwordSet()
	c.lastActive.Store(c.created.UnixNano())
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
// request is waiting in the buffer.
func (c *client) serve() {
	defer func() {
		c.nc.Close()
		c.close()
	}()
	newBatch := true // the next request starts a pipeline: note the time once for all of it
	for {
		args, err := c.rd.next()
		if err != nil {
			var pe errProtocol
			if errors.As(err, &pe) {
				c.w.errorText("ERR " + pe.Error())
				c.flush()
			}
			return
		}
		if newBatch {
			c.lastActive.Store(time.Now().UnixNano())
			newBatch = false
		}
		c.s.run(c, args)
		if c.closing {
			c.flush()
			return
		}
		if !c.rd.buffered() || len(c.w.b) > keepWriteBuf {
			if !c.flush() {
				return
			}
			newBatch = true
		}
	}
}

// flush writes the pending replies; false when the connection is gone. With appendfsync
// always, replies to write commands wait for the sync that makes their changes durable:
// once for a whole pipeline, and one sync serves every client waiting.
func (c *client) flush() bool {
	if len(c.up.calls) > 0 {
		if !c.waitUpstream() {
			return false
		}
		c.spliceUpstream()
	}
	if len(c.w.b) == 0 {
		return true
	}
	if c.mustSync {
		c.mustSync = false
		c.s.store.Wait()
	}
	_, err := c.nc.Write(c.w.b)
	if cap(c.w.b) > keepWriteBuf {
		c.w.b = nil
	} else {
		c.w.b = c.w.b[:0]
	}
	return err == nil
}

// close forgets c once its connection is closed.
func (c *client) close() {
	c.s.mu.Lock()
	delete(c.s.clients, c.id)
	c.s.mu.Unlock()
	c.s.connected.Add(-1)
}

// info is the client's line in CLIENT LIST and CLIENT INFO, in Redis's format.
func (c *client) info(now time.Time) string {
	c.mu.Lock()
	name, lib, ver, resp := c.name, c.libName, c.libVer, c.resp
	c.mu.Unlock()
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
	b.WriteString(" flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 obl=0 oll=0 omem=0 tot-mem=0 events=r")
	b.WriteString(" cmd=" + cmd)
	b.WriteString(" user=default redir=-1 resp=" + itoa(int64(resp)))
	b.WriteString(" lib-name=" + lib + " lib-ver=" + ver)
	return b.String()
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
