package server

import (
	"sort"
	"strings"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/command"
)

// The ACL users (package acl) as the server uses them: the catalogue of commands with their
// categories and the check at dispatch. The ACL command is package acl's family (aclCmds),
// which reaches the server through the acl.Config that aclConfig fills in.

// categories returns cmd's ACL categories, from its flags and group as Redis assigns them.
func categories(cmd *cmdEntry) uint64 {
	var cats uint64
	add := func(name string) {
		bit, ok := acl.Category(name)
		if !ok {
			panic("server: no ACL category " + name)
		}
		cats |= bit
	}
	flags := " " + cmd.flags + " "
	has := func(f string) bool { return strings.Contains(flags, " "+f+" ") }
	if has("write") {
		add("write")
	}
	if has("readonly") && cmd.group != "scripting" { // Redis leaves EVAL_RO and FCALL_RO out of @read
		add("read")
	}
	if has("admin") {
		add("admin")
		add("dangerous")
	}
	if has("fast") {
		add("fast")
	} else {
		add("slow")
	}
	if has("pubsub") {
		add("pubsub")
	}
	if has("blocking") {
		add("blocking")
	}
	if (has("ratelimit") || cmd.group == "ratelimit") && !strings.Contains(" "+cmd.acl+" ", " admin ") {
		add("ratelimit") // an operator's command (a policy's change) is no application's
	}
	switch cmd.group {
	case "keyspace":
		add("keyspace")
	case "string":
		add("string")
	case "bitmap":
		add("bitmap")
	case "hash":
		add("hash")
	case "sorted-set":
		add("sortedset")
	case "list":
		add("list")
	case "set":
		add("set")
	case "connection":
		add("connection")
	case "transactions":
		add("transaction")
	case "scripting":
		add("scripting")
	}
	for _, cat := range strings.Fields(cmd.acl) {
		add(cat)
	}
	switch cmd.name {
	case "flushdb", "flushall", "dbsize":
		add("keyspace")
	}
	return cats
}

// openACL builds the catalogue of commands and the users (aclCmds.Open): the default user
// with requirepass, then the config file's user lines, then the ACL file's.
func (s *Server) openACL() error {
	var cmds []*cmdEntry
	for _, cmd := range s.sortedCommands() {
		cmds = append(cmds, cmd)
		var subs []*cmdEntry
		for _, sub := range cmd.subcommands {
			subs = append(subs, sub)
		}
		sort.Slice(subs, func(i, j int) bool { return subs[i].name < subs[j].name })
		cmds = append(cmds, subs...)
	}
	entries := make([]acl.Command, len(cmds))
	for i, cmd := range cmds {
		cmd.aclID = i
		cmd.aclCats = categories(cmd)
		flags := " " + cmd.flags + " "
		if strings.Contains(flags, " readonly ") {
			cmd.keyUse |= acl.Read
		}
		if cmd.bits&flagWrite != 0 {
			cmd.keyUse |= acl.Write
		}
		if cmd.keyUse == 0 {
			cmd.keyUse = acl.Read | acl.Write
		}
		entries[i] = acl.Command{Name: cmd.name, Parent: -1, Categories: cmd.aclCats}
		if cmd.parent != nil {
			entries[i].Parent = cmd.parent.aclID
		}
	}
	s.aclCatalog = acl.NewCatalog(entries)
	s.initCounters(len(cmds))
	s.password.Store(&s.cfg.RequirePass)
	var err error
	s.acl, err = s.aclCmds.Open(s.aclCatalog, s.cfg.RequirePass)
	return err
}

// closeClientsOf closes the connections of users that are gone, as Redis does.
func (s *Server) closeClientsOf(by *client, gone []*acl.User) {
	for _, cl := range s.clientsByID() {
		u := cl.user.Load()
		for _, g := range gone {
			if u == g {
				cl.kill(by)
			}
		}
	}
}

// Errors of the ACL check, in Redis's words.
var (
	// errNoPermKey is a key outside the user's patterns.
	errNoPermKey = &command.Error{Code: "NOPERM", Msg: "No permissions to access a key"}
	// errNoPermChannel is a channel outside the user's patterns.
	errNoPermChannel = &command.Error{Code: "NOPERM", Msg: "No permissions to access a channel"}
)

// checkACL checks that c's user, whose permissions are p and not all, may run cmd with args.
// Commands that need no authentication (AUTH, HELLO, QUIT, RESET) always may, as in Redis.
func (s *Server) checkACL(c *client, p *acl.Perms, cmd *cmdEntry, args [][]byte) error {
	if cmd.bits&flagNoAuth != 0 {
		return nil
	}
	if !p.CanRun(cmd.aclID) {
		return &command.Error{Code: "NOPERM", Msg: "User " + c.user.Load().Name() + " has no permissions to run the '" + cmd.fullName() + "' command"}
	}
	switch {
	case cmd.keysOf != nil:
		for _, k := range cmd.keysOf(args) {
			if !p.CanKey(k, cmd.keyUse) {
				return errNoPermKey
			}
		}
	case cmd.firstKey > 0 && cmd.firstKey < len(args):
		last := cmd.lastKey
		if last < 0 {
			last += len(args)
		}
		for i := cmd.firstKey; i <= last && i < len(args); i += cmd.keyStep {
			if !p.CanKey(args[i], cmd.keyUse) {
				return errNoPermKey
			}
		}
	case cmd.aclKeys != nil:
		for _, k := range cmd.aclKeys(&c.Ctx, args) {
			if !p.CanKey(k, cmd.keyUse) {
				return errNoPermKey
			}
		}
	case cmd.name == "subscribe" || cmd.name == "psubscribe":
		for _, ch := range args[1:] {
			if !p.CanChannel(ch, cmd.name == "psubscribe") {
				return errNoPermChannel
			}
		}
	case cmd.name == "publish":
		if !p.CanChannel(args[1], false) {
			return errNoPermChannel
		}
	}
	return nil
}

// aclCategoryNames lists the categories whose bits are in cats, in ACL CAT's order: COMMAND
// INFO's ACL categories.
func aclCategoryNames(cats uint64) []string {
	var out []string
	for i, name := range acl.Categories {
		if cats&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}

// setAuthed records whether c has authenticated; until it has, on a server that wants it,
// its requests are held to Redis's limits for unauthenticated clients.
func (c *client) setAuthed(ok bool) {
	c.authed = ok
	c.rd.Unauthed = !ok
}
