package server

import (
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/resp"
)

// The glue the collection commands share (hash.go, zset.go, list.go): the operations on
// the encoded bytes are package collection's.

// kindLocked returns the live value at key when it holds kind, false when there is
// none, and keyspace.ErrWrongType when it holds another kind. The shard is locked. A
// collection's Num is its element count, even where storeCollectionLocked left it out.
func (c *client) kindLocked(sh *keyspace.Shard, key []byte, kind keyspace.Kind, now int64) (keyspace.Value, bool, error) {
	v, ok := sh.GetLocked(key, now)
	if c.reading { // a read-only command's lookups count as keyspace hits and misses
		sh.CountLookup(ok)
	}
	if !ok {
		return v, false, nil
	}
	if v.Kind != kind {
		return v, false, keyspace.ErrWrongType
	}
	if v.Num == 0 {
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
	return v, true, nil
}

// bigEncoding in a hash's or sorted set's Value.Num2 says it has passed its listpack
// thresholds (hash-max-listpack-entries and -value, zset-max-...): OBJECT ENCODING then
// names Redis's hashtable or skiplist, and, as on Redis, it never goes back.
const bigEncoding = 1

// indexedPack in a big hash's or sorted set's Value.Num2 says its bytes start with the
// index that package collection keeps in front of a big one's pack (one stored big before
// there was an index has none: it is read by walking and indexed at its next write).
const indexedPack = 2

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

// listpackLimits are Redis's thresholds past which a small hash or sorted set takes its big
// encoding: the most entries, and the longest field, value or member; and the list's node
// size, kept for CONFIG's sake.
type listpackLimits struct {
	hashEntries, hashValue, zsetEntries, zsetValue, listSize atomic.Int64
	setIntset, setEntries, setValue                          atomic.Int64
}

func (l *listpackLimits) init(cfg Config) {
	l.hashEntries.Store(int64(cfg.HashMaxListpackEntries))
	l.hashValue.Store(int64(cfg.HashMaxListpackValue))
	l.zsetEntries.Store(int64(cfg.ZsetMaxListpackEntries))
	l.zsetValue.Store(int64(cfg.ZsetMaxListpackValue))
	l.listSize.Store(int64(cfg.ListMaxListpackSize))
	l.setIntset.Store(int64(cfg.SetMaxIntsetEntries))
	l.setEntries.Store(int64(cfg.SetMaxListpackEntries))
	l.setValue.Store(int64(cfg.SetMaxListpackValue))
}

// collectionParams are the data types' configuration parameters, under Redis 7's names with
// the ziplist names of Redis 6 as aliases.
func (s *Server) collectionParams() []*param {
	def := DefaultConfig()
	l := &s.listpack
	p := func(name, alias string, n *atomic.Int64, d int) *param {
		var aliases []string
		if alias != "" {
			aliases = []string{alias}
		}
		return &param{name: name, aliases: aliases, def: strconv.Itoa(d), file: plainValue,
			get: func() string { return itoa(n.Load()) },
			set: func(v string) (func(), error) {
				if name == "list-max-listpack-size" {
					x, err := strconv.ParseInt(v, 10, 32)
					if err != nil {
						return nil, errors.New("argument couldn't be parsed into an integer")
					}
					return func() { n.Store(x) }, nil
				}
				x, err := ParseSize(v) // a memory value, as Redis takes these
				if err != nil || x < 0 {
					return nil, errors.New("argument must be a memory value")
				}
				return func() { n.Store(x) }, nil
			}}
	}
	return []*param{
		p("hash-max-listpack-entries", "hash-max-ziplist-entries", &l.hashEntries, def.HashMaxListpackEntries),
		p("hash-max-listpack-value", "hash-max-ziplist-value", &l.hashValue, def.HashMaxListpackValue),
		p("zset-max-listpack-entries", "zset-max-ziplist-entries", &l.zsetEntries, def.ZsetMaxListpackEntries),
		p("zset-max-listpack-value", "zset-max-ziplist-value", &l.zsetValue, def.ZsetMaxListpackValue),
		p("list-max-listpack-size", "list-max-ziplist-size", &l.listSize, def.ListMaxListpackSize),
		p("set-max-intset-entries", "", &l.setIntset, def.SetMaxIntsetEntries),
		p("set-max-listpack-entries", "", &l.setEntries, def.SetMaxListpackEntries),
		p("set-max-listpack-value", "", &l.setValue, def.SetMaxListpackValue),
	}
}

// elem writes an element of a pack as a bulk string.
func writeElem(w *resp.Writer, e collection.Elem) {
	if e.Kind == collection.Str {
		w.Bulk(e.Str)
		return
	}
	var buf [32]byte
	w.Bulk(e.Append(buf[:0]))
}
