package datatype

import (
	"encoding/binary"
	"errors"
	"hash/crc64"
	"math"

	"github.com/throttledhq/throttled/collection"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
)

// A DUMP payload is throttled's own, built as Redis's is: the value, then a footer of the
// format's version (2 bytes, little-endian) and a CRC-64 (ECMA) of all that comes before it
// (8 bytes, little-endian). The value is keyspace.Encode's form of the key's Value without
// its expiry: its Kind, Num, Num2 and Bytes, whatever the kind, so that a kind added later
// dumps with no change here. A collection goes without the index a big one keeps in front
// of its pack (RESTORE builds it again). The version is far above any RDB version Redis
// has used, so that Redis refuses a throttled payload as it refuses one of a newer Redis,
// and this server refuses Redis's (version 10 or less) and any payload damaged on the way.
const DumpVersion = 0x7401

var (
	dumpTable = crc64.MakeTable(crc64.ECMA)
	// errDumpPayload is RESTORE's payload from another server or damaged: Redis's text.
	errDumpPayload = errors.New("DUMP payload version or checksum are wrong")
	// errBadDump is a payload whose footer is right and whose value is not one this server
	// stores: Redis's text for a payload that does not load.
	errBadDump = errors.New("Bad data format")
	// errBusyKey is RESTORE onto an existing key without REPLACE.
	errBusyKey = &command.Error{Code: "BUSYKEY", Msg: "Target key name already exists."}
	errBadTTL  = errors.New("Invalid TTL value, must be >= 0")
	errBadIdle = errors.New("Invalid IDLETIME value, must be >= 0")
	errBadFreq = errors.New("Invalid FREQ value, must be >= 0 and <= 255")
)

func (dt *Family) dumpCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "dump", Arity: 2, Flags: "readonly", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "keyspace", Since: "2.6.0", Summary: "Returns a serialized representation of the value stored at a key.", Syntax: "key", Handler: dt.cmdDump},
		{Name: "restore", Arity: -4, Flags: "write denyoom", FirstKey: 1, LastKey: 1, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "OW update"}}, ACL: "dangerous", Group: "keyspace", Since: "2.6.0", Summary: "Creates a key from the serialized representation of a value.", Syntax: "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]", Handler: dt.cmdRestore},
		{Name: "randomkey", Arity: 1, Flags: "readonly", Group: "keyspace", Since: "1.0.0", Summary: "Returns a random key name from the database.", Handler: dt.cmdRandomKey},
	}
}

// RANDOMKEY: nil when the keyspace holds no live key.
func (dt *Family) cmdRandomKey(c *command.Ctx, args [][]byte) error {
	key, ok := c.Keys.RandomKey(c.Now())
	if !ok {
		c.W.Null()
		return nil
	}
	c.W.Bulk(key)
	return nil
}

// DUMP key: the payload, nil when there is no key. A read: it notes an access, as on Redis.
func (dt *Family) cmdDump(c *command.Ctx, args [][]byte) error {
	sh := c.Keys.Shard(args[1])
	sh.Lock()
	now := c.Now()
	v, ok := sh.GetLocked(args[1], now)
	if !ok {
		notifyMiss(c, args[1], ok)
		sh.Unlock()
		c.W.Null()
		return nil
	}
	if isCollection(v.Kind) {
		v, _, _ = dt.kindLocked(c, sh, args[1], v.Kind, now) // its count
		switch {
		case v.Kind == keyspace.Hash:
			v.Bytes = hashOf(v).Pack
		case v.Kind == keyspace.ZSet: // its members in full, as the format has always had them
			v.Bytes = collection.ZPlain(nil, zsetOf(v).Pack)
		case v.Kind == keyspace.Set:
			v.Bytes = collection.SetPack(nil, setOf(v))
		case bigListOf(v) != nil:
			v.Bytes = bigListOf(v).AppendEncoded(nil)
		}
		v.Num2 &^= IndexedPack
		v.Obj = nil
	}
	v.Expire = 0
	payload := dumpPayload(v)
	sh.Unlock()
	c.W.Bulk(payload)
	return nil
}

// dumpPayload returns v's payload.
func dumpPayload(v keyspace.Value) []byte {
	n := keyspace.EncodedLen(v)
	b := make([]byte, n, n+10)
	keyspace.Encode(b, v)
	b = binary.LittleEndian.AppendUint16(b, DumpVersion)
	return binary.LittleEndian.AppendUint64(b, crc64.Checksum(b, dumpTable))
}

// readPayload returns the value a payload holds, errDumpPayload when its footer is not
// this server's, errBadDump when the value does not decode. Bytes alias b.
func readPayload(b []byte) (keyspace.Value, error) {
	if len(b) < 10 {
		return keyspace.Value{}, errDumpPayload
	}
	body, footer := b[:len(b)-10], b[len(b)-10:]
	if binary.LittleEndian.Uint16(footer) != DumpVersion ||
		binary.LittleEndian.Uint64(footer[2:]) != crc64.Checksum(b[:len(b)-8], dumpTable) {
		return keyspace.Value{}, errDumpPayload
	}
	v, err := keyspace.DecodeValue(body)
	if err != nil || v.Expire != 0 || v.Chunks { // a big one is dumped as its pack
		return keyspace.Value{}, errBadDump
	}
	return v, nil
}

// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]:
// the options, the key, the ttl and the payload are checked in Redis's order. A ttl of 0
// is none; one already past deletes what REPLACE would have replaced and stores nothing.
// FREQ is read and, as Redis does under a policy other than LFU, not used.
func (dt *Family) cmdRestore(c *command.Ctx, args [][]byte) error {
	replace, absTTL := false, false
	idle, freq := int64(-1), int64(-1)
	for j := 4; j < len(args); j++ {
		more := len(args) - j - 1
		switch {
		case command.EqualFold(args[j], "replace"):
			replace = true
		case command.EqualFold(args[j], "absttl"):
			absTTL = true
		case command.EqualFold(args[j], "idletime") && more >= 1 && freq == -1:
			n, ok := command.ParseInt(args[j+1])
			if !ok {
				return command.ErrNotInteger
			}
			if n < 0 {
				return errBadIdle
			}
			idle = n
			j++
		case command.EqualFold(args[j], "freq") && more >= 1 && idle == -1:
			n, ok := command.ParseInt(args[j+1])
			if !ok {
				return command.ErrNotInteger
			}
			if n < 0 || n > 255 {
				return errBadFreq
			}
			freq = n
			j++
		default:
			return command.ErrSyntax
		}
	}
	key := args[1]
	now := c.Now()
	sh := c.Keys.Shard(key)
	sh.Lock()
	defer sh.Unlock()
	_, exists := sh.PeekLocked(key, now)
	if exists && !replace {
		return errBusyKey
	}
	ttl, ok := command.ParseInt(args[2])
	if !ok {
		return command.ErrNotInteger
	}
	if ttl < 0 {
		return errBadTTL
	}
	v, err := readPayload(args[3])
	if err != nil {
		return err
	}
	if v, err = dt.restoredValue(v); err != nil {
		return err
	}
	if ttl != 0 {
		nowMS := now / 1e6
		if !absTTL {
			ttl = min(ttl, math.MaxInt64-nowMS) + nowMS // saturating
		}
		if ttl <= nowMS {
			if sh.DeleteLocked(key) { // replaced by nothing: the deletion replicates
				c.Notify(notify.Generic, "del", key)
			}
			c.W.OK()
			return nil
		}
		v.Expire = math.MaxInt64
		if ttl <= math.MaxInt64/int64(1e6) {
			v.Expire = ttl * 1e6
		}
	}
	if exists {
		sh.DeleteLocked(key) // the new key is a new object: its access time is its own
	}
	if isCollection(v.Kind) {
		storeCollectionLocked(sh, key, v)
	} else {
		sh.SetLocked(key, v)
	}
	if idle >= 0 {
		sh.SetIdleLocked(key, idle)
	}
	c.Notify(notify.Generic, "restore", key)
	c.W.OK()
	return nil
}

// restoredValue checks a payload's value as this server would have stored it and returns
// it ready to store: a value that would break the commands reading it (a damaged pack, a
// sorted set out of order) is refused, so that nothing a client sends can harm the server.
// The rate-limit states' own readers refuse a corrupt state at their next call.
func (dt *Family) restoredValue(v keyspace.Value) (keyspace.Value, error) {
	switch v.Kind {
	case keyspace.String:
		if v.Num < strAsSet || v.Num > strOwnInt || v.Num2 != 0 || len(v.Bytes) > dt.cfg.MaxBulk {
			return v, errBadDump
		}
	case keyspace.GCRA, keyspace.TokenBucket, keyspace.LeakyBucket, keyspace.SlidingCounter, keyspace.FixedWindow:
		if len(v.Bytes) != 0 {
			return v, errBadDump
		}
	case keyspace.SlidingLog, keyspace.Concurrency:
	case keyspace.Hash, keyspace.ZSet, keyspace.List:
		return dt.restoredCollection(v)
	case keyspace.Set:
		// A set's pack is its members alone (SetPack's form); Num2 says intset or not.
		ed, ok := collection.SetFromPack(v.Bytes, v.Num2 == 0, dt.setLimits())
		if !ok || v.Num2&^BigEncoding != 0 {
			return v, errBadDump
		}
		v.Num, v.Num2, v.Bytes = ed.Num, setFlags(ed.Enc), ed.Bytes()
	default: // the server's records, and kinds this server does not know
		return v, errBadDump
	}
	return v, nil
}

// restoredCollection checks the pack of a hash, sorted set or list (every element whole;
// a hash's fields and a sorted set's members distinct; a sorted set's scores numbers, in
// order) and returns the value to store, with its count and, when it is or must now be big,
// its big encoding (a hash with its index; a sorted set indexes at its next write).
func (dt *Family) restoredCollection(v keyspace.Value) (keyspace.Value, error) {
	pack := v.Bytes
	per := 2
	if v.Kind == keyspace.List {
		per = 1
	}
	num, longest, ok := collection.CheckPack(pack, per, v.Kind == keyspace.ZSet)
	if !ok || v.Num2&^BigEncoding != 0 || v.Kind == keyspace.List && v.Num2 != 0 {
		return v, errBadDump
	}
	v.Num = num
	switch v.Kind {
	case keyspace.Hash:
		if v.Num2&BigEncoding != 0 || num > dt.cfg.Limits.HashEntries.Load() || int64(longest) > dt.cfg.Limits.HashValue.Load() {
			v.Num2 = BigEncoding // in chunks at its first read (kindLocked)
		}
	case keyspace.ZSet:
		if num > dt.cfg.Limits.ZsetEntries.Load() || int64(longest) > dt.cfg.Limits.ZsetValue.Load() {
			v.Num2 = BigEncoding
		}
	}
	return v, nil
}

// isCollection reports whether kind is one of the data types whose bytes are a pack of
// package collection's, counted in Num.
func isCollection(kind keyspace.Kind) bool {
	return kind == keyspace.Hash || kind == keyspace.ZSet || kind == keyspace.List || kind == keyspace.Set
}
