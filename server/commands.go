package server

import (
	"bytes"
	"sort"
	"strings"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/memory"
)

// handler runs one command; an error it returns becomes the error reply.
type handler func(c *client, args [][]byte) error

// command is one entry of the command table, with what COMMAND reports of it.
type cmdEntry struct {
	name     string // lower case; a subcommand's name is "parent|sub"
	arity    int    // as Redis: n means exactly n arguments with the name, -n at least n
	flags    string // space-separated Redis command flags
	firstKey int    // position of the first key, 0 when none
	lastKey  int    // position of the last key; -1 for the last argument
	keyStep  int
	group    string // COMMAND DOCS group
	since    string // version of the first release with it
	summary  string
	syntax   string // the arguments after the name, as in the docs: "key [COST n]"
	handler  handler
	keySpecs []command.KeySpec                            // COMMAND INFO's key specifications; nil: getkeys.go's table, or one from its flags
	acl      string                                       // ACL categories besides those of its flags and group
	aclKeys  func(c *command.Ctx, args [][]byte) [][]byte // the keys ACL checks where they are no arguments
	upstream int                                          // the kind of upstream call it is in upstream mode (ratelimit.CallKind); 0: local
	// keysOf returns the keys of a request whose keys are not at fixed positions (EVAL's
	// numkeys); nil when firstKey and lastKey say where they are.
	keysOf func(args [][]byte) [][]byte
	// keyFlags are the key flags of a request whose keys' flags depend on it (command.Spec's)
	keyFlags func(args [][]byte, pos int) string
	// detach: the command needs the client on a goroutine of its own, with an output that
	// other goroutines may queue on (SUBSCRIBE: messages arrive at any time; commands that
	// block). An event loop hands such a client over before it runs the command.
	detach bool
	// whileSubscribed: the command may run on a RESP2 connection with subscriptions.
	whileSubscribed bool
	// gated: a command with keys that waits for a transaction or script holding their
	// stripes (multi.go's gate).
	gated bool
	// batch: a pipeline's run of it on one shard may share one lock (batch.go): its one
	// key is args[1], and its handler takes its shard with LockShard.
	batch bool
	// holdsStripes: it takes the transaction stripes of its keys for its run (EXEC, the
	// scripts: multi.go), so it passes no gate, being what the gate waits for.
	holdsStripes bool
	// noScript: refused inside scripts, with its subcommands but HELP, as Redis's noscript
	// flag refuses it (the flags COMMAND shows do not all say so).
	noScript bool
	// allowBusy: runs while a script is busy, as Redis's allow_busy flag says.
	allowBusy bool

	parent      *cmdEntry
	subcommands map[string]*cmdEntry

	bits    uint32 // flags as bits, for the checks at dispatch
	aclID   int    // the command's id in the ACL catalogue (acl.go)
	aclCats uint64 // its ACL categories, as acl.Category's bits
	keyUse  int    // the access its keys need, acl.Read and/or acl.Write
	// Its calls, time, rejections, failures and decisions are counted in the counter
	// slots, by aclID (counters.go).

	deniedChannel []byte // rate-limit verbs: where their denials are published
}

// Flag bits checked at dispatch.
const (
	flagNoAuth uint32 = 1 << iota
	flagWrite
	flagRatelimit
	flagNoMulti     // refused inside MULTI: it cannot run within EXEC (SUBSCRIBE, WAIT, PSYNC)
	flagNoQueue     // runs at once inside MULTI instead of being queued (MULTI, EXEC, WATCH, QUIT, RESET); set in bits, not a Redis flag
	flagDenyOOM     // may add data: refused or preceded by evictions over maxmemory (memory.go)
	flagNoScript    // refused inside scripts (scripting.go)
	flagAllowBusy   // runs while a script is busy (scripting.go)
	flagReadonly    // reads keys: its lookups count as keyspace hits or misses (INFO)
	flagDirect      // takes its key's shard through client.lockShard: a native script may run it under the lock it holds (scripting.go)
	flagFast        // Redis's fast flag: its slow calls are the latency monitor's fast-command events (latencymon.go)
	flagSkipMonitor // not shown to MONITOR after it ran: the scripts show themselves before their commands (monitorScript)
)

