package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/throttledhq/throttled/httpapi"
	"github.com/throttledhq/throttled/internal/version"
	"github.com/throttledhq/throttled/listen"
	"github.com/throttledhq/throttled/memory"
	"github.com/throttledhq/throttled/metrics"
)

// The HTTP side of observability: metrics-port serves package metrics' handler, which reads a
// snapshot of INFO's counters at each scrape.

// startMetrics listens on metrics-port when it is set.
func (s *Server) startMetrics() error {
	if s.cfg.MetricsPort == 0 {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(listen.First(s.cfg.Bind), strconv.Itoa(s.cfg.MetricsPort)))
	if err != nil {
		return fmt.Errorf("server: metrics-port: %w", err)
	}
	go s.ServeMetrics(ln)
	return nil
}

// ServeMetrics serves /metrics, /healthz, /readyz and the status page on ln until Close.
func (s *Server) ServeMetrics(ln net.Listener) error {
	hs := &http.Server{Handler: metrics.Handler(s, metrics.Options{Keys: s.metricsKeys}), ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.metricsHTTP = append(s.metricsHTTP, hs)
	s.mu.Unlock()
	s.log.Info("serving metrics", "addr", ln.Addr().String())
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("server: metrics: %w", err)
	}
	return nil
}

// closeMetrics stops the metrics servers; s.mu is held.
func (s *Server) closeMetricsLocked() {
	for _, hs := range s.metricsHTTP {
		hs.Close()
	}
}

// Snapshot implements metrics.Source from INFO's counters.
func (s *Server) Snapshot() metrics.Snapshot {
	snap := metrics.Snapshot{
		Version:               version.String(),
		Role:                  "master",
		Uptime:                time.Since(s.started),
		Keys:                  int64(s.ks.Len()),
		KeysWithExpiry:        int64(s.ks.Expires()),
		Connections:           s.connected.Load(),
		ConnectionsTotal:      s.stats.connections.Load(),
		ConnectionsRejected:   s.stats.rejected.Load(),
		DeniedEventsPublished: s.obs.events.published.Load(),
		DeniedEventsDropped:   s.obs.events.dropped.Load(),
		KeysEvicted:           s.ks.EvictedTotal(),
		UnstoredDecisions:     s.totals().unstored,
		TopDeniedWindow:       topDeniedPeriod,
	}
	for _, cmd := range s.sortedCommands() {
		if cmd.has(flagRatelimit) {
			t := s.cmdTotals(cmd)
			snap.Decisions = append(snap.Decisions, metrics.Decisions{Verb: cmd.name, Allowed: t.allowed, Denied: t.denied})
		}
		for _, cc := range append([]*cmdEntry{cmd}, sortedSubcommands(cmd)...) {
			t := s.cmdTotals(cc)
			if t.calls != 0 || t.rejected != 0 || t.failed != 0 {
				snap.Commands = append(snap.Commands, metrics.Command{Name: cc.name, Calls: t.calls, Rejected: t.rejected,
					Failed: t.failed, Time: time.Duration(t.nsec)})
			}
		}
	}
	snap.Transports = s.transports()
	snap.Latencies = s.latencies()
	snap.MemoryBytes, snap.ResidentBytes = s.memoryUsed()
	if s.store != nil {
		in := s.store.Info()
		snap.Persistence = &metrics.Persistence{WriteOK: in.WriteOK, LastSave: in.LastSave, Changes: in.Changes,
			Batches: in.Batches, Syncs: in.Syncs, KeysWritten: in.KeysWritten, KeysDeleted: in.KeysDeleted,
			Retries: in.Retries, DiskBytes: in.DiskBytes, LoadedKeys: int64(in.LoadedKeys), LoadTime: in.LoadTime,
			LoadedRedoRecords: in.RedoRecords, LoadedRedoBytes: in.RedoBytes, LoadDroppedBytes: in.Recovery.Dropped}
	}
	rin := s.repl.Info()
	snap.Replication = metrics.Replication{Primary: rin.Primary, Offset: rin.Offset, LinkUp: rin.LinkUp,
		Syncing: rin.Syncing, LastIO: rin.LastIO, SyncFull: rin.SyncFull, PartialOK: rin.PartialOK}
	for _, r := range rin.Replicas {
		snap.Replication.Replicas = append(snap.Replication.Replicas, metrics.Replica{
			Addr: net.JoinHostPort(r.Addr, strconv.Itoa(r.Port)), Offset: r.Offset, Lag: r.Lag})
	}
	if !rin.Primary {
		snap.Role = "slave"
	}
	if s.up != nil {
		st := s.up.client.Stats()
		snap.Upstream = &metrics.Upstream{LinkUp: st.Link == "up", Breaker: st.Breaker, BreakerOpened: st.Opened,
			RoundTrips: st.RoundTrips, Conflicts: st.Conflicts, Failures: st.Failures, LocalDecisions: st.Local,
			DegradedDecisions: s.up.degraded.Load(), AvgRTT: st.AvgRTT}
		g := s.global.Stats()
		snap.Upstream.Global = &metrics.Global{Syncs: g.Syncs, FailedSyncs: g.FailedSyncs, KeysSynced: g.KeysSynced,
			Commands: g.Commands, FailingKeys: g.FailingKeys, Keys: int64(g.Keys), Instances: g.Instances, LastDuration: g.LastDuration}
	}
	snap.Ready, snap.NotReady = s.readiness(rin.Primary, rin.LinkUp && !rin.Syncing, snap.Upstream)
	return snap
}

