package scripting

import (
	"errors"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// A script that does not compile gets Lua 5.1's message, which scripts' authors and tests
// see: "user_script:1: '=' expected near '<eof>'". gopher-lua's parser words its errors its
// own way ("line:1(column:5) near 'x': syntax error"), so every script is first checked
// here by a lexer and a recursive-descent parser that follow Lua 5.1's (llex.c, lparser.c)
// closely enough to stop at the same token with the same message. They build nothing:
// gopher-lua compiles the scripts they pass. A check costs about what the compile does, once
// per script.

// Lua 5.1 tokens past the single characters.
const (
	tkAnd = 257 + iota
	tkBreak
	tkDo
	tkElse
	tkElseif
	tkEnd
	tkFalse
	tkFor
	tkFunction
	tkIf
	tkIn
	tkLocal
	tkNil
	tkNot
	tkOr
	tkRepeat
	tkReturn
	tkThen
	tkTrue
	tkUntil
	tkWhile
	tkConcat
	tkDots
	tkEq
	tkGe
	tkLe
	tkNe
	tkNumber
	tkName
	tkString
	tkEOS
)

var reserved = map[string]int{
	"and": tkAnd, "break": tkBreak, "do": tkDo, "else": tkElse, "elseif": tkElseif, "end": tkEnd,
	"false": tkFalse, "for": tkFor, "function": tkFunction, "if": tkIf, "in": tkIn, "local": tkLocal,
	"nil": tkNil, "not": tkNot, "or": tkOr, "repeat": tkRepeat, "return": tkReturn, "then": tkThen,
	"true": tkTrue, "until": tkUntil, "while": tkWhile,
}

var tokenNames = map[int]string{
	tkConcat: "..", tkDots: "...", tkEq: "==", tkGe: ">=", tkLe: "<=", tkNe: "~=",
	tkNumber: "<number>", tkName: "<name>", tkString: "<string>", tkEOS: "<eof>",
}

func init() {
	for w, t := range reserved {
		tokenNames[t] = w
	}
}

// token2str is luaX_token2str.
func token2str(t int) string {
	if t < 257 {
		if t < 32 || t == 127 {
			return "char(" + strconv.Itoa(t) + ")"
		}
		return string(rune(t))
	}
	return tokenNames[t]
}

// syntaxError is a compile error with Lua 5.1's text.
type syntaxError struct{ msg string }

// Limits of Lua 5.1's parser (luaconf.h).
const (
	maxCCalls = 200 // LUAI_MAXCCALLS: nesting of blocks and expressions
	maxVars   = 200 // LUAI_MAXVARS: active locals in a function
	maxStack  = 250 // MAXSTACK: registers of a function
	perFlush  = 50  // LFIELDS_PER_FLUSH: list items a constructor holds in registers
)

// lexer reads Lua 5.1 tokens.
type lexer struct {
	src      string
	pos      int // the byte after current
	current  int // the current character, or -1 at the end
	line     int // lines read so far (linenumber)
	lastline int // the line of the last token consumed
	chunk    string
	buf      []byte // the text of the token being read

	tok     int    // the current token
	tokText string // its text, for names, strings and numbers
	ahead   int    // a token read ahead, or tkEOS+1 when none
	aheadT  string
	aheadL  int

	levels int
	fn     *funcState
}

// funcState is what the parser tracks of a function: whether it takes "...", its active
// locals, and its blocks (for break).
type funcState struct {
	prev    *funcState
	vararg  bool
	actvars int
	freereg int // registers in use: the locals, then the values being built
	blocks  []blockState
	line    int // where the function starts; 0 for the main chunk
}

type blockState struct {
	loop    bool
	nactvar int
}

const noAhead = tkEOS + 1

// checkSyntax checks src as Lua 5.1 would compile it under chunk's name, and returns its
// error message, or "" when it compiles.
func checkSyntax(src, chunk string) (msg string) {
	ls := &lexer{src: src, line: 1, chunk: chunk, ahead: noAhead}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(syntaxError)
			if !ok {
				panic(r)
			}
			msg = se.msg
		}
	}()
	ls.next()
	ls.fn = &funcState{vararg: true}
	ls.advance()
	ls.chunk2()
	ls.check(tkEOS)
	return ""
}

