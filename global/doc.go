// Package global decides global limits (the GLOBAL option of the native verbs, in upstream
// mode) on each instance from a local allowance, and agrees on them through the upstream
// every sync interval, as Uber's global rate limiter does: a decision never waits on the
// network, and the instances together admit at most a stated bound past the limit.
//
// A request's path: package ratelimit parses the verb, finds the key's Entry (Lookup, or
// Ensure for a new key or new parameters) and calls Take, which takes the cost from the
// entry's allowance with a compare-and-swap and counts the units asked (the demand) and
// admitted. Nothing else happens on the request's path: no lock, no allocation, no I/O.
//
// The sync loop (sync.go) runs every interval. For each key asked since the last sync it
// sends, in one pipeline per upstream node (upstream.Client.SyncGlobal), the units it
// admitted and its demand, and gets back the key's global state, the units reported and
// not yet folded into it, and every instance's demand. A heartbeat in the same pipeline
// says which instances are alive. It then computes (allowance.go):
//
//	cur   = the state with the reported units folded in, past the limit as debt
//	avail = what the limit admits over [now, now+interval] from cur, debt paid first
//	grant = floor(avail * mine / total demand of the live instances), the fraction carried
//
// and the key's allowance becomes grant: what this instance may admit until the next sync.
// The state it computed is written back at its next sync (a fold, made only if no other
// instance folded first), so that the global state moves on without a compare-and-set
// retry, and the units reported meanwhile keep adding up beside it.
//
// The bound (docs/upstream.md): every unit admitted comes out of a grant, every grant is at
// most avail, and the global state forgets no reported unit (the debt), so what all
// instances admit over a span exceeds what the limit admits over it by at most what they
// can admit from one grant each, N * max(avail). An instance whose sync fails goes on with
// its last grant every interval (fail-soft) until the upstream answers again.
//
// Keys unused for a while leave the registry; the rest count towards maxmemory (Bytes).
package global
