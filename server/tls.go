package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/listen"
)

// TLS, with Redis's options: a second listener on tls-port whose clients are served by a
// goroutine each over crypto/tls (the event loops serve plain sockets by their descriptors,
// which a TLS session cannot share). The files, their configurations, the options' parsing
// and a certificate's user are listen.TLSFiles', read again on the handshake after they
// change; a renewal that does not load is logged. Here is only the wiring.

// tlsHandshakeTimeout bounds a client's TLS handshake: a client that opens a connection
// and sends nothing holds a goroutine no longer than this.
const tlsHandshakeTimeout = 10 * time.Second

// tlsOptions are the TLS options of c.
func (c Config) tlsOptions() listen.TLSOptions {
	return listen.TLSOptions{Port: c.TLSPort, CertFile: c.TLSCertFile, KeyFile: c.TLSKeyFile, CACertFile: c.TLSCACertFile,
		AuthClients: c.TLSAuthClients, AuthClientsUser: c.TLSAuthClientsUser, Replication: c.TLSReplication}
}

// certUser is the user a TLS client's verified certificate names with tls-auth-clients-user
// CN (listen.TLSFiles.CertUser) when that user is on; nil otherwise (the client is then the
// default user, as any other, and AUTH is open to it).
func (s *Server) certUser(st tls.ConnectionState) *acl.User {
	if name := s.tlsFiles.CertUser(st); name != "" {
		return s.acl.Enabled(name)
	}
	return nil
}

// serverTLSConfig is the tls.Config of the listeners: each handshake takes the files'
// current configuration.
func (s *Server) serverTLSConfig() *tls.Config {
	return s.tlsFiles.ServerConfig(func(err error) { s.log.Warn("TLS certificates not reloaded", "err", err) })
}

// ServeTLS accepts TCP connections on ln and serves them over TLS until Close; it returns
// nil after Close. Each client has a goroutine of its own, which does the handshake.
func (s *Server) ServeTLS(ln net.Listener) error {
	if s.tlsFiles == nil {
		ln.Close()
		return errors.New("server: ServeTLS: tls-cert-file and tls-key-file are not set")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.tlsLn = ln
	s.mu.Unlock()
	conf := s.serverTLSConfig()
	s.log.Info("ready to accept TLS connections", "addr", ln.Addr().String())
	for {
		nc, err := s.accept(ln)
		if err != nil || nc == nil {
			return err
		}
		// Handshakes under way count against maxclients: a flood of connections that never
		// finish theirs holds no more goroutines than maxclients, each for tlsHandshakeTimeout.
		if s.connected.Load()+s.tlsHandshakes.Load() >= s.maxClients.Load() {
			s.stats.rejected.Add(1)
			nc.Close() // no TLS session yet to tell it in
			continue
		}
		if !s.admitConn(nc) {
			continue
		}
		s.tlsHandshakes.Add(1)
		go s.serveTLSConn(tls.Server(nc, conf))
	}
}

// serveTLSConn does a client's handshake, then serves it.
func (s *Server) serveTLSConn(tc *tls.Conn) {
	tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	err := tc.Handshake()
	s.tlsHandshakes.Add(-1)
	if err != nil {
		s.log.Debug("TLS handshake failed", "addr", tc.RemoteAddr().String(), "err", err)
		tc.Close()
		return
	}
	tc.SetDeadline(time.Time{})
	c := s.makeClient(tc)
	if u := s.certUser(tc.ConnectionState()); u != nil { // before CLIENT LIST can see it
		c.user.Store(u)
		c.setAuthed(true)
	}
	if !s.register(c) {
		tc.Close()
		return
	}
	c.serve(nil)
}

// listenTLS listens on tls-port when it is set; nil otherwise.
func (s *Server) listenTLS() (net.Listener, error) {
	if s.cfg.TLSPort == 0 {
		return nil, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(listen.First(s.cfg.Bind), strconv.Itoa(s.cfg.TLSPort)))
	if err != nil {
		return nil, fmt.Errorf("server: listen on tls-port: %w", err)
	}
	return ln, nil
}

// openTLS reads the certificates when TLS is configured.
func (s *Server) openTLS() (err error) {
	s.tlsFiles, err = listen.OpenTLS(s.cfg.tlsOptions())
	return err
}

// closeTLS closes the TLS listener; s.mu is held.
func (s *Server) closeTLSLocked() {
	if s.tlsLn != nil {
		s.tlsLn.Close()
	}
}

// dialPrimary connects a replica to its primary: over TLS with tls-replication.
func (s *Server) dialPrimary(addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if !s.cfg.TLSReplication {
		return d.Dial("tcp", addr)
	}
	return s.tlsFiles.Dial(d, addr)
}

// tlsParams are the TLS options in the parameter table. The files and tls-auth-clients
// change at run time when TLS is on: the new configuration is loaded at once and serves the
// next handshakes, or refused.
func (s *Server) tlsParams() []*param {
	def := DefaultConfig()
	file := func(name string, start string) *param {
		p := &param{name: name, file: quoted, get: func() string { return start }}
		if f := s.tlsFiles; f != nil {
			p.get = func() string { return f.Get(name) }
			p.set = func(v string) (func(), error) {
				if err := listen.CheckTLSValue(name, v); err != nil {
					return nil, err
				}
				return func() { f.Set(name, v) }, nil
			}
		}
		return p
	}
	auth := file(listen.AuthClients, s.cfg.TLSAuthClients)
	auth.file, auth.def = plainValue, def.TLSAuthClients
	cnUser := file(listen.AuthClientsUser, s.cfg.TLSAuthClientsUser)
	cnUser.file, cnUser.def = plainValue, def.TLSAuthClientsUser
	return []*param{
		{name: "tls-port", get: func() string { return strconv.Itoa(s.cfg.TLSPort) }, def: "0", file: plainValue},
		file(listen.CertFile, s.cfg.TLSCertFile),
		file(listen.KeyFile, s.cfg.TLSKeyFile),
		file(listen.CACertFile, s.cfg.TLSCACertFile),
		auth,
		cnUser,
		{name: "tls-replication", get: func() string { return yesNo(s.cfg.TLSReplication) }, def: "no", file: plainValue},
	}
}
