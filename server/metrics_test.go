package server

import (
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
)

// serveMetrics serves ts's metrics on 127.0.0.1:0 and returns the base URL.
func serveMetrics(t testing.TB, ts *testServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ts.ServeMetrics(ln)
	return "http://" + ln.Addr().String()
}

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// scrape parses /metrics with Prometheus's own parser.
func scrape(t testing.TB, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return fams
}

// value finds the sample of family name whose labels include labels.
func value(t testing.TB, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f := fams[name]
	require.NotNil(t, f, "no family %s", name)
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.Counter.GetValue()
		case dto.MetricType_GAUGE:
			return m.Gauge.GetValue()
		}
		return m.Untyped.GetValue()
	}
	t.Fatalf("no sample of %s with %v", name, labels)
	return 0
}

func TestMetrics(t *testing.T) {
	ts := startServer(t)
	base := serveMetrics(t, ts)
	rdb := ts.client(t, 2)
	for i := 0; i < 5; i++ {
		do(t, rdb, "THROTTLE", "hot", 1, 1, "1h") // 2 allowed, 3 denied
	}
	do(t, rdb, "TOKENBUCKET", "tb", 10, 1, "1s")
	doErr(t, rdb, "THROTTLE", "x")

	fams := scrape(t, base)
	require.Equal(t, 2.0, value(t, fams, "throttled_decisions_total", "verb", "throttle", "result", "allowed"))
	require.Equal(t, 3.0, value(t, fams, "throttled_decisions_total", "verb", "throttle", "result", "denied"))
	require.Equal(t, 1.0, value(t, fams, "throttled_decisions_total", "verb", "tokenbucket", "result", "allowed"))
	require.Equal(t, 5.0, value(t, fams, "throttled_commands_total", "command", "throttle"))
	require.Equal(t, 1.0, value(t, fams, "throttled_command_rejected_total", "command", "throttle"))
	require.Greater(t, value(t, fams, "throttled_command_duration_seconds_total", "command", "throttle"), 0.0)
	require.Equal(t, 3.0, value(t, fams, "throttled_top_denied_key_denials", "rank", "1", "key", "hot"))
	require.Equal(t, 2.0, value(t, fams, "throttled_keys"))
	require.Equal(t, 1.0, value(t, fams, "throttled_connected_clients"))
	require.Equal(t, 1.0, value(t, fams, "throttled_persistence_write_ok"))
	require.Equal(t, 1.0, value(t, fams, "throttled_replication_primary"))
	require.Equal(t, 1.0, value(t, fams, "throttled_ready"))
	require.Greater(t, value(t, fams, "throttled_memory_used_bytes"), 0.0)
	require.NotNil(t, fams["go_goroutines"])
	require.Nil(t, fams["throttled_upstream_link_up"], "no upstream")
	for name, f := range fams {
		if strings.HasPrefix(name, "throttled_") && f.GetType() == dto.MetricType_COUNTER {
			require.True(t, strings.HasSuffix(name, "_total"), "counter %s", name)
		}
	}

	code, body := get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	code, body = get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code, body)

	code, body = get(t, base+"/")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{"<title>throttled status</title>", "<td>hot</td>", "<td>throttle</td>", "ready"} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, "http://", "no external assets")
	require.NotContains(t, body, "https://", "no external assets")
	code, _ = get(t, base+"/nothing")
	require.Equal(t, http.StatusNotFound, code)
}

// TestReadyzReplica: a replica whose primary is away is alive but not ready.
func TestReadyzReplica(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	away := ln.Addr().(*net.TCPAddr)
	ln.Close()
	ts := startServer(t, func(c *Config) { c.ReplicaOf = "127.0.0.1 " + itoa(int64(away.Port)) })
	base := serveMetrics(t, ts)
	code, _ := get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code)
	code, body := get(t, base+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "not ready: replica not in sync with its primary\n", body)
	fams := scrape(t, base)
	require.Equal(t, 0.0, value(t, fams, "throttled_ready"))
	require.Equal(t, 0.0, value(t, fams, "throttled_replication_link_up"))
}

// TestMetricsPort: the option serves metrics on its port and Close stops it.
func TestMetricsPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ts := startServer(t, func(c *Config) { c.MetricsPort = port })
	base := "http://127.0.0.1:" + itoa(int64(port))
	code, _ := get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code)
	rdb := ts.client(t, 2)
	require.Equal(t, []any{"metrics-port", itoa(int64(port))}, toList(do(t, rdb, "CONFIG", "GET", "metrics-port")))
	ts.Close()
	_, err = http.Get(base + "/healthz")
	require.Error(t, err)
}

func toList(v any) []any {
	if m, ok := v.(map[any]any); ok {
		var out []any
		for k, x := range m {
			out = append(out, k, x)
		}
		return out
	}
	return v.([]any)
}

// TestMetricsPortUsers: with a password set, the status page asks for credentials (401, as
// http-port) and shows a user only the most denied keys its patterns let it read; a user
// that may not run TOPDENIED gets 403. /metrics, /healthz and /readyz stay open, /metrics
// with the most denied keys only for a scrape whose user may see them.
func TestMetricsPortUsers(t *testing.T) {
	ts := startServer(t, func(c *Config) {
		c.RequirePass = "adminpw"
		c.Users = [][]string{{"app", "on", ">s3cret", "~app:*", "+@ratelimit"}, {"reader", "on", ">r", "~*", "+get"}}
	})
	admin := ts.client(t, 2)
	do(t, admin, "AUTH", "adminpw")
	for _, k := range []string{"app:x", "other:secret"} {
		do(t, admin, "THROTTLE", k, "0", "1", "1h")
		do(t, admin, "THROTTLE", k, "0", "1", "1h")
	}
	base := serveMetrics(t, ts)
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	fetch := func(path, auth string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", base+path, nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, auth string
		status     int
		see        []string // of app:x and other:secret
	}{
		{"no credentials", "", http.StatusUnauthorized, nil},
		{"a wrong password", basic("app", "nope"), http.StatusUnauthorized, nil},
		{"without TOPDENIED", basic("reader", "r"), http.StatusForbidden, nil},
		{"a tenant", basic("app", "s3cret"), http.StatusOK, []string{"app:x"}},
		{"the default user", "Bearer adminpw", http.StatusOK, []string{"app:x", "other:secret"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, page := fetch("/", tc.auth)
			require.Equal(t, tc.status, code, page)
			code, metrics := fetch("/metrics", tc.auth)
			require.Equal(t, http.StatusOK, code, "/metrics stays open")
			require.Contains(t, metrics, "throttled_keys ")
			for _, k := range []string{"app:x", "other:secret"} {
				want := slices.Contains(tc.see, k)
				require.Equal(t, want, strings.Contains(page, "<td>"+k+"</td>"), "the page and %s", k)
				require.Equal(t, want, strings.Contains(metrics, `key="`+k+`"`), "/metrics and %s", k)
			}
		})
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		code, _ := fetch(path, "")
		require.Equal(t, http.StatusOK, code, path)
	}
}
