package scripting

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's library functions read a number argument with luaL_checknumber, which takes a
// string that reads whole as a number (luaO_str2d: string.sub(s, "2"), math.floor("0x10"),
// string.rep("a", " 3 ")). gopher-lua's read strings with Go's ParseInt in base 0
// (CheckNumber: "010" is 8, "1_0" is 10) or not at all (CheckInt, OptInt: "bad argument").
// The functions of our own read them with checkNumber; gopher-lua's that take numbers are
// wrapped (numberArgs) so that their string arguments are converted first, as Lua 5.1's
// would be, and a string that is no number fails as there ("number expected, got string").

// numberArgs wraps fn, a library function taking numbers in its arguments from..to (to 0:
// all from from on): a string there is replaced by its number before fn runs. fn runs in
// the wrapper's frame, so its errors name the function as before. When integer, the
// arguments are positions or counts, which C reads as a long (cLong: NaN and numbers out of
// its range are its smallest, as x86-64 converts, and all are given to fn within ±2^53,
// where gopher-lua's index arithmetic cannot overflow: string.find(s, p, 0/0) finds from
// the start, as in Redis) or an int (cInt: the long's low 32 bits). Otherwise (cNumber) a
// NaN result is made glibc's: invalid is the NaN of an invalid operation (0: leave fn's).
func (st *state) numberArgs(fn lua.LGFunction, from, to int, integer intSize, invalid float64) lua.LGFunction {
	return func(L *lua.LState) int {
		last := L.GetTop()
		if to > 0 && to < last {
			last = to
		}
		for i := from; i <= last; i++ {
			var f float64
			switch v := L.Get(i).(type) {
			case lua.LString:
				var ok bool
				if f, ok = str2number(string(v)); !ok {
					L.TypeError(i, lua.LTNumber)
				}
			case lua.LNumber:
				if integer == 0 || (v >= -maxExact && v <= maxExact) {
					continue
				}
				f = float64(v)
			default:
				continue
			}
			switch integer {
			case cLong:
				f = float64(max(-maxExact, min(maxExact, toInteger(f))))
			case cInt:
				f = float64(int32(toInteger(f)))
			}
			L.Replace(i, st.box.number(f))
		}
		if integer != cNumber || invalid == 0 {
			return fn(L)
		}
		var nan lua.LValue // the first NaN argument
		for i := 1; i <= L.GetTop() && nan == nil; i++ {
			if f, ok := L.Get(i).(lua.LNumber); ok && f != f {
				nan = f
			}
		}
		n := fn(L)
		// glibc gives a NaN argument back (sign and all), and for an invalid operation
		// (math.log(-1), math.fmod(1, 0)) the x86 default NaN, negative, or for acos, asin
		// and log10 a positive one; Go's functions return NaNs of their own.
		for i := L.GetTop() - n + 1; i <= L.GetTop(); i++ {
			if f, ok := L.Get(i).(lua.LNumber); ok && f != f {
				if nan != nil {
					L.Replace(i, nan)
				} else {
					L.Replace(i, lua.LNumber(invalid))
				}
			}
		}
		return n
	}
}

// defaultNaN is the NaN x86's invalid operations give (0/0): negative.
var defaultNaN = math.Float64frombits(0xfff8000000000000)

// intSize is how a library function reads a number argument: as a number, a C long
// (luaL_checkinteger) or a C int (luaL_checkint).
type intSize int

const (
	cNumber intSize = iota
	cLong
	cInt
)

// maxExact is 2^53: integers up to it are exact as numbers.
const maxExact = 1 << 53

// wrapNumberArgs wraps gopher-lua's functions of the libraries that take numbers: each
// name with the arguments numberArgs converts.
func (st *state) wrapNumberArgs() {
	type args struct {
		from, to int
		integer  intSize
	}
	positiveNaN := map[string]bool{"acos": true, "asin": true, "log10": true}
	libs := map[string]map[string]args{
		"string": {"byte": {2, 3, cLong}, "char": {1, 0, cInt}, "find": {3, 3, cLong}, "match": {3, 3, cLong},
			"gsub": {4, 4, cInt}, "sub": {2, 3, cLong}},
		"math": {"abs": {1, 0, cNumber}, "acos": {1, 0, cNumber}, "asin": {1, 0, cNumber}, "atan": {1, 0, cNumber},
			"atan2": {1, 0, cNumber}, "cos": {1, 0, cNumber}, "cosh": {1, 0, cNumber}, "deg": {1, 0, cNumber},
			"exp": {1, 0, cNumber}, "fmod": {1, 0, cNumber}, "frexp": {1, 0, cNumber}, "ldexp": {1, 0, cNumber},
			"log": {1, 0, cNumber}, "log10": {1, 0, cNumber}, "modf": {1, 0, cNumber}, "pow": {1, 0, cNumber},
			"rad": {1, 0, cNumber}, "random": {1, 0, cNumber}, "randomseed": {1, 0, cNumber}, "sin": {1, 0, cNumber},
			"sinh": {1, 0, cNumber}, "sqrt": {1, 0, cNumber}, "tan": {1, 0, cNumber}, "tanh": {1, 0, cNumber}},
	}
	for lib, fns := range libs {
		t := st.g
		if lib != "" {
			t, _ = st.g.RawGetString(lib).(*lua.LTable)
		}
		if t == nil {
			continue
		}
		for name, a := range fns {
			if fn, ok := t.RawGetString(name).(*lua.LFunction); ok && fn.IsG {
				invalid := defaultNaN
				switch {
				case positiveNaN[name]:
					invalid = math.Float64frombits(0x7ff8000000000000)
				case name == "abs":
					invalid = 0 // Go's Abs clears a NaN's sign, as C's fabs
				}
				t.RawSetString(name, st.L.NewFunction(st.numberArgs(fn.GFunction, a.from, a.to, a.integer, invalid)))
			}
		}
	}
	st.g.RawSetString("unpack", st.L.NewFunction(st.luaUnpack))
	if tl, ok := st.g.RawGetString("table").(*lua.LTable); ok {
		tl.RawSetString("concat", st.L.NewFunction(st.tableConcat))
	}
	// select(n, ...): a string starting with '#' counts, any other is read as a number.
	if fn, ok := st.g.RawGetString("select").(*lua.LFunction); ok && fn.IsG {
		sel := fn.GFunction
		st.g.RawSetString("select", st.L.NewFunction(func(L *lua.LState) int {
			if s, ok := L.Get(1).(lua.LString); ok {
				if len(s) > 0 && s[0] == '#' {
					L.Replace(1, lua.LString("#"))
				} else {
					L.Replace(1, lua.LNumber(checkInt(L, 1)))
				}
			}
			return sel(L)
		}))
	}
}

