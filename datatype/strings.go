package datatype

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
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

func (dt *Family) stringCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "get", Arity: 2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Direct: true, Group: "string", Since: "1.0.0", Summary: "Returns the string value of a key.", Syntax: "key", Handler: dt.cmdGet},
		{Name: "set", Arity: -3, Flags: "write denyoom", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update variable_flags"}}, KeyFlags: setKeyFlags, Direct: true, Group: "string", Since: "1.0.0", Summary: "Sets the string value of a key, ignoring its type.", Syntax: "key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]", Handler: dt.cmdSet},
		{Name: "setnx", Arity: 3, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "OW insert"}}, Group: "string", Since: "1.0.0", Summary: "Sets the string value of a key only when the key doesn't exist.", Syntax: "key value", Handler: dt.cmdSetNX},
		{Name: "setex", Arity: 4, Flags: "write denyoom", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "OW update"}}, Group: "string", Since: "2.0.0", Summary: "Sets the string value and expiration time of a key.", Syntax: "key seconds value", Handler: dt.setexHandler(1e9)},
		{Name: "psetex", Arity: 4, Flags: "write denyoom", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "OW update"}}, Group: "string", Since: "2.6.0", Summary: "Sets the string value and expiration time in milliseconds of a key.", Syntax: "key milliseconds value", Handler: dt.setexHandler(1e6)},
		{Name: "mget", Arity: -2, Flags: "readonly fast", FirstKey: 1, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "string", Since: "1.0.0", Summary: "Atomically returns the string values of one or more keys.", Syntax: "key [key ...]", Handler: dt.cmdMGet},
		{Name: "mset", Arity: -3, Flags: "write denyoom", FirstKey: 1, LastKey: -1, KeyStep: 2, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "OW update"}}, Group: "string", Since: "1.0.1", Summary: "Atomically creates or modifies the string values of one or more keys.", Syntax: "key value [key value ...]", Handler: dt.cmdMSet},
		{Name: "incr", Arity: 2, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Direct: true, Group: "string", Since: "1.0.0", Summary: "Increments the integer value of a key by one.", Syntax: "key", Handler: dt.incrHandler(1, false)},
		{Name: "decr", Arity: 2, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Direct: true, Group: "string", Since: "1.0.0", Summary: "Decrements the integer value of a key by one.", Syntax: "key", Handler: dt.incrHandler(-1, false)},
		{Name: "incrby", Arity: 3, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Direct: true, Group: "string", Since: "1.0.0", Summary: "Increments the integer value of a key by a number.", Syntax: "key increment", Handler: dt.incrHandler(1, true)},
		{Name: "decrby", Arity: 3, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Direct: true, Group: "string", Since: "1.0.0", Summary: "Decrements a number from the integer value of a key.", Syntax: "key decrement", Handler: dt.incrHandler(-1, true)},
		{Name: "incrbyfloat", Arity: 3, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Group: "string", Since: "2.6.0", Summary: "Increments the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", Syntax: "key increment", Handler: dt.cmdIncrByFloat},
		{Name: "increx", Arity: -2, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Direct: true, Group: "string", Since: "8.8.0", Summary: "Increments the numeric value of a key by a number, within bounds, and sets its expiration time. Uses 0 as initial value if the key doesn't exist.", Syntax: "key [BYINT increment|BYFLOAT float] [LBOUND lowerbound] [UBOUND upperbound] [SATURATE] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST] [ENX] [NX|XX]", Handler: dt.cmdIncrEx},
		{Name: "getex", Arity: -2, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Group: "string", Since: "6.2.0", Summary: "Returns the string value of a key after setting its expiration time.", Syntax: "key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]", Handler: dt.cmdGetEx},
		{Name: "getset", Arity: 3, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Group: "string", Since: "1.0.0", Summary: "Returns the previous string value of a key after setting it to a new value.", Syntax: "key value", Handler: dt.cmdGetSet},
		{Name: "msetnx", Arity: -3, Flags: "write denyoom", FirstKey: 1, LastKey: -1, KeyStep: 2, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "OW insert"}}, Group: "string", Since: "1.0.1", Summary: "Atomically modifies the string values of one or more keys only when all keys don't exist.", Syntax: "key value [key value ...]", Handler: dt.cmdMSetNX},
		{Name: "getdel", Arity: 2, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access delete"}}, Group: "string", Since: "6.2.0", Summary: "Returns the string value of a key after deleting the key.", Syntax: "key", Handler: dt.cmdGetDel},
		{Name: "append", Arity: 3, Flags: "write denyoom fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW insert"}}, Group: "string", Since: "2.0.0", Summary: "Appends a string to the value of a key. Creates the key if it doesn't exist.", Syntax: "key value", Handler: dt.cmdAppend},
		{Name: "strlen", Arity: 2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO"}}, Group: "string", Since: "2.2.0", Summary: "Returns the length of a string value.", Syntax: "key", Handler: dt.cmdStrlen},
		{Name: "setrange", Arity: 4, Flags: "write denyoom", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}}, Group: "string", Since: "2.2.0", Summary: "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.", Syntax: "key offset value", Handler: dt.cmdSetRange},
		{Name: "getrange", Arity: 4, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "string", Since: "2.4.0", Summary: "Returns a substring of the string stored at a key.", Syntax: "key start end", Handler: dt.cmdGetRange},
		{Name: "substr", Arity: 4, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "string", Since: "1.0.0", Summary: "Returns a substring from a string value.", Syntax: "key start end", Handler: dt.cmdGetRange},
	}
}