// next reads the next character.
func (ls *lexer) next() {
	if ls.pos < len(ls.src) {
		ls.current = int(ls.src[ls.pos])
		ls.pos++
	} else {
		ls.current = -1
		ls.pos = len(ls.src) + 1
	}
}

func (ls *lexer) save(c int)      { ls.buf = append(ls.buf, byte(c)) }
func (ls *lexer) saveNext()       { ls.save(ls.current); ls.next() }
func (ls *lexer) isNewline() bool { return ls.current == '\n' || ls.current == '\r' }

// lexError is luaX_lexerror: the message with the chunk and line, and "near" the token's
// text unless token is 0.
func (ls *lexer) lexError(msg string, token int) {
	msg = ls.chunk + ":" + strconv.Itoa(ls.line) + ": " + msg
	if token != 0 {
		msg += " near '" + ls.txtToken(token) + "'"
	}
	panic(syntaxError{msg})
}

// txtToken is the text an error shows for token: what was read for names, strings and
// numbers, the token's name otherwise.
func (ls *lexer) txtToken(token int) string {
	switch token {
	case tkName, tkString, tkNumber:
		return string(ls.buf)
	}
	return token2str(token)
}

// syntaxErr is luaX_syntaxerror: an error near the current token.
func (ls *lexer) syntaxErr(msg string) {
	if ls.tok == tkName || ls.tok == tkString || ls.tok == tkNumber {
		ls.buf = append(ls.buf[:0], ls.tokText...)
	}
	ls.lexError(msg, ls.tok)
}

func (ls *lexer) incLine() {
	old := ls.current
	ls.next()
	if ls.isNewline() && ls.current != old {
		ls.next() // \n\r or \r\n
	}
	ls.line++
}

// advance is luaX_next: the next token becomes the current one.
func (ls *lexer) advance() {
	ls.lastline = ls.line
	if ls.ahead != noAhead {
		ls.tok, ls.tokText = ls.ahead, ls.aheadT
		ls.ahead = noAhead
		return
	}
	ls.tok = ls.lex()
	ls.tokText = string(ls.buf)
}

// lookahead is luaX_lookahead.
func (ls *lexer) lookahead() int {
	ls.ahead = ls.lex()
	ls.aheadT = string(ls.buf)
	ls.aheadL = ls.line
	return ls.ahead
}

// lex reads one token (llex).
func (ls *lexer) lex() int {
	ls.buf = ls.buf[:0]
	for {
		switch c := ls.current; c {
		case '\n', '\r':
			ls.incLine()
		case '-':
			ls.next()
			if ls.current != '-' {
				return '-'
			}
			ls.next()
			if ls.current == '[' {
				sep := ls.skipSep()
				ls.buf = ls.buf[:0]
				if sep >= 0 {
					ls.readLongString(false, sep)
					ls.buf = ls.buf[:0]
					continue
				}
			}
			for !ls.isNewline() && ls.current != -1 {
				ls.next()
			}
		case '[':
			sep := ls.skipSep()
			if sep >= 0 {
				ls.readLongString(true, sep)
				return tkString
			}
			if sep == -1 {
				return '['
			}
			ls.lexError("invalid long string delimiter", tkString)
		case '=':
			ls.next()
			if ls.current != '=' {
				return '='
			}
			ls.next()
			return tkEq
		case '<':
			ls.next()
			if ls.current != '=' {
				return '<'
			}
			ls.next()
			return tkLe
		case '>':
			ls.next()
			if ls.current != '=' {
				return '>'
			}
			ls.next()
			return tkGe
		case '~':
			ls.next()
			if ls.current != '=' {
				return '~'
			}
			ls.next()
			return tkNe
		case '"', '\'':
			ls.readString(c)
			return tkString
		case '.':
			ls.saveNext()
			if ls.current == '.' {
				ls.saveNext()
				if ls.current == '.' {
					ls.saveNext()
					return tkDots
				}
				return tkConcat
			}
			if !digitc(ls.current) {
				return '.'
			}
			ls.readNumeral()
			return tkNumber
		case -1:
			return tkEOS
		default:
			switch {
			case c == ' ' || c == '\f' || c == '\t' || c == '\v':
				ls.next()
			case digitc(c):
				ls.readNumeral()
				return tkNumber
			case isAlpha(c) || c == '_':
				for alnumc(ls.current) || ls.current == '_' {
					ls.saveNext()
				}
				if t, ok := reserved[string(ls.buf)]; ok {
					return t
				}
				return tkName
			default:
				ls.next()
				return c
			}
		}
	}
}

