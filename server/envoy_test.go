package server

import (
	"context"
	"crypto/tls"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"github.com/throttledhq/throttled/envoyrls"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"gopkg.in/yaml.v3"
)

// rlsServer is a test server with ratelimit-config and its gRPC port.
type rlsServer struct {
	*testServer
	dir  string
	conn *grpc.ClientConn
	rls  rlsv3.RateLimitServiceClient
}

// startRLS starts a server whose ratelimit-config is a directory holding files (name ->
// YAML), configured further by configure when given, and connects go-control-plane's
// generated client to its gRPC port.
func startRLS(t *testing.T, files map[string]string, configure ...func(*Config)) *rlsServer {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	ts := startServer(t, func(c *Config) {
		c.RateLimitConfig = dir
		for _, f := range configure {
			f(c)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ts.ServeGRPC(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return &rlsServer{testServer: ts, dir: dir, conn: conn, rls: rlsv3.NewRateLimitServiceClient(conn)}
}

// desc builds a descriptor from key, value pairs.
func desc(kv ...string) *commonv3.RateLimitDescriptor {
	d := &commonv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &commonv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// ask sends one request of hits units and returns the answer.
func (rs *rlsServer) ask(t *testing.T, domain string, hits uint32, ds ...*commonv3.RateLimitDescriptor) *rlsv3.RateLimitResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := rs.rls.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits})
	require.NoError(t, err)
	return resp
}

// codes returns the overall code and each status's, as names.
func codesOf(r *rlsv3.RateLimitResponse) []string {
	out := []string{r.OverallCode.String()}
	for _, s := range r.Statuses {
		out = append(out, s.Code.String())
	}
	return out
}

const (
	ok   = "OK"
	over = "OVER_LIMIT"
)

// The configurations below are the examples of envoyproxy/ratelimit's README
// ("Examples", 1 to 9), and each test checks the answers the README states for them.

func TestRLSExample1(t *testing.T) {
	rs := startRLS(t, map[string]string{"mongo.yaml": `
domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500

  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
`})
	for _, db := range []string{"users", "default"} {
		r := rs.ask(t, "mongo_cps", 500, desc("database", db))
		require.Equal(t, []string{ok, ok}, codesOf(r), db)
		require.Equal(t, uint32(500), r.Statuses[0].CurrentLimit.RequestsPerUnit)
		require.Equal(t, rlsv3.RateLimitResponse_RateLimit_SECOND, r.Statuses[0].CurrentLimit.Unit)
		require.Equal(t, uint32(0), r.Statuses[0].LimitRemaining)
		require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "mongo_cps", 1, desc("database", db))), db)
	}
	// Another value, another domain: no rule, OK with no limit.
	for _, r := range []*rlsv3.RateLimitResponse{rs.ask(t, "mongo_cps", 1000, desc("database", "other")), rs.ask(t, "nope", 1, desc("database", "users"))} {
		require.Equal(t, []string{ok, ok}, codesOf(r))
		require.Nil(t, r.Statuses[0].CurrentLimit)
	}
	// A second later the limit is whole again (GCRA: 500 at once, 500 a second).
	rs.clock.Advance(time.Second)
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "mongo_cps", 500, desc("database", "users"))))
}

func TestRLSExample2(t *testing.T) {
	rs := startRLS(t, map[string]string{"messaging.yaml": `
domain: messaging
descriptors:
  # Only allow 5 marketing messages a day
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5

  # Only allow 100 messages a day to any unique phone number
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
`})
	both := func(n string) *rlsv3.RateLimitResponse {
		return rs.ask(t, "messaging", 0, desc("message_type", "marketing", "to_number", n), desc("to_number", n))
	}
	for i := 0; i < 5; i++ {
		r := both("2061111111")
		require.Equal(t, []string{ok, ok, ok}, codesOf(r))
		require.Equal(t, uint32(4-i), r.Statuses[0].LimitRemaining)
		require.Equal(t, uint32(99-i), r.Statuses[1].LimitRemaining)
	}
	// The sixth marketing message is over; all or nothing, the number's 100 lose nothing.
	r := both("2061111111")
	require.Equal(t, []string{over, over, ok}, codesOf(r))
	require.Equal(t, uint32(95), r.Statuses[1].LimitRemaining)
	require.Equal(t, rlsv3.RateLimitResponse_RateLimit_DAY, r.Statuses[0].CurrentLimit.Unit)
	require.Positive(t, r.Statuses[0].DurationUntilReset.AsDuration())
	// Another number has its own 5; the plain descriptor its own 100.
	require.Equal(t, []string{ok, ok, ok}, codesOf(both("2062222222")))
	r = rs.ask(t, "messaging", 95, desc("to_number", "2061111111"))
	require.Equal(t, []string{ok, ok}, codesOf(r))
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "messaging", 1, desc("to_number", "2061111111"))))
}

