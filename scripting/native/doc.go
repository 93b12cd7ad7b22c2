// Package native runs the limiter scripts people run most as Go code: an EVAL or EVALSHA
// of one of them, recognised by the SHA1 digest of its exact text, does not take the Lua
// interpreter, and gives the reply the interpreter would give and leaves the keyspace as
// it would, byte for byte.
//
// A call's path through it. When the server's scripting Engine loads a script, it asks
// Lookup for its digest (Engine.Natives): a script this package knows gets its Go code,
// every other nil, and takes the interpreter. Engine.Run then calls that code instead of
// an interpreter. The code does what the script's Lua does, in the same order: the same
// commands, with the same argument bytes, through the same Host.Call the script's
// redis.call reaches (so that the stripes a script holds, ACL key checks, WATCH,
// replication and persistence see the same commands) or, where the host offers it, run
// directly on the key's shard (scripting.Direct: the same effects and values, each
// counted as its command; callGet and the others choose), and the same float64 arithmetic
// as Lua 5.1's numbers, each operation rounded on its own as the interpreter's are. The
// bytes cross as the interpreter writes and reads them: a number handed to a command as
// "%.17g", one the script tostring's as "%.14g", one it returns truncated to an integer
// (package scripting's AppendArgNumber, AppendLuaNumber and ReplyInteger).
//
// What it does not reproduce it declines, and the interpreter runs the script: an
// argument or a stored value that is not a plain decimal (Lua reads " 5", "0x10" or
// "010" its own way, and gopher-lua's arithmetic not always as Lua 5.1's), a number that
// is not finite on the way (a rate of 0), an error reply from a command (WRONGTYPE, ACL,
// a read-only script), a missing key or argument. It declines only before a command that
// could change anything has run: the commands it ran by then only read (TIME, GET), so
// the interpreter's run starts from the same keyspace. Engine counts both paths, and a
// decline, for INFO.
//
// The scripts: go-redis/redis_rate v10.0.1's allowN and allowAtMost, GCRA with the
// theoretical arrival time in a string (redisrate.go); rate-limit-redis 6.0.1's increment
// and get, a fixed window counted with INCR under a PTTL (ratelimitredis.go);
// rate-limiter-flexible 11.4.0's incrTtlLuaScript, a fixed window of points with SET NX EX
// and INCRBY (ratelimiterflexible.go), whose first command writes: what could fail after
// it is checked before it.
package native
