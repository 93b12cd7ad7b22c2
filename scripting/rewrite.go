package scripting

import (
	"strings"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// A script's syntax tree is rewritten once, before gopher-lua compiles it, where its VM
// would not behave as Lua 5.1's, or as Redis's sandbox:
//
//   - a .. b .. c becomes a call of the concat function: gopher-lua's concatenation writes
//     numbers with Go's shortest form (0.3333333333333333), Lua 5.1 with "%.14g"
//     (0.33333333333333), and scripts build keys and replies that way;
//   - an assignment to a global (x = 1, function f() end) becomes an assignment through
//     the globals' read-only view, which fails as on Redis ("Attempt to modify a readonly
//     table"); so a script's own environment can be the globals table itself, and reading
//     a global costs one lookup instead of a lookup through the view;
//   - every loop body and function body starts with a call of the tick function, so that a
//     script that never calls Redis can still be stopped (SCRIPT KILL);
//   - a numeric for whose bounds are not all numerals takes them from the fornum function,
//     which reads strings as Lua 5.1's FORPREP does (strtod: for i = 1, ARGV[1]), where
//     gopher-lua's VM accepts numbers only;
//   - a call with more arguments than gopher-lua has registers for (it has 200, Lua 5.1
//     250) passes them in a table that the unpack function spreads again:
//     redis.call('ZADD', k, s1, m1, ... s150, m150) compiles as on Redis;
//   - in a script (not a function library, whose globals change while it loads), a global
//     of the sandbox that the script reads (tonumber, redis) and a field of a library
//     (redis.call, math.floor) become constants: nothing can change them (the globals and
//     the libraries are read-only, and there is no setfenv), and reading one through the
//     views costs two or three map lookups per use; and the script's own return of an
//     array ({allowed, remaining}, not in a function it defines) is a call of the reply
//     function, which fills a table the interpreter takes back once the reply is written
//     (recycle): nothing else can hold the table a script returns.
//
// The functions, the view and the constants reach the script as upvalues: the chunk
// compiled is
//
//	local (concat), (tick), (unpack), (G), (fornum), (=tonumber), (=redis.call)... = ...
//	return function(...) <the script> end
//
// and each interpreter calls it once with its own to get the script's function. Their
// names cannot be written in Lua, so no script can shadow or reach them; where Lua names
// a variable in an error ("bad argument #1 to 'floor'", "attempt to index global
// 'tonumber'"), a constant keeps the name it was read by (unfold).

const (
	concatName  = "(concat)"
	tickName    = "(tick)"
	unpackName  = "(unpack)"
	globalsName = "(G)"
	fornumName  = "(fornum)"
	replyName   = "(reply)" // a constant too (state.constant)
	// maxDirectArgs is the most arguments a call keeps; past it they go in a table,
	// leaving gopher-lua's registers for the locals and temporaries around the call.
	maxDirectArgs = 100
	// maxConstants is the most constants a script takes as upvalues; past it, reads go to
	// the globals.
	maxConstants = 40
)

// wrapChunk rewrites the script's statements and wraps them as above; fold makes the
// sandbox's globals and library fields constants, whose names (as constant reads them)
// it returns.
func wrapChunk(chunk []ast.Stmt, fold bool) ([]ast.Stmt, []string) {
	rw := &rewriter{fold: fold}
	rw.push()
	body := rw.stmts(chunk)
	rw.pop()
	fn := &ast.FunctionExpr{ParList: &ast.ParList{HasVargs: true}, Stmts: body}
	fn.SetLine(1)
	if len(chunk) > 0 {
		fn.SetLastLine(chunk[len(chunk)-1].LastLine())
	}
	names := []string{concatName, tickName, unpackName, globalsName, fornumName}
	for _, c := range rw.consts {
		names = append(names, constPrefix+c+")")
	}
	locals := &ast.LocalAssignStmt{Names: names, Exprs: []ast.Expr{&ast.Comma3Expr{}}}
	return []ast.Stmt{locals, &ast.ReturnStmt{Exprs: []ast.Expr{fn}}}, rw.consts
}

// rewriter walks the tree knowing which names are locals (gopher-lua's scoping: a local
// function's name is visible in its own body).
type rewriter struct {
	scopes []map[string]bool
	fold   bool     // globals and library fields become constants
	consts []string // those made so far: "tonumber", "redis.call"
	depth  int      // the functions the walk is in, the script's own excluded
}

// constPrefix starts the name of a constant's upvalue: "(=redis.call)".
const constPrefix = "(="

// constant returns the upvalue standing for the global or library field name ("tonumber",
// "math.floor") at line, or nil when it cannot be one.
func (rw *rewriter) constant(name string, line int) ast.Expr {
	if !rw.fold {
		return nil
	}
	known := false
	for _, c := range rw.consts {
		known = known || c == name
	}
	if !known {
		if len(rw.consts) == maxConstants {
			return nil
		}
		rw.consts = append(rw.consts, name)
	}
	id := &ast.IdentExpr{Value: constPrefix + name + ")"}
	id.SetLine(line)
	return id
}

// foldGlobal is the constant for a read of the global name, or nil.
func (rw *rewriter) foldGlobal(id *ast.IdentExpr) ast.Expr {
	if rw.isLocal(id.Value) {
		return nil
	}
	if _, ok := sandbox()[id.Value]; !ok {
		return nil
	}
	return rw.constant(id.Value, id.Line())
}

// foldField is the constant for a read of lib.name, a library's field, or nil.
func (rw *rewriter) foldField(e *ast.AttrGetExpr) ast.Expr {
	lib, ok1 := e.Object.(*ast.IdentExpr)
	key, ok2 := e.Key.(*ast.StringExpr)
	if !ok1 || !ok2 || rw.isLocal(lib.Value) || !sandbox()[lib.Value][key.Value] {
		return nil
	}
	return rw.constant(lib.Value+"."+key.Value, e.Line())
}

func (rw *rewriter) push() { rw.scopes = append(rw.scopes, nil) }
func (rw *rewriter) pop()  { rw.scopes = rw.scopes[:len(rw.scopes)-1] }

func (rw *rewriter) declare(names ...string) {
	top := &rw.scopes[len(rw.scopes)-1]
	if *top == nil {
		*top = make(map[string]bool)
	}
	for _, n := range names {
		(*top)[n] = true
	}
}

func (rw *rewriter) isLocal(name string) bool {
	for i := len(rw.scopes) - 1; i >= 0; i-- {
		if rw.scopes[i][name] {
			return true
		}
	}
	return false
}

// global returns the view's field a global assignment writes: (G).name.
func global(id *ast.IdentExpr) ast.Expr {
	g := &ast.IdentExpr{Value: globalsName}
	g.SetLine(id.Line())
	k := &ast.StringExpr{Value: id.Value}
	k.SetLine(id.Line())
	e := &ast.AttrGetExpr{Object: g, Key: k}
	e.SetLine(id.Line())
	e.SetLastLine(id.LastLine())
	return e
}

// tickCall is a statement calling the tick function, at line.
func tickCall(line int) ast.Stmt {
	id := &ast.IdentExpr{Value: tickName}
	id.SetLine(line)
	call := &ast.FuncCallExpr{Func: id}
	call.SetLine(line)
	call.SetLastLine(line)
	st := &ast.FuncCallStmt{Expr: call}
	st.SetLine(line)
	st.SetLastLine(line)
	return st
}

// block rewrites a block in a scope of its own, with names declared in it first and the
// tick call first when tick.
func (rw *rewriter) block(stmts []ast.Stmt, tick bool, line int, names ...string) []ast.Stmt {
	rw.push()
	rw.declare(names...)
	stmts = rw.stmts(stmts)
	rw.pop()
	if !tick {
		return stmts
	}
	out := make([]ast.Stmt, 0, len(stmts)+1)
	out = append(out, tickCall(line))
	return append(out, stmts...)
}

func (rw *rewriter) stmts(stmts []ast.Stmt) []ast.Stmt {
	for i, s := range stmts {
		stmts[i] = rw.stmt(s)
	}
	return stmts
}

func (rw *rewriter) stmt(s ast.Stmt) ast.Stmt {
	switch s := s.(type) {
	case *ast.AssignStmt:
		rw.exprs(s.Rhs)
		for i, l := range s.Lhs {
			if id, ok := l.(*ast.IdentExpr); ok && !rw.isLocal(id.Value) {
				s.Lhs[i] = global(id)
				continue
			}
			s.Lhs[i] = rw.target(l)
		}
	case *ast.LocalAssignStmt:
		if len(s.Names) == 1 && len(s.Exprs) == 1 {
			if _, ok := s.Exprs[0].(*ast.FunctionExpr); ok {
				rw.declare(s.Names...) // local function f: f is seen in its body
			}
		}
		rw.exprs(s.Exprs)
		rw.declare(s.Names...)
	case *ast.FuncCallStmt:
		s.Expr = rw.expr(s.Expr)
	case *ast.DoBlockStmt:
		s.Stmts = rw.block(s.Stmts, false, 0)
	case *ast.WhileStmt:
		s.Condition = rw.expr(s.Condition)
		s.Stmts = rw.block(s.Stmts, true, s.Line())
	case *ast.RepeatStmt:
		// The condition sees the block's locals.
		rw.push()
		body := rw.stmts(s.Stmts)
		s.Condition = rw.expr(s.Condition)
		rw.pop()
		s.Stmts = append([]ast.Stmt{tickCall(s.Line())}, body...)
	case *ast.IfStmt:
		s.Condition = rw.expr(s.Condition)
		s.Then = rw.block(s.Then, false, 0)
		s.Else = rw.block(s.Else, false, 0)
	case *ast.NumberForStmt:
		s.Init = rw.expr(s.Init)
		s.Limit = rw.expr(s.Limit)
		if s.Step != nil {
			s.Step = rw.expr(s.Step)
		}
		s.Stmts = rw.block(s.Stmts, true, s.Line(), s.Name)
		if !numeral(s.Init) || !numeral(s.Limit) || (s.Step != nil && !numeral(s.Step)) {
			return forNumbers(s)
		}
	case *ast.GenericForStmt:
		rw.exprs(s.Exprs)
		s.Stmts = rw.block(s.Stmts, true, s.Line(), s.Names...)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			if id, ok := s.Name.Func.(*ast.IdentExpr); ok && !rw.isLocal(id.Value) {
				s.Name.Func = global(id)
			} else if s.Name.Func != nil {
				s.Name.Func = rw.target(s.Name.Func)
			}
			if s.Name.Receiver != nil {
				s.Name.Receiver = rw.expr(s.Name.Receiver)
			}
		}
		rw.function(s.Func, s.Name != nil && s.Name.Receiver != nil)
	case *ast.ReturnStmt:
		rw.exprs(s.Exprs)
		if len(s.Exprs) > maxDirectArgs && !isOpen(s.Exprs[len(s.Exprs)-1]) {
			s.Exprs = packArgs(s.Exprs, s.Line())
		}
		if len(s.Exprs) == 1 && rw.depth == 0 {
			if call := rw.replyCall(s.Exprs[0]); call != nil {
				s.Exprs[0] = call
			}
		}
	}
	return s
}

