//go:build linux

package server

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/throttledhq/throttled/latency"
	"github.com/throttledhq/throttled/resp"

	"github.com/throttledhq/throttled/upstream"
)

// An event loop serves many connections from one goroutine, as Redis's does: one epoll_wait
// finds every connection with requests waiting, then each gets one read, runs what it sent
// and gets one write. A goroutine per connection makes a third syscall per pipeline (the read
// that finds nothing before it parks) and leaves the scheduler to pick among goroutines; on a
// machine whose cores the clients share, that cost about a third of the throughput and made
// the latency tail several times longer.
type loop struct {
	s       *Server
	id      int // its place in Server.loops
	epfd    int
	wakefd  int // an eventfd: a client was added, or the loop must stop
	events  []unix.EpollEvent
	clients []*client           // by fd
	syncing []*client           // replies waiting for the store (see Server.syncWrites)
	calls   []upstream.Call     // parked in this round, for the upstream (upstream_linux.go)
	now     int64               // when epoll_wait last returned, Unix ns
	mono    int64               // the same moment on observer.mono's clock
	fresh   bool                // no client's commands have run since: mono is when the next batch starts
	lat     *latency.Recorder   // the latencies of its clients' commands: the loop's alone
	latLast []*latency.Snapshot // its last answer to a reader, for readers it keeps waiting; under mu
	ended   sync.Mutex          // guards lat once the loop has ended: readers read it themselves
	tally   netTally            // what its clients read and wrote, not yet published (netstats.go)
	net     netFigures          // the published tally
	done    chan struct{}

	// gen counts the goroutines that took the loop over from one held in a long command
	// (leaveLoop); a goroutine whose generation is past goes on with its command only.
	gen atomic.Uint64

	mu       sync.Mutex // guards incoming, ready, reads, stopping, trimDue and latLast
	trimDue  bool       // trimQueryBuffers asked for a look at idle clients' read buffers
	incoming []*client
	ready    []*client     // clients whose calls to the upstream are decided (upstream.go)
	reads    []*latRead    // readers' requests for the loop's latencies
	readWake chan struct{} // a request was queued: for a reader on the loop that waits on others
	stopping bool

	_ [cacheLine]byte // the loops are made one after another: keeps one's writes off the next's lines
}

// loopID is the place in Server.loops of the loop serving c; -1 for none.
func (c *client) loopID() int {
	if l := c.loop; l != nil {
		return l.id
	}
	return -1
}

// loopConn is what an event loop keeps of a client's socket.
type loopConn struct {
	loop     *loop
	fd       int
	fr       fdReader
	wpos     int        // bytes of the replies already written
	blocked  bool       // the socket was full: the rest of the replies wait for EPOLLOUT
	leaving  bool       // its command runs long: it leaves the loop once the command is done
	fdMu     sync.Mutex // guards fdClosed, and the client's nc, which handOff sets
	fdClosed bool       // so that hangup never shuts another socket with the same fd
	// lat is the recorder of the loop whose goroutine runs the client's commands now
	// (latency_linux.go): nil when none does, as when it leaves the loop; a script's
	// client takes its caller's.
	lat *latency.Recorder
}

// startLoops starts n event loops; with none, each client gets a goroutine of its own.
func (s *Server) startLoops(n int) error {
	for i := 0; i < n; i++ {
		l, err := newLoop(s)
		if err != nil {
			s.stopLoops()
			return err
		}
		l.id = len(s.loops)
		s.loops = append(s.loops, l)
		go l.run()
	}
	return nil
}

func newLoop(s *Server) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakefd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wakefd)
		return nil, err
	}
	return &loop{s: s, epfd: epfd, wakefd: wakefd, events: make([]unix.EpollEvent, 256), done: make(chan struct{}),
		lat: latency.NewRecorder(len(s.latency.byID)), readWake: make(chan struct{}, 1)}, nil
}

// onLoop reports whether an event loop serves c.
func (c *client) onLoop() bool { return c.loop != nil }

// published is what the loop's clients read and wrote, as of its last round.
func (l *loop) published() netTally { return l.net.load() }

// stopLoops closes every client of every loop and waits for the loops to end.
func (s *Server) stopLoops() {
	for _, l := range s.loops {
		l.mu.Lock()
		l.wakeLocked()
		l.stopping = true
		l.mu.Unlock()
	}
	for _, l := range s.loops {
		<-l.done
	}
}

