package persistence

import "throttled/keyspace"

// AppendValue appends the encoding of v that the store keeps (see encodeValue) to dst:
// the form in which an upstream Redis holds a state too, so that one layout serves both.
func AppendValue(dst []byte, v keyspace.Value) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, valueLen(v))...)
	encodeValue(dst[n:], v)
	return dst
}

// DecodeValue reads a value AppendValue wrote; its Bytes alias b.
func DecodeValue(b []byte) (keyspace.Value, error) { return decodeValue(b) }
