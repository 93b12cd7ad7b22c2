// Package replication streams a server's state to replicas and keeps a replica's copy up to
// date, as Redis's replication does and as Redis Sentinel expects of it.
//
// A primary drains the keyspace's replication feed every millisecond (keyspace.ReplicaFeed:
// the latest state of each key changed since the last drain, so a hot key costs one record
// per drain however often it changes) into a stream of Redis commands, and keeps the end of
// that stream in a backlog. A replica connects as Redis's do (PING, REPLCONF, PSYNC): when
// its replication ID and offset are still covered by the backlog, it gets the stream from
// there (+CONTINUE, a partial resync); otherwise a full copy of the keyspace first
// (+FULLRESYNC). A replica keeps the stream it applied in a backlog of its own, at the same
// offsets, so that once promoted its former fellow replicas continue from it with a partial
// resync, as with Redis's PSYNC2.
package replication

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/keyspace"
)

// Options are what a Node needs from its server. Functions are read each time they are
// needed, so that CONFIG SET takes effect at once.
type Options struct {
	Logger *slog.Logger
	// BacklogSize is repl-backlog-size in bytes.
	BacklogSize func() int64
	// Flush empties the keyspace and what persists it: a full copy starts with it, and a
	// primary's FLUSHALL reaches the replicas through it.
	Flush func() error
	// Now is the server's clock in Unix ns; nil is the wall clock.
	Now func() int64
	// Hello is what a replica says of itself to its primary: its listening port, the
	// address to announce ("" for the one the primary sees), and the credentials for a
	// primary with requirepass (masteruser, masterauth).
	Hello func() Hello
	// Dial connects a replica to its primary at addr ("host:port"); nil dials TCP with a
	// timeout of 5 seconds. The server dials TLS with tls-replication.
	Dial func(addr string) (net.Conn, error)
}

// Hello is a replica's handshake with its primary.
type Hello struct {
	Port       int
	AnnounceIP string
	User, Pass string
}

// Timing of the stream, after Redis's: a primary pings its replicas when it has nothing
// else to send, replicas acknowledge every second, and a link silent for replTimeout is
// taken for dead.
const (
	drainPeriod    = time.Millisecond
	maxDrainPeriod = 5 * time.Millisecond
	pingPeriod     = time.Second
	ackPeriod      = time.Second
	replTimeout    = 60 * time.Second
	// pieceBytes is how much of a drain is published at once: a burst reaches the
	// replicas in pieces while it is drained.
	pieceBytes = 256 << 10
)

// Node is a server's part in replication: a primary, with the replicas that follow it, or
// a replica with its link to its primary (and replicas of its own, if any follow it).
type Node struct {
	ks  *keyspace.Keyspace
	o   Options
	log *slog.Logger

	mu        sync.Mutex
	cond      *sync.Cond // broadcast when the stream grows, an ack arrives, a follower leaves
	id, id2   string     // replication IDs: this history's, and the one it continues
	off2      int64      // the offset up to which id2's history is this one's; -1 when none
	bl        backlog
	followers map[*Follower]struct{}
	link      *link         // the link to the primary; nil for a primary
	feedStop  chan struct{} // closed to stop the feed; nil when the node does not feed
	feedDone  chan struct{}
	closed    bool

	drainMu      sync.Mutex // one drain at a time; Flush takes it so its record keeps its place
	drainBuf     []byte
	flushPending bool // a FLUSHALL goes into the stream before the next drain's records

	syncFull, partialOK, partialErr atomic.Int64
}

// New returns a node that is a primary with a new replication ID.
func New(ks *keyspace.Keyspace, o Options) *Node {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = func() int64 { return time.Now().UnixNano() }
	}
	if o.BacklogSize == nil {
		o.BacklogSize = func() int64 { return 1 << 20 }
	}
	if o.Hello == nil {
		o.Hello = func() Hello { return Hello{} }
	}
	n := &Node{ks: ks, o: o, log: o.Logger, id: newID(), off2: -1, followers: make(map[*Follower]struct{})}
	n.cond = sync.NewCond(&n.mu)
	return n
}

// newID returns a replication ID: 40 random hex digits, as Redis's.
func newID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ErrReplica is WAIT's error on a replica.
var ErrReplica = errors.New("WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")

// startFeed makes this primary drain the keyspace into the stream, from now on. Called with
// n.mu held.
func (n *Node) startFeed() {
	if n.feedStop != nil || n.link != nil || n.closed {
		return
	}
	n.ks.Track(keyspace.ReplicaFeed, true)
	n.feedStop, n.feedDone = make(chan struct{}), make(chan struct{})
	go n.feed(n.feedStop, n.feedDone)
}

