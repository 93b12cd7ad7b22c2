package resp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
)

// Protocol limits, as Redis's defaults: a request past them is a protocol error.
const (
	MaxMultibulk   = 1024 * 1024       // arguments in one request
	MaxInline      = 64 * 1024         // bytes in one inline request
	ReadChunk      = 16 * 1024         // a read buffer's first size, and what it shrinks back to
	KeepReadBuf    = 64 * 1024         // a read buffer grown past this shrinks once it holds little
	KeepWriteBuf   = 64 * 1024         // likewise for replies
	DefaultMaxBulk = 512 * 1024 * 1024 // proto-max-bulk-len
)

// errWouldBlock is a non-blocking read finding nothing more: the request waits for more bytes.
var ErrWouldBlock = errors.New("would block")

// errProtocol is a malformed request: the client gets the error, then the connection closes.
type ProtocolError string

func (e ProtocolError) Error() string { return "Protocol error: " + string(e) }

// Reader parses requests from a connection without allocating per request.
// redcon's own reader trusts lengths it cannot hold (a bulk length near
// 2^63 overflows its index maths and panics outside any handler), so
// requests are read here with every length bounded, and redcon writes replies.
//
// A request that arrives in pieces is parsed once: how far it got is kept across reads
// (req), so each read parses only the bytes it brought, as Redis's multibulklen and bulklen
// do, and a request trickled over a million reads costs what it would in one.
type Reader struct {
	Src   io.Reader
	Buf   []byte
	Start int // first byte of the request being parsed
	End   int // end of data read
	// Last is where the request Next returned last starts in Buf, until the next call of
	// Next or Buffered: Buf[Last:End] is what Redis's querybuf holds while that request
	// runs (CLIENT LIST's qbuf).
	Last    int
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
	// Ahead, when set, is shown the first request parsed after each read, when more bytes
	// follow it, before that request runs (client.prefetchKeys): it may parse the requests
	// after it with ParseAhead.
	Ahead func(first [][]byte)

	req     request  // the request at Buf[Start:End], as far as it has been parsed
	ahead   request  // ParseAhead's, which parses each request from its start
	queued  queue    // the whole requests ParseAhead parsed, for Next to return in turn
	args    [][]byte // the last request's arguments: slices of Buf or of inline
	inline  []byte   // unquoted inline arguments
	marks   []int    // where each inline argument starts and ends in inline
	read    bool     // a read since the last request returned
	ready   bool     // args is a request Buffered parsed, for Next to return
	err     error    // a malformed request Buffered found, for Next to return
	scanned int64    // bytes the parser has looked at: parsing is linear (the tests)
}

// request is how far a request has been parsed. Its arguments are kept as offsets from its
// first byte, not as slices, because the buffer may move between reads (fill).
type request struct {
	pos   int   // the next byte to parse; 0 until a multibulk's count line is read
	left  int   // arguments still to read
	bulk  int   // the length of the argument being read, -1 until its length line is read
	seen  int   // bytes from the line being read known to hold no '\n': its search goes on there
	spans []int // the arguments read: each one's start and end
}

// queue is the requests ParseAhead parsed, each whole, in the order they follow
// Buf[Start]: each one's arguments as offsets from its own first byte (so that a buffer
// moved by shrink leaves them right), and its length.
type queue struct {
	args  [][]byte // each request's arguments, one request after another: slices of Buf, which does not move while a request is queued
	reqs  []int    // each request's length in bytes and how many arguments it has, in pairs
	head  int      // the next request's pair in reqs
	arg   int      // its first argument in args
	bytes int      // the bytes of the requests queued after head: ParseAhead goes on from there
}

// empty reports whether no parsed request waits.
func (q *queue) empty() bool { return q.head == len(q.reqs) }

// reset makes q ready for the next request.
func (q *request) reset() {
	q.pos, q.left, q.bulk, q.seen = 0, 0, -1, 0
	if cap(q.spans) > 2*keepArgs {
		q.spans = nil // a huge request's offsets go back
	}
	q.spans = q.spans[:0]
}

// appendArgs appends the arguments of b, the request q has read whole, to args.
func (q *request) appendArgs(args [][]byte, b []byte) [][]byte {
	args = slices.Grow(args, len(q.spans)/2)
	for i := 0; i < len(q.spans); i += 2 {
		lo, hi := q.spans[i], q.spans[i+1]
		args = append(args, b[lo:hi:hi])
	}
	return args
}

