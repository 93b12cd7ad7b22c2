package server

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"throttled/glob"
	"throttled/keyspace"
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
		{name: "scan", arity: -2, flags: "readonly", group: "keyspace", since: "2.8.0", summary: "Iterates over the key names in the database.", syntax: "cursor [MATCH pattern] [COUNT count] [TYPE type]", handler: cmdScan},
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
	c.w.int(n)
	return nil
}

// EXISTS key [key ...]
func cmdExists(c *client, args [][]byte) error {
	now := c.now()
	n := int64(0)
	for _, key := range args[1:] {
		sh := c.s.ks.Shard(key)
		sh.Lock()
		if _, ok := sh.GetLocked(key, now); ok {
			n++
		}
		sh.Unlock()
	}
	c.w.int(n)
	return nil
}

// TYPE key
func cmdType(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	v, _ := sh.GetLocked(args[1], c.now())
	sh.Unlock()
	c.w.simple(v.Kind.String())
	return nil
}

// expireHandler makes EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT:
// key n [NX|XX|GT|LT], with n in units of unit nanoseconds, relative or absolute.
func expireHandler(unit int64, absolute bool) handler {
	return func(c *client, args [][]byte) error {
		name := strings.ToLower(string(args[0]))
		n, ok := parseInt(args[2])
		if !ok {
			return errNotInteger
		}
		var nx, xx, gt, lt bool
		for _, a := range args[3:] {
			switch strings.ToLower(string(a)) {
			case "nx":
				nx = true
			case "xx":
				xx = true
			case "gt":
				gt = true
			case "lt":
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
		when, ok := expireAt(n, unit, absolute, now)
		if !ok {
			return errors.New("invalid expire time in '" + name + "' command")
		}
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, ok := sh.GetLocked(args[1], now)
		if !ok {
			c.w.int(0)
			return nil
		}
		has := v.Expire != 0
		switch {
		case nx && has, xx && !has, gt && (!has || when <= v.Expire), lt && has && when >= v.Expire:
			c.w.int(0)
			return nil
		}
		if when <= now {
			sh.DeleteLocked(args[1])
		} else {
			setExpire(sh, args[1], when, now)
		}
		c.w.int(1)
		return nil
	}
}

// expireAt turns an EXPIRE-family argument into Unix ns; false when it leaves int64.
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
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		v, ok := sh.GetLocked(args[1], now)
		sh.Unlock()
		switch {
		case !ok:
			c.w.int(-2)
		case v.Expire == 0:
			c.w.int(-1)
		case absolute:
			c.w.int(v.Expire / unit)
		default:
			ms := (v.Expire - now + 999_999) / 1e6
			if unit == 1e9 {
				c.w.int((ms + 500) / 1000)
			} else {
				c.w.int(ms)
			}
		}
		return nil
	}
}

// PERSIST key
func cmdPersist(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	now := c.now()
	v, ok := sh.GetLocked(args[1], now)
	if !ok || v.Expire == 0 {
		c.w.int(0)
		return nil
	}
	setExpire(sh, args[1], 0, now)
	c.w.int(1)
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
	c.w.array(len(keys))
	for _, k := range keys {
		c.w.bulk(k)
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
	c.w.array(2)
	c.w.bulkString(strconv.FormatUint(next, 10))
	c.w.array(len(keys))
	for _, k := range keys {
		c.w.bulk(k)
	}
	return nil
}

// setExpire changes the expiry of a live key.
func setExpire(sh *keyspace.Shard, key []byte, when, now int64) {
	v, _ := sh.GetLocked(key, now)
	v.Expire = when
	v.Bytes = append([]byte(nil), v.Bytes...) // Set must not copy from the memory it replaces
	sh.SetLocked(key, v)
}
