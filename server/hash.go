package server

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/keyspace"
)

// The hash commands. A hash is a keyspace.Value of Kind Hash: Num its fields, Bytes
// package collection's pack of fields and values in the order they came, Num2 bigEncoding
// once it has passed hash-max-listpack-entries or -value, and indexedPack when its bytes
// then start with the index that finds a field without walking the pack (collection.Hash).

func hashCommands() []*command {
	return []*command{
		{name: "hset", arity: -4, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Creates or modifies the value of a field in a hash.", syntax: "key field value [field value ...]", handler: hsetHandler("hset")},
		{name: "hmset", arity: -4, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Sets the values of multiple fields.", syntax: "key field value [field value ...]", handler: hsetHandler("hmset")},
		{name: "hsetnx", arity: 4, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Sets the value of a field in a hash only when the field doesn't exist.", syntax: "key field value", handler: cmdHSetNX},
		{name: "hget", arity: 3, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Returns the value of a field in a hash.", syntax: "key field", handler: cmdHGet},
		{name: "hmget", arity: -3, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Returns the values of all fields in a hash.", syntax: "key field [field ...]", handler: cmdHMGet},
		{name: "hgetall", arity: 2, flags: "readonly", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Returns all fields and values in a hash.", syntax: "key", handler: hashListHandler(true, true)},
		{name: "hkeys", arity: 2, flags: "readonly", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Returns all fields in a hash.", syntax: "key", handler: hashListHandler(true, false)},
		{name: "hvals", arity: 2, flags: "readonly", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Returns all values in a hash.", syntax: "key", handler: hashListHandler(false, true)},
		{name: "hdel", arity: -3, flags: "write fast", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", syntax: "key field [field ...]", handler: cmdHDel},
		{name: "hexists", arity: 3, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Determines whether a field exists in a hash.", syntax: "key field", handler: cmdHExists},
		{name: "hlen", arity: 2, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Returns the number of fields in a hash.", syntax: "key", handler: cmdHLen},
		{name: "hstrlen", arity: 3, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "hash", since: "3.2.0", summary: "Returns the length of the value of a field.", syntax: "key field", handler: cmdHStrLen},
		{name: "hincrby", arity: 4, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "hash", since: "2.0.0", summary: "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", syntax: "key field increment", handler: cmdHIncrBy},
		{name: "hincrbyfloat", arity: 4, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "hash", since: "2.6.0", summary: "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", syntax: "key field increment", handler: cmdHIncrByFloat},
		{name: "hrandfield", arity: -2, flags: "readonly", firstKey: 1, lastKey: 1, group: "hash", since: "6.2.0", summary: "Returns one or more random fields from a hash.", syntax: "key [count [WITHVALUES]]", handler: cmdHRandField},
		{name: "hscan", arity: -3, flags: "readonly", firstKey: 1, lastKey: 1, group: "hash", since: "2.8.0", summary: "Iterates over fields and values of a hash.", syntax: "key cursor [MATCH pattern] [COUNT count]", handler: cmdHScan},
	}
}

var (
	// errHashNotInteger is HINCRBY on a field whose value is not an integer.
	errHashNotInteger = errors.New("hash value is not an integer")
	// errHashNotFloat is HINCRBYFLOAT on a field whose value is not a number.
	errHashNotFloat = errors.New("hash value is not a float")
	// errIncrNaN is HINCRBYFLOAT with an infinite increment.
	errIncrNaN = errors.New("value is NaN or Infinity")
	// errRandCountRange is HRANDFIELD's count of math.MinInt64, which Redis cannot negate.
	errRandCountRange = errors.New("value is out of range, value must between -9223372036854775807 and 9223372036854775807")
	// errRandValuesRange is HRANDFIELD WITHVALUES with a count whose reply length, twice it,
	// would overflow.
	errRandValuesRange = errors.New("value is out of range")
)

// hashLocked returns the hash at key, a zero Value when there is none, or
// keyspace.ErrWrongType. The shard is locked.
func (c *client) hashLocked(sh *keyspace.Shard, key []byte) (keyspace.Value, bool, error) {
	v, ok, err := c.kindLocked(sh, key, keyspace.Hash, c.now())
	if !ok {
		v = keyspace.Value{}
	}
	return v, ok, err
}

// hashOf reads v, a hash.
func hashOf(v keyspace.Value) collection.Hash {
	return collection.HashOf(v.Bytes, v.Num2&indexedPack != 0)
}

// hashSetLocked sets the fields and values of pairs in the hash v at key, and stores it;
// it returns the number of fields that were new. longest is the longest field or value in
// pairs: past the listpack limits, a small hash takes Redis's hashtable encoding, which
// here is its pack with an index in front, and keeps it, as Redis never converts a hash
// back.
func (c *client) hashSetLocked(sh *keyspace.Shard, key []byte, v keyspace.Value, pairs [][]byte, longest int) int {
	if v.Num2&indexedPack != 0 {
		ed := collection.NewHashEditor(hashOf(v), v.Num, c.scratch)
		added := 0
		for i := 0; i+1 < len(pairs); i += 2 {
			if ed.Set(pairs[i], pairs[i+1]) {
				added++
			}
		}
		c.storeHashEdit(sh, key, v, &ed)
		return added
	}
	var added int
	c.scratch, added = collection.HashSet(c.scratch[:0], v.Bytes, pairs)
	n := v.Num + int64(added)
	enc, pack := v.Num2, c.scratch
	if enc&bigEncoding != 0 || n > c.s.listpack.hashEntries.Load() || int64(longest) > c.s.listpack.hashValue.Load() {
		enc, pack = bigEncoding|indexedPack, collection.IndexHash(pack, n)
	}
	storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.Hash, Num: n, Num2: enc, Bytes: pack, Expire: v.Expire})
	return added
}

// hashDelLocked deletes fields from the hash v at key, and returns how many were there.
func (c *client) hashDelLocked(sh *keyspace.Shard, key []byte, v keyspace.Value, fields [][]byte) int {
	if v.Num2&indexedPack != 0 {
		ed := collection.NewHashEditor(hashOf(v), v.Num, c.scratch)
		removed := 0
		for _, f := range fields {
			if ed.Num > 0 && ed.Del(f) {
				removed++
			}
		}
		c.storeHashEdit(sh, key, v, &ed)
		return removed
	}
	var removed int
	c.scratch, removed = collection.HashDel(c.scratch[:0], v.Bytes, fields)
	if removed > 0 {
		storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.Hash, Num: v.Num - int64(removed), Num2: v.Num2, Bytes: c.scratch, Expire: v.Expire})
	}
	return removed
}

// storeHashEdit stores what ed built from v, a big hash, at key, and takes back the scratch.
func (c *client) storeHashEdit(sh *keyspace.Shard, key []byte, v keyspace.Value, ed *collection.HashEditor) {
	if ed.Changed() {
		storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.Hash, Num: ed.Num, Num2: bigEncoding | indexedPack, Bytes: ed.Bytes(), Expire: v.Expire})
	}
	c.scratch = ed.Buf()
}

// hsetHandler makes HSET key field value [field value ...], which replies the number of
// new fields, and HMSET, the same replying OK.
func hsetHandler(name string) handler {
	arity := errors.New("wrong number of arguments for '" + name + "' command")
	return func(c *client, args [][]byte) error {
		if len(args)%2 != 0 {
			return arity
		}
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, _, err := c.hashLocked(sh, args[1])
		if err != nil {
			return err
		}
		longest := 0
		for _, a := range args[2:] {
			longest = max(longest, len(a))
		}
		added := c.hashSetLocked(sh, args[1], v, args[2:], longest)
		if name == "hmset" {
			c.w.OK()
		} else {
			c.w.Int(int64(added))
		}
		return nil
	}
}

// HSETNX key field value
func cmdHSetNX(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.hashLocked(sh, args[1])
	if err != nil {
		return err
	}
	if _, ok := hashOf(v).Get(args[2]); ok {
		c.w.Int(0)
		return nil
	}
	c.hashSetLocked(sh, args[1], v, args[2:4], max(len(args[2]), len(args[3])))
	c.w.Int(1)
	return nil
}

// HGET key field
func cmdHGet(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.hashLocked(sh, args[1])
	if err != nil {
		return err
	}
	if e, ok := hashOf(v).Get(args[2]); ok {
		writeElem(&c.w, e)
	} else {
		c.w.Null()
	}
	return nil
}

// HMGET key field [field ...]
func cmdHMGet(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.hashLocked(sh, args[1])
	if err != nil {
		return err
	}
	c.w.Array(len(args) - 2)
	for _, f := range args[2:] {
		if e, ok := hashOf(v).Get(f); ok {
			writeElem(&c.w, e)
		} else {
			c.w.Null()
		}
	}
	return nil
}

// hashListHandler makes HGETALL key (a map in RESP3), HKEYS key and HVALS key.
func hashListHandler(fields, values bool) handler {
	return func(c *client, args [][]byte) error {
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, _, err := c.hashLocked(sh, args[1])
		if err != nil {
			return err
		}
		if fields && values {
			c.w.Map(int(v.Num))
		} else {
			c.w.Array(int(v.Num))
		}
		for f, val := range collection.HashPairs(hashOf(v).Pack) {
			if fields {
				writeElem(&c.w, f)
			}
			if values {
				writeElem(&c.w, val)
			}
		}
		return nil
	}
}

// HDEL key field [field ...]
func cmdHDel(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.hashLocked(sh, args[1])
	if err != nil {
		return err
	}
	if !ok {
		c.w.Int(0)
		return nil
	}
	c.w.Int(int64(c.hashDelLocked(sh, args[1], v, args[2:])))
	return nil
}

// HEXISTS key field
func cmdHExists(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.hashLocked(sh, args[1])
	if err != nil {
		return err
	}
	_, ok := hashOf(v).Get(args[2])
	c.w.Int(b2i(ok))
	return nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// HLEN key
func cmdHLen(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.hashLocked(sh, args[1])
	if err != nil {
		return err
	}
	c.w.Int(v.Num)
	return nil
}

// HSTRLEN key field
func cmdHStrLen(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.hashLocked(sh, args[1])
	if err != nil {
		return err
	}
	e, ok := hashOf(v).Get(args[2])
	if !ok {
		c.w.Int(0)
		return nil
	}
	c.w.Int(int64(e.Len()))
	return nil
}

// HINCRBY key field increment
func cmdHIncrBy(c *client, args [][]byte) error {
	by, ok := parseInt(args[3])
	if !ok {
		return errNotInteger
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.hashLocked(sh, args[1])
	if err != nil {
		return err
	}
	cur := int64(0)
	e, exists := hashOf(v).Get(args[2])
	switch {
	case exists && e.Kind == collection.Int:
		cur = e.Int
	case exists: // a string: never an integer, which the pack stores as one
		return errHashNotInteger
	}
	if by > 0 && cur > math.MaxInt64-by || by < 0 && cur < math.MinInt64-by {
		return errOverflow
	}
	cur += by
	var buf [20]byte
	pair := [2][]byte{args[2], strconv.AppendInt(buf[:0], cur, 10)}
	c.hashSetLocked(sh, args[1], v, pair[:], max(len(pair[0]), len(pair[1])))
	c.w.Int(cur)
	return nil
}

// HINCRBYFLOAT key field increment: in long double, as Redis (collection.AddLongDouble).
// Redis reads the increment first, then the field.
func cmdHIncrByFloat(c *client, args [][]byte) error {
	switch ok, inf := collection.LongDoubleInf(args[3]); {
	case !ok:
		return errNotFloat
	case inf:
		return errIncrNaN
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.hashLocked(sh, args[1])
	if err != nil {
		return err
	}
	var buf [24]byte
	cur := []byte("0")
	e, exists := hashOf(v).Get(args[2])
	switch {
	case exists && e.Kind == collection.Str:
		if cur = e.Str; !collection.IsLongDouble(cur) {
			return errHashNotFloat
		}
	case exists:
		cur = e.Append(buf[:0])
	}
	sum, err := collection.AddLongDouble(c.ldBuf[:0], cur, args[3])
	if err != nil {
		return err
	}
	c.ldBuf = sum[:0]
	pair := [2][]byte{args[2], sum}
	c.hashSetLocked(sh, args[1], v, pair[:], max(len(pair[0]), len(pair[1])))
	c.w.Bulk(sum)
	return nil
}

// HRANDFIELD key [count [WITHVALUES]]: without count a field or nil; with a positive count
// that many distinct fields (all when there are fewer, in the hash's order); with a
// negative count that many picks that may repeat. In RESP3 WITHVALUES replies pairs.
func cmdHRandField(c *client, args [][]byte) error {
	count, withValues := int64(0), false
	if len(args) >= 3 {
		var ok bool
		if count, ok = parseInt(args[2]); !ok {
			return errNotInteger
		}
		if count == math.MinInt64 {
			return errRandCountRange
		}
		switch {
		case len(args) > 4 || len(args) == 4 && !equalFold(args[3], "withvalues"):
			return errSyntax
		case len(args) == 4:
			withValues = true
			if count < -math.MaxInt64/2 || count > math.MaxInt64/2 {
				return errRandValuesRange
			}
		}
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.hashLocked(sh, args[1])
	if err != nil {
		return err
	}
	if len(args) < 3 {
		if !ok {
			c.w.Null()
			return nil
		}
		offs := collection.HashOffsets(nil, hashOf(v).Pack)
		f, _ := collection.HashPairAt(hashOf(v).Pack, offs[rand.IntN(len(offs))])
		writeElem(&c.w, f)
		return nil
	}
	if !ok || count == 0 {
		c.w.Array(0)
		return nil
	}
	pair := func(f, val collection.Elem) {
		if withValues && c.w.Proto == 3 {
			c.w.Array(2)
		}
		writeElem(&c.w, f)
		if withValues {
			writeElem(&c.w, val)
		}
	}
	header := func(n int64) {
		if withValues && c.w.Proto != 3 {
			n *= 2
		}
		c.w.Array(int(n))
	}
	switch {
	case count < 0 || count == 1: // picks that may repeat, as Redis makes a count of 1 too
		offs := collection.HashOffsets(nil, hashOf(v).Pack)
		n := -count
		if count == 1 {
			n = 1
		}
		header(n)
		for range n {
			pair(collection.HashPairAt(hashOf(v).Pack, offs[rand.IntN(len(offs))]))
		}
	case count >= v.Num:
		header(v.Num)
		for f, val := range collection.HashPairs(hashOf(v).Pack) {
			pair(f, val)
		}
	default: // count distinct fields: each kept with the odds that leave count in the end
		header(count)
		left, need := v.Num, count
		for f, val := range collection.HashPairs(hashOf(v).Pack) {
			if rand.Int64N(left) < need {
				pair(f, val)
				need--
			}
			left--
		}
	}
	return nil
}

// HSCAN key cursor [MATCH pattern] [COUNT count]: a hash is scanned whole in one call, as
// Redis scans a listpack one, so the cursor returned is always 0 and COUNT only checked.
func cmdHScan(c *client, args [][]byte) error {
	if !parseScanCursor(args[2]) {
		return errors.New("invalid cursor")
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.hashLocked(sh, args[1])
	if err != nil {
		return err
	}
	if !ok { // Redis replies before it reads the options
		c.scanDone(c.scanStart(), 0)
		return nil
	}
	pattern, err := scanOptions(args[3:])
	if err != nil {
		return err
	}
	mark, n := c.scanStart(), 0
	var buf [20]byte
	for f, val := range collection.HashPairs(hashOf(v).Pack) {
		if pattern == nil || glob.Match(pattern, f.Bytes(buf[:0])) {
			writeElem(&c.w, f)
			writeElem(&c.w, val)
			n += 2
		}
	}
	c.scanDone(mark, n)
	return nil
}

// scanStart begins the reply of a SCAN of a collection scanned whole: the cursor, 0, then
// the items, whose count scanDone writes before them once they are written.
func (c *client) scanStart() int {
	c.w.Array(2)
	c.w.BulkString("0")
	return len(c.w.B)
}

// scanDone ends scanStart's reply of n items.
func (c *client) scanDone(mark, n int) { zentriesHeaderAt(&c.w, mark, int64(n), false) }

// parseScanCursor reports whether b is a cursor to Redis, which reads it with strtoul and
// takes what it takes: digits with a sign, "-1" being the largest cursor, and the empty
// string; not a leading blank, anything after the digits but a NUL, or an overflow.
func parseScanCursor(b []byte) bool {
	for i, ch := range b {
		if ch == 0 {
			b = b[:i] // strtoul stops at the NUL, where Redis looks for the end
			if i == 0 {
				return true
			}
			break
		}
	}
	if len(b) == 0 {
		return true
	}
	if b[0] == '-' || b[0] == '+' {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	var n uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return false
		}
		if n > (math.MaxUint64-uint64(ch-'0'))/10 {
			return false
		}
		n = n*10 + uint64(ch-'0')
	}
	return true
}

// scanOptions reads the options of HSCAN, ZSCAN and SSCAN, which scan a collection whole:
// the MATCH pattern (nil for none or "*"), and a COUNT that is only checked.
func scanOptions(opts [][]byte) (pattern []byte, err error) {
	for i := 0; i < len(opts); i += 2 {
		switch {
		case i+1 < len(opts) && equalFold(opts[i], "count"):
			n, ok := parseInt(opts[i+1])
			if !ok {
				return nil, errNotInteger
			}
			if n < 1 {
				return nil, errSyntax
			}
		case i+1 < len(opts) && equalFold(opts[i], "match"):
			pattern = opts[i+1]
		default:
			return nil, errSyntax
		}
	}
	if len(pattern) == 1 && pattern[0] == '*' {
		pattern = nil
	}
	return pattern, nil
}
