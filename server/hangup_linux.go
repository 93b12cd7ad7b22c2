package server

import (
	"errors"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// watchHangup watches nc, the connection of a client that waits (blocking.go) and reads
// nothing meanwhile: the channel it returns is closed when the peer closes the
// connection, so that a client gone stops waiting, and takes nothing a push brings. It
// peeks, never reads: requests the client pipelined stay in the socket for later, and the
// watch ends at the first of them. stop ends the watch.
func watchHangup(nc net.Conn) (gone <-chan struct{}, stop func()) {
	ch := make(chan struct{})
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return ch, func() {} // a TLS connection: not watched
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return ch, func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var b [1]byte
		rc.Read(func(fd uintptr) bool {
			n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			switch {
			case errors.Is(err, unix.EAGAIN):
				return false // nothing yet: wait until the socket is readable
			case err != nil || n == 0:
				close(ch) // reset, or the end of the stream
			}
			return true
		})
	}()
	return ch, func() {
		nc.SetReadDeadline(time.Unix(1, 0)) // wakes the watch's Read
		<-done
		nc.SetReadDeadline(time.Time{})
	}
}
