package scripting

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The cjson library as Redis 7.0 ships it (lua-cjson 2.1.0): cjson.encode writes numbers as
// "%.14g", escapes '/' and control characters, encodes a table as an array when its keys
// are 1..n (a sparse one as an error past its ratio), as an object otherwise; cjson.decode
// reads JSON into tables, null as cjson.null, numbers with strtod (so hexadecimal, inf and
// nan pass, as they do there), with the same error texts. An object's keys come in the
// order the Lua table gives them, which is gopher-lua's and not C Lua's: a JSON object of
// several keys may list them in another order than Redis would.

// cjsonConfig is the library's configuration, which its functions change for the
// interpreter, as lua-cjson's do for its Lua state.
type cjsonConfig struct {
	sparseConvert        bool
	sparseRatio          int
	sparseSafe           int
	encodeMaxDepth       int
	decodeMaxDepth       int
	precision            int
	encodeInvalidNumbers bool // false: NaN and Inf are an error
	decodeInvalidNumbers bool // true: hexadecimal, inf, nan are read
	keepBuffer           bool
}

func defaultCJSON() cjsonConfig {
	return cjsonConfig{sparseRatio: 2, sparseSafe: 10, encodeMaxDepth: 1000, decodeMaxDepth: 1000, precision: 14,
		decodeInvalidNumbers: true, keepBuffer: true}
}

// cjsonNull is cjson.null: lightuserdata NULL in C, one userdata here.
func (st *state) openCJSON() *lua.LTable {
	L := st.L
	st.cjson = defaultCJSON()
	st.jsonNull = L.NewUserData()
	t := L.CreateTable(0, 16)
	fn := func(name string, f lua.LGFunction) { t.RawSetString(name, L.NewFunction(f)) }
	fn("encode", st.jsonEncode)
	fn("decode", st.jsonDecode)
	fn("new", func(L *lua.LState) int { L.Push(st.g.RawGetString("cjson")); return 1 })
	fn("encode_sparse_array", st.jsonSparse)
	fn("encode_max_depth", st.jsonIntOption(&st.cjson.encodeMaxDepth, 1, math.MaxInt32, "expected integer between 1 and 2147483647"))
	fn("decode_max_depth", st.jsonIntOption(&st.cjson.decodeMaxDepth, 1, math.MaxInt32, "expected integer between 1 and 2147483647"))
	fn("encode_number_precision", st.jsonIntOption(&st.cjson.precision, 1, 14, "expected integer between 1 and 14"))
	fn("encode_keep_buffer", st.jsonBoolOption(&st.cjson.keepBuffer))
	fn("encode_invalid_numbers", st.jsonBoolOption(&st.cjson.encodeInvalidNumbers))
	fn("decode_invalid_numbers", st.jsonBoolOption(&st.cjson.decodeInvalidNumbers))
	t.RawSetString("null", st.jsonNull)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

func (st *state) jsonIntOption(v *int, lo, hi int, msg string) lua.LGFunction {
	return func(L *lua.LState) int {
		if L.GetTop() > 1 {
			L.RaiseError("bad argument #2 to '?' (found too many arguments)")
		}
		if L.GetTop() == 1 {
			n := checkInt(L, 1)
			if n < lo || n > hi {
				L.ArgError(1, msg)
			}
			*v = n
		}
		L.Push(lua.LNumber(*v))
		return 1
	}
}

func (st *state) jsonBoolOption(v *bool) lua.LGFunction {
	return func(L *lua.LState) int {
		if L.GetTop() > 1 {
			L.RaiseError("bad argument #2 to '?' (found too many arguments)")
		}
		if L.GetTop() == 1 {
			switch a := L.Get(1).(type) {
			case lua.LBool:
				*v = bool(a)
			case lua.LString:
				switch string(a) {
				case "on":
					*v = true
				case "off":
					*v = false
				default:
					L.ArgError(1, "invalid option '"+string(a)+"'")
				}
			default:
				L.TypeError(1, lua.LTBool)
			}
		}
		L.Push(lua.LBool(*v))
		return 1
	}
}

func (st *state) jsonSparse(L *lua.LState) int {
	c := &st.cjson
	if L.GetTop() >= 1 {
		c.sparseConvert = lua.LVAsBool(L.Get(1))
	}
	if L.GetTop() >= 2 {
		c.sparseRatio = checkInt(L, 2)
	}
	if L.GetTop() >= 3 {
		c.sparseSafe = checkInt(L, 3)
	}
	L.Push(lua.LBool(c.sparseConvert))
	L.Push(lua.LNumber(c.sparseRatio))
	L.Push(lua.LNumber(c.sparseSafe))
	return 3
}

// jsonEncode is cjson.encode(value).
func (st *state) jsonEncode(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.ArgError(1, "expected 1 argument")
	}
	b := st.jsonAppend(L, nil, L.Get(1), 0)
	L.Push(lua.LString(b))
	return 1
}

