package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/httpapi"
	"github.com/throttledhq/throttled/listen"
	"github.com/throttledhq/throttled/ratelimit"
	"github.com/throttledhq/throttled/resp"
)

// The glue of http-port: package httpapi serves HTTP and asks httpDecider, which runs each
// decision as a CHECK command on a client of its own, through run as a RESP request goes:
// the same ACL checks, gate, commandstats, INFO throttle, TOPDENIED, deny events, SLOWLOG
// and MONITOR.

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
		s.http.api = httpapi.New(&httpDecider{s: s}, httpapi.Options{
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

// httpDecider runs HTTP decisions as CHECK commands.
type httpDecider struct {
	s       *Server
	clients sync.Pool // of *client, each with the scratch CHECK reuses
}

var (
	bCheck    = []byte("CHECK")
	bCost     = []byte("COST")
	bPeek     = []byte("PEEK")
	bRefund   = []byte("REFUND")
	bPriority = []byte("PRIORITY")
)

// Decide implements httpapi.Decider.
func (d *httpDecider) Decide(cred httpapi.Credentials, req httpapi.Request) (httpapi.Result, error) {
	s := d.s
	user, err := s.httpUser(cred)
	if err != nil {
		return httpapi.Result{}, err
	}
	c, _ := d.clients.Get().(*client)
	if c == nil {
		c = s.bareClient("", "http")
		c.id, c.door = s.nextID.Add(1), doorHTTP
	}
	defer d.clients.Put(c)
	c.raddr = req.Remote
	c.user.Store(user)
	names := strings.Join(req.Policies, ",")
	args := [][]byte{bCheck, []byte(names), []byte(req.Subject)}
	if req.Cost != 1 {
		args = append(args, bCost, strconv.AppendInt(nil, req.Cost, 10))
	}
	if req.Peek {
		args = append(args, bPeek)
	}
	if req.Refunding {
		args = append(args, bRefund, strconv.AppendInt(nil, req.Refund, 10))
	}
	if req.Priority != "" {
		args = append(args, bPriority, []byte(req.Priority))
	}
	c.AnyTier = req.AnyTier
	c.W.B = c.W.B[:0]
	c.startBatch()
	s.run(c, args)
	if c.mustSync {
		c.mustSync = false
		s.store.Wait() // the decision is in the log before it is told
	}
	res, err := parseCheckReply(c.W.B, len(req.Policies))
	if err != nil {
		return res, err
	}
	for i := range res.Policies {
		res.Policies[i].Policy = req.Policies[i]
		res.Policies[i].Window = s.rl.PolicyWindow(req.Policies[i], res.Policies[i].Limit)
	}
	return res, nil
}

// errBadReply: CHECK wrote what a decision never is (a bug).
var errBadReply = errors.New("CHECK's reply did not parse")

// parseCheckReply reads CHECK's RESP2 reply: one decision with its status, or the combined
// decision and each policy's; an error reply becomes an error httpapi maps to a status.
func parseCheckReply(b []byte, policies int) (httpapi.Result, error) {
	var res httpapi.Result
	if len(b) > 0 && b[0] == '-' {
		text := strings.TrimRight(string(b[1:]), "\r\n")
		switch {
		case strings.HasPrefix(text, "NOPERM"):
			return res, fmt.Errorf("%w: %s", httpapi.ErrForbidden, text)
		case strings.HasPrefix(text, "ERR "+ratelimit.ErrNoPolicy.Error()):
			return res, fmt.Errorf("%w: %s", httpapi.ErrUnknownPolicy, strings.TrimPrefix(text, "ERR "))
		case strings.HasPrefix(text, "ERR invalid"), strings.HasPrefix(text, "ERR CHECK policy"), strings.HasPrefix(text, "ERR syntax"),
			strings.HasPrefix(text, "ERR "+ratelimit.ErrSubjectTooLong.Error()):
			return res, fmt.Errorf("%w: %s", httpapi.ErrBadRequest, strings.TrimPrefix(text, "ERR "))
		}
		return res, errors.New(text)
	}
	r := decisionReader{resp.ReplyReader{B: b}}
	if policies > 1 {
		if n := r.Header('*'); n != int64(policies+1) {
			return res, errBadReply
		}
		res.Decision = r.decision()
	}
	res.Policies = make([]httpapi.PolicyDecision, policies)
	for i := range res.Policies {
		res.Policies[i].Decision = r.decision()
	}
	if policies == 1 {
		res.Decision = res.Policies[0].Decision
	}
	if r.Bad || len(r.B) != 0 {
		return res, errBadReply
	}
	return res, nil
}

// decisionReader reads CHECK's decisions from its RESP2 reply.
type decisionReader struct{ resp.ReplyReader }

// decision reads [limited, limit, remaining, retry_after_ms, reset_after_ms, (delay_ms,) status].
func (r *decisionReader) decision() httpapi.Decision {
	var d httpapi.Decision
	n := r.Header('*')
	if r.Bad || n < 6 || n > 7 {
		r.Bad = true
		return d
	}
	d.Limited = r.Header(':') == 1
	d.Limit = r.Header(':')
	d.Remaining = r.Header(':')
	d.RetryAfterMs = r.Header(':')
	d.ResetAfterMs = r.Header(':')
	if n == 7 {
		r.Header(':') // LEAKYBUCKET's delay_ms: no header says it
	}
	d.Status = string(r.Bulk())
	return d
}

// jsonRoute mounts envoyproxy/ratelimit's /json form (ratelimit-config) on http-port, for
// the users that may run CHECK; nil without ratelimit-config.
func (s *Server) jsonRoute() map[string]http.Handler {
	h := s.edgeJSON()
	if h == nil {
		return nil
	}
	check := s.commands["check"]
	// The decision applies the user's ACL to each descriptor's key (edgeDecider.Decide), so
	// the user Authorize let in goes with the request.
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, _ := httpapi.RequestCredentials(r)
		user, _ := s.httpUser(cred) // Authorize verified it; nil, refused, if it just changed
		h.ServeHTTP(w, r.WithContext(withEdgeUser(r.Context(), user)))
	})
	return map[string]http.Handler{"/json": httpapi.Authorize(inner, func(cred httpapi.Credentials) error {
		user, err := s.httpUser(cred)
		if err != nil {
			return err
		}
		if p := user.Perms(); !p.All && !p.CanRun(check.aclID) {
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
