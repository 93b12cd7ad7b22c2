package scripting

import (
	"bytes"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// The two directions of the conversion between RESP and Lua, as Redis 7.0's script_lua.c
// does them. A command's reply (RESP2, or RESP3 after redis.setresp(3)) becomes a Lua value:
//
//	integer        number
//	bulk string    string            null bulk or null array: false
//	array          table (1..n)      a RESP3 null inside: a hole
//	status         {ok=text}         error: {err=text} (raised by redis.call)
//	RESP3 map      {map={k=v...}}    set: {set={member=true...}}
//	RESP3 null     nil               boolean: boolean
//	RESP3 double   {double=n}        big number: {big_number=text}
//	verbatim       {verbatim_string={format=..., string=...}}
//
// and the script's return value becomes the reply to EVAL, in the caller's protocol:
//
//	string         bulk string       number: integer (truncated)
//	true           1, or RESP3 true after redis.setresp(3)
//	false, nil     null (false is RESP3 false after redis.setresp(3))
//	table          {err=s}: error, {ok=s}: status, {double=n}, {big_number=s},
//	               {verbatim_string=...}, {map=t}, {set=t}; otherwise an array of t[1],
//	               t[2]... up to the first nil.

// Reply builders, in the caller's protocol (proto 2 or 3).

func appendInt(dst []byte, n int64) []byte {
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\r', '\n')
}

func appendHeader(dst []byte, kind byte, n int) []byte {
	dst = append(dst, kind)
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

func appendBulk(dst []byte, s string) []byte {
	dst = appendHeader(dst, '$', len(s))
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

func appendNull(dst []byte, proto int) []byte {
	if proto == 3 {
		return append(dst, "_\r\n"...)
	}
	return append(dst, "$-1\r\n"...)
}

func appendBool(dst []byte, b bool, proto int) []byte {
	switch {
	case proto != 3 && b:
		return append(dst, ":1\r\n"...)
	case proto != 3:
		return append(dst, ":0\r\n"...)
	case b:
		return append(dst, "#t\r\n"...)
	}
	return append(dst, "#f\r\n"...)
}

// appendDouble is addReplyDouble: "%.17g", a bulk string in RESP2.
func appendDouble(dst []byte, f float64, proto int) []byte {
	var b [32]byte
	num := appendG(b[:0], f, 17)
	if proto == 3 {
		dst = append(dst, ',')
		dst = append(dst, num...)
		return append(dst, '\r', '\n')
	}
	return appendBulk(dst, string(num))
}

// appendLine appends a status or error line: the first byte, then s with CR and LF made
// blanks, as Redis does so that the protocol stays intact.
func appendLine(dst []byte, first byte, s string) []byte {
	dst = append(dst, first)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		dst = append(dst, c)
	}
	return append(dst, '\r', '\n')
}

// appendErrorText appends an error reply as Redis writes "-%s" of msg: CR and LF trimmed
// from the end and blanked inside; msg carries its own code.
func appendErrorText(dst []byte, msg string) []byte {
	for len(msg) > 0 && (msg[len(msg)-1] == '\r' || msg[len(msg)-1] == '\n') {
		msg = msg[:len(msg)-1]
	}
	return appendLine(dst, '-', msg)
}

// trimCRLF drops CR and LF from both ends of s, as sdstrim(s, "\r\n").
func trimCRLF(s string) string {
	for len(s) > 0 && (s[0] == '\r' || s[0] == '\n') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == '\r' || s[len(s)-1] == '\n') {
		s = s[:len(s)-1]
	}
	return s
}

// cString is s up to its first NUL: what Redis reads of a Lua string it takes as a C string.
func cString(s string) string {
	if i := indexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// maxReplyStack is LUAI_MAXCSTACK: the Lua stack slots Redis may use while it converts a
// reply; a table nested deeper (one that holds itself) ends in "reached lua stack limit".
const maxReplyStack = 8000

// appendLuaReply appends v as the reply to EVAL, in proto, with the script's redis.setresp
// version resp deciding how booleans go. used counts the Lua stack slots Redis's recursive
// conversion would hold at this depth, to stop where Redis stops.
func (st *state) appendLuaReply(dst []byte, v lua.LValue, proto, resp, used int) []byte {
	if used+4 > maxReplyStack {
		return append(dst, "-ERR reached lua stack limit\r\n"...)
	}
	switch v := v.(type) {
	case lua.LString:
		return appendBulk(dst, string(v))
	case lua.LBool:
		if resp == 2 {
			if v {
				return append(dst, ":1\r\n"...)
			}
			return appendNull(dst, proto)
		}
		return appendBool(dst, bool(v), proto)
	case lua.LNumber:
		return appendInt(dst, toInteger(float64(v)))
	case *lua.LTable:
		return st.appendTableReply(dst, v, proto, resp, used)
	}
	return appendNull(dst, proto)
}

func (st *state) appendTableReply(dst []byte, t *lua.LTable, proto, resp, used int) []byte {
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		return appendErrorText(dst, cString(string(s)))
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		return appendLine(dst, '+', cString(string(s)))
	}
	if n, ok := t.RawGetString("double").(lua.LNumber); ok {
		return appendDouble(dst, float64(n), proto)
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		if proto == 3 {
			return appendLine(dst, '(', string(s))
		}
		return appendBulk(dst, string(s))
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		format, fok := vt.RawGetString("format").(lua.LString)
		str, sok := vt.RawGetString("string").(lua.LString)
		if fok && sok {
			if proto != 3 {
				return appendBulk(dst, string(str))
			}
			f := cString(string(format)) + "   "
			dst = appendHeader(dst, '=', len(str)+4)
			dst = append(dst, f[:3]...)
			dst = append(dst, ':')
			dst = append(dst, str...)
			return append(dst, '\r', '\n')
		}
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		mark := len(dst)
		dst = append(dst, reserveHeader...)
		n := 0
		for k, val := m.Next(lua.LNil); k != lua.LNil; k, val = m.Next(k) {
			dst = st.appendLuaReply(dst, k, proto, resp, used+4)
			dst = st.appendLuaReply(dst, val, proto, resp, used+3)
			n++
		}
		if proto == 3 {
			return fillHeader(dst, mark, '%', n)
		}
		return fillHeader(dst, mark, '*', 2*n)
	}
	if set, ok := t.RawGetString("set").(*lua.LTable); ok {
		mark := len(dst)
		dst = append(dst, reserveHeader...)
		n := 0
		for k, _ := set.Next(lua.LNil); k != lua.LNil; k, _ = set.Next(k) {
			dst = st.appendLuaReply(dst, k, proto, resp, used+3)
			n++
		}
		if proto == 3 {
			return fillHeader(dst, mark, '~', n)
		}
		return fillHeader(dst, mark, '*', n)
	}
	n := 0
	for t.RawGetInt(n+1) != lua.LNil {
		n++
	}
	dst = appendHeader(dst, '*', n)
	for i := 1; i <= n; i++ {
		dst = st.appendLuaReply(dst, t.RawGetInt(i), proto, resp, used+1)
	}
	return dst
}

// reserveHeader holds the place of a header whose count is known only after its elements
// are written (a map's pairs: Lua cannot count them first without a second walk).
var reserveHeader = []byte("*0000000000\r\n")

// fillHeader writes the header reserved at mark and closes the gap.
func fillHeader(dst []byte, mark int, kind byte, n int) []byte {
	var h [24]byte
	head := appendHeader(h[:0], kind, n)
	gap := len(reserveHeader) - len(head)
	copy(dst[mark:], head)
	copy(dst[mark+len(head):], dst[mark+len(reserveHeader):])
	return dst[:len(dst)-gap]
}

// pushReply parses one reply from b and pushes its Lua value; it returns the bytes read,
// and whether the reply is an error (the table redis.call raises). A reply that does not
// parse (it cannot happen: the server wrote it) pushes false.
func (st *state) pushReply(L *lua.LState, b []byte) (n int, isErr bool) {
	v, n := st.parseReply(b)
	L.Push(v)
	return n, len(b) > 0 && b[0] == '-'
}

// parseReply reads one reply from b and returns its Lua value and its length.
func (st *state) parseReply(b []byte) (lua.LValue, int) {
	if len(b) < 3 {
		return lua.LFalse, len(b)
	}
	end := bytes.Index(b, crlf)
	if end < 0 {
		return lua.LFalse, len(b)
	}
	line := b[1:end]
	next := end + 2
	switch b[0] {
	case '+':
		return st.statusTable(st.box.bytesStr(line)), next
	case '-':
		return errorTable(st.L, string(line)), next
	case ':':
		n, _ := strconv.ParseInt(string(line), 10, 64)
		return st.box.number(float64(n)), next
	case '$', '=':
		size, err := strconv.Atoi(string(line))
		if err != nil || size < 0 {
			return lua.LFalse, next
		}
		if next+size+2 > len(b) {
			return lua.LFalse, len(b)
		}
		body := b[next : next+size]
		if b[0] == '=' && size >= 4 {
			vt := st.L.CreateTable(0, 2)
			vt.RawSetString("string", lua.LString(body[4:]))
			vt.RawSetString("format", lua.LString(body[:3]))
			t := st.L.CreateTable(0, 1)
			t.RawSetString("verbatim_string", vt)
			return t, next + size + 2
		}
		return st.box.bytesStr(body), next + size + 2
	case '*', '~', '%', '>', '|':
		count, err := strconv.Atoi(string(line))
		if err != nil || count < 0 {
			return lua.LFalse, next
		}
		switch b[0] {
		case '%':
			m := st.L.CreateTable(0, count)
			for i := 0; i < count; i++ {
				k, kn := st.parseReply(b[next:])
				next += kn
				v, vn := st.parseReply(b[next:])
				next += vn
				if k != lua.LNil {
					m.RawSet(k, v)
				}
			}
			t := st.L.CreateTable(0, 1)
			t.RawSetString("map", m)
			return t, next
		case '~':
			set := st.L.CreateTable(0, count)
			for i := 0; i < count; i++ {
				k, kn := st.parseReply(b[next:])
				next += kn
				if k != lua.LNil {
					set.RawSet(k, lua.LTrue)
				}
			}
			t := st.L.CreateTable(0, 1)
			t.RawSetString("set", set)
			return t, next
		case '|': // attributes: skipped, the reply follows
			for i := 0; i < 2*count; i++ {
				_, n := st.parseReply(b[next:])
				next += n
			}
			v, n := st.parseReply(b[next:])
			return v, next + n
		}
		t := st.arrayTable(count)
		for i := 1; i <= count; i++ {
			v, n := st.parseReply(b[next:])
			next += n
			if v != lua.LNil {
				t.RawSetInt(i, v)
			}
		}
		return t, next
	case '_':
		return lua.LNil, next
	case '#':
		return lua.LBool(len(line) > 0 && line[0] == 't'), next
	case ',':
		f, _ := strtod(string(line))
		t := st.L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(f))
		return t, next
	case '(':
		t := st.L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(line))
		return t, next
	}
	return lua.LFalse, next
}

