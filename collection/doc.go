// Package collection holds Redis's collection types (hashes, sorted sets, lists and sets) as the
// keyspace stores them: each a run of bytes, a pack, with its count beside it in the
// keyspace's Value.Num, and the operations each command needs on those bytes. The package is
// pure: no locks, no clock, no I/O. The server locks the key's shard, reads the pack the
// keyspace holds (keyspace.Value.Bytes, aliasing its memory), calls an operation here that
// reads the pack or builds the new one in a scratch buffer of the caller's, and stores the
// result with SetLocked, which copies it.
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
// A string that Redis would take for an integer (the canonical decimal form of an int64:
// no sign but '-', no leading zero, "-0" is not one) is stored as that integer and read
// back as the same bytes, as listpack does: a millisecond timestamp takes 7 bytes instead of
// 14, which is most of a sliding log's memory. A score is an integer when it is one exactly
// (|score| <= 2^53, not -0), otherwise a float64.
package collection
