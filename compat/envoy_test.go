package compat

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	commonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"gopkg.in/yaml.v3"
)

// TestEnvoyRateLimitService drives the real binary as Envoy does: grpc-port and
// ratelimit-config from the config file, ShouldRateLimit and the health check through
// go-control-plane's generated client, the descriptor's policy through redis-cli, and a
// changed file applied on SIGHUP, a bad one kept out with its file and line in the log.
func TestEnvoyRateLimitService(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules")
	require.NoError(t, os.Mkdir(rules, 0o755))
	yamlFile := filepath.Join(rules, "edge.yaml")
	write := func(n int) {
		require.NoError(t, os.WriteFile(yamlFile, []byte("domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit:\n      unit: hour\n      requests_per_unit: "+strconv.Itoa(n)+"\n"), 0o644))
	}
	write(2)
	grpcPort := freePort(t)
	conf := filepath.Join(dir, "throttled.conf")
	metricsPort := freePort(t)
	require.NoError(t, os.WriteFile(conf, []byte("grpc-port "+strconv.Itoa(grpcPort)+"\nratelimit-config "+rules+
		"\nmetrics-port "+strconv.Itoa(metricsPort)+"\n"), 0o644))
	p := start(t, conf)

	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(grpcPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"}, grpc.WaitForReady(true))
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, h.Status)

	rls := rlsv3.NewRateLimitServiceClient(conn)
	ask := func(addr string) string {
		r, err := rls.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*commonv3.RateLimitDescriptor{
			{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: addr}}}}})
		require.NoError(t, err)
		return r.OverallCode.String()
	}
	require.Equal(t, "OK", ask("192.0.2.1"))
	require.Equal(t, "OK", ask("192.0.2.1"))
	require.Equal(t, "OVER_LIMIT", ask("192.0.2.1"))
	require.Equal(t, "rls.edge.remote_address", p.cli(t, "POLICY.LIST"))
	require.Equal(t, "1", strings.Split(p.cli(t, "CHECK", "rls.edge.remote_address", "192.0.2.1", "PEEK"), "\n")[0])
	require.Equal(t, "OK", p.cli(t, "POLICY.DENY", "rls.edge.remote_address", "198.51.100.0/24"))
	require.Equal(t, "OVER_LIMIT", ask("198.51.100.7"))
	require.Contains(t, p.cli(t, "INFO", "commandstats"), "cmdstat_check:calls=5,")
	// The gRPC decisions under their own transport label, redis-cli's CHECK under RESP's.
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(metricsPort) + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	for _, want := range []string{
		`throttled_transport_decisions_total{result="allowed",transport="grpc"} 2`,
		`throttled_transport_decisions_total{result="denied",transport="grpc"} 2`,
		`throttled_transport_decisions_total{result="denied",transport="resp"} 1`,
	} {
		require.Contains(t, string(metrics), want+"\n")
	}

	write(100)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool {
		return strings.Contains(p.cli(t, "POLICY.GET", "rls.edge.remote_address"), "THROTTLE 99 100 3600")
	}, 5*time.Second, 20*time.Millisecond)
	// 192.0.2.1 keeps what it used (2 of 2 is 100 of 100): a new limit never refills. (An hour, so
	// that a slow machine between the calls refills nothing: 100 an hour is one each 36 s.)
	require.Equal(t, "OVER_LIMIT", ask("192.0.2.1"))
	for i := 0; i < 3; i++ {
		require.Equal(t, "OK", ask("192.0.2.2"))
	}

	require.NoError(t, os.WriteFile(yamlFile, []byte("domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n"), 0o644))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), yamlFile+":3: unit must be") }, 5*time.Second, 20*time.Millisecond)
	require.Contains(t, p.stderr.String(), "ratelimit-config not reloaded")
	require.Contains(t, p.cli(t, "POLICY.GET", "rls.edge.remote_address"), "THROTTLE 99 100 3600")
	require.Equal(t, "OK", ask("192.0.2.2"))
}

