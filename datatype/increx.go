package datatype

import (
	"errors"
	"math"
	"strconv"
	"unsafe"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
	"github.com/throttledhq/throttled/resp"
)

// INCREX is Redis 8.8's counter with bounds and an expiry in one command, with Valkey
// 9.2's NX and XX. It computes cur + increment (a missing key counts as 0), then:
//
//   - a sum that leaves the type's range (int64, or a finite float64) or [LBOUND, UBOUND]
//     is skipped: the reply is [cur, 0] and nothing changes, not even a missing key;
//   - with SATURATE it is capped instead: at the type's limit, then at the bound, so that
//     the applied increment (new - cur) may have the other sign, or be 0 with the key
//     written;
//   - NX on a key that exists, XX on one that does not, are skipped the same way.
//
// A write keeps the key's expiry unless EX, PX, EXAT, PXAT or PERSIST says otherwise; ENX
// applies the expiry only to a key that has none, and an expiry in the past deletes the
// key after the reply was computed. The result is stored as SET would store its text, so
// persistence and replication carry it as the SET ... KEEPTTL or PXAT it amounts to.
//
// BYFLOAT computes in float64, where Redis computes in C's long double: the same bytes
// for the numbers counters hold, but a value past 1.8e308 is no float here.

var (
	// errIncrNotInt is a BYINT increment that is not an integer.
	errIncrNotInt = errors.New("Increment is not an integer or out of range")
	// errIncrNotFloat is a BYFLOAT increment that is not a float, or NaN.
	errIncrNotFloat = errors.New("Increment is not a valid float")
	// errIncrInf is a BYFLOAT increment that is an infinity.
	errIncrInf = errors.New("BYFLOAT increment cannot be Infinity")
	// errValueInf is a stored value that is an infinity, in BYFLOAT mode.
	errValueInf = errors.New("value cannot be Infinity")
	// errLBoundNotInt, errUBoundNotInt, errLBoundNotFloat and errUBoundNotFloat are bounds
	// that do not parse in the mode the increment gives.
	errLBoundNotInt   = errors.New("LBOUND is not an integer or out of range")
	errUBoundNotInt   = errors.New("UBOUND is not an integer or out of range")
	errLBoundNotFloat = errors.New("LBOUND is not a valid float")
	errUBoundNotFloat = errors.New("UBOUND is not a valid float")
	// errBounds is an LBOUND above the UBOUND (or above the type's maximum).
	errBounds = errors.New("LBOUND can't be greater than UBOUND")
	// errENX is ENX without EX, PX, EXAT or PXAT.
	errENX = errors.New("ENX flag requires an expiration")
	// errAppliedOverflow is a saturated result whose distance from the value does not fit
	// an int64.
	errAppliedOverflow = errors.New("applied increment would overflow")
	// errAppliedInf is a saturated float result infinitely far from the value.
	errAppliedInf = errors.New("applied increment would be Infinity")
)

// increxOptions are INCREX's options, each given at most once.
type increxOptions struct {
	float            bool
	by, lower, upper []byte // the arguments of BYINT or BYFLOAT, LBOUND, UBOUND; nil without
	saturate, enx    bool
	nx, xx, persist  bool
	expiry
}

// The options of INCREX as command.Word reads them: each a number whose bytes are the
// option's letters, first letter lowest.
const (
	wordByint    = 'b' | 'y'<<8 | 'i'<<16 | 'n'<<24 | 't'<<32
	wordByfloat  = 'b' | 'y'<<8 | 'f'<<16 | 'l'<<24 | 'o'<<32 | 'a'<<40 | 't'<<48
	wordLbound   = 'l' | 'b'<<8 | 'o'<<16 | 'u'<<24 | 'n'<<32 | 'd'<<40
	wordUbound   = 'u' | 'b'<<8 | 'o'<<16 | 'u'<<24 | 'n'<<32 | 'd'<<40
	wordSaturate = 's' | 'a'<<8 | 't'<<16 | 'u'<<24 | 'r'<<32 | 'a'<<40 | 't'<<48 | 'e'<<56
	wordEnx      = 'e' | 'n'<<8 | 'x'<<16
	wordPersist  = 'p' | 'e'<<8 | 'r'<<16 | 's'<<24 | 'i'<<32 | 's'<<40 | 't'<<48
	wordNx       = 'n' | 'x'<<8
	wordXx       = 'x' | 'x'<<8
	wordEx       = 'e' | 'x'<<8
	wordPx       = 'p' | 'x'<<8
	wordExat     = 'e' | 'x'<<8 | 'a'<<16 | 't'<<24
	wordPxat     = 'p' | 'x'<<8 | 'a'<<16 | 't'<<24
)

