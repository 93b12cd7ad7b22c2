//go:build linux

package loadtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// drive runs every connection from one goroutine around epoll, as redis-benchmark does. A
// goroutine per connection would make the tool's own scheduling part of the latency it
// reports: on a machine whose cores it shares with the server, that added milliseconds to
// the tail of any server measured.
func drive(conns []net.Conn, l Load, start, end time.Time) (*Result, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("loadtest: epoll: %w", err)
	}
	defer unix.Close(epfd)
	ps := make([]*pipe, 0, len(conns))
	defer func() {
		for _, p := range ps {
			unix.Close(p.fd)
		}
	}()
	for i, c := range conns {
		fd, err := detach(c)
		if err != nil {
			for _, c := range conns[i:] {
				c.Close()
			}
			return nil, err
		}
		p := &pipe{fd: fd, rng: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano()))), buf: make([]byte, 0, 64<<10)}
		ps = append(ps, p)
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			return nil, fmt.Errorf("loadtest: epoll: %w", err)
		}
	}
	res := &Result{Elapsed: l.Duration}
	for _, p := range ps {
		if err := p.send(l); err != nil {
			return nil, err
		}
	}
	running := len(ps)
	events := make([]unix.EpollEvent, len(ps))
	for running > 0 {
		n, err := unix.EpollWait(epfd, events, int(time.Until(end.Add(10*time.Second))/time.Millisecond))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, fmt.Errorf("loadtest: epoll_wait: %w", err)
		case n == 0:
			return nil, fmt.Errorf("loadtest: no reply 10s after the end of the measurement")
		}
		for _, ev := range events[:n] {
			p := ps[ev.Fd]
			done, err := p.receive(l, start, end, res)
			if err != nil {
				return nil, err
			}
			if done {
				running--
				unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, p.fd, nil)
			}
		}
	}
	return res, nil
}

// pipe is one connection's state: the replies it still waits for and the bytes of them read.
type pipe struct {
	fd      int
	rng     *rand.Rand
	out     []byte
	buf     []byte // reply bytes read and not yet parsed
	waiting int    // replies still due for the pipeline in flight
	denied  uint64
	sent    time.Time
}

// send writes a new pipeline of l.Pipeline random requests.
func (p *pipe) send(l Load) error {
	p.out = p.out[:0]
	for range l.Pipeline {
		p.out = append(p.out, l.Requests[p.rng.IntN(len(l.Requests))]...)
	}
	p.waiting, p.denied = l.replies(), 0
	p.sent = time.Now()
	for b := p.out; len(b) > 0; {
		n, err := unix.Write(p.fd, b)
		switch {
		case err == unix.EAGAIN: // a pipeline larger than the socket buffer: wait for room
			unix.Poll([]unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLOUT}}, -1)
		case err == unix.EINTR:
		case err != nil:
			return fmt.Errorf("loadtest: write: %w", err)
		}
		if n > 0 {
			b = b[n:]
		}
	}
	return nil
}

// receive reads what arrived and parses the complete replies; when a pipeline is complete it
// counts it if it ended within [start, end), then sends the next one, or reports done after end.
func (p *pipe) receive(l Load, start, end time.Time, res *Result) (done bool, err error) {
	if len(p.buf) == cap(p.buf) {
		p.buf = append(p.buf, make([]byte, cap(p.buf))...)[:len(p.buf)]
	}
	n, err := unix.Read(p.fd, p.buf[len(p.buf):cap(p.buf)])
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("loadtest: reply: %w", err)
	case n == 0:
		return false, fmt.Errorf("loadtest: reply: the server closed the connection")
	}
	p.buf = p.buf[:len(p.buf)+n]
	at := 0
	for p.waiting > 0 {
		m, first, err := Scan(p.buf[at:])
		if err != nil {
			return false, fmt.Errorf("loadtest: reply: %w", err)
		}
		if m == 0 {
			break
		}
		at += m
		p.waiting--
		if first == 1 {
			p.denied++
		}
	}
	p.buf = p.buf[:copy(p.buf, p.buf[at:])]
	if p.waiting > 0 {
		return false, nil
	}
	if len(p.buf) > 0 {
		return false, fmt.Errorf("loadtest: reply: %d bytes more than the requests sent", len(p.buf))
	}
	now := time.Now()
	if !now.Before(start) && now.Before(end) {
		res.Requests += uint64(l.Pipeline)
		res.Denied += p.denied
		res.Latency.Record(now.Sub(p.sent))
	}
	if !now.Before(end) {
		return true, nil
	}
	return false, p.send(l)
}

// detach takes c's socket out of Go's poller: it returns a copy of the descriptor, still
// non-blocking, and closes c.
func detach(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("loadtest: %T has no file descriptor", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, dupErr := -1, error(nil)
	if err := raw.Control(func(f uintptr) { fd, dupErr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	c.Close()
	if dupErr != nil {
		return -1, fmt.Errorf("loadtest: dup: %w", dupErr)
	}
	return fd, nil
}
