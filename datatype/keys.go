package datatype

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
)

func (dt *Family) keyCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "del", Arity: -2, Flags: "write", FirstKey: 1, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RM delete"}}, Group: "keyspace", Since: "1.0.0", Summary: "Deletes one or more keys.", Syntax: "key [key ...]", Handler: dt.cmdDel},
		{Name: "unlink", Arity: -2, Flags: "write fast", FirstKey: 1, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RM delete"}}, Group: "keyspace", Since: "4.0.0", Summary: "Deletes one or more keys.", Syntax: "key [key ...]", Handler: dt.cmdDel},
		{Name: "exists", Arity: -2, Flags: "readonly fast", FirstKey: 1, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO"}}, Group: "keyspace", Since: "1.0.0", Summary: "Determines whether one or more keys exist.", Syntax: "key [key ...]", Handler: dt.cmdExists},
		{Name: "type", Arity: 2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO"}}, Group: "keyspace", Since: "1.0.0", Summary: "Determines the type of value stored at a key.", Syntax: "key", Handler: dt.cmdType},
		{Name: "expire", Arity: -3, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}}, Direct: true, Group: "keyspace", Since: "1.0.0", Summary: "Sets the expiration time of a key in seconds.", Syntax: "key seconds [NX|XX|GT|LT]", Handler: dt.expireHandler(1e9, false)},
		{Name: "pexpire", Arity: -3, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}}, Direct: true, Group: "keyspace", Since: "2.6.0", Summary: "Sets the expiration time of a key in milliseconds.", Syntax: "key milliseconds [NX|XX|GT|LT]", Handler: dt.expireHandler(1e6, false)},
		{Name: "expireat", Arity: -3, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}}, Direct: true, Group: "keyspace", Since: "1.2.0", Summary: "Sets the expiration time of a key to a Unix timestamp.", Syntax: "key unix-time-seconds [NX|XX|GT|LT]", Handler: dt.expireHandler(1e9, true)},
		{Name: "pexpireat", Arity: -3, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}}, Direct: true, Group: "keyspace", Since: "2.6.0", Summary: "Sets the expiration time of a key to a Unix milliseconds timestamp.", Syntax: "key unix-time-milliseconds [NX|XX|GT|LT]", Handler: dt.expireHandler(1e6, true)},
		{Name: "ttl", Arity: 2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Direct: true, Group: "keyspace", Since: "1.0.0", Summary: "Returns the expiration time in seconds of a key.", Syntax: "key", Handler: dt.ttlHandler(1e9, false)},
		{Name: "pttl", Arity: 2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Direct: true, Group: "keyspace", Since: "2.6.0", Summary: "Returns the expiration time in milliseconds of a key.", Syntax: "key", Handler: dt.ttlHandler(1e6, false)},
		{Name: "expiretime", Arity: 2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Direct: true, Group: "keyspace", Since: "7.0.0", Summary: "Returns the expiration time of a key as a Unix timestamp.", Syntax: "key", Handler: dt.ttlHandler(1e9, true)},
		{Name: "pexpiretime", Arity: 2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Direct: true, Group: "keyspace", Since: "7.0.0", Summary: "Returns the expiration time of a key as a Unix milliseconds timestamp.", Syntax: "key", Handler: dt.ttlHandler(1e6, true)},
		{Name: "persist", Arity: 2, Flags: "write fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW update"}}, Group: "keyspace", Since: "2.2.0", Summary: "Removes the expiration time of a key.", Syntax: "key", Handler: dt.cmdPersist},
		{Name: "keys", Arity: 2, Flags: "readonly", ACL: "dangerous", Group: "keyspace", Since: "1.0.0", Summary: "Returns all key names that match a pattern.", Syntax: "pattern", Handler: dt.cmdKeys},
		{Name: "touch", Arity: -2, Flags: "readonly fast", FirstKey: 1, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO"}}, Group: "keyspace", Since: "3.2.1", Summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed.", Syntax: "key [key ...]", Handler: dt.cmdTouch},
		{Name: "rename", Arity: 3, Flags: "write", FirstKey: 1, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access delete"}, {Begin: 2, Flags: "OW update"}}, Group: "keyspace", Since: "1.0.0", Summary: "Renames a key and overwrites the destination.", Syntax: "key newkey", Handler: dt.renameHandler(false)},
		{Name: "renamenx", Arity: 3, Flags: "write fast", FirstKey: 1, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access delete"}, {Begin: 2, Flags: "OW insert"}}, Group: "keyspace", Since: "1.0.0", Summary: "Renames a key only when the target key name doesn't exist.", Syntax: "key newkey", Handler: dt.renameHandler(true)},
		{Name: "copy", Arity: -3, Flags: "write denyoom", FirstKey: 1, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}, {Begin: 2, Flags: "OW update"}}, Group: "keyspace", Since: "6.2.0", Summary: "Copies the value of a key to a new key.", Syntax: "source destination [DB destination-db] [REPLACE]", Handler: dt.cmdCopy},
		{Name: "object", Arity: -2, Group: "keyspace", Since: "2.2.3", Summary: "A container for object introspection commands.", Subcommands: dt.objectSubcommands()},
		{Name: "scan", Arity: -2, Flags: "readonly", Group: "keyspace", Since: "2.8.0", Summary: "Iterates over the key names in the database.", Syntax: "cursor [MATCH pattern] [COUNT count] [TYPE type]", Handler: dt.cmdScan},
	}
}

