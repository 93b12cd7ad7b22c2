package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// A cost no limit can hold is a denial that no wait lifts (retry -1), on every verb and
// every door: a proxy reads an error as "let it through".

// hugeCosts are a cost whose time overflows THROTTLE's arithmetic for an hour's limit, and
// the largest one.
var hugeCosts = []string{"10000000", "9223372036854775807"}

// limitVerbs are a limit of each algorithm a policy may have, as a verb's arguments after
// the key and as a policy's.
var limitVerbs = [][]string{
	{"THROTTLE", "2", "3", "1h"},
	{"TOKENBUCKET", "10", "1", "1s"},
	{"LEAKYBUCKET", "10", "1", "1s"},
	{"SLIDE", "10", "1m"},
	{"SLIDE", "10", "1m", "APPROX"},
	{"WINDOW", "10", "1m"},
}

// deniedForGood checks a decision [limited, limit, remaining, retry, ...]: limited, retry -1.
func deniedForGood(t *testing.T, v any, what string) {
	t.Helper()
	d, ok := v.([]any)
	require.True(t, ok, "%s: %v", what, v)
	require.Equal(t, int64(1), d[0], "%s: limited", what)
	require.Equal(t, int64(-1), d[3], "%s: retry", what)
}

func TestImpossibleCostIsADenialOverRESP(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	for _, cost := range hugeCosts {
		for i, l := range limitVerbs {
			args := append([]any{l[0], "k" + strconv.Itoa(i)}, toAny(l[1:])...)
			deniedForGood(t, do(t, rdb, append(args, "COST", cost)...), l[0]+" COST "+cost)

			// As a policy, through CHECK, alone and beside one that allows.
			name := "p" + strconv.Itoa(i)
			do(t, rdb, append([]any{"POLICY.SET", name}, toAny(l)...)...)
			deniedForGood(t, do(t, rdb, "CHECK", name, "s", "COST", cost), "CHECK "+l[0])
			deniedForGood(t, do(t, rdb, "CHECK", name+",p0", "s", "COST", cost).([]any)[0], "CHECK "+l[0]+",THROTTLE")
		}
		deniedForGood(t, do(t, rdb, "CONCURRENCY.ACQUIRE", "k", "10", "1m", "id1", "COST", cost), "CONCURRENCY.ACQUIRE")
		deniedForGood(t, do(t, rdb, "ALLOF", "THROTTLE", "a", "2", "3", "1h", "COST", cost, "WINDOW", "b", "10", "1m").([]any)[0], "ALLOF")
		// redis-cell denies a quantity past max_burst+1 with retry -1; one whose increment
		// overflows is the same denial.
		require.Equal(t, []any{int64(1), int64(3), int64(3), int64(-1), int64(0)}, do(t, rdb, "CL.THROTTLE", "c", "2", "3", "3600", cost))
	}
	// Redis's GCRA denies TOKENS past the limit, and keeps gcra.c's overflow error.
	require.Equal(t, []any{int64(1), int64(3), int64(3), int64(-1), int64(0)}, do(t, rdb, "GCRA", "g", "2", "3", "3600", "TOKENS", "10000000"))
	require.Contains(t, doErr(t, rdb, "GCRA", "g", "2", "3", "3600", "TOKENS", "9223372036854775807"), "would cause an overflow")
	// Nothing was taken: every key named is missing or idle.
	require.Equal(t, int64(0), do(t, rdb, "EXISTS", "k0", "a", "b", "c", "policy:p0:s"))
	// A cost that is not a number stays a syntax error.
	require.Contains(t, doErr(t, rdb, "THROTTLE", "k", "2", "3", "1h", "COST", "lots"), "COST must be an integer")
}