func (rw *rewriter) exprs(exprs []ast.Expr) {
	for i, e := range exprs {
		exprs[i] = rw.expr(e)
	}
}

// function rewrites a function's body in a scope with its parameters (and self for a
// method).
func (rw *rewriter) function(f *ast.FunctionExpr, method bool) {
	names := append([]string(nil), f.ParList.Names...)
	if method {
		names = append(names, "self")
	}
	rw.depth++
	f.Stmts = rw.block(f.Stmts, true, f.Line(), names...)
	rw.depth--
}

// replyCall is the call of the reply function that returns the array constructor e, or
// nil when e is no such constructor (or has keys, or too many items to pass).
func (rw *rewriter) replyCall(e ast.Expr) ast.Expr {
	t, ok := e.(*ast.TableExpr)
	if !ok || len(t.Fields) == 0 || len(t.Fields) > maxDirectArgs {
		return nil
	}
	args := make([]ast.Expr, len(t.Fields))
	for i, f := range t.Fields {
		if f.Key != nil {
			return nil
		}
		args[i] = f.Value
	}
	fn := rw.constant(replyName, t.Line())
	if fn == nil {
		return nil
	}
	call := &ast.FuncCallExpr{Func: fn, Args: args}
	call.SetLine(t.Line())
	call.SetLastLine(t.LastLine())
	return call
}

