// Package command is what a command family sees of the server, and all it sees: the
// literal that declares a command (Spec) and the narrow context a handler runs with (Ctx).
//
// A request's path: the server reads it, finds its Spec in the table it built from every
// family's literals, checks what the Spec declares (arity, authentication, ACL categories
// and keys, whether a transaction, a script, a busy script or upstream mode may run it),
// then calls Spec.Handler with the connection's Ctx. The handler parses its arguments,
// works on the keyspace through Ctx (the shard a native script holds, the clock, the
// scratch buffers) and writes its reply to Ctx.W, or returns an error that the server turns
// into the error reply. A family never imports the server: what it needs of it, it
// declares in the struct its constructor takes.
package command

import (
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/notify"
	"github.com/throttledhq/throttled/resp"
)

// Handler runs one command on c; an error it returns becomes the error reply.
type Handler func(c *Ctx, args [][]byte) error

// Spec is one command as its family declares it: everything the command table knows of it.
type Spec struct {
	Name  string // lower case; a subcommand's is its own ("setname"), the table prefixes "client|"
	Arity int    // as Redis: n means exactly n arguments with the name, -n at least n
	// Flags are Redis's command flags as COMMAND INFO shows them (write, readonly,
	// denyoom, fast, admin, noscript, loading, stale, no-multi, pubsub, blocking...), and
	// ratelimit for a rate-limit verb (counted in INFO throttle).
	Flags    string
	FirstKey int // position of the first key, 0 when none
	LastKey  int // position of the last key; -1 for the last argument
	KeyStep  int // 0 means 1
	// KeySpecs are COMMAND INFO's key specifications, as redis-server gives them; nil means
	// one per key position, "RW access update" ("RO access" for a readonly command).
	KeySpecs []KeySpec
	// KeysOf returns the keys of a request whose keys are not at fixed positions; nil when
	// FirstKey and LastKey say where they are.
	KeysOf func(args [][]byte) [][]byte
	// KeyFlags returns, for a command whose keys' flags depend on the request (Redis's
	// variable_flags: SET with or without GET, BITFIELD with or without SET and INCRBY),
	// the flags of the key at argument pos of args (the request, its name first), as
	// COMMAND GETKEYSANDFLAGS gives them; nil: KeySpecs say.
	KeyFlags func(args [][]byte, pos int) string
	// Direct: a native script may run it on the shard its run holds (its handler takes its
	// one key's shard through Ctx.LockShard, and checks nothing a script's call would not).
	Direct bool
	// NoScript: scripts may not call it, nor its subcommands but HELP (Redis's noscript
	// flag, which the Flags COMMAND shows do not all carry).
	NoScript bool
	// ACLKeys returns the keys a user's key patterns must allow, where they are not the
	// arguments at FirstKey..LastKey (ALLOF's limits, CHECK's policy:<name>:<subject>), each
	// with the access the command's flags say; built in c's scratch, valid until its next
	// command. Nil keys from a request that does not parse: its handler replies the error.
	ACLKeys func(c *Ctx, args [][]byte) [][]byte
	// Upstream is, for a command decided through the upstream in upstream mode, the kind of
	// call it is (a ratelimit.CallKind); 0: it runs locally in upstream mode too.
	Upstream int
	// ACL lists the ACL categories the command is in besides those its flags and group
	// give (Redis's "dangerous", "keyspace"), space-separated.
	ACL     string
	Group   string // COMMAND DOCS group: "string", "hash", "ratelimit"...
	Since   string // version of the first release with it
	Summary string
	Syntax  string // the arguments after the name, as in the docs: "key [COST n]"
	Handler Handler
	// Subcommands are a container's (OBJECT's ENCODING, ...): each its own Spec, named
	// without the parent's name.
	Subcommands []*Spec
}

// KeySpec is one of COMMAND INFO's key specifications: the key at index Begin, with flags
// such as "RW access update".
type KeySpec struct {
	Begin int
	Flags string
}

// Env is what every handler may read of the server: set once at start, shared by all
// connections.
type Env struct {
	Keys *keyspace.Keyspace
	// Clock, when set, is the configured clock in Unix ns (tests); nil means Base plus Tick.
	Clock func() int64
	// Base is the wall time in Unix ns of the server's monotonic zero.
	Base int64
	// Events fires keyspace notifications (notify-keyspace-events); nil fires none.
	Events *notify.Notifier
}

