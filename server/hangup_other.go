//go:build !linux

package server

import "net"

// watchHangup does not watch elsewhere than on Linux: a client gone while it waits is seen
// when its reply cannot be written.
func watchHangup(nc net.Conn) (gone <-chan struct{}, stop func()) {
	return make(chan struct{}), func() {}
}