func TestRLSExample3(t *testing.T) {
	rs := startRLS(t, map[string]string{"edge.yaml": `
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10

  # Black list IP
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
`})
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "edge_proxy_per_ip", 10, desc("remote_address", "50.0.0.1"))))
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "edge_proxy_per_ip", 1, desc("remote_address", "50.0.0.1"))))
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "edge_proxy_per_ip", 10, desc("remote_address", "50.0.0.2"))))
	r := rs.ask(t, "edge_proxy_per_ip", 1, desc("remote_address", "50.0.0.5"))
	require.Equal(t, []string{over, over}, codesOf(r))
	require.Equal(t, uint32(0), r.Statuses[0].CurrentLimit.RequestsPerUnit)
	require.Equal(t, uint32(0), r.Statuses[0].LimitRemaining)
}

func TestRLSExample4(t *testing.T) {
	rs := startRLS(t, map[string]string{"a.yaml": `
domain: example4
descriptors:
  - key: key
    value: value
    rate_limit:
      requests_per_unit: 300
      unit: second
`, "b.yaml": `
domain: example4b
descriptors:
  - key: key
    value: value
    descriptors:
      - key: subkey
        rate_limit:
          requests_per_unit: 300
          unit: second
`})
	two := desc("key", "value", "subkey", "subvalue")
	r := rs.ask(t, "example4", 1, two)
	require.Equal(t, []string{ok, ok}, codesOf(r))
	require.Nil(t, r.Statuses[0].CurrentLimit, "two entries meet no one-level rule")
	r = rs.ask(t, "example4b", 1, two)
	require.Equal(t, uint32(300), r.Statuses[0].CurrentLimit.RequestsPerUnit)
	require.Equal(t, uint32(299), r.Statuses[0].LimitRemaining)
	r = rs.ask(t, "example4b", 1, desc("key", "value"))
	require.Nil(t, r.Statuses[0].CurrentLimit, "the placeholder level has no limit")
}

func TestRLSExample5(t *testing.T) {
	rs := startRLS(t, map[string]string{"internal.yaml": `
domain: internal
descriptors:
  - key: ldap
    rate_limit:
      unlimited: true

  - key: azure
    rate_limit:
      unit: minute
      requests_per_unit: 100
`})
	r := rs.ask(t, "internal", 1000, desc("ldap", "x"))
	require.Equal(t, []string{ok, ok}, codesOf(r))
	require.Equal(t, uint32(math.MaxUint32), r.Statuses[0].LimitRemaining)
	require.Nil(t, r.Statuses[0].CurrentLimit)
	r = rs.ask(t, "internal", 100, desc("azure", "x"))
	require.Equal(t, []string{ok, ok}, codesOf(r))
	require.Equal(t, rlsv3.RateLimitResponse_RateLimit_MINUTE, r.Statuses[0].CurrentLimit.Unit)
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "internal", 1, desc("azure", "x"))))
}

func TestRLSExample6ShadowMode(t *testing.T) {
	rs := startRLS(t, map[string]string{"example6.yaml": `
domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit:
          requests_per_unit: 10
          unit: second
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit:
          requests_per_unit: 20
          unit: second
`})
	for i := 0; i < 3; i++ {
		r := rs.ask(t, "example6", 10, desc("service", "auth-service", "user", "user-a"))
		require.Equal(t, []string{ok, ok}, codesOf(r), "shadow mode never limits")
	}
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "example6", 20, desc("service", "auth-service", "user", "user-b"))))
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "example6", 1, desc("service", "auth-service", "user", "user-b"))))
	// The breaches are counted, as shadow denials of the policy.
	info := do(t, rs.client(t, 2), "INFO", "throttle").(string)
	require.Contains(t, info, "policy_rls.example6.service.user_user-a:allowed=1,denied=0,shadow_denied=2")
}