var flagBits = map[string]uint32{"no-auth": flagNoAuth, "write": flagWrite, "ratelimit": flagRatelimit, "no-multi": flagNoMulti, "denyoom": flagDenyOOM, "noscript": flagNoScript, "readonly": flagReadonly, "fast": flagFast, "skip_monitor": flagSkipMonitor, "allow_busy": flagAllowBusy}

func (cmd *cmdEntry) has(bit uint32) bool { return cmd.bits&bit != 0 }

func (cmd *cmdEntry) arityOK(n int) bool {
	if cmd.arity >= 0 {
		return n == cmd.arity
	}
	return n >= -cmd.arity
}

// fullName is the name Redis shows in errors and CLIENT LIST: "client|setname".
func (cmd *cmdEntry) fullName() string { return cmd.name }

// subcommand finds the subcommand named by arg, or nil.
func (cmd *cmdEntry) subcommand(arg []byte) *cmdEntry {
	return cmd.subcommands[strings.ToLower(string(arg))]
}

// lookup finds the command named by name in any case, or nil. A client's last name is
// remembered as it was sent: a pipeline of one command is looked up once.
func (s *Server) lookup(c *client, name []byte) *cmdEntry {
	if c.lastLookup != nil && bytes.Equal(name, c.lastName) {
		return c.lastLookup
	}
	cmd := s.commands[string(c.lowerName(name))]
	if cmd != nil {
		c.lastName = append(c.lastName[:0], name...)
	}
	c.lastLookup = cmd
	return cmd
}

// register adds cmds to table; a name registered twice is a programmer error.
func register(table map[string]*cmdEntry, parent *cmdEntry, cmds []*cmdEntry) {
	for _, cmd := range cmds {
		if parent != nil {
			cmd.parent = parent
			cmd.name = parent.name + "|" + cmd.name
			if parent.subcommands == nil {
				parent.subcommands = make(map[string]*cmdEntry)
			}
			parent.subcommands[cmd.name[len(parent.name)+1:]] = cmd
		} else {
			if table[cmd.name] != nil {
				panic("server: command registered twice: " + cmd.name)
			}
			table[cmd.name] = cmd
		}
		for _, f := range strings.Fields(cmd.flags) {
			cmd.bits |= flagBits[f]
		}
		if cmd.keyStep == 0 && cmd.firstKey > 0 {
			cmd.keyStep = 1
		}
		cmd.gated = (cmd.firstKey > 0 || cmd.keysOf != nil) && !cmd.holdsStripes
		cmd.batch = cmd.bits&(flagDirect|flagRatelimit) != 0 && cmd.firstKey == 1 && cmd.lastKey == 1 &&
			cmd.keysOf == nil && !cmd.detach && len(cmd.subcommands) == 0
	}
}

// registerFamily adds a family's commands, with their subcommands, to table.
func registerFamily(table map[string]*cmdEntry, specs []*command.Spec) {
	for _, sp := range specs {
		register(table, nil, []*cmdEntry{entryOf(sp)})
		if len(sp.Subcommands) > 0 {
			parent := table[sp.Name]
			subs := make([]*cmdEntry, len(sp.Subcommands))
			for i, sub := range sp.Subcommands {
				subs[i] = entryOf(sub)
			}
			register(table, parent, subs)
			if parent.handler == nil {
				upper := strings.ToUpper(parent.name)
				parent.handler = func(c *client, args [][]byte) error { return command.UnknownSubcommand(args[1], upper) }
			}
		}
	}
}