func isAlpha(c int) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }
func digitc(c int) bool  { return '0' <= c && c <= '9' }
func alnumc(c int) bool  { return isAlpha(c) || digitc(c) }

// readNumeral reads a number as Lua 5.1 does: digits and points, an exponent's sign, then
// any letters, digits and underscores; the whole must read as a number.
func (ls *lexer) readNumeral() {
	for digitc(ls.current) || ls.current == '.' {
		ls.saveNext()
	}
	if ls.current == 'e' || ls.current == 'E' {
		ls.saveNext()
		if ls.current == '+' || ls.current == '-' {
			ls.saveNext()
		}
	}
	for alnumc(ls.current) || ls.current == '_' {
		ls.saveNext()
	}
	if _, ok := str2number(string(ls.buf)); !ok {
		ls.lexError("malformed number", tkNumber)
	}
}

// skipSep reads "[" or "]" and its equal signs: their count when the bracket repeats,
// else -count-1.
func (ls *lexer) skipSep() int {
	s := ls.current
	ls.saveNext()
	count := 0
	for ls.current == '=' {
		ls.saveNext()
		count++
	}
	if ls.current == s {
		return count
	}
	return -count - 1
}

func (ls *lexer) readLongString(isString bool, sep int) {
	ls.saveNext() // the second [
	if ls.isNewline() {
		ls.incLine()
	}
	for {
		switch ls.current {
		case -1:
			if isString {
				ls.lexError("unfinished long string", tkEOS)
			}
			ls.lexError("unfinished long comment", tkEOS)
		case ']':
			if ls.skipSep() == sep {
				ls.saveNext()
				return
			}
		case '\n', '\r':
			ls.save('\n')
			ls.incLine()
			if !isString {
				ls.buf = ls.buf[:0]
			}
		default:
			if isString {
				ls.saveNext()
			} else {
				ls.next()
			}
		}
	}
}

func (ls *lexer) readString(del int) {
	ls.saveNext()
	for ls.current != del {
		switch ls.current {
		case -1:
			ls.lexError("unfinished string", tkEOS)
		case '\n', '\r':
			ls.lexError("unfinished string", tkString)
		case '\\':
			ls.next()
			c := -1
			switch ls.current {
			case 'a':
				c = '\a'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			case '\n', '\r':
				ls.save('\n')
				ls.incLine()
				continue
			case -1:
				continue
			default:
				if !digitc(ls.current) {
					ls.saveNext()
					continue
				}
				v := 0
				for i := 0; i < 3 && digitc(ls.current); i++ {
					v = 10*v + ls.current - '0'
					ls.next()
				}
				if v > 255 {
					ls.lexError("escape sequence too large", tkString)
				}
				ls.save(v)
				continue
			}
			ls.save(c)
			ls.next()
		default:
			ls.saveNext()
		}
	}
	ls.saveNext()
}

// The parser: lparser.c's grammar, checking only.

