package listen

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// selfSigned writes a self-signed certificate for cn and its key under dir; it returns
// the files and the certificate.
func selfSigned(t *testing.T, dir, cn string) (certFile, keyFile string, cert *x509.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<33, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	return certFile, keyFile, cert
}

func TestTLSOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    TLSOptions
		err  string
	}{
		{name: "off", o: TLSOptions{AuthClients: "yes", AuthClientsUser: "off"}},
		{name: "files", o: TLSOptions{Port: 6380, CertFile: "c", KeyFile: "k", CACertFile: "ca", AuthClients: "YES", AuthClientsUser: "cn"}},
		{name: "no verification", o: TLSOptions{Port: 6380, CertFile: "c", KeyFile: "k", AuthClients: "no", AuthClientsUser: "off"}},
		{name: "port", o: TLSOptions{Port: 70000, AuthClients: "yes", AuthClientsUser: "off"}, err: "tls-port: 70000 is not between 0 and 65535"},
		{name: "auth", o: TLSOptions{AuthClients: "maybe", AuthClientsUser: "off"}, err: `tls-auth-clients: "maybe" is not one of yes, no, optional`},
		{name: "cn user", o: TLSOptions{AuthClients: "yes", AuthClientsUser: "SAN"}, err: `tls-auth-clients-user: "SAN" is not one of CN, off`},
		{name: "no key", o: TLSOptions{Replication: true, CertFile: "c", AuthClients: "yes", AuthClientsUser: "off"}, err: "tls-cert-file and tls-key-file: both are needed with tls-port"},
		{name: "no ca", o: TLSOptions{Port: 6380, CertFile: "c", KeyFile: "k", AuthClients: "optional", AuthClientsUser: "off"}, err: "tls-ca-cert-file: needed to verify clients' certificates unless tls-auth-clients is no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.err)
		})
	}
}

func TestTLSFilesParams(t *testing.T) {
	f, err := OpenTLS(TLSOptions{})
	require.NoError(t, err)
	require.Nil(t, f, "no certificate, no files")
	require.Nil(t, f.ClientConfig())
	_, err = f.Dial(&net.Dialer{}, "127.0.0.1:1")
	require.EqualError(t, err, "tls-replication: no TLS certificates loaded")

	cert, key, _ := selfSigned(t, t.TempDir(), "server")
	f, err = OpenTLS(TLSOptions{CertFile: cert, KeyFile: key, AuthClients: "No", AuthClientsUser: "cn"})
	require.NoError(t, err)
	require.Equal(t, "no", f.Get(AuthClients))
	require.Equal(t, "CN", f.Get(AuthClientsUser))

	require.EqualError(t, CheckTLSValue(AuthClients, "MAYBE"), `tls-auth-clients: "maybe" is not one of yes, no, optional`)
	require.EqualError(t, CheckTLSValue(AuthClientsUser, "x"), `tls-auth-clients-user: "x" is not one of CN, off`)
	require.ErrorContains(t, CheckTLSValue(KeyFile, cert), "no PEM private key in it")
	require.NoError(t, CheckTLSValue(AuthClients, "OPTIONAL"))
	require.NoError(t, CheckTLSValue(AuthClientsUser, "Off"))

	f.Set(AuthClientsUser, "Off")
	require.Equal(t, "off", f.Get(AuthClientsUser))
	f.Set(AuthClients, "OPTIONAL") // needs a CA file: the running configuration serves on
	require.Equal(t, "optional", f.Get(AuthClients))
	c, err := f.Current()
	require.NoError(t, err)
	require.Equal(t, tls.NoClientCert, c.ClientAuth)
	cc := f.ClientConfig()
	require.Len(t, cc.Certificates, 1)
}

func TestTLSCertUser(t *testing.T) {
	cert, key, leaf := selfSigned(t, t.TempDir(), "app")
	verified := tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{leaf}}}
	var none *TLSFiles
	require.Equal(t, "", none.CertUser(verified))

	f, err := OpenTLS(TLSOptions{CertFile: cert, KeyFile: key, CACertFile: cert, AuthClients: "yes", AuthClientsUser: "CN"})
	require.NoError(t, err)
	require.Equal(t, "app", f.CertUser(verified))
	require.Equal(t, "", f.CertUser(tls.ConnectionState{}), "no verified certificate, no user")
	f.Set(AuthClientsUser, "off")
	require.Equal(t, "", f.CertUser(verified))
}

func TestTLSServerConfigReloads(t *testing.T) {
	dir := t.TempDir()
	cert, key, _ := selfSigned(t, dir, "server")
	f, err := OpenTLS(TLSOptions{CertFile: cert, KeyFile: key, AuthClients: "no", AuthClientsUser: "off"})
	require.NoError(t, err)
	var warned []error
	sc := f.ServerConfig(func(err error) { warned = append(warned, err) })
	first, err := sc.GetConfigForClient(nil)
	require.NoError(t, err)
	require.Empty(t, warned)

	// a renewal half written: the previous configuration serves on, and the server is told
	require.NoError(t, os.WriteFile(key, []byte("not a key"), 0o600))
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(key, later, later))
	got, err := sc.GetConfigForClient(nil)
	require.NoError(t, err)
	require.Same(t, first, got)
	require.Len(t, warned, 1)

	// the renewal completed: the new files serve
	cert2, key2, _ := selfSigned(t, dir, "server2")
	require.NoError(t, os.Rename(cert2, cert))
	require.NoError(t, os.Rename(key2, key))
	got, err = sc.GetConfigForClient(nil)
	require.NoError(t, err)
	require.NotSame(t, first, got)
	require.Len(t, warned, 1)
}