// parse reads the options after the key in any order. Unlike SET, INCREX refuses an
// option given twice, and two of a group (BYINT and BYFLOAT, the expiries and PERSIST,
// PERSIST and ENX, NX and XX): a syntax error. Each option is told by one number
// (command.Word), not by comparing its text with each option's in turn.
func (o *increxOptions) parse(args [][]byte) error {
	for i := 0; i < len(args); i++ {
		hasArg := i+1 < len(args)
		ok := false
		switch w := command.Word(args[i]); w {
		case wordByint, wordByfloat:
			if ok = hasArg && o.by == nil; ok {
				o.float = len(args[i]) == 7
				o.by = args[i+1]
				i++
			}
		case wordLbound:
			if ok = hasArg && o.lower == nil; ok {
				o.lower = args[i+1]
				i++
			}
		case wordUbound:
			if ok = hasArg && o.upper == nil; ok {
				o.upper = args[i+1]
				i++
			}
		case wordSaturate:
			ok, o.saturate = !o.saturate, true
		case wordEnx:
			ok, o.enx = !o.enx && !o.persist, true
		case wordPersist:
			ok, o.persist = !o.persist && !o.enx && o.expire == nil, true
		case wordNx:
			ok, o.nx = !o.nx && !o.xx, true
		case wordXx:
			ok, o.xx = !o.nx && !o.xx, true
		case wordEx, wordPx, wordExat, wordPxat:
			if ok = hasArg && o.expire == nil && !o.persist; ok {
				o.unit, o.absolute, o.expire = 1e9, w == wordExat || w == wordPxat, args[i+1]
				if w == wordPx || w == wordPxat {
					o.unit = 1e6
				}
				i++
			}
		}
		if !ok {
			return command.ErrSyntax
		}
	}
	if o.enx && o.expire == nil {
		return errENX
	}
	return nil
}

// parseFloat reads a float as Redis's strtold does for INCREX: the whole argument, no
// blanks, no NaN, nothing that overflows or underflows; an infinity is reported as one.
func parseFloat(b []byte) (f float64, ok bool) {
	if len(b) == 0 || b[0] == ' ' || b[len(b)-1] == ' ' {
		return 0, false
	}
	for _, c := range b {
		if c == '_' {
			return 0, false // strconv's digit separators, no C syntax
		}
	}
	f, err := strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64) // not kept: no copy
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// increxPlan is INCREX's parsed arguments: the options, then the increment, the bounds and
// the expiry their values give.
type increxPlan struct {
	increxOptions
	n, lo, hi   int64   // BYINT mode
	f, flo, fhi float64 // BYFLOAT mode
	when        int64   // the expiry in Unix ns, with expire
}

// plan parses the values of the options parse read: the increment, the bounds in its
// mode, the time. It fills p in place: the plan is not copied on its way to the handler.
func (p *increxPlan) plan(now int64) error {
	o := &p.increxOptions
	p.n, p.lo, p.hi, p.f, p.flo, p.fhi = 1, math.MinInt64, math.MaxInt64, 1, -math.MaxFloat64, math.MaxFloat64
	var ok bool
	if o.float {
		if p.f, ok = parseFloat(o.by); !ok {
			return errIncrNotFloat
		}
		if math.IsInf(p.f, 0) {
			return errIncrInf
		}
		if o.lower != nil {
			if p.flo, ok = parseFloat(o.lower); !ok {
				return errLBoundNotFloat
			}
		}
		if o.upper != nil {
			if p.fhi, ok = parseFloat(o.upper); !ok {
				return errUBoundNotFloat
			}
		}
		if p.flo > p.fhi {
			return errBounds
		}
	} else {
		if o.by != nil {
			if p.n, ok = command.ParseInt(o.by); !ok {
				return errIncrNotInt
			}
		}
		if o.lower != nil {
			if p.lo, ok = command.ParseInt(o.lower); !ok {
				return errLBoundNotInt
			}
		}
		if o.upper != nil {
			if p.hi, ok = command.ParseInt(o.upper); !ok {
				return errUBoundNotInt
			}
		}
		if p.lo > p.hi {
			return errBounds
		}
	}
	var err error
	p.when, err = o.when("increx", now)
	return err
}

// addInt returns cur + n as INCREX decides it: the new value, the increment applied, and
// whether it applies at all (false: skipped).
func (p *increxPlan) addInt(cur int64) (next, applied int64, apply bool, err error) {
	n := p.n
	next = cur + n
	if n > 0 && next < cur || n < 0 && next > cur { // out of int64
		if !p.saturate {
			return cur, 0, false, nil
		}
		next = math.MaxInt64
		if n < 0 {
			next = math.MinInt64
		}
	}
	switch {
	case next < p.lo && p.saturate:
		next = p.lo
	case next > p.hi && p.saturate:
		next = p.hi
	case next < p.lo || next > p.hi:
		return cur, 0, false, nil
	}
	applied = next - cur
	if next >= cur && applied < 0 || next < cur && applied >= 0 {
		return 0, 0, false, errAppliedOverflow
	}
	return next, applied, true, nil
}

