package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/ratelimit"
)

// authConfig is a domain whose user descriptor allows 2 a minute: its policy is
// rls.d.user, and a subject's key policy:rls.d.user:<subject>.
const authConfig = `domain: d
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: shadowed
    rate_limit: {unit: minute, requests_per_unit: 2}
    shadow_mode: true
  - key: a
    descriptors:
      - key: b
        rate_limit: {unit: minute, requests_per_unit: 2}
`

// grpcDoor is a server with ratelimit-config and a gRPC port, its admin over RESP (as the
// default user, with the password when one is set) and go-control-plane's client.
type grpcDoor struct {
	ts    *testServer
	admin *redis.Client
	rls   rlsv3.RateLimitServiceClient
	conn  *grpc.ClientConn
}

func startGRPCDoor(t *testing.T, configure func(*Config)) *grpcDoor {
	t.Helper()
	if configure == nil {
		configure = func(*Config) {}
	}
	rs := startRLS(t, map[string]string{"d.yaml": authConfig}, configure)
	admin := redis.NewClient(&redis.Options{Addr: rs.addr, Password: rs.cfg.RequirePass, Protocol: 2})
	t.Cleanup(func() { admin.Close() })
	return &grpcDoor{ts: rs.testServer, admin: admin, rls: rs.rls, conn: rs.conn}
}

// ask sends one descriptor per value of key with the authorization metadata auth (none
// when empty), and returns the answer's codes or the gRPC status code of its error.
func (g *grpcDoor) ask(t *testing.T, auth string, ds ...*commonv3.RateLimitDescriptor) ([]string, codes.Code) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if auth != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", auth)
	}
	r, err := g.rls.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: ds})
	if err != nil {
		return nil, status.Code(err)
	}
	return codesOf(r), codes.OK
}

// keys are the keys of the decisions made: policy:* (the policies' own record aside).
func (g *grpcDoor) keys(t *testing.T) []string {
	t.Helper()
	keys, err := g.admin.Keys(context.Background(), "policy:*").Result()
	require.NoError(t, err)
	return keys
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// TestGRPCRequirePass: with requirepass, a request without the password, or with a wrong
// one, is UNAUTHENTICATED and writes nothing; with it, in each form http-port takes, it is
// decided. Health checking stays open.
func TestGRPCRequirePass(t *testing.T) {
	g := startGRPCDoor(t, func(c *Config) { c.RequirePass = "s3cret" })
	for name, auth := range map[string]string{
		"none":           "",
		"wrong bearer":   "Bearer nope",
		"wrong basic":    basic("default", "nope"),
		"unknown user":   basic("mallory", "s3cret"),
		"other scheme":   "Digest s3cret",
		"bad base64":     "Basic !!!",
		"empty bearer":   "Bearer ",
		"password alone": "s3cret",
	} {
		got, code := g.ask(t, auth, desc("user", "victim"))
		require.Equal(t, codes.Unauthenticated, code, "%s: %v", name, got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	two := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer s3cret", "authorization", "Bearer nope")
	_, err := g.rls.ShouldRateLimit(two, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*commonv3.RateLimitDescriptor{desc("user", "victim")}})
	require.Equal(t, codes.Unauthenticated, status.Code(err), "two authorization entries")
	// Even a request that meets no rule is refused: the door is closed, not the rule.
	_, code := g.ask(t, "", desc("nothing", "here"))
	require.Equal(t, codes.Unauthenticated, code)
	require.Empty(t, g.keys(t), "nothing written")

	hc, err := healthpb.NewHealthClient(g.conn).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, hc.Status)

	for _, auth := range []string{"Bearer s3cret", basic("default", "s3cret"), "bearer default:s3cret"} {
		got, code := g.ask(t, auth, desc("user", "alice"))
		require.Equal(t, codes.OK, code, auth)
		require.Equal(t, []string{"OK", "OK"}, got, auth)
		do(t, g.admin, "DEL", "policy:rls.d.user:alice")
	}
	for range 2 {
		got, _ := g.ask(t, "Bearer s3cret", desc("user", "bob"))
		require.Equal(t, []string{"OK", "OK"}, got)
	}
	got, _ := g.ask(t, "Bearer s3cret", desc("user", "bob"))
	require.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, got)
	require.Equal(t, []string{"policy:rls.d.user:bob"}, g.keys(t))
}

