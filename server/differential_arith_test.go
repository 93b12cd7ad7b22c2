package server

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
)

// Arithmetic on strings in the scripts' differential test: Lua 5.1 reads a string operand
// with strtod ("010" is 10, "0x1A" 26, " 12 " 12, "1e3" 1000, "-0" minus zero, "inf" and
// "nan" as glibc reads them) and fails on anything else ("1_0", "5 x", ""), naming the
// variable; so do the library functions that take numbers and a numeric for. Each script
// puts an operand from the lists below in a literal, a local, a table field, an upvalue,
// ARGV or a value read back with redis.call, and uses it.

// arithStrings are the strings the operands are made of: numbers as strtod reads them, and
// strings it does not read whole.
var arithStrings = []string{
	"010", " 12 ", "0x1A", "0X1p4", "1e3", "1E+2", "1_0", "-0", "+3", "inf", "-inf", "INF", "infinity",
	"nan", "-nan", "nan(123)", "", " ", "abc", "5 x", "x5", "-5", "2.5", ".5", "5.", "\t7\n", "0x",
	"1e", "1e400", "-1e400", "0b101", "0o7", "1,5", "0x1A.8", "9007199254740993", "1e-400", "- 1", "--1",
	"0x-1", "10\x00", "3", "-0.0", "0.1",
}

// arithNumbers are Lua number literals the other operand is drawn from now and then.
var arithNumbers = []string{"3", "-2", "2.5", "0", "-0", "1e300", "(0/0)", "(1/0)", "0.1"}

// arithLibs are library calls whose argument (@) must be a number: each reads a string
// as Lua 5.1's luaL_checknumber does.
var arithLibs = []string{
	"string.sub('hello world', @)", "string.sub('hello world', 2, @)", "string.rep('ab', @)",
	"math.floor(@)", "math.ceil(@)", "math.max(@, 1)", "math.min(1, @)", "math.abs(@)",
	"math.fmod(@, 4)", "math.sqrt(@)", "string.format('%d', @)", "string.format('%.3f', @)",
	"string.format('%g|%s', @, @)", "select(@, 'a', 'b', 'c')", "table.concat({1, 2, 3}, ',', @)",
	"string.byte('hello', @)", "tonumber(@)", "bit.band(@, 255)", "unpack({1, 2, 3}, @)",
	"string.find('hello', 'l', @)", "tostring(tonumber('10', @))",
}

// arithFixed are scripts on minus zero in constants (Lua 5.1 keeps one constant for 0 and
// -0 in a function, the first written) and on the math library's infinities and NaNs.
var arithFixed = []string{
	"local a = 0 return tostring(-0)", "return {tostring(-0), tostring(0)}", "return {tostring(0), tostring(-0)}",
	"local x = -0 local y = 0 return tostring(y)", "return tostring(0 * -1)", "local z = 0 return tostring(0 * -1)",
	"return tostring(-(0))", "local t = {-0} return tostring(t[1])", "return tostring(-0 .. '')",
	"return tostring(math.huge)", "return tostring(-math.huge)", "return tostring(math.log(-1))",
	"return tostring(math.acos(2))", "return tostring(math.log(0/0))", "return tostring(math.abs(0/0))",
	"return tostring(math.fmod(1, 0))", "return tostring(math.pow(-8, 1/3))", "return tostring(math.sqrt(-1))",
}

