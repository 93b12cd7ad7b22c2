// Package datatype is the family of Redis's data-type commands: strings and counters, keys
// and expiry, hashes, sorted sets, lists, sets, bitmaps, DUMP and RESTORE.
//
// A request's path: the server finds the command's literal among Family.Commands (one
// literal a command, with everything the table knows of it) and calls its handler with the
// connection's command.Ctx. The handler parses its arguments, locks its key's shard
// (Ctx.LockShard, which a native script's run may already hold), reads the value
// (kindLocked checks its kind and counts the lookup), works on its encoded bytes with
// package collection's operations, stores the result (storeCollectionLocked deletes an
// emptied collection, as Redis does) and writes the reply to Ctx.W. The values' layouts
// are described where they are read: strings in strings.go, hashes in hash.go, sorted sets
// in zset.go, lists in list.go, sets in set.go. The family never imports the server: what
// it reads of it is Config.
package datatype

import (
	"github.com/throttledhq/throttled/command"
)

// Config is what the data types read of the server.
type Config struct {
	// Limits are the encodings' thresholds, which CONFIG SET changes.
	Limits *Limits
	// MaxBulk is proto-max-bulk-len: the longest string SETRANGE, APPEND or SETBIT may make.
	MaxBulk int
	// LRU reports whether maxmemory is set with an LRU policy: small integers then have
	// no shared object (OBJECT REFCOUNT).
	LRU func() bool
}

// Family is the data-type commands, with what they read of the server.
type Family struct {
	cfg Config
}

// New returns the family reading cfg.
func New(cfg Config) *Family { return &Family{cfg: cfg} }

// Commands are the family's commands, each one literal.
func (dt *Family) Commands() []*command.Spec {
	var all []*command.Spec
	for _, cmds := range [][]*command.Spec{dt.keyCommands(), dt.dumpCommands(), dt.bitmapCommands(),
		dt.stringCommands(), dt.hashCommands(), dt.zsetCommands(), dt.zsetOpCommands(), dt.blockingCommands(), dt.listCommands(), dt.setCommands(), dt.geoCommands(), dt.sortCommands(), dt.lcsCommands(), dt.bitfieldCommands()} {
		all = append(all, cmds...)
	}
	return all
}
