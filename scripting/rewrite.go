package scripting

import (
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// A script's syntax tree is rewritten once, before gopher-lua compiles it, where its VM
// would not behave as Lua 5.1's:
//
//   - a .. b .. c becomes a call of the concat function: gopher-lua's concatenation writes
//     numbers with Go's shortest form (0.3333333333333333), Lua 5.1 with "%.14g"
//     (0.33333333333333), and scripts build keys and replies that way;
//   - every loop body and function body starts with a call of the tick function, so that a
//     script that never calls Redis can still be stopped (SCRIPT KILL);
//   - a call with more arguments than gopher-lua has registers for (it has 200, Lua 5.1
//     250) passes them in a table that the unpack function spreads again:
//     redis.call('ZADD', k, s1, m1, ... s150, m150) compiles as on Redis.
//
// The functions reach the script as upvalues: the chunk compiled is
//
//	local (concat), (tick), (unpack) = ...
//	return function(...) <the script> end
//
// and each interpreter calls it once with its Go functions to get the script's function.
// Their names cannot be written in Lua, so no script can shadow or reach them.

const (
	concatName = "(concat)"
	tickName   = "(tick)"
	unpackName = "(unpack)"
	// maxDirectArgs is the most arguments a call keeps; past it they go in a table,
	// leaving gopher-lua's registers for the locals and temporaries around the call.
	maxDirectArgs = 100
)

// wrapChunk rewrites the script's statements and wraps them as above.
func wrapChunk(chunk []ast.Stmt) []ast.Stmt {
	body := rewriteStmts(chunk)
	fn := &ast.FunctionExpr{ParList: &ast.ParList{HasVargs: true}, Stmts: body}
	fn.SetLine(1)
	if len(chunk) > 0 {
		fn.SetLastLine(chunk[len(chunk)-1].LastLine())
	}
	locals := &ast.LocalAssignStmt{Names: []string{concatName, tickName, unpackName}, Exprs: []ast.Expr{&ast.Comma3Expr{}}}
	return []ast.Stmt{locals, &ast.ReturnStmt{Exprs: []ast.Expr{fn}}}
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

// withTick returns a loop or function body with the tick call first.
func withTick(stmts []ast.Stmt, line int) []ast.Stmt {
	out := make([]ast.Stmt, 0, len(stmts)+1)
	out = append(out, tickCall(line))
	return append(out, rewriteStmts(stmts)...)
}

func rewriteStmts(stmts []ast.Stmt) []ast.Stmt {
	for i, s := range stmts {
		stmts[i] = rewriteStmt(s)
	}
	return stmts
}

func rewriteStmt(s ast.Stmt) ast.Stmt {
	switch s := s.(type) {
	case *ast.AssignStmt:
		rewriteExprs(s.Lhs)
		rewriteExprs(s.Rhs)
	case *ast.LocalAssignStmt:
		rewriteExprs(s.Exprs)
	case *ast.FuncCallStmt:
		s.Expr = rewriteExpr(s.Expr)
	case *ast.DoBlockStmt:
		s.Stmts = rewriteStmts(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = rewriteExpr(s.Condition)
		s.Stmts = withTick(s.Stmts, s.Line())
	case *ast.RepeatStmt:
		s.Stmts = withTick(s.Stmts, s.Line())
		s.Condition = rewriteExpr(s.Condition)
	case *ast.IfStmt:
		s.Condition = rewriteExpr(s.Condition)
		s.Then = rewriteStmts(s.Then)
		s.Else = rewriteStmts(s.Else)
	case *ast.NumberForStmt:
		s.Init = rewriteExpr(s.Init)
		s.Limit = rewriteExpr(s.Limit)
		if s.Step != nil {
			s.Step = rewriteExpr(s.Step)
		}
		s.Stmts = withTick(s.Stmts, s.Line())
	case *ast.GenericForStmt:
		rewriteExprs(s.Exprs)
		s.Stmts = withTick(s.Stmts, s.Line())
	case *ast.FuncDefStmt:
		if s.Name != nil {
			s.Name.Func = rewriteExpr(s.Name.Func)
			if s.Name.Receiver != nil {
				s.Name.Receiver = rewriteExpr(s.Name.Receiver)
			}
		}
		rewriteFunction(s.Func)
	case *ast.ReturnStmt:
		rewriteExprs(s.Exprs)
		if len(s.Exprs) > maxDirectArgs && !isOpen(s.Exprs[len(s.Exprs)-1]) {
			s.Exprs = packArgs(s.Exprs, s.Line())
		}
	}
	return s
}

func rewriteExprs(exprs []ast.Expr) {
	for i, e := range exprs {
		exprs[i] = rewriteExpr(e)
	}
}

func rewriteFunction(f *ast.FunctionExpr) {
	f.Stmts = withTick(f.Stmts, f.Line())
}

func rewriteExpr(e ast.Expr) ast.Expr {
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		e.Object = rewriteExpr(e.Object)
		e.Key = rewriteExpr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if f.Key != nil {
				f.Key = rewriteExpr(f.Key)
			}
			f.Value = rewriteExpr(f.Value)
		}
	case *ast.FuncCallExpr:
		if e.Func != nil {
			e.Func = rewriteExpr(e.Func)
		}
		if e.Receiver != nil {
			e.Receiver = rewriteExpr(e.Receiver)
		}
		rewriteExprs(e.Args)
		if len(e.Args) > maxDirectArgs && !isOpen(e.Args[len(e.Args)-1]) {
			e.Args = packArgs(e.Args, e.Line())
		}
	case *ast.LogicalOpExpr:
		e.Lhs = rewriteExpr(e.Lhs)
		e.Rhs = rewriteExpr(e.Rhs)
	case *ast.RelationalOpExpr:
		e.Lhs = rewriteExpr(e.Lhs)
		e.Rhs = rewriteExpr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		e.Lhs = rewriteExpr(e.Lhs)
		e.Rhs = rewriteExpr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		e.Expr = rewriteExpr(e.Expr)
	case *ast.UnaryNotOpExpr:
		e.Expr = rewriteExpr(e.Expr)
	case *ast.UnaryLenOpExpr:
		e.Expr = rewriteExpr(e.Expr)
	case *ast.FunctionExpr:
		rewriteFunction(e)
	case *ast.StringConcatOpExpr:
		// a .. (b .. c): one call with the operands in order, as Lua 5.1 makes one CONCAT.
		var args []ast.Expr
		var cur ast.Expr = e
		for {
			c, ok := cur.(*ast.StringConcatOpExpr)
			if !ok {
				break
			}
			args = append(args, rewriteExpr(c.Lhs))
			cur = c.Rhs
		}
		args = append(args, rewriteExpr(cur))
		id := &ast.IdentExpr{Value: concatName}
		id.SetLine(e.Line())
		call := &ast.FuncCallExpr{Func: id, Args: args, AdjustRet: true}
		call.SetLine(e.Line())
		call.SetLastLine(e.LastLine())
		return call
	}
	return e
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

// concat is the concat function: Lua 5.1's concatenation, numbers as "%.14g".
func (st *state) concat(L *lua.LState) int {
	n := L.GetTop()
	b := st.catBuf[:0]
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			b = append(b, v...)
		case lua.LNumber:
			b = appendLuaNumber(b, float64(v))
		default:
			st.catBuf = b[:0]
			return st.concatSlow(L)
		}
	}
	if len(b) > maxString {
		L.RaiseError("not enough memory")
	}
	L.Push(lua.LString(b))
	if cap(b) <= 4096 {
		st.catBuf = b[:0]
	} else {
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
