package server

import (
	"bytes"
	"errors"
	"io"
	"strconv"
)

// Protocol limits, as Redis's defaults: a request past them is a protocol error.
const (
	maxMultibulk  = 1024 * 1024       // arguments in one request
	maxInline     = 64 * 1024         // bytes in one inline request
	readChunk     = 16 * 1024         // read buffer size, and its growth step
	keepReadBuf   = 64 * 1024         // a read buffer grown past this is dropped when idle
	keepWriteBuf  = 64 * 1024         // likewise for replies
	defaultMaxArg = 512 * 1024 * 1024 // proto-max-bulk-len
)

// errWouldBlock is a non-blocking read finding nothing more: the request waits for more bytes.
var errWouldBlock = errors.New("would block")

// errProtocol is a malformed request: the client gets the error, then the connection closes.
type errProtocol string

func (e errProtocol) Error() string { return "Protocol error: " + string(e) }

// reader parses requests from a connection without allocating per request.
// redcon's own reader trusts lengths it cannot hold (a bulk length near
// 2^63 overflows its index maths and panics outside any handler), so
// requests are read here with every length bounded, and redcon writes replies.
type reader struct {
	rd      io.Reader
	buf     []byte
	start   int      // first unparsed byte
	end     int      // end of data read
	args    [][]byte // the current request; slices of buf or of inline
	inline  []byte   // unquoted inline arguments
	maxBulk int
	// What was read, for INFO (netstats.go): bytes and reads, since the last takeNet.
	nread, reads int64
	// unauthed: the client has not authenticated on a server that wants it. As Redis 7,
	// its requests are bounded much tighter, so that nobody can make the server buffer
	// hundreds of megabytes without a password.
	unauthed bool
	// open reports whether the server wants no authentication any more (requirepass
	// removed since): then the limits are lifted. Asked only of requests past them.
	open func() bool
	// ahead, when set, is shown the first request parsed after each read and the bytes
	// buffered after it, when there are any, before that request runs (client.prefetchKeys).
	ahead func(first [][]byte, rest []byte)
	read  bool // a read since the last request returned
}

// Limits of an unauthenticated client's requests, as Redis's.
const (
	maxUnauthedMultibulk = 10
	maxUnauthedBulk      = 16384
)

func newReader(rd io.Reader, maxBulk int) *reader {
	return &reader{rd: rd, buf: make([]byte, readChunk), maxBulk: maxBulk}
}

func (r *reader) isOpen() bool { return r.open != nil && r.open() }

// buffered reports whether bytes of a next request are already read.
func (r *reader) buffered() bool { return r.end > r.start }

// next returns the next request's arguments, reading more from the
// connection when needed. The slices are valid until the next call.
func (r *reader) next() ([][]byte, error) {
	for {
		if r.end > r.start {
			args, n, err := r.parse(r.buf[r.start:r.end])
			if err != nil {
				return nil, err
			}
			if n > 0 {
				r.start += n
				if len(args) == 0 {
					continue // an empty line or *0: nothing to run
				}
				if r.read {
					r.read = false
					if r.ahead != nil && r.end > r.start {
						r.ahead(args, r.buf[r.start:r.end])
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
func (r *reader) fill() error {
	if r.start == r.end {
		r.start, r.end = 0, 0
		if len(r.buf) > keepReadBuf {
			r.buf = make([]byte, readChunk)
		}
	}
	if r.end == len(r.buf) {
		if r.start > 0 {
			r.end = copy(r.buf, r.buf[r.start:r.end])
			r.start = 0
		} else {
			grown := make([]byte, len(r.buf)*2)
			copy(grown, r.buf[:r.end])
			r.buf = grown
		}
	}
	n, err := r.rd.Read(r.buf[r.end:])
	r.end += n
	if n > 0 {
		r.nread += int64(n)
		r.reads++
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// parse reads one request from b: its arguments and the bytes it used,
// or n == 0 when b holds only part of it.
func (r *reader) parse(b []byte) ([][]byte, int, error) {
	if b[0] != '*' {
		return r.parseInline(b)
	}
	args, n, err := r.parseMultibulk(b, r.args[:0])
	r.args = args[:0] // its array, for the next request
	return args, n, err
}

// parseMultibulk reads one request in RESP from b, appending its arguments to args; what
// it returns keeps args's array, whether the request was whole or not.
func (r *reader) parseMultibulk(b []byte, args [][]byte) ([][]byte, int, error) {
	line, pos := readLine(b, 1)
	if pos < 0 {
		if len(b) > maxInline {
			return args[:0], 0, errProtocol("too big mbulk count string")
		}
		return args[:0], 0, nil
	}
	count, ok := parseLength(line)
	if !ok || count > maxMultibulk {
		return args[:0], 0, errProtocol("invalid multibulk length")
	}
	if r.unauthed && count > maxUnauthedMultibulk && !r.isOpen() {
		return args[:0], 0, errProtocol("unauthenticated multibulk length")
	}
	for i := int64(0); i < count; i++ {
		if pos >= len(b) {
			return args[:0], 0, nil
		}
		if b[pos] != '$' {
			return args[:0], 0, errProtocol("expected '$', got '" + string(b[pos]) + "'")
		}
		line, next := readLine(b, pos+1)
		if next < 0 {
			if len(b)-pos > maxInline {
				return args[:0], 0, errProtocol("too big bulk count string")
			}
			return args[:0], 0, nil
		}
		size, ok := parseLength(line)
		if !ok || size > int64(r.maxBulk) {
			return args[:0], 0, errProtocol("invalid bulk length")
		}
		if r.unauthed && size > maxUnauthedBulk && !r.isOpen() {
			return args[:0], 0, errProtocol("unauthenticated bulk length")
		}
		end := next + int(size)
		if end+2 > len(b) {
			return args[:0], 0, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return args[:0], 0, errProtocol("invalid bulk length")
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
func (r *reader) parseInline(b []byte) ([][]byte, int, error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) > maxInline {
			return nil, 0, errProtocol("too big inline request")
		}
		return nil, 0, nil
	}
	line := b[:i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, err := r.splitInline(line)
	if err != nil {
		return nil, 0, err
	}
	return args, i + 1, nil
}

var errUnbalancedQuotes = errProtocol("unbalanced quotes in request")

func (r *reader) splitInline(line []byte) ([][]byte, error) {
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