// TopDenied implements metrics.Source.
func (s *Server) TopDenied(n int, see func(key string) bool) []metrics.Denied {
	var out []metrics.Denied
	for _, e := range s.topDenied(n, see) {
		out = append(out, metrics.Denied{Key: e.Key, Count: e.Count})
	}
	return out
}

// metricsKeys is metrics.Options.Keys: a request authenticates as on http-port (httpUser),
// and its user sees the keys when it may run TOPDENIED, those its patterns let it read.
func (s *Server) metricsKeys(r *http.Request) (func(key string) bool, error) {
	cred, err := httpapi.ReadCredentials(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", httpapi.ErrUnauthorized, err)
	}
	user, err := s.httpUser(cred)
	if err != nil {
		return nil, err
	}
	if p := user.Perms(); !p.All && !p.CanRun(s.commands["topdenied"].aclID) {
		return nil, fmt.Errorf("%w: this user has no permissions to run the 'topdenied' command", httpapi.ErrForbidden)
	}
	return readableKeys(user), nil
}

// readiness says whether the server should receive traffic: it serves (its state is loaded
// before that), a replica's link is up and in sync, the upstream's breaker is closed.
func (s *Server) readiness(primary, inSync bool, up *metrics.Upstream) (bool, string) {
	switch {
	case s.Addr() == nil:
		return false, "not serving yet"
	case s.cfg.GRPCPort != 0 && !s.edge.serving():
		return false, "grpc-port not serving yet"
	case !primary && !inSync:
		return false, "replica not in sync with its primary"
	case up != nil && up.Breaker != "closed":
		return false, "upstream breaker " + up.Breaker
	case !s.httpReady():
		return false, "http-port not serving yet"
	}
	return true, ""
}

// memoryUsed is INFO's used_memory and used_memory_rss.
func (s *Server) memoryUsed() (used, rss uint64) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	var offHeap uint64
	if s.store != nil {
		if in := s.store.Info(); in.OffHeap {
			offHeap = uint64(in.MemTableBytes + in.BlockCacheBytes)
		}
	}
	used = m.HeapInuse + offHeap
	rss, ok := memory.Resident()
	if !ok {
		rss = m.Sys - m.HeapReleased + offHeap
	}
	return used, rss
}
