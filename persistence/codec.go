package persistence

import (
	"bytes"
	"encoding/binary"
)

// The store's keys: the marker that says the directory is throttled's, then one key per
// live key of the keyspace, its user key after dataPrefix.
var (
	metaKey   = []byte("\x00throttled.format")
	markKey   = []byte("\x00throttled.checkpoint") // Options.Checkpoint's value
	dataStart = []byte{'k'}                        // dataPrefix: the first data key
	dataEnd   = []byte{'l'}                        // past the last data key
)

// formatVersion is what metaKey holds: the layout of keys and values. A later layout that
// an older server cannot read bumps it. 2: a small sorted set may hold a member that is its
// integer score's decimal in short (collection/pack.go), which 1's servers would read as
// an empty member. A store of an earlier format is read as it is and marked with this one
// when opened, since what this server writes into it is in this format.
const formatVersion = 2

// dataKey appends the store key of user key to dst.
func dataKey(dst, key []byte) []byte {
	return append(append(dst, dataStart[0]), key...)
}

// A key holding a keyspace.Chunked value (a big sorted set, hash or set) is stored in
// pieces, so that a write to it costs the chunks it changed: its data key holds the value
// without its bytes, flagged as in chunk form (Value.Chunks), and each chunk has a key of
// its own, chunkPrefix and the user key's length (uvarint), the user key, and the chunk's
// seq (8 bytes, big-endian: the chunks in order), holding the chunk's bytes. Loading puts
// them back together into the value's chunk form.
var (
	chunkStart = []byte{'c'}
	chunkEnd   = []byte{'d'}
)

// chunkPrefix appends the prefix of key's chunk keys to dst.
func chunkPrefix(dst, key []byte) []byte {
	dst = append(dst, chunkStart[0])
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(dst, key...)
}

// chunkKey appends the store key of key's chunk seq to dst.
func chunkKey(dst, key []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(chunkPrefix(dst, key), seq)
}

// chunkRange returns the bounds of key's chunk keys: every one is the prefix and 8 bytes.
func chunkRange(key []byte) (start, end []byte) {
	start = chunkPrefix(nil, key)
	end = append(bytes.Clone(start), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	return start, end
}
