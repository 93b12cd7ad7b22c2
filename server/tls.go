package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/listen"
)

// TLS, with Redis's options: a second listener on tls-port whose clients are served by a
// goroutine each over crypto/tls (the event loops serve plain sockets by their descriptors,
// which a TLS session cannot share). The files are listen.TLSFiles, read again on the
// handshake after they change; a renewal that does not load is logged.

// tlsHandshakeTimeout bounds a client's TLS handshake: a client that opens a connection
// and sends nothing holds a goroutine no longer than this.
const tlsHandshakeTimeout = 10 * time.Second

// validTLS checks the TLS options of c.
func (c Config) validTLS() error {
	if c.TLSPort < 0 || c.TLSPort > 65535 {
		return fmt.Errorf("tls-port: %d is not between 0 and 65535", c.TLSPort)
	}
	auth, err := listen.ParseTLSAuth(c.TLSAuthClients)
	if err != nil {
		return err
	}
	if _, err := parseCNUser(c.TLSAuthClientsUser); err != nil {
		return err
	}
	if c.TLSPort == 0 && !c.TLSReplication {
		return nil
	}
	if c.TLSCertFile == "" || c.TLSKeyFile == "" {
		return errors.New("tls-cert-file and tls-key-file: both are needed with tls-port")
	}
	if auth != tls.NoClientCert && c.TLSCACertFile == "" {
		return errors.New("tls-ca-cert-file: needed to verify clients' certificates unless tls-auth-clients is no")
	}
	return nil
}

// parseCNUser reads tls-auth-clients-user: CN (true) or off.
func parseCNUser(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "cn":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("tls-auth-clients-user: %q is not one of CN, off", v)
}

// cnUserText is tls-auth-clients-user as CONFIG GET shows it.
func cnUserText(on bool) string {
	if on {
		return "CN"
	}
	return "off"
}

// certUser is the user a TLS client's verified certificate names with tls-auth-clients-user
// CN: the ACL user its common name is, when that user is on; nil otherwise (the client is
// then the default user, as any other, and AUTH is open to it).
func (s *Server) certUser(st tls.ConnectionState) *acl.User {
	if s.tlsFiles == nil || !s.tlsCNUser.Load() || len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return nil
	}
	return s.acl.Enabled(st.VerifiedChains[0][0].Subject.CommonName)
}

// serverConfig is the tls.Config of the listener: each handshake takes the files' current
// configuration.
func (s *Server) serverTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c, err := s.tlsFiles.Current()
			if err != nil {
				s.log.Warn("TLS certificates not reloaded", "err", err)
			}
			return c, nil
		},
	}
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
func (s *Server) openTLS() error {
	if s.cfg.TLSCertFile == "" {
		return nil
	}
	cn, err := parseCNUser(s.cfg.TLSAuthClientsUser)
	if err != nil {
		return err
	}
	f, err := listen.NewTLSFiles(s.cfg.TLSCertFile, s.cfg.TLSKeyFile, s.cfg.TLSCACertFile, s.cfg.TLSAuthClients)
	if err != nil {
		return err
	}
	s.tlsFiles = f
	s.tlsCNUser.Store(cn)
	return nil
}

// closeTLS closes the TLS listener; s.mu is held.
func (s *Server) closeTLSLocked() {
	if s.tlsLn != nil {
		s.tlsLn.Close()
	}
}

// ClientTLSConfig is the configuration a connection to another server (a replica's to its
// primary with tls-replication) uses: the same certificate, presented to a primary that
// verifies clients, and the CA file to verify the primary; nil without TLS files.
func (s *Server) clientTLSConfig() *tls.Config {
	if s.tlsFiles == nil {
		return nil
	}
	c, _ := s.tlsFiles.Current()
	if c == nil {
		return nil
	}
	out := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: c.Certificates, RootCAs: c.RootCAs}
	return out
}

// dialPrimary connects a replica to its primary: over TLS with tls-replication.
func (s *Server) dialPrimary(addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if !s.cfg.TLSReplication {
		return d.Dial("tcp", addr)
	}
	conf := s.clientTLSConfig()
	if conf == nil {
		return nil, errors.New("tls-replication: no TLS certificates loaded")
	}
	host, _, _ := net.SplitHostPort(addr)
	conf.ServerName = host
	return tls.DialWithDialer(d, "tcp", addr, conf)
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
				if name == listen.AuthClients {
					v = strings.ToLower(v)
				}
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
	cnUser := &param{name: "tls-auth-clients-user", file: plainValue, def: def.TLSAuthClientsUser, get: func() string { return s.cfg.TLSAuthClientsUser }}
	if s.tlsFiles != nil {
		cnUser.get = func() string { return cnUserText(s.tlsCNUser.Load()) }
		cnUser.set = func(v string) (func(), error) {
			on, err := parseCNUser(v)
			if err != nil {
				return nil, err
			}
			return func() { s.tlsCNUser.Store(on) }, nil
		}
	}
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
