package replication

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/keyspace"
)

// link is a replica's connection to its primary, reconnecting until stopped.
type link struct {
	host string
	port int
	quit chan struct{}
	done chan struct{}

	mu   sync.Mutex // guards conn
	conn net.Conn   // nil between connections

	up        atomic.Bool  // streaming
	syncing   atomic.Bool  // taking a full copy
	lastIO    atomic.Int64 // Unix ns of the last byte from the primary
	downSince atomic.Int64 // Unix ns since when the link is down; 0 while up
}

// ReplicaOf makes the node a replica of host:port, or, with host "", a primary again
// (REPLICAOF NO ONE): a promoted replica keeps its data and its backlog, and starts a new
// history whose ID it continues from the old one's, so that the other replicas of the old
// primary continue from it.
func (n *Node) ReplicaOf(host string, port int) {
	n.mu.Lock()
	old := n.link
	n.link = nil
	if host == "" {
		if old != nil {
			n.id2, n.off2, n.id = n.id, n.bl.end()+1, newID()
			n.startFeed()
			n.log.Info("replication: now a primary", "replid", n.id, "replid2", n.id2, "offset", n.bl.end())
		}
		n.mu.Unlock()
		if old != nil {
			old.stop()
		}
		return
	}
	// The stream so far is kept: the new primary may continue it (PSYNC with this ID
	// and offset), if it was a replica of this one.
	n.stopFeed()
	for f := range n.followers {
		f.dropLocked()
	}
	l := &link{host: host, port: port, quit: make(chan struct{}), done: make(chan struct{})}
	l.downSince.Store(time.Now().UnixNano())
	n.link = l
	n.mu.Unlock()
	n.cond.Broadcast()
	if old != nil {
		old.stop()
	}
	n.log.Info("replication: connecting to the primary", "host", host, "port", port)
	go n.runLink(l)
}

// stop ends the link and waits for its goroutine.
func (l *link) stop() {
	close(l.quit)
	l.drop()
	<-l.done
}

// drop closes the current connection; the link connects again.
func (l *link) drop() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return false
	}
	l.conn.Close()
	return true
}

// DropLink closes the link to the primary, which reconnects (CLIENT KILL TYPE master);
// it reports whether there was one.
func (n *Node) DropLink() bool {
	n.mu.Lock()
	l := n.link
	n.mu.Unlock()
	return l != nil && l.drop()
}