// checkInt is luaL_checkint: the argument as a number (checkNumber), truncated to a long
// and then to a C int (its low 32 bits: string.rep('x', 2^32) is "").
func checkInt(L *lua.LState, n int) int { return int(int32(toInteger(checkNumber(L, n)))) }

// optInt is luaL_optint: def when the argument is absent or nil.
func optInt(L *lua.LState, n, def int) int {
	if L.Get(n) == lua.LNil {
		return def
	}
	return checkInt(L, n)
}

// luaUnpack is Lua 5.1's unpack(t [, i [, j]]): t[i] to t[j] (1 and #t by default), the
// bounds C ints, and at most the C stack's room (LUAI_MAXCSTACK, 8000 slots with the
// arguments) returned, past which it fails as there rather than build a huge result.
func (st *state) luaUnpack(L *lua.LState) int {
	t := st.see(L.CheckTable(1))
	i := optCInt(L, 2, 1)
	e := optCInt(L, 3, int32(t.Len()))
	if i > e {
		return 0
	}
	n := e - i + 1 // wraps as C's int does
	if n <= 0 || int(n)+L.GetTop() > maxCStack {
		luaLError(L, "too many results to unpack")
	}
	for k := i; ; k++ {
		L.Push(t.RawGetInt(int(k)))
		if k == e {
			break
		}
	}
	return int(n)
}

// optCInt is luaL_optint: argument n as a C int (a number or a string that reads as one,
// truncated, wrapped to 32 bits), def when it is nil or absent.
func optCInt(L *lua.LState, n int, def int32) int32 {
	if L.Get(n) == lua.LNil {
		return def
	}
	return int32(toInteger(checkNumber(L, n)))
}

// maxCStack is Lua 5.1's LUAI_MAXCSTACK: the most values a C function may push.
const maxCStack = 8000

// tableConcat is Redis's Lua 5.1 table.concat(t [, sep [, i [, j]]]): t[i] .. sep .. t[j],
// numbers written as tostring writes them, the bounds C ints, and a value that is neither a
// string nor a number an error naming its index.
func (st *state) tableConcat(L *lua.LState) int {
	t := st.see(L.CheckTable(1))
	var sep string
	switch v := L.Get(2); {
	case v == lua.LNil:
	case isStringLike(v):
		sep = string(luaString(v))
	default:
		L.TypeError(2, lua.LTString)
	}
	i := optCInt(L, 3, 1)
	last := optCInt(L, 4, int32(t.Len()))
	// The result's size first, up to the first value that is neither a string nor a
	// number (the error below), so that its bytes are taken once, and checked first.
	size := 0
	for k := i; k <= last && size <= maxString; k++ {
		switch v := t.RawGetInt(int(k)).(type) {
		case lua.LString:
			size += len(v) + len(sep)
		case lua.LNumber:
			size += maxNumberLen + len(sep)
		default:
			k = last
		}
		if k == last {
			break // last may be math.MaxInt32
		}
	}
	b := st.grow(L, st.catBuf[:0], min(size, maxString+1))
	counted := 0 // the bytes of b that worked has been told of
	add := func(k int32) {
		switch v := t.RawGetInt(int(k)).(type) {
		case lua.LString:
			b = append(st.grow(L, b, len(v)+len(sep)), v...)
		case lua.LNumber:
			b = appendLuaNumber(st.grow(L, b, maxNumberLen+len(sep)), float64(v))
		default:
			luaLError(L, "invalid value (%s) at index %d in table for 'concat'", v.Type().String(), k)
		}
		if len(b) > maxString {
			L.RaiseError("not enough memory")
		}
		st.worked(L, 1+len(b)-counted) // the separator before too; an empty string is work too
		counted = len(b)
	}
	for ; i < last; i++ {
		add(i)
		b = append(b, sep...)
	}
	if i == last {
		add(i)
	}
	return st.pushCat(L, b)
}
