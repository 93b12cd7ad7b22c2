package server

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// kindClients connects n raw clients and gives each the kind in kinds, as the pub/sub and
// replication code mark theirs; it returns them with their ids.
func kindClients(t *testing.T, ts *testServer, kinds ...clientKind) ([]*rawConn, []int64) {
	t.Helper()
	var conns []*rawConn
	var ids []int64
	for _, k := range kinds {
		c := ts.raw(t)
		c.send(t, "CLIENT ID\r\n")
		id, err := strconv.ParseInt(strings.TrimPrefix(c.line(t), ":"), 10, 64)
		require.NoError(t, err)
		ts.mu.Lock()
		ts.clients[id].kind.Store(int32(k))
		ts.mu.Unlock()
		conns, ids = append(conns, c), append(ids, id)
	}
	return conns, ids
}

// listed returns the ids and flags CLIENT LIST args... shows.
func listed(t *testing.T, c *rawConn, args string) map[int64]string {
	t.Helper()
	c.send(t, "CLIENT LIST "+args+"\r\n")
	head := c.line(t)
	require.True(t, strings.HasPrefix(head, "$"), head)
	n, err := strconv.Atoi(head[1:])
	require.NoError(t, err)
	out := map[int64]string{}
	for read := 0; read < n; {
		line := c.line(t)
		read += len(line) + 1
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		id, err := strconv.ParseInt(strings.TrimPrefix(f[0], "id="), 10, 64)
		require.NoError(t, err)
		for _, kv := range f {
			if flags, ok := strings.CutPrefix(kv, "flags="); ok {
				out[id] = flags
			}
		}
	}
	c.line(t) // the bulk's CRLF
	return out
}

func TestClientListType(t *testing.T) {
	ts := startServer(t)
	conns, ids := kindClients(t, ts, kindNormal, kindPubSub, kindReplica, kindNormal)
	me := conns[0]
	require.Equal(t, map[int64]string{ids[0]: "N", ids[3]: "N"}, listed(t, me, "TYPE normal"))
	require.Equal(t, map[int64]string{ids[1]: "P"}, listed(t, me, "TYPE PUBSUB"))
	require.Equal(t, map[int64]string{ids[2]: "S"}, listed(t, me, "TYPE slave"))
	require.Equal(t, map[int64]string{ids[2]: "S"}, listed(t, me, "TYPE replica"))
	require.Equal(t, map[int64]string{}, listed(t, me, "TYPE master"))
	me.send(t, "CLIENT LIST TYPE nobody\r\nCLIENT LIST TYPE\r\n")
	require.Equal(t, "-ERR Unknown client type 'nobody'", me.line(t))
	require.Equal(t, "-ERR syntax error", me.line(t))
}

func TestClientKillType(t *testing.T) {
	ts := startServer(t)
	conns, ids := kindClients(t, ts, kindNormal, kindNormal, kindNormal, kindPubSub, kindPubSub, kindReplica)
	me := conns[0]
	for _, tc := range []struct {
		args string
		want int
		gone []int // indexes of conns the kill closed
	}{
		{"TYPE nobody", -1, nil},
		{"TYPE master", 0, nil},
		{"TYPE normal MAXAGE 1000", 0, nil},
		{"TYPE pubsub ID " + strconv.FormatInt(ids[3], 10), 1, []int{3}},
		{"TYPE normal", 2, []int{1, 2}}, // SKIPME yes by default: not the caller
		{"TYPE pubsub", 1, []int{4}},
		{"TYPE replica", 1, []int{5}},
		{"TYPE normal", 0, nil},
	} {
		me.send(t, "CLIENT KILL "+tc.args+"\r\n")
		if tc.want < 0 {
			require.Equal(t, "-ERR Unknown client type 'nobody'", me.line(t))
			continue
		}
		require.Equal(t, ":"+strconv.Itoa(tc.want), me.line(t), tc.args)
		for _, i := range tc.gone {
			require.True(t, conns[i].closed(), "%s closes client %d", tc.args, i)
		}
	}
	require.Eventually(t, func() bool { return ts.connected.Load() == 1 }, 5*time.Second, 10*time.Millisecond)

	// A killed client is gone at once, as Redis frees it, before its own loop has seen the
	// hang-up: the same kill finds nothing, and CLIENT LIST does not show it.
	for range 20 {
		_, ids := kindClients(t, ts, kindNormal)
		id := strconv.FormatInt(ids[0], 10)
		me.send(t, "CLIENT KILL ID "+id+"\r\nCLIENT KILL ID "+id+"\r\nCLIENT LIST ID "+id+"\r\n")
		require.Equal(t, ":1", me.line(t))
		require.Equal(t, ":0", me.line(t))
		require.Equal(t, "$0", me.line(t))
		require.Equal(t, "", me.line(t))
	}

	// SKIPME no: the caller gets its reply, then goes too.
	me.send(t, "CLIENT KILL TYPE normal SKIPME no\r\n")
	require.Equal(t, ":1", me.line(t))
	require.True(t, me.closed())
}
