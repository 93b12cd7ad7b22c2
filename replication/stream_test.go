package replication

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/keyspace"
)

func TestStreamRoundTrip(t *testing.T) {
	var b []byte
	v := keyspace.Value{Kind: keyspace.GCRA, Num: 42, Expire: 7}
	b = appendPut(b, []byte("k\r\n"), v)
	b = appendDel(b, []byte(""))
	b = appendCommand(b, cmdReplconf, argGetAck, argStar)
	r := &streamReader{br: bufio.NewReader(bytes.NewReader(b))}
	total := 0
	args, n, err := r.next()
	require.NoError(t, err)
	total += n
	require.Equal(t, "PUT", string(args[0]))
	require.Equal(t, "k\r\n", string(args[1]))
	got, err := keyspace.DecodeValue(args[2])
	require.NoError(t, err)
	require.Equal(t, v, got)
	args, n, err = r.next()
	require.NoError(t, err)
	total += n
	require.Equal(t, [][]byte{[]byte("DEL"), {}}, args)
	args, n, err = r.next()
	require.NoError(t, err)
	total += n
	require.Len(t, args, 3)
	require.Equal(t, len(b), total, "sizes count every byte: offsets agree")
}

// FuzzStreamReader: no stream makes the reader panic, and what it reads re-encodes to at
// most the bytes it counted (exactly, for the primary's canonical encoding: the replica
// checks that before it keeps the bytes).
func FuzzStreamReader(f *testing.F) {
	f.Add(appendPut(nil, []byte("k"), keyspace.Value{Kind: keyspace.GCRA, Num: 1}))
	f.Add([]byte("*2\r\n$3\r\nDEL\r\n$-1\r\n"))
	f.Add([]byte("*1\r\n$99999999999\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &streamReader{br: bufio.NewReader(bytes.NewReader(b))}
		for {
			args, n, err := r.next()
			if err != nil {
				return
			}
			require.LessOrEqual(t, len(appendCommand(nil, args...)), n)
		}
	})
}

func TestBacklogKeepsWhatFollowersNeed(t *testing.T) {
	var b backlog
	b.reset(100)
	for range 10 {
		b.buf = append(b.buf, make([]byte, 1000)...)
		b.trim(2000, 100) // a follower still at 100
	}
	require.True(t, b.covers(100))
	require.Equal(t, int64(10100), b.end())
	b.trim(2000, b.end()) // nobody needs more than the last 2000 bytes
	require.False(t, b.covers(100))
	require.True(t, b.covers(b.end()-2000))
	require.Equal(t, int64(8100), b.start)
	require.Len(t, b.buf, 2000)
	require.Equal(t, []byte{0, 0}, b.slice(b.end()-2, 10))
}