// entryOf makes the table's entry of a family's command literal.
func entryOf(sp *command.Spec) *cmdEntry {
	e := &cmdEntry{name: sp.Name, arity: sp.Arity, flags: sp.Flags, firstKey: sp.FirstKey, lastKey: sp.LastKey,
		keyStep: sp.KeyStep, keysOf: sp.KeysOf, keyFlags: sp.KeyFlags, keySpecs: sp.KeySpecs, acl: sp.ACL, aclKeys: sp.ACLKeys, upstream: sp.Upstream,
		group: sp.Group, since: sp.Since, summary: sp.Summary, syntax: sp.Syntax, noScript: sp.NoScript}
	if h := sp.Handler; h != nil {
		e.handler = func(c *client, args [][]byte) error { return h(&c.Ctx, args) }
	}
	if sp.Direct {
		e.bits |= flagDirect
	}
	return e
}

// commandTable builds every command the server answers.
func (s *Server) commandTable() map[string]*cmdEntry {
	table := make(map[string]*cmdEntry)
	register(table, nil, connectionCommands())
	register(table, nil, serverCommands())
	registerFamily(table, s.types.Commands())
	registerFamily(table, s.rl.Commands())
	registerFamily(table, s.latencyCommands())
	registerFamily(table, memory.Commands(memory.Config{Figures: s.memoryFigures}))
	registerFamily(table, s.fn.Commands())
	register(table, nil, replicationCommands())
	register(table, nil, multiCommands())
	register(table, nil, pubsubCommands())
	register(table, nil, observeCommands())
	registerFamily(table, s.aclCmds.Commands())
	register(table, nil, scriptCommands())
	register(table, nil, functionCommands())
	for _, parent := range []struct {
		name string
		subs []*cmdEntry
	}{
		{"client", append(clientSubcommands(), clientCtlSubcommands()...)},
		{"config", configSubcommands()},
		{"command", commandSubcommands()},
		{"pubsub", pubsubSubcommands()},
		{"slowlog", slowlogSubcommands()},
	} {
		cmd := table[parent.name]
		register(table, cmd, parent.subs)
		if cmd.handler == nil {
			upper := strings.ToUpper(cmd.name)
			cmd.handler = func(c *client, args [][]byte) error { return command.UnknownSubcommand(args[1], upper) }
		}
	}
	initScripting(table)
	return table
}

// sortedCommands lists the top-level commands by name.
func (s *Server) sortedCommands() []*cmdEntry {
	out := make([]*cmdEntry, 0, len(s.commands))
	for _, cmd := range s.commands {
		out = append(out, cmd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func commandSubcommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "count", arity: 2, flags: "loading stale", group: "server", since: "2.8.13", summary: "Returns a count of commands.", handler: cmdCommandCount},
		{name: "info", arity: -2, flags: "loading stale", group: "server", since: "2.8.13", summary: "Returns information about one, multiple or all commands.", syntax: "[command-name ...]", handler: cmdCommandInfo},
		{name: "docs", arity: -2, flags: "loading stale", group: "server", since: "7.0.0", summary: "Returns documentary information about one, multiple or all commands.", syntax: "[command-name ...]", handler: cmdCommandDocs},
		{name: "list", arity: -2, flags: "loading stale", group: "server", since: "7.0.0", summary: "Returns a list of command names.", syntax: "[FILTERBY MODULE name|ACLCAT category|PATTERN pattern]", handler: cmdCommandList},
		{name: "getkeys", arity: -4, flags: "loading stale", group: "server", since: "2.8.13", summary: "Extracts the key names from an arbitrary command.", syntax: "command [arg ...]", handler: cmdCommandGetKeys},
		{name: "getkeysandflags", arity: -4, flags: "loading stale", group: "server", since: "7.0.0", summary: "Extracts the key names and access flags for an arbitrary command.", syntax: "command [arg ...]", handler: cmdCommandGetKeysAndFlags},
		{name: "help", arity: 2, flags: "loading stale", group: "server", since: "5.0.0", summary: "Returns helpful text about the different subcommands.", handler: cmdCommandHelp},
	}
}

// COMMAND
func cmdCommand(c *client, args [][]byte) error {
	if len(args) > 1 {
		return command.UnknownSubcommand(args[1], "COMMAND")
	}
	cmds := c.s.sortedCommands()
	c.W.Array(len(cmds))
	for _, cmd := range cmds {
		writeCommandInfo(c, cmd)
	}
	return nil
}

