// Package keyspace is the in-memory store of throttled: the state of every key lives here.
//
// A request's path through it: the server finds the key's Shard (Keyspace.Shard), locks it,
// reads the key's state with GetLocked (an expired key is deleted there and reported missing:
// lazy expiry), computes the new state outside this package (gcra, algorithms), writes it back
// with SetLocked and unlocks. A command over several keys locks all their shards at once with
// LockKeys, which takes them in ascending order so that two such commands never deadlock.
// Nothing here reads the clock or starts a goroutine: every call that cares about time takes
// now (Unix ns), and the server drives active expiry by calling ExpireStep from its ticker,
// step after step while its time budget lasts.
//
// Memory per key is a headline figure, so a shard is not a Go map. Its big structures hold no
// pointers, so that the garbage collector never scans them:
//
//   - index: open addressing with linear probing and backward-shift deletion (no tombstones).
//     A uint64 slot holds 32 bits of the key's hash and the offset of its entry, so a probe
//     compares hashes without touching keys, a lookup touches one slot and one entry, and
//     resizing reads no key.
//   - arena: 8 KiB blocks of entries, one per key: a header (the Kind and two flags), the
//     record id, the access clock (3 bytes: the second of the last read or write, modulo
//     2^24, which OBJECT IDLETIME and the LRU policies read: clock.go), then Expire, Num and
//     Num2, each only when it is not zero (a GCRA key has
//     the first two; a hash without an expiry, none), the key's length and the key, then
//     the byte value's length and the bytes when there are any. Reads and in-place updates
//     of the fields need no decoding. An entry that dies or changes size is written anew
//     at the tail and leaves dead bytes behind (unless it ended the tail block: then it is
//     rewritten where it was, so a key given an expiry right after it was written leaves
//     none); a block
//     more than half dead has its live entries moved to the tail block and is freed, so
//     compaction is incremental. A byte value that outgrows its entry moves with 32 bytes
//     of room after it (growRoom), so that a sliding log, 3 bytes longer at each
//     admission, moves at one admission in eleven rather than at each (a move and the
//     compaction it brings cost more than the rest of the write); it stays in place while
//     it grows into its room or shrinks leaving at most 64 bytes (maxRoom). A block
//     freed after GetLocked returned a byte value is not reused before Unlock, so that the
//     bytes stay valid while other keys are written. Keys longer than 1 KiB live in a side
//     map.
//   - ids: record ids, stable while a key lives whatever is written to it and wherever its
//     entry moves; ids[id] is the entry's offset. Free ids are reused lowest first, so the
//     ids stay dense. Scan walks ids, which gives Redis's guarantee that a key present for a
//     whole SCAN is returned at least once.
//   - vals: byte values longer than 512 bytes (strings, long logs), in a map from record id.
//   - objs: values held by reference (Value.Obj: big collections, which their commands
//     change in place instead of handing SetLocked a new copy to store), in a map from
//     record id. Encode writes such a value in its bytes form.
//
// A 14-byte GCRA key with an expiry thus costs a 39-byte entry, 4 bytes of ids and about
// 12 bytes of index: about 57 bytes on the heap, against about 134 for a map[string]*entry
// (see BenchmarkMemoryPerGCRAKey). A sliding log with one admission (a 12-byte value)
// makes the entry 52 bytes: about 75 bytes a key, against about 140 with the value in a
// map (BenchmarkMemoryPerLogKey). The access clock took those 3 bytes of each (55 and 72
// before it); a key never touched would have saved them, but Redis answers OBJECT IDLETIME
// for every key, and a side array only under an LRU policy cost 4 bytes and a cache miss. A new value has no room, so that figure stands; a log
// that has grown keeps at most 33 bytes of room (with its length byte), 17 on average from
// 2 to 100 admissions (TestValueRoomMemory). 300,000 logs grown one admission at a time to
// 20 take about 180 bytes a key with the dead bytes their moves leave in the arena, where
// moving at every admission took about 205 (BenchmarkMemoryPerGrownLogKey). Growing the
// index is one pass over it under the shard lock, so shards should stay small: at 256
// shards a million keys make about 4,000 each.
// A shard's arena holds at most 4 GiB of entries (about 100 million small keys); past that
// SetLocked panics.
//
// Active expiry (ExpireStep) works as Redis's does: it goes from shard to shard in rounds, and
// in each walks the index from where it left off, in samples of 20 keys with an expiry,
// removing the expired ones, for as long as more than a tenth of a sample had expired. The
// walk follows the index rather than the ids because the index is in hash order, so that a
// sample is a fair one, while ids are in the order keys came (free ids are reused lowest
// first): a walk over them found the expired keys bunched up where it had not been for a
// while, stopped at the fresh ones just written behind it, and under a churn of short-lived
// keys fell behind for good. So a shard with few expired keys costs a sample a round, one
// mostly expired is cleaned in the round, and how long that takes is the caller's to bound:
// a call does at most the work it is given, and holds a shard's lock for a bounded part of it.
//
// Change tracking (Track, Drain) serves persistence and replication, each a feed of its own:
// with it on, a shard queues the record id of every key written since its last Drain once
// (a bit per id says it is queued) and appends the keys it deletes or expires to a log.
// Drain hands over the deletions, then the current state of each queued key, so a hot key
// costs one write per batch however often it changes. The replication feed, drained every
// millisecond or so, copies each key's state as it is written instead of reading it back at
// the drain (capture.go); the redo log's feed, drained after every event-loop round, logs
// every change in order instead, in the form its consumer writes out (changelog.go). The
// deletion log is bounded: a shard whose log overflows (its
// changes were not drained for too long) asks for a full rewrite instead.
//
// Watches (WatchLocked) serve Redis's WATCH: a write, deletion or expiry of a watched key
// marks its watches changed. A shard nobody watches pays one nil test per write for them.
//
// Keyspace notifications (SetNotifier, notify.go): the keyspace fires the events it causes
// itself, which no command's handler sees: "expired" where a lookup, DeleteAtLocked, active
// expiry or RandomKey removes an expired key, "evicted" where Evict removes one, "new" where
// SetLocked creates one. They fire under the shard's lock, before the removal, through the
// server's notify.Notifier; with their classes off each costs an atomic load.
package keyspace