// TestEnvoyRateLimitServiceRequirePass: with requirepass, the binary's gRPC port answers a
// request without the password, or with a wrong one, UNAUTHENTICATED and stores nothing;
// with the password in the authorization metadata (as Envoy's initial_metadata sends it)
// it decides. An ACL user's key patterns bound the descriptors it may spend.
func TestEnvoyRateLimitServiceRequirePass(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "edge.yaml"),
		[]byte("domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: minute, requests_per_unit: 1}\n"), 0o644))
	grpcPort := freePort(t)
	p := start(t, "--grpc-port", strconv.Itoa(grpcPort), "--ratelimit-config", dir, "--requirepass", "s3cret",
		"--user", "edge", "on", ">edgepass", "~policy:rls.edge.remote_address:10.*", "+check")
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(grpcPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	require.NoError(t, err, "health checking needs no password")
	rls := rlsv3.NewRateLimitServiceClient(conn)
	ask := func(auth, addr string) (string, codes.Code) {
		t.Helper()
		ctx := ctx
		if auth != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", auth)
		}
		r, err := rls.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*commonv3.RateLimitDescriptor{
			{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: addr}}}}})
		return r.GetOverallCode().String(), status.Code(err)
	}
	for _, auth := range []string{"", "Bearer wrong", "Basic " + base64.StdEncoding.EncodeToString([]byte("default:wrong"))} {
		_, code := ask(auth, "192.0.2.1")
		require.Equal(t, codes.Unauthenticated, code, auth)
	}
	admin := []string{"-a", "s3cret", "--no-auth-warning"}
	require.Equal(t, "0", p.cli(t, append(admin, "DBSIZE")...))

	got, code := ask("Bearer s3cret", "192.0.2.1")
	require.Equal(t, codes.OK, code)
	require.Equal(t, "OK", got)
	got, _ = ask("Basic "+base64.StdEncoding.EncodeToString([]byte("default:s3cret")), "192.0.2.1")
	require.Equal(t, "OVER_LIMIT", got)

	edge := "Basic " + base64.StdEncoding.EncodeToString([]byte("edge:edgepass"))
	got, code = ask(edge, "10.0.0.1")
	require.Equal(t, codes.OK, code)
	require.Equal(t, "OK", got)
	_, code = ask(edge, "192.0.2.2")
	require.Equal(t, codes.PermissionDenied, code)
	require.Equal(t, "policy:rls.edge.remote_address:10.0.0.1\npolicy:rls.edge.remote_address:192.0.2.1",
		p.cli(t, append(admin, "EVAL", "local k = redis.call('KEYS', 'policy:*') table.sort(k) return k", "0")...))
}

// TestEnvoyExampleCredentials: examples/envoy's throttled.conf and the authorization
// metadata its envoy.yaml sends agree: the binary started with that file decides for it,
// and refuses a request without it.
func TestEnvoyExampleCredentials(t *testing.T) {
	b, err := os.ReadFile("../examples/envoy/envoy.yaml")
	require.NoError(t, err)
	var doc any
	require.NoError(t, yaml.Unmarshal(b, &doc))
	auth := findMetadata(doc, "authorization")
	require.NotEmpty(t, auth, "envoy.yaml sends authorization metadata")

	grpcPort := freePort(t)
	start(t, "../examples/envoy/throttled.conf", "--grpc-port", strconv.Itoa(grpcPort),
		"--ratelimit-config", "../examples/envoy/ratelimit", "--appendonly", "no")
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(grpcPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rls := rlsv3.NewRateLimitServiceClient(conn)
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*commonv3.RateLimitDescriptor{
		{Entries: []*commonv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "192.0.2.1"}}}}}
	_, err = rls.ShouldRateLimit(ctx, req, grpc.WaitForReady(true))
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	r, err := rls.ShouldRateLimit(metadata.AppendToOutgoingContext(ctx, "authorization", auth), req)
	require.NoError(t, err)
	require.Equal(t, "OK", r.OverallCode.String())
}

// findMetadata returns the value of the initial_metadata entry key anywhere in an Envoy
// configuration; empty when there is none.
func findMetadata(v any, key string) string {
	switch v := v.(type) {
	case map[string]any:
		if md, ok := v["initial_metadata"].([]any); ok {
			for _, e := range md {
				if m, ok := e.(map[string]any); ok && m["key"] == key {
					s, _ := m["value"].(string)
					return s
				}
			}
		}
		for _, x := range v {
			if s := findMetadata(x, key); s != "" {
				return s
			}
		}
	case []any:
		for _, x := range v {
			if s := findMetadata(x, key); s != "" {
				return s
			}
		}
	}
	return ""
}
