package datatype

import (
	"fmt"
	"sync/atomic"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/resp"
)

// The glue the collection commands share (hash.go, zset.go, list.go): the operations on
// the encoded bytes are package collection's.

// kindLocked returns the live value at key when it holds kind, false when there is
// none, and keyspace.ErrWrongType when it holds another kind. The shard is locked. A
// collection's Num is its element count, even where storeCollectionLocked left it out.
func (dt *Family) kindLocked(c *command.Ctx, sh *keyspace.Shard, key []byte, kind keyspace.Kind, now int64) (keyspace.Value, bool, error) {
	v, ok := sh.GetLocked(key, now)
	if c.Reading { // a read-only command's lookups count as keyspace hits and misses
		c.CountLookup(sh, key, ok)
	}
	if !ok {
		return v, false, nil
	}
	if v.Kind != kind {
		return v, false, keyspace.ErrWrongType
	}
	if v.Obj == nil && (v.Num2&BigEncoding != 0 && (kind == keyspace.Hash || kind == keyspace.ZSet) ||
		kind == keyspace.Set && setEncoding(v.Num2) == collection.BigSet) {
		// A big one's bytes (from the log, a primary, RESTORE or COPY): held in chunks
		// from now on, so that writes change it in place.
		switch kind {
		case keyspace.Hash:
			v.Obj, v.Num2 = collection.NewBig(hashOf(v).Pack, false), BigEncoding
		case keyspace.ZSet:
			v.Obj, v.Num2 = collection.NewBig(zsetOf(v).Pack, true), BigEncoding
		default:
			v.Obj = collection.NewBigSet(v.Bytes)
		}
		v.Bytes = nil
		sh.SwapLocked(key, v)
	}
	if b := bigOf(v); b != nil {
		v.Num = int64(b.Len())
	} else if l := bigListOf(v); l != nil {
		v.Num = int64(l.Len())
	} else if v.Num == 0 {
		switch kind {
		case keyspace.Hash:
			v.Num = int64(collection.Count(hashOf(v).Pack) / 2)
		case keyspace.ZSet:
			v.Num = int64(collection.Count(zsetOf(v).Pack) / 2)
		case keyspace.List:
			v.Num = int64(collection.Count(v.Bytes))
		case keyspace.Set:
			v.Num = int64(collection.Count(setOf(v).Pack))
			if setOf(v).Enc == collection.BigSet {
				v.Num /= 2
			}
		}
	}
	if kind == keyspace.List && v.Obj == nil {
		if size := dt.cfg.Limits.ListSize.Load(); collection.ListIsBig(v.Num, len(v.Bytes), size) {
			// A big one's bytes (from the log, a primary, RESTORE or COPY): held in
			// nodes from now on.
			v.Obj = collection.NewBigList(v.Bytes, collection.ListNodeEntries(size))
			v.Bytes = nil
			sh.SwapLocked(key, v)
		}
	}
	return v, true, nil
}

// BigEncoding in a hash's or sorted set's Value.Num2 says it has passed its listpack
// thresholds (hash-max-listpack-entries and -value, zset-max-...): OBJECT ENCODING then
// names Redis's hashtable or skiplist, and, as on Redis, it never goes back. Such a hash
// or sorted set is a collection.Big the keyspace holds by reference (Value.Obj), which
// its writes change in place; its bytes form (outside the process, and in the keyspace
// until kindLocked first reads it) is its pack.
const BigEncoding = 1

// IndexedPack in a big hash's or sorted set's Value.Num2 says its bytes start with the
// index that package collection kept in front of a big one's pack before there was
// collection.Big: such bytes, read from an older log, are read past their index.
const IndexedPack = 2

// bigOf returns the collection.Big that v, a hash or sorted set, holds by reference, nil
// when it is bytes.
func bigOf(v keyspace.Value) *collection.Big {
	b, _ := v.Obj.(*collection.Big)
	return b
}

// storeBigLocked notes the write of b, the big hash or sorted set at key that v was,
// changed in place, or deletes the key when b is empty.
func storeBigLocked(sh *keyspace.Shard, key []byte, v keyspace.Value, b *collection.Big) {
	storeCollectionLocked(sh, key, keyspace.Value{Kind: v.Kind, Num: int64(b.Len()), Num2: BigEncoding, Obj: b, Expire: v.Expire})
}

// countedFrom is the least element count a collection keeps in its Value.Num: a smaller
// one stores 0 there, which the keyspace stores in no bytes, and kindLocked counts its
// few elements instead (a token bucket's hash of two fields saves 8 bytes of some 90).
const countedFrom = 9

// storeCollectionLocked writes v, a collection of v.Num elements, at key, or deletes the
// key when v.Num is 0, as Redis deletes an emptied collection.
func storeCollectionLocked(sh *keyspace.Shard, key []byte, v keyspace.Value) {
	switch {
	case v.Num == 0:
		sh.DeleteLocked(key)
		return
	case v.Num < countedFrom:
		v.Num = 0
	}
	sh.SetLocked(key, v)
}

// Limits are Redis's thresholds past which a small collection takes its big encoding:
// the most entries, and the longest field, value or member (hash-max-listpack-entries and
// the rest); and the list's node size (list-max-listpack-size), which a BigList's nodes
// follow. ListCompress is list-compress-depth, kept for CONFIG's sake (no node is
// compressed here). CONFIG SET changes them at any time.
type Limits struct {
	HashEntries, HashValue, ZsetEntries, ZsetValue, ListSize atomic.Int64
	SetIntset, SetEntries, SetValue                          atomic.Int64
	ListCompress                                             atomic.Int64
}

// writeElem writes an element of a pack as a bulk string.
func writeElem(w *resp.Writer, e collection.Elem) {
	if e.Kind == collection.Str {
		w.Bulk(e.Str)
		return
	}
	var buf [32]byte
	w.Bulk(e.Append(buf[:0]))
}

// Objectify turns v, a big sorted set, hash or set in its chunk form (Value.Chunks: read
// from the store, the redo log or a primary), into the collection.Big it was, with its
// chunks' seqs, so that the changes that follow it there apply chunk by chunk
// (keyspace.Keyspace.SetObjectify).
func Objectify(v keyspace.Value) (keyspace.Value, error) {
	if !v.Chunks {
		return v, nil
	}
	var b *collection.Big
	var err error
	switch v.Kind {
	case keyspace.Hash:
		b, err = collection.NewBigChunks(v.Bytes, false, false)
	case keyspace.ZSet:
		b, err = collection.NewBigChunks(v.Bytes, true, false)
	case keyspace.Set:
		b, err = collection.NewBigChunks(v.Bytes, false, true)
	default:
		return v, fmt.Errorf("%w: kind %d in chunk form", keyspace.ErrBadValue, v.Kind)
	}
	if err != nil {
		return v, fmt.Errorf("%w: %v", keyspace.ErrBadValue, err)
	}
	v.Obj, v.Bytes, v.Chunks = b, nil, false
	return v, nil
}