// target rewrites what an assignment writes to: a field's table and key, never the field
// made a constant (math.floor = f must fail as a write to the library).
func (rw *rewriter) target(e ast.Expr) ast.Expr {
	if a, ok := e.(*ast.AttrGetExpr); ok {
		a.Object = rw.expr(a.Object)
		a.Key = rw.expr(a.Key)
		return a
	}
	return rw.expr(e)
}

func (rw *rewriter) expr(e ast.Expr) ast.Expr {
	switch e := e.(type) {
	case *ast.IdentExpr:
		if c := rw.foldGlobal(e); c != nil {
			return c
		}
	case *ast.AttrGetExpr:
		if c := rw.foldField(e); c != nil {
			return c
		}
		e.Object = rw.expr(e.Object)
		e.Key = rw.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if f.Key != nil {
				f.Key = rw.expr(f.Key)
			}
			f.Value = rw.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		if e.Func != nil {
			e.Func = rw.expr(e.Func)
		}
		if e.Receiver != nil {
			e.Receiver = rw.expr(e.Receiver)
		}
		rw.exprs(e.Args)
		if len(e.Args) > maxDirectArgs && !isOpen(e.Args[len(e.Args)-1]) {
			e.Args = packArgs(e.Args, e.Line())
		}
	case *ast.LogicalOpExpr:
		e.Lhs = rw.expr(e.Lhs)
		e.Rhs = rw.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		e.Lhs = rw.expr(e.Lhs)
		e.Rhs = rw.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		e.Lhs = rw.expr(e.Lhs)
		e.Rhs = rw.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		e.Expr = rw.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		e.Expr = rw.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		e.Expr = rw.expr(e.Expr)
	case *ast.FunctionExpr:
		rw.function(e, false)
	case *ast.StringConcatOpExpr:
		// a .. (b .. c): one call with the operands in order, as Lua 5.1 makes one CONCAT.
		var args []ast.Expr
		var cur ast.Expr = e
		for {
			c, ok := cur.(*ast.StringConcatOpExpr)
			if !ok {
				break
			}
			args = append(args, rw.expr(c.Lhs))
			cur = c.Rhs
		}
		args = append(args, rw.expr(cur))
		id := &ast.IdentExpr{Value: concatName}
		id.SetLine(e.Line())
		call := &ast.FuncCallExpr{Func: id, Args: args, AdjustRet: true}
		call.SetLine(e.Line())
		call.SetLastLine(e.LastLine())
		return call
	}
	return e
}

