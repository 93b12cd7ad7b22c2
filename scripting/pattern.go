package scripting

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's patterns and the string functions that use them (string.find, match, gmatch
// and gsub), written again from the manual and lstrlib.c's behaviour, because gopher-lua's
// are neither Lua 5.1's nor linear: its gsub found every match first and then spliced each
// replacement into a copy of the whole string, so string.gsub(string.rep('a', 1e5), 'a',
// 'b') copied 100,000 strings of 100,000 bytes (21 s, on the event loop, where Redis takes
// milliseconds); its gmatch finds every match before the loop asks for the first, and its
// find and match ran 10 to 80 times slower than Redis's.
//
// The matcher is a backtracking one as Lua's: match walks the pattern item by item and
// recurses only where it must try alternatives (?, *, +, -, captures), so its depth is
// bounded by the pattern's length, never the subject's. A pattern is read as C reads it:
// it ends at its first NUL byte, and a read past either end gives a NUL (so %f sees the
// subject's start and end as '\0', and a replacement ending in '%' adds a NUL, as Redis's
// Lua does). Results are built in one buffer: linear in the subject and the output.

// maxCaptures is LUA_MAXCAPTURES.
const maxCaptures = 32

// specials are the characters that make string.find match a pattern rather than search
// for plain text (Lua 5.1's SPECIALS).
const specials = "^$*+?.([%-"

// A capture's length while it is open, and for a position capture "()".
const (
	capUnfinished = -1
	capPosition   = -2
)

// matcher is one match's state (Lua's MatchState): the subject, the pattern, and the
// captures found so far. Positions are byte offsets into src; -1 is no match.
type matcher struct {
	L       *lua.LState
	st      *state // told of each step (worked), so that a long match can be killed
	src     string
	pat     string
	level   int // captures opened, finished or not
	capture [maxCaptures]struct{ init, len int }
}

// newMatcher is a matcher of pattern pat (up to its first NUL, as C reads it) on src.
func newMatcher(L *lua.LState, st *state, src, pat string) *matcher {
	return &matcher{L: L, st: st, src: src, pat: cPattern(pat)}
}

// cPattern is pat as a C string: up to its first NUL.
func cPattern(pat string) string {
	if i := strings.IndexByte(pat, 0); i >= 0 {
		return pat[:i]
	}
	return pat
}

// pc is the pattern's byte at p, NUL past its end.
func (m *matcher) pc(p int) byte {
	if p < len(m.pat) {
		return m.pat[p]
	}
	return 0
}

// sc is the subject's byte at s, NUL past its end.
func (m *matcher) sc(s int) byte {
	if s < len(m.src) {
		return m.src[s]
	}
	return 0
}

// classEnd is where the single-character class at p ends.
func (m *matcher) classEnd(p int) int {
	c := m.pc(p)
	p++
	switch c {
	case '%':
		if p >= len(m.pat) {
			luaLError(m.L, "malformed pattern (ends with '%%')")
		}
		return p + 1
	case '[':
		if m.pc(p) == '^' {
			p++
		}
		for { // the first character is part of the set, even a ']'
			if p >= len(m.pat) {
				luaLError(m.L, "malformed pattern (missing ']')")
			}
			c := m.pat[p]
			p++
			if c == '%' && p < len(m.pat) {
				p++ // an escape, such as "%]"
			}
			if m.pc(p) == ']' {
				return p + 1
			}
		}
	}
	return p
}

// matchClass reports whether c is in the class %cl, with C's ctype in the "C" locale; an
// upper-case class is the complement, and any other character stands for itself.
func matchClass(c, cl byte) bool {
	var res bool
	switch cl | 0x20 {
	case 'a':
		res = isAlpha(int(c))
	case 'c':
		res = c < 0x20 || c == 0x7f
	case 'd':
		res = isDigit(c)
	case 'l':
		res = c >= 'a' && c <= 'z'
	case 'p':
		res = c > 0x20 && c < 0x7f && !isAlpha(int(c)) && !isDigit(c)
	case 's':
		res = c == ' ' || (c >= '\t' && c <= '\r')
	case 'u':
		res = c >= 'A' && c <= 'Z'
	case 'w':
		res = isAlpha(int(c)) || isDigit(c)
	case 'x':
		res = isHex(c)
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if cl >= 'a' && cl <= 'z' {
		return res
	}
	if cl >= 'A' && cl <= 'Z' {
		return !res
	}
	return cl == c // cl|0x20 was a letter, cl is not one ('!' | 0x20 is 'a')
}

// matchBracket reports whether c is in the set [...] from p (its '[') to ec (its ']').
func (m *matcher) matchBracket(c byte, p, ec int) bool {
	in := true
	if m.pc(p+1) == '^' {
		in = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case m.pat[p] == '%':
			p++
			if matchClass(c, m.pc(p)) {
				return in
			}
		case m.pc(p+1) == '-' && p+2 < ec:
			p += 2
			if m.pat[p-2] <= c && c <= m.pat[p] {
				return in
			}
		case m.pat[p] == c:
			return in
		}
	}
	return !in
}

