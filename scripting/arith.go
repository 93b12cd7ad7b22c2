package scripting

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// Arithmetic on strings, as Lua 5.1 does it. Lua 5.1 converts a string operand of + - * /
// % ^ and unary minus with luaO_str2d (strtod, then only blanks): "010" is 10, "0x1A" 26,
// " 12 " 12, "1e3" 1000, "-0" minus zero, "inf" and "nan" as glibc reads them, and "1_0",
// "5 x" or "" are no numbers: "attempt to perform arithmetic on a string value". gopher-lua
// reads them with Go's ParseInt in base 0 ("010" is 8, "1_0" is 10, "-0" is 0).
//
// gopher-lua's VM does arithmetic on two numbers at once; for any other operand it looks
// for the event's metamethod (__add...) in the operands' metatables before it tries its
// own conversion. Every string shares the string metatable, so the metamethods below,
// set there, receive every arithmetic that involves a string and do it as Lua 5.1 would:
// arithmetic on numbers never reaches them, and costs what it did. getmetatable('') does
// not show them (the metatable scripts see is the read-only one of newState).

// arithOp is one of Lua's arithmetic operators.
type arithOp int

const (
	arithAdd arithOp = iota
	arithSub
	arithMul
	arithDiv
	arithMod
	arithPow
	arithUnm
)

// arithEvents are the operators' metamethod names, in arithOp's order.
var arithEvents = [...]string{"__add", "__sub", "__mul", "__div", "__mod", "__pow", "__unm"}

// setStringArith sets the arithmetic metamethods on the strings' metatable mt.
func (st *state) setStringArith(mt *lua.LTable) {
	for op, event := range arithEvents {
		mt.RawSetString(event, st.L.NewFunction(st.stringArith(arithOp(op))))
	}
}

// stringArith is op's metamethod for strings: both operands converted as Lua 5.1 does
// (luaV_tonumber), else the other operand's metamethod (call_binTM: strings have none in
// Redis), else Lua 5.1's error naming the first operand that is no number
// (luaG_aritherror).
func (st *state) stringArith(op arithOp) lua.LGFunction {
	return func(L *lua.LState) int {
		a := L.Get(1)
		b := a // unary minus is arithmetic on its operand twice, as luaV_arith does it
		if op != arithUnm {
			b = L.Get(2)
		}
		x, okA := toNumber(a)
		y, okB := toNumber(b)
		if okA && okB {
			L.Push(st.box.number(arith(op, x, y)))
			return 1
		}
		if h := binaryMeta(L, a, b, arithEvents[op]); h != lua.LNil {
			L.Push(h)
			L.Push(a)
			L.Push(b)
			L.Call(2, 1)
			return 1
		}
		culprit := 2
		if !okA {
			culprit = 1
		}
		L.RaiseError("%s", arithError(L, op, culprit, []lua.LValue{a, b}[culprit-1]))
		return 0
	}
}

// arith is Lua 5.1's arithmetic (luai_num*): % is a - floor(a/b)*b. A NaN operand is the
// result, the first when both are, as x86 gives it (Go may swap the operands of * and +).
func arith(op arithOp, a, b float64) float64 {
	if op != arithPow && op != arithUnm && (a != a || b != b) {
		if a != a {
			return a
		}
		return b
	}
	switch op {
	case arithAdd:
		return a + b
	case arithSub:
		return a - b
	case arithMul:
		return a * b
	case arithDiv:
		return a / b
	case arithMod:
		return a - math.Floor(a/b)*b
	case arithPow:
		return cPow(a, b)
	}
	return -a
}

// binaryMeta is the metamethod event of a, else of b, leaving out the strings' own.
func binaryMeta(L *lua.LState, a, b lua.LValue, event string) lua.LValue {
	if _, isStr := a.(lua.LString); !isStr {
		if h := L.GetMetaField(a, event); h != lua.LNil {
			return h
		}
	}
	if _, isStr := b.(lua.LString); !isStr {
		return L.GetMetaField(b, event)
	}
	return lua.LNil
}

// arithError is luaG_typeerror's text for operand arg (1 or 2) of the arithmetic the Lua
// function calling the metamethod is doing: the operand's variable named when it is in a
// register (not a constant), as Lua 5.1 names it.
func arithError(L *lua.LState, op arithOp, arg int, v lua.LValue) string {
	typ := v.Type().String()
	f, ok := luaFrame(L, 1)
	if !ok {
		return typeError("perform arithmetic on", typ, "", "")
	}
	i := f.proto.Code[f.pc]
	var rk int
	switch code := instOp(i); {
	case code == opUnm && op == arithUnm:
		rk = instB(i)
	case code >= opAdd && code <= opPow && op != arithUnm:
		rk = instB(i)
		if arg == 2 {
			rk = instC(i)
		}
	default:
		return typeError("perform arithmetic on", typ, "", "")
	}
	if rk&opRK != 0 {
		return typeError("perform arithmetic on", typ, "", "")
	}
	kind, name := objName(f.proto, f.pc, rk)
	return typeError("perform arithmetic on", typ, kind, name)
}

// cPow is glibc's pow where Go's math.Pow differs from it, in the NaNs it gives (Go's have
// a sign and payload of their own; a script sees the sign: "nan" or "-nan").
func cPow(x, y float64) float64 {
	switch {
	case y == 0 || x == 1:
		return 1
	case y != y || x != x && math.IsInf(y, 0):
		if x != x {
			return x // x + y: the first NaN operand
		}
		return y
	case x != x:
		// x*x, negated for a negative x and an odd integer y, inverted for a negative y.
		if math.Signbit(x) && y == math.Trunc(y) && math.Mod(y, 2) != 0 {
			x = -x
		}
		return x
	case x < 0 && !math.IsInf(x, 0) && !math.IsInf(y, 0) && y != math.Trunc(y):
		return defaultNaN // (x - x) / (x - x)
	}
	return math.Pow(x, y)
}
