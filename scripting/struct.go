package scripting

import (
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The struct library as Redis 7.0 ships it (Roberto Ierusalimschy's struct with Redis's
// bounds checks), on x86-64: struct.pack(fmt, ...) packs its arguments into a string,
// struct.unpack(fmt, s [, pos]) reads them back and returns the position after them,
// struct.size(fmt) is the size of what fmt packs.
//
// A format is a C string: it ends at its first NUL. Its options:
//
//	< >        little-endian (the default: x86's order), big-endian
//	![n]       the largest alignment, n a power of 2 (8 when left out; 1 at the start)
//	b B        a signed, unsigned char: 1 byte
//	h H        a short: 2 bytes
//	l L T      a long, an unsigned long, a size_t: 8 bytes
//	i[n] I[n]  an int of n bytes (4 when left out), n at most 32
//	f d        a float, a double
//	x          a zero byte
//	c[n]       n bytes of a string (1 when left out); c0 packs the whole string, and
//	           unpacks as many bytes as the previous result says (which it replaces)
//	s          a zero-terminated string
//	' '        nothing
//
// An item is aligned to the smaller of its size and the largest alignment (c and s are
// not). Integers go through C's 64-bit long: one wider than 8 bytes packs zeros past the
// eighth (the sign is not extended), and unpacks from its last 8 bytes with the sign bit
// where C's shift by size*8-1 puts it on x86 (the count taken modulo 64).

const (
	structMaxInt   = 32 // the widest integer option
	structMaxAlign = 8  // '!' alone: the alignment of a double
	// luaMaxCStack is LUAI_MAXCSTACK: lua_checkstack refuses to grow a C function's stack
	// past 8000 values, which bounds what struct.unpack and cmsgpack.unpack return.
	luaMaxCStack = 8000
)

func (st *state) openStruct() *lua.LTable {
	L := st.L
	t := L.CreateTable(0, 3)
	t.RawSetString("pack", L.NewFunction(st.structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

// structFormat walks a format, with the byte order and alignment it has set so far.
type structFormat struct {
	L      *lua.LState
	s      string
	i      int
	little bool
	align  int
}

func newStructFormat(L *lua.LState) *structFormat {
	s := checkLString(L, 1)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return &structFormat{L: L, s: s, little: true, align: 1}
}

func (f *structFormat) more() bool { return f.i < len(f.s) }

// num reads the number after an option, or returns def when there is none.
func (f *structFormat) num(def int) int {
	if f.i >= len(f.s) || !isDigit(f.s[f.i]) {
		return def
	}
	a := 0
	for f.i < len(f.s) && isDigit(f.s[f.i]) {
		d := int(f.s[f.i] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			luaLError(f.L, "integral size overflow")
		}
		a = a*10 + d
		f.i++
	}
	return a
}

// option reads the next option and its size: 0 for those that take no room.
func (f *structFormat) option() (opt byte, size int) {
	opt = f.s[f.i]
	f.i++
	switch opt {
	case 'b', 'B', 'x':
		return opt, 1
	case 'h', 'H':
		return opt, 2
	case 'l', 'L', 'T', 'd':
		return opt, 8
	case 'f':
		return opt, 4
	case 'c':
		return opt, f.num(1)
	case 'i', 'I':
		n := f.num(4)
		if n > structMaxInt {
			luaLError(f.L, "integral size %d is larger than limit of %d", n, structMaxInt)
		}
		return opt, n
	}
	return opt, 0
}

// padding is how many bytes align an item of size at pos.
func (f *structFormat) padding(pos uint64, opt byte, size int) uint64 {
	if size == 0 || opt == 'c' {
		return 0
	}
	s := uint64(min(size, f.align))
	return (s - pos&(s-1)) & (s - 1)
}

// control applies a byte-order or alignment option; any other is an error.
func (f *structFormat) control(opt byte) {
	switch opt {
	case ' ':
	case '>':
		f.little = false
	case '<':
		f.little = true
	case '!':
		a := f.num(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			luaLError(f.L, "alignment %d is not a power of 2", a)
		}
		f.align = a
	default:
		f.L.ArgError(1, "invalid format option '"+string([]byte{opt})+"'")
	}
}

func isStructInt(opt byte) bool {
	switch opt {
	case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
		return true
	}
	return false
}

// structPack is struct.pack(fmt, ...).
func (st *state) structPack(L *lua.LState) int {
	f := newStructFormat(L)
	arg := 2
	b := st.libBuf[:0]
	for f.more() {
		opt, size := f.option()
		for pad := f.padding(uint64(len(b)), opt, size); pad > 0; pad-- {
			b = append(b, 0)
		}
		switch {
		case isStructInt(opt):
			b = appendStructInt(b, cUint64(st.packNumber(L, arg)), size, f.little)
			arg++
		case opt == 'x':
			b = append(b, 0)
		case opt == 'f':
			b = appendStructInt(b, uint64(math.Float32bits(float32(st.packNumber(L, arg)))), 4, f.little)
			arg++
		case opt == 'd':
			b = appendStructInt(b, math.Float64bits(st.packNumber(L, arg)), 8, f.little)
			arg++
		case opt == 'c' || opt == 's':
			st.packMark(L, arg)
			s := checkLString(L, arg)
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				L.ArgError(arg, "string too short") // arg is already the next one, as in C
			}
			b = append(b, s[:size]...)
			if opt == 's' {
				b = append(b, 0)
			}
		default:
			f.control(opt)
		}
		if len(b) > maxString {
			L.Error(lua.LString("not enough memory"), 0)
		}
	}
	L.Push(lua.LString(b))
	st.keepLibBuf(b)
	return 1
}

// packMark notes, before struct.pack reads argument arg, that C's struct.pack finds the
// first argument past those given nil, not absent: it pushes a nil as a mark first.
func (st *state) packMark(L *lua.LState, arg int) {
	if arg == L.GetTop()+1 {
		st.run.nilArg = arg
	}
}

// packNumber is struct.pack's luaL_checknumber of argument arg.
func (st *state) packNumber(L *lua.LState, arg int) float64 {
	st.packMark(L, arg)
	return checkNumber(L, arg)
}

// appendStructInt appends the size low bytes of v (zeros past the eighth) in the order.
func appendStructInt(b []byte, v uint64, size int, little bool) []byte {
	n := len(b)
	for i := 0; i < size; i++ {
		b = append(b, 0)
	}
	for i := 0; i < size && v != 0; i++ {
		if little {
			b[n+i] = byte(v)
		} else {
			b[n+size-1-i] = byte(v)
		}
		v >>= 8
	}
	return b
}

// structUnpack is struct.unpack(fmt, s [, pos]).
func structUnpack(L *lua.LState) int {
	f := newStructFormat(L)
	data := checkLString(L, 2)
	ld := uint64(len(data))
	pos := uint64(optInteger(L, 3, 1))
	if pos == 0 {
		L.ArgError(3, "offset must be 1 or greater")
	}
	pos--
	top := L.GetTop() // the C function's stack: its arguments, then its results
	n := 0
	for f.more() {
		opt, isize := f.option()
		size := uint64(isize)
		pos += f.padding(pos, opt, isize)
		if size > ld || pos > ld-size {
			L.ArgError(2, "data string too short")
		}
		if top+n+2 > luaMaxCStack {
			luaLError(L, "stack overflow (too many results)")
		}
		switch {
		case isStructInt(opt):
			L.Push(lua.LNumber(structInt(data[pos:pos+size], f.little, opt >= 'a')))
			n++
		case opt == 'x':
		case opt == 'f':
			bits := uint32(structUint(data[pos:pos+4], f.little))
			L.Push(lua.LNumber(math.Float32frombits(bits)))
			n++
		case opt == 'd':
			L.Push(lua.LNumber(math.Float64frombits(structUint(data[pos:pos+8], f.little))))
			n++
		case opt == 'c':
			if size == 0 {
				if n == 0 {
					luaLError(L, "format 'c0' needs a previous size")
				}
				prev, ok := toNumber(L.Get(-1))
				if !ok {
					luaLError(L, "format 'c0' needs a previous size")
				}
				size = cUint64(prev)
				L.Pop(1)
				n--
				if size > ld-pos {
					L.ArgError(2, "data string too short")
				}
			}
			L.Push(lua.LString(data[pos : pos+size]))
			n++
		case opt == 's':
			end := strings.IndexByte(data[pos:], 0)
			if end < 0 {
				luaLError(L, "unfinished string in data")
			}
			L.Push(lua.LString(data[pos : pos+uint64(end)]))
			n++
			size = uint64(end) + 1
		default:
			f.control(opt)
		}
		pos += size
	}
	L.Push(lua.LNumber(int64(pos + 1)))
	return n + 1
}

// structUint reads b as an unsigned integer in the order; past 8 bytes the first ones
// shift out, as they do from C's long.
func structUint(b string, little bool) uint64 {
	var v uint64
	for i := range len(b) {
		if little {
			v = v<<8 | uint64(b[len(b)-1-i])
		} else {
			v = v<<8 | uint64(b[i])
		}
	}
	return v
}

// structInt is getinteger: b as an integer, sign-extended from the bit C's shift reaches.
func structInt(b string, little, signed bool) float64 {
	v := structUint(b, little)
	if !signed {
		return float64(v)
	}
	mask := ^uint64(0) << (uint(len(b)*8-1) & 63)
	if v&mask != 0 {
		v |= mask
	}
	return float64(int64(v))
}

// structSize is struct.size(fmt).
func structSize(L *lua.LState) int {
	f := newStructFormat(L)
	pos := uint64(0)
	for f.more() {
		opt, size := f.option()
		pos += f.padding(pos, opt, size)
		if opt == 's' {
			L.ArgError(1, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			L.ArgError(1, "option 'c0' has no fixed size")
		}
		if !isAlnum(opt) {
			f.control(opt)
		}
		pos += uint64(size)
	}
	L.Push(lua.LNumber(int64(pos)))
	return 1
}

// cUint64 is C's (unsigned long) cast of a double as gcc compiles it for x86-64: values
// from 2^63 up are converted less 2^63, the rest (NaN too) as a signed long.
func cUint64(f float64) uint64 {
	if f >= 1<<63 {
		return uint64(toInteger(f-(1<<63))) ^ 1<<63
	}
	return uint64(toInteger(f))
}

// checkNumber is luaL_checknumber: a number, or a string that Lua reads as one.
func checkNumber(L *lua.LState, n int) float64 {
	f, ok := toNumber(L.Get(n))
	if !ok {
		L.TypeError(n, lua.LTNumber)
	}
	return f
}

// luaLError is luaL_error: the message after the position of the function's caller, none
// when that is a Go function (pcall(struct.size, 'i33')).
func luaLError(L *lua.LState, format string, args ...any) {
	L.Error(lua.LString(where(L, 1)+fmt.Sprintf(format, args...)), 0)
}

// optInteger is luaL_optinteger: def when the argument is absent or nil.
func optInteger(L *lua.LState, n int, def int64) int64 {
	if L.Get(n) == lua.LNil {
		return def
	}
	return toInteger(checkNumber(L, n))
}

// keepLibBuf keeps a library's output buffer for the next call unless it grew large.
func (st *state) keepLibBuf(b []byte) {
	if cap(b) <= 4096 {
		st.libBuf = b[:0]
	}
}
