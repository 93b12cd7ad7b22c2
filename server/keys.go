package server

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/keyspace"
)

func keyCommands() []*command {
	return []*command{
		{name: "del", arity: -2, flags: "write", firstKey: 1, lastKey: -1, group: "keyspace", since: "1.0.0", summary: "Deletes one or more keys.", syntax: "key [key ...]", handler: cmdDel},
		{name: "unlink", arity: -2, flags: "write fast", firstKey: 1, lastKey: -1, group: "keyspace", since: "4.0.0", summary: "Deletes one or more keys.", syntax: "key [key ...]", handler: cmdDel},
		{name: "exists", arity: -2, flags: "readonly fast", firstKey: 1, lastKey: -1, group: "keyspace", since: "1.0.0", summary: "Determines whether one or more keys exist.", syntax: "key [key ...]", handler: cmdExists},
		{name: "type", arity: 2, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "keyspace", since: "1.0.0", summary: "Determines the type of value stored at a key.", syntax: "key", handler: cmdType},
		{name: "expire", arity: -3, flags: "write fast", firstKey: 1, lastKey: 1, group: "keyspace", since: "1.0.0", summary: "Sets the expiration time of a key in seconds.", syntax: "key seconds [NX|XX|GT|LT]", handler: expireHandler(1e9, false)},
		{name: "pexpire", arity: -3, flags: "write fast", firstKey: 1, lastKey: 1, group: "keyspace", since: "2.6.0", summary: "Sets the expiration time of a key in milliseconds.", syntax: "key milliseconds [NX|XX|GT|LT]", handler: expireHandler(1e6, false)},
		{name: "expireat", arity: -3, flags: "write fast", firstKey: 1, lastKey: 1, group: "keyspace", since: "1.2.0", summary: "Sets the expiration time of a key to a Unix timestamp.", syntax: "key unix-time-seconds [NX|XX|GT|LT]", handler: expireHandler(1e9, true)},
		{name: "pexpireat", arity: -3, flags: "write fast", firstKey: 1, lastKey: 1, group: "keyspace", since: "2.6.0", summary: "Sets the expiration time of a key to a Unix milliseconds timestamp.", syntax: "key unix-time-milliseconds [NX|XX|GT|LT]", handler: expireHandler(1e6, true)},
		{name: "ttl", arity: 2, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "keyspace", since: "1.0.0", summary: "Returns the expiration time in seconds of a key.", syntax: "key", handler: ttlHandler(1e9, false)},
		{name: "pttl", arity: 2, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "keyspace", since: "2.6.0", summary: "Returns the expiration time in milliseconds of a key.", syntax: "key", handler: ttlHandler(1e6, false)},
		{name: "expiretime", arity: 2, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "keyspace", since: "7.0.0", summary: "Returns the expiration time of a key as a Unix timestamp.", syntax: "key", handler: ttlHandler(1e9, true)},
		{name: "pexpiretime", arity: 2, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "keyspace", since: "7.0.0", summary: "Returns the expiration time of a key as a Unix milliseconds timestamp.", syntax: "key", handler: ttlHandler(1e6, true)},
		{name: "persist", arity: 2, flags: "write fast", firstKey: 1, lastKey: 1, group: "keyspace", since: "2.2.0", summary: "Removes the expiration time of a key.", syntax: "key", handler: cmdPersist},
		{name: "keys", arity: 2, flags: "readonly", group: "keyspace", since: "1.0.0", summary: "Returns all key names that match a pattern.", syntax: "pattern", handler: cmdKeys},
		{name: "touch", arity: -2, flags: "readonly fast", firstKey: 1, lastKey: -1, group: "keyspace", since: "3.2.1", summary: "Returns the number of existing keys out of those specified after updating the time they were last accessed.", syntax: "key [key ...]", handler: cmdTouch},
		{name: "rename", arity: 3, flags: "write", firstKey: 1, lastKey: 2, group: "keyspace", since: "1.0.0", summary: "Renames a key and overwrites the destination.", syntax: "key newkey", handler: renameHandler(false)},
		{name: "renamenx", arity: 3, flags: "write fast", firstKey: 1, lastKey: 2, group: "keyspace", since: "1.0.0", summary: "Renames a key only when the target key name doesn't exist.", syntax: "key newkey", handler: renameHandler(true)},
		{name: "copy", arity: -3, flags: "write denyoom", firstKey: 1, lastKey: 2, group: "keyspace", since: "6.2.0", summary: "Copies the value of a key to a new key.", syntax: "source destination [DB destination-db] [REPLACE]", handler: cmdCopy},
		{name: "object", arity: -2, group: "keyspace", since: "2.2.3", summary: "A container for object introspection commands."},
		{name: "scan", arity: -2, flags: "readonly", group: "keyspace", since: "2.8.0", summary: "Iterates over the key names in the database.", syntax: "cursor [MATCH pattern] [COUNT count] [TYPE type]", handler: cmdScan},
	}
}