// numeral reports whether e is a number literal, or one negated: a for's bound that needs
// no conversion.
func numeral(e ast.Expr) bool {
	if m, ok := e.(*ast.UnaryMinusOpExpr); ok {
		e = m.Expr
	}
	_, ok := e.(*ast.NumberExpr)
	return ok
}

// forNumbers is a numeric for whose bounds go through the fornum function first:
//
//	do local (init), (limit), (step) = (fornum)(init, limit, step or 1)
//	for name = (init), (limit), (step) do ... end end
//
// which evaluates the three before it checks any, as Lua 5.1's FORPREP does.
func forNumbers(s *ast.NumberForStmt) ast.Stmt {
	line := s.Line()
	step := s.Step
	if step == nil {
		n := &ast.NumberExpr{Value: "1"}
		n.SetLine(line)
		step = n
	}
	id := &ast.IdentExpr{Value: fornumName}
	id.SetLine(line)
	call := &ast.FuncCallExpr{Func: id, Args: []ast.Expr{s.Init, s.Limit, step}}
	call.SetLine(line)
	call.SetLastLine(line)
	names := []string{"(init)", "(limit)", "(step)"}
	locals := &ast.LocalAssignStmt{Names: names, Exprs: []ast.Expr{call}}
	locals.SetLine(line)
	locals.SetLastLine(line)
	bound := func(name string) ast.Expr {
		e := &ast.IdentExpr{Value: name}
		e.SetLine(line)
		return e
	}
	s.Init, s.Limit, s.Step = bound(names[0]), bound(names[1]), bound(names[2])
	do := &ast.DoBlockStmt{Stmts: []ast.Stmt{locals, s}}
	do.SetLine(line)
	do.SetLastLine(s.LastLine())
	return do
}

// fornum is the fornum function: a numeric for's init, limit and step as numbers, a string
// read as Lua 5.1 reads it (luaV_tonumber), else Lua 5.1's error for the first that is not.
func (st *state) fornum(L *lua.LState) int {
	for i, what := range [...]string{"initial value", "limit", "step"} {
		switch v := L.Get(i + 1).(type) {
		case lua.LNumber:
			continue
		case lua.LString:
			if f, ok := str2number(string(v)); ok {
				L.Replace(i+1, st.box.number(f))
				continue
			}
		}
		L.RaiseError("'for' %s must be a number", what)
	}
	return 3
}

// isOpen reports whether e gives all its values (a call or "..." last in a list).
func isOpen(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.FuncCallExpr:
		return !e.AdjustRet
	case *ast.Comma3Expr:
		return !e.AdjustRet
	}
	return false
}

