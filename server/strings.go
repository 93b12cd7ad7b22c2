package server

import (
	"errors"
	"math"
	"strconv"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/keyspace"
)

// A string's Value.Num says how Redis would hold it, for OBJECT ENCODING and REFCOUNT
// (keys.go). Redis picks a string's representation when a command writes it, not from its
// bytes alone: SET turns "5" into an integer and 10 bytes into an embedded string, but an
// APPEND leaves a raw string whatever it holds, and INCRBYFLOAT's "11" is no integer.
const (
	strAsSet  = 0 // as SET, MSET, INCR and a new key's APPEND make it: from the bytes
	strRaw    = 1 // APPEND to a key, SETRANGE: a raw string, grown in place
	strNoInt  = 2 // INCRBYFLOAT: embedded up to 44 bytes, raw beyond, never an integer
	strOwnInt = 3 // COPY of an integer: an integer, not the shared object of a small one
)

var (
	// errTooLong is a string that would pass proto-max-bulk-len.
	errTooLong = errors.New("string exceeds maximum allowed size (proto-max-bulk-len)")
	// errOffset is SETRANGE's negative offset.
	errOffset = errors.New("offset is out of range")
)

// maxScratch bounds the string a client builds in its reused scratch buffer: a SETRANGE
// far into a key must not pin half a gigabyte to the connection for good.
const maxScratch = 64 << 10

// stringBuffer returns an empty buffer with room for n bytes: the client's scratch, or
// a buffer of its own for a big string.
func (c *client) stringBuffer(n int) []byte {
	if n > maxScratch {
		return make([]byte, 0, n)
	}
	if cap(c.scratch) < n {
		c.scratch = make([]byte, 0, max(n, 2*cap(c.scratch)))
	}
	return c.scratch[:0]
}