// GET key
func (dt *Family) cmdGet(c *command.Ctx, args [][]byte) error {
	sh := c.LockShard(args[1])
	defer c.UnlockShard(sh)
	v, ok := sh.GetLocked(args[1], c.Now())
	c.CountLookup(sh, args[1], ok)
	switch {
	case !ok:
		c.W.Null()
	case v.Kind != keyspace.String:
		return keyspace.ErrWrongType
	default:
		c.W.Bulk(v.Bytes)
	}
	return nil
}

// SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]
func (dt *Family) cmdSet(c *command.Ctx, args [][]byte) error {
	o, err := parseStringOptions(args[3:], true)
	if err != nil {
		return err
	}
	now := c.Now()
	when, err := o.when("set", now)
	if err != nil {
		return err
	}
	sh := c.LockShard(args[1])
	defer c.UnlockShard(sh)
	old, exists := sh.GetLocked(args[1], now)
	notifyMiss(c, args[1], exists || !o.get)
	if o.get {
		switch {
		case exists && old.Kind != keyspace.String:
			return keyspace.ErrWrongType
		case exists:
			c.W.Bulk(old.Bytes) // written before the value it aliases is replaced
		default:
			c.W.Null()
		}
	}
	if o.nx && exists || o.xx && !exists {
		if !o.get {
			c.W.Null()
		}
		return nil
	}
	if o.keepTTL && exists {
		when = old.Expire
	}
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[2], Expire: when})
	c.Notify(notify.String, "set", args[1])
	if o.expire != nil {
		c.Notify(notify.Generic, "expire", args[1])
	}
	if !o.get {
		c.W.OK()
	}
	return nil
}

// stringOptions are SET's and GETEX's options.
type stringOptions struct {
	nx, xx, get, keepTTL, persist bool
	expiry
}

// expiry is an EX, PX, EXAT or PXAT option, as SET, GETEX and INCREX take it.
type expiry struct {
	expire   []byte // the time given; nil without one
	unit     int64  // its unit, in ns
	absolute bool   // EXAT, PXAT
}

// expiryOption reports the unit of the expiry option a names, and whether it is absolute;
// ok is false for any other word.
func expiryOption(a []byte) (unit int64, absolute, ok bool) {
	switch {
	case command.EqualFold(a, "ex"):
		return 1e9, false, true
	case command.EqualFold(a, "px"):
		return 1e6, false, true
	case command.EqualFold(a, "exat"):
		return 1e9, true, true
	case command.EqualFold(a, "pxat"):
		return 1e6, true, true
	}
	return 0, false, false
}