// stopFeed stops draining, after a last drain: a primary turned replica has every change it
// made in its stream, so that a new primary that lacks some of them sees it ahead of its
// history and sends a full copy. Called with n.mu held, which it releases meanwhile.
func (n *Node) stopFeed() {
	if n.feedStop == nil {
		return
	}
	close(n.feedStop)
	n.mu.Unlock()
	<-n.feedDone
	n.drain()
	n.mu.Lock()
	n.feedStop, n.feedDone = nil, nil
	n.ks.Track(keyspace.ReplicaFeed, false)
}

// feed drains the keyspace every drainPeriod, or less often while a drain takes more than
// a tenth of that (a drain locks every shard with changes, and a busy server's changes are
// better taken in fewer, larger drains), but at least every maxDrainPeriod, which bounds the
// lag; it pings when nothing changed for a while.
func (n *Node) feed(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTimer(drainPeriod)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			start := time.Now()
			if n.drain() {
				last = start
			} else if start.Sub(last) >= pingPeriod {
				n.publish(appendCommand(nil, cmdPing))
				last = start
			}
			// The drain's own time: the timer's, which the runtime may deliver late, is
			// no measure of the work.
			t.Reset(min(max(drainPeriod, 10*time.Since(start)), maxDrainPeriod))
		}
	}
}

// drain moves the keyspace's changes since the last drain into the stream, and reports
// whether there were any.
func (n *Node) drain() bool {
	n.drainMu.Lock()
	defer n.drainMu.Unlock()
	r := (*drainRecorder)(n)
	r.drainBuf = r.drainBuf[:0]
	wrote := false
	if n.flushPending {
		r.drainBuf = appendCommand(r.drainBuf, cmdFlushAll)
		n.flushPending = false
	}
	if n.ks.Pending(keyspace.ReplicaFeed) > 0 {
		for i := range n.ks.Shards() {
			for more := true; more; {
				var ok bool
				if more, ok = n.ks.Drain(keyspace.ReplicaFeed, i, r); !ok {
					// The shard lost track of its deletions: the stream says so with a
					// FLUSHALL and every key again.
					r.drainBuf = appendCommand(r.drainBuf[:0], cmdFlushAll)
					for j := range n.ks.Shards() {
						n.ks.DrainAll(keyspace.ReplicaFeed, j, r)
						n.publishPiece(r, &wrote)
					}
					break
				}
				n.publishPiece(r, &wrote)
			}
		}
	}
	if len(r.drainBuf) > 0 {
		n.publish(r.drainBuf)
		wrote = true
	}
	return wrote
}

// publishPiece publishes what the recorder holds once it is a piece.
func (n *Node) publishPiece(r *drainRecorder, wrote *bool) {
	if r.Full() {
		n.publish(r.drainBuf)
		r.drainBuf = r.drainBuf[:0]
		*wrote = true
	}
}

// drainRecorder is the Node as the keyspace.Recorder its drains write into.
type drainRecorder Node

func (r *drainRecorder) Put(key []byte, v keyspace.Value) { r.drainBuf = appendPut(r.drainBuf, key, v) }
func (r *drainRecorder) Delete(key []byte)                { r.drainBuf = appendDel(r.drainBuf, key) }
func (r *drainRecorder) Patch(key []byte, head keyspace.Value, changes []byte) {
	r.drainBuf = appendPatch(r.drainBuf, key, head, changes)
}
func (r *drainRecorder) Full() bool { return len(r.drainBuf) >= pieceBytes }

// publish appends b to the stream and wakes the followers.
func (n *Node) publish(b []byte) {
	n.mu.Lock()
	n.bl.buf = append(n.bl.buf, b...)
	n.trimLocked()
	n.mu.Unlock()
	n.cond.Broadcast()
}

// trimLocked trims the backlog to what repl-backlog-size and the followers need.
func (n *Node) trimLocked() {
	need := n.bl.end()
	for f := range n.followers {
		need = min(need, f.pos)
	}
	n.bl.trim(n.o.BacklogSize(), need)
}

// Flush records a FLUSHALL in the stream, in its place among the changes: run empties the
// keyspace (and the store), and the changes drained before stay before it.
func (n *Node) Flush(run func() error) error {
	n.drainMu.Lock()
	defer n.drainMu.Unlock()
	err := run()
	n.mu.Lock()
	n.flushPending = n.feedStop != nil
	n.mu.Unlock()
	return err
}