func (ls *lexer) check(t int) {
	if ls.tok != t {
		ls.errorExpected(t)
	}
}

func (ls *lexer) errorExpected(t int) { ls.syntaxErr("'" + token2str(t) + "' expected") }

func (ls *lexer) testNext(t int) bool {
	if ls.tok == t {
		ls.advance()
		return true
	}
	return false
}

func (ls *lexer) checkNext(t int) {
	ls.check(t)
	ls.advance()
}

func (ls *lexer) checkMatch(what, who, where int) {
	if ls.testNext(what) {
		return
	}
	if where == ls.line {
		ls.errorExpected(what)
	}
	ls.syntaxErr("'" + token2str(what) + "' expected (to close '" + token2str(who) + "' at line " + strconv.Itoa(where) + ")")
}

func (ls *lexer) checkName() {
	ls.check(tkName)
	ls.advance()
}

func (ls *lexer) enterLevel() {
	ls.levels++
	if ls.levels > maxCCalls {
		ls.lexError("chunk has too many syntax levels", 0)
	}
}

func (ls *lexer) leaveLevel() { ls.levels-- }

func blockFollow(t int) bool {
	switch t {
	case tkElse, tkElseif, tkEnd, tkUntil, tkEOS:
		return true
	}
	return false
}

// declare checks Lua 5.1's limit of locals per function as new_localvar does, for the
// n-th of the locals a statement declares.
func (ls *lexer) declare(n int) {
	fs := ls.fn
	if fs.actvars+n+1 > maxVars {
		where := "main function"
		if fs.line > 0 {
			where = "function at line " + strconv.Itoa(fs.line)
		}
		ls.lexError(where+" has more than "+strconv.Itoa(maxVars)+" local variables", 0)
	}
}

func (ls *lexer) enterBlock(loop bool) {
	ls.fn.blocks = append(ls.fn.blocks, blockState{loop: loop, nactvar: ls.fn.actvars})
}

func (ls *lexer) leaveBlock() {
	fs := ls.fn
	b := fs.blocks[len(fs.blocks)-1]
	fs.blocks = fs.blocks[:len(fs.blocks)-1]
	fs.actvars = b.nactvar
}

func (ls *lexer) chunk2() {
	ls.enterLevel()
	for last := false; !last && !blockFollow(ls.tok); {
		last = ls.statement()
		ls.testNext(';')
		ls.fn.freereg = ls.fn.actvars
	}
	ls.leaveLevel()
}

// reserve takes n registers, as luaK_reserveregs: a function needs its values in
// registers (a call's function and arguments, a constructor's list items), and past
// MAXSTACK it does not compile. Only those uses are counted: an operator's temporaries
// are not, so a script that runs out of registers only through deep expressions is
// accepted here (gopher-lua then refuses it in its own words).
func (ls *lexer) reserve(n int) {
	fs := ls.fn
	if fs.freereg+n >= maxStack {
		ls.syntaxErr("function or expression too complex")
	}
	fs.freereg += n
}

func (ls *lexer) block() {
	ls.enterBlock(false)
	ls.chunk2()
	ls.leaveBlock()
}