func TestRLSExample7Replaces(t *testing.T) {
	rs := startRLS(t, map[string]string{"example7.yaml": `
domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          name: specific_limit
          requests_per_unit: 5
          unit: second
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: second
`})
	d1, d2 := desc("key_1", "value_1", "user", "bkthomps"), desc("key_2", "value_2", "user", "bkthomps")
	// Both: the 5 a second is replaced, the 10 apply.
	r := rs.ask(t, "example7", 10, d1, d2)
	require.Equal(t, []string{ok, ok, ok}, codesOf(r))
	require.Nil(t, r.Statuses[0].CurrentLimit)
	require.Equal(t, uint32(10), r.Statuses[1].CurrentLimit.RequestsPerUnit)
	require.Equal(t, []string{over, ok, over}, codesOf(rs.ask(t, "example7", 1, d1, d2)))
	// Alone, (key_1, value_1), (user, bkthomps) keeps its 5, untouched by the above.
	r = rs.ask(t, "example7", 5, d1)
	require.Equal(t, []string{ok, ok}, codesOf(r))
	require.Equal(t, "specific_limit", r.Statuses[0].CurrentLimit.Name)
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "example7", 1, d1)))
}

func TestRLSExample8And9(t *testing.T) {
	rs := startRLS(t, map[string]string{"example8.yaml": `
domain: example8
descriptors:
  - key: key1
    detailed_metric: true
    rate_limit:
      unit: minute
      requests_per_unit: 10
  - key: key1
    value: value1
    rate_limit:
      unit: minute
      requests_per_unit: 20
`, "example9.yaml": `
domain: example9
descriptors:
  - key: key1
    value: value*
    rate_limit:
      unit: minute
      requests_per_unit: 20
`})
	for _, v := range []string{"unspecified_value", "unspecified_value2"} {
		require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "example8", 10, desc("key1", v))))
		require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "example8", 1, desc("key1", v))))
	}
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "example8", 20, desc("key1", "value1"))))
	// Each value the wildcard meets has its own 20.
	for _, v := range []string{"value_1", "value_2"} {
		require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "example9", 20, desc("key1", v))))
		require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "example9", 1, desc("key1", v))))
	}
	require.Nil(t, rs.ask(t, "example9", 1, desc("key1", "other")).Statuses[0].CurrentLimit)
}

// TestRLSThrottledAdditions: the algorithm, the headers, the hits per descriptor, and the
// policies as CHECK, POLICY.GET, POLICY.DENY, INFO, commandstats and TOPDENIED see them.
func TestRLSThrottledAdditions(t *testing.T) {
	rs := startRLS(t, map[string]string{"api.yaml": `
domain: api
response_headers: true
descriptors:
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: window}
  - key: path
    value: /login
    rate_limit: {unit: hour, requests_per_unit: 2, algorithm: sliding}
`})
	rdb := rs.client(t, 2)
	require.Equal(t, []any{"name", "rls.api.tenant", "limit", "WINDOW 3 60", "soft", "0", "shadow", int64(0), "source", "config", "entries", int64(0)},
		do(t, rdb, "POLICY.GET", "rls.api.tenant"))
	require.Equal(t, "SLIDE 2 3600", do(t, rdb, "POLICY.GET", "rls.api.path_-login").([]any)[3])
	require.ErrorContains(t, rdb.Do(context.Background(), "POLICY.DEL", "rls.api.tenant").Err(), "comes from ratelimit-config")

	r := rs.ask(t, "api", 1, desc("tenant", "acme"))
	require.Equal(t, []string{ok, ok}, codesOf(r))
	hdr := map[string]string{}
	for _, h := range r.ResponseHeadersToAdd {
		hdr[h.Key] = h.Value
	}
	require.Equal(t, `"rls.api.tenant";q=3;w=60`, hdr["RateLimit-Policy"])
	require.Equal(t, "2", hdr["X-RateLimit-Remaining"])
	require.Equal(t, "3", hdr["X-RateLimit-Limit"])
	require.True(t, strings.HasPrefix(hdr["RateLimit"], `"rls.api.tenant";r=2;t=`), hdr["RateLimit"])
	require.NotContains(t, hdr, "Retry-After")

	// CHECK sees the same key: subject acme.
	require.Equal(t, []any{int64(0), int64(3), int64(1), int64(-1)}, do(t, rdb, "CHECK", "rls.api.tenant", "acme").([]any)[:4])
	// hits_addend of the descriptor wins over the request's.
	d := desc("tenant", "acme")
	d.HitsAddend = wrapperspb.UInt64(2)
	r = rs.ask(t, "api", 1, d)
	require.Equal(t, []string{over, over}, codesOf(r))
	hdr = map[string]string{}
	for _, h := range r.ResponseHeadersToAdd {
		hdr[h.Key] = h.Value
	}
	require.NotEmpty(t, hdr["Retry-After"])
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "api", 1, desc("tenant", "acme"))))
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "api", 1, desc("tenant", "acme"))))

	// Allow and deny lists apply to the descriptor's value.
	do(t, rdb, "POLICY.DENY", "rls.api.tenant", "evil")
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "api", 1, desc("tenant", "evil"))))
	do(t, rdb, "POLICY.ALLOW", "rls.api.tenant", "acme")
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "api", 1, desc("tenant", "acme"))))

	info := do(t, rdb, "INFO", "throttle").(string)
	require.Contains(t, info, "policy_rls.api.tenant:allowed=4,denied=3")
	require.Contains(t, do(t, rdb, "INFO", "commandstats").(string), "cmdstat_check:calls=7,")
	top := do(t, rdb, "TOPDENIED").([]any)
	require.Contains(t, top, "policy:rls.api.tenant:acme")
	require.Contains(t, top, "policy:rls.api.tenant:evil")

	// Deny events, as CHECK's.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ps := rs.client(t, 2).Subscribe(ctx, "__throttled__:denied:check")
	defer ps.Close()
	_, err := ps.Receive(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "api", 1, desc("tenant", "evil"))))
	msg, err := ps.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "check policy:rls.api.tenant:evil -1", msg.Payload)
}

