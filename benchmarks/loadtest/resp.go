package loadtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ErrProtocol is a reply that is not well-formed RESP2.
var ErrProtocol = errors.New("loadtest: malformed reply")

// ServerError is an error reply, such as "NOSCRIPT No matching script".
type ServerError struct{ Msg string }

func (e *ServerError) Error() string { return e.Msg }

// Encode returns args as one RESP array of bulk strings, ready to write.
func Encode(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// Reader parses RESP2 replies.
type Reader struct{ br *bufio.Reader }

// NewReader returns a Reader on r.
func NewReader(r io.Reader) *Reader { return &Reader{br: bufio.NewReaderSize(r, 64<<10)} }

// line returns one line without its CRLF; the slice is valid until the next read.
func (r *Reader) line() ([]byte, error) {
	l, err := r.br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return nil, ErrProtocol
	}
	return l[:len(l)-2], nil
}

// parseInt parses a decimal integer without allocating.
func parseInt(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, ErrProtocol
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, ErrProtocol
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, nil
}

// Next reads one reply and returns its leading integer: the integer itself, or the first element
// of an array when that is an integer (the "limited" of a rate-limit decision); -1 for anything
// else. An error reply comes back as a *ServerError, after the whole reply has been consumed.
func (r *Reader) Next() (int64, error) {
	l, err := r.line()
	if err != nil {
		return 0, err
	}
	switch l[0] {
	case '+':
		return -1, nil
	case '-':
		return 0, &ServerError{Msg: string(l[1:])}
	case ':':
		return parseInt(l[1:])
	case '$':
		n, err := parseInt(l[1:])
		if err != nil || n < 0 {
			return -1, err
		}
		_, err = r.br.Discard(int(n) + 2)
		return -1, err
	case '*':
		n, err := parseInt(l[1:])
		if err != nil {
			return 0, err
		}
		first := int64(-1)
		var replyErr error
		for i := int64(0); i < n; i++ {
			v, err := r.Next()
			var se *ServerError
			switch {
			case errors.As(err, &se):
				replyErr = err
			case err != nil:
				return 0, err
			}
			if i == 0 {
				first = v
			}
		}
		return first, replyErr
	}
	return 0, fmt.Errorf("%w: type byte %q", ErrProtocol, l[0])
}

// Value reads one reply whole: an int64, a string, nil, or a []any of those. An error reply
// comes back as a *ServerError. It allocates; it is for checks, not for load.
func (r *Reader) Value() (any, error) {
	l, err := r.line()
	if err != nil {
		return nil, err
	}
	switch l[0] {
	case '+':
		return string(l[1:]), nil
	case '-':
		return nil, &ServerError{Msg: string(l[1:])}
	case ':':
		return parseInt(l[1:])
	case '$':
		n, err := parseInt(l[1:])
		if err != nil || n < 0 {
			return nil, err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r.br, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := parseInt(l[1:])
		if err != nil || n < 0 {
			return nil, err
		}
		vs := make([]any, n)
		for i := range vs {
			if vs[i], err = r.Value(); err != nil {
				return nil, err
			}
		}
		return vs, nil
	}
	return nil, fmt.Errorf("%w: type byte %q", ErrProtocol, l[0])
}

// Scan reads one reply from the start of b without copying: the bytes it takes, and its
// leading integer as Next returns it; n is 0 while b holds only part of the reply. An error
// reply comes back as a *ServerError with its length.
func Scan(b []byte) (n int, first int64, err error) {
	end := bytes.Index(b, crlf)
	if end < 0 {
		return 0, 0, nil
	}
	if end == 0 {
		return 0, 0, ErrProtocol
	}
	l, n := b[1:end], end+2
	switch b[0] {
	case '+':
		return n, -1, nil
	case '-':
		return n, 0, &ServerError{Msg: string(l)}
	case ':':
		v, err := parseInt(l)
		return n, v, err
	case '$':
		size, err := parseInt(l)
		if err != nil || size < 0 {
			return n, -1, err
		}
		if len(b) < n+int(size)+2 {
			return 0, 0, nil
		}
		return n + int(size) + 2, -1, nil
	case '*':
		count, err := parseInt(l)
		if err != nil {
			return 0, 0, err
		}
		first = -1
		var replyErr error
		for i := int64(0); i < count; i++ {
			m, v, err := Scan(b[n:])
			var se *ServerError
			switch {
			case errors.As(err, &se):
				replyErr = err
			case err != nil:
				return 0, 0, err
			}
			if m == 0 {
				return 0, 0, nil
			}
			if i == 0 {
				first = v
			}
			n += m
		}
		return n, first, replyErr
	}
	return 0, 0, fmt.Errorf("%w: type byte %q", ErrProtocol, b[0])
}

var crlf = []byte("\r\n")
