package server

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// edgeConfig is the ratelimit-config of the edge tests: one policy every door can name.
const edgeConfig = `
domain: api
priority_key: priority
descriptors:
  - key: tenant
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: window}
  - key: merchant
    rate_limit:
      unit: minute
      requests_per_unit: 10
      tiers: {payments: 1, default: 0.8}
`

// TestEdgeCountsAsRESP: the same decisions through each door (a RESP CHECK, POST /v1/check,
// forward-auth, gRPC ShouldRateLimit, /json) leave the same INFO throttle, commandstats,
// TOPDENIED and deny events, and count under their own transport label.
func TestEdgeCountsAsRESP(t *testing.T) {
	type door struct {
		name, transport string
		decide          func(t *testing.T, rs *rlsServer, base, subject string) bool // true when allowed
	}
	for _, d := range []door{
		{"resp", "resp", func(t *testing.T, rs *rlsServer, base, subject string) bool {
			return do(t, rs.client(t, 2), "CHECK", "rls.api.tenant", subject).([]any)[0] == int64(0)
		}},
		{"http check", "http", func(t *testing.T, rs *rlsServer, base, subject string) bool {
			return httpDo(t, "POST", base+"/v1/check", `{"policy":"rls.api.tenant","subject":"`+subject+`"}`).status == http.StatusOK
		}},
		{"http auth", "http", func(t *testing.T, rs *rlsServer, base, subject string) bool {
			return httpDo(t, "GET", base+"/v1/auth/rls.api.tenant?subject=header:X-Tenant", "", "X-Tenant", subject).status == http.StatusOK
		}},
		{"grpc", "grpc", func(t *testing.T, rs *rlsServer, base, subject string) bool {
			return rs.ask(t, "api", 1, desc("tenant", subject)).OverallCode.String() == ok
		}},
		{"json", "http", func(t *testing.T, rs *rlsServer, base, subject string) bool {
			return httpDo(t, "POST", base+"/json", `{"domain":"api","descriptors":[{"entries":[{"key":"tenant","value":"`+subject+`"}]}]}`).status == http.StatusOK
		}},
	} {
		t.Run(d.name, func(t *testing.T) {
			rs := startRLS(t, map[string]string{"api.yaml": edgeConfig})
			base := serveHTTPAPI(t, rs.testServer)
			rdb := rs.client(t, 2)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ps := rs.client(t, 2).Subscribe(ctx, "__throttled__:denied", "__throttled__:denied:check")
			defer ps.Close()
			for range 2 {
				_, err := ps.Receive(ctx)
				require.NoError(t, err)
			}

			var allowed []bool
			for _, subject := range []string{"acme", "acme", "acme", "acme", "beta", "acme"} {
				allowed = append(allowed, d.decide(t, rs, base, subject))
			}
			require.Equal(t, []bool{true, true, true, false, true, false}, allowed)

			info := do(t, rdb, "INFO", "throttle").(string)
			for _, want := range []string{"throttle_allowed:4\r\n", "throttle_denied:2\r\n", "verb_check:allowed=4,denied=2\r\n",
				"policy_rls.api.tenant:allowed=4,denied=2,"} {
				require.Contains(t, info, want)
			}
			stats := regexp.MustCompile(`cmdstat_check:calls=(\d+),.*rejected_calls=(\d+),failed_calls=(\d+)`).
				FindStringSubmatch(do(t, rdb, "INFO", "commandstats").(string))
			require.Equal(t, []string{"6", "0", "0"}, stats[1:])
			require.Equal(t, []any{"policy:rls.api.tenant:acme", int64(2)}, do(t, rdb, "TOPDENIED"))
			// The clock stands 20 s into a minute: the window ends in 40 s.
			var events []string
			for range 4 {
				msg, err := ps.ReceiveMessage(ctx)
				require.NoError(t, err)
				events = append(events, msg.Channel+" "+msg.Payload)
			}
			require.ElementsMatch(t, []string{
				"__throttled__:denied check policy:rls.api.tenant:acme 40000",
				"__throttled__:denied:check check policy:rls.api.tenant:acme 40000",
				"__throttled__:denied check policy:rls.api.tenant:acme 40000",
				"__throttled__:denied:check check policy:rls.api.tenant:acme 40000",
			}, events)

			_, metrics := get(t, serveMetrics(t, rs.testServer)+"/metrics")
			for _, tr := range []string{"resp", "http", "grpc"} {
				want := map[bool]string{true: "4", false: "0"}[tr == d.transport]
				require.Contains(t, metrics, `throttled_transport_decisions_total{result="allowed",transport="`+tr+`"} `+want+"\n")
				want = map[bool]string{true: "2", false: "0"}[tr == d.transport]
				require.Contains(t, metrics, `throttled_transport_decisions_total{result="denied",transport="`+tr+`"} `+want+"\n")
			}
			do(t, rdb, "CONFIG", "RESETSTAT")
			_, metrics = get(t, serveMetrics(t, rs.testServer)+"/metrics")
			require.Contains(t, metrics, `throttled_transport_decisions_total{result="allowed",transport="`+d.transport+`"} 0`+"\n")
		})
	}
}