// TestRLSReload: a changed file applies on Reload (SIGHUP); a bad one keeps the old
// configuration and the error names the file and the line.
func TestRLSReload(t *testing.T) {
	rs := startRLS(t, map[string]string{"a.yaml": "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"})
	require.Equal(t, uint32(1), rs.ask(t, "d", 1, desc("k", "v")).Statuses[0].CurrentLimit.RequestsPerUnit)
	path := filepath.Join(rs.dir, "a.yaml")
	require.NoError(t, os.WriteFile(path, []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 7}\n"), 0o644))
	require.NoError(t, rs.ReloadRateLimitConfig())
	require.Equal(t, uint32(7), rs.ask(t, "d", 1, desc("k", "v")).Statuses[0].CurrentLimit.RequestsPerUnit)

	require.NoError(t, os.WriteFile(path, []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 7}\n"), 0o644))
	err := rs.ReloadRateLimitConfig()
	require.ErrorContains(t, err, path+":3: unit must be")
	require.Equal(t, uint32(7), rs.ask(t, "d", 1, desc("k", "v")).Statuses[0].CurrentLimit.RequestsPerUnit)

	require.NoError(t, os.WriteFile(path, []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, request_per_unit: 7}\n"), 0o644))
	require.ErrorContains(t, rs.ReloadRateLimitConfig(), path+":4: unknown field 'request_per_unit'")
}

func TestRLSHealthAndBadRequests(t *testing.T) {
	rs := startRLS(t, map[string]string{"a.yaml": "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, svc := range []string{"", "envoy.service.ratelimit.v3.RateLimitService"} {
		h, err := healthpb.NewHealthClient(rs.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		require.NoError(t, err)
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, h.Status)
	}
	for _, req := range []*rlsv3.RateLimitRequest{
		{},
		{Domain: "d"},
		{Descriptors: []*commonv3.RateLimitDescriptor{desc("k", "v")}},
		{Domain: "d", Descriptors: make([]*commonv3.RateLimitDescriptor, 65)},
	} {
		_, err := rs.rls.ShouldRateLimit(ctx, req)
		require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", req)
	}
	// Nil descriptors and entries are no descriptor's: OK with no limit.
	r, err := rs.rls.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: make([]*commonv3.RateLimitDescriptor, 3)})
	require.NoError(t, err)
	require.Equal(t, []string{ok, ok, ok, ok}, codesOf(r))
}

// FuzzShouldRateLimit: any request, as bytes on the wire, gets an answer or an error, never a
// panic, and a limit's status never says more remain than its limit.
func FuzzShouldRateLimit(f *testing.F) {
	seed := &rlsv3.RateLimitRequest{Domain: "d", HitsAddend: 2, Descriptors: []*commonv3.RateLimitDescriptor{desc("k", "v"), desc("a", "x", "b", "y")}}
	b, _ := proto.Marshal(seed)
	f.Add(b)
	seed = &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*commonv3.RateLimitDescriptor{desc("k", "v", "p", "pay"), desc("p", "x", "a", "x", "b", "y")}}
	b, _ = proto.Marshal(seed)
	f.Add(b)
	f.Add([]byte{})
	dir := f.TempDir()
	require.NoError(f, os.WriteFile(filepath.Join(dir, "d.yaml"), []byte(`
domain: d
priority_key: p
descriptors:
  - key: k
    rate_limit: {unit: second, requests_per_unit: 5, tiers: {pay: 1, default: 0.5}}
  - key: a
    value: x*
    descriptors:
      - key: b
        rate_limit: {unit: minute, requests_per_unit: 0}
  - key: z
    rate_limit: {unlimited: true}
`), 0o644))
	ts := startServer(f, func(c *Config) { c.RateLimitConfig = dir })
	f.Fuzz(func(t *testing.T, b []byte) {
		var req rlsv3.RateLimitRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		r, err := ts.edge.rls.ShouldRateLimit(envoyrls.WithUser(context.Background(), ts.acl.Default()), &req)
		if err != nil {
			return
		}
		require.Len(t, r.Statuses, len(req.Descriptors))
		for _, s := range r.Statuses {
			if s.CurrentLimit != nil {
				require.LessOrEqual(t, s.LimitRemaining, max(s.CurrentLimit.RequestsPerUnit, 1))
			}
		}
	})
}

// TestRLSExamplesEnvoy: the configuration examples/envoy gives users loads and answers.
func TestRLSExamplesEnvoy(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.RateLimitConfig = "../examples/envoy/ratelimit" })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ts.ServeGRPC(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	rs := &rlsServer{testServer: ts, conn: conn, rls: rlsv3.NewRateLimitServiceClient(conn)}
	require.Equal(t, []string{ok, ok, ok}, codesOf(rs.ask(t, "edge", 10, desc("remote_address", "192.0.2.1"), desc("path", "/login"))))
	require.Equal(t, []string{over, over, ok}, codesOf(rs.ask(t, "edge", 1, desc("remote_address", "192.0.2.1"), desc("path", "/login"))))
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "edge", 801, desc("api_key", "k1"))), "the default tier's 800")
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "edge", 800, desc("api_key", "k1"))))
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "edge", 1, desc("api_key", "k1"))))
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "edge", 200, desc("api_key", "k1", "priority", "payments"))))
	// The AI gateway's route: 4096 tokens reserved, then the 2896 an answer did not use given back.
	reserve := desc("llm_key", "k1")
	reserve.HitsAddend = wrapperspb.UInt64(4096)
	require.Equal(t, uint32(100000-4096), rs.ask(t, "edge", 1, reserve).Statuses[0].LimitRemaining)
	settle := rs.ask(t, "edge", 1, refundOf(2896, "llm_key", "k1"))
	require.Equal(t, []string{ok, ok}, codesOf(settle))
	require.Equal(t, uint32(100000-1200), settle.Statuses[0].LimitRemaining)

	b, err := os.ReadFile("../examples/envoy/envoy.yaml")
	require.NoError(t, err)
	var envoy map[string]any
	require.NoError(t, yaml.Unmarshal(b, &envoy))
	require.Contains(t, string(b), "domain: edge")
	require.Contains(t, string(b), "apply_on_stream_done: true")
	require.Contains(t, string(b), "is_negative_hits: true")
}

