package listen

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
)

// The TLS files, under Redis's names: the certificate, key and CA files, tls-auth-clients
// and tls-auth-clients-user. They are looked at on every handshake (Current, which the
// listener's ServerConfig asks): when one has changed (its size or modification time) they
// are read again, so that certificates are renewed without a restart. A renewal that does
// not load (a key that does not match, a file half written) keeps the previous
// configuration, and Current says why. The server keeps only the wiring: the tls-port
// listener's accept loop, which serves each client on a goroutine of its own, and the
// parameter table's entries, which Get, CheckTLSValue and Set serve.

// The names of the TLS parameters, as TLSFiles.Get and Set take them.
const (
	CertFile        = "tls-cert-file"
	KeyFile         = "tls-key-file"
	CACertFile      = "tls-ca-cert-file"
	AuthClients     = "tls-auth-clients"
	AuthClientsUser = "tls-auth-clients-user"
)

// TLSOptions are Redis's tls-* options, as the config file gives them.
type TLSOptions struct {
	Port int // tls-port; 0: no TLS listener
	// CertFile, KeyFile and CACertFile are tls-cert-file, tls-key-file and
	// tls-ca-cert-file; CACertFile may be "" when clients are not verified.
	CertFile, KeyFile, CACertFile string
	AuthClients                   string // tls-auth-clients: yes, no or optional
	AuthClientsUser               string // tls-auth-clients-user: CN or off
	Replication                   bool   // tls-replication: a replica reaches its primary over TLS
}

// Validate checks the options together; an error names the option and its bad value.
func (o TLSOptions) Validate() error {
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("tls-port: %d is not between 0 and 65535", o.Port)
	}
	auth, err := ParseTLSAuth(o.AuthClients)
	if err != nil {
		return err
	}
	if _, err := ParseCNUser(o.AuthClientsUser); err != nil {
		return err
	}
	if o.Port == 0 && !o.Replication {
		return nil
	}
	if o.CertFile == "" || o.KeyFile == "" {
		return errors.New("tls-cert-file and tls-key-file: both are needed with tls-port")
	}
	if auth != tls.NoClientCert && o.CACertFile == "" {
		return errors.New("tls-ca-cert-file: needed to verify clients' certificates unless tls-auth-clients is no")
	}
	return nil
}

// ParseCNUser reads tls-auth-clients-user: CN (true) or off, in any case.
func ParseCNUser(v string) (bool, error) {
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

// tlsAuthModes are the values of tls-auth-clients.
var tlsAuthModes = map[string]tls.ClientAuthType{
	"yes":      tls.RequireAndVerifyClientCert,
	"no":       tls.NoClientCert,
	"optional": tls.VerifyClientCertIfGiven,
}

// ParseTLSAuth reads tls-auth-clients: yes, no or optional, in any case.
func ParseTLSAuth(v string) (tls.ClientAuthType, error) {
	auth, ok := tlsAuthModes[strings.ToLower(v)]
	if !ok {
		return 0, fmt.Errorf("tls-auth-clients: %q is not one of yes, no, optional", v)
	}
	return auth, nil
}

// TLSFiles are the files of a TLS configuration and what was last read from them. All
// methods are safe for concurrent use.
type TLSFiles struct {
	mu     sync.Mutex        // guards files, stamp and config
	files  map[string]string // by parameter name: the files and tls-auth-clients
	stamp  string            // the files' sizes and modification times when config was built
	config *tls.Config
	// cnUser is tls-auth-clients-user CN: a verified certificate's common name is its
	// user (CertUser).
	cnUser atomic.Bool
}

// OpenTLS reads the files of o once, when o names a certificate; nil without one. An error
// names the file or the option that failed.
func OpenTLS(o TLSOptions) (*TLSFiles, error) {
	if o.CertFile == "" {
		return nil, nil
	}
	cn, err := ParseCNUser(o.AuthClientsUser)
	if err != nil {
		return nil, err
	}
	f := &TLSFiles{files: map[string]string{CertFile: o.CertFile, KeyFile: o.KeyFile, CACertFile: o.CACertFile, AuthClients: strings.ToLower(o.AuthClients)}}
	if _, err := f.Current(); err != nil {
		return nil, err
	}
	f.cnUser.Store(cn)
	return f, nil
}

// ServerConfig is the configuration of a listener: each handshake takes the files' current
// configuration; a renewal that does not load is told to warn, and the previous one serves.
func (f *TLSFiles) ServerConfig(warn func(err error)) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c, err := f.Current()
			if err != nil {
				warn(err)
			}
			return c, nil
		},
	}
}