// addFloat is addInt in BYFLOAT mode; the type's range is the finite float64s.
func (p *increxPlan) addFloat(cur float64) (next, applied float64, apply bool, err error) {
	next = cur + p.f
	if math.IsInf(next, 0) {
		if !p.saturate {
			return cur, 0, false, nil
		}
		next = math.Copysign(math.MaxFloat64, next)
	}
	switch {
	case next < p.flo && p.saturate:
		next = p.flo
	case next > p.fhi && p.saturate:
		next = p.fhi
	case next < p.flo || next > p.fhi:
		return cur, 0, false, nil
	}
	applied = next - cur
	if math.IsInf(applied, 0) {
		return 0, 0, false, errAppliedInf
	}
	return next + 0, applied + 0, true, nil // + 0: no negative zero
}

// INCREX key [BYINT n|BYFLOAT f] [LBOUND l] [UBOUND u] [SATURATE] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST] [ENX] [NX|XX]
func (dt *Family) cmdIncrEx(c *command.Ctx, args [][]byte) error {
	if len(args) == 2 {
		return incrEx(c, args[1])
	}
	var p increxPlan
	if err := p.parse(args[2:]); err != nil {
		return err
	}
	now := c.Now()
	if err := p.plan(now); err != nil {
		return err
	}
	key := args[1]
	sh := c.LockShard(key)
	defer c.UnlockShard(sh)
	v, exists := sh.GetLocked(key, now)
	if exists && v.Kind != keyspace.String {
		return keyspace.ErrWrongType
	}
	buf := sh.NumBuf()
	var text []byte // the new value as stored; nil: skipped
	var num int64
	var ni, ai int64
	var nf, af float64
	if p.float {
		cur := 0.0
		if exists {
			var ok bool
			if cur, ok = parseFloat(v.Bytes); !ok {
				return command.ErrNotFloat
			}
			if math.IsInf(cur, 0) {
				return errValueInf
			}
		}
		nf, af = cur, 0
		if !(p.nx && exists || p.xx && !exists) {
			next, applied, apply, err := p.addFloat(cur)
			if err != nil {
				return err
			}
			if apply {
				nf, af = next, applied
				text, num = strconv.AppendFloat(buf, next, 'f', -1, 64), strNoInt
			}
		}
	} else {
		cur := int64(0)
		if exists {
			var ok bool
			if cur, ok = command.ParseInt(v.Bytes); !ok {
				return command.ErrNotInteger
			}
		}
		ni, ai = cur, 0
		if !(p.nx && exists || p.xx && !exists) {
			next, applied, apply, err := p.addInt(cur)
			if err != nil {
				return err
			}
			if apply {
				ni, ai = next, applied
				text, num = strconv.AppendInt(buf, next, 10), strAsSet
			}
		}
	}
	if text != nil {
		when := v.Expire // 0 for a new key
		switch {
		case p.persist:
			when = 0
		case p.expire != nil && !(p.enx && v.Expire != 0):
			when = p.when
		}
		if when != 0 && when <= now {
			if exists {
				sh.DeleteLocked(key)
				c.Notify(notify.Generic, "del", key)
			}
		} else {
			sh.SetLocked(key, keyspace.Value{Kind: keyspace.String, Bytes: text, Expire: when, Num: num})
			c.Notify(notify.String, incrEvents[b2i(p.float)], key) // as INCRBY's or INCRBYFLOAT's
		}
	}
	c.W.Array(2)
	if p.float {
		writeIncrexFloat(&c.W, nf)
		writeIncrexFloat(&c.W, af)
	} else {
		c.W.Int(ni)
		c.W.Int(ai)
	}
	return nil
}

// incrEx is INCREX key, without options: INCR's path (IncrLocked: no options to parse, no
// plan), and INCREX's reply. An increment past the int64 range is skipped, as with options.
func incrEx(c *command.Ctx, key []byte) error {
	sh := c.LockShard(key)
	defer c.UnlockShard(sh)
	n, err := IncrLocked(sh, key, 1, c.Now())
	applied := int64(1)
	if errors.Is(err, command.ErrOverflow) {
		n, applied, err = math.MaxInt64, 0, nil // IncrLocked changed nothing
	}
	if err != nil {
		return err
	}
	if applied != 0 {
		c.Notify(notify.String, incrEvents[0], key)
	}
	c.W.Array(2)
	c.W.Int(n)
	c.W.Int(applied)
	return nil
}

// writeIncrexFloat writes one element of a BYFLOAT reply: the shortest text that reads
// back as f, a bulk string in RESP2 and a double in RESP3.
func writeIncrexFloat(w *resp.Writer, f float64) {
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'f', -1, 64)
	if w.Proto == 3 {
		w.B = append(append(append(w.B, ','), b...), '\r', '\n')
		return
	}
	w.Bulk(b)
}
