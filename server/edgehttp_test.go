package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/httpapi"
	"github.com/throttledhq/throttled/ratelimit"
)

// serveHTTPAPI serves ts's HTTP decisions on 127.0.0.1:0 and returns the base URL.
func serveHTTPAPI(t testing.TB, ts *testServer) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go ts.ServeHTTPAPI(ln)
	return "http://" + ln.Addr().String()
}

// httpAnswer is what a test reads of an answer.
type httpAnswer struct {
	status int
	header http.Header
	body   map[string]any
}

func httpDo(t testing.TB, method, url, body string, header ...string) httpAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := httpAnswer{status: resp.StatusCode, header: resp.Header}
	if len(b) > 0 {
		require.NoError(t, json.Unmarshal(b, &a.body), "%s", b)
	}
	return a
}

func TestHTTPCheck(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "WINDOW", "3", "1m")
	do(t, rdb, "POLICY.SET", "burst", "THROTTLE", "9", "10", "1s")
	base := serveHTTPAPI(t, ts)
	ctx := context.Background()
	sub := rdb.Subscribe(ctx, "__throttled__:denied")
	t.Cleanup(func() { sub.Close() })
	_, err := sub.Receive(ctx)
	require.NoError(t, err)

	for i := 0; i < 3; i++ {
		a := httpDo(t, "POST", base+"/v1/check", `{"policy":"api","subject":"alice"}`)
		require.Equal(t, http.StatusOK, a.status)
		require.Equal(t, true, a.body["allowed"])
		require.Equal(t, float64(2-i), a.body["remaining"])
		require.Equal(t, `"api";q=3;w=60`, a.header.Get("RateLimit-Policy"))
		require.Equal(t, "3", a.header.Get("X-RateLimit-Limit"))
		require.Empty(t, a.header.Get("Retry-After"))
	}
	a := httpDo(t, "POST", base+"/v1/check", `{"policy":"api","subject":"alice"}`)
	require.Equal(t, http.StatusTooManyRequests, a.status)
	require.Equal(t, false, a.body["allowed"])
	require.Equal(t, "ok", a.body["status"])
	// The clock stands at 1_700_000_000 s, 20 s into a minute: the window ends in 40 s.
	require.Equal(t, "40", a.header.Get("Retry-After"))
	require.Equal(t, `"api";r=0;t=40`, a.header.Get("RateLimit"))
	require.Equal(t, "0", a.header.Get("X-RateLimit-Remaining"))
	require.Equal(t, "40", a.header.Get("X-RateLimit-Reset"))

	// A peek and a probe change nothing; several policies are all or nothing, as CHECK a,b.
	a = httpDo(t, "POST", base+"/v1/check", `{"policies":["burst","api"],"subject":"bob","cost":2,"peek":true}`)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, `"burst";q=10;w=1, "api";q=3;w=60`, a.header.Get("RateLimit-Policy"))
	require.Len(t, a.body["policies"], 2)
	a = httpDo(t, "POST", base+"/v1/check", `{"policy":"burst,api","subject":"bob","cost":4}`)
	require.Equal(t, http.StatusTooManyRequests, a.status)
	require.Equal(t, true, a.body["policies"].([]any)[0].(map[string]any)["allowed"], "burst alone allows")
	a = httpDo(t, "POST", base+"/v1/check", `{"policy":"burst","subject":"bob","cost":0}`)
	require.Equal(t, float64(10), a.body["remaining"], "the burst policy took nothing")

	// The same counters as RESP's CHECK.
	require.Equal(t, []any{"policy:api:alice", int64(1), "policy:api:bob", int64(1)}, do(t, rdb, "TOPDENIED"))
	info := do(t, rdb, "INFO", "commandstats").(string)
	require.Contains(t, info, "cmdstat_check:calls=7,")
	info = do(t, rdb, "INFO", "throttle").(string)
	require.Contains(t, info, "verb_check:allowed=5,denied=2")
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "check policy:api:alice 40000", msg.Payload)

	do(t, rdb, "CONFIG", "SET", "http-legacy-headers", "no")
	a = httpDo(t, "POST", base+"/v1/check", `{"policy":"api","subject":"carol"}`)
	require.Equal(t, http.StatusOK, a.status)
	require.Empty(t, a.header.Get("X-RateLimit-Limit"))
	require.NotEmpty(t, a.header.Get("RateLimit"))

	do(t, rdb, "CHECK", "api", "dave")
	_, metrics := get(t, serveMetrics(t, ts)+"/metrics")
	for _, want := range []string{
		`throttled_transport_decisions_total{result="allowed",transport="http"} 6`,
		`throttled_transport_decisions_total{result="denied",transport="http"} 2`,
		`throttled_transport_decisions_total{result="allowed",transport="resp"} 1`,
		`throttled_decisions_total{result="denied",verb="check"} 2`,
	} {
		require.Contains(t, metrics, want)
	}
}

