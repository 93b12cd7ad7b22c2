package datatype

import (
	"bytes"
	"errors"
	"slices"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
)

// errSortWeight is a numeric SORT of an element or weight that is no number.
var errSortWeight = errors.New("One or more scores can't be converted into double")

func (dt *Family) sortCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "sort", Arity: -2, Flags: "write denyoom movablekeys", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}, {Begin: 2, Flags: "OW update"}}, KeysOf: sortKeys(true), ACL: "set sortedset list dangerous", Group: "generic", Since: "1.0.0", Summary: "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.", Syntax: "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC|DESC] [ALPHA] [STORE destination]", Handler: dt.sortHandler(false)},
		{Name: "sort_ro", Arity: -2, Flags: "readonly movablekeys", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, KeysOf: sortKeys(false), ACL: "set sortedset list dangerous", Group: "generic", Since: "7.0.0", Summary: "Returns the sorted elements of a list, a set, or a sorted set.", Syntax: "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC|DESC] [ALPHA]", Handler: dt.sortHandler(true)},
	}
}

// sortKeys returns SORT's keys as Redis's sortGetKeys finds them: the key, and the last
// STORE's destination (LIMIT's, BY's and GET's arguments skipped).
func sortKeys(store bool) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		keys := [][]byte{args[1]}
		var dst []byte
		for i := 2; i < len(args); i++ {
			switch a := args[i]; {
			case command.EqualFold(a, "limit"):
				i += 2
			case command.EqualFold(a, "get"), command.EqualFold(a, "by"):
				i++
			case store && command.EqualFold(a, "store") && i+1 < len(args):
				dst = args[i+1]
			}
		}
		if dst != nil {
			keys = append(keys, dst)
		}
		return keys
	}
}

// sortQuery is SORT's arguments, read.
type sortQuery struct {
	desc, alpha, dontSort bool
	start, count          int64
	by                    []byte
	gets                  [][]byte
	store                 []byte
}

// parseSort reads SORT's options in Redis's order: the first bad one is the error.
func parseSort(args [][]byte, readonly bool) (sortQuery, error) {
	q := sortQuery{count: -1}
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch a := args[j]; {
		case command.EqualFold(a, "asc"):
			q.desc = false
		case command.EqualFold(a, "desc"):
			q.desc = true
		case command.EqualFold(a, "alpha"):
			q.alpha = true
		case command.EqualFold(a, "limit") && left >= 2:
			var ok1, ok2 bool
			q.start, ok1 = command.ParseInt(args[j+1])
			q.count, ok2 = command.ParseInt(args[j+2])
			if !ok1 || !ok2 {
				return q, command.ErrNotInteger
			}
			j += 2
		case !readonly && command.EqualFold(a, "store") && left >= 1:
			q.store = args[j+1]
			j++
		case command.EqualFold(a, "by") && left >= 1:
			q.by = args[j+1]
			if bytes.IndexByte(q.by, '*') < 0 { // a constant: nothing to sort by, whatever BY follows
				q.dontSort = true
			}
			j++
		case command.EqualFold(a, "get") && left >= 1:
			q.gets = append(q.gets, args[j+1])
			j++
		default:
			return q, command.ErrSyntax
		}
	}
	return q, nil
}

// sortPatternKey returns the key pattern names for elem and the hash field after "->",
// nil when the pattern has no '*' (Redis's lookupKeyByPattern).
func sortPatternKey(pattern, elem []byte) (key, field []byte) {
	p := bytes.IndexByte(pattern, '*')
	if p < 0 {
		return nil, nil
	}
	post := pattern[p+1:]
	if f := bytes.Index(post, []byte("->")); f >= 0 && f+2 < len(post) {
		field, post = post[f+2:], post[:f]
	}
	key = append(append(append([]byte{}, pattern[:p]...), elem...), post...)
	return key, field
}

