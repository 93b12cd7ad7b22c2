package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/conffile"
)

// The ACL users (package acl) as the server uses them: the catalogue of commands with their
// categories, the check at dispatch, and the ACL command.

func aclCommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "acl", acl: "dangerous", noScript: true, arity: -2, group: "server", since: "6.0.0", summary: "A container for Access List Control commands."},
	}
}

func aclSubcommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "setuser", arity: -3, flags: "admin noscript loading stale", group: "server", since: "6.0.0", summary: "Creates and modifies an ACL user and its rules.", syntax: "username [rule ...]", handler: cmdACLSetUser},
		{name: "getuser", arity: 3, flags: "admin noscript loading stale", group: "server", since: "6.0.0", summary: "Lists the ACL rules of a user.", syntax: "username", handler: cmdACLGetUser},
		{name: "deluser", arity: -3, flags: "admin noscript loading stale", group: "server", since: "6.0.0", summary: "Deletes ACL users, and terminates their connections.", syntax: "username [username ...]", handler: cmdACLDelUser},
		{name: "list", arity: 2, flags: "admin noscript loading stale", group: "server", since: "6.0.0", summary: "Dumps the effective rules in ACL file format.", handler: cmdACLList},
		{name: "users", arity: 2, flags: "admin noscript loading stale", group: "server", since: "6.0.0", summary: "Lists all ACL users.", handler: cmdACLUsers},
		{name: "whoami", arity: 2, flags: "noscript loading stale", group: "server", since: "6.0.0", summary: "Returns the authenticated username of the current connection.", handler: cmdACLWhoAmI},
		{name: "cat", arity: -2, flags: "noscript loading stale", group: "server", since: "6.0.0", summary: "Lists the ACL categories, or the commands inside a category.", syntax: "[category]", handler: cmdACLCat},
		{name: "genpass", arity: -2, flags: "noscript loading stale", group: "server", since: "6.0.0", summary: "Generates a pseudorandom, secure password that can be used to identify ACL users.", syntax: "[bits]", handler: cmdACLGenPass},
		{name: "load", arity: 2, flags: "admin noscript loading stale", group: "server", since: "6.0.0", summary: "Reloads the rules from the configured ACL file.", handler: cmdACLLoad},
		{name: "save", arity: 2, flags: "admin noscript loading stale", group: "server", since: "6.0.0", summary: "Saves the effective ACL rules in the configured ACL file.", handler: cmdACLSave},
		{name: "help", arity: 2, flags: "loading stale", group: "server", since: "6.0.0", summary: "Returns helpful text about the different subcommands.", handler: cmdACLHelp},
	}
}

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

// openACL builds the catalogue of commands and the users: the default user with
// requirepass, then the config file's user lines.
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
	s.acl = acl.New(s.aclCatalog)
	s.password.Store(&s.cfg.RequirePass)
	if err := s.setRequirePass(s.cfg.RequirePass); err != nil {
		return err
	}
	for _, line := range s.cfg.Users {
		if len(line) == 0 {
			return errors.New("user: a name and rules expected")
		}
		if _, err := s.acl.SetUser(line[0], line[1:]); err != nil {
			return fmt.Errorf("user %s: %w", line[0], err)
		}
	}
	if s.cfg.ACLFile != "" {
		if _, err := s.loadACLFile(); err != nil {
			return fmt.Errorf("aclfile: %w", err)
		}
	}
	return nil
}

// loadACLFile replaces the users with the ACL file's, all or none; it returns the users gone.
func (s *Server) loadACLFile() ([]*acl.User, error) {
	b, err := os.ReadFile(s.cfg.ACLFile)
	if err != nil {
		return nil, err
	}
	var users [][]string
	for n, line := range strings.Split(string(b), "\n") {
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		if words[0] != "user" || len(words) < 2 {
			return nil, fmt.Errorf("%s:%d: a line is \"user name rule...\"", s.cfg.ACLFile, n+1)
		}
		users = append(users, words[1:])
	}
	gone, err := s.acl.Load(users)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.cfg.ACLFile, err)
	}
	return gone, nil
}

// errNoACLFile is ACL LOAD or SAVE without an aclfile, in Redis's words.
var errNoACLFile = errors.New("This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")

// ACL LOAD
func cmdACLLoad(c *client, args [][]byte) error {
	if c.s.cfg.ACLFile == "" {
		return errNoACLFile
	}
	gone, err := c.s.loadACLFile()
	if err != nil {
		return err
	}
	c.s.syncRequirePass()
	c.s.closeClientsOf(c, gone)
	c.W.OK()
	return nil
}

// ACL SAVE
func cmdACLSave(c *client, args [][]byte) error {
	if c.s.cfg.ACLFile == "" {
		return errNoACLFile
	}
	var b strings.Builder
	for _, n := range c.s.acl.Names() {
		if line, ok := c.s.acl.Describe(n); ok {
			b.WriteString(line + "\n")
		}
	}
	if err := conffile.WriteAtomic(c.s.cfg.ACLFile, []byte(b.String())); err != nil {
		return fmt.Errorf("There was an error trying to save the ACLs. Please check the server logs for more information: %v", err)
	}
	c.W.OK()
	return nil
}

