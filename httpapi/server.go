package httpapi

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Limits on what one client may hold.
const (
	maxBody        = 64 << 10 // a /v1/check body
	maxHeaderBytes = 16 << 10
	maxTier        = 256
	readHeader     = 10 * time.Second
	readTimeout    = 30 * time.Second
	writeTimeout   = 30 * time.Second
	// defaultIdle closes keep-alive connections idle this long when Options.IdleTimeout is 0
	// (RESP's timeout 0 keeps them forever; an HTTP peer is always expected to reconnect).
	defaultIdle = 10 * time.Minute
)

// Options configure a Server.
type Options struct {
	Log *slog.Logger
	// LegacyHeaders reports whether answers carry X-RateLimit-Limit, -Remaining and -Reset;
	// nil means they do.
	LegacyHeaders func() bool
	// MaxConns is the most connections served at once (maxclients); nil for no bound.
	MaxConns func() int64
	// Rejected is called for each connection refused past MaxConns; nil for none.
	Rejected func()
	// IdleTimeout closes keep-alive connections idle this long; 0 for defaultIdle.
	IdleTimeout time.Duration
	// TrustedProxies are the peers whose headers name a forward-auth subject or tier
	// (http-trusted-proxies); nil trusts nobody.
	TrustedProxies func() Proxies
	// Routes are more handlers by exact path, served on the same port with the same
	// bounds: envoyproxy/ratelimit's /json, for one. They do their own authentication.
	Routes map[string]http.Handler
}

// Server answers decisions over HTTP. It is an http.Handler, and Serve serves it on a
// listener with the bounds above.
type Server struct {
	d     Decider
	opt   Options
	log   *slog.Logger
	conns atomic.Int64 // connections open now

	mu      sync.Mutex // guards servers and closed
	servers []*http.Server
	closed  bool

	// gate is held shared by each request while it decides, and by Close to wait them out:
	// no decision runs on a server whose state is closing. done is set under it.
	gate sync.RWMutex
	done bool
}

// New returns a Server asking d for its decisions.
func New(d Decider, opt Options) *Server {
	log := opt.Log
	if log == nil {
		log = slog.Default()
	}
	return &Server{d: d, opt: opt, log: log}
}

// Connections returns the connections open now.
func (s *Server) Connections() int64 { return s.conns.Load() }

// Serving reports whether Serve is serving a listener.
func (s *Server) Serving() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && len(s.servers) > 0
}

// Serve serves ln, over TLS when conf is not nil, until Close; it returns nil after Close.
func (s *Server) Serve(ln net.Listener, conf *tls.Config) error {
	idle := s.opt.IdleTimeout
	if idle <= 0 {
		idle = defaultIdle
	}
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeader,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idle,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.servers = append(s.servers, hs)
	s.mu.Unlock()
	var l net.Listener = &limitListener{Listener: ln, s: s}
	if conf != nil {
		l = tls.NewListener(l, conf)
	}
	if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("httpapi: %w", err)
	}
	return nil
}

// Close stops serving, closes every connection and waits for the decisions under way;
// requests still arriving get 503.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for _, hs := range s.servers {
		hs.Close()
	}
	s.servers = nil
	s.mu.Unlock()
	s.gate.Lock()
	s.done = true
	s.gate.Unlock()
	return nil
}

// limitListener refuses connections past MaxConns: it closes them at once, as a RESP port
// past maxclients does (that one with an error line; HTTP has no place for one before a
// request).
type limitListener struct {
	net.Listener
	s *Server
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if max := l.s.opt.MaxConns; max != nil && l.s.conns.Load() >= max() {
			nc.Close()
			if l.s.opt.Rejected != nil {
				l.s.opt.Rejected()
			}
			continue
		}
		l.s.conns.Add(1)
		return &countedConn{Conn: nc, s: l.s}, nil
	}
}

// countedConn counts itself out when closed.
type countedConn struct {
	net.Conn
	s    *Server
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.s.conns.Add(-1) })
	return c.Conn.Close()
}