// TestGRPCACLUser: an ACL user decides only on the keys its patterns allow, as CHECK over
// RESP does (policy:<policy>:<subject>), and only with CHECK among its commands.
func TestGRPCACLUser(t *testing.T) {
	g := startGRPCDoor(t, func(c *Config) { c.RequirePass = "s3cret" })
	do(t, g.admin, "ACL", "SETUSER", "app", "on", ">apppass", "~policy:rls.d.user:app-*", "+@ratelimit")
	do(t, g.admin, "ACL", "SETUSER", "reader", "on", ">readpass", "~*", "+@read")
	app := basic("app", "apppass")

	got, code := g.ask(t, app, desc("user", "app-1"))
	require.Equal(t, codes.OK, code)
	require.Equal(t, []string{"OK", "OK"}, got)
	_, code = g.ask(t, app, desc("user", "victim"))
	require.Equal(t, codes.PermissionDenied, code)
	// All or nothing: a request with one key outside the patterns spends nothing.
	_, code = g.ask(t, app, desc("user", "app-2"), desc("user", "victim"))
	require.Equal(t, codes.PermissionDenied, code)
	_, code = g.ask(t, "Bearer app:apppass", desc("user", "victim"))
	require.Equal(t, codes.PermissionDenied, code)
	_, code = g.ask(t, basic("reader", "readpass"), desc("user", "app-1"))
	require.Equal(t, codes.PermissionDenied, code, "no CHECK among its commands")
	require.Equal(t, []string{"policy:rls.d.user:app-1"}, g.keys(t))

	// The same user over RESP: the same answer.
	rdb := redis.NewClient(&redis.Options{Addr: g.ts.addr, Username: "app", Password: "apppass", Protocol: 2})
	defer rdb.Close()
	require.ErrorContains(t, rdb.Do(context.Background(), "CHECK", "rls.d.user", "victim").Err(), "NOPERM")
}

// TestGRPCACLChange: a credential verified once (and remembered) stops working as soon as
// the ACL says so: a new password, a user switched off or deleted, a new requirepass; new
// key patterns apply at the next request.
func TestGRPCACLChange(t *testing.T) {
	g := startGRPCDoor(t, func(c *Config) { c.RequirePass = "s3cret" })
	do(t, g.admin, "ACL", "SETUSER", "app", "on", ">apppass", "~policy:rls.d.user:app-*", "+check")
	app := basic("app", "apppass")
	allowed := func(auth, subject string) codes.Code {
		t.Helper()
		_, code := g.ask(t, auth, desc("user", subject))
		do(t, g.admin, "DEL", "policy:rls.d.user:"+subject) // never the limit that answers
		return code
	}
	for range 3 {
		require.Equal(t, codes.OK, allowed(app, "app-1"))
	}

	do(t, g.admin, "ACL", "SETUSER", "app", "resetkeys", "~policy:rls.d.user:other-*")
	require.Equal(t, codes.PermissionDenied, allowed(app, "app-1"))
	require.Equal(t, codes.OK, allowed(app, "other-1"))

	do(t, g.admin, "ACL", "SETUSER", "app", "resetpass", ">newpass")
	require.Equal(t, codes.Unauthenticated, allowed(app, "other-1"))
	app = basic("app", "newpass")
	require.Equal(t, codes.OK, allowed(app, "other-1"))

	do(t, g.admin, "ACL", "SETUSER", "app", "off")
	require.Equal(t, codes.Unauthenticated, allowed(app, "other-1"))
	do(t, g.admin, "ACL", "SETUSER", "app", "on")
	require.Equal(t, codes.OK, allowed(app, "other-1"))

	do(t, g.admin, "ACL", "DELUSER", "app")
	require.Equal(t, codes.Unauthenticated, allowed(app, "other-1"))
	do(t, g.admin, "ACL", "SETUSER", "app", "on", ">newpass", "~*", "+check")
	require.Equal(t, codes.OK, allowed(app, "other-1"))

	require.Equal(t, codes.OK, allowed("Bearer s3cret", "x"))
	do(t, g.admin, "CONFIG", "SET", "requirepass", "n3w")
	g.admin = redis.NewClient(&redis.Options{Addr: g.ts.addr, Password: "n3w", Protocol: 2})
	defer g.admin.Close()
	require.Equal(t, codes.Unauthenticated, allowed("Bearer s3cret", "x"))
	require.Equal(t, codes.OK, allowed("Bearer n3w", "x"))
}