// sortLookupLocked is the value pattern names for elem: elem itself for "#", a string
// key's value, or a hash's field after "->"; false when there is none. The key's shard
// is locked.
func (dt *Family) sortLookupLocked(c *command.Ctx, pattern, elem []byte) ([]byte, bool) {
	if string(pattern) == "#" {
		return elem, true
	}
	key, field := sortPatternKey(pattern, elem)
	if key == nil {
		return nil, false
	}
	v, ok := c.Keys.Shard(key).GetLocked(key, c.Now())
	countRead(c, c.Keys.Shard(key), key, ok)
	switch {
	case !ok:
		return nil, false
	case field != nil && v.Kind == keyspace.Hash:
		e, ok := hashOf(v).Get(field)
		if !ok {
			return nil, false
		}
		return e.Append([]byte{}), true
	case field == nil && v.Kind == keyspace.String:
		return append([]byte{}, v.Bytes...), true
	}
	return nil, false
}

// sortElemsLocked returns the elements of the list, set or sorted set at key in its own
// order (nil for a missing key), and its kind. The shard is locked.
func (dt *Family) sortElemsLocked(c *command.Ctx, key []byte) ([][]byte, keyspace.Kind, error) {
	v, ok := c.Keys.Shard(key).GetLocked(key, c.Now())
	countRead(c, c.Keys.Shard(key), key, ok)
	if !ok {
		return nil, keyspace.List, nil
	}
	var out [][]byte
	add := func(e collection.Elem) bool { out = append(out, e.Append([]byte{})); return true } // never nil: nil is a missing GET
	switch v.Kind {
	case keyspace.List:
		if l := bigListOf(v); l != nil {
			l.Range(0, v.Num-1, add)
			break
		}
		for b := v.Bytes; len(b) > 0; {
			e, n := collection.Read(b)
			if n == 0 {
				break
			}
			add(e)
			b = b[n:]
		}
	case keyspace.Set:
		for m := range setOf(v).Members() {
			add(m)
		}
	case keyspace.ZSet:
		z := zsetOf(v).Pack
		for off := 0; off < len(z); {
			m, _, k := collection.ZNext(z[off:])
			if k == 0 {
				break
			}
			off += k
			add(m)
		}
		if bigOf(v) == nil { // Redis converts the sorted set it sorts to a skip list, for good (after the
			// walk: the swap frees the bytes z reads)
			b := collection.NewBig(append([]byte(nil), z...), true)
			num := int64(b.Len())
			if num < countedFrom {
				num = 0
			}
			c.Keys.Shard(key).SwapLocked(key, keyspace.Value{Kind: keyspace.ZSet, Num: num, Num2: BigEncoding, Obj: b, Expire: v.Expire})
		}
	default:
		return nil, 0, keyspace.ErrWrongType
	}
	return out, v.Kind, nil
}

// sortHandler is SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
// [ALPHA] [STORE destination], and SORT_RO (readonly: no STORE). BY and GET read keys
// their patterns name from the elements: the shards of all of those are locked together
// with the key's and the destination's, found again when the elements changed meanwhile.
func (dt *Family) sortHandler(readonly bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		q, err := parseSort(args, readonly)
		if err != nil {
			return err
		}
		keys := [][]byte{args[1]}
		if q.store != nil {
			keys = append(keys, q.store)
		}
		for {
			shards := c.Keys.LockKeys(keys, nil)
			elems, kind, err := dt.sortElemsLocked(c, args[1])
			if err != nil {
				keyspace.UnlockShards(shards)
				return err
			}
			need := dt.sortNeeds(&q, keys, elems)
			if len(need) == len(keys) || heldAll(c, shards, need) {
				err := dt.sortLocked(c, &q, elems, kind)
				keyspace.UnlockShards(shards)
				return err
			}
			keyspace.UnlockShards(shards)
			keys = need
		}
	}
}

