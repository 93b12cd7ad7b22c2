package server

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"throttled/keyspace"
)

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
	}
}

// GET key
func cmdGet(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok := sh.GetLocked(args[1], c.now())
	switch {
	case !ok:
		c.w.null()
	case v.Kind != keyspace.String:
		return keyspace.ErrWrongType
	default:
		c.w.bulk(v.Bytes)
	}
	return nil
}

// SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]
func cmdSet(c *client, args [][]byte) error {
	var nx, xx, get, keepTTL, hasExpire bool
	var when int64
	now := c.now()
	for i := 3; i < len(args); i++ {
		switch opt := strings.ToLower(string(args[i])); opt {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "get":
			get = true
		case "keepttl":
			keepTTL = true
		case "ex", "px", "exat", "pxat":
			if hasExpire || i+1 == len(args) {
				return errSyntax
			}
			n, ok := parseInt(args[i+1])
			if !ok {
				return errNotInteger
			}
			unit := int64(1e9)
			if opt[0] == 'p' {
				unit = 1e6
			}
			var fits bool
			when, fits = expireAt(n, unit, strings.HasSuffix(opt, "at"), now)
			if n <= 0 || !fits {
				return errors.New("invalid expire time in 'set' command")
			}
			hasExpire = true
			i++
		default:
			return errSyntax
		}
	}
	if nx && xx || keepTTL && hasExpire {
		return errSyntax
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	old, exists := sh.GetLocked(args[1], now)
	if get && exists && old.Kind != keyspace.String {
		return keyspace.ErrWrongType
	}
	if get {
		if exists {
			c.w.bulk(old.Bytes) // written before the value it aliases is replaced
		} else {
			c.w.null()
		}
	}
	if nx && exists || xx && !exists {
		if !get {
			c.w.null()
		}
		return nil
	}
	if keepTTL && exists {
		when = old.Expire
	}
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[2], Expire: when})
	if !get {
		c.w.ok()
	}
	return nil
}

// SETNX key value
func cmdSetNX(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	if _, ok := sh.GetLocked(args[1], c.now()); ok {
		c.w.int(0)
		return nil
	}
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[2]})
	c.w.int(1)
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
			return errors.New("invalid expire time in '" + strings.ToLower(string(args[0])) + "' command")
		}
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: args[3], Expire: when})
		sh.Unlock()
		c.w.ok()
		return nil
	}
}

// MGET key [key ...]
func cmdMGet(c *client, args [][]byte) error {
	now := c.now()
	c.w.array(len(args) - 1)
	for _, key := range args[1:] {
		sh := c.s.ks.Shard(key)
		sh.Lock()
		if v, ok := sh.GetLocked(key, now); ok && v.Kind == keyspace.String {
			c.w.bulk(v.Bytes)
		} else {
			c.w.null()
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
	c.w.ok()
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
		sh := c.s.ks.Shard(args[1])
		sh.Lock()
		defer sh.Unlock()
		v, ok := sh.GetLocked(args[1], c.now())
		cur := int64(0)
		if ok {
			if v.Kind != keyspace.String {
				return keyspace.ErrWrongType
			}
			if cur, ok = parseInt(v.Bytes); !ok {
				return errNotInteger
			}
		}
		if by > 0 && cur > math.MaxInt64-by || by < 0 && cur < math.MinInt64-by {
			return errOverflow
		}
		cur += by
		var buf [20]byte
		sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: strconv.AppendInt(buf[:0], cur, 10), Expire: v.Expire})
		c.w.int(cur)
		return nil
	}
}
