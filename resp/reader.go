package resp

import (
	"bytes"
	"errors"
	"io"
	"strconv"
)

// Protocol limits, as Redis's defaults: a request past them is a protocol error.
const (
	MaxMultibulk   = 1024 * 1024       // arguments in one request
	MaxInline      = 64 * 1024         // bytes in one inline request
	ReadChunk      = 16 * 1024         // read buffer size, and its growth step
	KeepReadBuf    = 64 * 1024         // a read buffer grown past this is dropped when idle
	KeepWriteBuf   = 64 * 1024         // likewise for replies
	DefaultMaxBulk = 512 * 1024 * 1024 // proto-max-bulk-len
)

// errWouldBlock is a non-blocking read finding nothing more: the request waits for more bytes.
var ErrWouldBlock = errors.New("would block")

// errProtocol is a malformed request: the client gets the error, then the connection closes.
type ProtocolError string

func (e ProtocolError) Error() string { return "Protocol error: " + string(e) }

// reader parses requests from a connection without allocating per request.
// redcon's own reader trusts lengths it cannot hold (a bulk length near
// 2^63 overflows its index maths and panics outside any handler), so
// requests are read here with every length bounded, and redcon writes replies.
type Reader struct {
	Src     io.Reader
	Buf     []byte
	Start   int      // first unparsed byte
	End     int      // end of data read
	args    [][]byte // the current request; slices of buf or of inline
	inline  []byte   // unquoted inline arguments
	MaxBulk int
	// What was read, for INFO (netstats.go): bytes and reads, since the last takeNet.
	NRead, Reads int64
	// unauthed: the client has not authenticated on a server that wants it. As Redis 7,
	// its requests are bounded much tighter, so that nobody can make the server buffer
	// hundreds of megabytes without a password.
	Unauthed bool
	// open reports whether the server wants no authentication any more (requirepass
	// removed since): then the limits are lifted. Asked only of requests past them.
	Open func() bool
	// ahead, when set, is shown the first request parsed after each read and the bytes
	// buffered after it, when there are any, before that request runs (client.prefetchKeys).
	Ahead func(first [][]byte, rest []byte)
	read  bool // a read since the last request returned
}

// Limits of an unauthenticated client's requests, as Redis's.
const (
	maxUnauthedMultibulk = 10
	maxUnauthedBulk      = 16384
)

func NewReader(rd io.Reader, maxBulk int) *Reader {
	return &Reader{Src: rd, Buf: make([]byte, ReadChunk), MaxBulk: maxBulk}
}

func (r *Reader) isOpen() bool { return r.Open != nil && r.Open() }

// buffered reports whether bytes of a next request are already read.
func (r *Reader) Buffered() bool { return r.End > r.Start }

