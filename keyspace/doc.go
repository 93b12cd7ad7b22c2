// Package keyspace is the in-memory store of throttled: the state of every key lives here.
//
// A request's path through it: the server finds the key's Shard (Keyspace.Shard), locks it,
// reads the key's state with GetLocked (an expired key is deleted there and reported missing:
// lazy expiry), computes the new state outside this package (gcra, algorithms), writes it back
// with SetLocked and unlocks. A command over several keys locks all their shards at once with
// LockKeys, which takes them in ascending order so that two such commands never deadlock.
// Nothing here reads the clock or starts a goroutine: every call that cares about time takes
// now (Unix ns), and the server drives active expiry by calling ExpireCycle from its ticker.
//
// Memory per key is a headline figure, so a shard is not a Go map. It holds four structures,
// three of them free of pointers so that the garbage collector never has to scan them:
//
//   - index: open addressing with linear probing and backward-shift deletion (no tombstones).
//     Each uint64 slot holds 32 bits of the key's hash and its record id + 1 (0 is empty), so
//     a probe compares hashes without touching the key, and resizing never rehashes a key.
//   - records: fixed 20-byte records (expiry, Num, offset of the key's entry) in chunks of
//     8 KiB. A record id never changes while its key lives, whatever is written to the key;
//     Scan walks record ids, which gives Redis's guarantee that a key present for the whole
//     iteration is returned at least once. Free ids are reused lowest first, and a chunk
//     whose records are all free is given back, so memory follows the keys in use.
//   - arena: per key one entry [header][uvarint key length][key][Num2], the header holding
//     the Kind and two flags; Num2 takes its 8 bytes only when it is not zero (a GCRA key
//     needs none). Entries that die or move become garbage; the arena is compacted when
//     more than half of it is garbage. Keys longer than 1 KiB live in a side map instead.
//   - vals: the byte values (strings, later logs), in a map from record id.
//
// A 14-byte GCRA key with an expiry thus costs 20 bytes of record, 16 bytes of arena and
// about 12 bytes of index, plus slack: about 50 bytes (see BenchmarkMemoryPerGCRAKey).
// Growing the index rehashes a shard in one step, so shards should stay small: at 256 shards
// a million keys make about 4,000 per shard.
package keyspace
