package compat

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// respConn speaks RESP to the binary, for replies exactly as sent.
type respConn struct {
	nc net.Conn
	rd *bufio.Reader
}

func dialRESP(t *testing.T, p *process) *respConn {
	t.Helper()
	nc, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &respConn{nc: nc, rd: bufio.NewReader(nc)}
}

// send writes each command as a RESP array, all in one write as a pipelining client does.
func (c *respConn) send(t *testing.T, cmds ...[]string) {
	t.Helper()
	var b strings.Builder
	for _, args := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
	}
	_, err := c.nc.Write([]byte(b.String()))
	require.NoError(t, err)
}

// reply reads one reply: a string for +, - (with its -), $ and :, nil for a null, []any for *.
func (c *respConn) reply(t *testing.T) any {
	t.Helper()
	line, err := c.rd.ReadString('\n')
	require.NoError(t, err)
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '*':
		n, err := strconv.Atoi(line[1:])
		require.NoError(t, err)
		if n < 0 {
			return nil
		}
		out := make([]any, n)
		for i := range out {
			out[i] = c.reply(t)
		}
		return out
	case '$':
		n, err := strconv.Atoi(line[1:])
		require.NoError(t, err)
		if n < 0 {
			return nil
		}
		b := make([]byte, n+2)
		_, err = io.ReadFull(c.rd, b)
		require.NoError(t, err)
		return string(b[:n])
	}
	return line
}

// closed reports whether the server closed the connection.
func (c *respConn) closed() bool {
	_, err := c.rd.ReadByte()
	return err != nil
}

// TestSentinelFailoverTransaction replays what Redis Sentinel sends a replica it promotes, or
// points at a new primary (sentinelSendSlaveOf), in one pipelined write, against the binary
// started from a config file; then checks the replies, the clients killed and the
// rewritten file.
func TestSentinelFailoverTransaction(t *testing.T) {
	for _, tc := range []struct {
		name    string
		slaveof []string
		want    string // the replicaof line the rewritten file holds; "" for none
	}{
		{"promote", []string{"SLAVEOF", "NO", "ONE"}, ""},
		{"follow the new primary", []string{"SLAVEOF", "127.0.0.1", "6999"}, "replicaof 127.0.0.1 6999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "throttled.conf")
			old := fmt.Sprintf("# managed by sentinel\nappendonly no\nreplicaof 127.0.0.1 %d\nreplica-priority 100\n", freePort(t))
			require.NoError(t, os.WriteFile(conf, []byte(old), 0o644))
			p := start(t, conf)

			normal := dialRESP(t, p)
			normal.send(t, []string{"PING"})
			require.Equal(t, "+PONG", normal.reply(t))
			subscriber := dialRESP(t, p)
			subscriber.send(t, []string{"SUBSCRIBE", "__sentinel__:hello"})
			pubsub := subscriber.reply(t)
			hasPubSub := !strings.HasPrefix(fmt.Sprint(pubsub), "-ERR unknown command")

			sentinel := dialRESP(t, p)
			sentinel.send(t, []string{"MULTI"}, tc.slaveof, []string{"CONFIG", "REWRITE"},
				[]string{"CLIENT", "KILL", "TYPE", "normal"}, []string{"CLIENT", "KILL", "TYPE", "pubsub"}, []string{"EXEC"})
			require.Equal(t, "+OK", sentinel.reply(t))
			queued := sentinel.reply(t)
			if queued != "+QUEUED" {
				// No SLAVEOF command yet (it comes with replication): the transaction is
				// refused as Redis refuses one with an unknown command. The rest of it is
				// checked without it below.
				require.Equal(t, fmt.Sprintf("-ERR unknown command '%s', with args beginning with: '%s' '%s' ",
					tc.slaveof[0], tc.slaveof[1], tc.slaveof[2]), queued)
				for range 3 {
					require.Equal(t, "+QUEUED", sentinel.reply(t))
				}
				require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.", sentinel.reply(t))
				t.Log("SLAVEOF is not there yet: checking the transaction without it")
				sentinel.send(t, []string{"MULTI"}, []string{"CONFIG", "REWRITE"},
					[]string{"CLIENT", "KILL", "TYPE", "normal"}, []string{"CLIENT", "KILL", "TYPE", "pubsub"}, []string{"EXEC"})
				require.Equal(t, "+OK", sentinel.reply(t))
			}
			for range 3 {
				require.Equal(t, "+QUEUED", sentinel.reply(t))
			}
			exec := sentinel.reply(t).([]any)
			if queued == "+QUEUED" {
				require.Equal(t, "+OK", exec[0], "SLAVEOF")
				exec = exec[1:]
			}
			// Without pub/sub yet, the would-be subscriber is a normal client.
			want := []any{"+OK", ":2", ":0"}
			if hasPubSub {
				want = []any{"+OK", ":1", ":1"}
			}
			require.Equal(t, want, exec)
			require.True(t, normal.closed(), "CLIENT KILL TYPE normal closes the other clients")
			require.True(t, subscriber.closed(), "CLIENT KILL TYPE pubsub closes the subscribers")
			sentinel.send(t, []string{"PING"})
			require.Equal(t, "+PONG", sentinel.reply(t), "the caller itself stays")

			written, err := os.ReadFile(conf)
			require.NoError(t, err)
			lines := strings.Split(string(written), "\n")
			require.Equal(t, "# managed by sentinel", lines[0], "comments stay")
			require.Contains(t, lines, "appendonly no")
			require.Contains(t, lines, "replica-priority 100")
			require.Contains(t, lines, "port "+strconv.Itoa(p.port), "options from the command line are written, as Redis does")
			var replicaof []string
			for _, l := range lines {
				if strings.HasPrefix(l, "replicaof ") {
					replicaof = append(replicaof, l)
				}
			}
			if queued == "+QUEUED" {
				if tc.want == "" {
					require.Empty(t, replicaof, "a primary's file has no replicaof")
				} else {
					require.Equal(t, []string{tc.want}, replicaof)
				}
			} else {
				require.Len(t, replicaof, 1, "unchanged until SLAVEOF exists")
				require.Contains(t, old, replicaof[0]+"\n")
			}
		})
	}
}

// TestConfigRewriteWithCli: CONFIG SET and CONFIG REWRITE through redis-cli, and a restart of
// the binary from the rewritten file runs with the same options.
func TestConfigRewriteWithCli(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	require.NoError(t, os.WriteFile(conf, []byte("# my settings\nappendonly no\n\nmaxclients 100\nmaxclients 200\n"), 0o644))
	p := start(t, conf)
	require.Equal(t, "OK", p.cli(t, "CONFIG", "SET", "maxclients", "123", "replica-priority", "5", "masterauth", "two words"))
	require.Equal(t, "OK", p.cli(t, "CONFIG", "REWRITE"))
	written, err := os.ReadFile(conf)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(written), "# my settings\nappendonly no\n\nmaxclients 123\n\n# Generated by CONFIG REWRITE\n"), "%s", written)
	require.Contains(t, string(written), "\nreplica-priority 5\n")
	require.Contains(t, string(written), "\nmasterauth \"two words\"\n")

	again := start(t, conf)
	require.Equal(t, "maxclients\n123", again.cli(t, "CONFIG", "GET", "maxclients"))
	require.Equal(t, "replica-priority\n5", again.cli(t, "CONFIG", "GET", "replica-priority"))
	require.Equal(t, "masterauth\ntwo words", again.cli(t, "CONFIG", "GET", "masterauth"))
}
