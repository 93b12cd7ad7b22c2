package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/server"
)

var update = flag.Bool("update", false, "rewrite throttled.conf at the repository root from the option table")

// sampleConfigPath is the sample config at the repository's root.
const sampleConfigPath = "../../throttled.conf"

// TestSampleConfig: throttled.conf is what the option table says, every option in it; and it
// loads, to the defaults. go generate ./cmd/throttled rewrites it.
func TestSampleConfig(t *testing.T) {
	want := sampleConfig()
	if *update {
		require.NoError(t, os.WriteFile(sampleConfigPath, []byte(want), 0o644))
	}
	got, err := os.ReadFile(sampleConfigPath)
	require.NoError(t, err)
	require.Equal(t, want, string(got), "throttled.conf has drifted from the option table: go generate ./cmd/throttled")
	for _, o := range optionTable() {
		require.Contains(t, want, "\n# "+o.name+" ", o.name)
	}
	cfg, err := loadOptionsFrom([]string{sampleConfigPath}, noEnv, nil)
	require.NoError(t, err)
	def := server.DefaultConfig()
	def.ConfigFile = cfg.ConfigFile
	require.Equal(t, def, cfg)
}

func noEnv(string) (string, bool) { return "", false }

// env is an environment of the given variables only.
func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

// TestOptionPrecedence: defaults < environment < file < command line, for every kind of
// option.
func TestOptionPrecedence(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "throttled.conf")
	require.NoError(t, os.WriteFile(conf, []byte("port 7001\nmaxmemory 2mb\n"), 0o644))
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want func(c *server.Config)
	}{
		{"defaults", nil, nil, func(c *server.Config) {}},
		{"environment", map[string]string{"THROTTLED_PORT": "7000", "THROTTLED_REQUIREPASS": "a b \"c\"", "THROTTLED_BIND": "127.0.0.1 -::1",
			"THROTTLED_TLS_AUTH_CLIENTS": "optional", "THROTTLED_APPENDONLY": "no", "THROTTLED_LOG_FORMAT": "json"}, nil,
			func(c *server.Config) {
				c.Port, c.RequirePass, c.Bind, c.TLSAuthClients, c.AppendOnly, c.LogFormat = 7000, `a b "c"`, "127.0.0.1 -::1", "optional", false, "json"
			}},
		{"file over environment", map[string]string{"THROTTLED_PORT": "7000", "THROTTLED_MAXCLIENTS": "5"}, []string{conf},
			func(c *server.Config) { c.Port, c.MaxClients, c.MaxMemory, c.ConfigFile = 7001, 5, 2<<20, conf }},
		{"command line over file", map[string]string{"THROTTLED_PORT": "7000"}, []string{conf, "--port", "7002", "--maxmemory", "1kb"},
			func(c *server.Config) { c.Port, c.MaxMemory, c.ConfigFile = 7002, 1024, conf }},
		{"command line over environment", map[string]string{"THROTTLED_LOGFILE": "/x"}, []string{"--logfile", ""},
			func(c *server.Config) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := server.DefaultConfig()
			tc.want(&want)
			got, err := loadOptionsFrom(tc.args, env(tc.env), nil)
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

// TestConfigSources: stdin, include, and the options of a redis.conf that mean nothing here.
func TestConfigSources(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc.conf")
	require.NoError(t, os.WriteFile(inc, []byte("save 900 1\nmaxclients 77\n"), 0o644))
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		want  func(c *server.Config)
	}{
		{"stdin", []string{"-", "--port", "7003"}, "port 7001\nunixsocket /tmp/t.sock\nunixsocketperm 700\n",
			func(c *server.Config) { c.Port, c.UnixSocket, c.UnixSocketPerm = 7003, "/tmp/t.sock", 0o700 }},
		{"include", []string{"-"}, "databases 16\ninclude " + inc + "\nhz 10\nsave 60 1000\n",
			func(c *server.Config) { c.MaxClients, c.Ignored = 77, []string{"databases", "hz", "save"} }},
		{"supervised", []string{"-", "--supervised", "systemd"}, "daemonize yes\npidfile /run/t.pid\ntcp-backlog 128\n",
			func(c *server.Config) { c.Supervised, c.PidFile, c.TCPBacklog = "systemd", "/run/t.pid", 128 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := server.DefaultConfig()
			tc.want(&want)
			got, err := loadOptionsFrom(tc.args, noEnv, strings.NewReader(tc.stdin))
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

// TestBadOptions: a value of the wrong type or out of range names the option, the value and
// where it was set.
func TestBadOptions(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "loop.conf")
	require.NoError(t, os.WriteFile(loop, []byte("include "+loop+"\n"), 0o644))
	for _, tc := range []struct {
		name  string
		args  []string
		env   map[string]string
		stdin string
		want  string
	}{
		{"not a number", []string{"-"}, nil, "\nport seven\n", `stdin:2: port: "seven" is not a number`},
		{"out of range", []string{"-"}, nil, "# x\n\nport 70000\n", "stdin:3: port: 70000 is not between 0 and 65535"},
		{"out of range on the command line", []string{"--port", "-1"}, nil, "", "port: -1 is not between 0 and 65535"},
		{"not yes or no", []string{"-"}, nil, "appendonly maybe\n", `stdin:1: appendonly: "maybe" is not yes or no`},
		{"unknown", []string{"-"}, nil, "port 1\nsaev 900 1\n", "stdin:2: saev: unknown option"},
		{"unknown flag", []string{"--prot", "1"}, nil, "", "prot: unknown option"},
		{"environment", nil, map[string]string{"THROTTLED_MAXCLIENTS": "0"}, "", "THROTTLED_MAXCLIENTS: maxclients: 0 must be at least 1"},
		{"environment type", nil, map[string]string{"THROTTLED_TIMEOUT": "soon"}, "", `THROTTLED_TIMEOUT: timeout: "soon" is not a number`},
		{"bind", []string{"-"}, nil, "bind 127.0.0.1 nowhere\n", `stdin:1: bind: "nowhere" is not an IP address`},
		{"log-format", []string{"-"}, nil, "log-format xml\n", `stdin:1: log-format: "xml" is not text or json`},
		{"supervised", []string{"-"}, nil, "supervised upstart\n", `stdin:1: supervised: "upstart" is not one of no, auto, systemd`},
		{"unixsocketperm", []string{"-"}, nil, "unixsocketperm 999\n", `stdin:1: unixsocketperm: "999" is not permissions in octal`},
		{"daemonize", []string{"-"}, nil, "daemonize yes\n", "stdin:1: daemonize: yes is not supported"},
		{"include loop", []string{loop}, nil, "", "include: more than 16 levels deep"},
		{"include missing", []string{"-"}, nil, "include /nonexistent/x.conf\n", "stdin:1: include: config file: open /nonexistent/x.conf"},
		{"unbalanced quotes", []string{"-"}, nil, "requirepass \"x\n", "stdin:1: unbalanced quotes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadOptionsFrom(tc.args, env(tc.env), strings.NewReader(tc.stdin))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestHelpListsEveryOption: --help shows each option of the table with its default.
func TestHelpListsEveryOption(t *testing.T) {
	var b bytes.Buffer
	require.True(t, informational([]string{"--help"}, &b))
	help := b.String()
	for _, o := range optionTable() {
		next := " "
		if len(o.aliases) > 0 {
			next = ", --" + o.aliases[0] + " "
		}
		require.Contains(t, help, "  --"+o.name+next, o.name)
	}
	require.Contains(t, help, "--port n\n        TCP port; 0 picks a free one (with tls-port set, 0 serves TLS only) (default 6379)\n")
	require.Contains(t, help, "THROTTLED_<OPTION>")
	require.False(t, informational([]string{"conf", "--requirepass", "-v"}, &b), "-v as a value is not --version")
}

// buildBinary builds cmd/throttled with a version stamped as make build does.
func buildBinary(t *testing.T, stamp string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "throttled")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X github.com/throttledhq/throttled/internal/version.stamped="+stamp, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // static, as released (and as make test compiled it)
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

// TestBinaryHelpAndVersion: the real binary answers --help and --version, exits 0 and leaves
// nothing on disk (no data directory, no pidfile, no log).
func TestBinaryHelpAndVersion(t *testing.T) {
	bin := buildBinary(t, "v0.1.0-2-g12436a3-dirty")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--version"}, "throttled 0.1.0-2-g12436a3-dirty (go"},
		{[]string{"-v"}, "throttled 0.1.0-2-g12436a3-dirty (go"},
		{[]string{"--help"}, "Usage: throttled [config-file | -] [--option value ...]"},
		{[]string{"-h"}, "Usage: throttled [config-file | -] [--option value ...]"},
		{[]string{"--pidfile", "p", "--logfile", "l", "--help"}, "Usage: throttled"},
		{[]string{"/etc/nonexistent.conf", "--version"}, "throttled 0.1.0"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cwd := t.TempDir()
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = cwd
			out, err := cmd.Output()
			require.NoError(t, err)
			require.Contains(t, string(out), tc.want)
			left, err := os.ReadDir(cwd)
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
}

// process is a throttled binary running until the test ends.
type process struct {
	cmd   *exec.Cmd
	addr  string // from the "ready to accept connections" line
	mu    sync.Mutex
	lines []string // what it logged
	done  chan struct{}
}

// start runs bin with args and waits until it logs that it accepts connections.
func start(t *testing.T, bin string, args []string, environ []string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), environ...)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	ready := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	})
	select {
	case p.addr = <-ready:
	case <-p.done:
		t.Fatalf("throttled exited: %v", p.logged())
	case <-time.After(30 * time.Second):
		t.Fatalf("throttled did not start: %v", p.logged())
	}
	return p
}

var readyLine = regexp.MustCompile(`ready to accept connections.*addr"?[=:]"?([0-9.:\[\]a-f]+)`)

func (p *process) logged() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// stop sends SIGTERM and waits for the exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	<-p.done
	require.NoError(t, p.cmd.Wait())
}

// TestStockRedisConf: Debian's /etc/redis/redis.conf (make deps installs redis-server), with
// the overrides its own unit gives redis-server and a port and directory of the test's,
// starts throttled, which warns once about the options that mean nothing here.
func TestStockRedisConf(t *testing.T) {
	bin := buildBinary(t, "v0.1.0")
	dir := t.TempDir()
	p := start(t, bin, []string{"/etc/redis/redis.conf", "--daemonize", "no", "--port", "0", "--dir", dir,
		"--pidfile", filepath.Join(dir, "throttled.pid"), "--logfile", ""}, nil)
	rdb := redis.NewClient(&redis.Options{Addr: p.addr, Protocol: 2})
	defer rdb.Close()
	ctx := context.Background()
	v, err := rdb.Do(ctx, "CL.THROTTLE", "user123", "15", "30", "60").Result()
	require.NoError(t, err)
	require.Equal(t, []any{int64(0), int64(16), int64(15), int64(-1), int64(2)}, v)
	pid, err := os.ReadFile(filepath.Join(dir, "throttled.pid"))
	require.NoError(t, err)
	require.Equal(t, p.cmd.Process.Pid, atoi(t, strings.TrimSpace(string(pid))))
	info, err := rdb.Info(ctx, "server").Result()
	require.NoError(t, err)
	require.Contains(t, info, "throttled_version:0.1.0\r\n")
	p.stop(t)

	lines := p.logged()
	require.Regexp(t, `msg="throttled starting" version=0.1.0 pid=\d+ port=0 mode=standalone`, lines[0])
	var warned []string
	for _, l := range lines {
		if strings.Contains(l, "no meaning in throttled") {
			warned = append(warned, l)
		}
	}
	require.Len(t, warned, 1)
	require.Contains(t, warned[0], "databases")
	require.Contains(t, warned[0], "save")
	_, err = os.Stat(filepath.Join(dir, "throttled.pid"))
	require.True(t, os.IsNotExist(err), "the pidfile is removed at exit")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	for _, c := range s {
		require.True(t, c >= '0' && c <= '9', s)
		n = n*10 + int(c-'0')
	}
	return n
}
