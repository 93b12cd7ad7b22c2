// Package ratelimit is the family of the rate-limit verbs: redis-cell's CL.THROTTLE,
// Redis's GCRA, the native verbs of every classic algorithm (THROTTLE, TOKENBUCKET,
// LEAKYBUCKET, SLIDE, WINDOW, CONCURRENCY.ACQUIRE and RELEASE) and ALLOF.
//
// A request's path: the server finds the verb's literal among Family.Commands and calls its
// handler with the connection's command.Ctx. The handler parses the call into a limit (its
// key, the algorithm's parameters and the options every native verb takes: limits.go,
// args.go), cuts it to the fallback share when upstream mode decides locally (share.go),
// locks the key's shard, evaluates the algorithm on the key's state at the command's time
// (package gcra and algorithms hold the maths: a state and now in, a decision and the next
// state out), stores the next state unless the call only looks (PEEK, COST 0, a replica),
// tells the server through Config what it decided (INFO's counts, the most-denied keys,
// deny events) and writes the decision. A denied call changes nothing. In upstream mode
// the server calls the same evaluation on the upstream's states instead (Call).
package ratelimit

import (
	"log/slog"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/global"
	"github.com/throttledhq/throttled/keyspace"
)

// Config is what the rate-limit verbs read of the server and tell it.
type Config struct {
	Keys *keyspace.Keyspace // where the policies' record lives
	Now  func() int64       // the server's clock, Unix ns
	Log  *slog.Logger
	// ConfigFile is the config file whose policy lines POLICY.RELOAD reads again; "" when
	// the server was started without one. SplitLine splits its lines into words.
	ConfigFile string
	SplitLine  func(line string) ([]string, error)
	// Upstream: the limits live in an upstream Redis, so CHECK, whose policies are this
	// node's, is not served.
	Upstream bool
	// Global decides the calls with GLOBAL (upstream mode's); nil: GLOBAL is an error.
	Global *global.Registry
	// Readable reports whether the user of c may read key (POLICY.LIST shows only the
	// policies whose key policy:<name> it may).
	Readable func(c *command.Ctx, key []byte) bool

	// Decided counts a decision of the verb running on c (INFO throttle, commandstats).
	Decided func(c *command.Ctx, limited bool)
	// Denied records that the verb running on c denied key at now, whose caller may retry
	// after retryMs (-1: never): TOPDENIED, the deny events and, when the key is in its
	// penalty box (block is not BlockNone), INFO's counts of blocks.
	Denied func(c *command.Ctx, key []byte, retryMs, now int64, block Block)
	// Refunded counts units a REFUND of the call on c gave back.
	Refunded func(c *command.Ctx, n int64)
	// Unstored counts a decision of the call on c answered without keeping a key's new
	// state, for want of room (Ctx.NoRoom).
	Unstored func(c *command.Ctx)
	// Slots is how many counter slots the server keeps (Ctx.Slot is below it): the
	// policies' counters are kept per slot. At least 1.
	Slots int
}

// Family is the rate-limit verbs, with what they tell the server.
type Family struct {
	cfg Config
	pol policies
}

// New returns the family of cfg. Its policies are the config file's and the stored ones
// once LoadPolicies has run.
func New(cfg Config) *Family {
	cfg.Slots = max(1, cfg.Slots)
	return &Family{cfg: cfg}
}

// Commands are the family's commands, each one literal.
func (rl *Family) Commands() []*command.Spec {
	return append(append(rl.throttleCommands(), rl.limitCommands()...), rl.policyCommands()...)
}

// scratch is what a connection's calls reuse so that ALLOF and CHECK allocate nothing.
type scratch struct {
	limits    []limit         // ALLOF's limits
	keys      [][]byte        // their keys
	scratches [][]byte        // a state's bytes built per limit
	pending   []pending       // each limit's outcome
	checks    []checked       // CHECK: each policy's part
	checkKeys []byte          // CHECK: the keys it derives, end to end
	items     []checkItem     // CHECK: its policies, subjects and costs
	taken     []*global.Entry // CHECK of GLOBAL policies: the allowances each took from
}

// scratchOf returns c's scratch, made at its first call that needs one.
func scratchOf(c *command.Ctx) *scratch {
	sc, _ := c.Ext.(*scratch)
	if sc == nil {
		sc = new(scratch)
		c.Ext = sc
	}
	return sc
}

// deniedAll records the denials of an ALLOF that denied: each limit that did.
func (rl *Family) deniedAll(c *command.Ctx, limits []limit, results []pending, now int64) {
	for i := range results {
		if results[i].d.limited {
			rl.denied(c, limits[i].key, &results[i].d, now)
		}
	}
}

// denied records a denial d of key at now: TOPDENIED, the deny events and, for a block's,
// INFO's counts. (One indirect call: a denial's path pays nothing for blocks.)
func (rl *Family) denied(c *command.Ctx, key []byte, d *decision, now int64) {
	rl.cfg.Denied(c, key, d.retry, now, d.block)
}
