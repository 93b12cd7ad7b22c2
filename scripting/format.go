package scripting

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// stringFormat is Lua 5.1's string.format, which hands each item to C's sprintf: the same
// flags, widths and precisions, %g with six digits unless told, %s of a number as
// tostring writes it, %q's escapes. gopher-lua's goes through Go's fmt, whose %g and
// number-to-string differ, and limiter scripts format the numbers they return.
func (st *state) stringFormat(L *lua.LState) int {
	format := L.CheckString(1)
	var b strings.Builder
	// Room for the format and its strings, taken once (a long string is most often
	// added as it is), so that the result does not keep twice its bytes.
	size := len(format)
	for i := 2; i <= L.GetTop(); i++ {
		if s, ok := L.Get(i).(lua.LString); ok {
			size += len(s)
		}
	}
	if size <= maxString {
		st.room(L, &b, size+16)
	}
	arg := 1
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		if i < len(format) && format[i] == '%' {
			b.WriteByte('%')
			continue
		}
		arg++
		before := b.Len()
		if arg > L.GetTop() {
			L.ArgError(arg, "no value")
		}
		spec, n := parseSpec(L, format[i:])
		i += n
		if i >= len(format) {
			L.RaiseError("invalid option '%%\x00' to 'format'") // C reads the string's NUL
		}
		spec.verb = format[i]
		switch spec.verb {
		case 'c':
			b.WriteString(spec.pad(string([]byte{byte(int64(checkNumber(L, arg)))}), false))
		case 'd', 'i':
			b.WriteString(spec.integer(int64(toLong(float64(checkNumber(L, arg)))), false))
		case 'o', 'u', 'x', 'X':
			b.WriteString(spec.integer(int64(toLong(float64(checkNumber(L, arg)))), true))
		case 'e', 'E', 'f', 'g', 'G':
			b.WriteString(spec.float(float64(checkNumber(L, arg))))
		case 'q':
			s := checkLString(L, arg)
			st.reserve(L, len(s)+2) // quoteLua's copy: s quoted, at least
			q := quoteLua(s)
			st.room(L, &b, len(q))
			b.WriteString(q)
		case 's':
			s := checkLString(L, arg)
			if spec.prec < 0 && len(s) >= 100 && !spec.hasWidth {
				st.room(L, &b, len(s))
				b.WriteString(s) // Lua adds a long string as it is
			} else {
				if spec.prec >= 0 && len(s) > spec.prec {
					s = s[:spec.prec]
				}
				s = cString(s) // sprintf reads a C string
				b.WriteString(spec.pad(s, false))
			}
		default:
			L.RaiseError("invalid option '%%%c' to 'format'", spec.verb)
		}
		if b.Len() > maxString {
			L.RaiseError("not enough memory")
		}
		st.worked(L, b.Len()-before)
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// checkLString is luaL_checklstring: a string, or a number as tostring writes it.
func checkLString(L *lua.LState, n int) string {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return luaNumberString(float64(v))
	}
	L.TypeError(n, lua.LTString)
	return ""
}

// toLong is C's (long) cast of a double on x86-64.
func toLong(f float64) int64 { return toInteger(f) }

// spec is one "%..." item of a format: its flags, width and precision.
type spec struct {
	minus, plus, space, hash, zero bool
	width                          int
	hasWidth                       bool
	prec                           int // -1 when not given
	verb                           byte
}

// parseSpec reads flags, width and precision as Lua 5.1's scanformat does (at most two
// digits each), and returns the bytes read.
func parseSpec(L *lua.LState, s string) (spec, int) {
	sp := spec{prec: -1}
	i := 0
	for i < len(s) && strings.IndexByte("-+ #0", s[i]) >= 0 {
		switch s[i] {
		case '-':
			sp.minus = true
		case '+':
			sp.plus = true
		case ' ':
			sp.space = true
		case '#':
			sp.hash = true
		case '0':
			sp.zero = true
		}
		i++
	}
	if i > 5 {
		L.RaiseError("invalid format (repeated flags)")
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		sp.width = sp.width*10 + int(s[i]-'0')
		i++
	}
	sp.hasWidth = i > start
	if i-start > 2 {
		L.RaiseError("invalid format (width or precision too long)")
	}
	if i < len(s) && s[i] == '.' {
		i++
		start = i
		sp.prec = 0
		for i < len(s) && isDigit(s[i]) {
			sp.prec = sp.prec*10 + int(s[i]-'0')
			i++
		}
		if i-start > 2 {
			L.RaiseError("invalid format (width or precision too long)")
		}
	}
	return sp, i
}

