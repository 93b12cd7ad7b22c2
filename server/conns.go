package server

import (
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"time"
)

// Connection limits with Redis's names: timeout closes idle clients, tcp-keepalive has the
// kernel probe idle peers so that a vanished one is noticed, protected-mode refuses clients
// from other hosts while the default user has no password.

// errDenied is Redis's refusal of a client from another host in protected mode.
const errDenied = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. " +
	"If you want to connect from external computers to Redis you may adopt one of the following solutions: " +
	"1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. " +
	"2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. " +
	"3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. " +
	"4) Set up an authentication password for the default user. " +
	"NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// connLimits are the options CONFIG SET changes at run time.
type connLimits struct {
	timeout       atomic.Int64 // seconds a client may stay idle; 0 never closes one
	keepAlive     atomic.Int64 // seconds between TCP keepalive probes; 0 turns them off
	protectedMode atomic.Bool
}

func (s *Server) initConns() {
	s.conns.timeout.Store(int64(s.cfg.Timeout))
	s.conns.keepAlive.Store(int64(s.cfg.TCPKeepAlive))
	s.conns.protectedMode.Store(s.cfg.ProtectedMode)
	limits := defaultOutputLimits
	if s.cfg.ClientOutputBufferLimit != "" {
		limits, _ = parseOutputLimits(s.cfg.ClientOutputBufferLimit, limits) // Validate checked it
	}
	s.outputLimits.Store(&limits)
	go s.idleLoop()
}

// admitConn sets up a new connection, or refuses it (protected mode): then it has written
// the refusal and closed nc, and returns false.
func (s *Server) admitConn(nc net.Conn) bool {
	if tc, ok := nc.(*net.TCPConn); ok {
		if ka := s.conns.keepAlive.Load(); ka > 0 {
			tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: time.Duration(ka) * time.Second,
				Interval: time.Duration(ka) * time.Second / 3, Count: 3})
		} else {
			tc.SetKeepAlive(false)
		}
	}
	if s.deniedByProtectedMode(nc.RemoteAddr()) {
		nc.SetWriteDeadline(time.Now().Add(time.Second))
		nc.Write([]byte(errDenied))
		nc.Close()
		return false
	}
	return true
}

// deniedByProtectedMode reports whether protected mode refuses a client from addr: it is on,
// the default user needs no password, and addr is not a loopback address.
func (s *Server) deniedByProtectedMode(addr net.Addr) bool {
	if !s.conns.protectedMode.Load() || !s.acl.DefaultOpen() {
		return false
	}
	tcp, ok := addr.(*net.TCPAddr)
	return ok && !tcp.IP.IsLoopback()
}

// idleCheck is how often idleLoop looks for idle clients.
const idleCheck = time.Second

// idleLoop closes the clients idle for longer than timeout, as Redis's clientsCron: not
// replicas, whose primary streams to them, nor subscribers, which wait for messages.
func (s *Server) idleLoop() {
	t := time.NewTicker(idleCheck)
	defer t.Stop()
	for {
		select {
		case <-s.shutdown:
			return
		case <-t.C:
		}
		s.closeIdle(time.Now())
	}
}

// closeIdle closes the clients idle at now for longer than timeout; it returns how many.
func (s *Server) closeIdle(now time.Time) int {
	timeout := s.conns.timeout.Load()
	if timeout <= 0 {
		return 0
	}
	closed := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		if k := clientKind(c.kind.Load()); k == kindReplica || k == kindPubSub {
			continue
		}
		if now.UnixNano()-c.lastActive.Load() > timeout*int64(time.Second) {
			c.hangup()
			closed++
		}
	}
	return closed
}

// parseYesNo reads a CONFIG SET boolean.
func parseYesNo(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "yes":
		return true, nil
	case "no":
		return false, nil
	}
	return false, errors.New("argument must be 'yes' or 'no'")
}