func (st *state) jsonAppend(L *lua.LState, b []byte, v lua.LValue, depth int) []byte {
	switch v := v.(type) {
	case lua.LString:
		return appendJSONString(b, string(v))
	case lua.LNumber:
		return st.jsonNumber(L, b, float64(v))
	case lua.LBool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case *lua.LNilType:
		return append(b, "null"...)
	case *lua.LTable:
		depth++
		if depth > st.cjson.encodeMaxDepth {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		if n := st.jsonArrayLen(L, v); n > 0 {
			b = append(b, '[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b = append(b, ',')
				}
				b = st.jsonAppend(L, b, v.RawGetInt(i), depth)
			}
			return append(b, ']')
		}
		b = append(b, '{')
		first := true
		for k, val := v.Next(lua.LNil); k != lua.LNil; k, val = v.Next(k) {
			if !first {
				b = append(b, ',')
			}
			first = false
			switch k := k.(type) {
			case lua.LNumber:
				b = append(b, '"')
				b = st.jsonNumber(L, b, float64(k))
				b = append(b, '"', ':')
			case lua.LString:
				b = appendJSONString(b, string(k))
				b = append(b, ':')
			default:
				L.RaiseError("Cannot serialise %s: table key must be a number or string", k.Type().String())
			}
			b = st.jsonAppend(L, b, val, depth)
			if len(b) > maxString {
				L.RaiseError("not enough memory")
			}
		}
		return append(b, '}')
	case *lua.LUserData:
		if v == st.jsonNull {
			return append(b, "null"...)
		}
	}
	if v == lua.LNil {
		return append(b, "null"...)
	}
	L.RaiseError("Cannot serialise %s: type not supported", v.Type().String())
	return b
}

func (st *state) jsonNumber(L *lua.LState, b []byte, f float64) []byte {
	if !st.cjson.encodeInvalidNumbers && (math.IsInf(f, 0) || math.IsNaN(f)) {
		L.RaiseError("Cannot serialise number: must not be NaN or Inf")
	}
	return appendG(b, f, st.cjson.precision)
}

// jsonArrayLen is lua_array_length: the array's length when the keys are integers from 1
// (holes allowed within the sparse ratio), -1 for an object, 0 for an empty table.
func (st *state) jsonArrayLen(L *lua.LState, t *lua.LTable) int {
	max, items := 0, 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || f == 0 || math.Floor(f) != f || f < 1 {
			return -1
		}
		if f > float64(max) {
			max = int(f)
		}
		items++
	}
	c := &st.cjson
	if c.sparseRatio > 0 && max > items*c.sparseRatio && max > c.sparseSafe {
		if !c.sparseConvert {
			L.RaiseError("Cannot serialise table: excessively sparse array")
		}
		return -1
	}
	return max
}