func stringCommands() []*command {
	return []*command{
		{name: "get", arity: 2, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "string", since: "1.0.0", summary: "Returns the string value of a key.", syntax: "key", handler: cmdGet},
		{name: "set", arity: -3, flags: "write denyoom", firstKey: 1, lastKey: 1, group: "string", since: "1.0.0", summary: "Sets the string value of a key, ignoring its type.", syntax: "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]", handler: cmdSet},
		{name: "setnx", arity: 3, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "string", since: "1.0.0", summary: "Sets the string value of a key only when the key doesn't exist.", syntax: "key value", handler: cmdSetNX},
		{name: "setex", arity: 4, flags: "write denyoom", firstKey: 1, lastKey: 1, group: "string", since: "2.0.0", summary: "Sets the string value and expiration time of a key.", syntax: "key seconds value", handler: setexHandler(1e9)},
		{name: "psetex", arity: 4, flags: "write denyoom", firstKey: 1, lastKey: 1, group: "string", since: "2.6.0", summary: "Sets the string value and expiration time in milliseconds of a key.", syntax: "key milliseconds value", handler: setexHandler(1e6)},
		{name: "mget", arity: -2, flags: "readonly fast", firstKey: 1, lastKey: -1, group: "string", since: "1.0.0", summary: "Atomically returns the string values of one or more keys.", syntax: "key [key ...]", handler: cmdMGet},
		{name: "mset", arity: -3, flags: "write denyoom", firstKey: 1, lastKey: -1, keyStep: 2, group: "string", since: "1.0.1", summary: "Atomically creates or modifies the string values of one or more keys.", syntax: "key value [key value ...]", handler: cmdMSet},
		{name: "incr", arity: 2, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "string", since: "1.0.0", summary: "Increments the integer value of a key by one.", syntax: "key", handler: incrHandler(1, false)},
		{name: "decr", arity: 2, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "string", since: "1.0.0", summary: "Decrements the integer value of a key by one.", syntax: "key", handler: incrHandler(-1, false)},
		{name: "incrby", arity: 3, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "string", since: "1.0.0", summary: "Increments the integer value of a key by a number.", syntax: "key increment", handler: incrHandler(1, true)},
		{name: "decrby", arity: 3, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "string", since: "1.0.0", summary: "Decrements a number from the integer value of a key.", syntax: "key decrement", handler: incrHandler(-1, true)},
		{name: "incrbyfloat", arity: 3, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "string", since: "2.6.0", summary: "Increments the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", syntax: "key increment", handler: cmdIncrByFloat},
		{name: "getex", arity: -2, flags: "write fast", firstKey: 1, lastKey: 1, group: "string", since: "6.2.0", summary: "Returns the string value of a key after setting its expiration time.", syntax: "key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]", handler: cmdGetEx},
		{name: "getset", arity: 3, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "string", since: "1.0.0", summary: "Returns the previous string value of a key after setting it to a new value.", syntax: "key value", handler: cmdGetSet},
		{name: "msetnx", arity: -3, flags: "write denyoom", firstKey: 1, lastKey: -1, keyStep: 2, group: "string", since: "1.0.1", summary: "Atomically modifies the string values of one or more keys only when all keys don't exist.", syntax: "key value [key value ...]", handler: cmdMSetNX},
		{name: "getdel", arity: 2, flags: "write fast", firstKey: 1, lastKey: 1, group: "string", since: "6.2.0", summary: "Returns the string value of a key after deleting the key.", syntax: "key", handler: cmdGetDel},
		{name: "append", arity: 3, flags: "write denyoom fast", firstKey: 1, lastKey: 1, group: "string", since: "2.0.0", summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.", syntax: "key value", handler: cmdAppend},
		{name: "strlen", arity: 2, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "string", since: "2.2.0", summary: "Returns the length of a string value.", syntax: "key", handler: cmdStrlen},
		{name: "setrange", arity: 4, flags: "write denyoom", firstKey: 1, lastKey: 1, group: "string", since: "2.2.0", summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", syntax: "key offset value", handler: cmdSetRange},
		{name: "getrange", arity: 4, flags: "readonly", firstKey: 1, lastKey: 1, group: "string", since: "2.4.0", summary: "Returns a substring of the string stored at a key.", syntax: "key start end", handler: cmdGetRange},
		{name: "substr", arity: 4, flags: "readonly", firstKey: 1, lastKey: 1, group: "string", since: "1.0.0", summary: "Returns a substring from a string value.", syntax: "key start end", handler: cmdGetRange},
	}
}

// GET key
func cmdGet(c *client, args [][]byte) error {
	sh := c.lockShard(args[1])
	defer c.unlockShard(sh)
	v, ok := sh.GetLocked(args[1], c.now())
	sh.CountLookup(ok)
	switch {
	case !ok:
		c.w.Null()
	case v.Kind != keyspace.String:
		return keyspace.ErrWrongType
	default:
		c.w.Bulk(v.Bytes)
	}
	return nil
}

// SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]
func cmdSet(c *client, args [][]byte) error {
	o, err := parseStringOptions(args[3:], true)
	if err != nil {
		return err
	}
	now := c.now()
	when, err := o.when("set", now)
	if err != nil {
		return err
	}
	sh := c.lockShard(args[1])
	defer c.unlockShard(sh)
	old, exists := sh.GetLocked(args[1], now)
	if o.get {
		switch {
		case exists && old.Kind != keyspace.String:
			return keyspace.ErrWrongType
		case exists:
			c.w.Bulk(old.Bytes) // written before the value it aliases is replaced
		default:
			c.w.Null()
		}
	}
	if o.nx && exists || o.xx && !exists {
		if !o.get {
			c.w.Null()
		}
		return nil
	}
	if o.keepTTL && exists {
		when = old.Expire
	}
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[2], Expire: when})
	if !o.get {
		c.w.OK()
	}
	return nil
}

// stringOptions are SET's and GETEX's options.
type stringOptions struct {
	nx, xx, get, keepTTL, persist bool

	expire   []byte // the time given to EX, PX, EXAT or PXAT; nil without one
	unit     int64  // its unit, in ns
	absolute bool   // EXAT, PXAT
}