// Ctx is a connection as its commands see it: where the reply goes, the keyspace, the
// clock and the scratch a call reuses so that it allocates nothing.
type Ctx struct {
	*Env
	W resp.Writer // the replies
	// Held is the shard held locked for the call: a native script's run's, whose commands
	// on the script's key run under that lock, or the server's for a pipeline whose
	// consecutive requests on one shard run under one lock (a hot key's). LockShard returns
	// it; nil otherwise.
	Held *keyspace.Shard
	// Reading: the command running reads keys, and its lookups count as keyspace hits or
	// misses (INFO stats).
	Reading bool
	// Tick is the server's monotonic time in ns at the start of this command (or of its
	// pipeline): Now's reading, as the command's timing is.
	Tick int64
	// ReadOnly: a replica serves the call, which may only read (a rate-limit verb's PEEK
	// or COST 0).
	ReadOnly bool
	// NoRoom: the keyspace is over maxmemory and nothing could be evicted (noeviction, or
	// no key the policy may take). A rate-limit verb still decides and answers, as a
	// decision must not fail for memory: it keeps the new state of a key that exists,
	// which takes no more room, and creates no key.
	NoRoom bool
	// Fallback, when not 0, is the share of each limit this instance may use: upstream mode
	// deciding locally because the upstream cannot.
	Fallback float64
	// AnyTier: a tier a limit does not name is no tier (the edge's tier comes from a
	// request header, not from the caller's knowledge of the limit).
	AnyTier bool
	// Slot is the counter slot the call counts in: its event loop's. The counters every
	// call writes (a family's Config says how many slots) are kept per slot, so that no two
	// loops write one cache line; a reader sums the slots.
	Slot int
	// Conn is the server's own state of the connection, for the hooks a family's Config
	// declares; a family never looks inside it.
	Conn any
	// Ext is a family's own per-connection state (the rate-limit verbs' scratch), nil
	// until it first needs it.
	Ext any

	// Block is set by a blocking command's handler that found nothing to take and replied
	// nothing: the server then waits for its keys (see Block).
	Block *Block
	// NoBlock: the command runs in a transaction or a script, where a blocking command
	// does not wait but replies as on its timeout.
	NoBlock bool

	Scratch []byte            // a variable-size value being built
	LdBuf   []byte            // a second one, while Scratch holds the first
	Shards  []*keyspace.Shard // the shards a multi-key command locks
}

// Block is what a blocking command (BLPOP, BZPOPMIN, BLMOVE...) that found nothing to take
// waits for. The server parks the client, and each time a write makes one of Keys ready
// (first blocked, first served) calls Serve, on the goroutine of the writer's connection
// once its command, transaction or script is over, with the client's own Ctx; on timeout,
// or CLIENT UNBLOCK, it replies a null array (or an error).
type Block struct {
	Keys    [][]byte // the keys it waits on: its own copies
	Timeout int64    // how long it waits, in ns; 0: forever
	// Serve retries the command on key, just written: it replies and reports true, or
	// reports false and replies nothing when key holds nothing for it (the wait goes on).
	Serve func(c *Ctx, key []byte) bool
}

// Now is the server's time in Unix ns, as of the command's start.
func (c *Ctx) Now() int64 {
	if c.Clock != nil {
		return c.Clock()
	}
	return c.Base + c.Tick
}

// Notify fires keyspace event event, of class class, on key, as Redis's
// notifyKeyspaceEvent: a handler calls it after the write it reports, with the key's shard
// still locked, so that events reach subscribers in the order of the key's writes. While
// the class is off (notify-keyspace-events) it costs a call, one atomic load and a test.
func (c *Ctx) Notify(class notify.Class, event string, key []byte) {
	if c.Events.On(class) {
		c.Events.Send(event, key)
	}
}

// CountLookup counts a read command's lookup of key in sh, found or not (INFO's
// keyspace_hits and keyspace_misses), and fires "keymiss" (class m) when it was not there,
// as Redis's lookupKeyRead.
func (c *Ctx) CountLookup(sh *keyspace.Shard, key []byte, found bool) {
	sh.CountLookup(found)
	if !found {
		c.Notify(notify.KeyMiss, "keymiss", key)
	}
}

// LockShard locks and returns the shard of key, or returns the shard a native script's
// run already holds (the script's one key's).
func (c *Ctx) LockShard(key []byte) *keyspace.Shard {
	if c.Held != nil {
		return c.Held
	}
	sh := c.Keys.Shard(key)
	sh.Lock()
	return sh
}

// UnlockShard ends LockShard.
func (c *Ctx) UnlockShard(sh *keyspace.Shard) {
	if c.Held == nil {
		sh.Unlock()
	}
}

// Buffer returns Scratch emptied with room for n bytes; past maxScratch a buffer of its own,
// so that one huge value does not stay with the connection.
func (c *Ctx) Buffer(n int) []byte {
	if n > maxScratch {
		return make([]byte, 0, n)
	}
	if cap(c.Scratch) < n {
		c.Scratch = make([]byte, 0, max(n, 2*cap(c.Scratch)))
	}
	return c.Scratch[:0]
}

// maxScratch bounds the value a connection builds in its reused Scratch: a SETRANGE or
// APPEND past it builds in a buffer of its own.
const maxScratch = 64 << 10

// WriteHelp replies a container command's HELP as Redis does: its usage, lines, then HELP's.
func (c *Ctx) WriteHelp(name string, lines []string) {
	c.W.Array(len(lines) + 3)
	c.W.Simple(name + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
	for _, l := range lines {
		c.W.Simple(l)
	}
	c.W.Simple("HELP")
	c.W.Simple("    Prints this help.")
}

// SplitGroups splits a syntax line on blanks outside brackets.
func SplitGroups(s string) []string {
	var out []string
	depth, start := 0, -1
	for i, r := range s {
		switch {
		case r == '[':
			if depth == 0 && start < 0 {
				start = i
			}
			depth++
		case r == ']':
			depth--
		case r == ' ' && depth == 0:
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}