// appendJSONString writes s as lua-cjson does: '"', '\' and '/' escaped, the C0 controls
// and DEL as \uXXXX but for \b \t \n \f \r, other bytes as they are.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '/':
			b = append(b, '\\', '/')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c < 0x20 || c == 0x7f:
			b = append(b, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// JSON tokens, named as lua-cjson's errors name them.
const (
	jObjBegin = iota
	jObjEnd
	jArrBegin
	jArrEnd
	jString
	jNumber
	jBoolean
	jNull
	jColon
	jComma
	jEnd
	jWhitespace
	jError
	jUnknown
)

var jTokenNames = [...]string{"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING", "T_NUMBER",
	"T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR", "T_UNKNOWN"}

type jToken struct {
	typ   int
	index int // where it starts, from 0
	str   string
	num   float64
	b     bool
	err   string
}

type jsonParser struct {
	st    *state
	L     *lua.LState
	data  string
	i     int
	depth int
}

// jsonDecode is cjson.decode(string).
func (st *state) jsonDecode(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.ArgError(1, "expected 1 argument")
	}
	s := L.CheckString(1)
	if len(s) >= 2 && (s[0] == 0 || s[1] == 0) {
		L.RaiseError("JSON parser does not support UTF-16 or UTF-32")
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i] // lua-cjson reads a C string
	}
	p := &jsonParser{st: st, L: L, data: s}
	tok := p.next()
	v := p.value(tok)
	if tok = p.next(); tok.typ != jEnd {
		p.fail("the end", tok)
	}
	L.Push(v)
	return 1
}

func (p *jsonParser) fail(expected string, t jToken) {
	found := t.err
	if t.typ != jError {
		found = jTokenNames[t.typ]
	}
	p.L.RaiseError("Expected %s but found %s at character %d", expected, found, t.index+1)
}

func (p *jsonParser) at(i int) byte {
	if i < len(p.data) {
		return p.data[i]
	}
	return 0
}

func (p *jsonParser) next() jToken {
	for {
		switch p.at(p.i) {
		case ' ', '\t', '\n', '\r':
			p.i++
			continue
		}
		break
	}
	t := jToken{index: p.i}
	c := p.at(p.i)
	switch c {
	case '{':
		t.typ = jObjBegin
	case '}':
		t.typ = jObjEnd
	case '[':
		t.typ = jArrBegin
	case ']':
		t.typ = jArrEnd
	case ',':
		t.typ = jComma
	case ':':
		t.typ = jColon
	case 0:
		t.typ = jEnd
		return t
	case '"':
		return p.stringToken(t)
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if !p.st.cjson.decodeInvalidNumbers && p.invalidNumber() {
			return p.errToken(t, "invalid number")
		}
		return p.numberToken(t)
	case 't', 'f', 'n', 'i', 'I', 'N', '+':
		rest := p.data[p.i:]
		switch {
		case strings.HasPrefix(rest, "true"):
			t.typ, t.b = jBoolean, true
			p.i += 4
			return t
		case strings.HasPrefix(rest, "false"):
			t.typ = jBoolean
			p.i += 5
			return t
		case strings.HasPrefix(rest, "null"):
			t.typ = jNull
			p.i += 4
			return t
		case p.st.cjson.decodeInvalidNumbers && p.invalidNumber():
			return p.numberToken(t)
		}
		return p.errToken(t, "invalid token")
	default:
		return p.errToken(t, "invalid token")
	}
	p.i++
	return t
}

func (p *jsonParser) errToken(t jToken, msg string) jToken {
	t.typ, t.err, t.index = jError, msg, p.i
	return t
}

// invalidNumber is json_is_invalid_number: what strict JSON refuses but strtod reads.
func (p *jsonParser) invalidNumber() bool {
	i := p.i
	if p.at(i) == '+' {
		return true
	}
	if p.at(i) == '-' {
		i++
	}
	if c := p.at(i); c == '0' {
		c2 := p.at(i + 1)
		return c2|0x20 == 'x' || ('0' <= c2 && c2 <= '9')
	} else if c <= '9' {
		return false
	}
	rest := strings.ToLower(p.data[i:min(i+3, len(p.data))])
	return rest == "inf" || rest == "nan"
}

func (p *jsonParser) numberToken(t jToken) jToken {
	f, n := strtod(p.data[p.i:])
	if n == 0 {
		return p.errToken(t, "invalid number")
	}
	t.typ, t.num = jNumber, f
	p.i += n
	return t
}