// sortNeeds returns keys and the keys q's patterns name from elems.
func (dt *Family) sortNeeds(q *sortQuery, keys, elems [][]byte) [][]byte {
	need := keys
	for _, p := range append([][]byte{q.by}, q.gets...) {
		if p == nil || q.dontSort && bytes.Equal(p, q.by) {
			continue
		}
		for _, e := range elems {
			if k, _ := sortPatternKey(p, e); k != nil {
				need = append(need, k)
			}
		}
	}
	return need
}

// heldAll reports whether the shards of keys are all among those held.
func heldAll(c *command.Ctx, held []*keyspace.Shard, keys [][]byte) bool {
	for _, k := range keys {
		if !slices.Contains(held, c.Keys.Shard(k)) {
			return false
		}
	}
	return true
}

// sortEntry is an element with what it sorts by.
type sortEntry struct {
	elem   []byte
	weight float64
	by     []byte // ALPHA BY's value; nil when its key is missing
}

// sortLocked sorts elems of kind as q says and replies or stores them; every key it
// reads is locked.
func (dt *Family) sortLocked(c *command.Ctx, q *sortQuery, elems [][]byte, kind keyspace.Kind) error {
	n := int64(len(elems))
	if q.dontSort && kind == keyspace.Set && q.store != nil {
		q.dontSort, q.alpha, q.by = false, true, nil // a set's order is not stable: sorted
	}
	start := min(max(q.start, 0), n)
	count := min(max(q.count, -1), n)
	end := n - 1
	if count >= 0 {
		end = start + count - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	end = min(end, n-1)
	es := make([]sortEntry, len(elems))
	for i, e := range elems {
		es[i].elem = e
	}
	if q.dontSort && q.desc && kind != keyspace.Set {
		slices.Reverse(es) // a list or sorted set in its own order, from the end
	}
	if !q.dontSort {
		bad := false
		for i := range es {
			val, ok := es[i].elem, true
			if q.by != nil {
				if val, ok = dt.sortLookupLocked(c, q.by, es[i].elem); !ok {
					continue
				}
			}
			switch {
			case q.alpha && q.by != nil:
				es[i].by = val
			case !q.alpha:
				w, ok := collection.ParseSortWeight(val)
				es[i].weight = w
				bad = bad || !ok
			}
		}
		slices.SortStableFunc(es, func(a, b sortEntry) int {
			cmp := 0
			switch {
			case !q.alpha:
				cmp = cmpFloat(a.weight, b.weight)
				if cmp == 0 {
					cmp = bytes.Compare(a.elem, b.elem)
				}
			case q.by != nil && (a.by == nil || b.by == nil):
				cmp = int(b2i(a.by != nil) - b2i(b.by != nil))
			case q.by != nil:
				cmp = bytes.Compare(a.by, b.by)
			default:
				cmp = bytes.Compare(a.elem, b.elem)
			}
			if q.desc {
				return -cmp
			}
			return cmp
		})
		if bad {
			return errSortWeight
		}
	}
	var out [][]byte // nil entries: a GET's missing value
	if end < start {
		es = nil
	} else {
		es = es[start : end+1]
	}
	for _, e := range es {
		if len(q.gets) == 0 {
			out = append(out, e.elem)
		}
		for _, g := range q.gets {
			v, _ := dt.sortLookupLocked(c, g, e.elem)
			out = append(out, v)
		}
	}
	if q.store == nil {
		c.W.Array(len(out))
		for _, v := range out {
			if v == nil {
				c.W.Null()
			} else {
				c.W.Bulk(v)
			}
		}
		return nil
	}
	var pack []byte
	for _, v := range out {
		pack = collection.AppendString(pack, v)
	}
	sh := c.Keys.Shard(q.store)
	existed := sh.DeleteLocked(q.store)
	if len(out) > 0 {
		dt.storeList(sh, q.store, pack, int64(len(out)), 0)
	}
	notifyStored(c, notify.List, "sortstore", q.store, int64(len(out)), existed)
	c.W.Int(int64(len(out)))
	return nil
}