// statement parses one statement and reports whether it must be the block's last.
func (ls *lexer) statement() bool {
	line := ls.line
	switch ls.tok {
	case tkIf:
		ls.testThenBlock()
		for ls.tok == tkElseif {
			ls.testThenBlock()
		}
		if ls.testNext(tkElse) {
			ls.block()
		}
		ls.checkMatch(tkEnd, tkIf, line)
	case tkWhile:
		ls.advance()
		ls.expr()
		ls.enterBlock(true)
		ls.checkNext(tkDo)
		ls.block()
		ls.checkMatch(tkEnd, tkWhile, line)
		ls.leaveBlock()
	case tkDo:
		ls.advance()
		ls.block()
		ls.checkMatch(tkEnd, tkDo, line)
	case tkFor:
		ls.forStat(line)
	case tkRepeat:
		ls.enterBlock(true)
		ls.enterBlock(false)
		ls.advance()
		ls.chunk2()
		ls.checkMatch(tkUntil, tkRepeat, line)
		ls.expr()
		ls.leaveBlock()
		ls.leaveBlock()
	case tkFunction:
		ls.advance()
		ls.checkName()
		for ls.tok == '.' {
			ls.advance()
			ls.checkName()
		}
		if ls.tok == ':' {
			ls.advance()
			ls.checkName()
		}
		ls.body(line)
	case tkLocal:
		ls.advance()
		if ls.testNext(tkFunction) {
			ls.declare(0)
			ls.checkName()
			ls.fn.actvars++
			ls.body(ls.line)
		} else {
			n := 0
			for {
				ls.declare(n)
				ls.checkName()
				n++
				if !ls.testNext(',') {
					break
				}
			}
			nexps, open := 0, false
			if ls.testNext('=') {
				nexps, open = ls.exprList()
			}
			ls.adjustAssign(n, nexps, open)
			ls.fn.actvars += n
		}
	case tkReturn:
		ls.advance()
		if !blockFollow(ls.tok) && ls.tok != ';' {
			if n, open := ls.exprList(); n > 1 && !open {
				ls.reserve(1)
			}
		}
		return true
	case tkBreak:
		ls.advance()
		loop := false
		for _, b := range ls.fn.blocks {
			loop = loop || b.loop
		}
		if !loop {
			ls.syntaxErr("no loop to break")
		}
		return true
	default:
		if kind := ls.primaryExp(); kind != expCall {
			ls.restAssign(kind)
		}
	}
	return false
}

func (ls *lexer) testThenBlock() {
	ls.advance()
	ls.expr()
	ls.checkNext(tkThen)
	ls.block()
}

func (ls *lexer) forStat(line int) {
	ls.enterBlock(true)
	ls.advance()
	ls.checkName()
	for i := 0; i < 4; i++ { // three control variables, then the first name
		ls.declare(i)
	}
	switch ls.tok {
	case '=':
		ls.advance()
		ls.expr()
		ls.checkNext(',')
		ls.expr()
		if ls.testNext(',') {
			ls.expr()
		}
		ls.fn.actvars += 3
		ls.forBody(1)
	case ',', tkIn:
		n := 1
		for ls.testNext(',') {
			ls.checkName()
			ls.declare(3 + n)
			n++
		}
		ls.checkNext(tkIn)
		ls.exprList()
		ls.fn.actvars += 3
		ls.forBody(n)
	default:
		ls.syntaxErr("'=' or 'in' expected")
	}
	ls.checkMatch(tkEnd, tkFor, line)
	ls.leaveBlock()
}

func (ls *lexer) forBody(nvars int) {
	ls.checkNext(tkDo)
	ls.enterBlock(false)
	ls.fn.actvars += nvars
	ls.block()
	ls.leaveBlock()
}

func (ls *lexer) restAssign(kind int) {
	if kind != expVar {
		ls.syntaxErr("syntax error")
	}
	if ls.testNext(',') {
		ls.restAssign(ls.primaryExp())
		return
	}
	ls.checkNext('=')
	ls.exprList()
}

// body parses a function's parameters and block; line is where "function" stands.
func (ls *lexer) body(line int) {
	fs := &funcState{prev: ls.fn, line: line}
	ls.fn = fs
	ls.checkNext('(')
	if ls.tok != ')' {
		n := 0
		for {
			switch ls.tok {
			case tkName:
				ls.declare(n)
				ls.advance()
				n++
			case tkDots:
				ls.advance()
				ls.declare(n) // Lua 5.1 gives "..." a local "arg"
				n++
				fs.vararg = true
			default:
				ls.syntaxErr("<name> or '...' expected")
			}
			if fs.vararg || !ls.testNext(',') {
				break
			}
		}
		fs.actvars += n
	}
	ls.checkNext(')')
	ls.chunk2()
	ls.checkMatch(tkEnd, tkFunction, line)
	ls.fn = fs.prev
}

