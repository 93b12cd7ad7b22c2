package server

import (
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/resp"
)

// TestQueryBufferGoesBackAfterABigRequest: a big request grows its connection's read buffer
// to what it needs; once it has run, the buffer shrinks back even though the next request
// is already half read, as Redis's querybuf shrinks. Before, the event loops kept the 8 MB
// buffer until a read found it empty, and a connection served by a goroutine held back the
// reply to the SET until the next request was whole. A bulk announced at 512 MB and sent
// ten bytes of costs no more than those bytes.
func TestQueryBufferGoesBackAfterABigRequest(t *testing.T) {
	for _, mode := range ioModes {
		t.Run(mode.name, func(t *testing.T) {
			ts := startServer(t, withIOThreads(mode.threads), func(c *Config) { c.AppendOnly = false })
			rdb := ts.client(t, 2)
			c := ts.raw(t)
			addr := c.nc.LocalAddr().String()

			big := strings.Repeat("v", 5<<20)
			c.send(t, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$"+strconv.Itoa(len(big))+"\r\n"+big+"\r\n*1\r\n$4\r\nPI")
			require.Equal(t, "+OK", c.line(t))
			qbuf, free := queryBuffer(t, do(t, rdb, "CLIENT", "LIST").(string), addr)
			require.LessOrEqual(t, qbuf, len("*1\r\n$4\r\nPI")) // 0 where it has not been read yet
			require.LessOrEqual(t, qbuf+free, resp.KeepReadBuf)

			c.send(t, "NG\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n0123456789")
			require.Equal(t, "+PONG", c.line(t))
			qbuf, free = queryBuffer(t, do(t, rdb, "CLIENT", "LIST").(string), addr)
			require.LessOrEqual(t, qbuf, len("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\n0123456789"))
			require.LessOrEqual(t, qbuf+free, resp.ReadChunk)
		})
	}
}

// queryBuffer returns the qbuf and qbuf-free of the client at addr in a CLIENT LIST reply.
func queryBuffer(t *testing.T, list, addr string) (qbuf, free int) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		if !strings.Contains(line, " addr="+addr+" ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "qbuf":
				qbuf, _ = strconv.Atoi(v)
			case "qbuf-free":
				free, _ = strconv.Atoi(v)
			}
		}
		return qbuf, free
	}
	t.Fatalf("no client at %s in %q", addr, list)
	return 0, 0
}

// TestQueryBufferIdle: CLIENT LIST counts the request running in its client's qbuf, as
// Redis's querybuf still holds it; an event loop's client that sends nothing for
// queryBufIdle gives its read buffer back (qbuf 0, qbuf-free 0), and its next request
// reads into a new one.
func TestQueryBufferIdle(t *testing.T) {
	ts := startServerWith(t, func(s *Server) { s.queryBufIdle = 0 }, withIOThreads(1))
	rdb := ts.client(t, 2)
	c := ts.raw(t)
	addr := c.nc.LocalAddr().String()

	c.send(t, "*2\r\n$6\r\nCLIENT\r\n$4\r\nLIST\r\n")
	n, err := strconv.Atoi(strings.TrimPrefix(c.line(t), "$"))
	require.NoError(t, err)
	list := make([]byte, n+2)
	_, err = io.ReadFull(c.rd, list)
	require.NoError(t, err)
	require.Contains(t, string(list), " qbuf=26 ", "the request running, *2 $6 CLIENT $4 LIST")

	c.send(t, "*1\r\n$4\r\nPING\r\n")
	require.Equal(t, "+PONG", c.line(t))
	require.Eventually(t, func() bool {
		ts.trimQueryBuffers()
		qbuf, free := queryBuffer(t, do(t, rdb, "CLIENT", "LIST").(string), addr)
		return qbuf == 0 && free == 0
	}, 5*time.Second, 10*time.Millisecond)

	c.send(t, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	require.Equal(t, "+OK", c.line(t))
	require.Equal(t, "$2", c.line(t))
	require.Equal(t, "v1", c.line(t))
	_, free := queryBuffer(t, do(t, rdb, "CLIENT", "LIST").(string), addr)
	require.Equal(t, resp.ReadChunk, free)
}
