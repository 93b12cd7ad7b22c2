// Package collection holds Redis's collection types (hashes, sorted sets, lists and sets) as the
// keyspace stores them: each a run of bytes, a pack, with its count beside it in the
// keyspace's Value.Num, and the operations each command needs on those bytes. The package is
// pure: no locks, no clock, no I/O. The server locks the key's shard, reads the pack the
// keyspace holds (keyspace.Value.Bytes, aliasing its memory), calls an operation here that
// reads the pack or builds the new one in a scratch buffer of the caller's, and stores the
// result with SetLocked, which copies it.
//
// That costs a copy of the whole at every write, which a small collection (a listpack on
// Redis: up to 128 or 512 entries of up to 64 bytes) can afford and a big one cannot: a
// member into a sorted set of a million would move some 20 MB twice. So a hash or sorted
// set past its listpack limits is a Big (big.go), which the keyspace holds by reference
// (keyspace.Value.Obj) and its commands change in place, under the shard's lock:
//
//   - its pack is cut into chunks of up to 128 entries and 4 KiB (one entry past that is
//     a chunk of its own), each an allocation of its own: a write walks and rewrites one
//     chunk, and a full chunk splits in two, an emptied one goes, a thin one merges with
//     its neighbour;
//   - the chunks' refs, in order, hold each one's count and first score, so that a place
//     by score is a binary search of the refs and a walk of one chunk, a rank a sum of
//     counts; a split moves the refs after it (32 bytes a chunk: some 800 KB in a set of
//     a million), which is the one cost that grows with the set, once per some 50 inserts;
//   - a hash table of the members (or fields) names each one's chunk by an id that a
//     split or merge relabels for the entries it moves only, so that finding a member
//     walks one chunk, and growing the table reads the hashes it keeps, no member.
//
// A list past one node (more than list-max-listpack-size's elements when that is positive,
// else 128, or more than 8 KiB) is a BigList (biglist.go), as Redis's quicklist: nodes of
// up to 128 elements and 4 KiB in a deque, so that a push or pop at either end rewrites
// one node, and an index (LINDEX, LSET, LRANGE's start) sums the nodes' counts from the
// nearer end, then walks one node; LINSERT and LREM rewrite the nodes they change, LPOS
// reads a copy of the pack. Its bytes form is its pack.
//
// A write thus costs O(log n) plus a chunk's bytes, and a value of 1 MB costs its size,
// once. A big set is a Big of empty values, as a big hash. Outside the process (the log,
// replication, DUMP) a Big is its pack (a set's behind an index of nothing): the bytes
// the old encoding had, which the data types cut into chunks again when they first read
// them. The commands by member, rank or score, ZRANGE by rank or score and a set's walks
// work on the chunks; the others (HGETALL, HSCAN, HRANDFIELD, ZSCAN, ZRANGEBYLEX, DUMP)
// read a copy of the pack, which costs about what their reply does.
//
// A pack is elements back to back, as Redis's listpack, without its header and back-links:
// a hash is field, value, field, value... in the order fields came (a field set again keeps
// its place); a sorted set is member, score, member, score... in order of score, then member
// by bytes; a list is its elements in order; a set is its members, in order of value while
// they are all integers (Redis's intset), else in the order they came, and past its small
// limits a hash of empty values (set.go). Each element is one of (pack.go):
//
//	tag 0x00-0xbf   a string of tag bytes, which follow
//	tag 0xc0        a string: its length as a uvarint, then its bytes
//	tag 0xc1-0xc8   an integer in tag-0xc0 bytes, little-endian two's complement
//	tag 0xc9        a float64, 8 bytes little-endian (a sorted set's score with a fraction)
//	tag 0xca-0xff   the integer tag-0xca, 0 to 53
//
// and, as a small sorted set's member only (zscoreMember), the bytes 0xc0 0x00 (a long string
// of no bytes, which is never written so), a byte n (at most 11) and n bytes: the member is
// the decimal of the entry's score, an integer, followed by those n bytes (none, or a first
// that is no digit). A sliding log's member, "1732512345000" or "1732512345000-42", takes 3
// or 6 bytes so instead of 7 or 17; Read gives it as an Int whose Str is the suffix. A big
// set, and DUMP, write every member in full.
//
// A string that Redis would take for an integer (the canonical decimal form of an int64:
// no sign but '-', no leading zero, "-0" is not one) is stored as that integer and read
// back as the same bytes, as listpack does: a millisecond timestamp takes 7 bytes instead of
// 14, which is most of a sliding log's memory. A score is an integer when it is one exactly
// (|score| <= 2^53, not -0), otherwise a float64.
package collection
