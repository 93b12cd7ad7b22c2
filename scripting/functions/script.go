package functions

import (
	"errors"
	"strings"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/scripting"
)

func (f *Family) scriptCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "load", Arity: 3, Flags: "noscript stale", Group: "scripting", Since: "2.6.0", Summary: "Load the specified Lua script into the script cache.", Syntax: "script", Handler: f.cmdScriptLoad},
		{Name: "exists", Arity: -3, Flags: "noscript", Group: "scripting", Since: "2.6.0", Summary: "Check existence of scripts in the script cache.", Syntax: "sha1 [sha1 ...]", Handler: f.cmdScriptExists},
		{Name: "flush", Arity: -2, Flags: "noscript", Group: "scripting", Since: "2.6.0", Summary: "Remove all the scripts from the script cache.", Syntax: "[ASYNC|SYNC]", Handler: f.cmdScriptFlush},
		{Name: "kill", Arity: 2, Flags: "noscript allow_busy", Group: "scripting", Since: "2.6.0", Summary: "Kill the script currently in execution.", Handler: f.cmdScriptKill},
		{Name: "debug", Arity: 3, Flags: "noscript", Group: "scripting", Since: "3.2.0", Summary: "Set the debug mode for executed scripts.", Syntax: "YES|SYNC|NO", Handler: cmdScriptDebug},
		{Name: "help", Arity: 2, Flags: "loading stale", Group: "scripting", Since: "5.0.0", Summary: "Show helpful text about the different subcommands", Handler: cmdScriptHelp},
	}
}

// SCRIPT LOAD script
func (f *Family) cmdScriptLoad(c *command.Ctx, args [][]byte) error {
	sc, err := f.cfg.Scripts.Load(args[2])
	if err != nil {
		return err
	}
	c.W.BulkString(sc.SHA)
	return nil
}

// SCRIPT EXISTS sha1 [sha1 ...]
func (f *Family) cmdScriptExists(c *command.Ctx, args [][]byte) error {
	c.W.Array(len(args) - 2)
	for _, sha := range args[2:] {
		d, ok := scripting.Digest(sha)
		if ok && f.cfg.Scripts.Lookup(d) != nil {
			c.W.Int(1)
		} else {
			c.W.Int(0)
		}
	}
	return nil
}

// SCRIPT FLUSH [ASYNC|SYNC]
func (f *Family) cmdScriptFlush(c *command.Ctx, args [][]byte) error {
	if len(args) > 3 || (len(args) == 3 && !strings.EqualFold(string(args[2]), "sync") && !strings.EqualFold(string(args[2]), "async")) {
		return errors.New("SCRIPT FLUSH only support SYNC|ASYNC option")
	}
	f.cfg.Scripts.Flush()
	c.W.OK()
	return nil
}

// SCRIPT KILL
//
// It kills the busy scripts (those past busy-reply-threshold) that have not written, as
// Redis kills its one script; UNKILLABLE when every busy script has written.
func (f *Family) cmdScriptKill(c *command.Ctx, args [][]byte) error {
	if err := f.cfg.Kill(false); err != nil {
		return err
	}
	c.W.OK()
	return nil
}

// SCRIPT DEBUG YES|SYNC|NO
func cmdScriptDebug(c *command.Ctx, args [][]byte) error {
	switch strings.ToLower(string(args[2])) {
	case "no":
		c.W.OK()
		return nil
	case "yes", "sync":
		return errors.New("SCRIPT DEBUG is not supported: throttled has no Lua debugger")
	}
	return errors.New("Use SCRIPT DEBUG YES/SYNC/NO")
}

// SCRIPT HELP
func cmdScriptHelp(c *command.Ctx, args [][]byte) error {
	c.WriteHelp("SCRIPT", []string{
		"DEBUG (YES|SYNC|NO)",
		"    Set the debug mode for subsequent scripts executed.",
		"EXISTS <sha1> [<sha1> ...]",
		"    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]",
		"    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.",
		"    * SYNC: Synchronously flush the scripts cache.",
		"KILL",
		"    Kill the currently executing Lua script.",
		"LOAD <script>",
		"    Load a script into the scripts cache without executing it.",
	})
	return nil
}
