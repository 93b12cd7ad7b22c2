//go:build !linux

package server

import (
	"net"

	"github.com/throttledhq/throttled/latency"
)

// Event loops are built on epoll; elsewhere every client has a goroutine of its own.
type (
	loop     struct{}
	loopConn struct{ lat *latency.Recorder } // always nil: no loop runs a client's commands
)

func (s *Server) startLoops(n int) error  { return nil }
func (c *client) leaveLoop()              {}
func (s *Server) stopLoops()              {}
func (s *Server) attach(nc net.Conn) bool { return false }
func (c *client) onLoop() bool            { return false }
func (c *client) loopID() int             { return -1 }
func (l *loop) published() netTally       { return netTally{} }
func (s *Server) trimQueryBuffers()       {}

// hangup ends c's connection from any goroutine; the goroutine serving c sees it closed.
func (c *client) hangup() { c.nc.Close() }

// loopLatencies has no event loops to read.
func (s *Server) loopLatencies(c *client, snaps []*latency.Snapshot, reset bool) {}
