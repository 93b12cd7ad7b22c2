package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestListpackParams: Redis 7.0's names, defaults, ziplist aliases and value forms.
func TestListpackParams(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.ZsetMaxListpackEntries = 5 })
	rdb := ts.client(t, 2)
	require.Equal(t, map[any]any{"hash-max-listpack-entries": "512", "hash-max-listpack-value": "64"},
		toMap(do(t, rdb, "CONFIG", "GET", "hash-max-listpack-*")))
	require.Equal(t, []any{"zset-max-ziplist-entries", "5"}, do(t, rdb, "CONFIG", "GET", "zset-max-ziplist-entries"))
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "SET", "hash-max-ziplist-value", "1kb"))
	require.Equal(t, []any{"hash-max-listpack-value", "1024"}, do(t, rdb, "CONFIG", "GET", "hash-max-listpack-value"))
	require.Equal(t, int64(1024), ts.listpack.hashValue.Load())
	require.Equal(t, "OK", do(t, rdb, "CONFIG", "SET", "list-max-listpack-size", "-3"))
	require.Equal(t, []any{"list-max-ziplist-size", "-3"}, do(t, rdb, "CONFIG", "GET", "list-max-ziplist-size"))
	for _, tc := range []struct{ name, value, err string }{
		{"zset-max-listpack-value", "x", "argument must be a memory value"},
		{"hash-max-listpack-entries", "-1", "argument must be a memory value"},
		{"list-max-listpack-size", "1kb", "argument couldn't be parsed into an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, "ERR CONFIG SET failed (possibly related to argument '"+tc.name+"') - "+tc.err,
				doErr(t, rdb, "CONFIG", "SET", tc.name, tc.value))
		})
	}
}
