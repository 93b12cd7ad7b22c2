package server

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/listen"
)

// TLS, with Redis's options: a second listener on tls-port whose clients are served by a
// goroutine each over crypto/tls (the event loops serve plain sockets by their descriptors,
// which a TLS session cannot share). The certificate, key and CA files are looked at on
// every handshake: when one has changed (its size or modification time) they are read
// again, so that certificates are renewed without a restart. A renewal that does not load
// (a key that does not match, a file half written) keeps the previous certificates and is
// logged.

// tlsHandshakeTimeout bounds a client's TLS handshake: a client that opens a connection
// and sends nothing holds a goroutine no longer than this.
const tlsHandshakeTimeout = 10 * time.Second

// Values of tls-auth-clients.
var tlsAuthModes = map[string]tls.ClientAuthType{
	"yes":      tls.RequireAndVerifyClientCert,
	"no":       tls.NoClientCert,
	"optional": tls.VerifyClientCertIfGiven,
}

// validTLS checks the TLS options of c.
func (c Config) validTLS() error {
	if c.TLSPort < 0 || c.TLSPort > 65535 {
		return fmt.Errorf("tls-port: %d is not between 0 and 65535", c.TLSPort)
	}
	auth, ok := tlsAuthModes[strings.ToLower(c.TLSAuthClients)]
	if !ok {
		return fmt.Errorf("tls-auth-clients: %q is not one of yes, no, optional", c.TLSAuthClients)
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
	if s.tlsFiles == nil || !s.tlsFiles.cnUser.Load() || len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return nil
	}
	return s.acl.Enabled(st.VerifiedChains[0][0].Subject.CommonName)
}

// tlsFiles are the files of a TLS configuration and what was last read from them.
type tlsFiles struct {
	mu            sync.Mutex // guards the fields
	cert, key, ca string
	auth          string      // tls-auth-clients
	cnUser        atomic.Bool // tls-auth-clients-user CN; read without mu
	stamp         string      // the files' sizes and modification times when config was built
	config        *tls.Config
}

// newTLSFiles reads the files once; an error names the file that failed.
func newTLSFiles(cfg Config) (*tlsFiles, error) {
	f := &tlsFiles{cert: cfg.TLSCertFile, key: cfg.TLSKeyFile, ca: cfg.TLSCACertFile,
		auth: strings.ToLower(cfg.TLSAuthClients)}
	cn, err := parseCNUser(cfg.TLSAuthClientsUser)
	if err != nil {
		return nil, err
	}
	f.cnUser.Store(cn)
	if _, err := f.current(); err != nil {
		return nil, err
	}
	return f, nil
}

// stampLocked is the files' sizes and modification times.
func (f *tlsFiles) stampLocked() string {
	var b strings.Builder
	for _, name := range []string{f.cert, f.key, f.ca} {
		if name == "" {
			continue
		}
		if st, err := os.Stat(name); err == nil {
			b.WriteString(strconv.FormatInt(st.Size(), 10) + "@" + strconv.FormatInt(st.ModTime().UnixNano(), 10) + ";")
		}
	}
	return b.String()
}

// current returns the configuration from the files, read again when they changed. Once one
// has loaded, a failure to reload keeps it.
func (f *tlsFiles) current() (*tls.Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	stamp := f.stampLocked()
	if f.config != nil && stamp == f.stamp {
		return f.config, nil
	}
	c, err := f.loadLocked()
	if err != nil {
		if f.config != nil {
			return f.config, err
		}
		return nil, err
	}
	f.config, f.stamp = c, stamp
	return c, nil
}

// change applies a CONFIG SET of a file or of tls-auth-clients and loads the files at once.
// While they do not load together (the certificate changed and the key is still to come),
// the running configuration serves on.
func (f *tlsFiles) change(set func(*tlsFiles)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	set(f)
	if c, err := f.loadLocked(); err == nil {
		f.config, f.stamp = c, f.stampLocked()
	}
}