func TestHTTPBadRequests(t *testing.T) {
	ts := startServer(t)
	do(t, ts.client(t, 2), "POLICY.SET", "api", "WINDOW", "3", "1m")
	base := serveHTTPAPI(t, ts)
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		error                    string
	}{
		{"bad json", "POST", "/v1/check", `{"policy":`, 400, "bad JSON"},
		{"empty body", "POST", "/v1/check", ``, 400, "empty body"},
		{"unknown field", "POST", "/v1/check", `{"policy":"api","subject":"a","costs":1}`, 400, "costs"},
		{"two values", "POST", "/v1/check", `{"policy":"api","subject":"a"}{}`, 400, "more than one value"},
		{"missing subject", "POST", "/v1/check", `{"policy":"api"}`, 400, "missing 'subject'"},
		{"empty subject", "POST", "/v1/check", `{"policy":"api","subject":""}`, 400, "empty subject"},
		{"missing policy", "POST", "/v1/check", `{"subject":"a"}`, 400, "missing 'policy'"},
		{"unknown policy", "POST", "/v1/check", `{"policy":"nope","subject":"a"}`, 400, "no such policy 'nope'"},
		{"bad policy name", "POST", "/v1/check", `{"policy":"a b","subject":"a"}`, 400, "invalid policy name"},
		{"policy and policies", "POST", "/v1/check", `{"policy":"api","policies":["api"],"subject":"a"}`, 400, "not both"},
		{"negative cost", "POST", "/v1/check", `{"policy":"api","subject":"a","cost":-1}`, 400, "'cost' must be"},
		{"string cost", "POST", "/v1/check", `{"policy":"api","subject":"a","cost":"x"}`, 400, "'cost' cannot be string"},
		{"fractional cost", "POST", "/v1/check", `{"policy":"api","subject":"a","cost":1.5}`, 400, "'cost' cannot be number"},
		{"large body", "POST", "/v1/check", `{"policy":"api","subject":"` + strings.Repeat("x", 70000) + `"}`, 400, "body larger than"},
		{"long subject", "POST", "/v1/check", `{"policy":"api","subject":"` + strings.Repeat("x", 1025) + `"}`, 400, "subject longer than 1024 bytes"},
		{"get check", "GET", "/v1/check", ``, 405, "POST"},
		{"unknown path", "GET", "/v2/x", ``, 404, "no such endpoint"},
		{"auth no policy", "GET", "/v1/auth/", ``, 400, "missing 'policy'"},
		{"auth unknown policy", "GET", "/v1/auth/nope", ``, 400, "no such policy"},
		{"auth bad source", "GET", "/v1/auth/api?subject=cookie", ``, 400, "query 'subject' must be"},
		{"auth missing header", "GET", "/v1/auth/api?subject=header:X-Merchant-Id", ``, 400, "header X-Merchant-Id"},
		{"auth bad cost", "GET", "/v1/auth/api?cost=-2", ``, 400, "query 'cost'"},
		{"auth bad deny", "GET", "/v1/auth/api?deny=500", ``, 400, "query 'deny'"},
		{"auth bad peek", "GET", "/v1/auth/api?peek=maybe", ``, 400, "query 'peek'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := httpDo(t, tc.method, base+tc.path, tc.body)
			require.Equal(t, tc.status, a.status, "%v", a.body)
			require.Contains(t, a.body["error"], tc.error)
		})
	}
}

