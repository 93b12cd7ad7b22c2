package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/version"
)

// notifySocket listens as systemd does for a Type=notify service's datagrams, and names
// itself in $NOTIFY_SOCKET.
func notifySocket(t *testing.T) *net.UnixConn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return conn
}

// readNotify is the next datagram on the notify socket.
func readNotify(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	n, err := conn.Read(buf)
	require.NoError(t, err)
	return string(buf[:n])
}

// TestStartupListeners: ListenAndServe as the binary runs it: several bind addresses (an
// optional one), a Unix socket with its permissions, the pidfile, JSON logs in logfile, and
// systemd told when the server is ready and stopping.
func TestStartupListeners(t *testing.T) {
	dir := t.TempDir()
	notify := notifySocket(t)
	cfg := DefaultConfig()
	cfg.AppendOnly = false
	cfg.Port = 0
	cfg.Bind = "127.0.0.1 -::1 -192.0.2.1" // TEST-NET-1 is on no interface: skipped
	cfg.UnixSocket = filepath.Join(dir, "throttled.sock")
	cfg.UnixSocketPerm = 0o700
	cfg.PidFile = filepath.Join(dir, "throttled.pid")
	cfg.LogFile = filepath.Join(dir, "throttled.log")
	cfg.LogFormat = "json"
	cfg.Supervised = "systemd"
	cfg.TCPBacklog = 64
	cfg.Ignored = []string{"databases", "save"}
	s, err := New(cfg)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.ListenAndServe() }()
	t.Cleanup(func() { s.Close() })

	ready := readNotify(t, notify)
	require.True(t, strings.HasPrefix(ready, "READY=1\nSTATUS=Ready to accept connections on 127.0.0.1:"), ready)
	port := s.Addr().(*net.TCPAddr).Port
	pid, err := os.ReadFile(cfg.PidFile)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(pid))
	st, err := os.Stat(cfg.UnixSocket)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())

	ctx := context.Background()
	addrs := []struct{ network, addr string }{
		{"tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))},
		{"unix", cfg.UnixSocket},
	}
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil { // IPv6 on this host: -::1 was bound
		ln.Close()
		addrs = append(addrs, struct{ network, addr string }{"tcp", net.JoinHostPort("::1", strconv.Itoa(port))})
	}
	for _, a := range addrs {
		t.Run(a.network+" "+a.addr, func(t *testing.T) {
			rdb := redis.NewClient(&redis.Options{Network: a.network, Addr: a.addr, Protocol: 2})
			defer rdb.Close()
			v, err := rdb.Do(ctx, "THROTTLE", "k:"+a.addr, 4, 5, "1m").Result()
			require.NoError(t, err)
			require.Equal(t, int64(0), v.([]any)[0])
			info, err := rdb.Info(ctx, "server").Result()
			require.NoError(t, err)
			require.Contains(t, info, "throttled_version:"+version.String()+"\r\n")
			require.Contains(t, info, "process_id:"+strconv.Itoa(os.Getpid())+"\r\n")
			cfgs, err := rdb.ConfigGet(ctx, "*").Result()
			require.NoError(t, err)
			for name, want := range map[string]string{"bind": cfg.Bind, "unixsocket": cfg.UnixSocket, "unixsocketperm": "700",
				"pidfile": cfg.PidFile, "logfile": cfg.LogFile, "log-format": "json", "supervised": "systemd", "tcp-backlog": "64", "daemonize": "no"} {
				require.Equal(t, want, cfgs[name], name)
			}
			require.Error(t, rdb.ConfigSet(ctx, "pidfile", "/elsewhere").Err(), "a start-up option")
		})
	}

	require.NoError(t, s.Close())
	require.NoError(t, <-served)
	require.Equal(t, "STOPPING=1\nSTATUS=Saving the state and stopping\n", readNotify(t, notify))
	for _, gone := range []string{cfg.PidFile, cfg.UnixSocket} {
		_, err := os.Stat(gone)
		require.True(t, os.IsNotExist(err), gone)
	}

	// The log: JSON lines, the banner first, then the ignored options, once.
	f, err := os.Open(cfg.LogFile)
	require.NoError(t, err)
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		lines = append(lines, line)
	}
	require.GreaterOrEqual(t, len(lines), 3)
	banner := lines[0]
	require.Equal(t, "throttled starting", banner["msg"])
	require.Equal(t, version.String(), banner["version"])
	require.Equal(t, float64(os.Getpid()), banner["pid"])
	require.Equal(t, float64(0), banner["port"])
	require.Equal(t, "standalone", banner["mode"])
	require.Equal(t, runtime.Version(), banner["go"])
	require.Equal(t, "ignoring options that have no meaning in throttled", lines[1]["msg"])
	require.Equal(t, "databases save", lines[1]["options"])
	require.Equal(t, "server stopped", lines[len(lines)-1]["msg"])
}

// TestStartupBindRequired: a required address that cannot be bound fails the start, and so
// does a bind whose every address is optional and missing.
func TestStartupBindRequired(t *testing.T) {
	for _, tc := range []struct{ bind, want string }{
		{"127.0.0.1 192.0.2.1", "server: listen: listen tcp 192.0.2.1:"},
		{"-192.0.2.1", `server: listen: no address of bind "-192.0.2.1" could be bound`},
	} {
		t.Run(tc.bind, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.AppendOnly = false
			cfg.Port = 0
			cfg.Bind = tc.bind
			cfg.PidFile = filepath.Join(t.TempDir(), "pid")
			s, err := New(cfg)
			require.NoError(t, err)
			defer s.Close()
			require.ErrorContains(t, s.ListenAndServe(), tc.want)
			_, err = os.Stat(cfg.PidFile)
			require.True(t, os.IsNotExist(err), "no pidfile for a server that did not start")
		})
	}
}

// TestInfoVersionAndBuildInfo: INFO server and /metrics say which build this is.
func TestInfoVersionAndBuildInfo(t *testing.T) {
	ts := startServer(t)
	base := serveMetrics(t, ts)
	fams := scrape(t, base)
	require.Equal(t, 1.0, value(t, fams, "throttled_build_info", "version", version.String(), "goversion", runtime.Version(), "role", "master"))
	info, err := ts.client(t, 2).Info(context.Background(), "server").Result()
	require.NoError(t, err)
	require.Contains(t, info, "throttled_version:"+version.String()+"\r\n")
	require.Contains(t, info, "redis_version:"+redisVersion+"\r\n")
}
