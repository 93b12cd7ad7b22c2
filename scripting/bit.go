package scripting

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The bit library, as LuaBitOp 1.0 (Redis's): 32-bit operations on numbers, results as
// signed 32-bit integers.

func (st *state) openBit() *lua.LTable {
	L := st.L
	t := L.CreateTable(0, 12)
	unary := func(name string, f func(uint32) uint32) {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			L.Push(bitResult(f(bitArg(L, 1))))
			return 1
		}))
	}
	fold := func(name string, f func(a, b uint32) uint32) {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			b := bitArg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				b = f(b, bitArg(L, i))
			}
			L.Push(bitResult(b))
			return 1
		}))
	}
	shift := func(name string, f func(b uint32, n uint) uint32) {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			b := bitArg(L, 1)
			n := uint(bitArg(L, 2) & 31)
			L.Push(bitResult(f(b, n)))
			return 1
		}))
	}
	unary("tobit", func(b uint32) uint32 { return b })
	unary("bnot", func(b uint32) uint32 { return ^b })
	unary("bswap", func(b uint32) uint32 {
		return b>>24 | (b>>8)&0xff00 | (b&0xff00)<<8 | b<<24
	})
	fold("band", func(a, b uint32) uint32 { return a & b })
	fold("bor", func(a, b uint32) uint32 { return a | b })
	fold("bxor", func(a, b uint32) uint32 { return a ^ b })
	shift("lshift", func(b uint32, n uint) uint32 { return b << n })
	shift("rshift", func(b uint32, n uint) uint32 { return b >> n })
	shift("arshift", func(b uint32, n uint) uint32 { return uint32(int32(b) >> n) })
	shift("rol", func(b uint32, n uint) uint32 { return b<<n | b>>((32-n)&31) })
	shift("ror", func(b uint32, n uint) uint32 { return b>>n | b<<((32-n)&31) })
	t.RawSetString("tohex", L.NewFunction(func(L *lua.LState) int {
		b := bitArg(L, 1)
		n := int32(8)
		if L.GetTop() >= 2 { // an explicit nil fails as a number, as lua_isnone has it
			n = int32(bitArg(L, 2))
		}
		digits := "0123456789abcdef"
		if n == math.MinInt32 {
			n++ // Redis's fix: its negation overflowed LuaBitOp's buffer
		}
		if n < 0 {
			n = -n
			digits = "0123456789ABCDEF"
		}
		if n > 8 {
			n = 8
		}
		buf := make([]byte, n)
		for i := int(n) - 1; i >= 0; i-- {
			buf[i] = digits[b&15]
			b >>= 4
		}
		L.Push(lua.LString(buf))
		return 1
	}))
	return t
}

// bitArg is LuaBitOp's barg: the number rounded to an integer modulo 2^32, by adding
// 2^52+2^51 and taking the low word, as it does.
func bitArg(L *lua.LState, n int) uint32 {
	f := checkNumber(L, n)
	return uint32(math.Float64bits(f + 6755399441055744.0))
}

func bitResult(b uint32) lua.LNumber { return lua.LNumber(int32(b)) }