// COMMAND COUNT
func cmdCommandCount(c *client, args [][]byte) error {
	c.W.Int(int64(len(c.s.commands)))
	return nil
}

// COMMAND INFO [command-name ...]
func cmdCommandInfo(c *client, args [][]byte) error {
	if len(args) == 2 {
		return cmdCommand(c, args[:1])
	}
	c.W.Array(len(args) - 2)
	for _, name := range args[2:] {
		if cmd := c.s.findCommand(string(name)); cmd != nil {
			writeCommandInfo(c, cmd)
		} else {
			c.W.NullArray()
		}
	}
	return nil
}

// findCommand finds a command or "parent|sub" subcommand by name in any case.
func (s *Server) findCommand(name string) *cmdEntry {
	name = strings.ToLower(name)
	parent, sub, ok := strings.Cut(name, "|")
	cmd := s.commands[parent]
	if cmd == nil || !ok {
		return cmd
	}
	return cmd.subcommands[sub]
}

// writeCommandInfo writes Redis 7's ten-element description of cmd.
func writeCommandInfo(c *client, cmd *cmdEntry) {
	c.W.Array(10)
	c.W.BulkString(cmd.name)
	c.W.Int(int64(cmd.arity))
	flags := strings.Fields(cmd.flags)
	c.W.SetHeader(len(flags))
	for _, f := range flags {
		c.W.Simple(f)
	}
	c.W.Int(int64(cmd.firstKey))
	c.W.Int(int64(cmd.lastKey))
	c.W.Int(int64(cmd.keyStep))
	cats := aclCategoryNames(cmd.aclCats)
	c.W.SetHeader(len(cats))
	for _, cat := range cats {
		c.W.Simple("@" + cat)
	}
	c.W.Array(0) // tips
	if cmd.firstKey > 0 {
		writeKeySpec(c, cmd)
	} else {
		c.W.Array(0)
	}
	subs := sortedSubcommands(cmd)
	c.W.Array(len(subs))
	for _, sub := range subs {
		writeCommandInfo(c, sub)
	}
}

// writeKeySpec writes one key specification: keys from firstKey to lastKey by keyStep.
func writeKeySpec(c *client, cmd *cmdEntry) {
	access := "RO"
	if cmd.has(flagWrite) {
		access = "RW"
	}
	c.W.Array(1)
	c.W.Map(3)
	c.W.BulkString("flags")
	c.W.SetHeader(1)
	c.W.Simple(access)
	c.W.BulkString("begin_search")
	c.W.Map(2)
	c.W.BulkString("type")
	c.W.BulkString("index")
	c.W.BulkString("spec")
	c.W.Map(1)
	c.W.BulkString("index")
	c.W.Int(int64(cmd.firstKey))
	c.W.BulkString("find_keys")
	c.W.Map(2)
	c.W.BulkString("type")
	c.W.BulkString("range")
	c.W.BulkString("spec")
	c.W.Map(3)
	c.W.BulkString("lastkey")
	last := cmd.lastKey
	if last > 0 {
		last -= cmd.firstKey
	}
	c.W.Int(int64(last))
	c.W.BulkString("keystep")
	c.W.Int(int64(cmd.keyStep))
	c.W.BulkString("limit")
	c.W.Int(0)
}

func sortedSubcommands(cmd *cmdEntry) []*cmdEntry {
	subs := make([]*cmdEntry, 0, len(cmd.subcommands))
	for _, sub := range cmd.subcommands {
		subs = append(subs, sub)
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].name < subs[j].name })
	return subs
}

