package server

import (
	"errors"

	"github.com/throttledhq/throttled/bitmap"
	"github.com/throttledhq/throttled/keyspace"
)

var (
	// errBitOffset is a bit offset that is not an integer, is negative, or lies past
	// proto-max-bulk-len bytes.
	errBitOffset = errors.New("bit offset is not an integer or out of range")
	// errBitValue is SETBIT's value other than 0 or 1.
	errBitValue = errors.New("bit is not an integer or out of range")
)

func bitmapCommands() []*command {
	return []*command{
		{name: "setbit", arity: 4, flags: "write denyoom", firstKey: 1, lastKey: 1, group: "bitmap", since: "2.2.0", summary: "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", syntax: "key offset value", handler: cmdSetBit},
		{name: "getbit", arity: 3, flags: "readonly fast", firstKey: 1, lastKey: 1, group: "bitmap", since: "2.2.0", summary: "Returns a bit value by offset.", syntax: "key offset", handler: cmdGetBit},
		{name: "bitcount", arity: -2, flags: "readonly", firstKey: 1, lastKey: 1, group: "bitmap", since: "2.6.0", summary: "Counts the number of set bits (population counting) in a string.", syntax: "key [start end [BYTE|BIT]]", handler: cmdBitCount},
	}
}

// bitOffset reads a bit offset as Redis does: at most proto-max-bulk-len bytes' worth.
func (c *client) bitOffset(arg []byte) (int64, error) {
	off, ok := parseInt(arg)
	if !ok || off < 0 || off>>3 >= int64(c.s.cfg.ProtoMaxBulkLen) {
		return 0, errBitOffset
	}
	return off, nil
}

// SETBIT key offset value: the string grows with zero bytes to hold the bit, and becomes a
// raw one, as Redis unshares it; the key keeps its expiry. Replies the bit's value before.
func cmdSetBit(c *client, args [][]byte) error {
	off, err := c.bitOffset(args[2])
	if err != nil {
		return err
	}
	if len(args[3]) != 1 || args[3][0] != '0' && args[3][0] != '1' {
		return errBitValue
	}
	on := args[3][0] == '1'
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.stringLocked(sh, args[1], c.now())
	if err != nil {
		return err
	}
	n := max(len(v.Bytes), int(off>>3)+1)
	if ok && n == len(v.Bytes) && v.Num == strRaw && int64(bitmap.Get(v.Bytes, off)) == b2i(on) {
		c.w.Int(b2i(on)) // nothing changes: Redis writes nothing either
		return nil
	}
	b := append(c.stringBuffer(n), v.Bytes...)
	b = append(b, make([]byte, n-len(b))...)
	old := bitmap.Set(b, off, on)
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: b, Expire: v.Expire, Num: strRaw})
	c.w.Int(int64(old))
	return nil
}

// GETBIT key offset: 0 past the end and for a missing key.
func cmdGetBit(c *client, args [][]byte) error {
	off, err := c.bitOffset(args[2])
	if err != nil {
		return err
	}
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := c.stringLocked(sh, args[1], c.now())
	if err != nil {
		return err
	}
	c.w.Int(int64(bitmap.Get(v.Bytes, off)))
	return nil
}

// BITCOUNT key [start end [BYTE|BIT]]: as Redis 7.0, a missing key counts 0 before the
// arguments are read.
func cmdBitCount(c *client, args [][]byte) error {
	sh := c.s.ks.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := c.stringLocked(sh, args[1], c.now())
	if err != nil {
		return err
	}
	if !ok {
		c.w.Int(0)
		return nil
	}
	start, end, bit := int64(0), int64(-1), false
	switch len(args) {
	case 2:
	case 4, 5:
		var ok bool
		if start, ok = parseInt(args[2]); !ok {
			return errNotInteger
		}
		if end, ok = parseInt(args[3]); !ok {
			return errNotInteger
		}
		if start < 0 && end < 0 && start > end {
			c.w.Int(0)
			return nil
		}
		if len(args) == 5 {
			switch {
			case equalFold(args[4], "bit"):
				bit = true
			case equalFold(args[4], "byte"):
			default:
				return errSyntax
			}
		}
	default:
		return errSyntax
	}
	c.w.Int(bitmap.Count(v.Bytes, start, end, bit))
	return nil
}