// attach hands nc to an event loop as a new client; false leaves it to a goroutine of its
// own (a connection without a file descriptor, or no loops).
func (s *Server) attach(nc net.Conn) bool {
	if len(s.loops) == 0 {
		return false
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	fd, dupErr := -1, error(nil)
	if err := raw.Control(func(f uintptr) { fd, dupErr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || dupErr != nil {
		return false
	}
	// The copy shares the socket, already non-blocking; closing Go's own takes the
	// socket out of the runtime's poller, which would otherwise be woken for it too.
	// The client is complete before anyone can see it: CLIENT KILL may hang it up at once.
	c := s.makeClient(nc)
	nc.Close()
	c.nc, c.fd = nil, fd
	c.fr = fdReader{fd: fd}
	c.rd.Src = &c.fr
	if !s.register(c) {
		unix.Close(fd)
		return true
	}
	first := s.nextLoop.Add(1)
	for i := range uint64(len(s.loops)) {
		if s.loops[(first+i)%uint64(len(s.loops))].add(c) {
			return true
		}
	}
	c.closeFD()
	c.close()
	return true
}

// add queues c for the loop to take in; false when the loop has stopped.
func (l *loop) add(c *client) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping {
		return false
	}
	l.incoming = append(l.incoming, c)
	l.wakeLocked()
	return true
}

// wakeLocked makes epoll_wait return; the caller holds l.mu, so the eventfd is still open.
func (l *loop) wakeLocked() {
	if !l.stopping {
		var one = [8]byte{1}
		unix.Write(l.wakefd, one[:])
	}
}

// yieldEvery is how often a busy loop lets the process's other goroutines run, in ns.
const yieldEvery = 500_000

// run is the loop: wait for ready connections, serve each, then write the replies that
// waited for a sync.
func (l *loop) run() { l.runAs(l.gen.Load()) }

// runAs runs the loop as its generation gen, until it stops or another goroutine takes it
// over.
func (l *loop) runAs(gen uint64) {
	defer func() {
		if l.gen.Load() == gen {
			close(l.done)
		}
	}()
	yielded := int64(0)
	for {
		if l.mono-yielded > yieldEvery {
			// A loop that always has work never enters the scheduler, and the runtime
			// preempts it only every 10 ms: the replication feed, the disk writer and
			// the upstream's dispatcher would wait that long for a turn.
			runtime.Gosched()
			yielded = l.mono
		}
		n, err := l.wait()
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			l.s.log.Error("event loop: epoll_wait failed; its clients are closed", "err", err)
			l.closeAll()
			return
		}
		t := time.Now()
		l.now, l.mono, l.fresh = t.UnixNano(), l.s.obs.since(t), true
		for i := range l.events[:n] {
			ev := &l.events[i]
			fd := int(ev.Fd)
			if fd == l.wakefd {
				if !l.admit() {
					l.closeAll()
					return
				}
				continue
			}
			if fd < len(l.clients) && l.clients[fd] != nil {
				l.serve(l.clients[fd], ev.Events)
				if l.gen.Load() != gen {
					return // another goroutine serves the loop now (leaveLoop)
				}
			}
		}
		l.submitCalls()
		l.flushSyncing()
		if l.tally != (netTally{}) {
			l.net.add(l.tally)
			l.tally = netTally{}
		}
	}
}

// trimQueryBuffers asks every event loop to give back the read buffers of its clients idle
// for longer than Server.queryBufIdle (trimIdle), as Redis's clientsCron does: 16 KiB a client
// that waits. Called once a second.
func (s *Server) trimQueryBuffers() {
	s.mu.Lock()
	loops := s.loops
	s.mu.Unlock()
	for _, l := range loops {
		l.mu.Lock()
		l.trimDue = true
		l.wakeLocked()
		l.mu.Unlock()
	}
}

// trimIdle gives back the empty read buffers of the loop's idle clients; on its goroutine.
func (l *loop) trimIdle() {
	idle := time.Now().Add(-l.s.queryBufIdle).UnixNano()
	for _, c := range l.clients {
		if c == nil || c.blocked || c.leaving || c.lastActive.Load() > idle {
			continue
		}
		if c.rd.Release() {
			c.noteBufs(0)
		}
	}
}

// admit registers the clients attach queued; false when the loop must stop.
func (l *loop) admit() bool {
	var buf [8]byte
	unix.Read(l.wakefd, buf[:])
	l.mu.Lock()
	incoming, stopping, ready, trim := l.incoming, l.stopping, l.ready, l.trimDue
	l.incoming, l.ready, l.trimDue = nil, nil, false
	l.mu.Unlock()
	l.answerReads()
	if trim {
		l.trimIdle()
	}
	defer func() {
		for _, c := range ready {
			l.resumed(c)
		}
	}()
	for _, c := range incoming {
		for c.fd >= len(l.clients) {
			l.clients = append(l.clients, nil)
		}
		l.clients[c.fd] = c
		c.loop, c.lat = l, l.lat
		c.Slot = l.id % len(l.s.slots) // it counts where the loop's other clients do
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.fd)}
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			l.s.log.Warn("event loop: cannot watch a connection", "client", c.raddr, "err", err)
			l.close(c)
		}
	}
	return !stopping
}

