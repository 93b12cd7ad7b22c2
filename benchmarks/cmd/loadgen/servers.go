package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/benchmarks/loadtest"
)

// server is a process started for the run, listening on a loopback port of its own.
type server struct {
	name string
	addr string
	cmd  *exec.Cmd
}

// start runs name with args plus the port flag, and waits until it answers PING.
func start(label, name string, args ...string) (*server, error) {
	port, err := loadtest.FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, append(args, "--port", strconv.Itoa(port))...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", label, err)
	}
	s := &server{name: label, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if v, err := s.do("PING"); err == nil && v == "PONG" {
			return s, nil
		}
	}
	s.stop()
	return nil, fmt.Errorf("start %s: no PONG on %s", label, s.addr)
}

// startThrottled starts bin with its data in dir and the given persistence flags.
func startThrottled(label, bin, dir string, persistence ...string) (*server, error) {
	return start(label, bin, append([]string{"--bind", "127.0.0.1", "--dir", dir, "--loglevel", "warning"}, persistence...)...)
}

// startRedis starts redis-server without persistence, as a cache in front of an app would run,
// or with what extra says instead (later options override earlier ones).
func startRedis(dir string, extra ...string) (*server, error) {
	return start("redis", "redis-server", append([]string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--loglevel", "warning"}, extra...)...)
}

// stop kills the process and waits for it.
func (s *server) stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// do sends one command on a connection of its own and returns the reply.
func (s *server) do(args ...string) (any, error) {
	c, err := net.DialTimeout("tcp", s.addr, time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(loadtest.Encode(args...)); err != nil {
		return nil, err
	}
	return loadtest.NewReader(c).Value()
}

// pipe sends every request in reqs on one connection, in batches, and fails on any error reply.
func (s *server) pipe(reqs func(i int) []byte, n int) error { return s.pipeN(reqs, n, 1) }

// pipeN is pipe with requests of several commands each.
func (s *server) pipeN(reqs func(i int) []byte, n, commands int) error {
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	r := loadtest.NewReader(c)
	const batch = 1000
	var buf []byte
	for i := 0; i < n; i += batch {
		buf = buf[:0]
		m := min(batch, n-i)
		for j := range m {
			buf = append(buf, reqs(i+j)...)
		}
		if _, err := c.Write(buf); err != nil {
			return err
		}
		for range m * commands {
			if _, err := r.Next(); err != nil {
				return err
			}
		}
	}
	return nil
}

// rss returns the resident bytes of the process, from /proc/PID/status VmRSS.
func (s *server) rss() (int64, error) { return s.status("VmRSS") }

// info returns one field of INFO server.
func (s *server) info(field string) string { return s.infoField("server", field) }

// infoField returns one field of an INFO section, or "?".
func (s *server) infoField(section, field string) string {
	v, err := s.do("INFO", section)
	if err != nil {
		return "?"
	}
	text, _ := v.(string)
	for _, l := range strings.Split(text, "\r\n") {
		if k, val, ok := strings.Cut(l, ":"); ok && k == field {
			return val
		}
	}
	return "?"
}