// checkTLSValue checks a CONFIG SET value of a TLS parameter on its own: the file holds
// what it should. Whether a certificate and a key match is known once both are set.
func checkTLSValue(name, v string) error {
	if name == "tls-auth-clients" {
		if _, ok := tlsAuthModes[v]; !ok {
			return fmt.Errorf("tls-auth-clients: %q is not one of yes, no, optional", v)
		}
		return nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	want := "CERTIFICATE"
	if name == "tls-key-file" {
		want = "PRIVATE KEY"
	}
	for rest := b; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			return fmt.Errorf("%s %s: no PEM %s in it", name, v, strings.ToLower(want))
		}
		if strings.Contains(blk.Type, want) {
			return nil
		}
	}
}

// get reads a field under the lock.
func (f *tlsFiles) get(field func(*tlsFiles) string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return field(f)
}

// loadLocked reads the certificate, key and CA files.
func (f *tlsFiles) loadLocked() (*tls.Config, error) {
	auth, ok := tlsAuthModes[f.auth]
	if !ok {
		return nil, fmt.Errorf("tls-auth-clients: %q is not one of yes, no, optional", f.auth)
	}
	if auth != tls.NoClientCert && f.ca == "" {
		return nil, errors.New("tls-ca-cert-file: needed to verify clients' certificates unless tls-auth-clients is no")
	}
	cert, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return nil, fmt.Errorf("tls-cert-file %s, tls-key-file %s: %w", f.cert, f.key, err)
	}
	c := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		ClientAuth:   auth,
	}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, fmt.Errorf("tls-ca-cert-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls-ca-cert-file %s: no PEM certificate in it", f.ca)
		}
		c.ClientCAs = pool
		c.RootCAs = pool // for tls-replication: the primary's certificate is checked against it
	}
	return c, nil
}

// serverConfig is the tls.Config of the listener: each handshake takes the files' current
// configuration.
func (s *Server) serverTLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c, err := s.tlsFiles.current()
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
	f, err := newTLSFiles(s.cfg)
	if err != nil {
		return err
	}
	s.tlsFiles = f
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
	c, _ := s.tlsFiles.current()
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
	file := func(name string, start string, field func(*tlsFiles) *string) *param {
		p := &param{name: name, file: quoted, get: func() string { return start }}
		if f := s.tlsFiles; f != nil {
			p.get = func() string { return f.get(func(f *tlsFiles) string { return *field(f) }) }
			p.set = func(v string) (func(), error) {
				if name == "tls-auth-clients" {
					v = strings.ToLower(v)
				}
				if err := checkTLSValue(name, v); err != nil {
					return nil, err
				}
				return func() { f.change(func(f *tlsFiles) { *field(f) = v }) }, nil
			}
		}
		return p
	}
	auth := file("tls-auth-clients", s.cfg.TLSAuthClients, func(f *tlsFiles) *string { return &f.auth })
	auth.file, auth.def = plainValue, def.TLSAuthClients
	cnUser := &param{name: "tls-auth-clients-user", file: plainValue, def: def.TLSAuthClientsUser, get: func() string { return s.cfg.TLSAuthClientsUser }}
	if f := s.tlsFiles; f != nil {
		cnUser.get = func() string { return cnUserText(f.cnUser.Load()) }
		cnUser.set = func(v string) (func(), error) {
			on, err := parseCNUser(v)
			if err != nil {
				return nil, err
			}
			return func() { f.cnUser.Store(on) }, nil
		}
	}
	return []*param{
		{name: "tls-port", get: func() string { return strconv.Itoa(s.cfg.TLSPort) }, def: "0", file: plainValue},
		file("tls-cert-file", s.cfg.TLSCertFile, func(f *tlsFiles) *string { return &f.cert }),
		file("tls-key-file", s.cfg.TLSKeyFile, func(f *tlsFiles) *string { return &f.key }),
		file("tls-ca-cert-file", s.cfg.TLSCACertFile, func(f *tlsFiles) *string { return &f.ca }),
		auth,
		cnUser,
		{name: "tls-replication", get: func() string { return yesNo(s.cfg.TLSReplication) }, def: "no", file: plainValue},
	}
}
