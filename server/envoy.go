package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/envoyrls"
	"github.com/throttledhq/throttled/listen"
	"github.com/throttledhq/throttled/policy"
	"github.com/throttledhq/throttled/ratelimit"
)

// Envoy's rate-limit service: package envoyrls serves it and holds its configuration; the
// server only lends it CHECK's path (edgeDecider) and keeps the policies the configuration
// makes beside the config file's (policies.edge), so that POLICY.GET, overrides and lists
// apply to them. Each gRPC request is authenticated first (grpcauth.go: the authorization
// metadata, or a client certificate); its decision runs on a client of its own as that user,
// as a CHECK of its descriptors' policies under the user's ACL, and counts as one in INFO,
// commandstats, the metrics, TOPDENIED and the deny events.

// rlsWatchPeriod is how often the configuration's files are looked at for a change.
const rlsWatchPeriod = time.Second

// edge is the state of the gRPC front door.
type edge struct {
	rls  *envoyrls.Service // nil without ratelimit-config
	stop chan struct{}     // closed by Close: stops the watcher
	mu   sync.Mutex        // guards grpc
	grpc []*grpc.Server
	// creds are the authorization values verified lately (grpcauth.go).
	creds acl.Verified
}

// edgeDecider decides for envoyrls through checkPolicies.
type edgeDecider struct {
	s       *Server
	check   *cmdEntry
	clients sync.Pool // of *client
}

// openEdge loads ratelimit-config when it is set; its errors stop the start.
func (s *Server) openEdge() error {
	s.edge.stop = make(chan struct{})
	if s.cfg.RateLimitConfig == "" {
		return nil
	}
	d := &edgeDecider{s: s, check: s.findCommand("check")}
	d.clients.New = func() any {
		c := s.bareClient("grpc", "grpc")
		c.AnyTier = true // the tier comes from a descriptor, which a limit need not name
		return c
	}
	rls, err := envoyrls.New(s.cfg.RateLimitConfig, d, s.log)
	if err != nil {
		return fmt.Errorf("ratelimit-config: %w", err)
	}
	s.edge.rls = rls
	go rls.Watch(s.edge.stop, rlsWatchPeriod)
	return nil
}

// startEdge listens on grpc-port when it is set.
func (s *Server) startEdge() error {
	if s.cfg.GRPCPort == 0 {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(listen.First(s.cfg.Bind), strconv.Itoa(s.cfg.GRPCPort)))
	if err != nil {
		return fmt.Errorf("server: grpc-port: %w", err)
	}
	go func() {
		if err := s.ServeGRPC(ln); err != nil {
			s.log.Error("gRPC listener failed", "err", err)
		}
	}()
	return nil
}

// ServeGRPC serves Envoy's rate-limit service and gRPC health checking on ln until Close,
// over TLS with the tls-* files when grpc-tls is yes; grpcAuth finds each request's user.
func (s *Server) ServeGRPC(ln net.Listener) error {
	if s.edge.rls == nil {
		ln.Close()
		return errors.New("server: ServeGRPC: ratelimit-config is not set")
	}
	// As on the RESP port: at most maxclients connections (more wait to be accepted, as
	// gRPC clients retry rather than read an error), and idle ones closed after timeout.
	ln = netutil.LimitListener(ln, int(max(s.maxClients.Load(), 1)))
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(1 << 20),
		grpc.MaxConcurrentStreams(1024),
		grpc.ConnectionTimeout(10 * time.Second),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(s.grpcAuth),
	}
	if t := s.conns.timeout.Load(); t > 0 {
		opts = append(opts, grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: time.Duration(t) * time.Second}))
	}
	if s.cfg.GRPCTLS {
		if s.tlsFiles == nil {
			ln.Close()
			return errors.New("server: grpc-tls: tls-cert-file and tls-key-file are not set")
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.grpcTLSConfig())))
	}
	g := grpc.NewServer(opts...)
	s.edge.rls.Register(g)
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.edge.mu.Lock()
		s.edge.grpc = append(s.edge.grpc, g)
		s.edge.mu.Unlock()
	}
	s.mu.Unlock()
	if closed {
		ln.Close()
		return nil
	}
	s.log.Info("serving Envoy's rate-limit service", "addr", ln.Addr().String(), "tls", s.cfg.GRPCTLS)
	if err := g.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("server: grpc: %w", err)
	}
	return nil
}

// grpcTLSConfig is serverTLSConfig with HTTP/2's ALPN name, which gRPC clients ask for.
func (s *Server) grpcTLSConfig() *tls.Config {
	base := s.serverTLSConfig()
	get := base.GetConfigForClient
	base.NextProtos = []string{"h2"}
	base.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		c, err := get(h)
		if c == nil || err != nil {
			return c, err
		}
		c = c.Clone()
		c.NextProtos = []string{"h2"}
		return c, nil
	}
	return base
}

// serving reports whether a gRPC server has started serving.
func (e *edge) serving() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.grpc) > 0
}

// closeEdge stops the gRPC servers (the calls under way end first, for a second at most)
// and the watcher.
func (s *Server) closeEdge() {
	if s.edge.stop == nil {
		return
	}
	close(s.edge.stop)
	if s.edge.rls != nil {
		s.edge.rls.Shutdown()
	}
	s.edge.mu.Lock()
	servers := s.edge.grpc
	s.edge.grpc = nil
	s.edge.mu.Unlock()
	for _, g := range servers {
		done := make(chan struct{})
		go func() { g.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
			g.Stop()
		}
	}
}

