package server

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestPingEchoSelect(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	require.Equal(t, "PONG", do(t, rdb, "PING"))
	require.Equal(t, "hi", do(t, rdb, "PING", "hi"))
	require.Equal(t, "ERR wrong number of arguments for 'ping' command", doErr(t, rdb, "PING", "a", "b"))
	require.Equal(t, "x\x00y", do(t, rdb, "ECHO", "x\x00y"))
	require.Equal(t, "OK", do(t, rdb, "SELECT", 0))
	require.Equal(t, "ERR DB index is out of range", doErr(t, rdb, "SELECT", 1))
}

func TestHello(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.send(t, "HELLO 3\r\n")
	require.Equal(t, "%7", c.line(t))
	for _, want := range []string{"$6", "server", "$5", "redis", "$7", "version", "$5", redisVersion, "$5", "proto", ":3"} {
		require.Equal(t, want, c.line(t))
	}
	for c.line(t) != "*0" { // id, mode, role, then modules: an empty array
	}
	c.send(t, "GET missing\r\nHELLO 4\r\nHELLO 2\r\n")
	require.Equal(t, "_", c.line(t))
	require.Equal(t, "-NOPROTO unsupported protocol version", c.line(t))
	require.Equal(t, "*14", c.line(t))
}

func TestAuth(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.RequirePass = "s3cret" })
	c := ts.raw(t)
	c.send(t, "GET k\r\nAUTH wrong\r\nAUTH someone s3cret\r\nPING\r\nAUTH s3cret\r\nPING\r\n")
	require.Equal(t, "-NOAUTH Authentication required.", c.line(t))
	require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.", c.line(t))
	require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.", c.line(t))
	require.Equal(t, "-NOAUTH Authentication required.", c.line(t))
	require.Equal(t, "+OK", c.line(t))
	require.Equal(t, "+PONG", c.line(t))

	// go-redis authenticates through HELLO 3 AUTH.
	rdb := redis.NewClient(&redis.Options{Addr: ts.addr, Password: "s3cret"})
	defer rdb.Close()
	require.Equal(t, "PONG", do(t, rdb, "PING"))
	bad := redis.NewClient(&redis.Options{Addr: ts.addr, Password: "nope"})
	defer bad.Close()
	require.Contains(t, doErr(t, bad, "PING"), "WRONGPASS")

	// Without a password configured AUTH says so.
	open := startServer(t).client(t, 2)
	require.Contains(t, doErr(t, open, "AUTH", "x"), "called without any password configured")

	// CONFIG SET requirepass takes effect for new connections.
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "SET", "requirepass", "other"))
	c2 := ts.raw(t)
	c2.send(t, "PING\r\nAUTH other\r\nPING\r\n")
	require.Equal(t, "-NOAUTH Authentication required.", c2.line(t))
	require.Equal(t, "+OK", c2.line(t))
	require.Equal(t, "+PONG", c2.line(t))
}

func TestClientCommands(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	ctx := context.Background()
	conn := rdb.Conn()
	defer conn.Close()
	id, err := conn.ClientID(ctx).Result()
	require.NoError(t, err)
	require.Greater(t, id, int64(0))
	require.NoError(t, conn.ClientSetName(ctx, "worker-1").Err())
	require.Equal(t, "worker-1", conn.ClientGetName(ctx).Val())
	require.Equal(t, "ERR Client names cannot contain spaces, newlines or special characters.",
		connDo(conn, "CLIENT", "SETNAME", "a b").Err().Error())
	require.NoError(t, connDo(conn, "CLIENT", "SETINFO", "LIB-NAME", "mylib").Err())
	info, err := connDo(conn, "CLIENT", "INFO").Text()
	require.NoError(t, err)
	require.Contains(t, info, "name=worker-1")
	require.Contains(t, info, "lib-name=mylib")
	require.Contains(t, info, "cmd=client|info")

	other := ts.raw(t)
	other.send(t, "CLIENT SETNAME victim\r\n")
	require.Equal(t, "+OK", other.line(t))
	list, err := connDo(conn, "CLIENT", "LIST").Text()
	require.NoError(t, err)
	require.Contains(t, list, "name=victim")
	require.Equal(t, 2, strings.Count(list, "\n"))

	require.Equal(t, int64(1), connDo(conn, "CLIENT", "KILL", "SKIPME", "yes").Val())
	require.True(t, other.closed())
	require.Equal(t, "ERR No such client", connDo(conn, "CLIENT", "KILL", "1.2.3.4:5").Err().Error())
	help, err := connDo(conn, "CLIENT", "HELP").StringSlice()
	require.NoError(t, err)
	require.Contains(t, help[0], "CLIENT <subcommand>")
}

func TestQuitAndReset(t *testing.T) {
	ts := startServer(t)
	c := ts.raw(t)
	c.send(t, "HELLO 3\r\n")
	for c.line(t) != "*0" {
	}
	c.send(t, "RESET\r\nGET x\r\nQUIT\r\nPING\r\n")
	require.Equal(t, "+RESET", c.line(t))
	require.Equal(t, "$-1", c.line(t))
	require.Equal(t, "+OK", c.line(t))
	require.True(t, c.closed())
}

// connDo runs a command on one pinned connection.
func connDo(conn *redis.Conn, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(context.Background(), args...)
	conn.Process(context.Background(), cmd)
	return cmd
}
