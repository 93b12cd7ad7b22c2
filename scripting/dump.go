package scripting

import (
	"encoding/binary"
	"errors"
	"hash/crc64"
)

// FUNCTION DUMP's payload is Redis 7.0's, so that libraries move between Redis and
// throttled both ways: for each library the RDB opcode FUNCTION2 (245) and its code as an
// RDB string; then the RDB version (10, two bytes little-endian) and the CRC-64 (Jones,
// as Redis computes it: reflected, no initial or final inversion) of all before it, eight
// bytes little-endian. Redis writes a long code LZF-compressed; Dump writes it plain,
// which Redis reads as well, and ParseDump reads both. The record that keeps the
// libraries on disk and carries them to replicas is the same payload.

const (
	rdbOpFunction2    = 245 // RDB_OPCODE_FUNCTION2
	rdbOpFunctionPre  = 246 // RDB_OPCODE_FUNCTION_PRE_GA: 7.0's release candidates'
	rdbVersion        = 10  // RDB_VERSION of Redis 7.0
	dumpFooterLen     = 10
	rdbEncVal         = 3 // a length's top bits: an encoded string follows
	rdbEncLZF         = 3 // an encoded string compressed with LZF
	maxDecompressSize = 1 << 29
)

var crcTable = crc64.MakeTable(0x95AC9329AC4BC9B5) // Jones's polynomial, reflected

// redisCRC64 is Redis's crc64(0, b).
func redisCRC64(b []byte) uint64 { return ^crc64.Update(^uint64(0), crcTable, b) }

// Errors of FUNCTION RESTORE's payload, Redis's texts.
var (
	errDumpPayload = errors.New("DUMP payload version or checksum are wrong")
	errDumpType    = errors.New("can not read data type")
	errDumpPreGA   = errors.New("Pre-GA function format not supported")
	errDumpNotFunc = errors.New("given type is not a function")
	errDumpLoad    = errors.New("failed loading the given functions payload")
)

// Dump returns the payload of libs.
func Dump(libs []*Library) []byte {
	var b []byte
	for _, l := range libs {
		b = append(b, rdbOpFunction2)
		b = appendRDBLen(b, uint64(len(l.Code)))
		b = append(b, l.Code...)
	}
	b = binary.LittleEndian.AppendUint16(b, rdbVersion)
	return binary.LittleEndian.AppendUint64(b, redisCRC64(b))
}

// appendRDBLen appends n as an RDB length.
func appendRDBLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0x81), n)
}

// ParseDump checks a payload's version and checksum and returns each library's code, or
// Redis's error.
func ParseDump(b []byte) ([][]byte, error) {
	if len(b) < dumpFooterLen {
		return nil, errDumpPayload
	}
	foot := b[len(b)-dumpFooterLen:]
	if binary.LittleEndian.Uint16(foot) > rdbVersion || binary.LittleEndian.Uint64(foot[2:]) != redisCRC64(b[:len(b)-8]) {
		return nil, errDumpPayload
	}
	r := rdbReader{b: b[:len(b)-dumpFooterLen]}
	var codes [][]byte
	for len(r.b) > 0 {
		switch op := r.b[0]; op {
		case rdbOpFunction2:
		case rdbOpFunctionPre:
			return nil, errDumpPreGA
		default:
			return nil, errDumpNotFunc
		}
		r.b = r.b[1:]
		code, ok := r.str()
		if !ok {
			return nil, errDumpLoad
		}
		codes = append(codes, code)
	}
	return codes, nil
}

// rdbReader reads RDB values from b.
type rdbReader struct{ b []byte }

// length reads an RDB length; encoded is set when it is a string encoding's number.
func (r *rdbReader) length() (n uint64, encoded, ok bool) {
	if len(r.b) == 0 {
		return 0, false, false
	}
	c := r.b[0]
	switch c >> 6 {
	case 0:
		r.b = r.b[1:]
		return uint64(c & 0x3f), false, true
	case 1:
		if len(r.b) < 2 {
			return 0, false, false
		}
		n = uint64(c&0x3f)<<8 | uint64(r.b[1])
		r.b = r.b[2:]
		return n, false, true
	case rdbEncVal:
		r.b = r.b[1:]
		return uint64(c & 0x3f), true, true
	}
	switch {
	case c == 0x80 && len(r.b) >= 5:
		n = uint64(binary.BigEndian.Uint32(r.b[1:]))
		r.b = r.b[5:]
		return n, false, true
	case c == 0x81 && len(r.b) >= 9:
		n = binary.BigEndian.Uint64(r.b[1:])
		r.b = r.b[9:]
		return n, false, true
	}
	return 0, false, false
}

// str reads an RDB string: plain, an integer or LZF-compressed.
func (r *rdbReader) str() ([]byte, bool) {
	n, encoded, ok := r.length()
	if !ok {
		return nil, false
	}
	if !encoded {
		if n > uint64(len(r.b)) {
			return nil, false
		}
		s := r.b[:n]
		r.b = r.b[n:]
		return s, true
	}
	var v int64
	switch n {
	case 0, 1, 2: // an 8, 16 or 32-bit integer, little-endian
		size := 1 << n
		if len(r.b) < size {
			return nil, false
		}
		switch size {
		case 1:
			v = int64(int8(r.b[0]))
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(r.b)))
		default:
			v = int64(int32(binary.LittleEndian.Uint32(r.b)))
		}
		r.b = r.b[size:]
		return []byte(itoa(int(v))), true
	case rdbEncLZF:
		clen, enc1, ok1 := r.length()
		ulen, enc2, ok2 := r.length()
		if !ok1 || !ok2 || enc1 || enc2 || clen > uint64(len(r.b)) || ulen > maxDecompressSize {
			return nil, false
		}
		out, ok := lzfDecompress(r.b[:clen], int(ulen))
		r.b = r.b[clen:]
		return out, ok
	}
	return nil, false
}

// lzfDecompress expands LZF data to exactly n bytes: runs of literals (a control byte
// below 32: that many plus one bytes follow) and back references (the length in the top
// three bits, seven meaning a byte more follows, and the offset in the rest and the next
// byte).
func lzfDecompress(in []byte, n int) ([]byte, bool) {
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 {
			run := ctrl + 1
			if i+run > len(in) || len(out)+run > n {
				return nil, false
			}
			out = append(out, in[i:i+run]...)
			i += run
			continue
		}
		length := ctrl >> 5
		if length == 7 {
			if i >= len(in) {
				return nil, false
			}
			length += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		ref := len(out) - (ctrl&0x1f)<<8 - int(in[i]) - 1
		i++
		length += 2
		if ref < 0 || len(out)+length > n {
			return nil, false
		}
		for k := 0; k < length; k++ { // byte by byte: a reference may overlap what it writes
			out = append(out, out[ref+k])
		}
	}
	return out, len(out) == n
}
