package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/httpapi"
)

// full is a snapshot with every part present.
type full struct{ ready bool }

func (f full) Snapshot() Snapshot {
	return Snapshot{
		Version: "1.0", Role: "master", Uptime: time.Minute,
		Decisions:  []Decisions{{Verb: "throttle", Allowed: 5, Denied: 2}},
		Transports: []Transport{{Transport: "resp", Allowed: 3, Denied: 1}, {Transport: "grpc", Allowed: 2, Denied: 1}},
		Commands:   []Command{{Name: "throttle", Calls: 7, Time: time.Millisecond}},
		Latencies: []Latency{{Command: "throttle", Count: 7, Sum: time.Millisecond, P50: 90 * time.Microsecond,
			Buckets: []uint64{1, 5, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7}}},
		Keys:        3,
		Persistence: &Persistence{WriteOK: true},
		Replication: Replication{Primary: true, Replicas: []Replica{{Addr: "10.0.0.2:6379", Lag: time.Second}}},
		Upstream:    &Upstream{LinkUp: true, Breaker: "closed", Global: &Global{}},
		Ready:       f.ready, NotReady: "upstream breaker open",
	}
}

func (full) TopDenied(n int, see func(string) bool) []Denied {
	var out []Denied
	for _, d := range []Denied{{Key: "user:1", Count: 2}, {Key: "tenant2:ip:203.0.113.9", Count: 1}} {
		if (see == nil || see(d.Key)) && len(out) < n {
			out = append(out, d)
		}
	}
	return out
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

func TestCollector(t *testing.T) {
	h := Handler(full{ready: true}, Options{})
	code, body := get(t, h, "/metrics")
	require.Equal(t, http.StatusOK, code)
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	// Every family the collector knows is exported from a snapshot with every part, except
	// a replica's own (this one is a primary).
	for _, name := range Names() {
		if name == "throttled_replication_link_up" || name == "throttled_replication_last_io_seconds" ||
			strings.HasSuffix(name, "_bucket") || strings.HasSuffix(name, "_count") || strings.HasSuffix(name, "_sum") {
			continue // a replica's own, and the series of a histogram (its family is there)
		}
		require.Contains(t, fams, name)
	}
	for name, f := range fams {
		if !strings.HasPrefix(name, "throttled_") {
			continue
		}
		if f.GetType() == dto.MetricType_COUNTER {
			require.True(t, strings.HasSuffix(name, "_total"), name)
		} else {
			require.False(t, strings.HasSuffix(name, "_total"), name)
		}
	}
	denials := map[string]float64{}
	for _, m := range fams["throttled_top_denied_key_denials"].Metric {
		for _, l := range m.Label {
			if l.GetName() == "key" {
				denials[l.GetValue()] = m.Gauge.GetValue()
			}
		}
	}
	require.Equal(t, map[string]float64{"user:1": 2, "tenant2:ip:203.0.113.9": 1}, denials)

	code, _ = get(t, h, "/readyz")
	require.Equal(t, http.StatusOK, code)
	code, body = get(t, Handler(full{}, Options{}), "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "not ready: upstream breaker open\n", body)
}

// TestStatusPage: the page has every part and no external assets.
func TestStatusPage(t *testing.T) {
	h := Handler(full{ready: true}, Options{})
	code, body := get(t, h, "/")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{"<td>throttle</td>", "<td>user:1</td>", "10.0.0.2:6379", "breaker", "ready", "<th>p99.9</th>", "<td>90µs</td>"} {
		require.Contains(t, body, want)
	}
	require.NotRegexp(t, `(src|href)=`, body)
}

// TestKeysShownOnlyToTheirUsers: the status page answers 401 or 403 to whom Options.Keys
// refuses, and lists only the keys its user may see; /metrics stays open, with the most
// denied keys only for a scrape whose user may see them.
func TestKeysShownOnlyToTheirUsers(t *testing.T) {
	h := Handler(full{ready: true}, Options{Keys: func(r *http.Request) (func(string) bool, error) {
		switch r.Header.Get("Authorization") {
		case "":
			return nil, fmt.Errorf("%w: Basic credentials or a bearer token", httpapi.ErrUnauthorized)
		case "Bearer reader":
			return nil, fmt.Errorf("%w: no TOPDENIED", httpapi.ErrForbidden)
		case "Bearer user":
			return func(k string) bool { return strings.HasPrefix(k, "user:") }, nil
		}
		return nil, nil
	}})
	serve := func(path, auth string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", path, nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		h.ServeHTTP(rec, r)
		return rec
	}
	rec := serve("/", "")
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.Equal(t, `Basic realm="throttled"`, rec.Header().Get("WWW-Authenticate"))
	require.NotContains(t, rec.Body.String(), "user:1")
	require.Equal(t, http.StatusForbidden, serve("/", "Bearer reader").Code)
	rec = serve("/", "Bearer user")
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Body.String(), "<td>user:1</td>")
	require.NotContains(t, rec.Body.String(), "tenant2")
	rec = serve("/", "Bearer admin")
	require.Contains(t, rec.Body.String(), "<td>tenant2:ip:203.0.113.9</td>")

	for auth, want := range map[string][]string{"": nil, "Bearer reader": nil, "Bearer user": {"user:1"},
		"Bearer admin": {"user:1", "tenant2:ip:203.0.113.9"}} {
		rec := serve("/metrics", auth)
		require.Equal(t, http.StatusOK, rec.Code, "/metrics stays open")
		var p expfmt.TextParser
		fams, err := p.TextToMetricFamilies(rec.Body)
		require.NoError(t, err)
		require.Contains(t, fams, "throttled_keys")
		var got []string
		if f := fams["throttled_top_denied_key_denials"]; f != nil {
			for _, m := range f.Metric {
				for _, l := range m.Label {
					if l.GetName() == "key" {
						got = append(got, l.GetValue())
					}
				}
			}
		}
		require.ElementsMatch(t, want, got, "%q", auth)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		require.Equal(t, http.StatusOK, serve(path, "").Code, path)
	}
}

// TestDashboard: the Grafana dashboard is JSON, and every query names only metrics that
// throttled exports.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("../grafana/throttled.json")
	require.NoError(t, err)
	var d struct {
		Title  string
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Type  string
				Query any
			}
		}
	}
	require.NoError(t, json.Unmarshal(b, &d))
	require.Equal(t, "throttled", d.Title)
	known := make(map[string]bool)
	for _, n := range Names() {
		known[n] = true
	}
	metric := regexp.MustCompile(`throttled_[a-z_]+`)
	var exprs []string
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			exprs = append(exprs, q)
		}
	}
	for _, e := range exprs {
		names := metric.FindAllString(e, -1)
		require.NotEmpty(t, names, "query names no throttled metric: %s", e)
		for _, n := range names {
			require.True(t, known[n], "%s is not a metric throttled exports (%s)", n, e)
		}
	}
}