// exprList parses a list of expressions whose values go to consecutive registers, one
// taken at each comma for the value before it; it returns their count and whether the
// last is open (a call or "...", whose values are not counted).
func (ls *lexer) exprList() (n int, open bool) {
	open = ls.expr()
	n = 1
	for ls.testNext(',') {
		ls.reserve(1)
		open = ls.expr()
		n++
	}
	return n, open
}

// adjustAssign takes the registers of nvars values from nexps expressions, as Lua's
// adjust_assign.
func (ls *lexer) adjustAssign(nvars, nexps int, open bool) {
	extra := nvars - nexps
	if open {
		if extra+1 > 1 {
			ls.reserve(extra)
		}
		return
	}
	if nexps > 0 {
		ls.reserve(1)
	}
	if extra > 0 {
		ls.reserve(extra)
	}
}

// Kinds of primary expressions, for assignments and expression statements.
const (
	expVar   = iota // a name or an indexed field: assignable
	expCall         // a call: a statement on its own
	expOther        // a parenthesised expression
)

func (ls *lexer) primaryExp() int {
	kind := expVar
	base := ls.fn.freereg
	switch ls.tok {
	case '(':
		line := ls.line
		ls.advance()
		ls.expr()
		ls.checkMatch(')', '(', line)
		kind = expOther
	case tkName:
		ls.advance()
	default:
		ls.syntaxErr("unexpected symbol")
	}
	for {
		switch ls.tok {
		case '.':
			ls.advance()
			ls.checkName()
			kind = expVar
		case '[':
			ls.advance()
			ls.expr()
			ls.checkNext(']')
			kind = expVar
		case ':':
			ls.advance()
			ls.checkName()
			ls.fn.freereg = base
			ls.reserve(2) // the function and self
			ls.funcArgs()
			ls.fn.freereg = base + 1
			kind = expCall
		case '(', tkString, '{':
			ls.fn.freereg = base
			ls.reserve(1) // the function
			ls.funcArgs()
			ls.fn.freereg = base + 1
			kind = expCall
		default:
			return kind
		}
	}
}

func (ls *lexer) funcArgs() {
	line := ls.line
	switch ls.tok {
	case '(':
		if line != ls.lastline {
			ls.syntaxErr("ambiguous syntax (function call x new statement)")
		}
		ls.advance()
		last := false // a last argument that goes to a register after the ')'
		if ls.tok != ')' {
			_, open := ls.exprList()
			last = !open
		}
		ls.checkMatch(')', '(', line)
		if last {
			ls.reserve(1)
		}
	case '{':
		ls.constructor()
	case tkString:
		ls.advance()
		ls.reserve(1)
	default:
		ls.syntaxErr("function arguments expected")
	}
}

func (ls *lexer) constructor() {
	line := ls.line
	ls.checkNext('{')
	base := ls.fn.freereg
	ls.reserve(1) // the table
	item, open, pending := false, false, 0
	for ls.tok != '}' {
		if item { // the list item before goes to a register; every 50 are stored
			ls.reserve(1)
			item = false
			if pending == perFlush {
				ls.fn.freereg = base + 1
				pending = 0
			}
		}
		switch ls.tok {
		case tkName:
			if ls.lookahead() != '=' {
				open = ls.expr()
				item = true
				pending++
			} else {
				ls.advance()
				ls.checkNext('=')
				ls.expr()
			}
		case '[':
			ls.advance()
			ls.expr()
			ls.checkNext(']')
			ls.checkNext('=')
			ls.expr()
		default:
			open = ls.expr()
			item = true
			pending++
		}
		if !ls.testNext(',') && !ls.testNext(';') {
			break
		}
	}
	ls.checkMatch('}', '{', line)
	if pending > 0 && item && !open {
		ls.reserve(1)
	}
	ls.fn.freereg = base + 1
}

