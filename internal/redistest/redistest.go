// Package redistest runs real redis-server processes for tests: one server, or a Redis
// Cluster of three masters, on loopback ports picked at run time. They stop with the test
// that started them, and with the test binary if it dies first. `make test` installs
// redis-server and redis-cli when they are missing.
package redistest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a running redis-server.
type Server struct {
	Port int
	Addr string // 127.0.0.1:port

	t      testing.TB
	dir    string
	args   []string
	mu     sync.Mutex // guards cmd, exited
	cmd    *exec.Cmd
	exited chan struct{}
	log    *syncBuffer
}

// Start runs redis-server without persistence, with extra options after the defaults, and
// waits until it answers PING.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir(), log: new(syncBuffer)}
	s.Port = freePort(t, false)
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	s.args = append([]string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no", "--loglevel", "warning"}, extra...)
	s.run()
	t.Cleanup(s.stop)
	return s
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr }

// run starts the process and waits for PING.
func (s *Server) run() {
	s.t.Helper()
	cmd := exec.Command("redis-server", s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redistest: redis-server (make deps installs it): %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if rdb.Ping(context.Background()).Err() == nil {
			return
		}
		select {
		case <-exited:
			s.t.Fatalf("redistest: redis-server on %s exited:\n%s", s.Addr, s.log)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: redis-server on %s does not answer:\n%s", s.Addr, s.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill9 kills the server at once, as a crash would, and waits until it is gone.
func (s *Server) Kill9() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	cmd.Process.Kill()
	<-exited
}

// Pause stops the process (SIGSTOP): it keeps its connections and answers nothing until
// Resume, as a server hung in a long command or swapping would.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server go on (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmd.Process.Signal(sig)
}

// Restart starts the server again on its port, after Kill9.
func (s *Server) Restart() { s.run() }

func (s *Server) stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	cmd.Process.Kill()
	<-exited
}

// Client returns a go-redis client of the server, closed with the test.
func (s *Server) Client() *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	s.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Cluster is a Redis Cluster of three masters without replicas.
type Cluster struct {
	Nodes []*Server
	t     testing.TB
}

// StartCluster starts three cluster-enabled redis-servers, joins them with
// redis-cli --cluster create, and waits until every node says the cluster is ok.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	var addrs []string
	for range 3 {
		s := &Server{t: t, dir: t.TempDir(), log: new(syncBuffer)}
		s.Port = freePort(t, true)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
		s.args = []string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", s.dir, "--daemonize", "no", "--loglevel", "warning", "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"), "--cluster-node-timeout", "5000"}
		s.run()
		t.Cleanup(s.stop)
		c.Nodes = append(c.Nodes, s)
		addrs = append(addrs, s.Addr)
	}
	out, err := exec.Command("redis-cli", append(append([]string{"--cluster", "create"}, addrs...), "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitOK()
	return c
}

// Addrs returns the nodes' addresses.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr)
	}
	return out
}

// WaitOK waits until every node reports cluster_state:ok and agrees on all 16384 slots.
func (c *Cluster) WaitOK() {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		for _, n := range c.Nodes {
			out, err := exec.Command("redis-cli", "-p", strconv.Itoa(n.Port), "CLUSTER", "INFO").Output()
			if err != nil || !strings.Contains(string(out), "cluster_state:ok") || !strings.Contains(string(out), "cluster_slots_ok:16384") {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatal("redistest: the cluster did not become ok")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Client returns a go-redis cluster client, closed with the test.
func (c *Cluster) Client() *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	c.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// freePort returns a loopback port free a moment ago; with bus, port+10000 (the cluster
// bus) was free too.
func freePort(t testing.TB, bus bool) int {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !bus {
			return port
		}
		if port+10000 > 65535 {
			continue
		}
		if l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000)); err == nil {
			l2.Close()
			return port
		}
	}
	t.Fatal("redistest: no free port pair for a cluster node")
	return 0
}

// syncBuffer is a log the process writes while the test may read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