// TestRLSOverTLS: with grpc-tls the gRPC port speaks TLS with the tls-* files, and asks for a
// client certificate as tls-auth-clients says.
func TestRLSOverTLS(t *testing.T) {
	p := newPKI(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d.yaml"), []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), 0o644))
	ts := startServer(t, func(c *Config) {
		c.RateLimitConfig, c.GRPCTLS = dir, true
		c.TLSCertFile, c.TLSKeyFile, c.TLSCACertFile = p.serverCert, p.serverKey, p.caFile
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ts.ServeGRPC(ln)
	ask := func(conf *tls.Config) error {
		conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(conf)))
		require.NoError(t, err)
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*commonv3.RateLimitDescriptor{desc("k", "v")}})
		return err
	}
	require.NoError(t, ask(&tls.Config{RootCAs: p.pool, ServerName: "localhost", Certificates: []tls.Certificate{p.clientPair}}))
	require.Error(t, ask(&tls.Config{RootCAs: p.pool, ServerName: "localhost"}), "tls-auth-clients yes by default: no certificate, no answer")
}

// BenchmarkShouldRateLimit: one descriptor over a real gRPC connection, random subjects.
func BenchmarkShouldRateLimit(b *testing.B) {
	dir := b.TempDir()
	require.NoError(b, os.WriteFile(filepath.Join(dir, "d.yaml"), []byte("domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 100}\n"), 0o644))
	ts := startServer(b, func(c *Config) { c.RateLimitConfig = dir })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go ts.ServeGRPC(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(b, err)
	defer conn.Close()
	rls := rlsv3.NewRateLimitServiceClient(conn)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			_, err := rls.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*commonv3.RateLimitDescriptor{desc("user", "u"+strconv.Itoa(i%100000))}})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRLSJSON: envoyproxy/ratelimit's /json form, as the HTTP port mounts it.
