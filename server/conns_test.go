package server

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestIdleClientsClosed(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.Timeout = 1 })
	idle := ts.raw(t)
	idle.send(t, "PING\r\n")
	idle.expect(t, "+PONG\r\n")
	sub, _ := subscribeRaw(t, ts, "news")
	// closeIdle is what the loop runs every second; the clock is the test's.
	require.Equal(t, 0, ts.closeIdle(time.Now()))
	require.Equal(t, 1, ts.closeIdle(time.Now().Add(2*time.Second)))
	requireHungUp(t, idle, 5*time.Second)
	sub.send(t, "PING\r\n") // a subscriber is left alone
	sub.expect(t, "*2\r\n$4\r\npong\r\n$0\r\n\r\n")

	// And the loop does it on its own.
	other := ts.raw(t)
	other.send(t, "PING\r\n")
	other.expect(t, "+PONG\r\n")
	requireHungUp(t, other, 5*time.Second)
}

func TestConnectionOptions(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	require.Equal(t, []any{"timeout", "0"}, do(t, rdb, "config", "get", "timeout"))
	require.Equal(t, []any{"tcp-keepalive", "300"}, do(t, rdb, "config", "get", "tcp-keepalive"))
	require.Equal(t, []any{"protected-mode", "yes"}, do(t, rdb, "config", "get", "protected-mode"))
	require.Equal(t, []any{"client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"},
		do(t, rdb, "config", "get", "client-output-buffer-limit"))
	do(t, rdb, "config", "set", "timeout", "30", "tcp-keepalive", "60", "protected-mode", "no", "client-output-buffer-limit", "pubsub 1mb 256kb 10")
	require.Equal(t, []any{"client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 262144 10"},
		do(t, rdb, "config", "get", "client-output-buffer-limit"))
	require.Contains(t, doErr(t, rdb, "config", "set", "client-output-buffer-limit", "bogus 1 1 1"), "Invalid client class")
	require.Contains(t, doErr(t, rdb, "config", "set", "protected-mode", "maybe"), "'yes' or 'no'")
}

func TestProtectedMode(t *testing.T) {
	ts := startServer(t)
	remote := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 40000}
	local := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 40000}
	require.True(t, ts.deniedByProtectedMode(remote))
	require.False(t, ts.deniedByProtectedMode(local))
	require.False(t, ts.deniedByProtectedMode(&net.TCPAddr{IP: net.IPv6loopback}))
	rdb := ts.client(t, 2)
	do(t, rdb, "config", "set", "requirepass", "pw") // a password: anyone may try AUTH
	require.False(t, ts.deniedByProtectedMode(remote))
	do(t, rdb, "auth", "pw")
	do(t, rdb, "config", "set", "requirepass", "", "protected-mode", "no")
	require.False(t, ts.deniedByProtectedMode(remote))

	// A real client from another address of this host, when it has one.
	ip := nonLoopbackIP()
	if ip == nil {
		t.Skip("no address besides the loopback")
	}
	do(t, rdb, "config", "set", "protected-mode", "yes")
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	require.NoError(t, err)
	go ts.Serve(ln)
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, _ := nc.Read(buf)
	require.True(t, strings.HasPrefix(string(buf[:n]), "-DENIED Redis is running in protected mode"), string(buf[:n]))
}

func nonLoopbackIP() net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP
		}
	}
	return nil
}

// TestSubscriberOutputLimit: a subscriber that never reads is disconnected once its output
// passes the pubsub class's hard limit, and the server's memory stays bounded.
func TestSubscriberOutputLimit(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.ClientOutputBufferLimit = "pubsub 256kb 0 0" })
	sub, id := subscribeRaw(t, ts, "firehose")
	_ = sub // never read from again
	rdb := ts.client(t, 2)
	msg := strings.Repeat("m", 64<<10)
	require.Eventually(t, func() bool {
		do(t, rdb, "publish", "firehose", msg)
		return clientLine(t, rdb, id) == ""
	}, 20*time.Second, time.Millisecond)
}

func TestParseOutputLimits(t *testing.T) {
	l, err := parseOutputLimits("normal 1mb 512kb 5 replica 2mb 1mb 10", defaultOutputLimits)
	require.NoError(t, err)
	require.Equal(t, outputClass{1 << 20, 512 << 10, 5}, l.normal)
	require.Equal(t, outputClass{2 << 20, 1 << 20, 10}, l.replica)
	require.Equal(t, defaultOutputLimits.pubsub, l.pubsub)
	for _, bad := range []string{"", "normal 1 2", "normal x 0 0", "normal -1 0 0", "nobody 1 1 1"} {
		_, err := parseOutputLimits(bad, defaultOutputLimits)
		require.Error(t, err, bad)
	}
}

// TestMaxClientsAtItsLimit fills the server to maxclients: the next connection is refused
// and counted, and a slot freed lets a new client in.
func TestMaxClientsAtItsLimit(t *testing.T) {
	const limit = 50
	ts := startServer(t, func(c *Config) { c.MaxClients = limit })
	var conns []*rawConn
	for i := 0; i < limit; i++ {
		c := ts.raw(t)
		c.send(t, "PING\r\n")
		c.expect(t, "+PONG\r\n")
		conns = append(conns, c)
	}
	refused := ts.raw(t)
	require.Equal(t, "-ERR max number of clients reached", refused.line(t))
	require.True(t, refused.closed())
	require.Equal(t, int64(1), ts.stats.rejected.Load())

	conns[0].nc.Close()
	require.Eventually(t, func() bool { return ts.connected.Load() == limit-1 }, 5*time.Second, time.Millisecond)
	again := ts.raw(t)
	again.send(t, "INFO stats\r\n")
	require.True(t, strings.HasPrefix(again.line(t), "$"))
	require.Contains(t, again.line(t), "# Stats")
}