var crlf = []byte("\r\n")

// Status reply tables, and those of short arrays, are recycled from run to run: {ok=...}
// costs gopher-lua a table, two maps and a slice, which would be most of what a SET in a
// script allocates, and TIME's or HMGET's array a table and a slice.
// A table handed out in a run is only taken back once the run is over, when nothing can
// reach it any more (the state's own tables are checked for what a script left in them),
// and only if it is still as it was given; within a run each reply has a table of its own.

// statusTable returns {ok=s}.
func (st *state) statusTable(s lua.LValue) *lua.LTable {
	var t *lua.LTable
	if n := len(st.okFree); n > 0 {
		t = st.okFree[n-1]
		st.okFree = st.okFree[:n-1]
	} else {
		t = st.L.CreateTable(0, 1)
	}
	t.RawSetString("ok", s)
	st.okUsed = append(st.okUsed, t)
	return t
}

// arrayTable returns an empty table for an array reply of n items.
func (st *state) arrayTable(n int) *lua.LTable {
	if n > maxPooledArray {
		return st.L.CreateTable(n, 0)
	}
	var t *lua.LTable
	if k := len(st.arrFree); k > 0 {
		t = st.arrFree[k-1]
		st.arrFree = st.arrFree[:k-1]
	} else {
		t = st.L.CreateTable(maxPooledArray, 0)
	}
	st.arrUsed = append(st.arrUsed, t)
	return t
}

