package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/httpapi"
	"github.com/throttledhq/throttled/listen"
)

// The glue of http-port: package httpapi serves HTTP and turns each decision into a CHECK
// command (httpapi.CheckDecider), which httpRunner runs on a client of its own, through run
// as a RESP request goes: the same ACL checks, gate, commandstats, INFO throttle, TOPDENIED,
// deny events, SLOWLOG and MONITOR.

// httpFront is the state of http-port.
type httpFront struct {
	api     *httpapi.Server                 // nil when http-port is 0
	legacy  atomic.Bool                     // http-legacy-headers
	proxies atomic.Pointer[httpapi.Proxies] // http-trusted-proxies
}

// init takes cfg's http-trusted-proxies, which Validate has read.
func (f *httpFront) init(cfg Config) {
	p, _ := httpapi.ParseProxies(cfg.HTTPTrustedProxies)
	f.proxies.Store(&p)
}

// trustedProxies is httpapi.Options.TrustedProxies.
func (f *httpFront) trustedProxies() httpapi.Proxies { return *f.proxies.Load() }

// startHTTP listens on http-port when it is set.
func (s *Server) startHTTP() error {
	s.http.legacy.Store(s.cfg.HTTPLegacyHeaders)
	if s.cfg.HTTPPort == 0 {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(listen.First(s.cfg.Bind), strconv.Itoa(s.cfg.HTTPPort)))
	if err != nil {
		return fmt.Errorf("server: http-port: %w", err)
	}
	go s.ServeHTTPAPI(ln)
	return nil
}

// ServeHTTPAPI serves HTTP decisions on ln (over TLS with http-tls) until Close.
func (s *Server) ServeHTTPAPI(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	if s.http.api == nil {
		s.http.legacy.Store(s.cfg.HTTPLegacyHeaders)
		s.http.api = httpapi.New(s.newHTTPDecider(), httpapi.Options{
			Log:            s.log.With("listener", "http"),
			LegacyHeaders:  s.http.legacy.Load,
			TrustedProxies: s.http.trustedProxies,
			MaxConns:       s.maxClients.Load,
			Rejected:       func() { s.stats.rejected.Add(1) },
			IdleTimeout:    time.Duration(s.conns.timeout.Load()) * time.Second,
			Routes:         s.jsonRoute(),
		})
	}
	api := s.http.api
	s.mu.Unlock()
	conf := s.httpTLSConfig()
	s.log.Info("serving HTTP decisions", "addr", ln.Addr().String(), "tls", conf != nil)
	return api.Serve(ln, conf)
}

// httpTLSConfig is http-port's TLS configuration: the tls-* files', reloaded as tls-port's.
func (s *Server) httpTLSConfig() *tls.Config {
	if !s.cfg.HTTPTLS || s.tlsFiles == nil {
		return nil
	}
	return s.serverTLSConfig()
}

// httpReady is /readyz's word on http-port: serving when it is configured.
func (s *Server) httpReady() bool {
	s.mu.Lock()
	api := s.http.api
	s.mu.Unlock()
	return s.cfg.HTTPPort == 0 || api != nil && api.Serving()
}

func (s *Server) httpParams() []*param {
	def := DefaultConfig()
	return []*param{
		{name: "http-port", get: func() string { return strconv.Itoa(s.cfg.HTTPPort) }, def: "0", file: plainValue},
		{name: "http-tls", get: func() string { return yesNo(s.cfg.HTTPTLS) }, def: yesNo(def.HTTPTLS), file: plainValue},
		{name: "http-legacy-headers", get: func() string { return yesNo(s.http.legacy.Load()) }, def: yesNo(def.HTTPLegacyHeaders),
			file: plainValue, set: func(v string) (func(), error) {
				on, err := parseYesNo(v)
				if err != nil {
					return nil, fmt.Errorf("http-legacy-headers: %w", err)
				}
				return func() { s.http.legacy.Store(on) }, nil
			}},
		{name: "http-trusted-proxies", get: func() string { return s.http.trustedProxies().String() }, def: def.HTTPTrustedProxies,
			file: list, set: func(v string) (func(), error) {
				p, err := httpapi.ParseProxies(v)
				if err != nil {
					return nil, fmt.Errorf("http-trusted-proxies: %w", err)
				}
				return func() { s.http.proxies.Store(&p) }, nil
			}},
	}
}

// httpRunner runs HTTP decisions' CHECK commands (httpapi.RunFunc) on clients of its own,
// each with the scratch CHECK reuses.
type httpRunner struct {
	s       *Server
	clients sync.Pool // of *client
}

// newHTTPDecider is http-port's httpapi.Decider.
func (s *Server) newHTTPDecider() *httpapi.CheckDecider {
	r := &httpRunner{s: s}
	return httpapi.NewCheckDecider(r.run, s.rl.PolicyWindow)
}

// run implements httpapi.RunFunc.
func (r *httpRunner) run(cred httpapi.Credentials, remote string, anyTier bool, args [][]byte, reply []byte) ([]byte, error) {
	s := r.s
	user, err := s.httpUser(cred)
	if err != nil {
		return reply, err
	}
	c, _ := r.clients.Get().(*client)
	if c == nil {
		c = s.bareClient("", "http")
		c.id, c.door = s.nextID.Add(1), doorHTTP
	}
	defer r.clients.Put(c)
	c.raddr = remote
	c.user.Store(user)
	c.AnyTier = anyTier
	c.W.B = c.W.B[:0]
	c.startBatch()
	s.run(c, args)
	if c.mustSync {
		c.mustSync = false
		s.store.Wait() // the decision is in the log before it is told
	}
	return append(reply, c.W.B...), nil
}

// jsonRoute mounts envoyproxy/ratelimit's /json form (ratelimit-config) on http-port, for
// the users that may run CHECK; nil without ratelimit-config.
func (s *Server) jsonRoute() map[string]http.Handler {
	if s.edge.rls == nil {
		return nil
	}
	check := s.commands["check"]
	return map[string]http.Handler{"/json": s.edge.rls.JSONHandler(s.httpUser, func(u *acl.User) error {
		if p := u.Perms(); !p.All && !p.CanRun(check.aclID) {
			return fmt.Errorf("%w: this user has no permissions to run the 'check' command", httpapi.ErrForbidden)
		}
		return nil
	})}
}

// httpUser is the ACL user an HTTP request's credentials name: the default user without
// any, unless a password is set.
func (s *Server) httpUser(cred httpapi.Credentials) (*acl.User, error) {
	if !cred.Given {
		if s.passwordSet() {
			return nil, fmt.Errorf("%w: Basic credentials or a bearer token", httpapi.ErrUnauthorized)
		}
		return s.acl.Default(), nil
	}
	name := cred.User
	if name == "" {
		name = "default"
	}
	u, err := s.authenticate([]byte(name), []byte(cred.Password))
	if err != nil {
		return nil, fmt.Errorf("%w: %s", httpapi.ErrUnauthorized, command.ErrorText(err))
	}
	return u, nil
}
