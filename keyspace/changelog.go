package keyspace

import (
	"encoding/binary"
	mathbits "math/bits"
)

// An appending feed (RedoFeed) records every change in order, as it is written, in the
// change log form below, instead of the latest state of each key changed: its consumer
// writes the log out after every event-loop round, so that a key rarely changes twice
// between two drains, and a copy per change costs less than finding the key's copy to write
// over (capture.go's index and bit per record id), then reading the copies back one by one
// at the drain. A drain hands the log to a LogRecorder as it is, one append. Values that a
// copy would not hold (longer than maxCaptured encoded, or Chunked, whose changes a Patcher
// takes) are queued by record id instead, once each, and drained after the log with their
// state at the drain, which is newer than any change of the key in the log; a deletion
// unqueues its key's id. The log is bounded (appendMaxLog): a shard whose log overflows
// asks for a full rewrite, as a deletion log that overflows does.
//
// The change log form: changes back to back, each its length (uvarint), then an op:
// LogPut, the key's length (uvarint), the key and the value (Encode); or LogDelete, the
// key's length and the key. A consumer may add ops of its own to the same framing.

// The ops of the change log form.
const (
	LogPut    = 'P'
	LogDelete = 'D'
)

// appendMaxLog is the most bytes of changes an appending feed's shard keeps between two
// drains: about 25,000 small changes, far more than an event-loop round makes in a shard.
const appendMaxLog = 1 << 20

// A LogRecorder is a Recorder of an appending feed that takes the feed's log as it is
// (Log) instead of a Delete or Put per change; Put (or Patch, or PutEncoded) still takes
// the values queued by record id.
type LogRecorder interface {
	Recorder
	// Log is called with changes in the change log form, valid only during the call.
	Log(changes []byte)
}

// AppendLogPut appends to dst the change setting key to v, in the change log form.
func AppendLogPut(dst, key []byte, v Value) []byte { return appendLogPut(dst, key, v, EncodedLen(v)) }

// appendLogPut is AppendLogPut of v, which encodes to n bytes.
func appendLogPut(dst, key []byte, v Value, n int) []byte {
	dst = binary.AppendUvarint(dst, uint64(1+uvarintLen(len(key))+len(key)+n))
	dst = append(dst, LogPut)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	at := len(dst)
	dst = append(dst, make([]byte, n)...)
	Encode(dst[at:], v)
	return dst
}

// AppendLogDelete appends to dst the deletion of key, in the change log form.
func AppendLogDelete(dst, key []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(1+uvarintLen(len(key))+len(key)))
	dst = append(dst, LogDelete)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	return append(dst, key...)
}

// appendWrite records that key, record id, was set to v.
func (t *tracker) appendWrite(id uint32, key []byte, v Value) {
	if t.lost {
		return
	}
	n := EncodedLen(v)
	if _, chunked := v.Obj.(Chunked); chunked || n > maxCaptured {
		t.queue(id)
		return
	}
	if len(t.log)+2*binary.MaxVarintLen32+1+len(key)+n > t.maxLog {
		t.overflow()
		return
	}
	t.log = appendLogPut(t.log, key, v, n)
	t.appended()
}

// queue queues record id, whose value the log does not copy, to be drained by id.
func (t *tracker) queue(id uint32) {
	if t.markDirty(id) {
		t.dirtyIDs = append(t.dirtyIDs, id)
		t.queued = true
		t.appended()
	}
}

// appendEntry is appendWrite for key, record id, whose entry e holds no object and no byte
// value kept out of it: val is its inline byte value, nil for none (GCRA, a counter). The
// entry's fields lie in the order Encode writes them, and the flags that say which are
// there map onto Encode's, so the change is copied from the entry without assembling a
// Value (a tenth of the redo log's cost per write at P=16).
func (t *tracker) appendEntry(id uint32, key, e, val []byte) {
	if t.lost {
		return
	}
	b := e[eID+3]
	flags := b>>6&1 | b>>4&2 | e[0]>>4&4 // idExpire, idNum and hdrWide: valExpire, valNum, valNum2
	fields := 8 * mathbits.OnesCount8(flags)
	n := valueHeader + fields + len(val)
	if n > maxCaptured {
		t.queue(id)
		return
	}
	if len(t.log)+2*binary.MaxVarintLen32+1+len(key)+n > t.maxLog {
		t.overflow()
		return
	}
	t.log = binary.AppendUvarint(t.log, uint64(1+uvarintLen(len(key))+len(key)+n))
	t.log = append(t.log, LogPut)
	t.log = binary.AppendUvarint(t.log, uint64(len(key)))
	t.log = append(t.log, key...)
	t.log = append(t.log, valueVersion, e[0]&hdrKind, flags)
	t.log = append(t.log, e[eFields:eFields+fields]...)
	t.log = append(t.log, val...)
	t.appended()
}

// appendDelete records that key, record id, was deleted.
func (t *tracker) appendDelete(id uint32, key []byte) {
	if t.lost {
		return
	}
	if t.queued && t.dirty(id) {
		t.dirtyBits[id/64] &^= 1 << (id % 64) // its state is gone: the deletion says so
	}
	if len(t.log)+2*binary.MaxVarintLen32+1+len(key) > t.maxLog {
		t.overflow()
		return
	}
	t.log = AppendLogDelete(t.log, key)
	t.appended()
}

// overflow gives up an appending feed's log, which grew past its limit: the shard asks for
// a full rewrite.
func (t *tracker) overflow() {
	t.lost, t.log, t.logHead = true, nil, 0
	t.appended()
}

// drainAppended is Drain for an appending tracker t of s: the log, then the values queued by
// record id. It reports whether it stopped early. When none was queued since the last full
// drain (the common case: small values), it touches only the tracker's first cache line.
func (s *Shard) drainAppended(t *tracker, f Feed, r Recorder) (more bool) {
	if lr, ok := r.(LogRecorder); ok {
		lr.Log(t.log[t.logHead:])
		t.logHead = len(t.log)
	}
	for t.logHead < len(t.log) {
		n, w := uvarint(t.log[t.logHead:])
		c := t.log[t.logHead+w : t.logHead+w+n]
		t.logHead += w + n
		klen, w := uvarint(c[1:])
		key := c[1+w : 1+w+klen]
		if c[0] == LogDelete {
			r.Delete(key)
		} else {
			v, err := DecodeValue(c[1+w+klen:])
			if err != nil {
				panic("keyspace: an appended value does not decode: " + err.Error())
			}
			r.Put(key, v)
		}
		if r.Full() && t.logHead < len(t.log) {
			return true
		}
	}
	if t.queued {
		return s.drainDirty(t, f, r) // its trim clears queued
	}
	t.emptyLog()
	t.pending.Store(0)
	return false
}