func TestHTTPForwardAuth(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "WINDOW", "2", "1m")
	base := serveHTTPAPI(t, ts)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("merchant7:secret"))
	for _, tc := range []struct {
		name, query string
		header      []string
		key         string // the key CHECK used
	}{
		{"X-Forwarded-For's rightmost hop", "", []string{"X-Forwarded-For", "10.0.0.1, 203.0.113.7"}, "203.0.113.7"},
		{"Forwarded's for=", "?subject=forwarded", []string{"Forwarded", `for=10.0.0.1, for="[2001:db8::7]:443";proto=https`}, "2001:db8::7"},
		{"peer without X-Forwarded-For", "", nil, "127.0.0.1"},
		{"X-Real-IP", "?subject=x-real-ip", []string{"X-Real-IP", "198.51.100.2"}, "198.51.100.2"},
		{"a named header", "?subject=header:X-Merchant-Id", []string{"X-Merchant-Id", "m-42"}, "m-42"},
		{"Authorization's user", "?subject=user", []string{"Authorization", basic}, "merchant7"},
		{"a bearer token", "?subject=user", []string{"Authorization", "Bearer tok1"}, "tok1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, method := range []string{"GET", "POST"} {
				a := httpDo(t, method, base+"/v1/auth/api/any/path/after"+tc.query, "", tc.header...)
				require.Equal(t, http.StatusOK, a.status, "%v", a.body)
				require.NotEmpty(t, a.header.Get("RateLimit"))
			}
			a := httpDo(t, "GET", base+"/v1/auth/api"+tc.query, "", tc.header...)
			require.Equal(t, http.StatusTooManyRequests, a.status)
			require.NotEmpty(t, a.header.Get("Retry-After"))
			require.Equal(t, false, a.body["allowed"])
			sep := "?"
			if tc.query != "" {
				sep = "&"
			}
			a = httpDo(t, "GET", base+"/v1/auth/api"+tc.query+sep+"deny=403", "", tc.header...)
			require.Equal(t, http.StatusForbidden, a.status, "nginx's auth_request takes 403, not 429")
			require.NotEmpty(t, a.header.Get("Retry-After"))
			require.Equal(t, int64(1), do(t, rdb, "EXISTS", "policy:api:"+tc.key))
		})
	}
}

// TestHTTPSpoofedHeaders: a client that reaches http-port itself gets no new budget by
// sending a new X-Forwarded-For (or any header subject) with each request: from a peer that
// is not a trusted proxy, the subject is the peer's address.
func TestHTTPSpoofedHeaders(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.HTTPTrustedProxies = "10.0.0.0/8" }) // not 127.0.0.1
	rdb := ts.client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "WINDOW", "2", "1m")
	base := serveHTTPAPI(t, ts)
	for _, query := range []string{"", "?subject=forwarded", "?subject=x-real-ip", "?subject=header:X-Api-Key"} {
		t.Run(query, func(t *testing.T) {
			do(t, rdb, "DEL", "policy:api:127.0.0.1")
			for i := 1; i <= 20; i++ {
				ip := fmt.Sprintf("198.51.100.%d", i)
				a := httpDo(t, "GET", base+"/v1/auth/api"+query, "", "X-Forwarded-For", ip, "Forwarded", "for="+ip,
					"X-Real-IP", ip, "X-Api-Key", ip)
				want := http.StatusOK
				if i > 2 {
					want = http.StatusTooManyRequests
				}
				require.Equal(t, want, a.status, "request %d", i)
			}
			require.Equal(t, []any{"policy:api:127.0.0.1"}, do(t, rdb, "KEYS", "policy:api:*"))
		})
	}
	// CONFIG SET trusts the loopback again: the header names the subject.
	do(t, rdb, "CONFIG", "SET", "http-trusted-proxies", "127.0.0.1/32 ::1")
	require.Equal(t, []any{"http-trusted-proxies", "127.0.0.1/32 ::1/128"}, do(t, rdb, "CONFIG", "GET", "http-trusted-proxies"))
	a := httpDo(t, "GET", base+"/v1/auth/api", "", "X-Forwarded-For", "198.51.100.1")
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, int64(1), do(t, rdb, "EXISTS", "policy:api:198.51.100.1"))
	require.Contains(t, doErr(t, rdb, "CONFIG", "SET", "http-trusted-proxies", "10.0.0.0/33"), "http-trusted-proxies: '10.0.0.0/33' is not a CIDR")
}

