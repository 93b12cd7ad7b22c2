//go:build !linux

package server

import "net"

// listenTCP listens on addr; the backlog is the system's (tcp-backlog is Linux's only).
func listenTCP(network, addr string, backlog int) (net.Listener, error) {
	return net.Listen(network, addr)
}