// packArgs is args as one call of the unpack function on a table of them.
func packArgs(args []ast.Expr, line int) []ast.Expr {
	t := &ast.TableExpr{}
	t.SetLine(line)
	for _, a := range args {
		t.Fields = append(t.Fields, &ast.Field{Value: a})
	}
	n := &ast.NumberExpr{Value: itoa(len(args))}
	n.SetLine(line)
	id := &ast.IdentExpr{Value: unpackName}
	id.SetLine(line)
	call := &ast.FuncCallExpr{Func: id, Args: []ast.Expr{t, n}}
	call.SetLine(line)
	return []ast.Expr{call}
}

// unpack is the unpack function: t[1] to t[n].
func unpackArgs(L *lua.LState) int {
	t := L.CheckTable(1)
	n := L.CheckInt(2)
	for i := 1; i <= n; i++ {
		L.Push(t.RawGetInt(i))
	}
	return n
}

// concat is the concat function: Lua 5.1's concatenation, numbers as "%.14g". The
// result's size is known before its bytes are taken: one buffer of that size, checked
// against maxString and the memory limit first, becomes the string.
func (st *state) concat(L *lua.LState) int {
	n := L.GetTop()
	strs, nums := 0, 0 // the strings' bytes, the numbers
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			strs += len(v)
		case lua.LNumber:
			nums++
		default:
			return st.concatSlow(L)
		}
	}
	if strs > maxString {
		L.RaiseError("not enough memory")
	}
	b := st.grow(L, st.catBuf[:0], strs+nums*maxNumberLen)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			b = append(b, v...)
		case lua.LNumber:
			b = appendLuaNumber(b, float64(v))
		}
	}
	if len(b) > maxString {
		L.RaiseError("not enough memory")
	}
	st.worked(L, len(b))
	return st.pushCat(L, b)
}

// maxNumberLen is the most bytes a number takes as "%.14g": -1.2345678901234e-308.
const maxNumberLen = 24

// pushCat pushes the string concat's buffer b holds, and keeps b for the next unless it
// grew big: then its bytes become the string, not a copy of them.
func (st *state) pushCat(L *lua.LState, b []byte) int {
	if cap(b) <= 4096 {
		L.Push(lua.LString(b))
		st.catBuf = b[:0]
	} else {
		L.Push(lua.LString(unsafe.String(unsafe.SliceData(b), len(b))))
		st.catBuf = nil
	}
	return 1
}

// concatSlow is concatenation with an operand that is neither a string nor a number: as
// Lua 5.1, from the right, each pair through its __concat metamethod, or an error naming
// the rightmost operand at fault.
func (st *state) concatSlow(L *lua.LState) int {
	n := L.GetTop()
	acc := L.Get(n)
	accArg := n // the argument acc still is, 0 once it is a result
	for i := n - 1; i >= 1; i-- {
		lhs := L.Get(i)
		if isStringLike(lhs) && isStringLike(acc) {
			acc = lua.LString(string(luaString(lhs)) + string(luaString(acc)))
			accArg = 0
			continue
		}
		h := L.GetMetaField(lhs, "__concat")
		if h == lua.LNil {
			h = L.GetMetaField(acc, "__concat")
		}
		if h == lua.LNil {
			culprit, arg := lhs, i
			if isStringLike(lhs) {
				culprit, arg = acc, accArg
			}
			L.RaiseError("%s", st.operandError(L, "concatenate", culprit, arg))
		}
		L.Push(h)
		L.Push(lhs)
		L.Push(acc)
		L.Call(2, 1)
		acc = L.Get(-1)
		L.Pop(1)
		accArg = 0
	}
	L.Push(acc)
	return 1
}

// unfold gives back to the calls of constants, in p and the functions in it, the names
// Lua words errors with: "floor" for math.floor, as gopher-lua names a call by its last
// name ("bad argument #1 to 'floor'").
func unfold(p *lua.FunctionProto) {
	for i := range p.DbgCalls {
		if _, name, ok := constantName(p.DbgCalls[i].Name); ok {
			p.DbgCalls[i].Name = name
		}
	}
	for _, f := range p.FunctionPrototypes {
		unfold(f)
	}
}

// constantName reads the name of a constant's upvalue: "global" and "tonumber" for
// "(=tonumber)", "field" and "floor" for "(=math.floor)".
func constantName(upvalue string) (kind, name string, ok bool) {
	if len(upvalue) < len(constPrefix)+2 || upvalue[:len(constPrefix)] != constPrefix || upvalue[len(upvalue)-1] != ')' {
		return "", "", false
	}
	name = upvalue[len(constPrefix) : len(upvalue)-1]
	if _, field, ok := strings.Cut(name, "."); ok {
		return "field", field, true
	}
	return "global", name, true
}