// TestCredCache: a remembered credential answers only under the ACL change count it was
// verified at, and the cache stays bounded.
// TestGRPCOverlongDescriptor: a subject longer than ratelimit.MaxSubject is OVER_LIMIT, not
// an error (which Envoy may take for a pass), and nothing is spent or stored for the
// request; shadow_mode still passes it.
func TestGRPCOverlongDescriptor(t *testing.T) {
	g := startGRPCDoor(t, nil)
	long := strings.Repeat("x", ratelimit.MaxSubject+1)
	got, code := g.ask(t, "", desc("user", long))
	require.Equal(t, codes.OK, code)
	require.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, got)
	// Two values of 600 bytes make a subject of 1201.
	half := strings.Repeat("y", 600)
	got, _ = g.ask(t, "", desc("a", half, "b", half))
	require.Equal(t, []string{"OVER_LIMIT", "OVER_LIMIT"}, got)
	require.Empty(t, g.keys(t))

	// With another descriptor: denied all or nothing, the other's budget untouched.
	got, _ = g.ask(t, "", desc("user", "alice"), desc("user", long))
	require.Equal(t, []string{"OVER_LIMIT", "OK", "OVER_LIMIT"}, got)
	for range 2 {
		got, _ = g.ask(t, "", desc("user", "alice"))
		require.Equal(t, []string{"OK", "OK"}, got)
	}

	got, _ = g.ask(t, "", desc("user", long[:ratelimit.MaxSubject]))
	require.Equal(t, []string{"OK", "OK"}, got, "MaxSubject bytes are taken")
	got, _ = g.ask(t, "", desc("shadowed", long))
	require.Equal(t, []string{"OK", "OK"}, got, "shadow_mode never denies")
}

// TestRLSJSONACL: /json, Envoy's service over http-port, applies the user's key patterns to
// the descriptors as gRPC does.
func TestRLSJSONACL(t *testing.T) {
	g := startGRPCDoor(t, func(c *Config) { c.RequirePass = "s3cret" })
	do(t, g.admin, "ACL", "SETUSER", "app", "on", ">apppass", "~policy:rls.d.user:app-*", "+@ratelimit")
	base := serveHTTPAPI(t, g.ts)
	post := func(subject string) int {
		return httpDo(t, "POST", base+"/json", `{"domain":"d","descriptors":[{"entries":[{"key":"user","value":"`+subject+`"}]}]}`,
			"Authorization", basic("app", "apppass")).status
	}
	require.Eventually(t, func() bool { return post("app-1") == http.StatusOK }, 5*time.Second, 10*time.Millisecond)
	require.Equal(t, http.StatusForbidden, post("victim"))
	require.Equal(t, []string{"policy:rls.d.user:app-1"}, g.keys(t))
}

