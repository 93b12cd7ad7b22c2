package server

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/metrics"
)

// TestPrometheusScrape runs Debian's prometheus (make deps installs it) against the metrics
// port while a load denies THROTTLE and CL.THROTTLE calls, and asks its HTTP API for the rate
// of denials by verb.
func TestPrometheusScrape(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	require.NoError(t, err, "prometheus is needed: make deps installs it")

	ts := startServer(t, func(c *Config) { c.Now = nil }) // Prometheus's time is the wall clock's
	base := serveMetrics(t, ts)
	target := base[len("http://"):]

	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: throttled
    static_configs:
      - targets: ['%s']
`, target)), 0o644))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	web := ln.Addr().String()
	ln.Close()
	prom := exec.Command(bin, "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+web, "--log.level=warn")
	prom.Stdout, prom.Stderr = os.Stderr, os.Stderr
	require.NoError(t, prom.Start())
	t.Cleanup(func() { prom.Process.Kill(); prom.Wait() })

	api := "http://" + web
	require.Eventually(t, func() bool {
		resp, err := http.Get(api + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 200*time.Millisecond, "prometheus did not start")

	// The load: for 6 seconds, 2 denied THROTTLE calls for each denied CL.THROTTLE call.
	rdb := ts.client(t, 2)
	do(t, rdb, "THROTTLE", "t", 0, 1, "1h")
	do(t, rdb, "CL.THROTTLE", "c", 0, 1, 3600)
	end := time.Now().Add(6 * time.Second)
	var denied int
	for time.Now().Before(end) {
		do(t, rdb, "THROTTLE", "t", 0, 1, "1h")
		do(t, rdb, "THROTTLE", "t", 0, 1, "1h")
		do(t, rdb, "CL.THROTTLE", "c", 0, 1, 3600)
		denied++
		time.Sleep(5 * time.Millisecond)
	}

	query := func(q string) map[string]float64 {
		resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(q))
		require.NoError(t, err)
		defer resp.Body.Close()
		var r struct {
			Status string
			Data   struct {
				Result []struct {
					Metric map[string]string
					Value  [2]any
				}
			}
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
		require.Equal(t, "success", r.Status)
		out := make(map[string]float64)
		for _, s := range r.Data.Result {
			v, err := strconv.ParseFloat(s.Value[1].(string), 64)
			require.NoError(t, err)
			out[s.Metric["verb"]+s.Metric["command"]] = v
		}
		return out
	}
	// Wait for a scrape after the load, then compare what Prometheus holds with the load.
	require.Eventually(t, func() bool {
		got := query(`throttled_decisions_total{result="denied"}`)
		return got["throttle"] == float64(2*denied) && got["cl.throttle"] == float64(denied)
	}, 20*time.Second, 500*time.Millisecond, "prometheus never scraped the load's %d denials", denied)

	rates := query(`sum by (verb) (rate(throttled_decisions_total{result="denied"}[1m]))`)
	t.Logf("denial rates by verb: %v (%d CL.THROTTLE denials in 6s)", rates, denied)
	require.Greater(t, rates["throttle"], 0.0)
	require.Greater(t, rates["cl.throttle"], 0.0)
	require.InDelta(t, 2.0, rates["throttle"]/rates["cl.throttle"], 0.2, "THROTTLE was denied twice as often")
	require.Equal(t, 0.0, rates["gcra"], "no GCRA denials")

	// The latency histogram: every THROTTLE call counted, and Prometheus's p99 in the bucket
	// that holds the server's own (INFO latencystats), as histogram_quantile interpolates
	// within a bucket.
	require.Equal(t, float64(2*denied+1), query(`throttled_command_duration_seconds_count{command="throttle"}`)["throttle"])
	p99 := query(`histogram_quantile(0.99, sum by (le) (throttled_command_duration_seconds_bucket{command="throttle"}))`)[""]
	ownUsec := latencyPercentile(t, do(t, rdb, "INFO", "latencystats").(string), "throttle", "p99")
	lo, hi := 0.0, math.Inf(1)
	for _, b := range metrics.LatencyBuckets {
		if ownUsec/1e6 <= b {
			hi = b
			break
		}
		lo = b
	}
	t.Logf("THROTTLE p99: %.6f s from Prometheus, %.3f us from INFO latencystats", p99, ownUsec)
	require.True(t, p99 >= lo && p99 <= hi, "Prometheus's p99 %v is in the bucket (%v, %v] of the server's %v us", p99, lo, hi, ownUsec)
}