func TestRLSJSON(t *testing.T) {
	rs := startRLS(t, map[string]string{"a.yaml": "domain: d\nresponse_headers: true\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.edge.rls.ServeJSON(w, r.WithContext(envoyrls.WithUser(r.Context(), rs.acl.Default())))
	}))
	defer hs.Close()
	post := func(body string) (int, string, http.Header) {
		resp, err := http.Post(hs.URL, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b), resp.Header
	}
	req := `{"domain": "d", "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}`
	code, body, hdr := post(req)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"overallCode":"OK"`)
	require.Equal(t, "0", hdr.Get("X-RateLimit-Remaining"))
	code, body, hdr = post(req)
	require.Equal(t, 429, code, body)
	require.Contains(t, body, `"overallCode":"OVER_LIMIT"`)
	require.NotEmpty(t, hdr.Get("Retry-After"))
	for _, bad := range []string{`{`, `{"domain": 7}`, `{"domain": "d"}`, `{"domain": "d", "nope": 1}`} {
		code, body, _ = post(bad)
		require.Equal(t, 400, code, bad)
		require.Contains(t, body, `"error":`, bad)
	}
	code, _, _ = post(strings.Repeat(" ", 2<<20))
	require.Equal(t, 413, code)
	resp, err := http.Get(hs.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 405, resp.StatusCode)
}

// TestRLSJSONOnHTTPPort: http-port mounts /json, behind its users: with a password set, a
// request without credentials gets 401, one with them the decision.
func TestRLSJSONOnHTTPPort(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"),
		[]byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), 0o644))
	ts := startServer(t, func(c *Config) { c.RateLimitConfig = dir; c.RequirePass = "pw" })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ts.ServeHTTPAPI(ln)
	post := func(auth string) (int, string) {
		req, err := http.NewRequest("POST", "http://"+ln.Addr().String()+"/json",
			strings.NewReader(`{"domain": "d", "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}`))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 5*time.Second, 10*time.Millisecond)
	code, body := post("")
	require.Equal(t, 401, code, body)
	code, body = post("Bearer wrong")
	require.Equal(t, 401, code, body)
	code, body = post("Bearer pw")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"overallCode":"OK"`)
}

// BenchmarkShouldRateLimitHandler is one decision of Envoy's service without gRPC: the
// matching, the CHECK and the response, to set against BenchmarkShouldRateLimit.
func BenchmarkShouldRateLimitHandler(b *testing.B) {
	dir := b.TempDir()
	require.NoError(b, os.WriteFile(filepath.Join(dir, "d.yaml"), []byte("domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 100}\n"), 0o644))
	ts := startServer(b, func(c *Config) { c.RateLimitConfig = dir })
	reqs := make([]*rlsv3.RateLimitRequest, 1024)
	for i := range reqs {
		reqs[i] = &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*commonv3.RateLimitDescriptor{desc("user", "u"+strconv.Itoa(i))}}
	}
	ctx := envoyrls.WithUser(context.Background(), ts.acl.Default()) // as grpc-port's interceptor leaves it
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := ts.edge.rls.ShouldRateLimit(ctx, reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
	}
}