func (dt *Family) objectSubcommands() []*command.Spec {
	return []*command.Spec{
		{Name: "encoding", Arity: 3, Flags: "readonly", FirstKey: 2, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 2, Flags: "RO"}}, Group: "keyspace", Since: "2.2.3", Summary: "Returns the internal encoding of a Redis object.", Syntax: "key", Handler: objectHandler(dt.objectEncoding)},
		{Name: "refcount", Arity: 3, Flags: "readonly", FirstKey: 2, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 2, Flags: "RO"}}, Group: "keyspace", Since: "2.2.3", Summary: "Returns the reference count of a value of a key.", Syntax: "key", Handler: objectHandler(dt.objectRefcount)},
		{Name: "idletime", Arity: 3, Flags: "readonly", FirstKey: 2, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 2, Flags: "RO"}}, Group: "keyspace", Since: "2.2.3", Summary: "Returns the time since the last access to a Redis object.", Syntax: "key", Handler: dt.cmdObjectIdletime},
		{Name: "freq", Arity: 3, Flags: "readonly", FirstKey: 2, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 2, Flags: "RO"}}, Group: "keyspace", Since: "4.0.0", Summary: "Returns the logarithmic access frequency counter of a Redis object.", Syntax: "key", Handler: objectHandler(dt.objectFreq)},
		{Name: "help", Arity: 2, Flags: "loading stale", Group: "keyspace", Since: "6.2.0", Summary: "Returns helpful text about the different subcommands.", Handler: dt.cmdObjectHelp},
	}
}

// DEL key [key ...], UNLINK key [key ...]
func (dt *Family) cmdDel(c *command.Ctx, args [][]byte) error {
	now := c.Now()
	n := int64(0)
	for _, key := range args[1:] {
		sh := c.Keys.Shard(key)
		sh.Lock()
		if sh.DeleteAtLocked(key, now) {
			n++
			c.Notify(notify.Generic, "del", key)
		}
		sh.Unlock()
	}
	c.W.Int(n)
	return nil
}

// EXISTS key [key ...], and TOUCH key [key ...] (touch): the keys that exist. EXISTS leaves
// their access time alone, as Redis's; TOUCH notes an access to each.
func (dt *Family) cmdExists(c *command.Ctx, args [][]byte) error { return dt.countKeys(c, args, false) }

func (dt *Family) cmdTouch(c *command.Ctx, args [][]byte) error { return dt.countKeys(c, args, true) }

func (dt *Family) countKeys(c *command.Ctx, args [][]byte, touch bool) error {
	now := c.Now()
	n := int64(0)
	for _, key := range args[1:] {
		sh := c.Keys.Shard(key)
		sh.Lock()
		var ok bool
		if touch {
			_, ok = sh.GetLocked(key, now)
		} else {
			_, ok = sh.PeekLocked(key, now)
		}
		c.CountLookup(sh, key, ok)
		if ok {
			n++
		}
		sh.Unlock()
	}
	c.W.Int(n)
	return nil
}

