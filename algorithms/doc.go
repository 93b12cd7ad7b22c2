// Package algorithms is the pure arithmetic of the native rate-limit verbs
// other than THROTTLE (whose GCRA is package gcra): TOKENBUCKET, LEAKYBUCKET,
// SLIDE (exact, and APPROX), WINDOW, CONCURRENCY.ACQUIRE and
// CONCURRENCY.RELEASE. It does no I/O, takes no locks, never reads the clock
// and keeps no mutable state: the caller passes the time and the key's state,
// and gets back a decision and the state to keep.
//
// # A request's path
//
// The server parses the verb's arguments into the algorithm's parameters
// (TokenBucket, LeakyBucket, SlidingLog, SlidingCounter, FixedWindow,
// Concurrency; durations in ns) and may call Validate to reject a bad one
// before touching the key. Under the key's shard lock it loads the key's
// State (Num, Num2 and, for the log and the holders, Bytes; exists is false
// for a missing key), then calls Take with its clock in Unix ns, the cost
// (COST, default 1) and a scratch buffer of its own. When Take says store
// (and the call is not a PEEK) it writes the returned State, with the key
// expiring at State.Expire, when the state is idle again; then it replies
// the Decision, rounding its times up to milliseconds (Delay is LEAKYBUCKET's
// sixth element). CONCURRENCY.RELEASE calls Release instead. Every
// parameter struct is an Algorithm, so ALLOF can check several limits and
// store all of their states only if all allow.
//
// REFUND n calls Refund instead of Take (every algorithm but Concurrency):
// it gives back up to n consumed units in the algorithm's own terms and
// takes nothing; its Decision is a probe's of the state it leaves, never
// limited, and a state it leaves idle has Expire 0 (delete the key). See
// refund.go. Priority tiers (TIERS, PRIORITY) need no call of their own: a
// tier's Share of the limit leaves Reserve units to the tiers above it, and a
// call of cost c passes when Take would admit c + Reserve (evaluated, not
// stored); Tier turns the decision into the tier's. See tier.go.
//
// The rules every algorithm keeps:
//
//   - Units are whatever the caller counts (requests, bytes); cost is the
//     units of this request, and cost 0 is a probe that describes the key
//     and stores nothing. For Concurrency, cost is the number of slots the
//     id holds. A cost above the limit is denied with RetryAfter -1, never
//     an error.
//   - A denied call, a probe and an error never store and return the state
//     they were given. Remaining is in [0, Limit]; a denied call has
//     RetryAfter > 0 (the exact time until the same call passes) or -1.
//   - Nothing allocates once scratch has grown to the state's size, and
//     nothing panics: arguments are checked, all arithmetic is exact in 64
//     or 128 bits, and a stored state that does not decode is ErrCorrupt
//     (never read as empty, which would hand out a fresh quota).
//   - Calling a key with new parameters adapts its state and never refills
//     it: what the state has counted keeps counting (each algorithm says
//     how).
//   - A clock that steps back never lets more through: each algorithm
//     evaluates at the latest time its state has seen.
//   - Times are Unix ns before MaxTime (2116); periods, windows and leases
//     are at most MaxDuration (73 years). Errors are sentinel errors whose
//     text, prefixed with "ERR ", is the reply; the parameters' errors name
//     the argument.
//
// # Choosing an algorithm
//
// Token bucket (TOKENBUCKET capacity refill period). Burst: capacity at once
// from idle, then refill per period, spread evenly (10 per second gives a
// token every 100ms). State: 16 bytes. Accuracy: exact; the refill is
// continuous in integer arithmetic, never drifting, and no interval of
// length L admits more than capacity + refill*L/period. (Only when the fill
// time times refill/gcd(refill, period) passes about 2^51 ns, e.g. 5000
// tokens at 1 a day, does the state round the refill's phase, towards slow.) The usual choice for
// an API: bursts allowed, a steady average enforced.
//
// Leaky bucket as a queue (LEAKYBUCKET capacity leak period). Burst: up to
// capacity units are admitted at once, but each caller is told to wait
// (delay) until the units ahead of it have drained, so a caller that honours
// it reaches the downstream at the leak rate, one unit every period/leak.
// State: 16 bytes. Accuracy: exact, as the token bucket. For smoothing
// traffic into something that cannot take bursts.
//
// Sliding log (SLIDE limit window). Burst: limit at once, then nothing until
// those admissions leave the window; never more than limit in any window of
// that length, with no boundary burst. State: grows with the admissions in
// the window: one entry per distinct µs, about 3 bytes over a one-minute
// window (298 bytes for 100 admissions spread over it, 397 over an hour), at
// most 4096 entries. Accuracy: exact to the µs, rounded so that admissions
// leave late, never early; past 4096 distinct times in a window, close
// entries merge towards admitting less. For strict limits that are not too
// large (logins, signups, payments).
//
// Sliding counter (SLIDE limit window APPROX). Burst: limit at once, and up
// to twice the limit within one window's time in the worst case, when the
// previous window's units all came at its end. State: 16 bytes. Accuracy:
// approximate: estimates the window ending now as the current fixed window's
// count plus the previous one's weighted by how much of it the sliding window
// still covers (assuming its units were spread evenly); the comparison
// itself is exact. Limit at most 2^32-1. For high limits at O(1) memory when
// a rare overshoot is acceptable.
//
// Fixed window (WINDOW limit window). Burst: limit per window aligned to the
// epoch, so up to twice the limit across a boundary (limit at 11:59:59.9,
// limit at 12:00:00.0). State: 16 bytes. Accuracy: exact per window. The
// cheapest, and the easiest to explain ("1000 per calendar hour"). With a
// Calendar (WINDOW limit 1mo TZ Europe/Berlin) the windows are the days,
// ISO weeks, months or years of a time zone, of their real lengths: quotas
// as they are billed. The caller passes the *time.Location; the calendar
// maths (calendar.go) reads only it and now.
//
// Concurrency (CONCURRENCY.ACQUIRE limit lease id, CONCURRENCY.RELEASE id).
// Not a rate: at most limit slots held at once, each by an id for at most
// lease (renewed by acquiring again) or until released. State: per holder
// its id plus 2 to 5 bytes, at most 65536 holders. Accuracy: exact to the
// µs, leases ending late, never early. For limiting work in flight
// (connections, jobs) rather than work started per second.
package algorithms
