// Package gcra is the pure arithmetic of the generic cell rate algorithm
// behind CL.THROTTLE, GCRA and THROTTLE. It does no I/O, takes no locks and
// never reads the clock: the caller passes the time (Unix ns) and the key's
// stored theoretical arrival time (TAT, Unix ns, or exists=false for a new
// key) and gets back a Result: the five numbers of the reply, and whether to
// store a new TAT and for how long. A denied request never stores. Nothing
// here panics or allocates on success; every bad argument, and a limit whose
// arithmetic overflows, is an *Error whose Text is the client's error line. A
// request's cost is never an error in Cell and Throttle: one that no wait
// admits (past the limit, past int64 in time, or a TAT past 2262) is denied
// with retry_after -1, so that a proxy never reads a huge cost as a failure
// to pass through.
//
// A request's path: the server parses the arguments after the key with
// ParseCell or ParseGCRA (THROTTLE's options are the server's), which also
// checks every value that does not depend on the stored state; it then
// loads the key's TAT, calls the verb's function with its clock, writes
// Result.TAT with expiry Result.TTL when Result.Store, and replies. All three
// verbs read and write the same state, so a key may be driven by any of
// them.
//
// The three entry points:
//
// Cell is CL.THROTTLE, byte-compatible with redis-cell 0.4 and later
// (brandur/redis-cell, redis-cell-impl/src/lib.rs and redis-cell/src/lib.rs):
// nanosecond arithmetic, an emission interval of float64(period_ns)/count
// truncated, remaining counted in whole microseconds, retry_after and
// reset_after in seconds rounded up only when the remainder reaches a whole
// millisecond, quantity 0 as a probe. Its errors are redis-cell's texts
// ("Cell error: Store error: ..."), including the usage line for the wrong
// number of arguments and the zero-rate error, which redis-cell also gives
// when count exceeds the period in nanoseconds. Where redis-cell computes
// nonsense or crashes we reply a clear "ERR ..." instead: negative
// arguments, a period over 9223372036s, and a max_burst whose tolerance
// overflows int64. A quantity past max_burst+1 is redis-cell's denial with
// retry_after -1; so is one whose increment overflows int64, where
// redis-cell's release build wraps the product (an admission with a TAT in
// the past, or a panic).
// Two replies differ from redis-cell, both where its numbers are meaningless:
// remaining is clamped to [0, limit] (redis-cell's microsecond truncation can
// exceed the limit for intervals that are not whole microseconds, and
// reports 2^63-1 for intervals under 1µs, where we count in nanoseconds),
// and a stored TAT already in the past counts as idle (redis-cell never sees
// one, because the key has expired by then).
//
// Redis is Redis 8.8's GCRA command, matched line by line against
// redis/redis src/gcra.c (the version storing the TAT as a string key, in
// microseconds): argument checks in its order with Redis's texts
// (getPositiveLongFromObjectOrReply for max_burst, so a non-integer is "out
// of range, must be positive"; tokens_per_period and TOKENS in [1, LONG_MAX];
// period a double in (0, 1e12); "syntax error" for a word other than TOKENS,
// compared case-insensitively as a C string; "Missing TOKENS value"; the
// arity error for fewer than 3 or more than 5 arguments after the key),
// the clock as commandTimeSnapshot()*1000 (ms truncated, in µs), the
// emission interval (long long)(period_us/tokens + 0.5) with a 1µs floor,
// limit max_burst+1 except at LONG_MAX, its two overflow checks and texts,
// the tat+increment overflow check made before the decision, remaining by
// integer division, retry_after and reset_after as ceil of seconds in
// double, "Negative time is invalid value for GCRA" for a stored TAT <= 0.
// Our state stays in ns: a TAT is read as ceil(ns/1000) µs (exact for TATs
// GCRA wrote) and written as µs*1000; a TAT past 2262 cannot be stored in
// ns, so that case gets gcra.c's TOKENS overflow error where Redis would
// accept it. The TTL runs to the TAT rounded up to the millisecond, which is
// the later Redis fix of gcra.c's PXAT (floor lost sub-millisecond keys).
// Not verified against a running Redis: which string-to-double routine
// getDoubleFromObject uses in 8.8. We accept what the fast_float port in
// Redis's deps accepts (decimal with optional sign, fraction and exponent;
// inf/infinity), refuse hex floats, NaN, overflow to infinity and underflow
// to zero, as string2d does. Later Redis versions moved GCRA to its own key
// type and may accept TOKENS 0 as a peek; we follow the gcra.c we read,
// which refuses it.
//
// Throttle is the native THROTTLE: the same GCRA in nanoseconds with
// nothing rounded in the state, an emission interval of period/count rounded
// up (so the sustained rate never exceeds count per period), remaining as
// floor((tolerance - ttl) / interval) clamped to [0, limit], retry_after and
// reset_after in milliseconds rounded up, cost 0 as a probe. Because the
// TAT only moves forward and admission needs TAT - now <= tolerance, a clock
// that steps backwards never admits more than limit + (latest now - earliest
// now) / interval units over a run, provided the stored state is kept until
// the clock passes its TAT.
//
// Refund gives a THROTTLE key back n units (REFUND n): its TAT moves back n
// emission intervals, never before now, and the reply is the key's after
// it, never limited. A refunded unit lets one more pass, so the bound above
// grows by the units refunded and no more.
package gcra