// Sync brings the stream up to date with the keyspace now: what was changed before the
// call is in the stream when it returns.
func (n *Node) Sync() {
	n.mu.Lock()
	feeding := n.feedStop != nil
	n.mu.Unlock()
	if feeding {
		n.drain()
	}
}

// Wait blocks until num followers have acknowledged every change made before the call, or
// timeout passes (0: no limit), and returns how many have (WAIT).
func (n *Node) Wait(num int, timeout time.Duration) (int, error) {
	n.mu.Lock()
	if n.link != nil {
		n.mu.Unlock()
		return 0, ErrReplica
	}
	n.mu.Unlock()
	n.Sync()
	n.mu.Lock()
	defer n.mu.Unlock()
	target := n.bl.end()
	acked := func() int {
		k := 0
		for f := range n.followers {
			if f.online && f.ack >= target {
				k++
			}
		}
		return k
	}
	if k := acked(); k >= num {
		return k, nil
	}
	// Ask for acknowledgements now rather than at the next second.
	n.bl.buf = appendCommand(n.bl.buf, cmdReplconf, argGetAck, argStar)
	n.cond.Broadcast()
	var expired atomic.Bool
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() {
			n.mu.Lock()
			expired.Store(true)
			n.mu.Unlock()
			n.cond.Broadcast()
		})
		defer t.Stop()
	}
	for {
		k := acked()
		if k >= num || expired.Load() || n.closed {
			return k, nil
		}
		n.cond.Wait()
	}
}

// Close stops the node: the feed, the link to a primary and every follower.
func (n *Node) Close() {
	n.mu.Lock()
	n.closed = true
	n.stopFeed()
	l := n.link
	n.link = nil
	for f := range n.followers {
		f.dropLocked()
	}
	n.mu.Unlock()
	n.cond.Broadcast()
	if l != nil {
		l.stop()
	}
}

// Follower is a replica served by this node, from its PSYNC on.
type Follower struct {
	n       *Node
	conn    net.Conn
	hangup  func()
	addr    string // the replica's IP, or what it announced
	port    int    // its listening port
	created time.Time

	// Guarded by n.mu.
	pos     int64 // the next offset to send
	ack     int64 // the offset acknowledged
	ackAt   int64 // when, Unix ns
	online  bool  // the full copy, if any, is sent: the follower streams
	dropped bool
}

// Attach serves a replica's PSYNC replid offset (SYNC is PSYNC ? -1) on conn, from a goroutine
// of its own: it answers +CONTINUE or +FULLRESYNC, sends a full copy when the backlog does
// not cover offset, then the stream, until the link fails or the follower is closed; then
// it calls hangup, which must close the connection. offset is what the replica processed
// plus one, as Redis's replicas send it. addr and port are the replica's, for INFO.
func (n *Node) Attach(conn net.Conn, hangup func(), replid string, offset int64, addr string, port int) *Follower {
	f := &Follower{n: n, conn: conn, hangup: hangup, addr: addr, port: port, created: time.Now()}
	n.mu.Lock()
	f.ackAt = n.o.Now()
	n.mu.Unlock()
	go f.run(replid, offset-1)
	return f
}

// Ack records the replica's REPLCONF ACK offset.
func (f *Follower) Ack(off int64) {
	n := f.n
	n.mu.Lock()
	if off > f.ack {
		f.ack = off
	}
	f.ackAt = n.o.Now()
	n.mu.Unlock()
	n.cond.Broadcast()
}

// Close drops the follower: its link is closed.
func (f *Follower) Close() {
	f.n.mu.Lock()
	f.dropLocked()
	f.n.mu.Unlock()
	f.n.cond.Broadcast()
}

func (f *Follower) dropLocked() {
	f.dropped = true
	delete(f.n.followers, f)
}

// canContinueLocked reports whether a replica of history replid that processed the stream
// up to processed can continue from the backlog.
func (n *Node) canContinueLocked(replid string, processed int64) bool {
	switch {
	case replid == n.id:
	case replid == n.id2 && processed <= n.off2-1:
	default:
		return false
	}
	return n.bl.covers(processed)
}

