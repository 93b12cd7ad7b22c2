package datatype

import (
	"errors"
	"strings"

	"github.com/throttledhq/throttled/bitmap"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
)

var (
	// errBitfieldType is a field type other than i1..i64 and u1..u63.
	errBitfieldType = errors.New("Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
	// errBitfieldOverflow is OVERFLOW other than WRAP, SAT or FAIL.
	errBitfieldOverflow = errors.New("Invalid OVERFLOW type specified")
	// errBitfieldRO is BITFIELD_RO with SET or INCRBY.
	errBitfieldRO = errors.New("BITFIELD_RO only supports the GET subcommand")
)

func (dt *Family) bitfieldCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "bitfield", Arity: -2, Flags: "write denyoom", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RW access update variable_flags"}}, KeyFlags: bitfieldKeyFlags, Group: "bitmap", Since: "3.2.0", Summary: "Performs arbitrary bitfield integer operations on strings.", Syntax: "key [GET encoding offset|[OVERFLOW WRAP|SAT|FAIL] SET encoding offset value|INCRBY encoding offset increment [GET encoding offset|[OVERFLOW WRAP|SAT|FAIL] SET encoding offset value|INCRBY encoding offset increment ...]]", Handler: dt.bitfieldHandler(false)},
		{Name: "bitfield_ro", Arity: -2, Flags: "readonly fast", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "bitmap", Since: "6.0.0", Summary: "Performs arbitrary read-only bitfield integer operations on strings.", Syntax: "key [GET encoding offset [GET encoding offset ...]]", Handler: dt.bitfieldHandler(true)},
	}
}

// bitfieldOp is one GET, SET or INCRBY of BITFIELD.
type bitfieldOp struct {
	op     byte // 'g', 's' or 'i'
	signed bool
	bits   uint64
	offset uint64
	value  int64
	ow     int
}

// parseBitfield reads BITFIELD's operations in Redis's order: the first bad one is the error.
func (dt *Family) parseBitfield(c *command.Ctx, args [][]byte) (ops []bitfieldOp, highest uint64, writes bool, err error) {
	ow := bitmap.Wrap
	for j := 2; j < len(args); j++ {
		rem := len(args) - j - 1
		var o bitfieldOp
		switch a := args[j]; {
		case command.EqualFold(a, "get") && rem >= 2:
			o.op = 'g'
		case command.EqualFold(a, "set") && rem >= 3:
			o.op = 's'
		case command.EqualFold(a, "incrby") && rem >= 3:
			o.op = 'i'
		case command.EqualFold(a, "overflow") && rem >= 1:
			j++
			switch {
			case command.EqualFold(args[j], "wrap"):
				ow = bitmap.Wrap
			case command.EqualFold(args[j], "sat"):
				ow = bitmap.Sat
			case command.EqualFold(args[j], "fail"):
				ow = bitmap.Fail
			default:
				return nil, 0, false, errBitfieldOverflow
			}
			continue
		default:
			return nil, 0, false, command.ErrSyntax
		}
		t := args[j+1]
		if len(t) == 0 || t[0] != 'i' && t[0] != 'u' {
			return nil, 0, false, errBitfieldType
		}
		o.signed = t[0] == 'i'
		n, ok := command.ParseInt(t[1:])
		if !ok || n < 1 || o.signed && n > 64 || !o.signed && n > 63 {
			return nil, 0, false, errBitfieldType
		}
		o.bits = uint64(n)
		off := args[j+2]
		hash := len(off) > 0 && off[0] == '#'
		if hash {
			off = off[1:]
		}
		lo, ok := command.ParseInt(off)
		if !ok {
			return nil, 0, false, errBitOffset
		}
		if hash {
			lo *= n
		}
		if lo < 0 || lo>>3 >= int64(dt.cfg.MaxBulk) {
			return nil, 0, false, errBitOffset
		}
		o.offset = uint64(lo)
		if o.op != 'g' {
			writes = true
			highest = max(highest, o.offset+o.bits-1)
			if o.value, ok = command.ParseInt(args[j+3]); !ok {
				return nil, 0, false, command.ErrNotInteger
			}
		}
		o.ow = ow
		ops = append(ops, o)
		j += 2
		if o.op != 'g' {
			j++
		}
	}
	return ops, highest, writes, nil
}