func TestImpossibleCostIsADenialOverHTTP(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	base := serveHTTPAPI(t, ts)
	for i, l := range limitVerbs {
		name := "p" + strconv.Itoa(i)
		do(t, rdb, append([]any{"POLICY.SET", name}, toAny(l)...)...)
		for _, cost := range hugeCosts {
			a := httpDo(t, "POST", base+"/v1/check", `{"policy":"`+name+`","subject":"s","cost":`+cost+`}`)
			require.Equal(t, http.StatusTooManyRequests, a.status, "%s cost %s: %v", l[0], cost, a.body)
			require.Equal(t, float64(-1), a.body["retry_after_ms"], l[0])
			a = httpDo(t, "GET", base+"/v1/auth/"+name+"?cost="+cost, "")
			require.Equal(t, http.StatusTooManyRequests, a.status, "%s cost %s: %v", l[0], cost, a.body)
		}
	}
	a := httpDo(t, "GET", base+"/v1/auth/p0?cost=lots", "")
	require.Equal(t, http.StatusBadRequest, a.status, "not a number is the caller's error")
}

func TestImpossibleCostIsADenialOverGRPC(t *testing.T) {
	rs := startRLS(t, map[string]string{"api.yaml": `
domain: api
descriptors:
  - {key: gcra, rate_limit: {unit: hour, requests_per_unit: 3}}
  - {key: sliding, rate_limit: {unit: hour, requests_per_unit: 3, algorithm: sliding}}
  - {key: approx, rate_limit: {unit: hour, requests_per_unit: 3, algorithm: sliding-approx}}
  - {key: window, rate_limit: {unit: hour, requests_per_unit: 3, algorithm: window}}
  - {key: bucket, rate_limit: {unit: hour, requests_per_unit: 3, algorithm: tokenbucket}}
`})
	for _, key := range []string{"gcra", "sliding", "approx", "window", "bucket"} {
		require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "api", 10_000_000, desc(key, "s"))), key)
		d := desc(key, "s")
		d.HitsAddend = wrapperspb.UInt64(1 << 63)
		require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "api", 1, d)), key)
		require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "api", 1, desc(key, "s"))), key+": nothing was taken")
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestAnsweredErrorIsADenialOverGRPC: a gRPC decision that fails in the server (here
// NOREPLICAS: min-replicas-to-write without replicas) answers OVER_LIMIT, not UNAVAILABLE,
// which Envoy's failure_mode_deny: false would let through.
func TestAnsweredErrorIsADenialOverGRPC(t *testing.T) {
	rs := startRLS(t, map[string]string{"edge.yaml": edgeYAML})
	rdb := rs.client(t, 2)
	do(t, rdb, "CONFIG", "SET", "min-replicas-to-write", "1")
	require.Contains(t, doErr(t, rdb, "CHECK", "rls.edge.remote_address", "192.0.2.1"), "NOREPLICAS")
	require.Equal(t, []string{over, over}, codesOf(rs.ask(t, "edge", 1, desc("remote_address", "192.0.2.1"))))
	do(t, rdb, "CONFIG", "SET", "min-replicas-to-write", "0")
	require.Equal(t, []string{ok, ok}, codesOf(rs.ask(t, "edge", 1, desc("remote_address", "192.0.2.1"))), "nothing was taken")
}

// TestGRPCSlowlogWhileItChanges: a gRPC decision that SLOWLOG or MONITOR starts to want
// while it runs is logged with what it has, never without arguments (which panicked in
// redact and took the server down).
func TestGRPCSlowlogWhileItChanges(t *testing.T) {
	rs := startRLS(t, map[string]string{"edge.yaml": edgeYAML})
	rdb := rs.client(t, 2)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx := context.Background()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			rdb.ConfigSet(ctx, "slowlog-log-slower-than", []string{"1000000", "0"}[i%2])
		}
	}()
	// Several callers at once: a caller preempted between the two looks at the threshold
	// is what the toggling needs to catch.
	errs := make(chan error, 8)
	for w := range 8 {
		go func() {
			ctx := context.Background()
			for n := w * 100_000; n < w*100_000+5_000; n += 10 { // 4,000 calls: 16,000 took 60 s under -race
				r, err := rs.rls.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: addresses(n, 10)})
				if err == nil && r.OverallCode != rlsv3.RateLimitResponse_OK {
					err = fmt.Errorf("request %d: %v", n, r.OverallCode)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		require.NoError(t, <-errs)
	}
	close(stop)
	<-done
	require.NotEmpty(t, do(t, rdb, "SLOWLOG", "GET", "1"))
}
