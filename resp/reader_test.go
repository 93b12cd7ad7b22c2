package resp

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReader feeds arbitrary bytes to the request parser: it never panics, never returns
// arguments it did not read, and never claims more bytes than it has; and the same bytes
// trickled in pieces of the sizes cuts gives (a would-block between pieces, as the event
// loops' reads have, so each piece is parsed by a call of Next of its own) parse into the
// same requests and the same error as read whole, Buffered's parsing ahead included.
func FuzzReader(f *testing.F) {
	for _, seed := range []string{
		"*1\r\n$4\r\nPING\r\n", "PING\r\n", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "*1\r\n$9223372036854775807\r\n",
		"*-1\r\n", "*0\r\n", "\"a\\x41\" 'b'\r\n", "*3\r\n$3\r\nSET\r\n$1\r\nk", "$5\r\nhello\r\n",
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n\r\n*1\r\n$4\r\nPING\r\n*1\r\n$3\r\nabcXY",
	} {
		f.Add([]byte(seed), []byte{0, 2, 5})
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		whole, wholeErr := parseAll(t, NewReader(bytes.NewReader(data), DefaultMaxBulk), len(data), false)
		var pieces [][]byte
		for i, rest := 0, data; len(rest) > 0; i++ {
			n := 1
			if len(cuts) > 0 {
				n += int(cuts[i%len(cuts)])
			}
			n = min(n, len(rest))
			pieces, rest = append(pieces, rest[:n]), rest[n:]
		}
		trickled, trickledErr := parseAll(t, NewReader(&chunks{pieces: pieces, block: true}, DefaultMaxBulk), len(data), true)
		// The requests parsed ahead of time (ParseAhead, as the key prefetch does after each
		// read) are the ones Next returns after.
		ahead := NewReader(&chunks{pieces: pieces, block: true}, DefaultMaxBulk)
		lookAhead(t, ahead, len(data), 1+len(cuts)%17)
		parsedAhead, parsedAheadErr := parseAll(t, ahead, len(data), len(cuts)%2 == 0)
		// A line past MaxInline is refused once that many bytes of it are read without its
		// end: whether its end came in the same read depends on the reads, as in Redis.
		if readSized(wholeErr) || readSized(trickledErr) || readSized(parsedAheadErr) {
			n := min(len(whole), len(trickled), len(parsedAhead))
			require.Equal(t, whole[:n], trickled[:n])
			require.Equal(t, whole[:n], parsedAhead[:n])
			return
		}
		require.Equal(t, whole, trickled)
		require.Equal(t, wholeErr, trickledErr)
		require.Equal(t, whole, parsedAhead)
		require.Equal(t, wholeErr, parsedAheadErr)
	})
}

// lookAhead makes r parse up to most requests ahead after each read, as the key prefetch
// does, checking that none has an argument longer than the size bytes read.
func lookAhead(t *testing.T, r *Reader, size, most int) {
	r.Ahead = func([][]byte) {
		for range most {
			args, ok := r.ParseAhead()
			if !ok {
				return
			}
			for _, a := range args {
				if len(a) > size {
					t.Fatalf("argument of %d bytes parsed ahead from %d bytes of input", len(a), size)
				}
			}
		}
	}
}

// TestParseAheadKeepsLimits: a request parsed ahead of time is held to the limits of a
// client that is not authenticated when it runs (after RESET, say), as one parsed then.
func TestParseAheadKeepsLimits(t *testing.T) {
	big := "*11\r\n" + strings.Repeat("$1\r\na\r\n", 11)
	long := "*2\r\n$3\r\nGET\r\n$16385\r\n" + strings.Repeat("k", 16385) + "\r\n"
	for name, tc := range map[string]struct{ req, err string }{
		"arguments": {big, "Protocol error: unauthenticated multibulk length"},
		"length":    {long, "Protocol error: unauthenticated bulk length"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, ahead := range []bool{false, true} {
				r := NewReader(bytes.NewReader([]byte("*1\r\n$5\r\nRESET\r\n"+tc.req)), DefaultMaxBulk)
				r.Buf = make([]byte, 64*1024)
				if ahead {
					lookAhead(t, r, len(tc.req), 16)
				}
				args, err := r.Next()
				require.NoError(t, err)
				require.Equal(t, "RESET", string(args[0]))
				r.Unauthed = true
				_, err = r.Next()
				require.EqualError(t, err, tc.err)
			}
		})
	}
}

// parseAll parses requests from r until an error other than ErrWouldBlock (at most 1000 of
// them), checking that no argument is longer than the size bytes read; with ahead, it asks
// Buffered before each Next, as a connection served by a goroutine does.
func parseAll(t *testing.T, r *Reader, size int, ahead bool) ([][]string, error) {
	var reqs [][]string
	for len(reqs) < 1000 {
		if ahead {
			r.Buffered()
		}
		args, err := r.Next()
		if err == ErrWouldBlock {
			continue
		}
		if err != nil {
			return reqs, err
		}
		req := make([]string, len(args))
		for i, a := range args {
			if len(a) > size {
				t.Fatalf("argument of %d bytes from %d bytes of input", len(a), size)
			}
			req[i] = string(a)
		}
		reqs = append(reqs, req)
	}
	return reqs, nil
}

// readSized reports whether err is one of the errors for a line too long, whose moment
// depends on how the bytes were read.
func readSized(err error) bool {
	var pe ProtocolError
	return errors.As(err, &pe) && strings.HasPrefix(string(pe), "too big")
}