// closeClientsOf closes the connections of users that are gone, as Redis does.
func (s *Server) closeClientsOf(by *client, gone []*acl.User) {
	if len(gone) == 0 {
		return
	}
	for _, cl := range s.clientsByID() {
		u := cl.user.Load()
		for _, g := range gone {
			if u == g {
				cl.kill(by)
			}
		}
	}
}

// setRequirePass makes pass the default user's only password, or none ("") as Redis's
// requirepass does.
func (s *Server) setRequirePass(pass string) error {
	rules := []string{"nopass"}
	if pass != "" {
		rules = []string{"resetpass", ">" + pass}
	}
	_, err := s.acl.SetUser(acl.DefaultUser, rules)
	return err
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

// ACL SETUSER username [rule ...]
func cmdACLSetUser(c *client, args [][]byte) error {
	rules := make([]string, 0, len(args)-3)
	for _, a := range args[3:] {
		rules = append(rules, string(a))
	}
	name := string(args[2])
	if _, err := c.s.acl.SetUser(name, rules); err != nil {
		return err
	}
	if name == acl.DefaultUser {
		c.s.syncRequirePass()
	}
	c.W.OK()
	return nil
}

// syncRequirePass keeps CONFIG GET requirepass in step with ACL SETUSER default: the
// default user's first password is not known in clear, so a change that leaves it
// without nopass keeps the old value, and nopass empties it.
func (s *Server) syncRequirePass() {
	if s.acl.DefaultOpen() {
		empty := ""
		s.password.Store(&empty)
	}
}

// ACL GETUSER username
func cmdACLGetUser(c *client, args [][]byte) error {
	in, ok := c.s.acl.Info(string(args[2]))
	if !ok {
		c.W.Null()
		return nil
	}
	c.W.Map(6)
	c.W.BulkString("flags")
	c.W.StringArray(in.Flags)
	c.W.BulkString("passwords")
	c.W.StringArray(in.Passwords)
	c.W.BulkString("commands")
	c.W.BulkString(in.Commands)
	c.W.BulkString("keys")
	c.W.BulkString(in.Keys)
	c.W.BulkString("channels")
	c.W.BulkString(in.Channels)
	c.W.BulkString("selectors")
	c.W.Array(0)
	return nil
}

// ACL DELUSER username [username ...]
func cmdACLDelUser(c *client, args [][]byte) error {
	names := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		names = append(names, string(a))
	}
	gone, err := c.s.acl.DelUser(names)
	if err != nil {
		return err
	}
	c.s.closeClientsOf(c, gone) // as in Redis, the connections of a deleted user close
	c.W.Int(int64(len(gone)))
	return nil
}

// ACL LIST
func cmdACLList(c *client, args [][]byte) error {
	var lines []string
	for _, n := range c.s.acl.Names() {
		if line, ok := c.s.acl.Describe(n); ok {
			lines = append(lines, line)
		}
	}
	c.W.StringArray(lines)
	return nil
}

// ACL USERS
func cmdACLUsers(c *client, args [][]byte) error {
	c.W.StringArray(c.s.acl.Names())
	return nil
}

// ACL WHOAMI
func cmdACLWhoAmI(c *client, args [][]byte) error {
	c.W.BulkString(c.user.Load().Name())
	return nil
}

// ACL CAT [category]
func cmdACLCat(c *client, args [][]byte) error {
	switch len(args) {
	case 2:
		c.W.StringArray(acl.Categories)
		return nil
	case 3:
		bit, ok := acl.Category(string(args[2]))
		if !ok {
			return errors.New("Unknown category '" + command.Truncate(args[2], 128) + "'")
		}
		c.W.StringArray(c.s.aclCatalog.InCategory(bit))
		return nil
	}
	return errors.New("wrong number of arguments for 'acl|cat' command")
}

// ACL GENPASS [bits]
func cmdACLGenPass(c *client, args [][]byte) error {
	bits := 256
	if len(args) > 3 {
		return errors.New("wrong number of arguments for 'acl|genpass' command")
	}
	if len(args) == 3 {
		n, err := strconv.Atoi(string(args[2]))
		if err != nil || n <= 0 || n > 4096 {
			return errors.New("ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
		}
		bits = n
	}
	b := make([]byte, (bits+7)/8)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	c.W.BulkString(hex.EncodeToString(b)[:(bits+3)/4])
	return nil
}

// ACL HELP
func cmdACLHelp(c *client, args [][]byte) error {
	c.WriteHelp("ACL", []string{
		"CAT [<category>]", "    List all commands that belong to <category>, or all command categories",
		"    when no category is specified.",
		"DELUSER <username> [<username> ...]", "    Delete a list of users.",
		"GETUSER <username>", "    Get the user's details.",
		"GENPASS [<bits>]", "    Generate a secure 256-bit user password. The optional `bits` argument can",
		"    be used to specify a different size.",
		"LIST", "    Show users details in config file format.",
		"LOAD", "    Reload users from the ACL file.",
		"SAVE", "    Save the current config to the ACL file.",
		"SETUSER <username> <attribute> [<attribute> ...]", "    Create or modify a user with the specified attributes.",
		"USERS", "    List all the registered usernames.",
		"WHOAMI", "    Return the current connection username.",
	})
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
