package persistence

// The store's keys: the marker that says the directory is throttled's, then one key per
// live key of the keyspace, its user key after dataPrefix.
var (
	metaKey   = []byte("\x00throttled.format")
	markKey   = []byte("\x00throttled.checkpoint") // Options.Checkpoint's value
	dataStart = []byte{'k'}                        // dataPrefix: the first data key
	dataEnd   = []byte{'l'}                        // past the last data key
)

// formatVersion is what metaKey holds: the layout of keys and values. A later layout that
// an older server cannot read bumps it.
const formatVersion = 1

// dataKey appends the store key of user key to dst.
func dataKey(dst, key []byte) []byte {
	return append(append(dst, dataStart[0]), key...)
}