// ClientConfig is the configuration a connection to another server (a replica's to its
// primary with tls-replication) uses: the same certificate, presented to a primary that
// verifies clients, and the CA file to verify the primary; nil without files (f nil) or
// while none has loaded.
func (f *TLSFiles) ClientConfig() *tls.Config {
	if f == nil {
		return nil
	}
	c, _ := f.Current()
	if c == nil {
		return nil
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: c.Certificates, RootCAs: c.RootCAs}
}

// Dial connects to addr over TLS with ClientConfig, checking the peer's certificate for
// addr's host.
func (f *TLSFiles) Dial(d *net.Dialer, addr string) (net.Conn, error) {
	conf := f.ClientConfig()
	if conf == nil {
		return nil, errors.New("tls-replication: no TLS certificates loaded")
	}
	host, _, _ := net.SplitHostPort(addr)
	conf.ServerName = host
	return tls.DialWithDialer(d, "tcp", addr, conf)
}

// CertUser is the name of the user a client's verified certificate names with
// tls-auth-clients-user CN: its common name; "" when the option is off, f is nil or the
// client presented no verified certificate (it is then the default user, as any other).
func (f *TLSFiles) CertUser(st tls.ConnectionState) string {
	if f == nil || !f.cnUser.Load() || len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return ""
	}
	return st.VerifiedChains[0][0].Subject.CommonName
}

// stampLocked is the files' sizes and modification times.
func (f *TLSFiles) stampLocked() string {
	var b strings.Builder
	for _, name := range []string{CertFile, KeyFile, CACertFile} {
		if f.files[name] == "" {
			continue
		}
		if st, err := os.Stat(f.files[name]); err == nil {
			b.WriteString(strconv.FormatInt(st.Size(), 10) + "@" + strconv.FormatInt(st.ModTime().UnixNano(), 10) + ";")
		}
	}
	return b.String()
}

// Current returns the configuration from the files, read again when they changed. Once one
// has loaded, a failure to reload returns it with the error.
func (f *TLSFiles) Current() (*tls.Config, error) {
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

// Get returns a parameter's value: one of CertFile, KeyFile, CACertFile, AuthClients and
// AuthClientsUser.
func (f *TLSFiles) Get(name string) string {
	if name == AuthClientsUser {
		return cnUserText(f.cnUser.Load())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.files[name]
}

// Set applies a CONFIG SET of a file, of tls-auth-clients or of tls-auth-clients-user,
// checked with CheckTLSValue, and loads the files at once. While they do not load together
// (the certificate changed and the key is still to come), the running configuration serves
// on.
func (f *TLSFiles) Set(name, v string) {
	switch name {
	case AuthClientsUser:
		on, _ := ParseCNUser(v)
		f.cnUser.Store(on)
		return
	case AuthClients:
		v = strings.ToLower(v)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[name] = v
	if c, err := f.loadLocked(); err == nil {
		f.config, f.stamp = c, f.stampLocked()
	}
}

// CheckTLSValue checks a CONFIG SET value of a TLS parameter on its own: the file holds
// what it should. Whether a certificate and a key match is known once both are set.
func CheckTLSValue(name, v string) error {
	switch name {
	case AuthClients:
		_, err := ParseTLSAuth(strings.ToLower(v))
		return err
	case AuthClientsUser:
		_, err := ParseCNUser(v)
		return err
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	want := "CERTIFICATE"
	if name == KeyFile {
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

// loadLocked reads the certificate, key and CA files.
func (f *TLSFiles) loadLocked() (*tls.Config, error) {
	auth, err := ParseTLSAuth(f.files[AuthClients])
	if err != nil {
		return nil, err
	}
	cert, key, ca := f.files[CertFile], f.files[KeyFile], f.files[CACertFile]
	if auth != tls.NoClientCert && ca == "" {
		return nil, errors.New("tls-ca-cert-file: needed to verify clients' certificates unless tls-auth-clients is no")
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("tls-cert-file %s, tls-key-file %s: %w", cert, key, err)
	}
	c := &tls.Config{
		Certificates: []tls.Certificate{pair},
		MinVersion:   tls.VersionTLS12,
		ClientAuth:   auth,
	}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("tls-ca-cert-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls-ca-cert-file %s: no PEM certificate in it", ca)
		}
		c.ClientCAs = pool
		c.RootCAs = pool // for tls-replication: the primary's certificate is checked against it
	}
	return c, nil
}
