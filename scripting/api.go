package scripting

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The redis table, as Redis 7.0 fills it (server is the same table, as in Valkey).

// Redis's log levels and propagation flags, as the redis table exposes them.
const (
	logDebug   = 0
	logVerbose = 1
	logNotice  = 2
	logWarning = 3

	replNone    = 0
	replAOF     = 1
	replReplica = 2
	replAll     = 3
)

// Version is the Redis version scripts see (redis.REDIS_VERSION), and its number.
const (
	Version    = "7.0.15"
	versionNum = 7<<16 | 0<<8 | 15
)

func (st *state) redisAPI() *lua.LTable {
	L := st.L
	t := L.CreateTable(0, 24)
	fn := func(name string, f lua.LGFunction) { t.RawSetString(name, L.NewFunction(f)) }
	num := func(name string, n int) { t.RawSetString(name, lua.LNumber(n)) }
	fn("call", func(L *lua.LState) int { return st.command(L, true) })
	fn("pcall", func(L *lua.LState) int { return st.command(L, false) })
	fn("log", st.log)
	num("LOG_DEBUG", logDebug)
	num("LOG_VERBOSE", logVerbose)
	num("LOG_NOTICE", logNotice)
	num("LOG_WARNING", logWarning)
	num("REDIS_VERSION_NUM", versionNum)
	t.RawSetString("REDIS_VERSION", lua.LString(Version))
	fn("setresp", st.setResp)
	fn("sha1hex", redisSHA1Hex)
	fn("error_reply", redisErrorReply)
	fn("status_reply", redisStatusReply)
	fn("set_repl", st.setRepl)
	num("REPL_NONE", replNone)
	num("REPL_AOF", replAOF)
	num("REPL_SLAVE", replReplica)
	num("REPL_REPLICA", replReplica)
	num("REPL_ALL", replAll)
	fn("acl_check_cmd", st.aclCheckCmd)
	fn("breakpoint", func(L *lua.LState) int { L.Push(lua.LFalse); return 1 })
	fn("debug", func(L *lua.LState) int { return 0 })
	fn("replicate_commands", func(L *lua.LState) int { L.Push(lua.LTrue); return 1 })
	return t
}

// raise fails the script with Redis's error table {err="ERR msg"}: the error redis.call
// and the API raise, which pcall turns back into its text.
func raise(L *lua.LState, msg string) {
	L.Error(plainError(L, msg), 0)
}

// plainError is the table of an error message without a code: luaPushError gives it ERR.
func plainError(L *lua.LState, msg string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString("ERR "+trimCRLF(msg)))
	return t
}

// command is redis.call (raise) and redis.pcall: the arguments become a command (a number
// as "%.17g"), the host runs it, and its reply becomes a Lua value; an error reply is
// raised by redis.call and returned by redis.pcall.
func (st *state) command(L *lua.LState, raiseErr bool) int {
	r := &st.run
	if r.host == nil {
		raise(L, "redis.call/pcall can only be called inside a script invocation")
	}
	st.stopIfStopped(L)
	switch st.run.ticks++; {
	case st.run.ticks&63 == 0:
		st.watch(L)
	case st.run.ticks&7 == 0:
		st.watchBusy()
	}
	n := L.GetTop()
	if n == 0 {
		return st.fail(L, raiseErr, "Please specify at least one argument for this redis lib call")
	}
	args, nums, numAt := st.args[:0], st.nums[:0], st.numAt[:0]
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args = append(args, stringBytes(string(v)))
		case lua.LNumber:
			start := len(nums)
			nums = appendArgNumber(nums, float64(v))
			numAt = append(numAt, len(args), start, len(nums))
			args = append(args, nil)
		default:
			st.args = args[:0]
			return st.fail(L, raiseErr, "Lua redis lib command arguments must be strings or integers")
		}
	}
	for i := 0; i < len(numAt); i += 3 {
		args[numAt[i]] = nums[numAt[i+1]:numAt[i+2]:numAt[i+2]]
	}
	st.nums, st.numAt = nums, numAt
	L.SetTop(0)
	reply, err := r.host.Call(st.reply[:0], args, r.resp)
	clear(args)
	st.args = args[:0]
	if err != nil {
		r.stop = err
		L.Error(stopValue, 0)
	}
	st.reply = reply
	if len(reply) > maxKeptReply {
		st.reply = nil // a big reply's buffer is not kept for the next call
	}
	_, isErr := st.pushReply(L, reply)
	if isErr && raiseErr {
		L.Error(L.Get(-1), 0)
	}
	return 1
}