// maxPooledArray is the most items an array reply's table may have to be recycled.
const maxPooledArray = 8

// recycle takes back the status and array tables of the run that ended, those still as
// they were: no metatable, nothing but their array (what the script set in it is
// cleared: nothing in the next run can tell the table was used before).
func (st *state) recycle() {
	for _, t := range st.arrUsed {
		if n := t.Len(); n <= maxPooledArray && st.untouched(t) && len(st.arrFree) < maxPooledTables {
			for i := 1; i <= n; i++ {
				t.RawSetInt(i, lua.LNil)
			}
			st.arrFree = append(st.arrFree, t)
		}
	}
	clear(st.arrUsed)
	st.arrUsed = st.arrUsed[:0]
	for _, t := range st.okUsed {
		if t.Metatable == lua.LNil {
			if k, _ := t.Next(lua.LNil); k == lua.LString("ok") {
				if k2, _ := t.Next(k); k2 == lua.LNil && len(st.okFree) < maxPooledTables {
					st.okFree = append(st.okFree, t)
				}
			}
		}
	}
	clear(st.okUsed)
	st.okUsed = st.okUsed[:0]
}

// maxPooledTables bounds each free list.
const maxPooledTables = 64

// errorTable is the table an error reply becomes, {err="CODE message"}: a text without a
// code (no blank) gets ERR, as luaPushErrorBuff does.
func errorTable(L *lua.LState, text string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(errorCode(text)))
	return t
}

// errorCode gives text (an error without its '-') a code when it has none, and trims CR
// and LF from the message.
func errorCode(text string) string {
	if i := indexByte(text, ' '); i >= 0 {
		return text[:i] + " " + trimCRLF(text[i+1:])
	}
	return "ERR " + trimCRLF(text)
}
