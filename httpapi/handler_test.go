package httpapi

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSubjectFrom(t *testing.T) {
	for _, tc := range []struct {
		name, from string
		header     []string
		want, err  string
	}{
		{"default is X-Forwarded-For's rightmost untrusted hop", "", []string{"X-Forwarded-For", " 203.0.113.7 , 10.0.0.1"}, "10.0.0.1", ""},
		{"the peer without X-Forwarded-For", "", nil, "192.0.2.1", ""},
		{"an empty hop", "xff", []string{"X-Forwarded-For", "10.0.0.1, "}, "", "empty hop in X-Forwarded-For"},
		{"X-Real-IP", "x-real-ip", []string{"X-Real-IP", "198.51.100.2"}, "198.51.100.2", ""},
		{"X-Real-IP missing", "x-real-ip", nil, "", "header X-Real-IP"},
		{"Basic user", "user", []string{"Authorization", "Basic bWVyY2hhbnQ6cHc="}, "merchant", ""},
		{"bearer token", "user", []string{"Authorization", "Bearer t0k"}, "t0k", ""},
		{"no user", "user", []string{"Authorization", "Digest x"}, "", "no Basic user"},
		{"a named header", "header:X-Merchant-Id", []string{"X-Merchant-Id", "m-1"}, "m-1", ""},
		{"the peer", "ip", []string{"X-Forwarded-For", "203.0.113.7"}, "192.0.2.1", ""},
		{"unknown source", "cookie", nil, "", "query 'subject' must be"},
		{"empty header name", "header:", nil, "", "query 'subject' must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/auth/api", nil)
			for i := 0; i+1 < len(tc.header); i += 2 {
				r.Header.Set(tc.header[i], tc.header[i+1])
			}
			got, err := subjectFrom(r, tc.from, Proxies{netip.MustParsePrefix("192.0.2.0/24")}, true)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestPriorityFrom(t *testing.T) {
	for _, tc := range []struct {
		name, from string
		header     []string
		want       string
		anyTier    bool
		err        string
	}{
		{"none", "", []string{"X-Tier", "payments"}, "", false, ""},
		{"the location's tier", "payments", nil, "payments", false, ""},
		{"a header's tier", "header:X-Tier", []string{"X-Tier", " payments "}, "payments", true, ""},
		{"a header absent", "header:X-Tier", nil, "", false, ""},
		{"a header too long", "header:X-Tier", []string{"X-Tier", strings.Repeat("t", maxTier+1)}, "", false, "tier longer than 256 bytes: header X-Tier"},
		{"a tier too long", strings.Repeat("t", maxTier+1), nil, "", false, "query 'priority'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/auth/api", nil)
			for i := 0; i+1 < len(tc.header); i += 2 {
				r.Header.Set(tc.header[i], tc.header[i+1])
			}
			got, anyTier, err := priorityFrom(r, tc.from, true)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.anyTier, anyTier)
		})
	}
}

func TestCredentials(t *testing.T) {
	for _, tc := range []struct {
		name              string
		header            []string
		withAuthorization bool
		want              Credentials
		err               string
	}{
		{"none", nil, true, Credentials{}, ""},
		{"basic", []string{"Authorization", "Basic ZWRnZTpwdw=="}, true, Credentials{Given: true, User: "edge", Password: "pw"}, ""},
		{"bearer user:password", []string{"Authorization", "Bearer edge:pw"}, true, Credentials{Given: true, User: "edge", Password: "pw"}, ""},
		{"bearer password", []string{"Authorization", "bearer pw"}, true, Credentials{Given: true, Password: "pw"}, ""},
		{"Authorization is the client's on forward-auth", []string{"Authorization", "Bearer x"}, false, Credentials{}, ""},
		{"throttled's header first", []string{"Authorization", "Bearer x", credHeader, "Bearer edge:pw"}, false, Credentials{Given: true, User: "edge", Password: "pw"}, ""},
		{"bad base64", []string{"Authorization", "Basic !!"}, true, Credentials{}, "bad Basic"},
		{"other scheme", []string{"Authorization", "Digest x"}, true, Credentials{}, "unsupported"},
		{"empty bearer", []string{"Authorization", "Bearer "}, true, Credentials{}, "unsupported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/check", nil)
			for i := 0; i+1 < len(tc.header); i += 2 {
				r.Header.Set(tc.header[i], tc.header[i+1])
			}
			got, err := credentials(r, tc.withAuthorization)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSetHeaders(t *testing.T) {
	res := Result{
		Decision: Decision{Limited: true, Limit: 5, Remaining: 0, RetryAfterMs: 1001, ResetAfterMs: 59_001},
		Policies: []PolicyDecision{
			{Policy: "burst", Window: 1500 * time.Millisecond, Decision: Decision{Limit: 10, Remaining: 3, RetryAfterMs: -1, ResetAfterMs: 700}},
			{Policy: "api", Window: time.Minute, Decision: Decision{Limited: true, Limit: 5, RetryAfterMs: 1001, ResetAfterMs: 59_001}},
			{Policy: "x", Decision: Decision{Limit: 1, ResetAfterMs: 0}},
		},
	}
	legacy := true
	s := New(nil, Options{LegacyHeaders: func() bool { return legacy }})
	h := http.Header{}
	s.setHeaders(h, res)
	require.Equal(t, http.Header{
		"Ratelimit-Policy":      {`"burst";q=10;w=2, "api";q=5;w=60, "x";q=1`},
		"Ratelimit":             {`"burst";r=3;t=1, "api";r=0;t=60, "x";r=0;t=0`},
		"Retry-After":           {"2"},
		"X-Ratelimit-Limit":     {"5"},
		"X-Ratelimit-Remaining": {"0"},
		"X-Ratelimit-Reset":     {"60"},
	}, h)

	legacy = false
	res.Limited, res.RetryAfterMs = true, -1 // can never fit: no Retry-After
	h = http.Header{}
	s.setHeaders(h, res)
	require.Len(t, h, 2)
}