// singleMatch reports whether c matches the single-character class from p to ep.
func (m *matcher) singleMatch(c byte, p, ep int) bool {
	switch m.pat[p] {
	case '.':
		return true
	case '%':
		return matchClass(c, m.pc(p+1))
	case '[':
		return m.matchBracket(c, p, ep-1)
	}
	return m.pat[p] == c
}

// match matches the pattern from p against the subject from s: the end of the match, or -1.
// Where Lua's tail-calls itself it loops.
func (m *matcher) match(s, p int) int {
	for {
		m.st.worked(m.L, 1)
		if p >= len(m.pat) {
			return s
		}
		switch m.pat[p] {
		case '(':
			if m.pc(p+1) == ')' {
				return m.startCapture(s, p+2, capPosition)
			}
			return m.startCapture(s, p+1, capUnfinished)
		case ')':
			return m.endCapture(s, p+1)
		case '%':
			switch c := m.pc(p + 1); {
			case c == 'b':
				if s = m.matchBalance(s, p+2); s < 0 {
					return -1
				}
				p += 4
				continue
			case c == 'f':
				p += 2
				if m.pc(p) != '[' {
					luaLError(m.L, "missing '[' after '%%f' in pattern")
				}
				ep := m.classEnd(p)
				var prev byte
				if s > 0 {
					prev = m.src[s-1]
				}
				if m.matchBracket(prev, p, ep-1) || !m.matchBracket(m.sc(s), p, ep-1) {
					return -1
				}
				p = ep
				continue
			case isDigit(c): // a back reference, %1 to %9
				if s = m.matchCapture(s, c); s < 0 {
					return -1
				}
				p += 2
				continue
			}
		case '$':
			if p+1 == len(m.pat) {
				if s == len(m.src) {
					return s
				}
				return -1
			}
		}
		// A single-character class, and what repeats it.
		ep := m.classEnd(p)
		ok := s < len(m.src) && m.singleMatch(m.src[s], p, ep)
		switch m.pc(ep) {
		case '?':
			if ok {
				if r := m.match(s+1, ep+1); r >= 0 {
					return r
				}
			}
			p = ep + 1
			continue
		case '*':
			return m.maxExpand(s, p, ep)
		case '+':
			if !ok {
				return -1
			}
			return m.maxExpand(s+1, p, ep)
		case '-':
			return m.minExpand(s, p, ep)
		}
		if !ok {
			return -1
		}
		s++
		p = ep
	}
}

// matchBalance matches %bxy at p: an x, and the text up to the y that balances it.
func (m *matcher) matchBalance(s, p int) int {
	if p+1 >= len(m.pat) {
		luaLError(m.L, "unbalanced pattern")
	}
	if m.sc(s) != m.pat[p] {
		return -1
	}
	open, close := m.pat[p], m.pat[p+1]
	depth := 1
	for s++; s < len(m.src); s++ {
		m.st.worked(m.L, 1)
		switch m.src[s] {
		case close:
			if depth--; depth == 0 {
				return s + 1
			}
		case open:
			depth++
		}
	}
	return -1
}

// maxExpand matches as many repetitions of the class at p as it can, then gives them back
// one at a time until the rest of the pattern matches.
func (m *matcher) maxExpand(s, p, ep int) int {
	i := 0
	for s+i < len(m.src) && m.singleMatch(m.src[s+i], p, ep) {
		i++
		m.st.worked(m.L, 1)
	}
	for ; i >= 0; i-- {
		if r := m.match(s+i, ep+1); r >= 0 {
			return r
		}
	}
	return -1
}