// next returns the next request's arguments, reading more from the
// connection when needed. The slices are valid until the next call.
func (r *Reader) Next() ([][]byte, error) {
	for {
		if r.End > r.Start {
			args, n, err := r.parse(r.Buf[r.Start:r.End])
			if err != nil {
				return nil, err
			}
			if n > 0 {
				r.Start += n
				if len(args) == 0 {
					continue // an empty line or *0: nothing to run
				}
				if r.read {
					r.read = false
					if r.Ahead != nil && r.End > r.Start {
						r.Ahead(args, r.Buf[r.Start:r.End])
					}
				}
				return args, nil
			}
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
		r.read = true
	}
}

// fill reads more bytes, making room first.
func (r *Reader) fill() error {
	if r.Start == r.End {
		r.Start, r.End = 0, 0
		if len(r.Buf) > KeepReadBuf {
			r.Buf = make([]byte, ReadChunk)
		}
	}
	if r.End == len(r.Buf) {
		if r.Start > 0 {
			r.End = copy(r.Buf, r.Buf[r.Start:r.End])
			r.Start = 0
		} else {
			grown := make([]byte, len(r.Buf)*2)
			copy(grown, r.Buf[:r.End])
			r.Buf = grown
		}
	}
	n, err := r.Src.Read(r.Buf[r.End:])
	r.End += n
	if n > 0 {
		r.NRead += int64(n)
		r.Reads++
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// parse reads one request from b: its arguments and the bytes it used,
// or n == 0 when b holds only part of it.
func (r *Reader) parse(b []byte) ([][]byte, int, error) {
	if b[0] != '*' {
		return r.parseInline(b)
	}
	args, n, err := r.ParseMultibulk(b, r.args[:0])
	r.args = args[:0] // its array, for the next request
	return args, n, err
}

// parseMultibulk reads one request in RESP from b, appending its arguments to args; what
// it returns keeps args's array, whether the request was whole or not.
func (r *Reader) ParseMultibulk(b []byte, args [][]byte) ([][]byte, int, error) {
	line, pos := readLine(b, 1)
	if pos < 0 {
		if len(b) > MaxInline {
			return args[:0], 0, ProtocolError("too big mbulk count string")
		}
		return args[:0], 0, nil
	}
	count, ok := parseLength(line)
	if !ok || count > MaxMultibulk {
		return args[:0], 0, ProtocolError("invalid multibulk length")
	}
	if r.Unauthed && count > maxUnauthedMultibulk && !r.isOpen() {
		return args[:0], 0, ProtocolError("unauthenticated multibulk length")
	}
	for i := int64(0); i < count; i++ {
		if pos >= len(b) {
			return args[:0], 0, nil
		}
		if b[pos] != '$' {
			return args[:0], 0, ProtocolError("expected '$', got '" + string(b[pos]) + "'")
		}
		line, next := readLine(b, pos+1)
		if next < 0 {
			if len(b)-pos > MaxInline {
				return args[:0], 0, ProtocolError("too big bulk count string")
			}
			return args[:0], 0, nil
		}
		size, ok := parseLength(line)
		if !ok || size > int64(r.MaxBulk) {
			return args[:0], 0, ProtocolError("invalid bulk length")
		}
		if r.Unauthed && size > maxUnauthedBulk && !r.isOpen() {
			return args[:0], 0, ProtocolError("unauthenticated bulk length")
		}
		end := next + int(size)
		if end+2 > len(b) {
			return args[:0], 0, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return args[:0], 0, ProtocolError("invalid bulk length")
		}
		args = append(args, b[next:end:end])
		pos = end + 2
	}
	return args, pos, nil
}

// readLine returns the line starting at b[from] without its CRLF, and the
// position after it, or -1 when the line is incomplete.
func readLine(b []byte, from int) ([]byte, int) {
	i := bytes.IndexByte(b[from:], '\n')
	if i < 0 {
		return nil, -1
	}
	line := b[from : from+i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, from + i + 1
}

// parseLength parses a multibulk or bulk length; -1 (a null) counts as 0.
func parseLength(b []byte) (int64, bool) {
	if len(b) == 2 && b[0] == '-' && b[1] == '1' {
		return 0, true
	}
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseInline reads a telnet-style request: words separated by blanks,
// with "double" (C escapes) and 'single' quotes, as redis-cli users type.
func (r *Reader) parseInline(b []byte) ([][]byte, int, error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) > MaxInline {
			return nil, 0, ProtocolError("too big inline request")
		}
		return nil, 0, nil
	}
	line := b[:i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, err := r.SplitInline(line)
	if err != nil {
		return nil, 0, err
	}
	return args, i + 1, nil
}

var errUnbalancedQuotes = ProtocolError("unbalanced quotes in request")

// SplitInline splits an inline request (or a config file's line) into words as Redis
// does: blanks separate words, "double quotes" take C escapes (\n, \x41), 'single quotes'
// take \'. The words are slices of line or of the reader's own buffer.
func (r *Reader) SplitInline(line []byte) ([][]byte, error) {
	args := r.args[:0]
	r.inline = r.inline[:0]
	// Offsets into r.inline, turned into slices once it stops growing.
	var marks []int
	for i := 0; ; {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		if i == len(line) {
			break
		}
		start := len(r.inline)
		switch line[i] {
		case '"':
			i++
			for {
				if i == len(line) {
					return nil, errUnbalancedQuotes
				}
				c := line[i]
				if c == '"' {
					i++
					break
				}
				if c == '\\' && i+1 < len(line) {
					i++
					c = unescape(line, &i)
				}
				r.inline = append(r.inline, c)
				i++
			}
		case '\'':
			i++
			for {
				if i == len(line) {
					return nil, errUnbalancedQuotes
				}
				c := line[i]
				if c == '\'' {
					i++
					break
				}
				if c == '\\' && i+1 < len(line) && line[i+1] == '\'' {
					i++
					c = '\''
				}
				r.inline = append(r.inline, c)
				i++
			}
		default:
			for i < len(line) && line[i] != ' ' && line[i] != '\t' {
				r.inline = append(r.inline, line[i])
				i++
			}
		}
		if i < len(line) && line[i] != ' ' && line[i] != '\t' {
			return nil, errUnbalancedQuotes // a closing quote must end the word
		}
		marks = append(marks, start, len(r.inline))
	}
	for j := 0; j < len(marks); j += 2 {
		args = append(args, r.inline[marks[j]:marks[j+1]:marks[j+1]])
	}
	r.args = args
	return args, nil
}

// unescape reads the escape at line[*i] (after a backslash) and leaves *i on its last byte.
func unescape(line []byte, i *int) byte {
	switch c := line[*i]; c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	case 'x':
		if *i+2 < len(line) {
			if v, err := strconv.ParseUint(string(line[*i+1:*i+3]), 16, 8); err == nil {
				*i += 2
				return byte(v)
			}
		}
		return c
	default:
		return c
	}
}

// ReplyReader reads replies of the few RESP2 types whose lines are numbers (arrays,
// integers, bulk strings) from B, which it consumes; Bad is set at the first that is not
// what was asked for, and every later read is zero.
type ReplyReader struct {
	B   []byte
	Bad bool
}

// Header reads a line that starts with kind (':', '*', '$') and returns its number.
func (r *ReplyReader) Header(kind byte) int64 {
	i := bytes.Index(r.B, []byte("\r\n"))
	if r.Bad || i < 2 || r.B[0] != kind || i > 21 {
		r.Bad = true
		return 0
	}
	digits, neg := r.B[1:i], false
	if digits[0] == '-' {
		digits, neg = digits[1:], true
	}
	var n int64
	for _, d := range digits {
		if d < '0' || d > '9' {
			r.Bad = true
			return 0
		}
		n = n*10 + int64(d-'0')
	}
	if len(digits) == 0 {
		r.Bad = true
	}
	r.B = r.B[i+2:]
	if neg {
		return -n
	}
	return n
}

// Bulk reads a bulk string: its bytes, a slice of B.
func (r *ReplyReader) Bulk() []byte {
	size := r.Header('$')
	if r.Bad || size < 0 || int64(len(r.B)) < size+2 {
		r.Bad = true
		return nil
	}
	b := r.B[:size]
	r.B = r.B[size+2:]
	return b
}