// serve answers what c sent: replies still unwritten come first, then one read, then every
// complete request in the buffer, then one write of all the replies.
func (l *loop) serve(c *client, events uint32) {
	if c.blocked {
		if !l.write(c) {
			l.close(c)
			return
		}
		if c.blocked {
			return
		}
		if c.closing {
			l.close(c)
			return
		}
	}
	c.fr.budget = events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
	active := false
	for {
		if c.held != nil && !c.rd.Buffered() {
			c.letGo() // Next reads the socket: not while holding a shard (batch.go)
		}
		args, err := c.rd.Next()
		if err == resp.ErrWouldBlock {
			break
		}
		if err != nil {
			var pe resp.ProtocolError
			if errors.As(err, &pe) {
				c.W.ErrorText("ERR " + pe.Error())
			}
			c.closing = true // after the replies so far: the peer may have only half-closed
			break
		}
		if !active {
			c.lastActive.Store(l.now)
			if l.fresh { // the first batch since epoll_wait returned: its time is known
				c.Tick, l.fresh = l.mono, false
			} else {
				c.startBatch()
			}
			active = true
		}
		l.s.hold(c, args) // a hot key's requests share one lock of its shard (batch.go)
		l.s.run(c, args)
		if c.leaving || c.handoff {
			c.letGo()
			if c.leaving {
				l.leave(c)
			} else {
				l.handOff(c, args)
			}
			return
		}
		if c.closing {
			break
		}
		if len(c.W.B) > resp.KeepWriteBuf && !c.mustSync && len(c.up.calls) == 0 {
			c.letGo()
			if !l.write(c) {
				l.close(c)
				return
			}
			if c.blocked {
				return
			}
		}
	}
	c.letGo()
	if len(c.up.calls) > 0 {
		if c.up.pending.Load() != 0 {
			return // parked: resumed writes the replies once the upstream has decided
		}
		c.spliceUpstream()
	}
	if c.mustSync {
		l.syncing = append(l.syncing, c)
		return
	}
	l.finish(c)
}

// leaveLoop is called from inside c's command when it turns out long (a script past
// busy-reply-threshold): a new goroutine takes c's loop over and serves its other
// clients (a BUSY reply, SCRIPT KILL) while this one, stuck in the command, goes on with
// it; once it is done, c leaves the loop for a goroutine of its own (leave) and this one
// ends. Nothing to do for a client no loop serves.
func (c *client) leaveLoop() {
	l := c.loop
	if l == nil || c.leaving {
		return
	}
	c.leaving, c.lat = true, nil
	l.clients[c.fd] = nil
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	gen := l.gen.Add(1)
	go l.runAs(gen)
}

// leave ends c's leaving: its replies so far are written, and a goroutine of its own goes
// on with the requests it sent after.
func (l *loop) leave(c *client) {
	c.foldNet() // into c's own figures: the loop's tally is another goroutine's now
	c.leaving = false
	c.W.B = c.W.B[c.wpos:]
	c.wpos = 0
	if !l.release(c) {
		return
	}
	if !c.flush() {
		c.nc.Close()
		c.close()
		return
	}
	go c.serve(nil)
}

// handOff moves c off the loop, to a goroutine of its own, for the command in args that
// needs one (command.detach). The loop lets go of the socket, which becomes a net.Conn; the
// replies so far, the request and the requests read after it go with c, in order; c stays
// one of the server's clients throughout. The arguments are copied: they point into the
// reader's buffer, which the goroutine reads on into.
func (l *loop) handOff(c *client, args [][]byte) {
	l.tally.plus(c.takeNet())
	c.handoff = false
	l.clients[c.fd] = nil
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	req := make([][]byte, len(args))
	for i, a := range args {
		req[i] = bytes.Clone(a)
	}
	c.W.B = c.W.B[c.wpos:]
	c.wpos = 0
	if l.release(c) {
		go c.serve(req)
	}
}

// release turns c's socket, which the loop no longer watches, into a net.Conn; false when
// that fails and c is gone.
func (l *loop) release(c *client) bool {
	// FileConn takes a duplicate of the descriptor into the runtime's poller; the loop's
	// own is closed. A hangup meanwhile shut the socket both share, or closes the new conn.
	f := os.NewFile(uintptr(c.fd), "client")
	nc, err := net.FileConn(f)
	c.fdMu.Lock()
	f.Close()
	c.fdClosed = true
	if err == nil {
		c.nc = nc
	}
	c.fdMu.Unlock()
	if err != nil {
		l.s.log.Warn("event loop: cannot hand a connection over", "client", c.raddr, "err", err)
		c.close()
		return false
	}
	c.loop, c.lat = nil, nil
	c.rd.Src = nc
	return true
}