// parseStringOptions reads SET's options (set) or GETEX's as Redis 7.0 does: an option may
// come again, the last time given counting, but not with one that excludes it (NX and XX;
// the expiry options, KEEPTTL and PERSIST among themselves). The time is read later.
func parseStringOptions(args [][]byte, set bool) (stringOptions, error) {
	var o stringOptions
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case set && equalFold(a, "nx") && !o.xx:
			o.nx = true
		case set && equalFold(a, "xx") && !o.nx:
			o.xx = true
		case set && equalFold(a, "get"):
			o.get = true
		case set && equalFold(a, "keepttl") && o.expire == nil:
			o.keepTTL = true
		case !set && equalFold(a, "persist") && o.expire == nil:
			o.persist = true
		default:
			var unit int64
			var absolute bool
			switch {
			case equalFold(a, "ex"):
				unit = 1e9
			case equalFold(a, "px"):
				unit = 1e6
			case equalFold(a, "exat"):
				unit, absolute = 1e9, true
			case equalFold(a, "pxat"):
				unit, absolute = 1e6, true
			default:
				return o, errSyntax
			}
			if i+1 == len(args) || o.keepTTL || o.persist || o.expire != nil && (unit != o.unit || absolute != o.absolute) {
				return o, errSyntax
			}
			o.expire, o.unit, o.absolute = args[i+1], unit, absolute
			i++
		}
	}
	return o, nil
}

// when returns the expiry the options give in Unix ns, 0 without one. Times beyond the
// year 2262 do not fit the keyspace's nanoseconds: they are invalid here, as those Redis
// finds overflowing its milliseconds are there.
func (o stringOptions) when(name string, now int64) (int64, error) {
	if o.expire == nil {
		return 0, nil
	}
	n, ok := parseInt(o.expire)
	if !ok {
		return 0, errNotInteger
	}
	when, fits := expireAt(n, o.unit, o.absolute, now)
	if n <= 0 || !fits {
		return 0, errInvalidExpire(name)
	}
	return when, nil
}

// SETNX key value
func cmdSetNX(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	if _, ok := sh.GetLocked(args[1], c.now()); ok {
		c.w.Int(0)
		return nil
	}
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[2]})
	c.w.Int(1)
	return nil
}

// setexHandler makes SETEX key seconds value and PSETEX key milliseconds value.
func setexHandler(unit int64) handler {
	return func(c *client, args [][]byte) error {
		n, ok := parseInt(args[2])
		if !ok {
			return errNotInteger
		}
		now := c.now()
		when, fits := expireAt(n, unit, false, now)
		if n <= 0 || !fits {
			return errInvalidExpire(string(args[0]))
		}
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[3], Expire: when})
		sh.Unlock()
		c.w.OK()
		return nil
	}
}

// MGET key [key ...]
func cmdMGet(c *client, args [][]byte) error {
	now := c.now()
	c.w.Array(len(args) - 1)
	for _, key := range args[1:] {
		sh := c.s.ks.Shard(key)
		sh.Lock()
		v, ok := sh.GetLocked(key, now)
		sh.CountLookup(ok)
		if ok && v.Kind == keyspace.String {
			c.w.Bulk(v.Bytes)
		} else {
			c.w.Null()
		}
		sh.Unlock()
	}
	return nil
}

// MSET key value [key value ...]: all keys change at once.
func cmdMSet(c *client, args [][]byte) error {
	if len(args)%2 != 1 {
		return errors.New("wrong number of arguments for 'mset' command")
	}
	keys := make([][]byte, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		keys = append(keys, args[i])
	}
	shards := c.s.ks.LockKeys(keys, nil)
	defer keyspace.UnlockShards(shards)
	for i := 1; i < len(args); i += 2 {
		c.s.ks.Shard(args[i]).SetLocked(args[i], keyspace.Value{Kind: keyspace.String, Bytes: args[i+1]})
	}
	c.w.OK()
	return nil
}