func (p *jsonParser) stringToken(t jToken) jToken {
	p.i++
	var b []byte
	for {
		c := p.at(p.i)
		if c == '"' {
			break
		}
		if c == 0 {
			return p.errToken(t, "unexpected end of string")
		}
		if c == '\\' {
			e := p.at(p.i + 1)
			switch e {
			case '"', '\\', '/':
				c = e
			case 'b':
				c = '\b'
			case 't':
				c = '\t'
			case 'n':
				c = '\n'
			case 'f':
				c = '\f'
			case 'r':
				c = '\r'
			case 'u':
				var ok bool
				if b, ok = p.unicodeEscape(b); !ok {
					return p.errToken(t, "invalid unicode escape code")
				}
				continue
			default:
				return p.errToken(t, "invalid escape code")
			}
			p.i++
		}
		b = append(b, c)
		p.i++
	}
	p.i++
	t.typ, t.str = jString, string(b)
	return t
}

func hex4(s string) int {
	if len(s) < 4 {
		return -1
	}
	v, err := strconv.ParseUint(s[:4], 16, 16)
	if err != nil || strings.ContainsAny(s[:4], "+-_") {
		return -1
	}
	return int(v)
}

// unicodeEscape reads \uXXXX (a surrogate pair as one) at p.i and appends its UTF-8.
func (p *jsonParser) unicodeEscape(b []byte) ([]byte, bool) {
	cp := hex4(p.data[min(p.i+2, len(p.data)):])
	if cp < 0 {
		return b, false
	}
	n := 6
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 || p.at(p.i+6) != '\\' || p.at(p.i+7) != 'u' {
			return b, false
		}
		low := hex4(p.data[min(p.i+8, len(p.data)):])
		if low < 0 || low&0xFC00 != 0xDC00 {
			return b, false
		}
		cp = ((cp&0x3FF)<<10 | low&0x3FF) + 0x10000
		n = 12
	}
	switch {
	case cp <= 0x7F:
		b = append(b, byte(cp))
	case cp <= 0x7FF:
		b = append(b, byte(cp>>6|0xC0), byte(cp&0x3F|0x80))
	case cp <= 0xFFFF:
		b = append(b, byte(cp>>12|0xE0), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	default:
		b = append(b, byte(cp>>18|0xF0), byte(cp>>12&0x3F|0x80), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	}
	p.i += n
	return b, true
}

func (p *jsonParser) descend(t jToken) {
	p.depth++
	if p.depth > p.st.cjson.decodeMaxDepth {
		p.L.RaiseError("Found too many nested data structures (%d) at character %d", p.depth, t.index+1)
	}
}

func (p *jsonParser) value(t jToken) lua.LValue {
	switch t.typ {
	case jString:
		return lua.LString(t.str)
	case jNumber:
		return lua.LNumber(t.num)
	case jBoolean:
		return lua.LBool(t.b)
	case jNull:
		return p.st.jsonNull
	case jObjBegin:
		p.descend(t)
		obj := p.L.CreateTable(0, 0)
		tok := p.next()
		if tok.typ == jObjEnd {
			p.depth--
			return obj
		}
		for {
			if tok.typ != jString {
				p.fail("object key string", tok)
			}
			key := tok.str
			if tok = p.next(); tok.typ != jColon {
				p.fail("colon", tok)
			}
			obj.RawSetString(key, p.value(p.next()))
			tok = p.next()
			if tok.typ == jObjEnd {
				p.depth--
				return obj
			}
			if tok.typ != jComma {
				p.fail("comma or object end", tok)
			}
			tok = p.next()
		}
	case jArrBegin:
		p.descend(t)
		arr := p.L.CreateTable(0, 0)
		tok := p.next()
		if tok.typ == jArrEnd {
			p.depth--
			return arr
		}
		for i := 1; ; i++ {
			arr.RawSetInt(i, p.value(tok))
			tok = p.next()
			if tok.typ == jArrEnd {
				p.depth--
				return arr
			}
			if tok.typ != jComma {
				p.fail("comma or array end", tok)
			}
			tok = p.next()
		}
	}
	p.fail("value", t)
	return lua.LNil
}