// Limits of an unauthenticated client's requests, as Redis's.
const (
	maxUnauthedMultibulk = 10
	maxUnauthedBulk      = 16384
)

// keepArgs is the most arguments whose arrays a reader keeps between requests: a request of
// more makes its own, which goes back after it (Redis's argv starts at 1024 too).
const keepArgs = 1024

func NewReader(rd io.Reader, maxBulk int) *Reader {
	return &Reader{Src: rd, Buf: make([]byte, ReadChunk), MaxBulk: maxBulk}
}

func (r *Reader) isOpen() bool { return r.Open != nil && r.Open() }

// Buffered reports whether a whole next request (or a malformed one) is already read, so
// that the replies so far may wait for it. It parses ahead as far as the bytes go, work
// that Next does not repeat; the last request's arguments are invalid after it.
func (r *Reader) Buffered() bool {
	if !r.queued.empty() {
		return true
	}
	r.forgetQueued()
	if !r.ready {
		r.shrink()
	}
	for !r.ready && r.err == nil && r.End > r.Start {
		args, done, err := r.parse()
		switch {
		case err != nil:
			r.err = err
		case !done:
			return false
		case len(args) > 0:
			r.ready = true
		}
	}
	return r.ready || r.err != nil
}

// Next returns the next request's arguments, reading more from the
// connection when needed. The slices are valid until the next call of Next or Buffered.
func (r *Reader) Next() ([][]byte, error) {
	if r.ready {
		r.ready = false
		return r.args, nil
	}
	if r.err != nil {
		return nil, r.err
	}
	if !r.queued.empty() {
		return r.dequeue()
	}
	r.forgetQueued()
	if cap(r.args) > keepArgs {
		r.args = nil // the last request's were many; the next's make their own
	}
	r.shrink()
	for {
		if r.End > r.Start {
			args, done, err := r.parse()
			if err != nil {
				return nil, err
			}
			if done {
				if len(args) == 0 {
					continue // an empty line or *0: nothing to run
				}
				if r.read {
					r.read = false
					if r.Ahead != nil && r.End > r.Start {
						r.Ahead(args)
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

// shrink gives a buffer grown for a big request back for a small one once what it holds is
// small again, as Redis shrinks a client's querybuf: called when no argument points into it.
func (r *Reader) shrink() {
	if len(r.Buf) > KeepReadBuf && r.End-r.Start <= ReadChunk/2 {
		r.move(ReadChunk)
	}
}

// Release gives the read buffer back when it holds nothing, as Redis frees an idle
// client's querybuf, and reports whether it did; the next read makes a new one. The last
// request's arguments are invalid after it.
func (r *Reader) Release() bool {
	if r.End != r.Start || r.Buf == nil || r.ready || r.err != nil {
		return false
	}
	clear(r.args[:cap(r.args)]) // no stale argument keeps the buffer alive
	r.forgetQueued()
	r.Buf, r.Start, r.End, r.Last = nil, 0, 0, 0
	return true
}

// fill reads more bytes, making room first. The buffer grows only for a request that does
// not fit, to twice what it holds but never past what the argument being read still needs,
// so that a bulk announced big and sent small costs what was sent (Redis grows a big
// argument's buffer as its bytes arrive too).
func (r *Reader) fill() error {
	if len(r.Buf) == 0 { // released (Release)
		r.Buf = make([]byte, ReadChunk)
	}
	r.shrink()
	live := r.End - r.Start
	switch {
	case r.End < len(r.Buf):
	case live <= len(r.Buf)/2:
		r.move(len(r.Buf))
	default:
		size := 2 * live
		if q := &r.req; q.pos > 0 && q.bulk >= 0 {
			size = min(size, max(q.pos+q.bulk+2, len(r.Buf)))
		}
		r.move(size)
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

// move puts the unparsed bytes at the start of a buffer of size bytes: the same one when it
// is that size already.
func (r *Reader) move(size int) {
	buf := r.Buf
	if size != len(buf) {
		buf = make([]byte, size)
		clear(r.args[:cap(r.args)]) // no stale argument keeps the old buffer alive
	}
	r.End = copy(buf, r.Buf[r.Start:r.End])
	r.Start, r.Last, r.Buf = 0, 0, buf
}

// parse goes on parsing the request at Buf[Start:End] where the last read left it: done when
// it is whole, with its arguments, and Start moved past it.
func (r *Reader) parse() ([][]byte, bool, error) {
	r.Last = r.Start
	b := r.Buf[r.Start:r.End]
	q := &r.req
	if q.pos == 0 && q.seen == 0 {
		args, n := r.plain(b, r.args[:0])
		r.args = args
		if n > 0 {
			r.Start += n
			return args, true, nil
		}
		r.args = args[:0]
	}
	if q.pos == 0 && b[0] != '*' {
		args, n, err := r.parseInline(b)
		if err != nil || n == 0 {
			return nil, false, err
		}
		r.Start += n
		q.reset()
		return args, true, nil
	}
	done, err := r.multibulk(q, b)
	if err != nil || !done {
		return nil, false, err
	}
	r.args = q.appendArgs(r.args[:0], b)
	r.Start += q.pos
	q.reset()
	return r.args, true, nil
}

// ParseAhead parses the next request after those Next returned and those ParseAhead
// parsed before, when it is a whole RESP multibulk already read, and returns its
// arguments; false when there is none (an inline request, a part, a malformed one or
// nothing: left to Next). The request is queued: Next returns it without parsing it
// again. The arguments are valid until the next call of Next or Buffered; they are the
// queue's own, for reading only.
func (r *Reader) ParseAhead() ([][]byte, bool) {
	at := r.Start + r.queued.bytes
	if r.req.pos != 0 || r.ready || r.err != nil || at >= r.End || r.Buf[at] != '*' {
		return nil, false
	}
	b := r.Buf[at:r.End]
	k := &r.queued
	from := len(k.args)
	args, n := r.plain(b, k.args)
	if n == 0 {
		q := &r.ahead
		done, err := r.multibulk(q, b)
		if err != nil || !done || len(q.spans) == 0 {
			q.reset()
			k.args = args[:from]
			return nil, false // *0 and its kin too: Next skips them
		}
		args, n = q.appendArgs(args[:from], b), q.pos
		q.reset()
	}
	k.args = args
	k.reqs = append(k.reqs, n, len(args)-from)
	k.bytes += n
	return args[from:len(args):len(args)], true
}

// dequeue returns the next request ParseAhead parsed. A client that is not authenticated
// (any more: RESET) is held to its limits as if the request were parsed now.
func (r *Reader) dequeue() ([][]byte, error) {
	k := &r.queued
	n, nargs := k.reqs[k.head], k.reqs[k.head+1]
	end := k.arg + nargs
	args := k.args[k.arg:end:end] // its own capacity: an append does not reach the next's
	k.head += 2
	k.arg = end
	k.bytes -= n
	if k.empty() {
		// The arguments stay valid until the next call of Next: they are cleared then.
		k.reqs, k.head = k.reqs[:0], 0
	}
	r.Last = r.Start
	r.Start += n
	if r.Unauthed {
		if len(args) > maxUnauthedMultibulk && !r.isOpen() {
			return nil, ProtocolError("unauthenticated multibulk length")
		}
		for _, a := range args {
			if len(a) > maxUnauthedBulk && !r.isOpen() {
				return nil, ProtocolError("unauthenticated bulk length")
			}
		}
	}
	return args, nil
}

// forgetQueued empties the queue's arguments once the last request it held is done with
// them, so that none keeps an old buffer alive.
func (r *Reader) forgetQueued() {
	k := &r.queued
	if k.arg == 0 {
		return
	}
	if cap(k.args) > keepArgs {
		k.args = nil // a huge request's arguments go back
	} else {
		clear(k.args)
		k.args = k.args[:0]
	}
	k.arg = 0
}

// plain parses the multibulk request at the start of b in one go when it is whole and of
// the shape nearly every request has: at most 1024 arguments (keepArgs), most of them of
// at most 99 bytes, whose lengths of one or two digits are compared four bytes at once (a
// longer one is read digit by digit). It appends the arguments to args and returns them with the
// request's length in bytes; 0 for any other request, whole or not, and for one past the
// client's limits, which the general parse (multibulk) then reads, with its errors and with
// its progress kept across reads. It looks only at the length lines and at the CRLF after
// each argument, with its position in a register rather than in the request's state, and
// appends the arguments as it finds them instead of their offsets first.
func (r *Reader) plain(b []byte, args [][]byte) ([][]byte, int) {
	if r.MaxBulk < 99 {
		return args, 0
	}
	count, pos := shortLength(b, 0, '*')
	if pos == 0 {
		count, pos = longLength(b, '*')
	}
	if count == 0 || count > keepArgs || r.Unauthed && count > maxUnauthedMultibulk {
		return args, 0
	}
	rest := b[pos:] // the arguments not read yet: the loop moves its start, not a position
	n := len(args)
	args = slices.Grow(args, count)[:n+count]
	for i := n; i < len(args); i++ {
		// shortLength(rest, 0, '$'), written out: the call would cost what the rest does.
		if len(rest) < 5 {
			goto fail
		}
		u := binary.LittleEndian.Uint32(rest)
		d := byte(u>>8) - '0'
		at, size := 4, int(d)
		if u&0xffff00ff != '$'|'\r'<<16|'\n'<<24 || d > 9 {
			e := byte(u>>16) - '0'
			if u&0xff0000ff == '$'|'\r'<<24 && d-1 < 9 && e <= 9 && rest[4] == '\n' {
				at, size = 5, int(d)*10+int(e)
			} else if size, at = longLength(rest, '$'); at == 0 || size > r.MaxBulk || r.Unauthed && size > maxUnauthedBulk {
				goto fail
			}
		}
		end := at + size
		if end+1 >= len(rest) || rest[end] != '\r' || rest[end+1] != '\n' {
			goto fail
		}
		args[i] = rest[at:end:end]
		rest = rest[end+2:]
	}
	pos = len(b) - len(rest)
	r.scanned += int64(pos)
	return args, pos
fail:
	r.scanned += int64(len(b) - len(rest))
	return args[:n], 0
}

// longLength reads a count ('*') or length ('$') line of up to 17 digits at the start of b
// (a value of a hundred bytes or more, a hundred arguments or more): the number and the
// position after the line's CRLF; 0, 0 for any other line, or one not all read yet.
func longLength(b []byte, kind byte) (int, int) {
	if len(b) < 2 || b[0] != kind || b[1] < '1' || b[1] > '9' {
		return 0, 0
	}
	n := 0
	for i := 1; i < len(b) && i <= 17; i++ {
		switch c := b[i]; {
		case c == '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				return n, i + 2
			}
			return 0, 0
		case c < '0' || c > '9':
			return 0, 0
		default:
			n = n*10 + int(c-'0')
		}
	}
	return 0, 0
}

// shortLength reads the line at b[at:] that gives a count ('*') or a length ('$') of one
// or two digits: the number and the position after the line's CRLF; 0, 0 for any other
// line, or for one whose next byte is not read yet (a line of the kind is never a
// request's last). Its first four bytes are compared at once.
func shortLength(b []byte, at int, kind byte) (int, int) {
	if at+5 > len(b) {
		return 0, 0
	}
	u := binary.LittleEndian.Uint32(b[at:])
	d, e := byte(u>>8)-'0', byte(u>>16)-'0'
	if u&0xffff00ff == uint32(kind)|'\r'<<16|'\n'<<24 && d <= 9 {
		return int(d), at + 4
	}
	if u&0xff0000ff == uint32(kind)|'\r'<<24 && d-1 < 9 && e <= 9 && b[at+4] == '\n' {
		return int(d)*10 + int(e), at + 5
	}
	return 0, 0
}

// multibulk goes on parsing the multibulk request b, from its '*', where q says the last
// call left it: done once it is whole. Every length is checked as soon as its line is read.
func (r *Reader) multibulk(q *request, b []byte) (bool, error) {
	if q.pos == 0 {
		count, ok, next := r.length(q, b, 1)
		if next < 0 {
			if len(b) > MaxInline {
				return false, ProtocolError("too big mbulk count string")
			}
			return false, nil
		}
		if !ok || count > MaxMultibulk {
			return false, ProtocolError("invalid multibulk length")
		}
		if r.Unauthed && count > maxUnauthedMultibulk && !r.isOpen() {
			return false, ProtocolError("unauthenticated multibulk length")
		}
		q.pos, q.left, q.bulk = next, int(max(count, 0)), -1 // *-1 (or any count below 1) is no request
	}
	for q.left > 0 {
		if q.bulk < 0 {
			if q.pos >= len(b) {
				return false, nil
			}
			if b[q.pos] != '$' {
				return false, ProtocolError("expected '$', got '" + string(b[q.pos:q.pos+1]) + "'")
			}
			size, ok, next := r.length(q, b, q.pos+1)
			if next < 0 {
				if len(b)-q.pos > MaxInline {
					return false, ProtocolError("too big bulk count string")
				}
				return false, nil
			}
			if !ok || size < 0 || size > int64(r.MaxBulk) {
				return false, ProtocolError("invalid bulk length")
			}
			if r.Unauthed && size > maxUnauthedBulk && !r.isOpen() {
				return false, ProtocolError("unauthenticated bulk length")
			}
			q.pos, q.bulk = next, int(size)
		}
		end := q.pos + q.bulk
		if end+2 > len(b) {
			return false, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return false, ProtocolError("invalid bulk length")
		}
		r.scanned += int64(q.bulk + 2)
		if len(q.spans) == cap(q.spans) {
			q.spans = slices.Grow(q.spans, max(len(q.spans), 16)) // doubling: append's 1.25 would copy a million arguments' offsets often
		}
		q.spans = append(q.spans, q.pos, end)
		q.pos, q.bulk = end+2, -1
		q.left--
	}
	return true, nil
}

// length reads the line of a length starting at b[from]: its number, whether it is one
// (parseLength), and the position after it, or -1 while it is incomplete. A length of one
// or two digits before CRLF, the most of them, is read without searching for the line's
// end.
func (r *Reader) length(q *request, b []byte, from int) (int64, bool, int) {
	if q.seen == 0 && from+3 < len(b) {
		if d := b[from] - '0'; d <= 9 {
			switch e := b[from+1] - '0'; {
			case b[from+1] == '\r' && b[from+2] == '\n':
				r.scanned += 3
				return int64(d), true, from + 3
			case d != 0 && e <= 9 && b[from+2] == '\r' && b[from+3] == '\n':
				r.scanned += 4
				return int64(d)*10 + int64(e), true, from + 4
			}
		}
	}
	line, next := r.line(q, b, from)
	if next < 0 {
		return 0, false, -1
	}
	n, ok := parseLength(line)
	return n, ok, next
}

// line returns the line starting at b[from] without its CRLF, and the position after it, or
// -1 while it is incomplete. q.seen keeps how far an incomplete line was searched, so that
// a line arriving a byte a read is searched once.
func (r *Reader) line(q *request, b []byte, from int) ([]byte, int) {
	i := bytes.IndexByte(b[from+q.seen:], '\n')
	if i < 0 {
		r.scanned += int64(len(b) - from - q.seen)
		q.seen = len(b) - from
		return nil, -1
	}
	r.scanned += int64(i + 1)
	i += from + q.seen
	q.seen = 0
	line := b[from:i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, i + 1
}

// parseLength parses a multibulk or bulk length as Redis's string2ll does: an optional '-'
// and digits, with no leading zero and no '+', that fit an int64.
func parseLength(b []byte) (int64, bool) {
	neg := len(b) > 1 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || b[0] == '0' && (len(b) > 1 || neg) {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' || n > (math.MaxInt64-int64(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// parseInline reads a telnet-style request: words separated by blanks,
// with "double" (C escapes) and 'single' quotes, as redis-cli users type.
func (r *Reader) parseInline(b []byte) ([][]byte, int, error) {
	line, n := r.line(&r.req, b, 0)
	if n < 0 {
		if len(b) > MaxInline {
			return nil, 0, ProtocolError("too big inline request")
		}
		return nil, 0, nil
	}
	args, err := r.SplitInline(line)
	if err != nil {
		return nil, 0, err
	}
	return args, n, nil
}

var errUnbalancedQuotes = ProtocolError("unbalanced quotes in request")

// SplitInline splits an inline request (or a config file's line) into words as Redis
// does: blanks separate words, "double quotes" take C escapes (\n, \x41), 'single quotes'
// take \'. The words are slices of line or of the reader's own buffer.
func (r *Reader) SplitInline(line []byte) ([][]byte, error) {
	args := r.args[:0]
	r.inline = r.inline[:0]
	// Offsets into r.inline, turned into slices once it stops growing.
	marks := r.marks[:0]
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
	r.marks = marks
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
