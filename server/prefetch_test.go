package server

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A pipeline's replies do not depend on prefetch-batch-max-size: reading its requests
// ahead (prefetchKeys) leaves the request about to run, the ones after it and their errors
// as they were: mixed commands, keys at every kind of position, bad arity, an unknown
// command, EVAL's and SINTERCARD's numkeys out of range, an inline request that ends the
// look-ahead, a request split between two reads, and a protocol error that closes the
// connection after the replies before it.
func TestPrefetchLeavesPipelinesAlone(t *testing.T) {
	cmd := func(args ...string) string {
		var b strings.Builder
		b.WriteString("*" + itoa(int64(len(args))) + "\r\n")
		for _, a := range args {
			b.WriteString("$" + itoa(int64(len(a))) + "\r\n" + a + "\r\n")
		}
		return b.String()
	}
	first := cmd("SET", "a", "1") + cmd("GET", "a") + cmd("MSET", "b", "2", "c", "3") + cmd("MGET", "a", "b", "nosuch", "c") +
		cmd("INCR", "a") + cmd("EVAL", "return redis.call('GET', KEYS[1]) .. ARGV[1]", "1", "b", "x") +
		cmd("EVAL", "return 1", "5", "a") + cmd("SINTERCARD", "9", "s") + cmd("GET") + cmd("NOSUCH", "a") +
		cmd("HSET", "h", "f", "v") + "PING\r\n" + cmd("HGET", "h", "f") + cmd("DEL", "a", "b") + cmd("MGET", "a", "b", "c") +
		cmd("FCALL", "nosuch", "1", "a") + cmd("EVAL", "return KEYS[1]", "-1")
	second := cmd("ZADD", "z", "1", "m") + cmd("ZSCORE", "z", "m") + cmd("GET", "c") + "*2\r\n$3\r\nGET\r\n$x\r\n"
	split := len(first) - 7 // in the last request of first

	replies := map[int64]string{}
	for _, batch := range []int64{0, 2, 16, 128} {
		ts := startServer(t, func(c *Config) { c.PrefetchBatch = int(batch) })
		require.Equal(t, batch, ts.prefetchBatch.Load())
		rc := ts.raw(t)
		rc.send(t, first[:split])
		time.Sleep(20 * time.Millisecond)
		rc.send(t, first[split:]+second)
		got, err := io.ReadAll(rc.rd)
		require.NoError(t, err, "the protocol error closes the connection")
		replies[batch] = string(got)
	}
	want := replies[0]
	require.Contains(t, want, "*4\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n$1\r\n3\r\n")
	require.Contains(t, want, "$2\r\n2x\r\n")
	require.Contains(t, want, "-ERR unknown command 'NOSUCH'")
	require.True(t, strings.HasSuffix(want, "$1\r\n3\r\n-ERR Protocol error: invalid bulk length\r\n"), want)
	for batch, got := range replies {
		require.Equal(t, want, got, "prefetch-batch-max-size %d", batch)
	}
}

func TestPrefetchBatchParam(t *testing.T) {
	ts := startServer(t)
	rdb := ts.client(t, 2)
	require.Equal(t, map[any]any{"prefetch-batch-max-size": "16"}, configGet(t, rdb, "prefetch-batch-max-size"))
	for _, v := range []string{"129", "-1"} {
		require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'prefetch-batch-max-size') - argument must be between 0 and 128 inclusive",
			doErr(t, rdb, "CONFIG", "SET", "prefetch-batch-max-size", v))
	}
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "SET", "prefetch-batch-max-size", "0"))
	require.Equal(t, int64(0), ts.prefetchBatch.Load())
}