// minExpand matches as few repetitions of the class at p as the rest of the pattern allows.
func (m *matcher) minExpand(s, p, ep int) int {
	for {
		if r := m.match(s, ep+1); r >= 0 {
			return r
		}
		if s < len(m.src) && m.singleMatch(m.src[s], p, ep) {
			s++
		} else {
			return -1
		}
	}
}

func (m *matcher) startCapture(s, p, what int) int {
	if m.level >= maxCaptures {
		luaLError(m.L, "too many captures")
	}
	m.capture[m.level].init, m.capture[m.level].len = s, what
	m.level++
	r := m.match(s, p)
	if r < 0 {
		m.level--
	}
	return r
}

func (m *matcher) endCapture(s, p int) int {
	l := -1
	for i := m.level - 1; i >= 0; i-- {
		if m.capture[i].len == capUnfinished {
			l = i
			break
		}
	}
	if l < 0 {
		luaLError(m.L, "invalid pattern capture")
	}
	m.capture[l].len = s - m.capture[l].init
	r := m.match(s, p)
	if r < 0 {
		m.capture[l].len = capUnfinished
	}
	return r
}

// matchCapture matches back reference %c: the text capture c-'0' matched.
func (m *matcher) matchCapture(s int, c byte) int {
	l := int(c) - '1'
	if l < 0 || l >= m.level || m.capture[l].len == capUnfinished {
		luaLError(m.L, "invalid capture index")
	}
	init, n := m.capture[l].init, m.capture[l].len
	if n < 0 { // a position: C compares its length as a size_t, larger than any subject
		return -1
	}
	if len(m.src)-s >= n && m.src[init:init+n] == m.src[s:s+n] {
		return s + n
	}
	return -1
}

// captureValue is capture i of the match from s to e: the whole match when the pattern has
// no captures and i is 0, a position as a number.
func (m *matcher) captureValue(i, s, e int) lua.LValue {
	text, pos := m.captureText(i, s, e)
	if pos > 0 {
		return lua.LNumber(pos)
	}
	return lua.LString(text)
}

// captureText is capture i of the match from s to e as text, or its position (pos > 0)
// for a position capture.
func (m *matcher) captureText(i, s, e int) (text string, pos int) {
	if i >= m.level {
		if i != 0 {
			luaLError(m.L, "invalid capture index")
		}
		return m.src[s:e], 0
	}
	c := m.capture[i]
	switch c.len {
	case capUnfinished:
		luaLError(m.L, "unfinished capture")
	case capPosition:
		return "", c.init + 1
	}
	return m.src[c.init : c.init+c.len], 0
}

// pushCaptures pushes the captures of the match from s to e (the whole match when there
// are none and whole is set) and returns how many.
func (m *matcher) pushCaptures(s, e int, whole bool) int {
	n := m.level
	if n == 0 && whole {
		n = 1
	}
	for i := 0; i < n; i++ {
		m.L.Push(m.captureValue(i, s, e))
	}
	return n
}

// posRelative is Lua 5.1's posrelat: a negative position counts from the end.
func posRelative(pos int64, n int) int64 {
	if pos < 0 {
		pos += int64(n) + 1
	}
	return max(pos, 0)
}

// strFind is string.find(s, pattern [, init [, plain]]).
func (st *state) strFind(L *lua.LState) int { return st.findAux(L, true) }

// strMatch is string.match(s, pattern [, init]).
func (st *state) strMatch(L *lua.LState) int { return st.findAux(L, false) }

// findAux is string.find when find is set, string.match when not.
func (st *state) findAux(L *lua.LState, find bool) int {
	src := checkLString(L, 1)
	pat := checkLString(L, 2)
	init := int(min(posRelative(optInteger(L, 3, 1), len(src))-1, int64(len(src))))
	init = max(init, 0)
	if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(cPattern(pat), specials)) {
		if i := strings.Index(src[init:], pat); i >= 0 {
			L.Push(lua.LNumber(init + i + 1))
			L.Push(lua.LNumber(init + i + len(pat)))
			return 2
		}
		L.Push(lua.LNil)
		return 1
	}
	m := newMatcher(L, st, src, pat)
	anchor := len(m.pat) > 0 && m.pat[0] == '^'
	if anchor {
		m.pat = m.pat[1:]
	}
	for s := init; ; s++ {
		m.level = 0
		if e := m.match(s, 0); e >= 0 {
			if find {
				L.Push(lua.LNumber(s + 1))
				L.Push(lua.LNumber(e))
				return m.pushCaptures(0, 0, false) + 2
			}
			return m.pushCaptures(s, e, true)
		}
		if anchor || s >= len(src) {
			break
		}
	}
	L.Push(lua.LNil)
	return 1
}

