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

// hangup ends c's connection from any goroutine; the goroutine serving c sees it closed.
func (c *client) hangup() { c.nc.Close() }

// recordLatency counts a call of command id that took d ns, in a shared recorder.
func (c *client) recordLatency(id int, d int64) { c.sharedRecorder().Record(id, d) }

func (c *client) runsFor(caller *client) {}

// loopLatencies has no event loops to read.
func (s *Server) loopLatencies(c *client, snaps []*latency.Snapshot, reset bool) {}