// pad applies the width: spaces on the left, or on the right with '-', or zeros after the
// sign when numeric and '0' is given.
func (sp spec) pad(body string, numeric bool) string {
	if len(body) >= sp.width {
		return body
	}
	fill := sp.width - len(body)
	switch {
	case sp.minus:
		return body + strings.Repeat(" ", fill)
	case sp.zero && numeric:
		sign := 0
		if len(body) > 0 && (body[0] == '-' || body[0] == '+' || body[0] == ' ') {
			sign = 1
		}
		if len(body) > sign+1 && body[sign] == '0' && (body[sign+1] == 'x' || body[sign+1] == 'X') {
			sign += 2
		}
		return body[:sign] + strings.Repeat("0", fill) + body[sign:]
	}
	return strings.Repeat(" ", fill) + body
}

// integer formats %d, %i (signed) or %o, %u, %x, %X (the bits as unsigned).
func (sp spec) integer(v int64, unsigned bool) string {
	var digits string
	neg := false
	switch {
	case !unsigned:
		neg = v < 0
		u := uint64(v)
		if neg {
			u = -u
		}
		digits = strconv.FormatUint(u, 10)
	case sp.verb == 'o':
		digits = strconv.FormatUint(uint64(v), 8)
	case sp.verb == 'x':
		digits = strconv.FormatUint(uint64(v), 16)
	case sp.verb == 'X':
		digits = strings.ToUpper(strconv.FormatUint(uint64(v), 16))
	default:
		digits = strconv.FormatUint(uint64(v), 10)
	}
	if sp.prec >= 0 {
		if sp.prec == 0 && v == 0 {
			digits = ""
		}
		if len(digits) < sp.prec {
			digits = strings.Repeat("0", sp.prec-len(digits)) + digits
		}
	}
	prefix := ""
	switch {
	case neg:
		prefix = "-"
	case !unsigned && sp.plus:
		prefix = "+"
	case !unsigned && sp.space:
		prefix = " "
	}
	if sp.hash {
		switch {
		case sp.verb == 'o' && (len(digits) == 0 || digits[0] != '0'):
			digits = "0" + digits
		case sp.verb == 'x' && v != 0:
			prefix = "0x"
		case sp.verb == 'X' && v != 0:
			prefix = "0X"
		}
	}
	sp.zero = sp.zero && sp.prec < 0 // a precision turns the zero flag off for integers
	return sp.pad(prefix+digits, true)
}

// float formats %e, %E, %f, %g or %G as glibc does.
func (sp spec) float(f float64) string {
	prec := sp.prec
	if prec < 0 {
		prec = 6
	}
	upper := sp.verb == 'E' || sp.verb == 'G'
	neg := math.Signbit(f)
	var body string
	switch {
	case math.IsInf(f, 0):
		body = "inf"
	case math.IsNaN(f):
		body = "nan"
	default:
		a := math.Abs(f)
		switch sp.verb {
		case 'e', 'E':
			body = strconv.FormatFloat(a, 'e', prec, 64)
			if sp.hash && prec == 0 {
				body = strings.Replace(body, "e", ".e", 1)
			}
		case 'f':
			body = strconv.FormatFloat(a, 'f', prec, 64)
			if sp.hash && prec == 0 {
				body += "."
			}
		default:
			body = formatG(a, prec, sp.hash)
		}
	}
	if upper {
		body = strings.ToUpper(body)
	}
	switch {
	case neg:
		body = "-" + body
	case sp.plus:
		body = "+" + body
	case sp.space:
		body = " " + body
	}
	numeric := !math.IsInf(f, 0) && !math.IsNaN(f)
	return sp.pad(body, numeric)
}

// formatG is C's %g of a non-negative finite a: prec significant digits (0 counts as 1),
// %e when the exponent is below -4 or at least prec, trailing zeros dropped unless hash.
func formatG(a float64, prec int, hash bool) string {
	if prec == 0 {
		prec = 1
	}
	e := strconv.FormatFloat(a, 'e', prec-1, 64)
	mant, expStr, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(expStr)
	var out string
	if x < -4 || x >= prec {
		if !hash {
			mant = trimZeros(mant)
		} else if !strings.Contains(mant, ".") {
			mant += "."
		}
		out = mant + "e" + expStr
	} else {
		out = strconv.FormatFloat(a, 'f', prec-1-x, 64)
		if !hash {
			out = trimZeros(out)
		} else if !strings.Contains(out, ".") {
			out += "."
		}
	}
	return out
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// quoteLua is %q: the string in double quotes, with quote, backslash, newline, CR and NUL
// escaped as Lua 5.1 does.
func quoteLua(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\r':
			b.WriteString(`\r`)
		case 0:
			b.WriteString(`\000`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