// strGmatch is string.gmatch(s, pattern): an iterator over the matches, each one's
// captures (or the whole match). As in Lua 5.1, a leading '^' is an ordinary character.
func (st *state) strGmatch(L *lua.LState) int {
	src := checkLString(L, 1)
	pat := checkLString(L, 2)
	m := newMatcher(L, st, src, pat)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		m.L = L
		for s := pos; s <= len(src); s++ {
			m.level = 0
			if e := m.match(s, 0); e >= 0 {
				pos = e
				if e == s { // an empty match: go on one past it
					pos++
				}
				return m.pushCaptures(s, e, true)
			}
		}
		return 0
	}))
	return 1
}

// strGsub is string.gsub(s, pattern, repl [, n]): s with each match (the first n) replaced
// by repl (a string with %0 to %9 and %%, a table indexed by the first capture, or a
// function called with the captures), and the number of matches.
func (st *state) strGsub(L *lua.LState) int {
	src := checkLString(L, 1)
	pat := checkLString(L, 2)
	repl := L.Get(3)
	maxN := optInt(L, 4, len(src)+1)
	m := newMatcher(L, st, src, pat)
	anchor := len(m.pat) > 0 && m.pat[0] == '^'
	if anchor {
		m.pat = m.pat[1:]
	}
	var news string // the replacement string
	switch v := repl.(type) {
	case lua.LString, lua.LNumber:
		news = string(luaString(v))
	case *lua.LFunction, *lua.LTable:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	var b strings.Builder
	st.room(L, &b, len(src))
	n, s := 0, 0
	for n < maxN {
		m.level = 0
		e := m.match(s, 0)
		if e >= 0 {
			n++
			before := b.Len()
			m.addValue(&b, repl, news, s, e)
			if b.Len() > maxString {
				L.RaiseError("not enough memory")
			}
			st.worked(L, b.Len()-before)
		}
		if e > s { // a non-empty match: go on after it
			s = e
		} else if s < len(src) {
			st.room(L, &b, 1)
			b.WriteByte(src[s])
			s++
		} else {
			break
		}
		if anchor {
			break
		}
	}
	st.room(L, &b, len(src)-s)
	b.WriteString(src[s:])
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(n))
	return 2
}

// addValue writes the replacement of the match from s to e.
func (m *matcher) addValue(b *strings.Builder, repl lua.LValue, news string, s, e int) {
	L := m.L
	var v lua.LValue
	switch r := repl.(type) {
	case *lua.LFunction:
		L.Push(r)
		L.Call(m.pushCaptures(s, e, true), 1)
		v = L.Get(-1)
		L.Pop(1)
	case *lua.LTable:
		v = L.GetTable(r, m.captureValue(0, s, e))
	default:
		m.addString(b, news, s, e)
		return
	}
	switch {
	case !lua.LVAsBool(v): // nil or false: the match stays
		m.st.room(L, b, e-s)
		b.WriteString(m.src[s:e])
	case !isStringLike(v):
		luaLError(L, "invalid replacement value (a %s)", v.Type().String())
	default:
		text := string(luaString(v))
		m.st.room(L, b, len(text))
		b.WriteString(text)
	}
}

// addString writes replacement string news for the match from s to e: %0 is the match,
// %1 to %9 its captures, '%' before any other character that character (a '%' at the end,
// the NUL C reads after it).
func (m *matcher) addString(b *strings.Builder, news string, s, e int) {
	for i := 0; i < len(news); i++ {
		c := news[i]
		m.st.room(m.L, b, 1)
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		i++
		c = 0
		if i < len(news) {
			c = news[i]
		}
		switch {
		case !isDigit(c):
			b.WriteByte(c)
		case c == '0':
			m.st.room(m.L, b, e-s)
			b.WriteString(m.src[s:e])
		default:
			text, pos := m.captureText(int(c-'1'), s, e)
			if pos > 0 {
				text = itoa(pos)
			}
			m.st.room(m.L, b, len(text))
			b.WriteString(text)
		}
	}
}