// parseStringOptions reads SET's options (set) or GETEX's as Redis 7.0 does: an option may
// come again, the last time given counting, but not with one that excludes it (NX and XX;
// the expiry options, KEEPTTL and PERSIST among themselves). The time is read later.
func parseStringOptions(args [][]byte, set bool) (stringOptions, error) {
	var o stringOptions
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case set && command.EqualFold(a, "nx") && !o.xx:
			o.nx = true
		case set && command.EqualFold(a, "xx") && !o.nx:
			o.xx = true
		case set && command.EqualFold(a, "get"):
			o.get = true
		case set && command.EqualFold(a, "keepttl") && o.expire == nil:
			o.keepTTL = true
		case !set && command.EqualFold(a, "persist") && o.expire == nil:
			o.persist = true
		default:
			unit, absolute, ok := expiryOption(a)
			if !ok || i+1 == len(args) || o.keepTTL || o.persist || o.expire != nil && (unit != o.unit || absolute != o.absolute) {
				return o, command.ErrSyntax
			}
			o.expire, o.unit, o.absolute = args[i+1], unit, absolute
			i++
		}
	}
	return o, nil
}

// when returns the expiry in Unix ns, 0 without one. Times beyond the year 2262 do not fit
// the keyspace's nanoseconds: they are invalid here, as those Redis finds overflowing its
// milliseconds are there.
func (o expiry) when(name string, now int64) (int64, error) {
	if o.expire == nil {
		return 0, nil
	}
	n, ok := command.ParseInt(o.expire)
	if !ok {
		return 0, command.ErrNotInteger
	}
	when, fits := ExpireAt(n, o.unit, o.absolute, now)
	if n <= 0 || !fits {
		return 0, ErrInvalidExpire(name)
	}
	return when, nil
}

// SETNX key value
func (dt *Family) cmdSetNX(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	if _, ok := sh.GetLocked(args[1], c.Now()); ok {
		c.W.Int(0)
		return nil
	}
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[2]})
	c.Notify(notify.String, "set", args[1])
	c.W.Int(1)
	return nil
}

// setexHandler makes SETEX key seconds value and PSETEX key milliseconds value.
func (dt *Family) setexHandler(unit int64) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		n, ok := command.ParseInt(args[2])
		if !ok {
			return command.ErrNotInteger
		}
		now := c.Now()
		when, fits := ExpireAt(n, unit, false, now)
		if n <= 0 || !fits {
			return ErrInvalidExpire(string(args[0]))
		}
		sh := c.Keys.Shard(args[1])
		sh.Lock()
		sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[3], Expire: when})
		c.Notify(notify.String, "set", args[1])
		c.Notify(notify.Generic, "expire", args[1])
		sh.Unlock()
		c.W.OK()
		return nil
	}
}

// MGET key [key ...]
func (dt *Family) cmdMGet(c *command.Ctx, args [][]byte) error {
	now := c.Now()
	c.W.Array(len(args) - 1)
	for _, key := range args[1:] {
		sh := c.Keys.Shard(key)
		sh.Lock()
		v, ok := sh.GetLocked(key, now)
		c.CountLookup(sh, key, ok)
		if ok && v.Kind == keyspace.String {
			c.W.Bulk(v.Bytes)
		} else {
			c.W.Null()
		}
		sh.Unlock()
	}
	return nil
}

// MSET key value [key value ...]: all keys change at once.
func (dt *Family) cmdMSet(c *command.Ctx, args [][]byte) error {
	if len(args)%2 != 1 {
		return errors.New("wrong number of arguments for 'mset' command")
	}
	keys := make([][]byte, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		keys = append(keys, args[i])
	}
	shards := c.Keys.LockKeys(keys, nil)
	defer keyspace.UnlockShards(shards)
	now := c.Now()
	for i := 1; i < len(args); i += 2 {
		sh := c.Keys.Shard(args[i])
		sh.GetLocked(args[i], now) // as Redis's setKey: a key found expired is removed, and says so
		sh.SetLocked(args[i], keyspace.Value{Kind: keyspace.String, Bytes: args[i+1]})
		c.Notify(notify.String, "set", args[i])
	}
	c.W.OK()
	return nil
}

