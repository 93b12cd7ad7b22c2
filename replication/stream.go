package replication

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/throttledhq/throttled/keyspace"
)

// The stream a primary sends is Redis's wire format, commands as arrays of bulk strings, so
// that offsets count bytes as Redis's do and redis-cli can read it (redis-cli --replica):
//
//	PUT key value        the key's current state, value as keyspace.Encode writes it
//	PATCH key head changes  a key holding a keyspace.Chunked value (a big sorted set,
//	                     hash or set) changed: its Kind, Expire, Num and Num2 as
//	                     keyspace.Encode writes them, and the chunks that changed
//	                     (keyspace.Patcher), applied to the replica's copy of it
//	DEL key              the key was deleted or expired
//	FLUSHALL             every key was deleted
//	PING                 the primary is alive (every pingPeriod without changes)
//	REPLCONF GETACK *    the replica answers REPLCONF ACK offset at once (WAIT)
//
// A full copy is the same PUT commands, then SYNCEND; it is not counted in offsets.

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(dst []byte, args ...[]byte) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = appendBulkHeader(dst, len(a))
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

func appendBulkHeader(dst []byte, n int) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

var (
	cmdPut      = []byte("PUT")
	cmdDel      = []byte("DEL")
	cmdPatch    = []byte("PATCH")
	cmdFlushAll = []byte("FLUSHALL")
	cmdPing     = []byte("PING")
	cmdReplconf = []byte("REPLCONF")
	cmdSyncEnd  = []byte("SYNCEND")
	argGetAck   = []byte("GETACK")
	argStar     = []byte("*")
)

// appendPatch appends PATCH key head changes without allocating.
func appendPatch(dst, key []byte, head keyspace.Value, changes []byte) []byte {
	dst = append(dst, "*4\r\n$5\r\nPATCH\r\n"...)
	dst = appendBulkHeader(dst, len(key))
	dst = append(dst, key...)
	dst = append(dst, '\r', '\n')
	n := keyspace.EncodedLen(head)
	dst = appendBulkHeader(dst, n)
	dst = append(dst, make([]byte, n)...)
	keyspace.Encode(dst[len(dst)-n:], head)
	dst = append(dst, '\r', '\n')
	dst = appendBulkHeader(dst, len(changes))
	dst = append(dst, changes...)
	return append(dst, '\r', '\n')
}

// appendPut appends PUT key value without allocating.
func appendPut(dst, key []byte, v keyspace.Value) []byte {
	dst = append(dst, "*3\r\n$3\r\nPUT\r\n"...)
	dst = appendBulkHeader(dst, len(key))
	dst = append(dst, key...)
	dst = append(dst, '\r', '\n')
	n := keyspace.EncodedLen(v)
	dst = appendBulkHeader(dst, n)
	dst = append(dst, make([]byte, n)...)
	keyspace.Encode(dst[len(dst)-n:], v)
	return append(dst, '\r', '\n')
}

// appendDel appends DEL key.
func appendDel(dst, key []byte) []byte {
	dst = append(dst, "*2\r\n$3\r\nDEL\r\n"...)
	dst = appendBulkHeader(dst, len(key))
	dst = append(dst, key...)
	return append(dst, '\r', '\n')
}

// maxArg bounds one argument of the stream: a key or an encoded value.
const maxArg = 512 << 20

// errStream is a stream that does not parse: the link is dropped and a full copy follows.
var errStream = errors.New("replication: malformed stream")

// streamReader reads the commands of a stream, counting the bytes they take.
type streamReader struct {
	br   *bufio.Reader
	args [][]byte
	buf  []byte
}

// next reads one command; args are valid until the next call. n is its size in bytes.
func (r *streamReader) next() (args [][]byte, n int, err error) {
	line, err := r.line()
	if err != nil {
		return nil, 0, err
	}
	n = len(line) + 2
	if len(line) < 2 || line[0] != '*' {
		return nil, 0, fmt.Errorf("%w: %q", errStream, truncate(line))
	}
	count, err := strconv.Atoi(string(line[1:]))
	if err != nil || count < 1 || count > 16 {
		return nil, 0, fmt.Errorf("%w: %q", errStream, truncate(line))
	}
	r.buf = r.buf[:0]
	var lens [16]int
	for i := range count {
		line, err := r.line()
		if err != nil {
			return nil, 0, err
		}
		n += len(line) + 2
		if len(line) < 2 || line[0] != '$' {
			return nil, 0, fmt.Errorf("%w: %q", errStream, truncate(line))
		}
		size, err := strconv.Atoi(string(line[1:]))
		if err != nil || size < 0 || size > maxArg {
			return nil, 0, fmt.Errorf("%w: %q", errStream, truncate(line))
		}
		// The bytes are read as they come, a piece at a time: a length that the stream does
		// not back costs no more memory than the bytes that did arrive.
		for need := size + 2; need > 0; {
			piece := min(need, 64<<10)
			r.buf = append(r.buf, make([]byte, piece)...)
			if _, err := io.ReadFull(r.br, r.buf[len(r.buf)-piece:]); err != nil {
				return nil, 0, err
			}
			need -= piece
		}
		if r.buf[len(r.buf)-2] != '\r' || r.buf[len(r.buf)-1] != '\n' {
			return nil, 0, fmt.Errorf("%w: bulk without CRLF", errStream)
		}
		r.buf = r.buf[:len(r.buf)-2]
		lens[i] = size
		n += size + 2
	}
	r.args = r.args[:0]
	at := 0
	for _, l := range lens[:count] {
		r.args = append(r.args, r.buf[at:at+l:at+l])
		at += l
	}
	return r.args, n, nil
}

// line reads one line without its CRLF; the slice is valid until the next read.
func (r *streamReader) line() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, fmt.Errorf("%w: line too long", errStream)
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line without CR", errStream)
	}
	return line[:len(line)-2], nil
}

func truncate(b []byte) string {
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}
