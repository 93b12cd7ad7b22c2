//go:build !linux

package listen

import "net"

// TCP listens on addr; the backlog is the system's (tcp-backlog is Linux's only).
func TCP(network, addr string, backlog int) (net.Listener, error) {
	return net.Listen(network, addr)
}
