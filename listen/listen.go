// Package listen opens what a server listens on: each address of bind (Redis's "bind
// 127.0.0.1 -::1": several, some optional) on one port with a backlog of its own
// (tcp-backlog), and a Unix socket, accepted from as one net.Listener; and the files of a
// TLS listener (TLSFiles), read again when they change.
package listen

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// addr is one address of bind.
type addr struct {
	host     string // as net.Listen takes it: "" for every address
	network  string // tcp, or tcp4/tcp6 for * and ::*
	optional bool   // "-addr": skipped when it cannot be bound
}

// ParseBind reads bind: addresses separated by blanks, each an IP address or localhost, "-"
// before one that may be missing (Redis's "bind 127.0.0.1 -::1"), * for every IPv4 address
// and ::* for every IPv6 one.
func ParseBind(bind string) error {
	_, err := parseBind(bind)
	return err
}

func parseBind(bind string) ([]addr, error) {
	words := strings.Fields(bind)
	if len(words) == 0 {
		return nil, fmt.Errorf("bind: %q names no address", bind)
	}
	var out []addr
	for _, w := range words {
		a := addr{network: "tcp"}
		host, optional := strings.CutPrefix(w, "-")
		a.optional = optional
		switch {
		case host == "*":
			a.network = "tcp4"
		case host == "::*":
			a.network = "tcp6"
		case host == "localhost" || net.ParseIP(host) != nil:
			a.host = host
		default:
			return nil, fmt.Errorf("bind: %q is not an IP address", w)
		}
		out = append(out, a)
	}
	return out, nil
}

// First is the address of a server's other ports (metrics, HTTP, gRPC, TLS): bind's first.
func First(bind string) string {
	addrs, err := parseBind(bind)
	if err != nil || len(addrs) == 0 {
		return bind
	}
	if addrs[0].network == "tcp6" {
		return "::"
	}
	return addrs[0].host
}

// Config is what Open listens on.
type Config struct {
	Bind           string // bind's addresses
	Port           int    // 0: a free one, the same for every address
	Backlog        int    // tcp-backlog; 0: the kernel's somaxconn
	UnixSocket     string // "" for none
	UnixSocketPerm uint32 // 0: the umask's
	// Skipped is told of an optional address that could not be bound.
	Skipped func(addr string, err error)
}

// Open opens a listener for each address of bind on port, and for the Unix socket: a
// required address that fails fails them all, an optional one is skipped.
func Open(cfg Config) (net.Listener, error) {
	addrs, err := parseBind(cfg.Bind)
	if err != nil {
		return nil, err
	}
	var lns []net.Listener
	fail := func(err error) (net.Listener, error) {
		for _, ln := range lns {
			ln.Close()
		}
		return nil, err
	}
	port := cfg.Port
	for _, a := range addrs {
		ln, err := TCP(a.network, net.JoinHostPort(a.host, strconv.Itoa(port)), cfg.Backlog)
		if err != nil {
			if a.optional {
				if cfg.Skipped != nil {
					cfg.Skipped(a.host, err)
				}
				continue
			}
			return fail(fmt.Errorf("listen: %w", err))
		}
		if port == 0 { // every address on the port the first one got, as Redis
			port = ln.Addr().(*net.TCPAddr).Port
		}
		lns = append(lns, ln)
	}
	if cfg.UnixSocket != "" {
		os.Remove(cfg.UnixSocket) // a socket left by a process that is gone
		ln, err := net.Listen("unix", cfg.UnixSocket)
		if err != nil {
			return fail(fmt.Errorf("unixsocket: %w", err))
		}
		if cfg.UnixSocketPerm != 0 {
			if err := os.Chmod(cfg.UnixSocket, os.FileMode(cfg.UnixSocketPerm)); err != nil {
				ln.Close()
				return fail(fmt.Errorf("unixsocketperm: %w", err))
			}
		}
		lns = append(lns, ln)
	}
	if len(lns) == 0 {
		return nil, fmt.Errorf("listen: no address of bind %q could be bound", cfg.Bind)
	}
	if len(lns) == 1 {
		return lns[0], nil
	}
	return newMultiListener(lns), nil
}

// multiListener accepts from several listeners as one: Serve's loop serves them all, and its
// Addr is the first's.
type multiListener struct {
	lns   []net.Listener
	conns chan accepted
	done  chan struct{}
	once  sync.Once
}

// accepted is one listener's Accept.
type accepted struct {
	nc  net.Conn
	err error
}

func newMultiListener(lns []net.Listener) *multiListener {
	m := &multiListener{lns: lns, conns: make(chan accepted), done: make(chan struct{})}
	for _, ln := range lns {
		go m.acceptFrom(ln)
	}
	return m
}

func (m *multiListener) acceptFrom(ln net.Listener) {
	for {
		nc, err := ln.Accept()
		select {
		case m.conns <- accepted{nc, err}:
		case <-m.done:
			if nc != nil {
				nc.Close()
			}
			return
		}
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return
			}
		}
	}
}

// Accept waits for the next connection on any of the listeners.
func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case a := <-m.conns:
		return a.nc, a.err
	case <-m.done:
		return nil, net.ErrClosed
	}
}

// Close closes every listener.
func (m *multiListener) Close() error {
	var err error
	m.once.Do(func() {
		close(m.done)
		for _, ln := range m.lns {
			if e := ln.Close(); e != nil && err == nil {
				err = e
			}
		}
	})
	return err
}

// Addr is the first listener's address.
func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