// maxKeptReply bounds the reply buffer an interpreter keeps between calls.
const maxKeptReply = 64 << 10

// fail is an error of the API itself: raised by redis.call, returned by redis.pcall.
func (st *state) fail(L *lua.LState, raiseErr bool, msg string) int {
	L.SetTop(0)
	t := plainError(L, msg)
	if raiseErr {
		L.Error(t, 0)
	}
	L.Push(t)
	return 1
}

// redisSHA1Hex is redis.sha1hex(s).
func redisSHA1Hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		raise(L, "wrong number of arguments")
	}
	s := ""
	switch v := L.Get(1).(type) {
	case lua.LString:
		s = string(v)
	case lua.LNumber:
		s = luaNumberString(float64(v))
	}
	L.Push(lua.LString(sha1hex([]byte(s))))
	return 1
}

// redisErrorReply is redis.error_reply(msg): {err=msg}, with ERR when msg has no code.
func redisErrorReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(plainError(L, "wrong number or type of arguments"))
		return 1
	}
	msg := cString(string(s))
	msg = strings.TrimPrefix(msg, "-")
	L.Push(errorTable(L, msg))
	return 1
}

// redisStatusReply is redis.status_reply(msg): {ok=msg}.
func redisStatusReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(plainError(L, "wrong number or type of arguments"))
		return 1
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

// log is redis.log(level, message...): the message's parts joined by blanks.
func (st *state) log(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		raise(L, "redis.log() requires two arguments or more.")
	}
	lv, ok := toNumber(L.Get(1))
	if !ok {
		raise(L, "First argument must be a number (log level).")
	}
	level := int(lv)
	if level < logDebug || level > logWarning {
		raise(L, "Invalid debug level.")
	}
	var b strings.Builder
	for i := 2; i <= n; i++ {
		v := L.Get(i)
		if !isStringLike(v) {
			continue
		}
		if i != 2 {
			b.WriteByte(' ')
		}
		b.WriteString(string(luaString(v)))
	}
	if st.run.host != nil {
		st.run.host.Log(level, b.String())
	}
	return 0
}

// toNumber is lua_isnumber and lua_tonumber: a number, or a string that reads as one.
func toNumber(v lua.LValue) (float64, bool) {
	switch v := v.(type) {
	case lua.LNumber:
		return float64(v), true
	case lua.LString:
		return str2number(string(v))
	}
	return 0, false
}

// setResp is redis.setresp(2 or 3): the protocol the script's commands reply in.
func (st *state) setResp(L *lua.LState) int {
	if L.GetTop() != 1 {
		raise(L, "redis.setresp() requires one argument.")
	}
	n, _ := toNumber(L.Get(1))
	resp := int(n)
	if resp != 2 && resp != 3 {
		raise(L, "RESP version must be 2 or 3.")
	}
	st.run.resp = resp
	return 0
}

// setRepl is redis.set_repl(flags): accepted and checked; the effects of a script reach
// the replicas and the disk as every write does, by state, so there is nothing to select.
func (st *state) setRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		raise(L, "redis.set_repl() requires two arguments.")
	}
	n, _ := toNumber(L.Get(1))
	flags := int(n)
	if flags&^replAll != 0 {
		raise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

// aclCheckCmd is redis.acl_check_cmd(command, args...): whether the caller's user may run it.
func (st *state) aclCheckCmd(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		raise(L, "Please specify at least one argument for this redis lib call")
	}
	args := make([][]byte, 0, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args = append(args, []byte(v))
		case lua.LNumber:
			args = append(args, appendArgNumber(nil, float64(v)))
		default:
			raise(L, "Lua redis lib command arguments must be strings or integers")
		}
	}
	allowed, known := st.run.host.Allowed(args)
	if !known {
		raise(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	L.Push(lua.LBool(allowed))
	return 1
}
