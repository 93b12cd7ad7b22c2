package datatype

import (
	"errors"

	"github.com/throttledhq/throttled/bitmap"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
)

var (
	// errBitOffset is a bit offset that is not an integer, is negative, or lies past
	// proto-max-bulk-len bytes.
	errBitOffset = errors.New("bit offset is not an integer or out of range")
	// errBitValue is SETBIT's value other than 0 or 1.
	errBitValue = errors.New("bit is not an integer or out of range")
)

func (dt *Family) bitmapCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "setbit", Arity: 4, Flags: "write denyoom", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Group: "bitmap", Since: "2.2.0", Summary: "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", Syntax: "key offset value", Handler: dt.cmdSetBit},
		{Name: "getbit", Arity: 3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "bitmap", Since: "2.2.0", Summary: "Returns a bit value by offset.", Syntax: "key offset", Handler: dt.cmdGetBit},
		{Name: "bitcount", Arity: -2, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "bitmap", Since: "2.6.0", Summary: "Counts the number of set bits (population counting) in a string.", Syntax: "key [start end [BYTE|BIT]]", Handler: dt.cmdBitCount},
	}
}

// bitOffset reads a bit offset as Redis does: at most proto-max-bulk-len bytes' worth.
func (dt *Family) bitOffset(c *command.Ctx, arg []byte) (int64, error) {
	off, ok := command.ParseInt(arg)
	if !ok || off < 0 || off>>3 >= int64(dt.cfg.MaxBulk) {
		return 0, errBitOffset
	}
	return off, nil
}

// SETBIT key offset value: the string grows with zero bytes to hold the bit, and becomes a
// raw one, as Redis unshares it; the key keeps its expiry. Replies the bit's value before.
func (dt *Family) cmdSetBit(c *command.Ctx, args [][]byte) error {
	off, err := dt.bitOffset(c, args[2])
	if err != nil {
		return err
	}
	if len(args[3]) != 1 || args[3][0] != '0' && args[3][0] != '1' {
		return errBitValue
	}
	on := args[3][0] == '1'
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.stringLocked(c, sh, args[1], c.Now())
	if err != nil {
		return err
	}
	n := max(len(v.Bytes), int(off>>3)+1)
	if ok && n == len(v.Bytes) && v.Num == strRaw && int64(bitmap.Get(v.Bytes, off)) == b2i(on) {
		c.W.Int(b2i(on)) // nothing changes: Redis writes nothing either
		return nil
	}
	b := append(c.Buffer(n), v.Bytes...)
	b = append(b, make([]byte, n-len(b))...)
	old := bitmap.Set(b, off, on)
	sh.SetLocked(args[1], keyspace.Value{Kind: keyspace.String, Bytes: b, Expire: v.Expire, Num: strRaw})
	if !ok || n != len(v.Bytes) || int64(old) != b2i(on) { // Redis's test: only a change is an event
		c.Notify(notify.String, "setbit", args[1])
	}
	c.W.Int(int64(old))
	return nil
}

// GETBIT key offset: 0 past the end and for a missing key.
func (dt *Family) cmdGetBit(c *command.Ctx, args [][]byte) error {
	off, err := dt.bitOffset(c, args[2])
	if err != nil {
		return err
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, _, err := dt.stringLocked(c, sh, args[1], c.Now())
	if err != nil {
		return err
	}
	c.W.Int(int64(bitmap.Get(v.Bytes, off)))
	return nil
}

// BITCOUNT key [start end [BYTE|BIT]]: as Redis 7.0, a missing key counts 0 before the
// arguments are read.
func (dt *Family) cmdBitCount(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, ok, err := dt.stringLocked(c, sh, args[1], c.Now())
	if err != nil {
		return err
	}
	if !ok {
		c.W.Int(0)
		return nil
	}
	start, end, bit := int64(0), int64(-1), false
	switch len(args) {
	case 2:
	case 4, 5:
		var ok bool
		if start, ok = command.ParseInt(args[2]); !ok {
			return command.ErrNotInteger
		}
		if end, ok = command.ParseInt(args[3]); !ok {
			return command.ErrNotInteger
		}
		if start < 0 && end < 0 && start > end {
			c.W.Int(0)
			return nil
		}
		if len(args) == 5 {
			switch {
			case command.EqualFold(args[4], "bit"):
				bit = true
			case command.EqualFold(args[4], "byte"):
			default:
				return command.ErrSyntax
			}
		}
	default:
		return command.ErrSyntax
	}
	c.W.Int(bitmap.Count(v.Bytes, start, end, bit))
	return nil
}
