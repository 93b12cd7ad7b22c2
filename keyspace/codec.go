package keyspace

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// EncodedLen, Encode and DecodeValue give a value the form it has outside the process: in
// the persistence store and in the replication stream. A value is one version byte, then:
//
//	Kind     1 byte; stored as is, so kinds a later server adds keep working after a downgrade
//	flags    1 byte: valExpire, valNum, valNum2 say which of the next fields are present
//	Expire   int64 little-endian, Unix ns, when valExpire
//	Num      int64 little-endian, when valNum
//	Num2     int64 little-endian, when valNum2
//	Bytes    the rest: a Chunked object's chunk form when flags has valChunks
//
// A GCRA key with an expiry takes 19 bytes.
const (
	valueVersion = 1
	valExpire    = 1 << 0
	valNum       = 1 << 1
	valNum2      = 1 << 2
	valChunks    = 1 << 3
	valueHeader  = 3
)

// ErrBadValue wraps what DecodeValue finds wrong with an encoded value.
var ErrBadValue = errors.New("bad value")

// EncodedLen returns the encoded size of v.
func EncodedLen(v Value) int {
	n := valueHeader + len(v.Bytes)
	if c, ok := v.Obj.(Chunked); ok {
		n = valueHeader + c.ChunksLen()
	} else if v.Obj != nil {
		n = valueHeader + v.Obj.EncodedLen()
	}
	for _, x := range [...]int64{v.Expire, v.Num, v.Num2} {
		if x != 0 {
			n += 8
		}
	}
	return n
}

// Encode writes v into dst, which is EncodedLen(v) long; an Obj in its bytes form.
func Encode(dst []byte, v Value) {
	dst[0], dst[1], dst[2] = valueVersion, byte(v.Kind), 0
	at := valueHeader
	for i, x := range [...]int64{v.Expire, v.Num, v.Num2} {
		if x != 0 {
			dst[2] |= 1 << i
			binary.LittleEndian.PutUint64(dst[at:], uint64(x))
			at += 8
		}
	}
	if c, ok := v.Obj.(Chunked); ok {
		dst[2] |= valChunks
		c.AppendChunks(dst[at:at]) // ChunksLen bytes: within dst
		return
	}
	if v.Chunks {
		dst[2] |= valChunks
	}
	if v.Obj != nil {
		v.Obj.AppendEncoded(dst[at:at]) // EncodedLen bytes: within dst
		return
	}
	copy(dst[at:], v.Bytes)
}

// decodeValue reads a value written by encodeValue. Bytes alias b.
func DecodeValue(b []byte) (Value, error) {
	if len(b) < valueHeader {
		return Value{}, fmt.Errorf("%w: %d bytes", ErrBadValue, len(b))
	}
	if b[0] != valueVersion {
		return Value{}, fmt.Errorf("%w: version %d, this server reads %d", ErrBadValue, b[0], valueVersion)
	}
	flags := b[2]
	if flags&^(valExpire|valNum|valNum2|valChunks) != 0 || Kind(b[1]) == None {
		return Value{}, fmt.Errorf("%w: kind %d, flags %#x", ErrBadValue, b[1], flags)
	}
	v := Value{Kind: Kind(b[1]), Chunks: flags&valChunks != 0}
	at := valueHeader
	for i, dst := range [...]*int64{&v.Expire, &v.Num, &v.Num2} {
		if flags&(1<<i) == 0 {
			continue
		}
		if len(b) < at+8 {
			return Value{}, fmt.Errorf("%w: truncated", ErrBadValue)
		}
		*dst = int64(binary.LittleEndian.Uint64(b[at:]))
		at += 8
	}
	if at < len(b) {
		v.Bytes = b[at:]
	}
	return v, nil
}

// ChangedChunks is the first byte of changes made of chunk entries (Chunked).
const ChangedChunks = 'c'

// ErrBadChunk is NextChunk's error for bytes that are not a Chunked object's entries.
var ErrBadChunk = errors.New("keyspace: bad chunk entry")

// NextChunk reads the entry at the start of p, a Chunked object's chunk form or changes:
// the chunk's seq and bytes (empty for a chunk gone), and the entries after it.
func NextChunk(p []byte) (seq uint64, b, rest []byte, err error) {
	if len(p) < 9 {
		return 0, nil, nil, ErrBadChunk
	}
	seq = binary.LittleEndian.Uint64(p)
	n, w := binary.Uvarint(p[8:])
	if w <= 0 || n > uint64(len(p)-8-w) {
		return 0, nil, nil, ErrBadChunk
	}
	at := 8 + w
	return seq, p[at : at+int(n)], p[at+int(n):], nil
}

// AppendChunk appends the entry of chunk seq holding b (none: gone) to dst.
func AppendChunk(dst []byte, seq uint64, b []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, seq)
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}