// MSETNX key value [key value ...]: all or none, none when any key exists, of any type.
func cmdMSetNX(c *client, args [][]byte) error {
	if len(args)%2 != 1 {
		return errors.New("wrong number of arguments for 'msetnx' command")
	}
	keys := make([][]byte, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		keys = append(keys, args[i])
	}
	shards := c.s.ks.LockKeys(keys, nil)
	defer keyspace.UnlockShards(shards)
	now := c.now()
	for _, k := range keys {
		if _, ok := c.s.ks.Shard(k).GetLocked(k, now); ok {
			c.w.Int(0)
			return nil
		}
	}
	for i := 1; i < len(args); i += 2 {
		c.s.ks.Shard(args[i]).SetLocked(args[i], keyspace.Value{Kind: keyspace.String, Bytes: args[i+1]})
	}
	c.w.Int(1)
	return nil
}

// GETSET key value: SET key value GET, which drops the key's expiry.
func cmdGetSet(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.stringLocked(sh, args[1], c.now())
	switch {
	case err != nil:
		return err
	case ok:
		c.w.Bulk(v.Bytes) // written before the value it aliases is replaced
	default:
		c.w.Null()
	}
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[2]})
	return nil
}

// incrHandler makes INCR key, DECR key, INCRBY key increment and DECRBY key decrement.
func incrHandler(sign int64, hasArg bool) handler {
	return func(c *client, args [][]byte) error {
		by := int64(1)
		if hasArg {
			n, ok := parseInt(args[2])
			if !ok {
				return errNotInteger
			}
			if sign < 0 {
				if n == math.MinInt64 {
					return errors.New("decrement would overflow")
				}
				n = -n
			}
			by = n
		} else {
			by = sign
		}
		sh := c.lockShard(args[1])
		defer c.unlockShard(sh)
		n, err := incrLocked(sh, args[1], by, c.now())
		if err != nil {
			return err
		}
		c.w.Int(n)
		return nil
	}
}

// incrLocked adds by to the integer at key (0 for none), keeping its expiry, and returns
// the sum; on an error it changes nothing.
func incrLocked(sh *keyspace.Shard, key []byte, by, now int64) (int64, error) {
	v, ok := sh.GetLocked(key, now)
	cur := int64(0)
	if ok {
		if v.Kind != keyspace.String {
			return 0, keyspace.ErrWrongType
		}
		if cur, ok = parseInt(v.Bytes); !ok {
			return 0, errNotInteger
		}
	}
	if by > 0 && cur > math.MaxInt64-by || by < 0 && cur < math.MinInt64-by {
		return 0, errOverflow
	}
	cur += by
	var buf [20]byte
	sh.SetLocked(key, keyspace.Value{Kind: keyspace.String, Bytes: strconv.AppendInt(buf[:0], cur, 10), Expire: v.Expire})
	return cur, nil
}

// stringLocked returns the live string at key, false when there is none, and
// keyspace.ErrWrongType when the key holds another kind.
func (c *client) stringLocked(sh *keyspace.Shard, key []byte, now int64) (keyspace.Value, bool, error) {
	return c.kindLocked(sh, key, keyspace.String, now)
}

// INCRBYFLOAT key increment: computed in Redis's long double (collection.AddLongDouble);
// the key keeps its expiry.
func cmdIncrByFloat(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.stringLocked(sh, args[1], c.now())
	if err != nil {
		return err
	}
	cur := v.Bytes
	if !ok {
		cur = []byte("0") // a missing key counts as 0, an empty string is no number
	}
	out, err := collection.AddLongDouble(c.scratch[:0], cur, args[2])
	if err != nil {
		return err
	}
	c.scratch = out[:0] // at most 5 KiB: the longest long double at 17 places
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: out, Expire: v.Expire, Num: strNoInt})
	c.w.Bulk(out)
	return nil
}