func objectSubcommands() []*command {
	return []*command{
		{name: "encoding", arity: 3, flags: "readonly", firstKey: 2, lastKey: 2, group: "keyspace", since: "2.2.3", summary: "Returns the internal encoding of a Redis object.", syntax: "key", handler: objectHandler(objectEncoding)},
		{name: "refcount", arity: 3, flags: "readonly", firstKey: 2, lastKey: 2, group: "keyspace", since: "2.2.3", summary: "Returns the reference count of a value of a key.", syntax: "key", handler: objectHandler(objectRefcount)},
		{name: "idletime", arity: 3, flags: "readonly", firstKey: 2, lastKey: 2, group: "keyspace", since: "2.2.3", summary: "Returns the time since the last access to a Redis object.", syntax: "key", handler: cmdObjectIdletime},
		{name: "freq", arity: 3, flags: "readonly", firstKey: 2, lastKey: 2, group: "keyspace", since: "4.0.0", summary: "Returns the logarithmic access frequency counter of a Redis object.", syntax: "key", handler: objectHandler(objectFreq)},
		{name: "help", arity: 2, flags: "loading stale", group: "keyspace", since: "6.2.0", summary: "Returns helpful text about the different subcommands.", handler: cmdObjectHelp},
	}
}

// DEL key [key ...], UNLINK key [key ...]
func cmdDel(c *client, args [][]byte) error {
	now := c.now()
	n := int64(0)
	for _, key := range args[1:] {
		sh := c.s.ks.Shard(key)
		sh.Lock()
		if sh.DeleteAtLocked(key, now) {
			n++
		}
		sh.Unlock()
	}
	c.w.Int(n)
	return nil
}

// EXISTS key [key ...], and TOUCH key [key ...] (touch): the keys that exist. EXISTS leaves
// their access time alone, as Redis's; TOUCH notes an access to each.
func cmdExists(c *client, args [][]byte) error { return countKeys(c, args, false) }

func cmdTouch(c *client, args [][]byte) error { return countKeys(c, args, true) }

func countKeys(c *client, args [][]byte, touch bool) error {
	now := c.now()
	n := int64(0)
	for _, key := range args[1:] {
		sh := c.s.ks.Shard(key)
		sh.Lock()
		var ok bool
		if touch {
			_, ok = sh.GetLocked(key, now)
		} else {
			_, ok = sh.PeekLocked(key, now)
		}
		sh.CountLookup(ok)
		if ok {
			n++
		}
		sh.Unlock()
	}
	c.w.Int(n)
	return nil
}

// TYPE key
func cmdType(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	v, ok := sh.PeekLocked(args[1], c.now())
	sh.CountLookup(ok)
	sh.Unlock()
	c.w.Simple(v.Kind.String())
	return nil
}

// expireHandler makes EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT:
// key n [NX|XX|GT|LT], with n in units of unit nanoseconds, relative or absolute.
func expireHandler(unit int64, absolute bool) handler {
	return func(c *client, args [][]byte) error {
		n, ok := parseInt(args[2])
		if !ok {
			return errNotInteger
		}
		var nx, xx, gt, lt bool
		for _, a := range args[3:] {
			switch {
			case equalFold(a, "nx"):
				nx = true
			case equalFold(a, "xx"):
				xx = true
			case equalFold(a, "gt"):
				gt = true
			case equalFold(a, "lt"):
				lt = true
			default:
				return errors.New("Unsupported option " + truncate(a, 64))
			}
		}
		if nx && (xx || gt || lt) {
			return errors.New("NX and XX, GT or LT options at the same time are not compatible")
		}
		if gt && lt {
			return errors.New("GT and LT options at the same time are not compatible")
		}
		now := c.now()
		when, ok := expireTime(n, unit, absolute, now)
		if !ok {
			return errInvalidExpire(string(args[0]))
		}
		sh := c.lockShard(args[1])
		defer c.unlockShard(sh)
		v, ok := sh.GetLocked(args[1], now)
		if !ok {
			c.w.Int(0)
			return nil
		}
		has := v.Expire != 0
		switch {
		case nx && has, xx && !has, gt && (!has || when <= v.Expire), lt && has && when >= v.Expire:
			c.w.Int(0)
			return nil
		}
		if when <= now {
			sh.DeleteLocked(args[1])
		} else {
			c.setExpireLocked(sh, args[1], when, now)
		}
		c.w.Int(1)
		return nil
	}
}