// certFor is a client certificate for common name cn that p's CA signed, in memory.
func (p *testPKI) certFor(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestGRPCClientCertificates: grpc-tls with tls-auth-clients and tls-ca-cert-file refuses at
// the handshake a client without a certificate the CA signed (yes), or with one another CA
// signed (optional too); with tls-auth-clients-user CN a certificate naming an ACL user that
// is on acts as that user, without a password.
func TestGRPCClientCertificates(t *testing.T) {
	p, other := newPKI(t), newPKI(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d.yaml"), []byte(authConfig), 0o644))
	ts := startServer(t, func(c *Config) {
		c.RateLimitConfig, c.GRPCTLS, c.RequirePass = dir, true, "s3cret"
		c.TLSCertFile, c.TLSKeyFile, c.TLSCACertFile = p.serverCert, p.serverKey, p.caFile
		c.TLSAuthClients, c.TLSAuthClientsUser = "yes", "CN"
	})
	g := &grpcDoor{ts: ts, admin: redis.NewClient(&redis.Options{Addr: ts.addr, Password: "s3cret", Protocol: 2})}
	defer g.admin.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ts.ServeGRPC(ln)
	ask := func(auth string, certs ...tls.Certificate) codes.Code {
		t.Helper()
		conf := &tls.Config{RootCAs: p.pool, ServerName: "localhost", Certificates: certs}
		conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(conf)))
		require.NoError(t, err)
		defer conn.Close()
		g.rls = rlsv3.NewRateLimitServiceClient(conn)
		_, code := g.ask(t, auth, desc("user", "x"))
		do(t, g.admin, "DEL", "policy:rls.d.user:x")
		return code
	}
	do(t, g.admin, "ACL", "SETUSER", "envoy", "on", "~policy:rls.d.user:*", "+check")

	require.Equal(t, codes.Unavailable, ask("Bearer s3cret"), "no certificate: refused at the handshake")
	require.Equal(t, codes.Unavailable, ask("Bearer s3cret", other.clientPair), "another CA's")
	require.Equal(t, codes.OK, ask("Bearer s3cret", p.clientPair))
	require.Equal(t, codes.Unauthenticated, ask("", p.clientPair), "CN localhost is no user: the default, which needs a password")
	envoy := p.certFor(t, "envoy")
	require.Equal(t, codes.OK, ask("", envoy), "CN envoy")
	require.Equal(t, codes.Unauthenticated, ask("Bearer wrong", envoy), "a credential given is the one that counts")
	do(t, g.admin, "ACL", "SETUSER", "envoy", "off")
	require.Equal(t, codes.Unauthenticated, ask("", envoy), "a user switched off")
	do(t, g.admin, "ACL", "SETUSER", "envoy", "on")
	do(t, g.admin, "CONFIG", "SET", "tls-auth-clients-user", "off")
	require.Equal(t, codes.Unauthenticated, ask("", envoy))
	require.Equal(t, "off", do(t, g.admin, "CONFIG", "GET", "tls-auth-clients-user").([]any)[1])

	do(t, g.admin, "CONFIG", "SET", "tls-auth-clients", "optional")
	require.Equal(t, codes.OK, ask("Bearer s3cret"), "optional: no certificate is let in")
	require.Equal(t, codes.Unavailable, ask("Bearer s3cret", other.clientPair), "optional: a bad one is not")
}

// TestTLSAuthClientsUser: on tls-port, tls-auth-clients-user CN makes a client whose
// certificate names an ACL user that user from the start, as in Redis 8.6.
func TestTLSAuthClientsUser(t *testing.T) {
	p := newPKI(t)
	ts := startServerWith(t, nil, func(c *Config) {
		c.TLSCertFile, c.TLSKeyFile, c.TLSCACertFile = p.serverCert, p.serverKey, p.caFile
		c.TLSAuthClientsUser, c.RequirePass = "cn", "s3cret"
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ts.ServeTLS(ln)
	ts.addr = ln.Addr().String()
	ctx := context.Background()
	admin := tlsClient(t, ts, &tls.Config{RootCAs: p.pool, ServerName: "localhost", Certificates: []tls.Certificate{p.clientPair}})
	require.ErrorContains(t, admin.Do(ctx, "ACL", "WHOAMI").Err(), "NOAUTH", "CN localhost is no user")
	require.NoError(t, admin.Do(ctx, "AUTH", "s3cret").Err())
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", "~app:*", "+@all").Err())
	require.Equal(t, "CN", admin.Do(ctx, "CONFIG", "GET", "tls-auth-clients-user").Val().([]any)[1])

	app := tlsClient(t, ts, &tls.Config{RootCAs: p.pool, ServerName: "localhost", Certificates: []tls.Certificate{p.certFor(t, "app")}})
	require.Equal(t, "app", app.Do(ctx, "ACL", "WHOAMI").Val())
	require.NoError(t, app.Set(ctx, "app:1", "v", 0).Err())
	require.ErrorContains(t, app.Set(ctx, "other", "v", 0).Err(), "NOPERM")
}

// BenchmarkCredentialUser: finding a gRPC request's user from its authorization metadata,
// remembered (as every request after the first) against verified each time (the ACL's lock
// and a SHA-256), from every core at once.
func BenchmarkCredentialUser(b *testing.B) {
	ts := startServer(b, func(c *Config) { c.RequirePass = "s3cret" })
	for _, bc := range []struct {
		name string
		find func() *acl.User
	}{
		{"remembered", func() *acl.User { u, _ := ts.edge.auth.CredentialUser("Bearer s3cret"); return u }},
		{"verified", func() *acl.User { return ts.acl.Authenticate([]byte("default"), []byte("s3cret")) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if bc.find() == nil {
						b.Fatal("not authenticated")
					}
				}
			})
		})
	}
}
