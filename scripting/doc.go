// Package scripting runs Redis's Lua scripts (EVAL, EVALSHA) as Redis 7.0 runs them, on
// gopher-lua, a Lua 5.1 in Go. It knows nothing of the server: each script reaches the
// server through a Host, which runs a command and hands back its reply in RESP.
//
// A call's path through it. The server's EVAL handler gets the Script from the Engine:
// Load compiles a body the first time its SHA1 is seen and caches it (SCRIPT LOAD, EXISTS
// and FLUSH work on that cache; EVALSHA only looks it up), so a script is compiled once
// per digest into a gopher-lua FunctionProto that every interpreter shares. Compiling is
// in three steps: a Lua 5.1 lexer and parser of our own check the body and, when it does
// not compile, give Lua 5.1's message ("user_script:1: '=' expected near '<eof>'",
// syntax.go); gopher-lua parses it; the syntax tree is rewritten where gopher-lua's VM
// would not behave as Lua 5.1's (rewrite.go: concatenation, loop ticks) and compiled.
//
// Run then takes an interpreter from a pool (a state: an LState with Redis's sandbox, built
// once and reused, since building one costs far more than running a script), sets KEYS
// and ARGV, and calls the script's function under an error handler. Each redis.call turns
// its Lua arguments into a command (a number as "%.17g", as Redis writes it: a bucket's
// 1.0140000000000002 tokens are stored as those bytes), and Host.Call runs it through the
// server's command table and handlers on a client of the script's own; its RESP reply is
// parsed back into Lua values (resp.go has both directions of the conversion, with Redis's
// rules for RESP2 and RESP3 and redis.setresp); the strings and numbers a script is handed
// (KEYS, replies, tonumber's) are boxed out of the state's blocks (box.go) and the tables
// of status and short array replies reused from run to run, so that a limiter's call
// allocates a few objects, not dozens. An error reply is raised as a Lua error
// by redis.call and returned as a table by redis.pcall. When the script returns, its value
// becomes the reply to EVAL, in the caller's protocol; when it fails, the error becomes
// Redis's text: "ERR user_script:1: ... script: <sha>, on @user_script:1.". The
// interpreter goes back to the pool.
//
// What a script sees is Lua 5.1 as Redis configures it, down to the texts: the sandbox of
// state.go (read-only globals, no os or io), tostring and concatenation writing numbers as
// "%.14g" (number.go), string.format as C's sprintf (format.go), Lua 5.1's patterns and
// string.gsub in linear time (pattern.go), tonumber as strtod, and
// strings read as numbers as strtod reads them wherever Lua 5.1 converts: arithmetic, through
// metamethods on the strings' metatable, which gopher-lua's VM asks before its own conversion
// (arith.go), the library functions' number arguments and a numeric for's bounds
// (coerce.go, rewrite.go); the bit library, runtime errors worded as Lua 5.1's with the
// variable at fault named (names.go), and compile errors as its parser gives them.
//
// A script must run as one command, and may touch keys it did not declare: the server
// decides how (its scripting.go). It locks the transaction stripes of the declared KEYS
// before the run, as EXEC does for its queued commands, and takes the stripe of any other
// key when a command first touches it: a stripe above every one the script holds is
// waited for (all stripes are taken in ascending order, so that cannot deadlock), one
// below is taken if free. When it is not and the script has changed nothing yet, Host.Call
// stops the script (an error no pcall can catch: the API, pcall, xpcall, coroutine.resume
// and every loop's tick raise it again) and the server runs it again from the start,
// holding that stripe too; each restart adds a stripe, so there are at most 64. A sliding
// counter that reads KEYS[1]..":"..slot before it writes is thus isolated as if it had
// declared it. When the script has already written, stopping it would leave half its
// writes done: it waits for the stripe 10 ms, which covers a holder that is an ordinary
// script or transaction, and past that goes on with that one command under the shard lock
// alone, as a plain command of another client runs. So nothing waits in a cycle (the
// holder may be waiting for one of its stripes, taken in order) and no write set is torn:
// every write is made, each command atomic. What is given up, in that rare case (a write
// before an undeclared key whose stripe is held by a slow or waiting holder), is isolation
// from that one holder, for that key. A plain command of another client on a key whose
// stripe the script holds waits for it to end, as under EXEC (the server's gate, multi.go).
// A script that runs as Go code (Native) on the one key it declared takes no stripe: it
// runs as a plain command does, through the gate, under that key's shard lock from its
// first command to its last (RunNative; the server's scriptRun.direct), and takes the
// stripes as any script does when a transaction or script holds that key's.
//
// A script that runs long is watched from inside: every loop and function body calls the
// tick function (rewrite.go), and every few commands the clock and the heap are read; so
// are they every 64 KB written or 64K pattern steps taken by the builtins that can run
// long (string.rep, find, match, gmatch, gsub, format, table.concat, '..': worked), so
// that one call running for hours stops where it is. Past Call.BusyAfter
// (busy-reply-threshold) the host is told (Host.Busy): the server then answers BUSY to
// other clients and SCRIPT KILL may stop the script (Call.Kill), which ends with "Script
// killed by user with SCRIPT KILL..." whatever it catches. Past Engine's MemoryLimit of
// heap growth, the script fails with its own error; a builtin about to make a string of
// 1 MB or more checks its bytes against the limit first (reserve), and a heap past the
// limit is collected once before the script is failed for garbage. Engine.Close kills
// every running script, for SHUTDOWN NOSAVE. The libraries scripts use are there as Redis
// has them: cjson (cjson.go), bit (bit.go), struct (struct.go) and cmsgpack (cmsgpack.go).
//
// Functions (functions.go) are Redis 7.0's FUNCTION LOAD and FCALL: LoadLibrary reads the
// "#!lua name=<lib>" line, compiles the code once and runs it in a sandbox whose only
// global is a redis table with register_function, log and the version; the functions it
// registers, with their flags and descriptions, make a Library, and a Libraries is an
// immutable set of them. CallFunction runs one on an interpreter of the pool, which runs
// the library's code the first time it meets it and keeps the callbacks (so a library's
// upvalues are per interpreter, where Redis has one). Dump and ParseDump are FUNCTION
// DUMP's payload, Redis's RDB format, which the server also keeps on disk and sends to
// replicas as the libraries' record.
package scripting