// errInvalidExpire is Redis's error for an expiry time out of range in the command name.
func errInvalidExpire(name string) error {
	return errors.New("invalid expire time in '" + strings.ToLower(name) + "' command")
}

// expireTime turns an EXPIRE-family argument into Unix ns as Redis 7.0 takes it: any
// time in the past (it deletes the key), but seconds must convert to int64 milliseconds,
// and the time in milliseconds must fit int64. Past that, a time must fit the keyspace's
// int64 ns, which end in 2262. A time far in the past comes back clamped, still in the past.
func expireTime(n, unit int64, absolute bool, now int64) (int64, bool) {
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

// expireAt turns a positive expiry of SET or GETEX into Unix ns; false when it leaves int64.
func expireAt(n, unit int64, absolute bool, now int64) (int64, bool) {
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
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
func ttlHandler(unit int64, absolute bool) handler {
	return func(c *client, args [][]byte) error {
		now := c.now()
		sh := c.lockShard(args[1])
		v, ok := sh.PeekLocked(args[1], now)
		sh.CountLookup(ok)
		c.unlockShard(sh)
		c.w.Int(ttlOf(v, ok, now, unit, absolute))
		return nil
	}
}

// ttlOf is what TTL, PTTL, EXPIRETIME or PEXPIRETIME reply for the value v (ok false for
// no key) at now.
func ttlOf(v keyspace.Value, ok bool, now, unit int64, absolute bool) int64 {
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
func cmdPersist(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	now := c.now()
	v, ok := sh.GetLocked(args[1], now)
	if !ok || v.Expire == 0 {
		c.w.Int(0)
		return nil
	}
	c.setExpireLocked(sh, args[1], 0, now)
	c.w.Int(1)
	return nil
}

// KEYS pattern
func cmdKeys(c *client, args [][]byte) error {
	now := c.now()
	var keys [][]byte
	cursor := uint64(0)
	for {
		cursor = c.s.ks.Scan(cursor, 1024, now, func(key []byte, v keyspace.Value) {
			if !isPolicyRecord(v) && glob.Match(args[1], key) {
				keys = append(keys, append([]byte(nil), key...))
			}
		})
		if cursor == 0 {
			break
		}
	}
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
	return nil
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
func cmdScan(c *client, args [][]byte) error {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		return errors.New("invalid cursor")
	}
	var pattern []byte
	var typ string
	count := int64(10)
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return errSyntax
		}
		switch strings.ToLower(string(args[i])) {
		case "match":
			pattern = args[i+1]
		case "count":
			n, ok := parseInt(args[i+1])
			if !ok {
				return errNotInteger
			}
			if n < 1 {
				return errSyntax
			}
			count = min(n, 1<<20)
		case "type":
			typ = strings.ToLower(string(args[i+1]))
		default:
			return errSyntax
		}
	}
	var keys [][]byte
	next := c.s.ks.Scan(cursor, int(count), c.now(), func(key []byte, v keyspace.Value) {
		if !isPolicyRecord(v) && (pattern == nil || glob.Match(pattern, key)) && (typ == "" || v.Kind.String() == typ) {
			keys = append(keys, append([]byte(nil), key...))
		}
	})
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
	return nil
}

// setExpireLocked changes the expiry of a live key. Its value goes through the client's
// scratch buffer: Set must not copy from the memory it replaces.
func (c *client) setExpireLocked(sh *keyspace.Shard, key []byte, when, now int64) {
	v, _ := sh.GetLocked(key, now)
	v.Expire = when
	v.Bytes = append(c.stringBuffer(len(v.Bytes)), v.Bytes...)
	sh.SetLocked(key, v)
}

// renameHandler makes RENAME key newkey and RENAMENX key newkey: the value moves with its
// expiry; RENAME replaces newkey, RENAMENX leaves an existing one alone and replies 0.
func renameHandler(nx bool) handler {
	return func(c *client, args [][]byte) error {
		src, dst := args[1], args[2]
		c.shards = c.s.ks.LockKeys(args[1:3], c.shards[:0]) // reused: ALLOF and these two never overlap
		shards := c.shards
		defer keyspace.UnlockShards(shards)
		now := c.now()
		srcSh, dstSh := c.s.ks.Shard(src), c.s.ks.Shard(dst)
		v, ok := srcSh.GetLocked(src, now)
		if !ok {
			return errNoSuchKey
		}
		if string(src) == string(dst) {
			if nx {
				c.w.Int(0) // RENAMENX finds the target taken: by the key itself
			} else {
				c.w.OK()
			}
			return nil
		}
		if _, exists := dstSh.GetLocked(dst, now); exists && nx {
			c.w.Int(0)
			return nil
		}
		dstSh.SetLocked(dst, v) // copies the bytes, which alias src's: another key's
		srcSh.DeleteLocked(src)
		if nx {
			c.w.Int(1)
		} else {
			c.w.OK()
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
func cmdCopy(c *client, args [][]byte) error {
	replace := false
	for i := 3; i < len(args); i++ {
		switch {
		case equalFold(args[i], "replace"):
			replace = true
		case equalFold(args[i], "db") && i+1 < len(args):
			n, ok := parseInt(args[i+1])
			if !ok {
				return errNotInteger
			}
			if n < math.MinInt32 || n > math.MaxInt32 {
				return errNotInt32 // Redis reads an int
			}
			if n != 0 {
				return errDBIndex
			}
			i++
		default:
			return errSyntax
		}
	}
	src, dst := args[1], args[2]
	if string(src) == string(dst) {
		return errSameObject
	}
	c.shards = c.s.ks.LockKeys(args[1:3], c.shards[:0]) // reused: ALLOF and these two never overlap
	shards := c.shards
	defer keyspace.UnlockShards(shards)
	now := c.now()
	srcSh, dstSh := c.s.ks.Shard(src), c.s.ks.Shard(dst)
	v, ok := srcSh.GetLocked(src, now)
	if !ok {
		c.w.Int(0)
		return nil
	}
	if _, exists := dstSh.GetLocked(dst, now); exists && !replace {
		c.w.Int(0)
		return nil
	}
	if v.Kind == keyspace.String && stringEncoding(v) == "int" {
		v.Num = strOwnInt // Redis duplicates a shared integer into an object of the copy's own
	}
	dstSh.SetLocked(dst, v)
	c.w.Int(1)
	return nil
}

// objectHandler makes an OBJECT subcommand that reports on the value at args[2]: nil
// when there is none. OBJECT notes no access, as on Redis.
func objectHandler(report func(c *client, v keyspace.Value) error) handler {
	return func(c *client, args [][]byte) error {
		sh := c.s.ks.Shard(args[2])
		sh.Lock()
		defer sh.Unlock()
		v, ok := sh.PeekLocked(args[2], c.now())
		if !ok {
			c.w.Null()
			return nil
		}
		return report(c, v)
	}
}

// OBJECT ENCODING key: the name of the representation Redis 7.0 would have chosen.
func objectEncoding(c *client, v keyspace.Value) error {
	c.w.BulkString(encodingOf(v))
	return nil
}

// encodingOf names v's representation in Redis 7.0. A collection has passed its listpack
// thresholds when its Num2 has bigEncoding. A rate-limit state is bytes of its own, which
// Redis would hold as a raw string.
func encodingOf(v keyspace.Value) string {
	switch v.Kind {
	case keyspace.String:
		return stringEncoding(v)
	case keyspace.Hash:
		if v.Num2&bigEncoding != 0 {
			return "hashtable"
		}
		return "listpack"
	case keyspace.ZSet:
		if v.Num2&bigEncoding != 0 {
			return "skiplist"
		}
		return "listpack"
	case keyspace.List:
		return "quicklist" // 7.0 has no listpack lists (7.2 has)
	case keyspace.Set:
		if v.Num2&bigEncoding != 0 {
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
		if _, ok := parseInt(v.Bytes); ok {
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
func objectRefcount(c *client, v keyspace.Value) error {
	if v.Kind == keyspace.String && v.Num == strAsSet {
		n, ok := parseInt(v.Bytes)
		lru := c.s.mem.max.Load() != 0 && keyspace.Policy(c.s.mem.policy.Load()).LRU()
		if ok && n >= 0 && n < 10000 && !lru {
			c.w.Int(sharedRefcount)
			return nil
		}
	}
	c.w.Int(1)
	return nil
}

// OBJECT IDLETIME key: the seconds since the key was last read or written, by the
// keyspace's access clock.
func cmdObjectIdletime(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[2])
	sh.Lock()
	idle, ok := sh.IdleLocked(args[2], c.now())
	sh.Unlock()
	if !ok {
		c.w.Null()
		return nil
	}
	c.w.Int(idle)
	return nil
}

// OBJECT FREQ key: Redis counts accesses only under an LFU policy, which this server does
// not have: its error.
func objectFreq(c *client, v keyspace.Value) error {
	return errors.New("An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
}

// OBJECT HELP
func cmdObjectHelp(c *client, args [][]byte) error {
	writeHelp(c, "OBJECT", []string{
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
