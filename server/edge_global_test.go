package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
	"github.com/throttledhq/throttled/upstream"
)

// TestEdgeGlobalUpstream: in upstream mode the edge's doors decide GLOBAL policies from the
// instance's allowance, and the sync loop agrees on them through the upstream: an Envoy
// descriptor with global: true, and /v1/auth on a policy set with GLOBAL. A descriptor or a
// policy without GLOBAL is refused as CHECK refuses it (OVER_LIMIT for Envoy, which must not
// let a refusal through; 503 for HTTP, as any decision the server cannot make). The clock stands still: nothing refills.
func TestEdgeGlobalUpstream(t *testing.T) {
	rs := redistest.Start(t)
	rls := startRLS(t, map[string]string{"api.yaml": `
domain: api
descriptors:
  - key: tenant
    rate_limit: {unit: hour, requests_per_unit: 3, algorithm: window, global: true}
  - key: path
    rate_limit: {unit: hour, requests_per_unit: 3}
`}, func(c *Config) {
		c.AppendOnly = false
		c.Upstream, c.UpstreamTimeout, c.GlobalSyncInterval = rs.URL(), time.Minute, 20*time.Millisecond
	})
	ts := rls.testServer
	rdb := ts.client(t, 2)
	require.Equal(t, "WINDOW 3 3600 GLOBAL", do(t, rdb, "POLICY.GET", "rls.api.tenant").([]any)[3])

	for range 3 {
		require.Equal(t, []string{ok, ok}, codesOf(rls.ask(t, "api", 1, desc("tenant", "acme"))))
	}
	r := rls.ask(t, "api", 1, desc("tenant", "acme"))
	require.Equal(t, []string{over, over}, codesOf(r))
	require.Equal(t, uint32(0), r.Statuses[0].LimitRemaining)
	require.Equal(t, []string{over, over}, codesOf(rls.ask(t, "api", 1, desc("path", "/login"))), "not GLOBAL: refused")

	do(t, rdb, "POLICY.SET", "web", "THROTTLE", 1, 1, "1h", "GLOBAL")
	do(t, rdb, "POLICY.SET", "exact", "THROTTLE", 1, 1, "1h")
	base := serveHTTPAPI(t, ts)
	for range 2 {
		a := httpDo(t, "GET", base+"/v1/auth/web", "", "X-Forwarded-For", "203.0.113.7")
		require.Equal(t, http.StatusOK, a.status, "%v", a.body)
	}
	a := httpDo(t, "GET", base+"/v1/auth/web", "", "X-Forwarded-For", "203.0.113.7")
	require.Equal(t, http.StatusTooManyRequests, a.status)
	require.NotEmpty(t, a.header.Get("Retry-After"))
	a = httpDo(t, "GET", base+"/v1/auth/exact", "", "X-Forwarded-For", "203.0.113.7")
	require.Equal(t, http.StatusServiceUnavailable, a.status)
	require.Contains(t, a.body["error"], "in upstream mode CHECK decides GLOBAL policies only")

	// Both keys reach the upstream at the next sync.
	up := rs.Client()
	deadline := time.Now().Add(10 * time.Second)
	for _, key := range []string{"policy:rls.api.tenant:acme", "policy:web:203.0.113.7"} {
		for up.Exists(context.Background(), upstream.GlobalPrefix+key).Val() == 0 {
			require.True(t, time.Now().Before(deadline), "%s never synced", key)
			time.Sleep(5 * time.Millisecond)
		}
	}
}
