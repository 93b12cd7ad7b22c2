package resp

import (
	"math"
	"strconv"

	"github.com/tidwall/redcon"
)

// Writer builds replies in RESP2 or RESP3 with redcon's encoders. Its methods append to B.
type Writer struct {
	B     []byte // the replies written, not yet sent
	Proto int    // 2 or 3
}

func (w *Writer) OK()                 { w.B = redcon.AppendOK(w.B) }
func (w *Writer) Simple(s string)     { w.B = redcon.AppendString(w.B, s) }
func (w *Writer) ErrorText(s string)  { w.B = redcon.AppendError(w.B, s) }
func (w *Writer) Int(n int64)         { w.B = redcon.AppendInt(w.B, n) }
func (w *Writer) Bulk(b []byte)       { w.B = redcon.AppendBulk(w.B, b) }
func (w *Writer) BulkString(s string) { w.B = redcon.AppendBulkString(w.B, s) }
func (w *Writer) Array(n int)         { w.B = redcon.AppendArray(w.B, n) }
func (w *Writer) BulkInt(n int64) {
	w.B = redcon.AppendBulk(w.B, strconv.AppendInt(w.scratch(), n, 10))
}
func (w *Writer) scratch() []byte { var s [24]byte; return s[:0] }
func (w *Writer) StringArray(s []string) {
	w.Array(len(s))
	for _, v := range s {
		w.BulkString(v)
	}
}

// null is a missing value: $-1 in RESP2, _ in RESP3.
func (w *Writer) Null() {
	if w.Proto == 3 {
		w.B = append(w.B, "_\r\n"...)
		return
	}
	w.B = redcon.AppendNull(w.B)
}

// nullArray is a missing array: *-1 in RESP2, _ in RESP3.
func (w *Writer) NullArray() {
	if w.Proto == 3 {
		w.B = append(w.B, "_\r\n"...)
		return
	}
	w.B = append(w.B, "*-1\r\n"...)
}

// push starts an out-of-band message of n elements: a push in RESP3, an array in RESP2.
func (w *Writer) Push(n int) {
	if w.Proto == 3 {
		w.B = append(w.B, '>')
		w.B = strconv.AppendInt(w.B, int64(n), 10)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.Array(n)
}

// mapHeader starts n key-value pairs: a map in RESP3, a flat array in RESP2.
func (w *Writer) Map(n int) {
	if w.Proto == 3 {
		w.B = append(w.B, '%')
		w.B = strconv.AppendInt(w.B, int64(n), 10)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.Array(2 * n)
}

// setHeader starts a set of n members: a set in RESP3, an array in RESP2.
func (w *Writer) SetHeader(n int) {
	if w.Proto == 3 {
		w.B = append(w.B, '~')
		w.B = strconv.AppendInt(w.B, int64(n), 10)
		w.B = append(w.B, '\r', '\n')
		return
	}
	w.Array(n)
}

// verbatim is a long text such as INFO's: a verbatim string in RESP3, a bulk string in RESP2.
func (w *Writer) Verbatim(s string) {
	if w.Proto != 3 {
		w.BulkString(s)
		return
	}
	w.B = append(w.B, '=')
	w.B = strconv.AppendInt(w.B, int64(len(s)+4), 10)
	w.B = append(w.B, "\r\ntxt:"...)
	w.B = append(w.B, s...)
	w.B = append(w.B, '\r', '\n')
}

// Double writes f as Redis 7.0 replies a double: a bulk string of %.17g in RESP2 ("inf",
// "-inf" for the infinities), a double in RESP3.
func (w *Writer) Double(f float64) {
	if w.Proto == 3 {
		w.B = append(w.B, ',')
		w.B = appendDouble(w.B, f)
		w.B = append(w.B, '\r', '\n')
		return
	}
	var buf [32]byte
	w.Bulk(appendDouble(buf[:0], f))
}

// appendDouble appends f as %.17g, and "inf" and "-inf" for the infinities.
func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

// AppendRepr appends a quoted, escaped argument as Redis's sdscatrepr writes it.
func AppendRepr(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 0x20 && ch < 0x7f {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&0xf])
			}
		}
	}
	return append(b, '"')
}
