package datatype

import (
	"bytes"
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
	// errBitPosBit is BITPOS's bit other than 0 or 1.
	errBitPosBit = errors.New("The bit argument must be 1 or 0.")
	// errBitOpNot is BITOP NOT of more than one key.
	errBitOpNot = errors.New("BITOP NOT must be called with a single source key.")
)

func (dt *Family) bitmapCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "setbit", Arity: 4, Flags: "write denyoom", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update"}}, Group: "bitmap", Since: "2.2.0", Summary: "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", Syntax: "key offset value", Handler: dt.cmdSetBit},
		{Name: "getbit", Arity: 3, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "bitmap", Since: "2.2.0", Summary: "Returns a bit value by offset.", Syntax: "key offset", Handler: dt.cmdGetBit},
		{Name: "bitop", Arity: -4, Flags: "write denyoom", FirstKey: 2, LastKey: -1, KeySpecs: []command.KeySpec{{Begin: 2, Flags: "OW update"}, {Begin: 3, Flags: "RO access"}}, Group: "bitmap", Since: "2.6.0", Summary: "Performs bitwise operations on multiple strings, and stores the result.", Syntax: "AND|OR|XOR|NOT destkey key [key ...]", Handler: dt.cmdBitOp},
		{Name: "bitpos", Arity: -3, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "bitmap", Since: "2.8.7", Summary: "Finds the first set (1) or clear (0) bit in a string.", Syntax: "key bit [start [end [BYTE|BIT]]]", Handler: dt.cmdBitPos},
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

// BITOP AND|OR|XOR|NOT destkey key [key ...]: a missing key, and the end of a shorter one,
// read as zero bytes; an empty result deletes destkey. Replies the result's length.
func (dt *Family) cmdBitOp(c *command.Ctx, args [][]byte) error {
	op := string(bytes.ToLower(args[1]))
	switch op {
	case "and", "or", "xor", "not":
	default:
		return command.ErrSyntax
	}
	if op == "not" && len(args) != 4 {
		return errBitOpNot
	}
	shards := c.Keys.LockKeys(args[2:], nil)
	defer keyspace.UnlockShards(shards)
	now := c.Now()
	srcs := make([][]byte, 0, len(args)-3)
	n := 0
	for _, k := range args[3:] {
		v, found, err := dt.stringLocked(c, c.Keys.Shard(k), k, now)
		if err != nil {
			return err
		}
		notifyMiss(c, k, found)
		srcs = append(srcs, v.Bytes)
		n = max(n, len(v.Bytes))
	}
	res := make([]byte, n)
	for i := range res {
		at := func(s []byte) byte {
			if i < len(s) {
				return s[i]
			}
			return 0
		}
		b := at(srcs[0])
		for _, s := range srcs[1:] {
			switch op {
			case "and":
				b &= at(s)
			case "or":
				b |= at(s)
			case "xor":
				b ^= at(s)
			}
		}
		if op == "not" {
			b = ^b
		}
		res[i] = b
	}
	dst := args[2]
	sh := c.Keys.Shard(dst)
	if n > 0 {
		sh.SetLocked(dst, keyspace.Value{Kind: keyspace.String, Bytes: res, Num: strRaw})
		c.Notify(notify.String, "set", dst)
	} else {
		notifyStored(c, notify.String, "set", dst, 0, sh.DeleteLocked(dst))
	}
	c.W.Int(int64(n))
	return nil
}

// BITPOS key bit [start [end [BYTE|BIT]]]: the first bit set to bit in the range, as
// Redis's bitposCommand finds it; past the string's end count zeros unless end is given.
func (dt *Family) cmdBitPos(c *command.Ctx, args [][]byte) error {
	bit, ok := command.ParseInt(args[2])
	if !ok {
		return command.ErrNotInteger
	}
	if bit != 0 && bit != 1 {
		return errBitPosBit
	}
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	defer sh.Unlock()
	v, exists, err := dt.stringLocked(c, sh, args[1], c.Now())
	if err != nil {
		return err
	}
	if !exists {
		c.W.Int(-bit) // an endless run of zeros
		return nil
	}
	p := v.Bytes
	var start, end int64
	isBit, endGiven := false, false
	var firstMask, lastMask byte
	switch len(args) {
	case 4, 5, 6:
		total := int64(len(p))
		if start, ok = command.ParseInt(args[3]); !ok {
			return command.ErrNotInteger
		}
		if len(args) == 6 {
			switch {
			case command.EqualFold(args[5], "bit"):
				isBit = true
			case command.EqualFold(args[5], "byte"):
			default:
				return command.ErrSyntax
			}
		}
		switch {
		case len(args) >= 5:
			if end, ok = command.ParseInt(args[4]); !ok {
				return command.ErrNotInteger
			}
			endGiven = true
		case isBit:
			end = total<<3 + 7
		default:
			end = total - 1
		}
		if isBit {
			total <<= 3
		}
		if start < 0 {
			start += total
		}
		if end < 0 {
			end += total
		}
		start, end = max(start, 0), max(end, 0)
		end = min(end, total-1)
		if isBit && start <= end {
			firstMask = ^byte((1 << (8 - (start & 7))) - 1)
			lastMask = byte((1 << (7 - (end & 7))) - 1)
			start >>= 3
			end >>= 3
		}
	case 3:
		start, end = 0, int64(len(p))-1
	default:
		return command.ErrSyntax
	}
	if start > end {
		c.W.Int(-1)
		return nil
	}
	nbytes := end - start + 1
	var pos int64
	masked := func(b, mask byte) byte {
		if bit == 1 {
			return b &^ mask
		}
		return b | mask
	}
	func() {
		if firstMask != 0 {
			t := masked(p[start], firstMask)
			if lastMask != 0 && nbytes == 1 {
				t = masked(t, lastMask)
			}
			pos = bitmap.Pos([]byte{t}, bit == 1)
			if nbytes == 1 || pos != -1 && pos != 8 {
				return
			}
			start++
			nbytes--
		}
		cur := nbytes - b2i(lastMask != 0)
		if cur > 0 {
			pos = bitmap.Pos(p[start:start+cur], bit == 1)
			if nbytes == cur || pos != -1 && pos != cur<<3 {
				return
			}
			start += cur
			nbytes -= cur
		}
		pos = bitmap.Pos([]byte{masked(p[end], lastMask)}, bit == 1)
	}()
	if endGiven && bit == 0 && pos == nbytes<<3 {
		c.W.Int(-1)
		return nil
	}
	if pos != -1 {
		pos += start << 3
	}
	c.W.Int(pos)
	return nil
}