// TestEmptyRequests: an empty line, *0 and any count below it (Redis reads *-1, a null, and
// *-5 alike) are no request: the reader goes on to the next.
func TestEmptyRequests(t *testing.T) {
	r := NewReader(bytes.NewReader([]byte("\r\n*0\r\n*-1\r\n*-99999999999\r\n*1\r\n$4\r\nPING\r\n")), DefaultMaxBulk)
	args, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("PING")}, args)
}

func TestReplyReader(t *testing.T) {
	r := ReplyReader{B: []byte("*2\r\n:-1\r\n$2\r\nok\r\n")}
	if n := r.Header('*'); n != 2 || r.Bad {
		t.Fatalf("array header %d, bad %v", n, r.Bad)
	}
	if n := r.Header(':'); n != -1 || r.Bad {
		t.Fatalf("integer %d, bad %v", n, r.Bad)
	}
	if b := r.Bulk(); string(b) != "ok" || r.Bad || len(r.B) != 0 {
		t.Fatalf("bulk %q, bad %v, left %q", b, r.Bad, r.B)
	}
	for _, in := range []string{":1\r\n", "$5\r\nok\r\n", "$x\r\n", "$\r\n", ""} {
		r := ReplyReader{B: []byte(in)}
		r.Bulk()
		if !r.Bad {
			t.Fatalf("%q read as a bulk string", in)
		}
	}
}

// TestReaderRelease: an empty reader gives its buffer back, one holding a request's
// start keeps it, and reading after a release makes a new buffer.
func TestReaderRelease(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewReader(pr, DefaultMaxBulk)
	go pw.Write([]byte("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI"))
	args, err := r.Next()
	require.NoError(t, err)
	require.Equal(t, "PING", string(args[0]))
	require.Equal(t, 0, r.Last)
	require.False(t, r.Release(), "half a request is buffered")

	go pw.Write([]byte("NG\r\n"))
	_, err = r.Next()
	require.NoError(t, err)
	require.Equal(t, 14, r.Last)
	require.True(t, r.Release())
	require.Nil(t, r.Buf)
	require.False(t, r.Release())

	go pw.Write([]byte("*1\r\n$4\r\nECHO\r\n"))
	args, err = r.Next()
	require.NoError(t, err)
	require.Equal(t, "ECHO", string(args[0]))
	require.Len(t, r.Buf, ReadChunk)
}

// TestPlainRequests: the requests the one-pass parse reads (plain) and those it leaves to the
// general one (more than 1024 arguments, a length past the limits, a leading zero, a part)
// give the same arguments and errors: each one read whole, then the same bytes a byte a read.
func TestPlainRequests(t *testing.T) {
	bulk := func(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
	many := func(n int) (string, []string) {
		req, args := "*"+strconv.Itoa(n)+"\r\n", make([]string, n)
		for i := range args {
			args[i] = strconv.Itoa(i)
			req += bulk(args[i])
		}
		return req, args
	}
	req99, args99 := many(99)
	req100, args100 := many(100)
	req1025, args1025 := many(1025)
	v100, v20k := strings.Repeat("v", 100), strings.Repeat("w", 20000)
	for _, tc := range []struct {
		name, req string
		want      []string
		maxBulk   int
		unauthed  bool
		err       string
	}{
		{name: "short", req: "*2\r\n" + bulk("GET") + bulk("k"), want: []string{"GET", "k"}},
		{name: "empty argument", req: "*2\r\n" + bulk("GET") + bulk(""), want: []string{"GET", ""}},
		{name: "two-digit length", req: "*2\r\n" + bulk("CL.THROTTLE") + bulk("k"), want: []string{"CL.THROTTLE", "k"}},
		{name: "long value", req: "*3\r\n" + bulk("SET") + bulk("k") + bulk(v100), want: []string{"SET", "k", v100}},
		{name: "longer value", req: "*3\r\n" + bulk("SET") + bulk("k") + bulk(v20k), want: []string{"SET", "k", v20k}},
		{name: "99 arguments", req: req99, want: args99},
		{name: "100 arguments", req: req100, want: args100},
		{name: "1025 arguments", req: req1025, want: args1025},
		{name: "past proto-max-bulk-len", req: "*2\r\n" + bulk("SET") + bulk(v100), maxBulk: 99, err: "Protocol error: invalid bulk length"},
		{name: "unauthenticated long value", req: "*3\r\n" + bulk("SET") + bulk("k") + bulk(v20k), unauthed: true, err: "Protocol error: unauthenticated bulk length"},
		{name: "unauthenticated 11 arguments", req: "*11\r\n" + strings.Repeat(bulk("a"), 11), unauthed: true, err: "Protocol error: unauthenticated multibulk length"},
		{name: "leading zero", req: "*2\r\n" + bulk("GET") + "$01\r\nk\r\n", err: "Protocol error: invalid bulk length"},
		{name: "no CRLF after an argument", req: "*2\r\n" + bulk("GET") + "$1\r\nkk\r\n", err: "Protocol error: invalid bulk length"},
		{name: "not a bulk", req: "*2\r\n" + bulk("GET") + ":1\r\n", err: "Protocol error: expected '$', got ':'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pieces := range [][][]byte{{[]byte(tc.req)}, byByte([]byte(tc.req))} {
				r := NewReader(&chunks{pieces: pieces}, DefaultMaxBulk)
				if tc.maxBulk > 0 {
					r.MaxBulk = tc.maxBulk
				}
				r.Unauthed = tc.unauthed
				args, err := r.Next()
				if tc.err != "" {
					require.EqualError(t, err, tc.err)
					continue
				}
				require.NoError(t, err)
				got := make([]string, len(args))
				for i, a := range args {
					got[i] = string(a)
				}
				require.Equal(t, tc.want, got)
				_, err = r.Next()
				require.Equal(t, io.EOF, err)
			}
		})
	}
}
