// Package compat drives the real throttled binary with real Redis tools:
// it builds cmd/throttled, starts it on a free loopback port and talks to
// it with redis-cli (installed by `make test`).
package compat

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var binary string

func TestMain(m *testing.M) {
	if os.Getenv(netnsEnv) != "" { // started again by runInNetns, inside the namespace
		os.Exit(netnsMain(os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "throttled-compat")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "throttled")
	build := exec.Command("go", "build", "-o", binary, "../cmd/throttled")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as released (and as make test compiled it)
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "compat: build failed:", err)
		os.Exit(1)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		fmt.Fprintln(os.Stderr, "compat: redis-cli is missing; `make test` installs it (apt-get install redis-tools)")
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// process is a running throttled binary.
type process struct {
	cmd    *exec.Cmd
	port   int
	stderr *lockedWriter // what the process wrote to stderr; read while it runs
	exited chan error
}

// freePort asks the kernel for a free loopback port.
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// start runs the binary with args plus --port, and waits until it answers.
// The test's end stops it with SIGTERM and requires a clean exit.
func start(t *testing.T, args ...string) *process {
	t.Helper()
	p := &process{port: freePort(t), stderr: &lockedWriter{w: new(bytes.Buffer)}, exited: make(chan error, 1)}
	p.cmd = exec.Command(binary, append(args, "--port", strconv.Itoa(p.port), "--dir", t.TempDir())...)
	p.cmd.Stderr = p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { p.exited <- p.cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-p.exited:
			t.Fatalf("throttled exited: %v\n%s", err, p.stderr)
		default:
		}
		require.True(t, time.Now().Before(deadline), "throttled did not start:\n%s", p.stderr)
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-p.exited:
			require.NoError(t, err, "exit after SIGTERM:\n%s", p.stderr)
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			t.Fatal("throttled did not stop on SIGTERM")
		}
	})
	return p
}

// cli runs redis-cli against p with args and returns its output, trimmed.
func (p *process) cli(t *testing.T, args ...string) string {
	t.Helper()
	return p.cliInput(t, "", args...)
}

func (p *process) cliInput(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("redis-cli", append([]string{"-p", strconv.Itoa(p.port)}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "redis-cli %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func TestRateLimitVerbs(t *testing.T) {
	p := start(t)
	require.Equal(t, "0\n16\n15\n-1\n2", p.cli(t, "CL.THROTTLE", "user123", "15", "30", "60"))
	require.Equal(t, "0\n16\n14\n-1\n4", p.cli(t, "cl.throttle", "user123", "15", "30", "60"))
	require.Equal(t, "0\n11\n10\n-1\n1", p.cli(t, "GCRA", "api", "10", "5", "1"))
	// Real time passes between calls: the reset in milliseconds shrinks a little.
	first := strings.Fields(p.cli(t, "THROTTLE", "login", "2", "10", "1h"))
	require.Equal(t, []string{"0", "3", "2", "-1"}, first[:4])
	second := strings.Fields(p.cli(t, "THROTTLE", "login", "2", "10", "1h"))
	require.Equal(t, []string{"0", "3", "1", "-1"}, second[:4])
	reset, err := strconv.Atoi(second[4])
	require.NoError(t, err)
	require.InDelta(t, 720000, reset, 5000)
	require.Equal(t, "gcra", p.cli(t, "TYPE", "login"))
	require.Equal(t, "ERR count must be at least 1, got 0", p.cli(t, "THROTTLE", "login", "2", "0", "1s"))
	require.Equal(t, "Cell error: Store error: Zero rates are not supported", p.cli(t, "CL.THROTTLE", "x", "1", "0", "1"))
	// RESP3: the native decision is a map.
	require.Equal(t, "limited 0\nlimit 3\nremaining 2\nretry_after_ms -1\nreset_after_ms 100",
		p.cli(t, "-3", "THROTTLE", "fresh", "2", "10", "1s"))

	info := p.cli(t, "INFO", "throttle")
	require.Contains(t, info, "throttle_allowed:6")
	require.Contains(t, info, "verb_cl_throttle:allowed=2,denied=0")
}

func TestStringsAndExpiry(t *testing.T) {
	p := start(t)
	require.Equal(t, "OK", p.cli(t, "SET", "greeting", "hello"))
	require.Equal(t, "hello", p.cli(t, "GET", "greeting"))
	require.Equal(t, "1", p.cli(t, "EXPIRE", "greeting", "100"))
	ttl, err := strconv.Atoi(p.cli(t, "TTL", "greeting"))
	require.NoError(t, err)
	require.InDelta(t, 100, ttl, 1)
	require.Equal(t, "5", p.cli(t, "INCRBY", "n", "5"))
	p.cli(t, "THROTTLE", "g", "1", "1", "1m")
	require.Equal(t, "WRONGTYPE Operation against a key holding the wrong kind of value", p.cli(t, "INCR", "g"))
}

func TestPipeline(t *testing.T) {
	p := start(t)
	var in strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&in, "THROTTLE pipe:%d 5 10 1m\r\n", i%10)
	}
	in.WriteString("INCR done\r\n")
	out := p.cliInput(t, in.String(), "--pipe")
	require.Contains(t, out, "errors: 0, replies: 1001")
	require.Equal(t, "11", p.cli(t, "DBSIZE"))
	// Each of the 10 keys took 100 requests against a limit of 6: 6 allowed, the rest denied.
	require.Contains(t, p.cli(t, "INFO", "throttle"), "throttle_allowed:60\r")
}

