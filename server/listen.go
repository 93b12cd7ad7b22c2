package server

import (
	"fmt"
	"net"

	"github.com/throttledhq/throttled/listen"
)

// listenAll opens a listener for each address of bind on port, and for unixsocket.
func (s *Server) listenAll() (net.Listener, error) {
	ln, err := listen.Open(listen.Config{Bind: s.cfg.Bind, Port: s.cfg.Port, Backlog: s.cfg.TCPBacklog,
		UnixSocket: s.cfg.UnixSocket, UnixSocketPerm: s.cfg.UnixSocketPerm,
		Skipped: func(addr string, err error) { s.log.Warn("optional bind address skipped", "addr", addr, "err", err) }})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return ln, nil
}
