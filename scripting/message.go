package scripting

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// gopher-lua words its runtime errors its own way ("cannot perform add operation between
// nil and number"); a script sees Lua 5.1's ("attempt to perform arithmetic on a nil
// value"), in its replies and in what pcall returns. luaMessage rewrites the position's
// message; Lua 5.1 also names the variable at fault where it can ("local 'x'"), which
// gopher-lua's errors do not carry: those messages say "a nil value" without the name.
func luaMessage(msg string) string {
	pos, text := splitPosition(msg)
	switch {
	case strings.HasPrefix(text, "bad argument #"):
		// "bad argument #1 to max (...)": Lua quotes the function's name.
		rest := text[len("bad argument #"):]
		if i := strings.Index(rest, " to "); i >= 0 {
			name := rest[i+4:]
			if j := strings.Index(name, " ("); j >= 0 && !strings.HasPrefix(name, "'") {
				text = "bad argument #" + rest[:i] + " to '" + name[:j] + "'" + name[j:]
			}
		}
	case strings.HasPrefix(text, "cannot perform concat operation between "):
		a, b := operands(text[len("cannot perform concat operation between "):])
		culprit := a
		if a == "string" || a == "number" {
			culprit = b
		}
		text = "attempt to concatenate a " + culprit + " value"
	case strings.HasPrefix(text, "cannot perform ") && strings.Contains(text, " operation between "):
		a, b := operands(text[strings.Index(text, " operation between ")+len(" operation between "):])
		culprit := a
		if a == "number" {
			culprit = b
		}
		text = "attempt to perform arithmetic on a " + culprit + " value"
	case strings.HasPrefix(text, "attempt to index a non-table object("):
		typ := text[len("attempt to index a non-table object("):]
		if i := strings.IndexByte(typ, ')'); i >= 0 {
			text = "attempt to index a " + typ[:i] + " value"
		}
	case strings.HasPrefix(text, "invalid value (") && strings.HasSuffix(text, " in table for concat"):
		text = strings.TrimSuffix(text, "concat") + "'concat'"
	case text == "attempt to call a non-function object":
		text = "attempt to call a nil value"
	case strings.HasPrefix(text, "attempt to compare "):
		a, b, ok := strings.Cut(text[len("attempt to compare "):], " with ")
		if ok && a == b {
			text = "attempt to compare two " + a + " values"
		}
	case text == "for statement init must be a number":
		text = "'for' initial value must be a number"
	case text == "for statement limit must be a number":
		text = "'for' limit must be a number"
	case text == "for statement step must be a number":
		text = "'for' step must be a number"
	default:
		return msg
	}
	return pos + text
}

// splitPosition splits "chunk:line: message" into its position and its message.
func splitPosition(msg string) (pos, text string) {
	i := strings.Index(msg, ": ")
	if i < 0 {
		return "", msg
	}
	head := msg[:i]
	j := strings.LastIndexByte(head, ':')
	if j < 0 || j == len(head)-1 {
		return "", msg
	}
	for _, c := range head[j+1:] {
		if c < '0' || c > '9' {
			return "", msg
		}
	}
	return msg[:i+2], msg[i+2:]
}

// operands reads "A and B" of gopher-lua's operation errors.
func operands(s string) (a, b string) {
	a, b, _ = strings.Cut(s, " and ")
	return a, b
}

// luaError is an error value as a script sees it: a gopher-lua message rewritten.
func luaError(v lua.LValue) lua.LValue {
	if s, ok := v.(lua.LString); ok {
		return lua.LString(luaMessage(string(s)))
	}
	return v
}