// finish writes c's replies and closes c if it asked to be closed once they are out.
func (l *loop) finish(c *client) {
	if !l.write(c) || c.closing && !c.blocked {
		l.close(c)
	}
}

// flushSyncing waits for one batch of the store that covers every client's writes in this
// round (written to the log, and with appendfsync always synced), then writes their
// replies: group commit.
func (l *loop) flushSyncing() {
	if len(l.syncing) == 0 {
		return
	}
	l.s.waitStore()
	for i, c := range l.syncing {
		c.mustSync = false
		l.finish(c)
		l.syncing[i] = nil
	}
	l.syncing = l.syncing[:0]
}

// write sends c's pending replies; when the socket is full, the rest waits for EPOLLOUT and
// c's requests wait with it. False when the connection is gone.
func (l *loop) write(c *client) bool {
	pending := len(c.W.B)
	for c.wpos < len(c.W.B) {
		n, err := rawWrite(c.fd, c.W.B[c.wpos:])
		if n > 0 {
			c.wpos += n
			l.tally.out += int64(n)
			l.tally.writes++
		}
		switch err {
		case nil:
		case unix.EINTR:
		case unix.EAGAIN:
			return c.blocked || l.watch(c, true)
		default:
			return false
		}
	}
	c.wpos = 0
	if cap(c.W.B) > resp.KeepWriteBuf {
		c.W.B = nil
	} else {
		c.W.B = c.W.B[:0]
	}
	l.tally.in += c.rd.NRead
	l.tally.reads += c.rd.Reads
	c.rd.NRead, c.rd.Reads = 0, 0
	c.noteBufs(pending)
	if c.blocked {
		return l.watch(c, false)
	}
	return true
}

// watch switches c between waiting to read and, while replies are held up, waiting to write.
func (l *loop) watch(c *client, out bool) bool {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.fd)}
	if out {
		ev.Events = unix.EPOLLOUT
	}
	c.blocked = out
	return unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev) == nil
}

// close ends c's connection and forgets it.
func (l *loop) close(c *client) {
	l.tally.plus(c.takeNet())
	l.clients[c.fd] = nil
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, c.fd, nil)
	c.closeFD()
	c.close()
}

// closeFD closes c's socket, so that hangup no longer touches the descriptor.
func (c *client) closeFD() {
	c.fdMu.Lock()
	c.fdClosed = true
	unix.Close(c.fd)
	c.fdMu.Unlock()
}

// closeAll closes every client of the loop and the loop's own descriptors; attach sends
// no more clients once it has begun.
func (l *loop) closeAll() {
	l.mu.Lock()
	l.stopping = true
	l.mu.Unlock()
	l.admit()
	for _, c := range l.clients {
		if c != nil {
			l.close(c)
		}
	}
	unix.Close(l.epfd)
	unix.Close(l.wakefd)
}

// hangup ends c's connection from any goroutine; the goroutine or loop serving c sees the
// socket closed and lets c go.
func (c *client) hangup() {
	c.fdMu.Lock() // a loop may be handing c over: c.nc is set under it
	defer c.fdMu.Unlock()
	if c.nc != nil {
		c.nc.Close()
		return
	}
	if !c.fdClosed {
		unix.Shutdown(c.fd, unix.SHUT_RDWR)
	}
}

// fdReader reads a non-blocking socket at most once per readiness event: a second read in
// the same round would find nothing and cost a syscall.
type fdReader struct {
	fd     int
	budget bool
}

func (f *fdReader) Read(p []byte) (int, error) {
	if !f.budget {
		return 0, resp.ErrWouldBlock
	}
	f.budget = false
	for {
		n, err := rawRead(f.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, resp.ErrWouldBlock
		case err != nil:
			return 0, err
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// The loop's sockets never block, so their reads and writes skip the runtime's bookkeeping
// for a syscall that may block (entersyscall, exitsyscall): a tenth of the loop's time.

func rawRead(fd int, p []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawWrite(fd int, p []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// wait returns the ready events: a look that cannot block first, and only when nothing is
// ready, a wait that tells the runtime it may block.
func (l *loop) wait() (int, error) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), 0, 0, 0)
	if e == 0 && n > 0 {
		return int(n), nil
	}
	return unix.EpollWait(l.epfd, l.events, -1)
}