// TYPE key
func (dt *Family) cmdType(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	v, ok := sh.PeekLocked(args[1], c.Now())
	c.CountLookup(sh, args[1], ok)
	sh.Unlock()
	c.W.Simple(v.Kind.String())
	return nil
}

// expireHandler makes EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT:
// key n [NX|XX|GT|LT], with n in units of unit nanoseconds, relative or absolute.
func (dt *Family) expireHandler(unit int64, absolute bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		n, ok := command.ParseInt(args[2])
		if !ok {
			return command.ErrNotInteger
		}
		var nx, xx, gt, lt bool
		for _, a := range args[3:] {
			switch {
			case command.EqualFold(a, "nx"):
				nx = true
			case command.EqualFold(a, "xx"):
				xx = true
			case command.EqualFold(a, "gt"):
				gt = true
			case command.EqualFold(a, "lt"):
				lt = true
			default:
				return errors.New("Unsupported option " + command.Truncate(a, 64))
			}
		}
		if nx && (xx || gt || lt) {
			return errors.New("NX and XX, GT or LT options at the same time are not compatible")
		}
		if gt && lt {
			return errors.New("GT and LT options at the same time are not compatible")
		}
		now := c.Now()
		when, ok := ExpireTime(n, unit, absolute, now)
		if !ok {
			return ErrInvalidExpire(string(args[0]))
		}
		sh := c.LockShard(args[1])
		defer c.UnlockShard(sh)
		v, ok := sh.GetLocked(args[1], now)
		if !ok {
			c.W.Int(0)
			return nil
		}
		has := v.Expire != 0
		switch {
		case nx && has, xx && !has, gt && (!has || when <= v.Expire), lt && has && when >= v.Expire:
			c.W.Int(0)
			return nil
		}
		if when <= now {
			sh.DeleteLocked(args[1])
			c.Notify(notify.Generic, "del", args[1])
		} else {
			SetExpireLocked(c, sh, args[1], when, now)
			c.Notify(notify.Generic, "expire", args[1])
		}
		c.W.Int(1)
		return nil
	}
}

// ErrInvalidExpire is Redis's error for an expiry time out of range in the command name.
func ErrInvalidExpire(name string) error {
	return errors.New("invalid expire time in '" + strings.ToLower(name) + "' command")
}

// ExpireTime turns an EXPIRE-family argument into Unix ns as Redis 7.0 takes it: any
// time in the past (it deletes the key), but seconds must convert to int64 milliseconds,
// and the time in milliseconds must fit int64. Past that, a time must fit the keyspace's
// int64 ns, which end in 2262. A time far in the past comes back clamped, still in the past.
func ExpireTime(n, unit int64, absolute bool, now int64) (int64, bool) {
	ms := n
	if unit == 1e9 {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, false
		}
		ms *= 1000
	}
	base := int64(0)
	if !absolute {
		base = now / 1e6
	}
	if ms > math.MaxInt64-base || ms+base >= math.MaxInt64/int64(1e6) {
		return 0, false
	}
	const farPast = math.MinInt64 / int64(2e6)
	switch {
	case ms+base < farPast:
		return farPast * 1e6, true
	case absolute:
		return ms * 1e6, true
	}
	return now + ms*1e6, true // to the ns, as SET's EX and PX
}

// ExpireAt turns a positive expiry of SET or GETEX into Unix ns; false when it leaves int64.
func ExpireAt(n, unit int64, absolute bool, now int64) (int64, bool) {
	var most, least int64 // the range of n whose nanoseconds fit, divided by a constant where the unit is known
	switch unit {
	case 1e9:
		most, least = math.MaxInt64/1_000_000_000, math.MinInt64/1_000_000_000
	case 1e6:
		most, least = math.MaxInt64/1_000_000, math.MinInt64/1_000_000
	default:
		most, least = math.MaxInt64/unit, math.MinInt64/unit
	}
	if n > most || n < least {
		return 0, false
	}
	ns := n * unit
	if absolute {
		return ns, true
	}
	if ns > 0 && now > math.MaxInt64-ns {
		return 0, false
	}
	return now + ns, true
}

