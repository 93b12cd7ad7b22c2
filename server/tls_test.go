package server

import (
	"context"
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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// testPKI is a CA made at run time, with the files of a server certificate and of a
// client certificate it signed.
type testPKI struct {
	dir                      string
	ca                       *x509.Certificate
	caKey                    *ecdsa.PrivateKey
	caFile                   string
	serverCert, serverKey    string
	clientCert, clientKey    string
	pool                     *x509.CertPool
	clientPair               tls.Certificate
	serverSerial, nextSerial int64
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), nextSerial: 1}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(p.serial()),
		Subject:               pkix.Name{CommonName: "throttled test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	p.ca, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	p.caKey = key
	p.caFile = filepath.Join(p.dir, "ca.crt")
	writePEM(t, p.caFile, "CERTIFICATE", der)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	p.serverCert, p.serverKey = filepath.Join(p.dir, "server.crt"), filepath.Join(p.dir, "server.key")
	p.serverSerial = p.issue(t, p.serverCert, p.serverKey, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = filepath.Join(p.dir, "client.crt"), filepath.Join(p.dir, "client.key")
	p.issue(t, p.clientCert, p.clientKey, x509.ExtKeyUsageClientAuth)
	p.clientPair, err = tls.LoadX509KeyPair(p.clientCert, p.clientKey)
	require.NoError(t, err)
	return p
}

func (p *testPKI) serial() int64 { p.nextSerial++; return p.nextSerial - 1 }

// issue writes a certificate for 127.0.0.1 and localhost, and its key; it returns its serial.
func (p *testPKI) issue(t *testing.T, certFile, keyFile string, usage x509.ExtKeyUsage) int64 {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial := p.serial()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	// The key first: a reload between the two writes finds a pair that does not match
	// and keeps the old one.
	writePEM(t, keyFile, "EC PRIVATE KEY", kb)
	writePEM(t, certFile, "CERTIFICATE", der)
	return serial
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// startTLSServer serves TLS only on a listener of its own.
func startTLSServer(t *testing.T, p *testPKI, auth string) *testServer {
	t.Helper()
	ts := startServerWith(t, nil, func(c *Config) {
		c.TLSCertFile, c.TLSKeyFile, c.TLSCACertFile = p.serverCert, p.serverKey, p.caFile
		c.TLSAuthClients = auth
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ts.ServeTLS(ln)
	ts.addr = ln.Addr().String()
	return ts
}

func tlsClient(t *testing.T, ts *testServer, conf *tls.Config) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, TLSConfig: conf, Protocol: 2, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestTLSClientAuth(t *testing.T) {
	p := newPKI(t)
	ctx := context.Background()
	withCert := &tls.Config{RootCAs: p.pool, ServerName: "localhost", Certificates: []tls.Certificate{p.clientPair}}
	without := &tls.Config{RootCAs: p.pool, ServerName: "localhost"}
	for _, tc := range []struct {
		auth          string
		withoutCertOK bool
	}{
		{"yes", false},
		{"optional", true},
		{"no", true},
	} {
		t.Run(tc.auth, func(t *testing.T) {
			ts := startTLSServer(t, p, tc.auth)
			rdb := tlsClient(t, ts, withCert)
			require.Equal(t, []any{int64(0), int64(2), int64(1), int64(-1), int64(1000)}, do(t, rdb, "throttle", "k", "1", "1", "1"))
			err := tlsClient(t, ts, without).Ping(ctx).Err()
			if tc.withoutCertOK {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
			// A client that does not speak TLS gets nothing.
			plain := redis.NewClient(&redis.Options{Addr: ts.addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
			defer plain.Close()
			require.Error(t, plain.Ping(ctx).Err())
		})
	}
}

func TestTLSReloadsCertificates(t *testing.T) {
	p := newPKI(t)
	ts := startTLSServer(t, p, "yes")
	serialSeen := func() int64 {
		conf := &tls.Config{RootCAs: p.pool, ServerName: "localhost", Certificates: []tls.Certificate{p.clientPair}}
		conn, err := tls.Dial("tcp", ts.addr, conf)
		require.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	require.Equal(t, p.serverSerial, serialSeen())
	// A renewal is taken at the next handshake. The new files' size or time differs.
	time.Sleep(10 * time.Millisecond)
	renewed := p.issue(t, p.serverCert, p.serverKey, x509.ExtKeyUsageServerAuth)
	require.Equal(t, renewed, serialSeen())
	// A bad renewal keeps the certificate that works.
	require.NoError(t, os.WriteFile(p.serverCert, []byte("garbage"), 0o600))
	require.Equal(t, renewed, serialSeen())

	// CONFIG SET of the files loads them at once, or refuses them.
	rdb := tlsClient(t, ts, &tls.Config{RootCAs: p.pool, ServerName: "localhost", Certificates: []tls.Certificate{p.clientPair}})
	other := filepath.Join(p.dir, "other.crt")
	otherKey := filepath.Join(p.dir, "other.key")
	third := p.issue(t, other, otherKey, x509.ExtKeyUsageServerAuth)
	require.Contains(t, doErr(t, rdb, "config", "set", "tls-cert-file", filepath.Join(p.dir, "missing.crt")), "tls-cert-file")
	do(t, rdb, "config", "set", "tls-cert-file", other, "tls-key-file", otherKey)
	require.Equal(t, third, serialSeen())
	require.Equal(t, []any{"tls-cert-file", other}, do(t, rdb, "config", "get", "tls-cert-file"))
}

func TestTLSConfigValidation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TLSPort = 6380
	require.ErrorContains(t, cfg.Validate(), "tls-cert-file")
	cfg.TLSCertFile, cfg.TLSKeyFile = "a", "b"
	require.ErrorContains(t, cfg.Validate(), "tls-ca-cert-file")
	cfg.TLSAuthClients = "no"
	require.NoError(t, cfg.Validate())
	cfg.TLSAuthClients = "maybe"
	require.ErrorContains(t, cfg.Validate(), "tls-auth-clients")
}

// TestTLSRedisCLI drives the server with redis-cli --tls, when it is built with TLS.
func TestTLSRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed")
	}
	if help, _ := exec.Command(cli, "--help").CombinedOutput(); !strings.Contains(string(help), "--tls") {
		t.Skip("redis-cli is built without TLS")
	}
	p := newPKI(t)
	ts := startTLSServer(t, p, "yes")
	host, port, _ := net.SplitHostPort(ts.addr)
	out, err := exec.Command(cli, "--tls", "--cacert", p.caFile, "--cert", p.clientCert, "--key", p.clientKey,
		"-h", host, "-p", port, "throttle", "cli", "5", "1", "1s").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "0\n6\n5\n-1\n1000\n", string(out))
}

// TestTLSReplication replicates over TLS: the replica dials its primary's TLS port.
func TestTLSReplication(t *testing.T) {
	p := newPKI(t)
	primary := startTLSServer(t, p, "yes")
	// The replica's certificate serves as its client certificate too.
	clientAlso := filepath.Join(p.dir, "replica.crt")
	clientAlsoKey := filepath.Join(p.dir, "replica.key")
	p.issueBoth(t, clientAlso, clientAlsoKey)
	replica := startServerWith(t, nil, func(c *Config) {
		c.TLSCertFile, c.TLSKeyFile, c.TLSCACertFile = clientAlso, clientAlsoKey, p.caFile
		c.TLSReplication = true
		c.ReplicaOf = strings.Replace(primary.addr, ":", " ", 1)
	})
	conf := &tls.Config{RootCAs: p.pool, ServerName: "localhost", Certificates: []tls.Certificate{p.clientPair}}
	prdb := tlsClient(t, primary, conf)
	do(t, prdb, "set", "over-tls", "yes")
	rrdb := replica.client(t, 2)
	require.Eventually(t, func() bool {
		v, err := rrdb.Get(context.Background(), "over-tls").Result()
		return err == nil && v == "yes"
	}, 10*time.Second, 20*time.Millisecond)
}

// issueBoth writes a certificate good for both server and client authentication.
func (p *testPKI) issueBoth(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial()),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	writePEM(t, keyFile, "EC PRIVATE KEY", kb)
	writePEM(t, certFile, "CERTIFICATE", der)
}

// TestTLSMaxClientsCountsHandshakes: connections that never finish their handshake count
// against maxclients, so that they cannot pile up.
func TestTLSMaxClientsCountsHandshakes(t *testing.T) {
	p := newPKI(t)
	ts := startServerWith(t, nil, func(c *Config) {
		c.TLSCertFile, c.TLSKeyFile, c.TLSCACertFile = p.serverCert, p.serverKey, p.caFile
		c.MaxClients = 2
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ts.ServeTLS(ln)
	for i := 0; i < 2; i++ { // silent: their handshakes wait
		nc, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer nc.Close()
	}
	require.Eventually(t, func() bool { return ts.tlsHandshakes.Load() == 2 }, 5*time.Second, time.Millisecond)
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = nc.Read(make([]byte, 1))
	require.Error(t, err) // closed at once
	require.Equal(t, int64(2), ts.tlsHandshakes.Load())
}