func TestConfigFileAndFlags(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	require.NoError(t, os.WriteFile(conf, []byte("# a comment\nrequirepass \"from file\"\nloglevel warning\nport 1\n"), 0o644))
	p := start(t, conf)
	require.Equal(t, "NOAUTH Authentication required.", p.cli(t, "PING"))
	require.Equal(t, "PONG", p.cli(t, "--no-auth-warning", "-a", "from file", "PING"))
	require.Equal(t, "port\n"+strconv.Itoa(p.port), p.cli(t, "--no-auth-warning", "-a", "from file", "CONFIG", "GET", "port"))
}

func TestBadOptionsExitNonZero(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", "99999"}, "port: 99999"},
		{[]string{"--nosuch", "1"}, "nosuch: unknown option"},
		{[]string{"--loglevel", "loud"}, "loglevel: \"loud\""},
		{[]string{"--maxclients", "many"}, "maxclients: \"many\" is not a number"},
		{[]string{"/no/such/file.conf"}, "config file"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := exec.Command(binary, tc.args...).CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.NotEqual(t, 0, exit.ExitCode())
			require.Contains(t, string(out), tc.want)
		})
	}
}

func TestShutdownCommand(t *testing.T) {
	p := start(t)
	exec.Command("redis-cli", "-p", strconv.Itoa(p.port), "SHUTDOWN").Run()
	select {
	case err := <-p.exited:
		require.NoError(t, err, "%s", p.stderr)
		p.exited <- err // for the cleanup's check
	case <-time.After(10 * time.Second):
		t.Fatal("SHUTDOWN did not stop the server")
	}
}

// TestInteractiveCli runs redis-cli on a terminal (through script(1)): it
// reads COMMAND DOCS at start to build its hints, and must neither crash nor complain.
func TestInteractiveCli(t *testing.T) {
	p := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "script", "-qec", fmt.Sprintf("redis-cli -p %d", p.port), "/dev/null")
	cmd.Env = append(os.Environ(), "TERM=dumb") // linenoise asks a real terminal for the cursor position
	cmd.Stdin = strings.NewReader("THROTTLE k 1 1 1m\r\nPING\r\nquit\r\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "PONG")
	require.NotContains(t, string(out), "Segmentation")
	require.NotContains(t, string(out), "Unknown type")
}

func TestEveryNativeVerbFromCli(t *testing.T) {
	p := start(t, "--appendonly", "no")
	require.Equal(t, "0\n100\n99\n-1\n100", p.cli(t, "TOKENBUCKET", "api:acme", "100", "10", "1s"))
	// 5 a minute: a unit drains in 12s, so the second call finds the first still queued
	// however slowly redis-cli starts.
	require.Equal(t, "0\n20\n19\n-1\n12000\n0", p.cli(t, "LEAKYBUCKET", "webhook:acme", "20", "5", "1m"))
	second := strings.Fields(p.cli(t, "LEAKYBUCKET", "webhook:acme", "20", "5", "1m"))
	require.Equal(t, []string{"0", "20", "18", "-1"}, second[:4])
	delay, err := strconv.Atoi(second[5])
	require.NoError(t, err)
	require.InDelta(t, 12000, delay, 2000)
	require.Equal(t, "0\n5\n4\n-1", firstLines(p.cli(t, "SLIDE", "login:alice", "5", "15m"), 4))
	require.Equal(t, "0\n10000\n9999\n-1", firstLines(p.cli(t, "SLIDE", "search:acme", "10000", "1m", "APPROX"), 4))
	require.Equal(t, "0\n1000\n999\n-1", firstLines(p.cli(t, "WINDOW", "export:acme", "1000", "1h"), 4))
	require.Equal(t, "0\n3\n2\n-1", firstLines(p.cli(t, "CONCURRENCY.ACQUIRE", "jobs:acme", "3", "30s", "job-42"), 4))
	require.Equal(t, "1", p.cli(t, "CONCURRENCY.RELEASE", "jobs:acme", "job-42"))
	// 10 a minute: the GCRA key lives 6s, long enough for TYPE below from another redis-cli.
	out := strings.Fields(p.cli(t, "ALLOF", "THROTTLE", "merchant:7", "9", "10", "1m", "WINDOW", "merchant:7:day", "50000", "1d", "COST", "2"))
	require.Len(t, out, 15)
	require.Equal(t, []string{"0", "10", "9"}, out[5:8])
	require.Equal(t, []string{"0", "50000", "49998"}, out[10:13])
	for key, typ := range map[string]string{"login:alice": "slidinglog",
		"search:acme": "slidingcounter", "export:acme": "fixedwindow", "merchant:7": "gcra"} {
		require.Equal(t, typ, p.cli(t, "TYPE", key))
	}
	require.Equal(t, "ERR invalid window '1parsec': "+"a whole number of seconds, or a number with a unit: ms, s, m, h, d (250ms, 1.5s, 15m)",
		p.cli(t, "WINDOW", "x", "1", "1parsec"))
}

func firstLines(s string, n int) string {
	return strings.Join(strings.SplitN(s, "\n", n+1)[:n], "\n")
}
