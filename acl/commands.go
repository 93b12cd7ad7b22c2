package acl

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/throttledhq/throttled/command"
)

// Commands are the family's commands: ACL and its subcommands, each one literal.
func (f *Family) Commands() []*command.Spec {
	const admin, open = "admin noscript loading stale", "noscript loading stale"
	return []*command.Spec{{Name: "acl", ACL: "dangerous", NoScript: true, Arity: -2, Group: "server", Since: "6.0.0",
		Summary: "A container for Access List Control commands.", Subcommands: []*command.Spec{
			{Name: "setuser", Arity: -3, Flags: admin, Group: "server", Since: "6.0.0", Summary: "Creates and modifies an ACL user and its rules.", Syntax: "username [rule ...]", Handler: f.setUser},
			{Name: "getuser", Arity: 3, Flags: admin, Group: "server", Since: "6.0.0", Summary: "Lists the ACL rules of a user.", Syntax: "username", Handler: f.getUser},
			{Name: "deluser", Arity: -3, Flags: admin, Group: "server", Since: "6.0.0", Summary: "Deletes ACL users, and terminates their connections.", Syntax: "username [username ...]", Handler: f.delUser},
			{Name: "list", Arity: 2, Flags: admin, Group: "server", Since: "6.0.0", Summary: "Dumps the effective rules in ACL file format.", Handler: f.list},
			{Name: "users", Arity: 2, Flags: admin, Group: "server", Since: "6.0.0", Summary: "Lists all ACL users.", Handler: f.usersCmd},
			{Name: "whoami", Arity: 2, Flags: open, Group: "server", Since: "6.0.0", Summary: "Returns the authenticated username of the current connection.", Handler: f.whoAmI},
			{Name: "cat", Arity: -2, Flags: open, Group: "server", Since: "6.0.0", Summary: "Lists the ACL categories, or the commands inside a category.", Syntax: "[category]", Handler: f.catCmd},
			{Name: "genpass", Arity: -2, Flags: open, Group: "server", Since: "6.0.0", Summary: "Generates a pseudorandom, secure password that can be used to identify ACL users.", Syntax: "[bits]", Handler: genPass},
			{Name: "load", Arity: 2, Flags: admin, Group: "server", Since: "6.0.0", Summary: "Reloads the rules from the configured ACL file.", Handler: f.load},
			{Name: "save", Arity: 2, Flags: admin, Group: "server", Since: "6.0.0", Summary: "Saves the effective ACL rules in the configured ACL file.", Handler: f.save},
			{Name: "help", Arity: 2, Flags: "loading stale", Group: "server", Since: "6.0.0", Summary: "Returns helpful text about the different subcommands.", Handler: help},
		}}}
}

// ACL SETUSER username [rule ...]
func (f *Family) setUser(c *command.Ctx, args [][]byte) error {
	rules := make([]string, 0, len(args)-3)
	for _, a := range args[3:] {
		rules = append(rules, string(a))
	}
	name := string(args[2])
	if _, err := f.users.SetUser(name, rules); err != nil {
		return err
	}
	if name == DefaultUser {
		f.syncRequirePass()
	}
	c.W.OK()
	return nil
}

// ACL GETUSER username
func (f *Family) getUser(c *command.Ctx, args [][]byte) error {
	in, ok := f.users.Info(string(args[2]))
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
func (f *Family) delUser(c *command.Ctx, args [][]byte) error {
	names := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		names = append(names, string(a))
	}
	gone, err := f.users.DelUser(names)
	if err != nil {
		return err
	}
	if len(gone) > 0 {
		f.cfg.CloseUsers(c, gone) // as in Redis, the connections of a deleted user close
	}
	c.W.Int(int64(len(gone)))
	return nil
}

// ACL LIST
func (f *Family) list(c *command.Ctx, args [][]byte) error {
	var lines []string
	for _, n := range f.users.Names() {
		if line, ok := f.users.Describe(n); ok {
			lines = append(lines, line)
		}
	}
	c.W.StringArray(lines)
	return nil
}

// ACL USERS
func (f *Family) usersCmd(c *command.Ctx, args [][]byte) error {
	c.W.StringArray(f.users.Names())
	return nil
}

// ACL WHOAMI
func (f *Family) whoAmI(c *command.Ctx, args [][]byte) error {
	c.W.BulkString(f.cfg.UserOf(c).Name())
	return nil
}

// ACL CAT [category]
func (f *Family) catCmd(c *command.Ctx, args [][]byte) error {
	switch len(args) {
	case 2:
		c.W.StringArray(Categories)
		return nil
	case 3:
		bit, ok := Category(string(args[2]))
		if !ok {
			return errors.New("Unknown category '" + command.Truncate(args[2], 128) + "'")
		}
		c.W.StringArray(f.cat.InCategory(bit))
		return nil
	}
	return errors.New("wrong number of arguments for 'acl|cat' command")
}

// ACL GENPASS [bits]
func genPass(c *command.Ctx, args [][]byte) error {
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

// ACL LOAD
func (f *Family) load(c *command.Ctx, args [][]byte) error {
	if f.cfg.File == "" {
		return errNoFile
	}
	gone, err := f.loadFile()
	if err != nil {
		return err
	}
	f.syncRequirePass()
	if len(gone) > 0 {
		f.cfg.CloseUsers(c, gone)
	}
	c.W.OK()
	return nil
}

// ACL SAVE
func (f *Family) save(c *command.Ctx, args [][]byte) error {
	if f.cfg.File == "" {
		return errNoFile
	}
	if err := f.saveFile(); err != nil {
		return fmt.Errorf("There was an error trying to save the ACLs. Please check the server logs for more information: %v", err)
	}
	c.W.OK()
	return nil
}

// ACL HELP
func help(c *command.Ctx, args [][]byte) error {
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