// TestHTTPTrustedProxyHops: from a trusted proxy (the loopback by default), the subject is
// X-Forwarded-For's or Forwarded's rightmost hop that is not a trusted proxy, so a hop the
// client prepends changes nothing.
func TestHTTPTrustedProxyHops(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "WINDOW", "2", "1m")
	base := serveHTTPAPI(t, ts)
	for _, tc := range []struct{ query, header, format string }{
		{"", "X-Forwarded-For", "198.51.100.%d, 203.0.113.9, 127.0.0.1"},
		{"?subject=forwarded", "Forwarded", `for=198.51.100.%d, for=203.0.113.9;proto=https, for="[::1]:8080"`},
	} {
		t.Run(tc.header, func(t *testing.T) {
			do(t, rdb, "DEL", "policy:api:203.0.113.9")
			for i := 1; i <= 20; i++ {
				a := httpDo(t, "GET", base+"/v1/auth/api"+tc.query, "", tc.header, fmt.Sprintf(tc.format, i))
				want := http.StatusOK
				if i > 2 {
					want = http.StatusTooManyRequests
				}
				require.Equal(t, want, a.status, "request %d", i)
			}
			require.Equal(t, []any{"policy:api:203.0.113.9"}, do(t, rdb, "KEYS", "policy:api:*"))
		})
	}
}

// TestHTTPHeaderTier: a tier read from a header is believed only from a trusted proxy: a
// client must not claim a better tier.
func TestHTTPHeaderTier(t *testing.T) {
	for _, tc := range []struct {
		proxies string
		passed  int
	}{{"10.0.0.0/8", 5}, {"127.0.0.0/8", 10}} {
		t.Run(tc.proxies, func(t *testing.T) {
			ts := startServer(t, func(c *Config) { c.HTTPTrustedProxies = tc.proxies })
			do(t, ts.client(t, 2), "POLICY.SET", "api", "WINDOW", "10", "1m", "TIERS", "pay=1", "default=0.5")
			base := serveHTTPAPI(t, ts)
			passed := 0
			for i := 0; i < 20; i++ {
				if httpDo(t, "GET", base+"/v1/auth/api?subject=ip&priority=header:X-Tier", "", "X-Tier", "pay").status == http.StatusOK {
					passed++
				}
			}
			require.Equal(t, tc.passed, passed)
		})
	}
}

func TestHTTPUsers(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.RequirePass = "adminpw" })
	rdb := ts.client(t, 2)
	do(t, rdb, "AUTH", "adminpw")
	do(t, rdb, "POLICY.SET", "api", "WINDOW", "5", "1m")
	do(t, rdb, "ACL", "SETUSER", "edge", "on", ">edgepw", "~policy:api:*", "+@ratelimit")
	do(t, rdb, "ACL", "SETUSER", "narrow", "on", ">narrowpw", "~policy:api:vip*", "+@ratelimit")
	do(t, rdb, "ACL", "SETUSER", "reader", "on", ">readerpw", "~*", "+get")
	base := serveHTTPAPI(t, ts)
	body := `{"policy":"api","subject":"alice"}`
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	for _, tc := range []struct {
		name   string
		header []string
		status int
	}{
		{"no credentials", nil, 401},
		{"basic", []string{"Authorization", basic("edge", "edgepw")}, 200},
		{"bearer user:password", []string{"Authorization", "Bearer edge:edgepw"}, 200},
		{"bearer default password", []string{"Authorization", "Bearer adminpw"}, 200},
		{"throttled's own header", []string{"X-Throttled-Authorization", basic("edge", "edgepw"), "Authorization", "Bearer client-token"}, 200},
		{"wrong password", []string{"Authorization", basic("edge", "nope")}, 401},
		{"unknown scheme", []string{"Authorization", "Digest x"}, 401},
		{"outside the key patterns", []string{"Authorization", basic("narrow", "narrowpw")}, 403},
		{"without @ratelimit", []string{"Authorization", basic("reader", "readerpw")}, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := httpDo(t, "POST", base+"/v1/check", body, tc.header...)
			require.Equal(t, tc.status, a.status, "%v", a.body)
			if tc.status != 200 {
				require.NotEmpty(t, a.body["error"])
			}
		})
	}
	// On forward-auth, Authorization is the end client's: throttled's credentials come in
	// X-Throttled-Authorization.
	a := httpDo(t, "GET", base+"/v1/auth/api", "", "Authorization", basic("edge", "edgepw"))
	require.Equal(t, 401, a.status)
	a = httpDo(t, "GET", base+"/v1/auth/api", "", "X-Throttled-Authorization", "Bearer edge:edgepw")
	require.Equal(t, 200, a.status)
}

