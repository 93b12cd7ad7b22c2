// Package upstream keeps the state of every limit in a Redis or a Redis Cluster shared by
// many throttled instances, while the maths stays in Go: the caller's Call evaluates itself
// on the states this package hands it, and this package makes the result hold on the
// upstream with a compare-and-set.
//
// A request's path: the server parses a rate-limit verb into a Call and first asks Settle,
// which evaluates it on the state last seen for its key (a local cache, a keyspace of its
// own). A denial there is final (other instances can only consume, so the key stays denied at
// least as long) and is answered without the upstream. Otherwise the server Submits the Call
// and parks the client's reply. One dispatcher goroutine gathers the submitted calls into a
// batch: calls on one key are chained, each evaluated on the state the one before it leaves,
// and become a single CAS of the key from the state last seen to the chain's last state;
// calls that change nothing but whose decision depends on the state being current become a
// check of the same script. The batch goes out as one pipeline on one of a few connections
// while the dispatcher builds the next. A CAS that fails hands back the key's current value:
// the cache takes it and the calls are evaluated again in the next batch, with no extra
// read. Each key's value on the upstream is an 8-byte random tag (what the CAS compares),
// then the state as persistence encodes it; it expires when the state goes idle.
//
// Time is the upstream's: the offset of its TIME from the local monotonic clock, refreshed
// every second, so that every instance evaluates with one clock.
//
// When round trips fail or time out, a circuit breaker opens: calls are handed back as
// Unavailable and the server decides them from its local limiter. A prober pings the upstream
// and, once it answers, lets the next batch through (half-open); its success closes the
// breaker. Nothing learnt locally is ever written to the upstream.
package upstream
