package server

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/throttledhq/throttled/internal/sdnotify"
	"github.com/throttledhq/throttled/internal/version"
)

// newLogger builds the default logger at a level CONFIG SET can change: log/slog's text or
// JSON handler (log-format) on stderr, or appending to logfile; the file is returned to be
// closed at the end.
func newLogger(cfg Config, level *slog.LevelVar) (*slog.Logger, *os.File, error) {
	var w io.Writer = os.Stderr
	var f *os.File
	if cfg.LogFile != "" {
		var err error
		f, err = os.OpenFile(cfg.LogFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("logfile: %w", err)
		}
		w = f
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), f, nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), f, nil
}

// logBanner is the first log line, as redis-server's: which throttled, which process, on
// which port, in which mode; then the warning about the options of a redis.conf that mean
// nothing here.
func logBanner(log *slog.Logger, cfg Config) {
	mode := "standalone"
	switch {
	case cfg.Upstream != "" || len(cfg.UpstreamCluster) > 0:
		mode = "upstream"
	case cfg.ReplicaOf != "":
		mode = "replica"
	}
	sha, dirty := buildID()
	log.Info("throttled starting", "version", version.String(), "pid", os.Getpid(), "port", cfg.Port,
		"mode", mode, "bits", strconv.IntSize, "go", runtime.Version(), "commit", sha, "modified", dirty)
	if len(cfg.Ignored) > 0 {
		log.Warn("ignoring options that have no meaning in throttled", "options", strings.Join(cfg.Ignored, " "))
	}
}

// writePidFile writes pidfile, when set, once the server listens.
func (s *Server) writePidFile() error {
	if s.cfg.PidFile == "" {
		return nil
	}
	if err := os.WriteFile(s.cfg.PidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		return fmt.Errorf("pidfile: %w", err)
	}
	s.mu.Lock()
	s.pidFile = s.cfg.PidFile
	s.mu.Unlock()
	return nil
}

// removeFiles removes what the server leaves in the file system while it runs: the pidfile
// it wrote and the Unix socket.
func (s *Server) removeFiles() {
	s.mu.Lock()
	pid := s.pidFile
	s.mu.Unlock()
	if pid != "" {
		os.Remove(pid)
	}
	if s.cfg.UnixSocket != "" {
		os.Remove(s.cfg.UnixSocket)
	}
}

// notify tells systemd the server's state, with supervised systemd, or auto under a
// supervisor that set $NOTIFY_SOCKET; a failure is logged, never fatal.
func (s *Server) notify(state ...string) {
	socket := sdnotify.Socket()
	switch strings.ToLower(s.cfg.Supervised) {
	case "systemd":
		if socket == "" {
			if state[0] == sdnotify.Ready { // once
				s.log.Warn("supervised systemd: NOTIFY_SOCKET is not set; systemd is not told the server's state")
			}
			return
		}
	case "auto":
		if socket == "" {
			return
		}
	default:
		return
	}
	if err := sdnotify.Notify(socket, state...); err != nil {
		s.log.Warn("supervised systemd: cannot notify", "err", err)
	}
}

// startupParams are the CONFIG parameters of the options that take effect at start only:
// CONFIG GET shows them, CONFIG REWRITE writes those away from their default (given on the
// command line, say) into the file, and CONFIG SET refuses them, as Redis does.
func (s *Server) startupParams() []*param {
	def := DefaultConfig()
	constant := func(v string) func() string { return func() string { return v } }
	return []*param{
		{name: "tcp-backlog", get: constant(strconv.Itoa(s.cfg.TCPBacklog)), def: strconv.Itoa(def.TCPBacklog), file: plainValue},
		{name: "unixsocket", get: constant(s.cfg.UnixSocket), file: quoted},
		{name: "unixsocketperm", get: constant(strconv.FormatUint(uint64(s.cfg.UnixSocketPerm), 8)), def: "0", file: plainValue},
		{name: "pidfile", get: constant(s.cfg.PidFile), file: quoted},
		{name: "logfile", get: constant(s.cfg.LogFile), file: quoted},
		{name: "log-format", get: constant(s.cfg.LogFormat), def: def.LogFormat, file: plainValue},
		{name: "supervised", get: constant(strings.ToLower(s.cfg.Supervised)), def: def.Supervised, file: plainValue},
		{name: "daemonize", get: constant("no"), def: "no", file: plainValue},
	}
}
