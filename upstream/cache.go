package upstream

import (
	"encoding/binary"
	"time"

	"github.com/throttledhq/throttled/keyspace"
)

// The cache is a keyspace of the states last seen on the upstream, one entry per key, kept
// until the upstream's key expires. An entry's Bytes are the value's tag (8 bytes), the
// state's exact expiry in Unix ns (8 bytes, little-endian) and the state's own Bytes; its
// Kind, Num and Num2 are the state's, its Expire the upstream's (whole milliseconds, PXAT).
// A key not in the cache is unknown: taken as missing, but a decision made on that needs
// verifying.

// tagLen is the length of the tag at the front of each value on the upstream.
const tagLen = 8

// cached is a cache entry: a value seen on the upstream.
type cached struct {
	tag [tagLen]byte
	v   keyspace.Value // with its exact Expire; Bytes alias the cache or the reply
}

// state is the entry's state at now: missing (Kind None) once idle.
func (e *cached) state(now int64) keyspace.Value {
	if e.v.Expire <= now {
		return keyspace.Value{}
	}
	return e.v
}

// getCached returns key's entry in sh, which is locked; its bytes are valid while it is.
func getCached(sh *keyspace.Shard, key []byte, now int64) (cached, bool) {
	v, ok := sh.GetLocked(key, now)
	if !ok || len(v.Bytes) < tagLen+8 {
		return cached{}, false
	}
	var e cached
	copy(e.tag[:], v.Bytes)
	e.v = v
	e.v.Expire = int64(binary.LittleEndian.Uint64(v.Bytes[tagLen:]))
	e.v.Bytes = v.Bytes[tagLen+8:]
	if len(e.v.Bytes) == 0 {
		e.v.Bytes = nil
	}
	return e, true
}

// cacheGrace is how long past now an entry stays even when its state is idle: the upstream
// keeps the key until its own clock reaches PXAT, and a CAS must expect the tag till then.
const cacheGrace = int64(time.Second)

// putCached stores e at key in sh, which is locked; buf is scratch space, returned grown.
func putCached(sh *keyspace.Shard, key []byte, e *cached, now int64, buf []byte) []byte {
	buf = append(buf[:0], e.tag[:]...)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(e.v.Expire))
	buf = append(buf, e.v.Bytes...)
	v := e.v
	v.Bytes = buf
	v.Expire = max(pxat(e.v.Expire)*1e6, now+cacheGrace)
	sh.SetLocked(key, v)
	return buf
}

// pxat is the upstream's expiry of a state that is idle at expire ns: whole ms, rounded up.
func pxat(expire int64) int64 { return (expire + 1e6 - 1) / 1e6 }

// encode appends the upstream's value of state v with tag to dst.
func encode(dst []byte, tag [tagLen]byte, v keyspace.Value) []byte {
	dst = append(dst, tag[:]...)
	n := len(dst)
	dst = append(dst, make([]byte, keyspace.EncodedLen(v))...)
	keyspace.Encode(dst[n:], v)
	return dst
}

// decode reads a value from the upstream.
func decode(b []byte) (cached, error) {
	if len(b) <= tagLen {
		return cached{}, ErrForeignValue
	}
	v, err := keyspace.DecodeValue(b[tagLen:])
	if err != nil || v.Expire == 0 {
		return cached{}, ErrForeignValue
	}
	var e cached
	copy(e.tag[:], b)
	e.v = v
	return e, nil
}