// TestEdgePriorityAndRefund: CHECK's PRIORITY and REFUND through each edge door: the JSON's
// "priority" and "refund", forward-auth's priority= (a tier, or header:<Name>), and an Envoy
// descriptor's priority_key entry. A tier from a request (a header, a descriptor) that the
// limit does not name is the default tier, never an error; a tier the caller names itself
// must exist.
func TestEdgePriorityAndRefund(t *testing.T) {
	rs := startRLS(t, map[string]string{"api.yaml": edgeConfig})
	base := serveHTTPAPI(t, rs.testServer)
	rdb := rs.client(t, 2)
	do(t, rdb, "POLICY.SET", "pay", "WINDOW", "10", "1m", "TIERS", "payments=1", "default=0.8")
	remaining := func(subject string) any {
		return do(t, rdb, "CHECK", "pay", subject, "PEEK", "COST", "0").([]any)[2]
	}

	t.Run("check json", func(t *testing.T) {
		a := httpDo(t, "POST", base+"/v1/check", `{"policy":"pay","subject":"m1","cost":8}`)
		require.Equal(t, http.StatusOK, a.status)
		require.Equal(t, float64(0), a.body["remaining"], "the default tier's 8 are gone")
		a = httpDo(t, "POST", base+"/v1/check", `{"policy":"pay","subject":"m1"}`)
		require.Equal(t, http.StatusTooManyRequests, a.status)
		a = httpDo(t, "POST", base+"/v1/check", `{"policy":"pay","subject":"m1","priority":"payments"}`)
		require.Equal(t, http.StatusOK, a.status)
		require.Equal(t, float64(10), a.body["limit"])
		require.Equal(t, float64(1), a.body["remaining"])
		require.Equal(t, "10", a.header.Get("X-RateLimit-Limit"))
		a = httpDo(t, "POST", base+"/v1/check", `{"policy":"pay","subject":"m1","refund":5}`)
		require.Equal(t, http.StatusOK, a.status)
		require.Equal(t, float64(4), a.body["remaining"], "9 taken, 5 back: the default tier may take 4 more of its 8")
		require.Equal(t, int64(4), remaining("m1"))
		require.Contains(t, do(t, rdb, "INFO", "throttle").(string), "throttle_refunded:5\r\n")
	})

	t.Run("check json errors", func(t *testing.T) {
		for _, tc := range []struct{ name, body, error string }{
			{"unknown tier", `{"policy":"pay","subject":"m","priority":"gold"}`, "unknown tier 'gold'"},
			{"no tiers", `{"policy":"rls.api.tenant","subject":"m","priority":"payments"}`, "the limit has no TIERS"},
			{"empty tier", `{"policy":"pay","subject":"m","priority":""}`, "empty tier"},
			{"cost and refund", `{"policy":"pay","subject":"m","cost":1,"refund":1}`, "not both"},
			{"negative refund", `{"policy":"pay","subject":"m","refund":-1}`, "'refund' must be"},
			{"string refund", `{"policy":"pay","subject":"m","refund":"1"}`, "'refund' cannot be string"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				a := httpDo(t, "POST", base+"/v1/check", tc.body)
				require.Equal(t, http.StatusBadRequest, a.status)
				require.Contains(t, a.body["error"], tc.error)
			})
		}
	})

	t.Run("forward-auth", func(t *testing.T) {
		for range 8 {
			require.Equal(t, http.StatusOK, httpDo(t, "GET", base+"/v1/auth/pay?subject=header:X-M", "", "X-M", "m2").status)
		}
		for _, tc := range []struct {
			name, query, tier string
			status            int
		}{
			{"default tier spent", "", "", http.StatusTooManyRequests},
			{"a header without a tier", "&priority=header:X-Tier", "", http.StatusTooManyRequests},
			{"a header naming no tier is the default tier", "&priority=header:X-Tier", "gold", http.StatusTooManyRequests},
			{"the tier from a header", "&priority=header:X-Tier", "payments", http.StatusOK},
			{"the tier the location names", "&priority=payments", "", http.StatusOK},
			{"a location naming no tier", "&priority=gold", "", http.StatusBadRequest},
		} {
			t.Run(tc.name, func(t *testing.T) {
				a := httpDo(t, "GET", base+"/v1/auth/pay?subject=header:X-M"+tc.query, "", "X-M", "m2", "X-Tier", tc.tier)
				require.Equal(t, tc.status, a.status)
			})
		}
		require.Equal(t, int64(0), remaining("m2"))
	})

	t.Run("envoy", func(t *testing.T) {
		for i := range 8 {
			r := rs.ask(t, "api", 1, desc("merchant", "m3", "priority", "gold"))
			require.Equal(t, ok, r.OverallCode.String(), "call %d", i)
		}
		require.Equal(t, over, rs.ask(t, "api", 1, desc("merchant", "m3")).OverallCode.String())
		require.Equal(t, over, rs.ask(t, "api", 1, desc("priority", "gold", "merchant", "m3")).OverallCode.String())
		r := rs.ask(t, "api", 1, desc("priority", "payments", "merchant", "m3"))
		require.Equal(t, ok, r.OverallCode.String())
		require.Equal(t, uint32(1), r.Statuses[0].LimitRemaining)
		// A descriptor whose limit has no tiers takes the whole limit, with or without one.
		for range 3 {
			require.Equal(t, ok, rs.ask(t, "api", 1, desc("tenant", "t", "priority", "payments")).OverallCode.String())
		}
		require.Equal(t, over, rs.ask(t, "api", 1, desc("tenant", "t")).OverallCode.String())
		require.Equal(t, []any{"name", "rls.api.merchant", "limit", "THROTTLE 9 10 60 TIERS default=0.8 payments=1"},
			do(t, rdb, "POLICY.GET", "rls.api.merchant").([]any)[:4])
	})
}