func TestHTTPTLSAndLimits(t *testing.T) {
	p := newPKI(t)
	ts := startServerWith(t, nil, func(c *Config) {
		c.TLSCertFile, c.TLSKeyFile, c.TLSCACertFile = p.serverCert, p.serverKey, p.caFile
		c.TLSAuthClients = "no"
		c.HTTPTLS = true
	})
	rdb := ts.client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "WINDOW", "5", "1m")
	do(t, rdb, "CONFIG", "SET", "maxclients", "1") // http-port's connections count apart from RESP's
	url := strings.Replace(serveHTTPAPI(t, ts), "http:", "https:", 1)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.pool}}}
	resp, err := c.Post(url+"/v1/check", "application/json", strings.NewReader(`{"policy":"api","subject":"a"}`))
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	// The keep-alive connection above holds the last place: another is closed at once.
	nc, err := net.Dial("tcp", strings.TrimPrefix(url, "https://"))
	require.NoError(t, err)
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = nc.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
	require.Contains(t, do(t, rdb, "INFO", "stats").(string), "rejected_connections:1")
}

func TestHTTPIdleTimeout(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Timeout = 1 })
	do(t, ts.client(t, 2), "POLICY.SET", "api", "WINDOW", "5", "1m")
	addr := strings.TrimPrefix(serveHTTPAPI(t, ts), "http://")
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	body := `{"policy":"api","subject":"a"}`
	_, err = io.WriteString(nc, "POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body)
	require.NoError(t, err)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	require.Equal(t, 200, resp.StatusCode)
	// Idle past timeout (1 s), the connection is closed, as a RESP client's.
	start := time.Now()
	_, err = nc.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
	require.Less(t, time.Since(start), 5*time.Second)
}

// FuzzHTTPAPI sends arbitrary requests to http-port's handler: none panics, and each gets
// one of the statuses the API answers, a 400 with a JSON error.
func FuzzHTTPAPI(f *testing.F) {
	ts := startServer(f)
	do(f, ts.client(f, 2), "POLICY.SET", "api", "WINDOW", "5", "1m")
	do(f, ts.client(f, 2), "POLICY.SET", "b", "LEAKYBUCKET", "5", "1", "1s")
	do(f, ts.client(f, 2), "POLICY.SET", "t", "THROTTLE", "9", "10", "1s", "TIERS", "pay=1", "default=0.5")
	api := httpapi.New(ts.newHTTPDecider(), httpapi.Options{})
	f.Add("POST", "/v1/check", "", `{"policy":"t,api","subject":"a","priority":"pay"}`, "")
	f.Add("POST", "/v1/check", "", `{"policy":"t","subject":"a","refund":3}`, "")
	f.Add("GET", "/v1/auth/t", "priority=header:X-Id", "pay", "")
	f.Add("POST", "/v1/check", "", `{"policy":"api","subject":"a"}`, "")
	f.Add("POST", "/v1/check", "", `{"policies":["api","b"],"subject":"a","cost":3,"peek":true}`, "Basic eDp5")
	f.Add("GET", "/v1/auth/b/x", "subject=header:X-Id&cost=2&deny=403", "", "Bearer a:b")
	f.Add("PUT", "/v1/auth/api,b", "subject=user", "", "Basic !!")
	f.Fuzz(func(t *testing.T, method, path, query, body, auth string) {
		req := httptest.NewRequest("GET", "/", strings.NewReader(body))
		req.Method, req.URL.Path, req.URL.RawQuery = method, path, query
		req.Header.Set("Authorization", auth)
		req.Header.Set("X-Id", body)
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		switch rec.Code {
		case 200:
		case 400, 401, 403, 404, 405, 429:
			var e map[string]any
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), "%d %q", rec.Code, rec.Body)
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	})
}