// COMMAND DOCS [command-name ...]
func cmdCommandDocs(c *client, args [][]byte) error {
	var cmds []*cmdEntry
	if len(args) == 2 {
		cmds = c.s.sortedCommands()
	} else {
		for _, name := range args[2:] {
			if cmd := c.s.findCommand(string(name)); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.W.Map(len(cmds))
	for _, cmd := range cmds {
		c.W.BulkString(cmd.name)
		writeCommandDocs(c, cmd)
	}
	return nil
}

// writeCommandDocs writes summary, since, group, arguments and subcommands, as redis-cli reads them for its hints.
func writeCommandDocs(c *client, cmd *cmdEntry) {
	subs := sortedSubcommands(cmd)
	fields := 4
	if len(subs) > 0 {
		fields++
	}
	c.W.Map(fields)
	c.W.BulkString("summary")
	c.W.BulkString(cmd.summary)
	c.W.BulkString("since")
	c.W.BulkString(cmd.since)
	c.W.BulkString("group")
	c.W.BulkString(cmd.group)
	c.W.BulkString("arguments")
	command.WriteArguments(&c.W, command.ParseSyntax(cmd.syntax))
	if len(subs) > 0 {
		c.W.BulkString("subcommands")
		c.W.Map(len(subs))
		for _, sub := range subs {
			c.W.BulkString(sub.name)
			writeCommandDocs(c, sub)
		}
	}
}

// COMMAND LIST [FILTERBY MODULE name|ACLCAT category|PATTERN pattern]
func cmdCommandList(c *client, args [][]byte) error {
	var pattern []byte
	switch {
	case len(args) == 2:
	case len(args) == 5 && strings.EqualFold(string(args[2]), "filterby"):
		switch strings.ToLower(string(args[3])) {
		case "pattern":
			pattern = args[4]
		case "aclcat":
			bit, ok := acl.Category(string(args[4]))
			if !ok {
				c.W.Array(0)
				return nil
			}
			c.W.StringArray(c.s.aclCatalog.InCategory(bit))
			return nil
		case "module":
			c.W.Array(0) // no modules to filter by
			return nil
		default:
			return command.ErrSyntax
		}
	default:
		return command.ErrSyntax
	}
	// As Redis 7.0: subcommands too, "client|list", and the pattern ignores case (names
	// are lower case).
	if pattern != nil {
		pattern = bytes.ToLower(pattern)
	}
	var names []string
	for _, cmd := range c.s.sortedCommands() {
		for _, cc := range append([]*cmdEntry{cmd}, sortedSubcommands(cmd)...) {
			if pattern == nil || glob.Match(pattern, []byte(cc.name)) {
				names = append(names, cc.name)
			}
		}
	}
	c.W.StringArray(names)
	return nil
}

// commandKeys returns the key arguments of a request for cmd.
func commandKeys(cmd *cmdEntry, args [][]byte) [][]byte {
	if cmd.keysOf != nil {
		return cmd.keysOf(args)
	}
	return appendKeys(nil, cmd, args)
}

// appendKeys appends the key arguments of a request for cmd to keys.
func appendKeys(keys [][]byte, cmd *cmdEntry, args [][]byte) [][]byte {
	if cmd.keysOf != nil {
		return append(keys, cmd.keysOf(args)...)
	}
	if cmd.firstKey == 0 || cmd.firstKey >= len(args) {
		return keys
	}
	last := cmd.lastKey
	if last < 0 {
		last = len(args) + last
	}
	for i := cmd.firstKey; i <= last && i < len(args); i += cmd.keyStep {
		keys = append(keys, args[i])
	}
	return keys
}

// COMMAND HELP
func cmdCommandHelp(c *client, args [][]byte) error {
	c.WriteHelp("COMMAND", []string{
		"(no subcommand)", "    Return details about all commands.",
		"COUNT", "    Return the total number of commands in this server.",
		"LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]", "    Return a list of all commands in this server.",
		"INFO [<command-name> ...]", "    Return details about the given commands, or all of them.",
		"DOCS [<command-name> ...]", "    Return documentation details about the given commands, or all of them.",
		"GETKEYS <full-command>", "    Return the keys from a full command.",
		"GETKEYSANDFLAGS <full-command>", "    Return the keys and the access flags from a full command.",
	})
	return nil
}