// GETEX key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]
func cmdGetEx(c *client, args [][]byte) error {
	o, err := parseStringOptions(args[2:], false)
	if err != nil {
		return err
	}
	now := c.now()
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.stringLocked(sh, args[1], now)
	if err != nil {
		return err
	}
	if !ok {
		c.w.Null()
		return nil
	}
	when, err := o.when("getex", now) // Redis reads the time once it has the key: a bad one on a missing key is nil
	if err != nil {
		return err
	}
	c.w.Bulk(v.Bytes) // written before a change moves the bytes it aliases
	switch {
	case o.expire != nil && when <= now:
		sh.DeleteLocked(args[1]) // EXAT or PXAT in the past
	case o.expire != nil:
		c.setExpireLocked(sh, args[1], when, now)
	case o.persist && v.Expire != 0:
		c.setExpireLocked(sh, args[1], 0, now)
	}
	return nil
}

// GETDEL key
func cmdGetDel(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.stringLocked(sh, args[1], c.now())
	switch {
	case err != nil:
		return err
	case !ok:
		c.w.Null()
	default:
		c.w.Bulk(v.Bytes)
		sh.DeleteLocked(args[1])
	}
	return nil
}

// APPEND key value: the key keeps its expiry.
func cmdAppend(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.stringLocked(sh, args[1], c.now())
	if err != nil {
		return err
	}
	if !ok {
		sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[2]}) // as SET would
		c.w.Int(int64(len(args[2])))
		return nil
	}
	n := len(v.Bytes) + len(args[2])
	if n > c.s.cfg.ProtoMaxBulkLen {
		return errTooLong
	}
	b := append(append(c.stringBuffer(n), v.Bytes...), args[2]...)
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: b, Expire: v.Expire, Num: strRaw})
	c.w.Int(int64(n))
	return nil
}

// STRLEN key
func cmdStrlen(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.stringLocked(sh, args[1], c.now())
	if err != nil {
		return err
	}
	c.w.Int(int64(len(v.Bytes)))
	return nil
}

// SETRANGE key offset value: zero bytes fill a gap; the key keeps its expiry.
func cmdSetRange(c *client, args [][]byte) error {
	off, ok := parseInt(args[2])
	if !ok {
		return errNotInteger
	}
	if off < 0 {
		return errOffset
	}
	val := args[3]
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.stringLocked(sh, args[1], c.now())
	if err != nil {
		return err
	}
	if len(val) == 0 {
		c.w.Int(int64(len(v.Bytes))) // nothing to write: 0 for a missing key, which stays so
		return nil
	}
	if off > int64(c.s.cfg.ProtoMaxBulkLen-len(val)) {
		return errTooLong
	}
	end := int(off) + len(val)
	n := max(len(v.Bytes), end)
	b := append(c.stringBuffer(n), v.Bytes...)
	b = append(b, make([]byte, n-len(b))...)
	copy(b[off:], val)
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: b, Expire: v.Expire, Num: strRaw})
	c.w.Int(int64(n))
	return nil
}

// GETRANGE key start end, SUBSTR key start end: negative indexes count from the end.
func cmdGetRange(c *client, args [][]byte) error {
	start, ok := parseInt(args[2])
	if !ok {
		return errNotInteger
	}
	end, ok := parseInt(args[3])
	if !ok {
		return errNotInteger
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.stringLocked(sh, args[1], c.now())
	if err != nil {
		return err
	}
	c.w.Bulk(substring(v.Bytes, start, end))
	return nil
}

// substring returns s[start:end+1] as GETRANGE takes the indexes: negative ones count
// from the end, and both are clamped to the string.
func substring(s []byte, start, end int64) []byte {
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		return nil
	}
	if start < 0 {
		start = max(n+start, 0)
	}
	if end < 0 {
		end = max(n+end, 0)
	}
	end = min(end, n-1)
	if start > end || n == 0 {
		return nil
	}
	return s[start : end+1]
}