// ttlHandler makes TTL, PTTL, EXPIRETIME and PEXPIRETIME: -2 for a missing
// key, -1 for a key without expiry, else the time left (rounded up to the
// unit, as Redis counts whole milliseconds) or the Unix time of expiry.
func (dt *Family) ttlHandler(unit int64, absolute bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		now := c.Now()
		sh := c.LockShard(args[1])
		v, ok := sh.PeekLocked(args[1], now)
		c.CountLookup(sh, args[1], ok)
		c.UnlockShard(sh)
		c.W.Int(TTLOf(v, ok, now, unit, absolute))
		return nil
	}
}

// TTLOf is what TTL, PTTL, EXPIRETIME or PEXPIRETIME reply for the value v (ok false for
// no key) at now.
func TTLOf(v keyspace.Value, ok bool, now, unit int64, absolute bool) int64 {
	switch {
	case !ok:
		return -2
	case v.Expire == 0:
		return -1
	case absolute:
		ms := v.Expire / 1e6
		if unit == 1e9 {
			ms = (ms + 500) / 1000 // Redis rounds to the nearest second
		}
		return ms
	}
	ms := (v.Expire - now + 999_999) / 1e6
	if unit == 1e9 {
		return (ms + 500) / 1000
	}
	return ms
}

// PERSIST key
func (dt *Family) cmdPersist(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	now := c.Now()
	v, ok := sh.GetLocked(args[1], now)
	if !ok || v.Expire == 0 {
		c.W.Int(0)
		return nil
	}
	SetExpireLocked(c, sh, args[1], 0, now)
	c.Notify(notify.Generic, "persist", args[1])
	c.W.Int(1)
	return nil
}

// KEYS pattern
func (dt *Family) cmdKeys(c *command.Ctx, args [][]byte) error {
	now := c.Now()
	var keys [][]byte
	cursor := uint64(0)
	for {
		cursor = c.Keys.Scan(cursor, 1024, now, func(key []byte, v keyspace.Value) {
			if !isRecord(v) && glob.Match(args[1], key) {
				keys = append(keys, append([]byte(nil), key...))
			}
		})
		if cursor == 0 {
			break
		}
	}
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.Bulk(k)
	}
	return nil
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
func (dt *Family) cmdScan(c *command.Ctx, args [][]byte) error {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		return errors.New("invalid cursor")
	}
	var pattern []byte
	var typ string
	count := int64(10)
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return command.ErrSyntax
		}
		switch strings.ToLower(string(args[i])) {
		case "match":
			pattern = args[i+1]
		case "count":
			n, ok := command.ParseInt(args[i+1])
			if !ok {
				return command.ErrNotInteger
			}
			if n < 1 {
				return command.ErrSyntax
			}
			count = min(n, 1<<20)
		case "type":
			typ = strings.ToLower(string(args[i+1]))
		default:
			return command.ErrSyntax
		}
	}
	var keys [][]byte
	next := c.Keys.Scan(cursor, int(count), c.Now(), func(key []byte, v keyspace.Value) {
		if !isRecord(v) && (pattern == nil || glob.Match(pattern, key)) && (typ == "" || v.Kind.String() == typ) {
			keys = append(keys, append([]byte(nil), key...))
		}
	})
	c.W.Array(2)
	c.W.BulkString(strconv.FormatUint(next, 10))
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.Bulk(k)
	}
	return nil
}

// SetExpireLocked changes the expiry of a live key. Its value goes through the client's
// scratch buffer: Set must not copy from the memory it replaces.
func SetExpireLocked(c *command.Ctx, sh *keyspace.Shard, key []byte, when, now int64) {
	v, _ := sh.GetLocked(key, now)
	v.Expire = when
	v.Bytes = append(c.Buffer(len(v.Bytes)), v.Bytes...)
	sh.SetLocked(key, v)
}