func (f *Follower) run(replid string, processed int64) {
	n := f.n
	defer f.hangup()
	defer f.Close()
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	var hdr []byte
	full := !n.canContinueLocked(replid, processed)
	if full {
		n.syncFull.Add(1)
		if replid != "?" {
			n.partialErr.Add(1)
		}
		n.startFeed()
		f.pos = n.bl.end()
		hdr = append(hdr, "+FULLRESYNC "+n.id+" "+itoa(f.pos)+"\r\n"...)
	} else {
		n.partialOK.Add(1)
		f.pos, f.online = processed, true
		f.ack = processed
		hdr = append(hdr, "+CONTINUE "+n.id+"\r\n"...)
	}
	n.followers[f] = struct{}{}
	n.mu.Unlock()
	if full {
		n.log.Info("replication: full copy to a replica", "replica", f.addr, "port", f.port, "asked", replid, "offset", processed+1)
	} else {
		n.log.Info("replication: a replica continues from the backlog", "replica", f.addr, "port", f.port, "offset", processed+1)
	}
	if _, err := f.write(hdr); err != nil {
		return
	}
	if full {
		if err := f.sendCopy(); err != nil {
			n.log.Warn("replication: full copy failed", "replica", f.addr, "err", err)
			return
		}
		n.mu.Lock()
		f.online = true
		n.mu.Unlock()
		n.log.Info("replication: full copy sent; streaming", "replica", f.addr, "port", f.port)
	}
	f.stream()
}

// sendCopy sends every key, a batch of keys at a time, then SYNCEND.
func (f *Follower) sendCopy() error {
	n := f.n
	var buf []byte
	keys := 0
	var cursor uint64
	for {
		buf = buf[:0]
		cursor = n.ks.Scan(cursor, 1024, n.o.Now(), func(key []byte, v keyspace.Value) {
			buf = appendPut(buf, key, v)
			keys++
		})
		if len(buf) > 0 {
			if _, err := f.write(buf); err != nil {
				return err
			}
		}
		if cursor == 0 {
			break
		}
		n.mu.Lock()
		dropped := f.dropped
		n.mu.Unlock()
		if dropped {
			return errors.New("dropped")
		}
	}
	_, err := f.write(appendCommand(buf[:0], cmdSyncEnd, []byte(itoa(int64(keys)))))
	return err
}

// stream sends the stream from f.pos on as it grows, until the link fails or f is dropped.
func (f *Follower) stream() {
	n := f.n
	var out []byte
	for {
		n.mu.Lock()
		for f.pos == n.bl.end() && !f.dropped {
			n.cond.Wait()
		}
		if f.dropped {
			n.mu.Unlock()
			return
		}
		if !n.bl.covers(f.pos) {
			n.mu.Unlock()
			n.log.Warn("replication: a replica fell behind the backlog; it will take a full copy", "replica", f.addr, "port", f.port)
			return
		}
		out = append(out[:0], n.bl.slice(f.pos, 256<<10)...)
		n.mu.Unlock()
		if _, err := f.write(out); err != nil {
			return
		}
		n.mu.Lock()
		f.pos += int64(len(out))
		n.mu.Unlock()
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Checkpoint is the node's place in its history for the persistence store to keep with
// the keyspace (persistence.Options.Checkpoint): "replid offset", where everything up to
// offset is in the keyspace when it is taken. During a full copy it is empty: a copy cut
// short by a crash must not be continued.
func (n *Node) Checkpoint() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l := n.link; l != nil && l.syncing.Load() {
		return []byte{}
	}
	return []byte(n.id + " " + itoa(n.bl.end()))
}

// Restore takes up the history a checkpoint names, after a restart with the keyspace stored
// with it, before the node serves anyone or follows a primary. A replica continues it as it was: its primary resends what came after, which
// the stored keyspace may already hold (each record is a key's whole state, so applying
// it again is harmless). A primary starts a new history that continues that one up to the
// offset, as after a promotion: its replicas that are no further continue from it, and
// those that got more than it stored before it stopped take a full copy.
func (n *Node) Restore(checkpoint []byte, replica bool) {
	id, offText, ok := strings.Cut(string(checkpoint), " ")
	off, err := strconv.ParseInt(offText, 10, 64)
	if !ok || err != nil || len(id) != 40 || off < 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.bl.reset(off)
	if replica {
		n.id = id
		return
	}
	n.id2, n.off2 = id, off+1
}

// write sends b to the replica; a replica that takes nothing for replTimeout is dropped.
func (f *Follower) write(b []byte) (int, error) {
	f.conn.SetWriteDeadline(time.Now().Add(replTimeout))
	return f.conn.Write(b)
}