// BenchmarkHTTPDecide is one HTTP decision without HTTP: the glue's CHECK on its own
// client and the parse of its reply, to set against BenchmarkCheck.
func BenchmarkHTTPDecide(b *testing.B) {
	ts := startServer(b)
	do(b, ts.client(b, 2), "POLICY.SET", "api", "THROTTLE", "100", "10", "1m")
	d := ts.newHTTPDecider()
	req := httpapi.Request{Policies: []string{"api"}, Subject: "k", Cost: 1}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := d.Decide(httpapi.Credentials{}, req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHTTPAuth is forward-auth over loopback with keep-alive connections, as a proxy
// asks: GET /v1/auth/api with the subject in X-Forwarded-For.
func BenchmarkHTTPAuth(b *testing.B) {
	ts := startServer(b)
	do(b, ts.client(b, 2), "POLICY.SET", "api", "THROTTLE", "100", "10", "1m")
	url := serveHTTPAPI(b, ts) + "/v1/auth/api"
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("X-Forwarded-For", "203.0.113.7")
		for pb.Next() {
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}

// TestHTTPDuringClose: decisions under way when the server closes finish before its state
// goes; later requests get 503 or a closed connection, never a panic.
func TestHTTPDuringClose(t *testing.T) {
	ts := startServer(t)
	do(t, ts.client(t, 2), "POLICY.SET", "api", "THROTTLE", "1000", "1000", "1s")
	base := serveHTTPAPI(t, ts)
	httpDo(t, "POST", base+"/v1/check", `{"policy":"api","subject":"warm"}`)
	done := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			c := &http.Client{Timeout: 5 * time.Second}
			for i := 0; ; i++ {
				resp, err := c.Post(base+"/v1/check", "application/json", strings.NewReader(`{"policy":"api","subject":"s"}`))
				if err != nil {
					done <- nil // the port closed
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case 200, 429, 503:
				default:
					done <- fmt.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, ts.Close())
	for g := 0; g < 4; g++ {
		require.NoError(t, <-done)
	}
}

// TestSubjectCap: one cap, ratelimit.MaxSubject, on a subject at every door that takes one
// here: CHECK and the policy verbs over RESP, POST /v1/check's body and forward-auth's
// header over HTTP. A subject over it is refused whole (a 400 over HTTP, which a proxy
// takes as a denial), never cut; one at the cap is served.
func TestSubjectCap(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	do(t, rdb, "POLICY.SET", "api", "WINDOW", "5", "1m")
	base := serveHTTPAPI(t, ts)
	at, over := strings.Repeat("s", ratelimit.MaxSubject), strings.Repeat("s", ratelimit.MaxSubject+1)
	const tooLong = "ERR subject longer than 1024 bytes"
	for _, args := range [][]any{
		{"CHECK", "api", over},
		{"POLICY.ALLOW", "api", over},
		{"POLICY.DENY", "api", over, "EX", "10"},
		{"POLICY.OVERRIDE", "api", over, "WINDOW", "9", "1m"},
		{"POLICY.UNLIST", "api", over},
	} {
		require.Equal(t, tooLong, doErr(t, rdb, args...), "%s", args[0])
	}
	require.Equal(t, int64(0), do(t, rdb, "DBSIZE"), "nothing stored")
	require.Equal(t, "ok", do(t, rdb, "CHECK", "api", at).([]any)[5])
	require.Equal(t, "OK", do(t, rdb, "POLICY.ALLOW", "api", at))

	a := httpDo(t, "POST", base+"/v1/check", `{"policy":"api","subject":"`+over+`"}`)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "subject longer than 1024 bytes: 'subject'", a.body["error"])
	a = httpDo(t, "GET", base+"/v1/auth/api?subject=header:X-Api-Key", "", "X-Api-Key", over)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, "subject longer than 1024 bytes: header X-Api-Key", a.body["error"])
	a = httpDo(t, "GET", base+"/v1/auth/api", "", "X-Forwarded-For", over)
	require.Equal(t, http.StatusBadRequest, a.status)
	a = httpDo(t, "GET", base+"/v1/auth/api?subject=header:X-Api-Key", "", "X-Api-Key", at)
	require.Equal(t, http.StatusOK, a.status)
}
