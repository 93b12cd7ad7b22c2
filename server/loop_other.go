//go:build !linux

package server

import (
	"net"

	"throttled/latency"
)

// Event loops are built on epoll; elsewhere every client has a goroutine of its own.
type (
	loop     struct{}
	loopConn struct{}
)

func (s *Server) startLoops(n int) error  { return nil }
func (c *client) leaveLoop()              {}
func (s *Server) stopLoops()              {}
func (s *Server) attach(nc net.Conn) bool { return false }
func (c *client) onLoop() bool            { return false }
func (l *loop) published() netTally       { return netTally{} }

// hangup ends c's connection from any goroutine; the goroutine serving c sees it closed.
func (c *client) hangup() { c.nc.Close() }

// latencyRecorder is where c's commands count their latency.
func (c *client) latencyRecorder() *latency.Recorder {
	return c.s.latency.shared[c.id%int64(len(c.s.latency.shared))]
}