// renameHandler makes RENAME key newkey and RENAMENX key newkey: the value moves with its
// expiry; RENAME replaces newkey, RENAMENX leaves an existing one alone and replies 0.
func (dt *Family) renameHandler(nx bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		src, dst := args[1], args[2]
		c.Shards = c.Keys.LockKeys(args[1:3], c.Shards[:0]) // reused: ALLOF and these two never overlap
		shards := c.Shards
		defer keyspace.UnlockShards(shards)
		now := c.Now()
		srcSh, dstSh := c.Keys.Shard(src), c.Keys.Shard(dst)
		v, ok := srcSh.GetLocked(src, now)
		if !ok {
			return command.ErrNoSuchKey
		}
		if string(src) == string(dst) {
			if nx {
				c.W.Int(0) // RENAMENX finds the target taken: by the key itself
			} else {
				c.W.OK()
			}
			return nil
		}
		_, exists := dstSh.GetLocked(dst, now)
		if exists && nx {
			c.W.Int(0)
			return nil
		}
		if exists && c.Events.On(notify.NewKey) {
			dstSh.DeleteLocked(dst) // so that newkey is new, as Redis's dbDelete and dbAdd
		}
		dstSh.SetLocked(dst, v) // copies the bytes, which alias src's: another key's
		srcSh.DeleteLocked(src)
		c.Notify(notify.Generic, "rename_from", src)
		c.Notify(notify.Generic, "rename_to", dst)
		if nx {
			c.W.Int(1)
		} else {
			c.W.OK()
		}
		return nil
	}
}

var (
	// errSameObject is COPY onto itself.
	errSameObject = errors.New("source and destination objects are the same")
	// errNotInt32 is an integer argument that Redis reads as a C int.
	errNotInt32 = errors.New("value is out of range, value must between -2147483648 and 2147483647")
	// errDBIndex is a database other than 0: this server has one, as SELECT answers.
	errDBIndex = errors.New("DB index is out of range")
)

// COPY source destination [DB destination-db] [REPLACE]: the value and its expiry.
func (dt *Family) cmdCopy(c *command.Ctx, args [][]byte) error {
	replace := false
	for i := 3; i < len(args); i++ {
		switch {
		case command.EqualFold(args[i], "replace"):
			replace = true
		case command.EqualFold(args[i], "db") && i+1 < len(args):
			n, ok := command.ParseInt(args[i+1])
			if !ok {
				return command.ErrNotInteger
			}
			if n < math.MinInt32 || n > math.MaxInt32 {
				return errNotInt32 // Redis reads an int
			}
			if n != 0 {
				return errDBIndex
			}
			i++
		default:
			return command.ErrSyntax
		}
	}
	src, dst := args[1], args[2]
	if string(src) == string(dst) {
		return errSameObject
	}
	c.Shards = c.Keys.LockKeys(args[1:3], c.Shards[:0]) // reused: ALLOF and these two never overlap
	shards := c.Shards
	defer keyspace.UnlockShards(shards)
	now := c.Now()
	srcSh, dstSh := c.Keys.Shard(src), c.Keys.Shard(dst)
	v, ok := srcSh.GetLocked(src, now)
	if !ok {
		notifyMiss(c, src, ok)
		c.W.Int(0)
		return nil
	}
	_, exists := dstSh.GetLocked(dst, now)
	if exists && !replace {
		c.W.Int(0)
		return nil
	}
	if v.Kind == keyspace.String && stringEncoding(v) == "int" {
		v.Num = strOwnInt // Redis duplicates a shared integer into an object of the copy's own
	}
	if v.Obj != nil { // held by reference: the copy is a value of its own, from its bytes form
		v.Bytes, v.Obj = v.Obj.AppendEncoded(c.Buffer(v.Obj.EncodedLen())), nil
	}
	if exists && c.Events.On(notify.NewKey) {
		dstSh.DeleteLocked(dst) // so that destination is new, as Redis's dbDelete and dbAdd
	}
	dstSh.SetLocked(dst, v)
	c.Notify(notify.Generic, "copy_to", dst)
	c.W.Int(1)
	return nil
}

