package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"

	"throttled/keyspace"
)

// The store's keys: the marker that says the directory is throttled's, then one key per
// live key of the keyspace, its user key after dataPrefix.
var (
	metaKey   = []byte("\x00throttled.format")
	dataStart = []byte{'k'} // dataPrefix: the first data key
	dataEnd   = []byte{'l'} // past the last data key
)

// formatVersion is what metaKey holds: the layout of keys and values. A later layout that
// an older server cannot read bumps it.
const formatVersion = 1

// dataKey appends the store key of user key to dst.
func dataKey(dst, key []byte) []byte {
	return append(append(dst, dataStart[0]), key...)
}

// A value is one version byte, then:
//
//	Kind     1 byte; stored as is, so kinds a later server adds keep working after a downgrade
//	flags    1 byte: valExpire, valNum, valNum2 say which of the next fields are present
//	Expire   int64 little-endian, Unix ns, when valExpire
//	Num      int64 little-endian, when valNum
//	Num2     int64 little-endian, when valNum2
//	Bytes    the rest
//
// A GCRA key with an expiry takes 19 bytes.
const (
	valueVersion = 1
	valExpire    = 1 << 0
	valNum       = 1 << 1
	valNum2      = 1 << 2
	valueHeader  = 3
)

// errBadValue wraps what decodeValue finds wrong with a stored value.
var errBadValue = errors.New("bad value")

// valueLen returns the encoded size of v.
func valueLen(v keyspace.Value) int {
	n := valueHeader + len(v.Bytes)
	for _, x := range [...]int64{v.Expire, v.Num, v.Num2} {
		if x != 0 {
			n += 8
		}
	}
	return n
}

// encodeValue writes v into dst, which is valueLen(v) long.
func encodeValue(dst []byte, v keyspace.Value) {
	dst[0], dst[1], dst[2] = valueVersion, byte(v.Kind), 0
	at := valueHeader
	for i, x := range [...]int64{v.Expire, v.Num, v.Num2} {
		if x != 0 {
			dst[2] |= 1 << i
			binary.LittleEndian.PutUint64(dst[at:], uint64(x))
			at += 8
		}
	}
	copy(dst[at:], v.Bytes)
}

// decodeValue reads a value written by encodeValue. Bytes alias b.
func decodeValue(b []byte) (keyspace.Value, error) {
	if len(b) < valueHeader {
		return keyspace.Value{}, fmt.Errorf("%w: %d bytes", errBadValue, len(b))
	}
	if b[0] != valueVersion {
		return keyspace.Value{}, fmt.Errorf("%w: version %d, this server reads %d", errBadValue, b[0], valueVersion)
	}
	flags := b[2]
	if flags&^(valExpire|valNum|valNum2) != 0 || keyspace.Kind(b[1]) == keyspace.None {
		return keyspace.Value{}, fmt.Errorf("%w: kind %d, flags %#x", errBadValue, b[1], flags)
	}
	v := keyspace.Value{Kind: keyspace.Kind(b[1])}
	at := valueHeader
	for i, dst := range [...]*int64{&v.Expire, &v.Num, &v.Num2} {
		if flags&(1<<i) == 0 {
			continue
		}
		if len(b) < at+8 {
			return keyspace.Value{}, fmt.Errorf("%w: truncated", errBadValue)
		}
		*dst = int64(binary.LittleEndian.Uint64(b[at:]))
		at += 8
	}
	if at < len(b) {
		v.Bytes = b[at:]
	}
	return v, nil
}