// MSETNX key value [key value ...]: all or none, none when any key exists, of any type.
func (dt *Family) cmdMSetNX(c *command.Ctx, args [][]byte) error {
	if len(args)%2 != 1 {
		return errors.New("wrong number of arguments for 'msetnx' command")
	}
	keys := make([][]byte, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		keys = append(keys, args[i])
	}
	shards := c.Keys.LockKeys(keys, nil)
	defer keyspace.UnlockShards(shards)
	now := c.Now()
	for _, k := range keys {
		if _, ok := c.Keys.Shard(k).GetLocked(k, now); ok {
			c.W.Int(0)
			return nil
		}
	}
	for i := 1; i < len(args); i += 2 {
		c.Keys.Shard(args[i]).SetLocked(args[i], keyspace.Value{Kind: keyspace.String, Bytes: args[i+1]})
		c.Notify(notify.String, "set", args[i])
	}
	c.W.Int(1)
	return nil
}

// GETSET key value: SET key value GET, which drops the key's expiry.
func (dt *Family) cmdGetSet(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.stringLocked(c, sh, args[1], c.Now())
	notifyMiss(c, args[1], ok || err != nil)
	switch {
	case err != nil:
		return err
	case ok:
		c.W.Bulk(v.Bytes) // written before the value it aliases is replaced
	default:
		c.W.Null()
	}
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[2]})
	c.Notify(notify.String, "set", args[1])
	return nil
}

// incrHandler makes INCR key, DECR key, INCRBY key increment and DECRBY key decrement.
func (dt *Family) incrHandler(sign int64, hasArg bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		by := int64(1)
		if hasArg {
			n, ok := command.ParseInt(args[2])
			if !ok {
				return command.ErrNotInteger
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
		sh := c.LockShard(args[1])
		defer c.UnlockShard(sh)
		n, err := IncrLocked(sh, args[1], by, c.Now())
		if err != nil {
			return err
		}
		c.Notify(notify.String, "incrby", args[1])
		c.W.Int(n)
		return nil
	}
}

// IncrLocked adds by to the integer at key (0 for none), keeping its expiry, and returns
// the sum; on an error it changes nothing.
func IncrLocked(sh *keyspace.Shard, key []byte, by, now int64) (int64, error) {
	v, ok := sh.GetLocked(key, now)
	cur := int64(0)
	if ok {
		if v.Kind != keyspace.String {
			return 0, keyspace.ErrWrongType
		}
		if cur, ok = command.ParseInt(v.Bytes); !ok {
			return 0, command.ErrNotInteger
		}
	}
	if by > 0 && cur > math.MaxInt64-by || by < 0 && cur < math.MinInt64-by {
		return 0, command.ErrOverflow
	}
	cur += by
	sh.SetLocked(key, keyspace.Value{Kind: keyspace.String, Bytes: strconv.AppendInt(sh.NumBuf(), cur, 10), Expire: v.Expire})
	return cur, nil
}

// stringLocked returns the live string at key, false when there is none, and
// keyspace.ErrWrongType when the key holds another kind.
func (dt *Family) stringLocked(c *command.Ctx, sh *keyspace.Shard, key []byte, now int64) (keyspace.Value, bool, error) {
	return dt.kindLocked(c, sh, key, keyspace.String, now)
}

// INCRBYFLOAT key increment: computed in Redis's long double (collection.AddLongDouble);
// the key keeps its expiry.
func (dt *Family) cmdIncrByFloat(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.stringLocked(c, sh, args[1], c.Now())
	if err != nil {
		return err
	}
	cur := v.Bytes
	if !ok {
		cur = []byte("0") // a missing key counts as 0, an empty string is no number
	}
	out, err := collection.AddLongDouble(c.Scratch[:0], cur, args[2])
	if err != nil {
		return err
	}
	c.Scratch = out[:0] // at most 5 KiB: the longest long double at 17 places
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: out, Expire: v.Expire, Num: strNoInt})
	c.Notify(notify.String, "incrbyfloat", args[1])
	c.W.Bulk(out)
	return nil
}