// genArithScript draws a script doing arithmetic on strings, a library call or a numeric
// for with a string operand; its reply or its error.
func genArithScript(r *rand.Rand) diffCmd {
	if r.IntN(12) == 0 {
		return cmd("EVAL", arithFixed[r.IntN(len(arithFixed))], "0")
	}
	s := arithStrings[r.IntN(len(arithStrings))]
	var setup []string
	var operand string
	upvalue := false
	switch r.IntN(6) {
	case 0:
		operand = luaQuote(s)
	case 1:
		setup = append(setup, "local x = "+luaQuote(s))
		operand = "x"
	case 2:
		setup = append(setup, "local t = {v = "+luaQuote(s)+"}")
		operand = "t.v"
	case 3:
		setup = append(setup, "local up = "+luaQuote(s))
		operand, upvalue = "up", true
	case 4:
		operand = "ARGV[1]"
	default:
		setup = append(setup, "redis.call('SET', KEYS[1], ARGV[1])")
		operand = "redis.call('GET', KEYS[1])"
	}
	other := arithNumbers[r.IntN(len(arithNumbers))]
	if r.IntN(3) == 0 {
		other = luaQuote(arithStrings[r.IntN(len(arithStrings))])
	}
	var expr string
	switch n := r.IntN(10); {
	case n < 5:
		op := difftest.Pick(r, "+", "-", "*", "/", "%", "^")
		if r.IntN(2) == 0 {
			expr = "tostring(" + operand + " " + op + " " + other + ")"
		} else {
			expr = "tostring(" + other + " " + op + " " + operand + ")"
		}
	case n < 6:
		expr = "tostring(-" + operand + ")"
	case n < 9:
		lib := arithLibs[r.IntN(len(arithLibs))]
		expr = "{" + strings.ReplaceAll(lib, "@", operand) + "}"
	default:
		setup = append(setup, "local n = 0", "for i = "+difftest.Pick(r, operand+", 3", "1, "+operand, "1, 3, "+operand)+
			" do n = n + 1; if n > 5 then break end end")
		expr = "n"
	}
	body := strings.Join(setup, "; ")
	if body != "" {
		body += "; "
	}
	switch {
	case upvalue || r.IntN(3) == 0:
		body += "local ok, e = pcall(function() return " + expr + " end); return {tostring(ok), e}"
	default:
		body += "return " + expr
	}
	return cmd("EVAL", body, "1", difftest.Key(r), s)
}

func TestDifferentialScriptArith(t *testing.T) { runDifferential(t, genArithScript) }

// constantScripts read the sandbox's globals and library fields, which a script takes as
// constants (scripting's rewrite.go): the errors must still name them as Lua does (global
// 'tonumber', field 'nosuch', 'floor' in a bad argument), writes to them must still fail,
// and a local of the same name must still win. The last ones return arrays, which the
// script's own returns build with the reply function: holes, nesting, calls and "..."
// expanding, in a branch, from a function of the script's (not rewritten).
var constantScripts = []string{
	`return math.floor("x")`, `return tonumber.x`, `return redis + 1`, `return redis()`, `return #tonumber`,
	`return -math`, `math.floor = 1`, `function math.f() end`, `string.x = 1`, `tonumber = 1`,
	`local math = {floor = function() return 7 end}; return math.floor(1)`, `return string.nosuch`,
	`return nosuch`, `return math.nosuch()`, `local function f() return tonumber('5') end return f()`,
	`return string.rep("ab", "x")`, `return ("x"):rep(2)`, `local t = {} t.floor = math.floor return t.floor(2.5)`,
	`return redis.call("PING")`, `return redis.pcall("NOSUCH")`, `local c = redis.call return c("ECHO", "x")`,
	`return {type(_G), type(redis.call), math.max(1, 2, 3), string.format("%5.1f", math.pi)}`,
	`for i = 1, 2 do local tonumber = tostring end return tonumber("3")`, `return cjson.encode({1, 2})`,
	`local x = string.len return x("abc") + #string.upper("ab")`, `return table.concat({1, 2}, math)`,
	`return bit.band(7, "x")`, `return string.sub("abc", {})`, `return math.floor()`,
	`return {1, nil, 3}`, `return {}`, `return {nil, 2}`, `return {1, 2, nil}`, `return {1, {2, {3, "x"}}, "y"}`,
	`return {redis.call("HMGET", "nokey", "a", "b")}`, `return {unpack({1, 2, 3})}`, `return {(unpack({1, 2, 3}))}`, `return {...}`,
	`if #KEYS == 0 then return {"none", 0.5, -2.9, true, false} end return 1`, `local t = {1, 2} return t`,
	`local function f() return {1, 2} end local t = f() t[3] = 3 return t`, `return {redis.call("HMGET", "nokey", "a"), 1}`,
	`return {1, error("x")}`, `return {1, redis.error_reply("E")}`, `return {redis.status_reply("OK"), 2}`,
	`return {string.rep("a", 3), tostring(1/3), 7 % 3}`, `for i = 1, 3 do if i == 2 then return {i, i * 2} end end`,
}

func TestDifferentialScriptConstants(t *testing.T) {
	i := 0
	runDifferential(t, func(*rand.Rand) diffCmd {
		i++
		return cmd("EVAL", constantScripts[i%len(constantScripts)], "0")
	})
}
