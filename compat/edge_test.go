package compat

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The proxies of examples/ in front of an app, asking throttled's http-port: nginx
// auth_request and Caddy forward_auth, from Debian's packages (make deps installs them).

// edgeLimit is the api policy's bound: THROTTLE 4 1 1h lets 5 requests through at once,
// then one an hour.
const edgeLimit = 5

// edgeSetup starts throttled with http-port and the api policy, and an app that counts the
// requests it gets.
func edgeSetup(t *testing.T) (p *process, httpPort int, app *httptest.Server, hits *atomic.Int64) {
	httpPort, metricsPort := freePort(t), freePort(t)
	p = start(t, "--http-port", strconv.Itoa(httpPort), "--metrics-port", strconv.Itoa(metricsPort))
	require.Equal(t, "OK", p.cli(t, "POLICY.SET", "api", "THROTTLE", "4", "1", "1h"))
	require.Equal(t, "http-port\n"+strconv.Itoa(httpPort), p.cli(t, "CONFIG", "GET", "http-port"))
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", metricsPort))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "/readyz once http-port serves")
	hits = new(atomic.Int64)
	app = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "hello %s\n", r.Header.Get("RateLimit"))
	}))
	t.Cleanup(app.Close)
	return p, httpPort, app, hits
}

// example reads a file of examples/ with its addresses replaced.
func example(t *testing.T, path string, replace ...string) string {
	b, err := os.ReadFile(filepath.Join("..", "examples", path))
	require.NoError(t, err)
	return strings.NewReplacer(replace...).Replace(string(b))
}

// waitListening waits until addr accepts connections.
func waitListening(t *testing.T, addr string, log fmt.Stringer) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		require.True(t, time.Now().Before(deadline), "nothing listens on %s:\n%s", addr, log)
		time.Sleep(20 * time.Millisecond)
	}
}

// runProxy starts a proxy command, stopped with the test.
func runProxy(t *testing.T, cmd *exec.Cmd) *lockedWriter {
	out := &lockedWriter{w: new(bytes.Buffer)}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return out
}

// driveProxy sends requests through the proxy at base: edgeLimit pass with the headers,
// the next are refused with 429 and Retry-After and never reach the app; an error throttled
// answers (503: min-replicas-to-write without replicas) is refused with errStatus and never
// reaches the app either; with throttled stopped, requests pass again (fail open).
func driveProxy(t *testing.T, base string, p *process, hits *atomic.Int64, errStatus int) {
	c := &http.Client{Timeout: 10 * time.Second}
	get := func() (*http.Response, string) {
		resp, err := c.Get(base + "/orders/7")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	for i := 0; i < edgeLimit; i++ {
		resp, body := get()
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Equal(t, fmt.Sprintf(`"api";r=%d;t=%d`, edgeLimit-1-i, 3600*(i+1)), resp.Header.Get("RateLimit"))
		require.Equal(t, `"api";q=5;w=18000`, resp.Header.Get("RateLimit-Policy"))
		require.Equal(t, strconv.Itoa(edgeLimit-1-i), resp.Header.Get("X-RateLimit-Remaining"))
		require.Contains(t, body, "hello \"api\";r=", "the app saw the decision's headers")
	}
	for i := 0; i < 3; i++ {
		resp, body := get()
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, body)
		retry, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After %q", resp.Header.Get("Retry-After"))
		require.InDelta(t, 3600, retry, 2)
		require.Equal(t, `"api";q=5;w=18000`, resp.Header.Get("RateLimit-Policy"))
		require.Equal(t, "0", resp.Header.Get("X-RateLimit-Remaining"))
	}
	require.Equal(t, int64(edgeLimit), hits.Load(), "denied requests never reach the app")
	require.Contains(t, p.cli(t, "INFO", "throttle"), "verb_check:allowed=5,denied=3")

	require.Equal(t, "OK", p.cli(t, "POLICY.SET", "api", "THROTTLE", "99", "1", "1h"), "room for more")
	require.Equal(t, "OK", p.cli(t, "CONFIG", "SET", "min-replicas-to-write", "1"))
	for i := 0; i < 3; i++ {
		resp, body := get()
		require.Equal(t, errStatus, resp.StatusCode, "an answered error is no pass: %s", body)
	}
	require.Equal(t, int64(edgeLimit), hits.Load(), "requests throttled answered with an error never reach the app")
	require.Equal(t, "OK", p.cli(t, "CONFIG", "SET", "min-replicas-to-write", "0"))

	p.cmd.Process.Signal(syscall.SIGTERM)
	err := <-p.exited
	require.NoError(t, err)
	p.exited <- err // for the test's cleanup
	for i := 0; i < 3; i++ {
		resp, body := get()
		require.Equal(t, http.StatusOK, resp.StatusCode, "fail open: %s", body)
	}
	require.Equal(t, int64(edgeLimit+3), hits.Load())
}

func TestNginxAuthRequest(t *testing.T) {
	if _, err := exec.LookPath("nginx"); err != nil {
		t.Fatal("nginx is missing; `make deps` installs it (apt-get install nginx)")
	}
	p, httpPort, app, hits := edgeSetup(t)
	dir := t.TempDir()
	listen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	site := example(t, "nginx/throttled.conf",
		"127.0.0.1:8081", "127.0.0.1:"+strconv.Itoa(httpPort),
		"127.0.0.1:3000", strings.TrimPrefix(app.URL, "http://"),
		"127.0.0.1:8080", listen)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "throttled.conf"), []byte(site), 0o644))
	// A minimal nginx.conf around the example, for a process of the test's own.
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/throttled.conf;
}
`, dir)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644))
	out := runProxy(t, exec.Command("nginx", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", filepath.Join(dir, "nginx.conf")))
	waitListening(t, listen, out)
	driveProxy(t, "http://"+listen, p, hits, http.StatusInternalServerError)
	log, err := os.ReadFile(filepath.Join(dir, "error.log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "connect() failed (111: Connection refused) while connecting to upstream", "nginx logs that it failed open")
}

func TestCaddyForwardAuth(t *testing.T) {
	if _, err := exec.LookPath("caddy"); err != nil {
		t.Fatal("caddy is missing; `make deps` installs it (apt-get install caddy)")
	}
	p, httpPort, app, hits := edgeSetup(t)
	dir := t.TempDir()
	listen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	site := example(t, "caddy/Caddyfile",
		"127.0.0.1:8081", "127.0.0.1:"+strconv.Itoa(httpPort),
		"127.0.0.1:3000", strings.TrimPrefix(app.URL, "http://"),
		"127.0.0.1:8082", listen)
	file := filepath.Join(dir, "Caddyfile")
	require.NoError(t, os.WriteFile(file, []byte("{\n\tadmin off\n}\n\n"+site), 0o644))
	cmd := exec.Command("caddy", "run", "--config", file, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	out := runProxy(t, cmd)
	waitListening(t, listen, out)
	driveProxy(t, "http://"+listen, p, hits, http.StatusServiceUnavailable)
	require.Contains(t, out.String(), `"X-Ratelimit-Status":["unavailable"]`, "Caddy logs that it failed open")
}

// A taken http-port stops the start with an error that names it.
func TestHTTPPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command(binary, "--port", strconv.Itoa(freePort(t)), "--dir", t.TempDir(), "--http-port", port)
	done := make(chan []byte, 1)
	go func() { out, _ := cmd.CombinedOutput(); done <- out }()
	select {
	case out := <-done:
		require.NotEqual(t, 0, cmd.ProcessState.ExitCode())
		require.Contains(t, string(out), "http-port")
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("throttled started on a taken http-port")
	}
}