// simpleExp parses a simple expression and reports whether it is open (a call or "...").
func (ls *lexer) simpleExp() bool {
	switch ls.tok {
	case tkNumber, tkString, tkNil, tkTrue, tkFalse:
		ls.advance()
	case tkDots:
		if !ls.fn.vararg {
			ls.syntaxErr("cannot use '...' outside a vararg function")
		}
		ls.advance()
		return true
	case '{':
		ls.constructor()
	case tkFunction:
		ls.advance()
		ls.body(ls.line)
	default:
		return ls.primaryExp() == expCall
	}
	return false
}

// binaryPriority is Lua 5.1's left and right priority of a binary operator; ok is false
// when t is none.
func binaryPriority(t int) (left, right int, ok bool) {
	switch t {
	case '+', '-':
		return 6, 6, true
	case '*', '/', '%':
		return 7, 7, true
	case '^':
		return 10, 9, true
	case tkConcat:
		return 5, 4, true
	case tkEq, tkNe, '<', tkLe, '>', tkGe:
		return 3, 3, true
	case tkAnd:
		return 2, 2, true
	case tkOr:
		return 1, 1, true
	}
	return 0, 0, false
}

const unaryPriority = 8

// expr parses an expression and reports whether it is open (a call or "...").
func (ls *lexer) expr() bool { return ls.subExpr(0) }

func (ls *lexer) subExpr(limit int) (open bool) {
	ls.enterLevel()
	if ls.tok == tkNot || ls.tok == '-' || ls.tok == '#' {
		ls.advance()
		ls.subExpr(unaryPriority)
	} else {
		open = ls.simpleExp()
	}
	for {
		left, right, ok := binaryPriority(ls.tok)
		if !ok || left <= limit {
			break
		}
		open = false
		ls.advance()
		ls.subExpr(right)
	}
	ls.leaveLevel()
	return open
}

// syntaxMessage words a compile error gopher-lua found and the check above did not (a
// limit of gopher-lua's own), in Lua's manner.
func syntaxMessage(err error, chunk string) string {
	var pe *parse.Error
	if errors.As(err, &pe) {
		near := pe.Token
		if pe.Pos.Line == parse.EOF {
			return chunk + ": unexpected symbol near '<eof>'"
		}
		return chunk + ":" + strconv.Itoa(pe.Pos.Line) + ": unexpected symbol near '" + near + "'"
	}
	var ce *lua.CompileError
	if errors.As(err, &ce) {
		return chunk + ":" + strconv.Itoa(ce.Line) + ": " + ce.Message
	}
	return chunk + ": " + strings.TrimSpace(err.Error())
}

// compiled is a chunk compiled, rewritten and wrapped (rewrite.go), and the constants it
// takes after the wrapper's functions (state.constant names them).
type compiled struct {
	proto  *lua.FunctionProto
	consts []string
}

// compileChunk checks and compiles src under the chunk name id (as error positions show
// it), rewritten and wrapped (rewrite.go), with the sandbox's globals and library fields
// made constants when fold; msg is Lua's error when it does not compile.
func compileChunk(src, id string, fold bool) (c compiled, msg string) {
	if msg := checkSyntax(src, id); msg != "" {
		return c, msg
	}
	chunk, err := parse.Parse(strings.NewReader(src), id)
	if err != nil {
		return c, syntaxMessage(err, id)
	}
	stmts, consts := wrapChunk(chunk, fold)
	proto, err := lua.Compile(stmts, id)
	if err != nil {
		return c, syntaxMessage(err, id)
	}
	unfold(proto)
	// The script's function takes "..." as a main chunk does; gopher-lua would also give
	// it Lua 5.0's "arg" table, built at every call, when it does not use "...".
	proto.FunctionPrototypes[0].IsVarArg &^= lua.VarArgNeedsArg
	return compiled{proto: proto, consts: consts}, ""
}
