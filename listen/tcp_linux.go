package listen

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// TCP listens on addr with a backlog of its own (tcp-backlog): Go's net.Listen always
// asks for the kernel's somaxconn. The socket is made, bound and put to listen here, as
// net.Listen does (SO_REUSEADDR, IPV6_V6ONLY for an IPv6 address, so that "bind 0.0.0.0 ::"
// works), then handed to the runtime's poller.
func TCP(network, addr string, backlog int) (net.Listener, error) {
	if backlog <= 0 {
		return net.Listen(network, addr)
	}
	ta, err := net.ResolveTCPAddr(network, addr)
	if err != nil {
		return nil, err
	}
	var sa unix.Sockaddr
	family := unix.AF_INET
	if ip4 := ta.IP.To4(); ip4 != nil || (ta.IP == nil && network != "tcp6") {
		s4 := &unix.SockaddrInet4{Port: ta.Port}
		if ip4 != nil {
			copy(s4.Addr[:], ip4)
		}
		sa = s4
	} else {
		family = unix.AF_INET6
		s6 := &unix.SockaddrInet6{Port: ta.Port}
		copy(s6.Addr[:], ta.IP.To16())
		if ta.Zone != "" {
			if ifi, err := net.InterfaceByName(ta.Zone); err == nil {
				s6.ZoneId = uint32(ifi.Index)
			}
		}
		sa = s6
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return nil, fmt.Errorf("listen %s: socket: %w", addr, err)
	}
	f := os.NewFile(uintptr(fd), "listener "+addr)
	defer f.Close() // net.FileListener has its own copy
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return nil, fmt.Errorf("listen %s: SO_REUSEADDR: %w", addr, err)
	}
	if family == unix.AF_INET6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return nil, fmt.Errorf("listen %s: IPV6_V6ONLY: %w", addr, err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: ta, Err: os.NewSyscallError("bind", err)}
	}
	if err := unix.Listen(fd, backlog); err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: ta, Err: os.NewSyscallError("listen", err)}
	}
	return net.FileListener(f)
}
