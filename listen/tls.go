package listen

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// The TLS files, under Redis's names: the certificate, key and CA files and tls-auth-clients.
// They are looked at on every handshake (Current): when one has changed (its size or
// modification time) they are read again, so that certificates are renewed without a
// restart. A renewal that does not load (a key that does not match, a file half written)
// keeps the previous configuration, and Current says why.

// The names of the TLS parameters, as TLSFiles.Get and Set take them.
const (
	CertFile    = "tls-cert-file"
	KeyFile     = "tls-key-file"
	CACertFile  = "tls-ca-cert-file"
	AuthClients = "tls-auth-clients"
)

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
	mu     sync.Mutex        // guards the fields
	files  map[string]string // by parameter name: the files and tls-auth-clients
	stamp  string            // the files' sizes and modification times when config was built
	config *tls.Config
}

// NewTLSFiles reads the files once; an error names the file that failed. auth is
// tls-auth-clients.
func NewTLSFiles(cert, key, ca, auth string) (*TLSFiles, error) {
	f := &TLSFiles{files: map[string]string{CertFile: cert, KeyFile: key, CACertFile: ca, AuthClients: strings.ToLower(auth)}}
	if _, err := f.Current(); err != nil {
		return nil, err
	}
	return f, nil
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

// Get returns a parameter's value: one of CertFile, KeyFile, CACertFile and AuthClients.
func (f *TLSFiles) Get(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.files[name]
}

// Set applies a CONFIG SET of a file or of tls-auth-clients, checked with CheckTLSValue, and
// loads the files at once. While they do not load together (the certificate changed and the
// key is still to come), the running configuration serves on.
func (f *TLSFiles) Set(name, v string) {
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
	if name == AuthClients {
		_, err := ParseTLSAuth(v)
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