// bitfieldHandler is BITFIELD key [GET type offset] [SET type offset value] [INCRBY type
// offset increment] [OVERFLOW WRAP|SAT|FAIL] ..., and BITFIELD_RO (GETs only), as Redis's
// bitfieldGeneric: a write grows the string with zeros to its highest bit first.
func (dt *Family) bitfieldHandler(readonly bool) command.Handler {
	return func(c *command.Ctx, args [][]byte) error {
		ops, highest, writes, err := dt.parseBitfield(c, args)
		if err != nil {
			return err
		}
		if writes && readonly {
			return errBitfieldRO
		}
		key := args[1]
		sh := c.Keys.Shard(key)
		sh.Lock()
		defer sh.Unlock()
		v, exists, err := dt.stringLocked(c, sh, key, c.Now())
		if err != nil {
			return err
		}
		if !c.Reading && !writes {
			notifyMiss(c, key, exists)
		}
		b := v.Bytes
		dirty := false
		if writes {
			n := max(len(v.Bytes), int(highest>>3)+1)
			dirty = !exists || n != len(v.Bytes)
			b = append(make([]byte, 0, n), v.Bytes...)
			b = append(b, make([]byte, n-len(b))...)
		}
		changes := 0
		c.W.Array(len(ops))
		for _, o := range ops {
			if o.op == 'g' {
				var buf [9]byte
				start := o.offset >> 3
				if start < uint64(len(b)) {
					copy(buf[:], b[start:])
				}
				if o.signed {
					c.W.Int(bitmap.SignedField(buf[:], o.offset-start*8, o.bits))
				} else {
					c.W.Int(int64(bitmap.Field(buf[:], o.offset-start*8, o.bits)))
				}
				continue
			}
			var oldv, newv, ret uint64
			overflow := false
			if o.signed {
				old := bitmap.SignedField(b, o.offset, o.bits)
				nv, r := old+o.value, old
				var lim int64
				if o.op == 'i' {
					lim, overflow = bitmap.SignedOverflow(old, o.value, o.bits, o.ow)
					r = nv
				} else {
					nv = o.value
					lim, overflow = bitmap.SignedOverflow(nv, 0, o.bits, o.ow)
				}
				if overflow {
					nv = lim
					if o.op == 'i' {
						r = nv
					}
				}
				oldv, newv, ret = uint64(old), uint64(nv), uint64(r)
			} else {
				old := bitmap.Field(b, o.offset, o.bits)
				nv, r := old+uint64(o.value), old
				var lim uint64
				if o.op == 'i' {
					lim, overflow = bitmap.UnsignedOverflow(old, o.value, o.bits, o.ow)
				} else {
					nv = uint64(o.value)
					lim, overflow = bitmap.UnsignedOverflow(nv, 0, o.bits, o.ow)
				}
				if overflow {
					nv = lim
				}
				if o.op == 'i' {
					r = nv
				}
				oldv, newv, ret = old, nv, r
			}
			if overflow && o.ow == bitmap.Fail {
				c.W.Null()
				continue
			}
			c.W.Int(int64(ret))
			bitmap.SetField(b, o.offset, o.bits, newv)
			if dirty || oldv != newv {
				changes++
			}
		}
		// A write op unshares the string into a raw one even when it changes nothing (all
		// overflowed with FAIL, or wrote the bits there), as Redis's lookupStringForBitCommand.
		if writes && (dirty || changes > 0 || v.Num != strRaw) {
			sh.SetLocked(key, keyspace.Value{Kind: keyspace.String, Bytes: b, Expire: v.Expire, Num: strRaw})
		}
		if changes > 0 {
			c.Notify(notify.String, "setbit", key)
		}
		return nil
	}
}

// bitfieldKeyFlags is BITFIELD's key's flags, as Redis's bitfieldGetKeys: read only while
// every operation is a whole GET (or OVERFLOW); written once a SET or INCRBY, or anything
// that does not parse, comes.
func bitfieldKeyFlags(args [][]byte, pos int) string {
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch op := string(args[j]); {
		case strings.EqualFold(op, "get") && left >= 2:
			j += 2
		case strings.EqualFold(op, "overflow") && left >= 1:
			j++
		default:
			return "RW access update"
		}
	}
	return "RO access"
}