// runLink connects to the primary, again and again until the link is stopped.
func (n *Node) runLink(l *link) {
	defer close(l.done)
	wait := 100 * time.Millisecond
	for {
		start := time.Now()
		err := n.follow(l)
		if l.up.Swap(false) || l.downSince.Load() == 0 {
			l.downSince.Store(time.Now().UnixNano())
		}
		l.syncing.Store(false)
		select {
		case <-l.quit:
			return
		default:
		}
		n.log.Warn("replication: link to the primary lost; reconnecting", "host", l.host, "port", l.port, "err", err)
		if time.Since(start) > 5*time.Second {
			wait = 100 * time.Millisecond
		}
		select {
		case <-l.quit:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// follow runs one connection to the primary: the handshake, a full copy if needed, then
// the stream until it fails.
func (n *Node) follow(l *link) error {
	addr := net.JoinHostPort(l.host, strconv.Itoa(l.port))
	var conn net.Conn
	var err error
	if n.o.Dial != nil {
		conn, err = n.o.Dial(addr)
	} else {
		conn, err = net.DialTimeout("tcp", addr, 5*time.Second)
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	select {
	case <-l.quit:
		l.mu.Unlock()
		conn.Close()
		return errors.New("stopped")
	default:
	}
	l.conn = conn
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.conn = nil
		l.mu.Unlock()
		conn.Close()
	}()
	br := bufio.NewReaderSize(conn, 64<<10)
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	h := n.o.Hello()
	ask := func(args ...string) (string, error) {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		if _, err := conn.Write(appendCommand(nil, b...)); err != nil {
			return "", err
		}
		line, err := (&streamReader{br: br}).line()
		if err != nil {
			return "", err
		}
		if len(line) > 0 && line[0] == '-' {
			return "", fmt.Errorf("the primary replied to %s: %s", args[0], line[1:])
		}
		return string(line), nil
	}
	if h.Pass != "" {
		auth := []string{"AUTH", h.Pass}
		if h.User != "" {
			auth = []string{"AUTH", h.User, h.Pass}
		}
		if _, err := ask(auth...); err != nil {
			return err
		}
	}
	if _, err := ask("PING"); err != nil {
		return err
	}
	if _, err := ask("REPLCONF", "listening-port", strconv.Itoa(h.Port)); err != nil {
		return err
	}
	if h.AnnounceIP != "" {
		if _, err := ask("REPLCONF", "ip-address", h.AnnounceIP); err != nil {
			return err
		}
	}
	if _, err := ask("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return err
	}
	n.mu.Lock()
	id, processed := n.id, n.bl.end()
	n.mu.Unlock()
	reply, err := ask("PSYNC", id, strconv.FormatInt(processed+1, 10))
	if err != nil {
		return err
	}
	conn.SetDeadline(time.Time{})
	rd := &streamReader{br: br}
	switch f := strings.Fields(reply); {
	case len(f) == 3 && f[0] == "+FULLRESYNC":
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || len(f[1]) != 40 {
			return fmt.Errorf("replication: bad reply to PSYNC: %q", reply)
		}
		if err := n.takeCopy(l, rd, f[1], off); err != nil {
			return err
		}
	case len(f) >= 1 && f[0] == "+CONTINUE":
		n.mu.Lock()
		if len(f) == 2 && f[1] != n.id {
			n.id2, n.off2, n.id = n.id, n.bl.end()+1, f[1]
		}
		n.mu.Unlock()
		n.log.Info("replication: continuing from the primary's backlog", "host", l.host, "port", l.port, "offset", processed+1)
	default:
		return fmt.Errorf("replication: bad reply to PSYNC: %q", reply)
	}
	l.up.Store(true)
	l.downSince.Store(0)
	l.lastIO.Store(time.Now().UnixNano())
	return n.apply(l, conn, rd)
}

// takeCopy replaces the keyspace with the primary's full copy.
func (n *Node) takeCopy(l *link, rd *streamReader, id string, off int64) error {
	l.syncing.Store(true)
	defer l.syncing.Store(false)
	n.log.Info("replication: taking a full copy from the primary", "host", l.host, "port", l.port, "replid", id, "offset", off)
	n.mu.Lock()
	// Until the copy is complete, this node's history is nobody's: it must not continue.
	n.id, n.id2, n.off2 = newID(), "", -1
	n.bl.reset(0)
	for f := range n.followers {
		f.dropLocked()
	}
	n.mu.Unlock()
	n.cond.Broadcast()
	if err := n.o.Flush(); err != nil {
		return err
	}
	keys := 0
	for {
		args, _, err := rd.next()
		if err != nil {
			return err
		}
		l.lastIO.Store(time.Now().UnixNano())
		if len(args) == 2 && string(args[0]) == string(cmdSyncEnd) {
			break
		}
		if len(args) != 3 || string(args[0]) != string(cmdPut) {
			return fmt.Errorf("%w: %q in a full copy", errStream, truncate(args[0]))
		}
		if err := n.put(args[1], args[2]); err != nil {
			return err
		}
		keys++
	}
	n.mu.Lock()
	n.id = id
	n.bl.reset(off)
	n.mu.Unlock()
	n.log.Info("replication: full copy taken", "keys", keys)
	return nil
}

// apply applies the stream to the keyspace and keeps it in the backlog, acknowledging every
// second and when asked.
func (n *Node) apply(l *link, conn net.Conn, rd *streamReader) error {
	var wmu sync.Mutex
	ack := func() error {
		n.mu.Lock()
		off := n.bl.end()
		n.mu.Unlock()
		wmu.Lock()
		defer wmu.Unlock()
		conn.SetWriteDeadline(time.Now().Add(replTimeout))
		_, err := conn.Write(appendCommand(nil, cmdReplconf, []byte("ACK"), []byte(strconv.FormatInt(off, 10))))
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(ackPeriod / 10)
		defer t.Stop()
		last, ticks := int64(-1), 0
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				n.mu.Lock()
				off := n.bl.end()
				n.mu.Unlock()
				if off != last {
					last = off
					l.lastIO.Store(now.UnixNano())
				} else if now.UnixNano()-l.lastIO.Load() > int64(replTimeout) {
					conn.Close() // the primary went silent
				}
				if ticks++; ticks%10 == 0 && ack() != nil {
					conn.Close()
				}
			}
		}
	}()
	var pend []byte // applied, not yet published: published before the reader waits
	for {
		args, size, err := rd.next()
		if err != nil {
			return err
		}
		switch {
		case string(args[0]) == string(cmdPut) && len(args) == 3:
			err = n.put(args[1], args[2])
		case string(args[0]) == string(cmdPatch) && len(args) == 4:
			err = n.patch(args[1], args[2], args[3])
		case string(args[0]) == string(cmdDel) && len(args) == 2:
			sh := n.ks.Shard(args[1])
			sh.Lock()
			sh.DeleteLocked(args[1])
			sh.Unlock()
		case string(args[0]) == string(cmdFlushAll) && len(args) == 1:
			err = n.o.Flush()
		case string(args[0]) == string(cmdPing) && len(args) == 1:
		case string(args[0]) == string(cmdReplconf) && len(args) == 3 && strings.EqualFold(string(args[1]), "GETACK"):
		default:
			err = fmt.Errorf("%w: unknown command %q", errStream, truncate(args[0]))
		}
		if err != nil {
			return err
		}
		// The stream is kept as received: the primary encodes it as appendCommand does.
		at := len(pend)
		pend = appendCommand(pend, args...)
		if len(pend)-at != size {
			return fmt.Errorf("%w: a command of %d bytes re-encodes to %d", errStream, size, len(pend)-at)
		}
		getAck := string(args[0]) == string(cmdReplconf)
		if getAck || rd.br.Buffered() == 0 || len(pend) >= pieceBytes {
			n.publish(pend)
			pend = pend[:0]
		}
		if getAck {
			if err := ack(); err != nil {
				return err
			}
		}
	}
}

// put stores a key's state from the stream.
func (n *Node) put(key, enc []byte) error {
	v, err := keyspace.DecodeValue(enc)
	if err != nil {
		return err
	}
	if v.Kind > keyspace.MaxKind {
		return fmt.Errorf("%w: kind %d", keyspace.ErrBadValue, v.Kind)
	}
	if v, err = n.ks.Objectify(v); err != nil {
		return err
	}
	sh := n.ks.Shard(key)
	sh.Lock()
	sh.SetLocked(key, v)
	sh.Unlock()
	return nil
}

// patch applies a PATCH from the stream: a Chunked value's changes.
func (n *Node) patch(key, enc, changes []byte) error {
	head, err := keyspace.DecodeValue(enc)
	if err != nil {
		return err
	}
	if head.Kind > keyspace.MaxKind {
		return fmt.Errorf("%w: kind %d", keyspace.ErrBadValue, head.Kind)
	}
	return n.ks.Patch(key, head, changes)
}
