package datatype

import (
	"errors"
	"iter"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
)

// The hash commands. A hash is a keyspace.Value of Kind Hash: Num its fields, Bytes
// package collection's pack of fields and values in the order they came, Num2 BigEncoding
// once it has passed hash-max-listpack-entries or -value, and IndexedPack when its bytes
// then start with the index that finds a field without walking the pack (collection.Hash).

func (dt *Family) hashCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "hset", Arity: -4, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}}, Group: "hash", Since: "2.0.0", Summary: "Creates or modifies the value of a field in a hash.", Syntax: "key field value [field value ...]", Handler: dt.hsetHandler("hset")},
		{Name: "hmset", Arity: -4, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}}, Group: "hash", Since: "2.0.0", Summary: "Sets the values of multiple fields.", Syntax: "key field value [field value ...]", Handler: dt.hsetHandler("hmset")},
		{Name: "hsetnx", Arity: 4, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW insert"}}, Group: "hash", Since: "2.0.0", Summary: "Sets the value of a field in a hash only when the field doesn't exist.", Syntax: "key field value", Handler: dt.cmdHSetNX},
		{Name: "hget", Arity: 3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "hash", Since: "2.0.0", Summary: "Returns the value of a field in a hash.", Syntax: "key field", Handler: dt.cmdHGet},
		{Name: "hmget", Arity: -3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "hash", Since: "2.0.0", Summary: "Returns the values of all fields in a hash.", Syntax: "key field [field ...]", Handler: dt.cmdHMGet},
		{Name: "hgetall", Arity: 2, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "hash", Since: "2.0.0", Summary: "Returns all fields and values in a hash.", Syntax: "key", Handler: dt.hashListHandler(true, true)},
		{Name: "hkeys", Arity: 2, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "hash", Since: "2.0.0", Summary: "Returns all fields in a hash.", Syntax: "key", Handler: dt.hashListHandler(true, false)},
		{Name: "hvals", Arity: 2, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "hash", Since: "2.0.0", Summary: "Returns all values in a hash.", Syntax: "key", Handler: dt.hashListHandler(false, true)},
		{Name: "hdel", Arity: -3, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW delete"}}, Group: "hash", Since: "2.0.0", Summary: "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", Syntax: "key field [field ...]", Handler: dt.cmdHDel},
		{Name: "hexists", Arity: 3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO"}}, Group: "hash", Since: "2.0.0", Summary: "Determines whether a field exists in a hash.", Syntax: "key field", Handler: dt.cmdHExists},
		{Name: "hlen", Arity: 2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO"}}, Group: "hash", Since: "2.0.0", Summary: "Returns the number of fields in a hash.", Syntax: "key", Handler: dt.cmdHLen},
		{Name: "hstrlen", Arity: 3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO"}}, Group: "hash", Since: "3.2.0", Summary: "Returns the length of the value of a field.", Syntax: "key field", Handler: dt.cmdHStrLen},
		{Name: "hincrby", Arity: 4, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Group: "hash", Since: "2.0.0", Summary: "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", Syntax: "key field increment", Handler: dt.cmdHIncrBy},
		{Name: "hincrbyfloat", Arity: 4, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Group: "hash", Since: "2.6.0", Summary: "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", Syntax: "key field increment", Handler: dt.cmdHIncrByFloat},
		{Name: "hrandfield", Arity: -2, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "hash", Since: "6.2.0", Summary: "Returns one or more random fields from a hash.", Syntax: "key [count [WITHVALUES]]", Handler: dt.cmdHRandField},
		{Name: "hscan", Arity: -3, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "hash", Since: "2.8.0", Summary: "Iterates over fields and values of a hash.", Syntax: "key cursor [MATCH pattern] [COUNT count]", Handler: dt.cmdHScan},
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
func (dt *Family) hashLocked(c *command.Ctx, sh *keyspace.Shard, key []byte) (keyspace.Value, bool, error) {
	v, ok, err := dt.kindLocked(c, sh, key, keyspace.Hash, c.Now())
	if !ok {
		v = keyspace.Value{}
	}
	return v, ok, err
}

// hashOf reads v, a hash: a big one as a copy of its pack, what its commands that walk
// the whole of it read.
func hashOf(v keyspace.Value) collection.Hash {
	if b := bigOf(v); b != nil {
		return collection.HashOf(b.AppendEncoded(nil), false)
	}
	return collection.HashOf(v.Bytes, v.Num2&IndexedPack != 0)
}

// hashPairs yields the fields and values of v, a hash, where they are: a big one's chunk
// by chunk, with no copy of the whole (HGETALL of a hash of 1M fields copies nothing).
func hashPairs(v keyspace.Value) iter.Seq2[collection.Elem, collection.Elem] {
	b := bigOf(v)
	if b == nil {
		return collection.HashPairs(hashOf(v).Pack)
	}
	return func(yield func(collection.Elem, collection.Elem) bool) {
		for pack := range b.Chunks {
			for f, val := range collection.HashPairs(pack) {
				if !yield(f, val) {
					return
				}
			}
		}
	}
}

// hashGet returns the value of field in v, a hash; it aliases v.
func hashGet(v keyspace.Value, field []byte) (collection.Elem, bool) {
	if b := bigOf(v); b != nil {
		return b.HashGet(field)
	}
	return hashOf(v).Get(field)
}

// hashSetLocked sets the fields and values of pairs in the hash v at key, and stores it;
// it returns the number of fields that were new. longest is the longest field or value in
// pairs: past the listpack limits, a small hash takes Redis's hashtable encoding, which
// here is its pack with an index in front, and keeps it, as Redis never converts a hash
// back.
func (dt *Family) hashSetLocked(c *command.Ctx, sh *keyspace.Shard, key []byte, v keyspace.Value, pairs [][]byte, longest int) int {
	if b := bigOf(v); b != nil {
		added := 0
		for i := 0; i+1 < len(pairs); i += 2 {
			if b.HashSet(pairs[i], pairs[i+1]) {
				added++
			}
		}
		storeBigLocked(sh, key, v, b)
		return added
	}
	var added int
	c.Scratch, added = collection.HashSet(c.Scratch[:0], v.Bytes, pairs)
	n := v.Num + int64(added)
	if n > dt.cfg.Limits.HashEntries.Load() || int64(longest) > dt.cfg.Limits.HashValue.Load() {
		b := collection.NewBig(c.Scratch, false)
		storeBigLocked(sh, key, keyspace.Value{Kind: keyspace.Hash, Expire: v.Expire}, b)
		return added
	}
	storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.Hash, Num: n, Num2: v.Num2, Bytes: c.Scratch, Expire: v.Expire})
	return added
}

// hashDelLocked deletes fields from the hash v at key, and returns how many were there.
func (dt *Family) hashDelLocked(c *command.Ctx, sh *keyspace.Shard, key []byte, v keyspace.Value, fields [][]byte) int {
	if b := bigOf(v); b != nil {
		removed := 0
		for _, f := range fields {
			if b.HashDel(f) {
				removed++
			}
		}
		if removed > 0 {
			storeBigLocked(sh, key, v, b)
		}
		return removed
	}
	var removed int
	c.Scratch, removed = collection.HashDel(c.Scratch[:0], v.Bytes, fields)
	if removed > 0 {
		storeCollectionLocked(sh, key, keyspace.Value{Kind: keyspace.Hash, Num: v.Num - int64(removed), Num2: v.Num2, Bytes: c.Scratch, Expire: v.Expire})
	}
	return removed
}

// hsetHandler makes HSET key field value [field value ...], which replies the number of
// new fields, and HMSET, the same replying OK.
func (dt *Family) hsetHandler(name string) command.Handler {
	arity := errors.New("wrong number of arguments for '" + name + "' command")
	return func(c *command.Ctx, args [][]byte) error {
		if len(args)%2 != 0 {
			return arity
		}
		sh := c.Keys.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, _, err := dt.hashLocked(c, sh, args[1])
		if err != nil {
			return err
		}
		longest := 0
		for _, a := range args[2:] {
			longest = max(longest, len(a))
		}
		added := dt.hashSetLocked(c, sh, args[1], v, args[2:], longest)
		c.Notify(notify.Hash, "hset", args[1])
		if name == "hmset" {
			c.W.OK()
		} else {
			c.W.Int(int64(added))
		}
		return nil
	}
}

// HSETNX key field value
func (dt *Family) cmdHSetNX(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.hashLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if _, ok := hashGet(v, args[2]); ok {
		c.W.Int(0)
		return nil
	}
	dt.hashSetLocked(c, sh, args[1], v, args[2:4], max(len(args[2]), len(args[3])))
	c.Notify(notify.Hash, "hset", args[1])
	c.W.Int(1)
	return nil
}

// HGET key field
func (dt *Family) cmdHGet(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.hashLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if e, ok := hashGet(v, args[2]); ok {
		writeElem(&c.W, e)
	} else {
		c.W.Null()
	}
	return nil
}

// HMGET key field [field ...]
func (dt *Family) cmdHMGet(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.hashLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	c.W.Array(len(args) - 2)
	for _, f := range args[2:] {
		if e, ok := hashGet(v, f); ok {
			writeElem(&c.W, e)
		} else {
			c.W.Null()
		}
	}
	return nil
}

// hashListHandler makes HGETALL key (a map in RESP3), HKEYS key and HVALS key.
func (dt *Family) hashListHandler(fields, values bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		sh := c.Keys.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, _, err := dt.hashLocked(c, sh, args[1])
		if err != nil {
			return err
		}
		if fields && values {
			c.W.Map(int(v.Num))
		} else {
			c.W.Array(int(v.Num))
		}
		for f, val := range hashPairs(v) {
			if fields {
				writeElem(&c.W, f)
			}
			if values {
				writeElem(&c.W, val)
			}
		}
		return nil
	}
}

// HDEL key field [field ...]
func (dt *Family) cmdHDel(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.hashLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if !ok {
		c.W.Int(0)
		return nil
	}
	n := dt.hashDelLocked(c, sh, args[1], v, args[2:])
	notifyRemoved(c, notify.Hash, "hdel", args[1], int64(n), v.Num)
	c.W.Int(int64(n))
	return nil
}

// HEXISTS key field
func (dt *Family) cmdHExists(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.hashLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	_, ok := hashGet(v, args[2])
	c.W.Int(b2i(ok))
	return nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// HLEN key
func (dt *Family) cmdHLen(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.hashLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	c.W.Int(v.Num)
	return nil
}

// HSTRLEN key field
func (dt *Family) cmdHStrLen(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.hashLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	e, ok := hashGet(v, args[2])
	if !ok {
		c.W.Int(0)
		return nil
	}
	c.W.Int(int64(e.Len()))
	return nil
}

// HINCRBY key field increment
func (dt *Family) cmdHIncrBy(c *command.Ctx, args [][]byte) error {
	by, ok := command.ParseInt(args[3])
	if !ok {
		return command.ErrNotInteger
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.hashLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	cur := int64(0)
	e, exists := hashGet(v, args[2])
	switch {
	case exists && e.Kind == collection.Int:
		cur = e.Int
	case exists: // a string: never an integer, which the pack stores as one
		return errHashNotInteger
	}
	if by > 0 && cur > math.MaxInt64-by || by < 0 && cur < math.MinInt64-by {
		return command.ErrOverflow
	}
	cur += by
	var buf [20]byte
	pair := [2][]byte{args[2], strconv.AppendInt(buf[:0], cur, 10)}
	dt.hashSetLocked(c, sh, args[1], v, pair[:], max(len(pair[0]), len(pair[1])))
	c.Notify(notify.Hash, "hincrby", args[1])
	c.W.Int(cur)
	return nil
}

// HINCRBYFLOAT key field increment: in long double, as Redis (collection.AddLongDouble).
// Redis reads the increment first, then the field.
func (dt *Family) cmdHIncrByFloat(c *command.Ctx, args [][]byte) error {
	switch ok, inf := collection.LongDoubleInf(args[3]); {
	case !ok:
		return command.ErrNotFloat
	case inf:
		return errIncrNaN
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.hashLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	var buf [24]byte
	cur := []byte("0")
	e, exists := hashGet(v, args[2])
	switch {
	case exists && e.Kind == collection.Str:
		if cur = e.Str; !collection.IsLongDouble(cur) {
			return errHashNotFloat
		}
	case exists:
		cur = e.Append(buf[:0])
	}
	sum, err := collection.AddLongDouble(c.LdBuf[:0], cur, args[3])
	if err != nil {
		return err
	}
	c.LdBuf = sum[:0]
	pair := [2][]byte{args[2], sum}
	dt.hashSetLocked(c, sh, args[1], v, pair[:], max(len(pair[0]), len(pair[1])))
	c.Notify(notify.Hash, "hincrbyfloat", args[1])
	c.W.Bulk(sum)
	return nil
}

// HRANDFIELD key [count [WITHVALUES]]: without count a field or nil; with a positive count
// that many distinct fields (all when there are fewer, in the hash's order); with a
// negative count that many picks that may repeat. In RESP3 WITHVALUES replies pairs.
func (dt *Family) cmdHRandField(c *command.Ctx, args [][]byte) error {
	count, withValues := int64(0), false
	if len(args) >= 3 {
		var ok bool
		if count, ok = command.ParseInt(args[2]); !ok {
			return command.ErrNotInteger
		}
		if count == math.MinInt64 {
			return errRandCountRange
		}
		switch {
		case len(args) > 4 || len(args) == 4 && !command.EqualFold(args[3], "withvalues"):
			return command.ErrSyntax
		case len(args) == 4:
			withValues = true
			if count < -math.MaxInt64/2 || count > math.MaxInt64/2 {
				return errRandValuesRange
			}
		}
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.hashLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	// pick returns a field and its value at random: in a big hash by rank, from its
	// chunks; in a small one from the offsets of its pairs, found once.
	var offs []int
	pick := func() (collection.Elem, collection.Elem) {
		if b := bigOf(v); b != nil {
			return b.Pair(rand.IntN(b.Len()))
		}
		if offs == nil {
			offs = collection.HashOffsets(nil, v.Bytes)
		}
		return collection.HashPairAt(v.Bytes, offs[rand.IntN(len(offs))])
	}
	if len(args) < 3 {
		if !ok {
			c.W.Null()
			return nil
		}
		f, _ := pick()
		writeElem(&c.W, f)
		return nil
	}
	if !ok || count == 0 {
		c.W.Array(0)
		return nil
	}
	pair := func(f, val collection.Elem) {
		if withValues && c.W.Proto == 3 {
			c.W.Array(2)
		}
		writeElem(&c.W, f)
		if withValues {
			writeElem(&c.W, val)
		}
	}
	header := func(n int64) {
		if withValues && c.W.Proto != 3 {
			n *= 2
		}
		c.W.Array(int(n))
	}
	switch {
	case count < 0 || count == 1: // picks that may repeat, as Redis makes a count of 1 too
		n := -count
		if count == 1 {
			n = 1
		}
		header(n)
		for range n {
			pair(pick())
		}
	case count >= v.Num:
		header(v.Num)
		for f, val := range hashPairs(v) {
			pair(f, val)
		}
	default: // count distinct fields: each kept with the odds that leave count in the end
		header(count)
		left, need := v.Num, count
		for f, val := range hashPairs(v) {
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
func (dt *Family) cmdHScan(c *command.Ctx, args [][]byte) error {
	if !parseScanCursor(args[2]) {
		return errors.New("invalid cursor")
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.hashLocked(c, sh, args[1])
	if err != nil {
		return err
	}
	if !ok { // Redis replies before it reads the options
		dt.scanDone(c, dt.scanStart(c), 0)
		return nil
	}
	pattern, err := scanOptions(args[3:])
	if err != nil {
		return err
	}
	mark, n := dt.scanStart(c), 0
	var buf [20]byte
	for f, val := range hashPairs(v) {
		if pattern == nil || glob.Match(pattern, f.Bytes(buf[:0])) {
			writeElem(&c.W, f)
			writeElem(&c.W, val)
			n += 2
		}
	}
	dt.scanDone(c, mark, n)
	return nil
}

// scanStart begins the reply of a SCAN of a collection scanned whole: the cursor, 0, then
// the items, whose count scanDone writes before them once they are written.
func (dt *Family) scanStart(c *command.Ctx) int {
	c.W.Array(2)
	c.W.BulkString("0")
	return len(c.W.B)
}

// scanDone ends scanStart's reply of n items.
func (dt *Family) scanDone(c *command.Ctx, mark, n int) {
	zentriesHeaderAt(&c.W, mark, int64(n), false)
}

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
		case i+1 < len(opts) && command.EqualFold(opts[i], "count"):
			n, ok := command.ParseInt(opts[i+1])
			if !ok {
				return nil, command.ErrNotInteger
			}
			if n < 1 {
				return nil, command.ErrSyntax
			}
		case i+1 < len(opts) && command.EqualFold(opts[i], "match"):
			pattern = opts[i+1]
		default:
			return nil, command.ErrSyntax
		}
	}
	if len(pattern) == 1 && pattern[0] == '*' {
		pattern = nil
	}
	return pattern, nil
}
