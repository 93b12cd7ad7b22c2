package middleware

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/server"
)

// startThrottled runs a throttled server in the test, on 127.0.0.1:0.
func startThrottled(t *testing.T) (*server.Server, string) {
	cfg := server.DefaultConfig()
	cfg.Port = 0
	cfg.Dir = t.TempDir()
	cfg.AppendOnly = false
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := server.New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	return s, ln.Addr().String()
}

func TestLimiter(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run("RESP"+string(rune('0'+proto)), func(t *testing.T) {
			s, addr := startThrottled(t)
			rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto})
			t.Cleanup(func() { rdb.Close() })
			require.NoError(t, rdb.Do(context.Background(), "POLICY.SET", "api", "THROTTLE", "2", "1", "1h").Err())
			var hits atomic.Int64
			app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
			var failed atomic.Int64
			lim := &Limiter{Client: rdb, Policy: "api", Window: time.Hour,
				Subject: func(r *http.Request) string { return r.Header.Get("X-Merchant-Id") },
				OnError: func(*http.Request, error) { failed.Add(1) }}
			srv := httptest.NewServer(lim.Wrap(app))
			t.Cleanup(srv.Close)
			get := func(merchant string) *http.Response {
				req, _ := http.NewRequest("GET", srv.URL, nil)
				req.Header.Set("X-Merchant-Id", merchant)
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp
			}
			for i := 0; i < 3; i++ {
				resp := get("m1")
				require.Equal(t, 200, resp.StatusCode)
				require.Equal(t, `"api";q=3;w=3600`, resp.Header.Get("RateLimit-Policy"))
			}
			resp := get("m1")
			require.Equal(t, 429, resp.StatusCode)
			require.NotEmpty(t, resp.Header.Get("Retry-After"))
			require.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))
			require.Equal(t, 200, get("m2").StatusCode, "another subject has its own limit")
			require.Equal(t, int64(4), hits.Load())

			// An error throttled answers is no pass.
			require.NoError(t, rdb.Do(context.Background(), "CONFIG", "SET", "min-replicas-to-write", "1").Err())
			require.Equal(t, 503, get("m3").StatusCode)
			require.Equal(t, int64(4), hits.Load())
			require.NoError(t, rdb.Do(context.Background(), "CONFIG", "SET", "min-replicas-to-write", "0").Err())

			s.Close() // throttled gone: the middleware fails open
			require.Equal(t, 200, get("m1").StatusCode)
			require.Equal(t, int64(5), hits.Load())
			require.Equal(t, int64(2), failed.Load())
		})
	}
}

func TestParseDecision(t *testing.T) {
	_, err := parseDecision("x")
	require.Error(t, err)
	_, err = parseDecision([]any{int64(1)})
	require.Error(t, err)
}