// edgeJSON is envoyproxy/ratelimit's /json form of ShouldRateLimit, for http-port to mount at
// /json; nil without ratelimit-config.
func (s *Server) edgeJSON() http.Handler {
	if s.edge.rls == nil {
		return nil
	}
	return http.HandlerFunc(s.edge.rls.ServeJSON)
}

// ReloadRateLimitConfig reads ratelimit-config again (SIGHUP). With an error, naming the
// file and the line, the configuration in force stays.
func (s *Server) ReloadRateLimitConfig() error {
	if s.edge.rls == nil {
		return nil
	}
	return s.edge.rls.Reload()
}

// edgeParams are grpc-port's and ratelimit-config's entries in the parameter table.
func (s *Server) edgeParams() []*param {
	return []*param{
		{name: "grpc-port", get: func() string { return strconv.Itoa(s.cfg.GRPCPort) }, def: "0", file: plainValue},
		{name: "grpc-tls", get: func() string { return yesNo(s.cfg.GRPCTLS) }, def: "no", file: plainValue},
		{name: "ratelimit-config", get: func() string { return s.cfg.RateLimitConfig }, def: "", file: quoted},
	}
}

// SetPolicies makes t the policies of ratelimit-config (envoyrls.Decider).
func (d *edgeDecider) SetPolicies(t policy.Table) {
	d.s.rl.SetEdgePolicies(t)
}

// Decide runs items as one CHECK (envoyrls.Decider), counted under grpc-port's door, or
// http-port's for the /json form.
func (d *edgeDecider) Decide(ctx context.Context, items []envoyrls.Item) ([]envoyrls.Decision, error) {
	s := d.s
	if s.up != nil {
		return nil, ratelimit.ErrCheckUpstream
	}
	cmd := d.check
	c := d.clients.Get().(*client)
	defer d.clients.Put(c)
	c.door = doorGRPC
	if envoyrls.OverHTTP(ctx) {
		c.door = doorHTTP
	}
	user := edgeUser(ctx)
	if user == nil {
		return nil, fmt.Errorf("%w: no user authenticated the request", envoyrls.ErrUnauthenticated)
	}
	c.user.Store(user)
	if err := s.checkEdgeACL(c, cmd, items); err != nil {
		c.counts(cmd).rejected.Add(1)
		c.stat().errors.Add(1)
		return nil, err
	}
	if err := s.checkWrite(c, cmd); err != nil {
		c.counts(cmd).rejected.Add(1)
		c.stat().errors.Add(1)
		return nil, err
	}
	// maxmemory as CHECK's denyoom has it over RESP (memory.go): evict first, or decide
	// without creating keys.
	c.NoRoom = s.mem.full.Load() && s.makeRoom() != nil
	c.stat().commands.Add(1)
	c.Tick = s.obs.mono()
	start := c.Tick
	c.lastCmd.Store(cmd)
	edge := c.edgeItems[:0]
	for _, it := range items {
		edge = append(edge, ratelimit.EdgeItem{Policy: it.Policy, Subject: it.Subject, Cost: it.Cost, Priority: it.Priority, Refund: it.Refund})
	}
	c.edgeItems = edge
	results, err := s.rl.Edge(&c.Ctx, edge, c.edgeResults)
	c.edgeResults = results
	// timed measures to the same end as the check here, or a call that crossed the slowlog
	// threshold between the two would reach SLOWLOG without its arguments (and panic there).
	c.ended = s.obs.mono()
	args := checkOnly // built only when SLOWLOG or MONITOR will show them
	if t := s.obs.slowerThan.Load(); s.obs.monitoring.Load() != 0 || t >= 0 && c.ended-start >= t*1000 {
		args = edgeArgs(items)
	}
	s.timed(c, cmd, args, start)
	if err != nil {
		c.counts(cmd).failed.Add(1)
		c.stat().errors.Add(1)
		return nil, err
	}
	out := make([]envoyrls.Decision, len(items))
	for i, r := range results {
		out[i] = envoyrls.Decision{Limited: r.Limited, Limit: r.Limit, Remaining: r.Remaining,
			RetryMs: r.RetryMs, ResetMs: r.ResetMs, Status: r.Status}
	}
	return out, nil
}

// checkOnly is a gRPC decision's arguments where none were built: a MONITOR that started
// while it ran shows it as CHECK alone. Never written.
var checkOnly = [][]byte{bCheck}

// edgeArgs is a gRPC decision as SLOWLOG and MONITOR show it: CHECK, the policies, the
// subjects, the costs (a refund's negative) and the tiers, each list joined by ','.
func edgeArgs(items []envoyrls.Item) [][]byte {
	var names, subjects, costs []string
	for _, it := range items {
		names = append(names, it.Policy)
		subjects = append(subjects, it.Subject)
		cost := it.Cost
		if it.Refund {
			cost = -cost
		}
		costs = append(costs, strconv.FormatInt(cost, 10))
	}
	args := [][]byte{[]byte("CHECK"), []byte(strings.Join(names, ",")), []byte(strings.Join(subjects, ","))}
	if slices.ContainsFunc(items, func(it envoyrls.Item) bool { return it.Cost != 1 || it.Refund }) {
		args = append(args, []byte("COST"), []byte(strings.Join(costs, ",")))
	}
	if slices.ContainsFunc(items, func(it envoyrls.Item) bool { return it.Priority != "" }) {
		var tiers []string
		for _, it := range items {
			tiers = append(tiers, it.Priority)
		}
		args = append(args, []byte("PRIORITY"), []byte(strings.Join(tiers, ",")))
	}
	return args
}