// GETEX key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]
func (dt *Family) cmdGetEx(c *command.Ctx, args [][]byte) error {
	o, err := parseStringOptions(args[2:], false)
	if err != nil {
		return err
	}
	now := c.Now()
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.stringLocked(c, sh, args[1], now)
	if err != nil {
		return err
	}
	if !ok {
		notifyMiss(c, args[1], ok)
		c.W.Null()
		return nil
	}
	when, err := o.when("getex", now) // Redis reads the time once it has the key: a bad one on a missing key is nil
	if err != nil {
		return err
	}
	c.W.Bulk(v.Bytes) // written before a change moves the bytes it aliases
	switch {
	case o.expire != nil && when <= now:
		sh.DeleteLocked(args[1]) // EXAT or PXAT in the past
		c.Notify(notify.Generic, "del", args[1])
	case o.expire != nil:
		SetExpireLocked(c, sh, args[1], when, now)
		c.Notify(notify.Generic, "expire", args[1])
	case o.persist && v.Expire != 0:
		SetExpireLocked(c, sh, args[1], 0, now)
		c.Notify(notify.Generic, "persist", args[1])
	}
	return nil
}

// GETDEL key
func (dt *Family) cmdGetDel(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.stringLocked(c, sh, args[1], c.Now())
	notifyMiss(c, args[1], ok || err != nil)
	switch {
	case err != nil:
		return err
	case !ok:
		c.W.Null()
	default:
		c.W.Bulk(v.Bytes)
		sh.DeleteLocked(args[1])
		c.Notify(notify.Generic, "del", args[1])
	}
	return nil
}

// APPEND key value: the key keeps its expiry.
func (dt *Family) cmdAppend(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.stringLocked(c, sh, args[1], c.Now())
	if err != nil {
		return err
	}
	if !ok {
		sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[2]}) // as SET would
		c.Notify(notify.String, "append", args[1])
		c.W.Int(int64(len(args[2])))
		return nil
	}
	n := len(v.Bytes) + len(args[2])
	if n > dt.cfg.MaxBulk {
		return errTooLong
	}
	b := append(append(c.Buffer(n), v.Bytes...), args[2]...)
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: b, Expire: v.Expire, Num: strRaw})
	c.Notify(notify.String, "append", args[1])
	c.W.Int(int64(n))
	return nil
}

// STRLEN key
func (dt *Family) cmdStrlen(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.stringLocked(c, sh, args[1], c.Now())
	if err != nil {
		return err
	}
	c.W.Int(int64(len(v.Bytes)))
	return nil
}

// SETRANGE key offset value: zero bytes fill a gap; the key keeps its expiry.
func (dt *Family) cmdSetRange(c *command.Ctx, args [][]byte) error {
	off, ok := command.ParseInt(args[2])
	if !ok {
		return command.ErrNotInteger
	}
	if off < 0 {
		return errOffset
	}
	val := args[3]
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.stringLocked(c, sh, args[1], c.Now())
	if err != nil {
		return err
	}
	if len(val) == 0 {
		c.W.Int(int64(len(v.Bytes))) // nothing to write: 0 for a missing key, which stays so
		return nil
	}
	if off > int64(dt.cfg.MaxBulk-len(val)) {
		return errTooLong
	}
	end := int(off) + len(val)
	n := max(len(v.Bytes), end)
	b := append(c.Buffer(n), v.Bytes...)
	b = append(b, make([]byte, n-len(b))...)
	copy(b[off:], val)
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: b, Expire: v.Expire, Num: strRaw})
	c.Notify(notify.String, "setrange", args[1])
	c.W.Int(int64(n))
	return nil
}

// GETRANGE key start end, SUBSTR key start end: negative indexes count from the end.
func (dt *Family) cmdGetRange(c *command.Ctx, args [][]byte) error {
	start, ok := command.ParseInt(args[2])
	if !ok {
		return command.ErrNotInteger
	}
	end, ok := command.ParseInt(args[3])
	if !ok {
		return command.ErrNotInteger
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.stringLocked(c, sh, args[1], c.Now())
	if err != nil {
		return err
	}
	c.W.Bulk(substring(v.Bytes, start, end))
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

// setKeyFlags is SET's key's flags, as Redis's setGetKeys: it reads the key only with GET.
func setKeyFlags(args [][]byte, pos int) string {
	for _, a := range args[3:] {
		if strings.EqualFold(string(a), "get") {
			return "RW access update"
		}
	}
	return "OW update"
}