// objectHandler makes an OBJECT subcommand that reports on the value at args[2]: nil
// when there is none. OBJECT notes no access, as on Redis.
func objectHandler(report func(c *command.Ctx, v keyspace.Value) error) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		sh := c.Keys.Shard(args[2])
		sh.Lock()
		defer sh.Unlock()
		v, ok := sh.PeekLocked(args[2], c.Now())
		if !ok {
			c.W.Null()
			return nil
		}
		return report(c, v)
	}
}

// OBJECT ENCODING key: the name of the representation Redis 7.0 would have chosen.
func (dt *Family) objectEncoding(c *command.Ctx, v keyspace.Value) error {
	c.W.BulkString(encodingOf(v))
	return nil
}

// encodingOf names v's representation in Redis 7.0. A collection has passed its listpack
// thresholds when its Num2 has BigEncoding. A rate-limit state is bytes of its own, which
// Redis would hold as a raw string.
func encodingOf(v keyspace.Value) string {
	switch v.Kind {
	case keyspace.String:
		return stringEncoding(v)
	case keyspace.Hash:
		if v.Num2&BigEncoding != 0 {
			return "hashtable"
		}
		return "listpack"
	case keyspace.ZSet:
		if v.Num2&BigEncoding != 0 {
			return "skiplist"
		}
		return "listpack"
	case keyspace.List:
		return "quicklist" // 7.0 has no listpack lists (7.2 has)
	case keyspace.Set:
		if v.Num2&BigEncoding != 0 {
			return "hashtable" // 7.0 has no listpack sets (7.2 has)
		}
		return "intset"
	}
	return "raw"
}

// embstrMax is the longest string Redis embeds in its object header
// (OBJ_ENCODING_EMBSTR_SIZE_LIMIT).
const embstrMax = 44

// stringEncoding names a string's representation by how it was written (strings.go): SET
// holds the canonical decimal of an int64 as an integer, up to 44 bytes embedded, and
// longer strings raw.
func stringEncoding(v keyspace.Value) string {
	switch v.Num {
	case strRaw:
		return "raw"
	case strNoInt:
	default:
		if _, ok := command.ParseInt(v.Bytes); ok {
			return "int"
		}
	}
	if len(v.Bytes) <= embstrMax {
		return "embstr"
	}
	return "raw"
}

// sharedRefcount is the refcount Redis reports of an object shared by all (INT_MAX).
const sharedRefcount = math.MaxInt32

// OBJECT REFCOUNT key: Redis shares one object among the keys holding a small integer
// (0 to 9999) that SET or INCR wrote, unless maxmemory is set with an LRU policy, which
// needs an access time per key; any other value has its own.
func (dt *Family) objectRefcount(c *command.Ctx, v keyspace.Value) error {
	if v.Kind == keyspace.String && v.Num == strAsSet {
		n, ok := command.ParseInt(v.Bytes)
		lru := dt.cfg.LRU()
		if ok && n >= 0 && n < 10000 && !lru {
			c.W.Int(sharedRefcount)
			return nil
		}
	}
	c.W.Int(1)
	return nil
}

// OBJECT IDLETIME key: the seconds since the key was last read or written, by the
// keyspace's access clock.
func (dt *Family) cmdObjectIdletime(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[2])
	sh.Lock()
	idle, ok := sh.IdleLocked(args[2], c.Now())
	sh.Unlock()
	if !ok {
		c.W.Null()
		return nil
	}
	c.W.Int(idle)
	return nil
}

// OBJECT FREQ key: Redis counts accesses only under an LFU policy, which this server does
// not have: its error.
func (dt *Family) objectFreq(c *command.Ctx, v keyspace.Value) error {
	return errors.New("An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
}

// OBJECT HELP
func (dt *Family) cmdObjectHelp(c *command.Ctx, args [][]byte) error {
	c.WriteHelp("OBJECT", []string{
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.",
	})
	return nil
}

// isRecord reports whether v is one of the server's own records (the policies, the function
// libraries), which KEYS and SCAN do not show.
func isRecord(v keyspace.Value) bool {
	return v.Kind == keyspace.Policies || v.Kind == keyspace.Functions
}
