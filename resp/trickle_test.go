package resp

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// chunks is a connection that hands over its bytes a few at a time: each Read returns what
// is left of the next piece, as a client trickling a request one write at a time is read.
// With block, a Read between two pieces finds nothing (ErrWouldBlock), as an event loop's.
type chunks struct {
	pieces  [][]byte
	done    int // bytes of pieces[0] already read
	block   bool
	blocked bool // the last Read was ErrWouldBlock
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.pieces) == 0 {
		return 0, io.EOF
	}
	if c.block && c.done == 0 && !c.blocked {
		c.blocked = true
		return 0, ErrWouldBlock
	}
	c.blocked = false
	n := copy(p, c.pieces[0][c.done:])
	if c.done += n; c.done == len(c.pieces[0]) {
		c.pieces, c.done = c.pieces[1:], 0
	}
	return n, nil
}

// manyArgs is one request of n arguments: "SADD", then n-1 short members.
func manyArgs(n int) []byte {
	b := []byte("*" + strconv.Itoa(n) + "\r\n$4\r\nSADD\r\n")
	for i := 1; i < n; i++ {
		m := strconv.Itoa(i)
		b = append(b, "$"+strconv.Itoa(len(m))+"\r\n"+m+"\r\n"...)
	}
	return b
}

// byArgument splits a request into its count line, then one argument per piece.
func byArgument(req []byte) [][]byte {
	var pieces [][]byte
	for len(req) > 0 {
		i := bytes.IndexByte(req, '\n') + 1 // the count or length line
		if req[0] == '$' {
			n, _ := strconv.Atoi(string(req[1 : i-2]))
			i += n + 2
		}
		pieces = append(pieces, req[:i])
		req = req[i:]
	}
	return pieces
}

// byByte splits b into one piece a byte.
func byByte(b []byte) [][]byte {
	pieces := make([][]byte, len(b))
	for i := range b {
		pieces[i] = b[i : i+1]
	}
	return pieces
}

// BenchmarkTrickle parses one request of n arguments arriving one argument per read, as from
// a client that trickles it: the cost per argument stays flat as n grows when each read
// parses only what it brought.
func BenchmarkTrickle(b *testing.B) {
	for _, n := range []int{1000, 10_000, 100_000} {
		req := manyArgs(n)
		pieces := byArgument(req)
		b.Run(fmt.Sprintf("args=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(req)))
			for i := 0; i < b.N; i++ {
				r := NewReader(&chunks{pieces: pieces}, DefaultMaxBulk)
				args, err := r.Next()
				if err != nil || len(args) != n {
					b.Fatalf("%d arguments, %v", len(args), err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/arg")
		})
	}
}

// TestTrickledRequestParsedOnce: a request arriving an argument or a byte per read is walked
// over once, not again from its first byte at every read: the bytes the parser looks at stay
// within twice the request's, however many reads it took.
func TestTrickledRequestParsedOnce(t *testing.T) {
	const n = 2000
	req := manyArgs(n)
	inline := []byte("SET k " + strings.Repeat("v", MaxInline-100) + "\r\n")
	for _, tc := range []struct {
		name   string
		pieces [][]byte
		size   int
		last   string
	}{
		{"an argument a read", byArgument(req), len(req), strconv.Itoa(n - 1)},
		{"a byte a read", byByte(req), len(req), strconv.Itoa(n - 1)},
		{"an inline request a byte a read", byByte(inline), len(inline), strings.Repeat("v", MaxInline-100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(&chunks{pieces: tc.pieces}, DefaultMaxBulk)
			args, err := r.Next()
			require.NoError(t, err)
			require.Equal(t, tc.last, string(args[len(args)-1]))
			require.LessOrEqual(t, r.scanned, int64(2*tc.size))
			_, err = r.Next()
			require.Equal(t, io.EOF, err)
		})
	}
}

// TestBigBulkBufferGrowsWithItsBytes: a bulk announced at proto-max-bulk-len costs the bytes
// sent, not the bytes announced: the buffer stays within twice what it holds (plus a read's
// worth), never past what the request needs, and goes back once the request has run, with
// nothing left holding the big one.
func TestBigBulkBufferGrowsWithItsBytes(t *testing.T) {
	const size = 3<<20 + 12345
	head := []byte("*2\r\n$4\r\nECHO\r\n$" + strconv.Itoa(size) + "\r\n")
	data := append(head, bytes.Repeat([]byte("x"), size)...)
	data = append(data, "\r\n"...)

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	// The head and ten bytes of a bulk announced at 512 MB.
	huge := []byte("*2\r\n$4\r\nECHO\r\n$536870912\r\n0123456789")
	r := NewReader(&chunks{pieces: [][]byte{huge}, block: true}, DefaultMaxBulk)
	_, err := r.Next()
	require.Equal(t, ErrWouldBlock, err)
	_, err = r.Next()
	require.Equal(t, io.EOF, err)
	require.Equal(t, ReadChunk, len(r.Buf))

	var pieces [][]byte
	for rest := data; len(rest) > 0; {
		n := min(64<<10, len(rest))
		pieces, rest = append(pieces, rest[:n]), rest[n:]
	}
	r = NewReader(&chunks{pieces: pieces, block: true}, DefaultMaxBulk)
	var args [][]byte
	for args == nil {
		args, err = r.Next()
		if err == ErrWouldBlock {
			require.LessOrEqual(t, len(r.Buf), 2*(r.End-r.Start)+ReadChunk)
			continue
		}
		require.NoError(t, err)
	}
	require.Equal(t, size, len(args[1]))
	require.LessOrEqual(t, len(r.Buf), len(data)+ReadChunk, "grown past what the request needs")

	_, err = r.Next()
	require.Equal(t, io.EOF, err)
	require.Equal(t, ReadChunk, len(r.Buf))
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	require.Less(t, int64(after.HeapAlloc)-int64(before.HeapAlloc), int64(size/2), "the big buffer is still held")
	runtime.KeepAlive(r)
	runtime.KeepAlive(data)
}

// TestNextAllocatesNothing: once its arrays have grown, the reader parses a pipeline, a
// request split across reads and Buffered's look ahead without allocating.
func TestNextAllocatesNothing(t *testing.T) {
	pipeline := []byte("*6\r\n$11\r\nCL.THROTTLE\r\n$5\r\nk:123\r\n$3\r\n100\r\n$2\r\n10\r\n$2\r\n60\r\n$1\r\n1\r\n" +
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n")
	pieces := [][]byte{pipeline[:30], pipeline[30:77], pipeline[77:]}
	want := []string{"CL.THROTTLE", "GET", "PING", "SET"}
	src := &chunks{block: true}
	r := NewReader(src, DefaultMaxBulk)
	run := func() {
		src.pieces = pieces
		for _, want := range want {
			r.Buffered()
			args, err := r.Next()
			for err == ErrWouldBlock {
				args, err = r.Next()
			}
			if err != nil || string(args[0]) != want {
				t.Fatalf("%q, %v; want %s", args, err, want)
			}
		}
	}
	run()
	require.Zero(t, testing.AllocsPerRun(100, run))
}
