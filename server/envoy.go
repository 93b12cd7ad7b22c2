package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/envoyrls"
	"github.com/throttledhq/throttled/listen"
	"github.com/throttledhq/throttled/ratelimit"
)

// Envoy's rate-limit service: package envoyrls serves it and holds its configuration; the
// server only lends it CHECK's path (edgeDecider) and keeps the policies the configuration
// makes beside the config file's (policies.edge), so that POLICY.GET, overrides and lists
// apply to them. Each gRPC request is authenticated first (envoyrls.Auth: the authorization
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
	auth *envoyrls.Auth // finds each gRPC request's user
}

// edgeDecider decides for envoyrls (envoyrls.CheckFunc).
type edgeDecider struct {
	s       *Server
	check   *cmdEntry
	clients sync.Pool // of *client
}

// openEdge loads ratelimit-config when it is set; its errors stop the start.
func (s *Server) openEdge() error {
	s.edge.stop = make(chan struct{})
	s.edge.auth = envoyrls.NewAuth(s.acl, s.authenticate, s.certUser)
	if s.cfg.RateLimitConfig == "" {
		return nil
	}
	d := &edgeDecider{s: s, check: s.findCommand("check")}
	d.clients.New = func() any {
		c := s.bareClient("grpc", "grpc")
		c.AnyTier = true // the tier comes from a descriptor, which a limit need not name
		return c
	}
	rls, err := envoyrls.New(s.cfg.RateLimitConfig, envoyrls.NewCheckDecider(d.decide, s.rl.SetEdgePolicies), s.log)
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
// over TLS with the tls-* files when grpc-tls is yes; envoyrls.Auth finds each request's user.
func (s *Server) ServeGRPC(ln net.Listener) error {
	if s.edge.rls == nil {
		ln.Close()
		return errors.New("server: ServeGRPC: ratelimit-config is not set")
	}
	// As on the RESP port: at most maxclients connections (more wait to be accepted, as
	// gRPC clients retry rather than read an error), and idle ones closed after timeout.
	ln = netutil.LimitListener(ln, int(max(s.maxClients.Load(), 1)))
	var conf *tls.Config
	if s.cfg.GRPCTLS {
		if s.tlsFiles == nil {
			ln.Close()
			return errors.New("server: grpc-tls: tls-cert-file and tls-key-file are not set")
		}
		conf = s.serverTLSConfig()
	}
	g := s.edge.rls.GRPCServer(s.edge.auth, time.Duration(s.conns.timeout.Load())*time.Second, conf)
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

// decide implements envoyrls.CheckFunc: items as one CHECK, counted under grpc-port's door,
// or http-port's for the /json form.
func (d *edgeDecider) decide(user *acl.User, overHTTP bool, items []ratelimit.EdgeItem, out []ratelimit.EdgeResult) ([]ratelimit.EdgeResult, error) {
	s := d.s
	cmd := d.check
	c := d.clients.Get().(*client)
	defer d.clients.Put(c)
	c.door = doorGRPC
	if overHTTP {
		c.door = doorHTTP
	}
	c.user.Store(user)
	if err := s.checkEdgeACL(c, cmd, items); err != nil {
		c.counts(cmd).rejected.Add(1)
		c.stat().errors.Add(1)
		return out, err
	}
	if err := s.checkWrite(c, cmd); err != nil {
		c.counts(cmd).rejected.Add(1)
		c.stat().errors.Add(1)
		return out, err
	}
	// maxmemory as CHECK's denyoom has it over RESP (memory.go): evict first, or decide
	// without creating keys.
	c.NoRoom = s.mem.full.Load() && s.makeRoom() != nil
	c.stat().commands.Add(1)
	c.Tick = s.obs.mono()
	start := c.Tick
	c.lastCmd.Store(cmd)
	out, err := s.rl.Edge(&c.Ctx, items, out)
	// timed measures to the same end as the check here, or a call that crossed the slowlog
	// threshold between the two would reach SLOWLOG without its arguments (and panic there).
	c.ended = s.obs.mono()
	args := checkOnly // built only when SLOWLOG or MONITOR will show them
	if t := s.obs.slowerThan.Load(); s.obs.monitoring.Load() != 0 || t >= 0 && c.ended-start >= t*1000 {
		args = ratelimit.EdgeArgs(items)
	}
	s.timed(c, cmd, args, start)
	if err != nil {
		c.counts(cmd).failed.Add(1)
		c.stat().errors.Add(1)
		return out, err
	}
	return out, nil
}

// checkOnly is a gRPC decision's arguments where none were built: a MONITOR that started
// while it ran shows it as CHECK alone. Never written.
var checkOnly = [][]byte{bCheck}

var bCheck = []byte("CHECK")

// checkEdgeACL checks that c's user may decide items: run CHECK, on the key CHECK derives
// for each item's policy and subject. The error wraps envoyrls.ErrPermissionDenied.
func (s *Server) checkEdgeACL(c *client, cmd *cmdEntry, items []ratelimit.EdgeItem) error {
	p := c.user.Load().Perms()
	if p.All {
		return nil
	}
	for _, it := range items {
		if err := s.checkACL(c, p, cmd, [][]byte{bCheck, []byte(it.Policy), []byte(it.Subject)}); err != nil {
			return fmt.Errorf("%w: %s", envoyrls.ErrPermissionDenied, command.ErrorText(err))
		}
	}
	return nil
}
