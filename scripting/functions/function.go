package functions

import (
	"errors"
	"strings"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/glob"
	"github.com/throttledhq/throttled/scripting"
)

func (f *Family) functionCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "load", Arity: -3, Flags: "write denyoom noscript", Group: "scripting", Since: "7.0.0", Summary: "Create a function with the given arguments (name, code, description)", Syntax: "[REPLACE] function-code", Handler: f.cmdLoad},
		{Name: "delete", Arity: 3, Flags: "write noscript", Group: "scripting", Since: "7.0.0", Summary: "Delete a function by name", Syntax: "library-name", Handler: f.cmdDelete},
		{Name: "flush", Arity: -2, Flags: "write noscript", Group: "scripting", Since: "7.0.0", Summary: "Deleting all functions", Syntax: "[ASYNC|SYNC]", Handler: f.cmdFlush},
		{Name: "list", Arity: -2, Flags: "noscript", Group: "scripting", Since: "7.0.0", Summary: "List information about all the functions", Syntax: "[LIBRARYNAME library-name-pattern] [WITHCODE]", Handler: f.cmdList},
		{Name: "dump", Arity: 2, Flags: "noscript", Group: "scripting", Since: "7.0.0", Summary: "Dump all functions into a serialized binary payload", Handler: f.cmdDump},
		{Name: "restore", Arity: -3, Flags: "write denyoom noscript", Group: "scripting", Since: "7.0.0", Summary: "Restore all the functions on the given payload", Syntax: "serialized-value [FLUSH|APPEND|REPLACE]", Handler: f.cmdRestore},
		{Name: "stats", Arity: 2, Flags: "noscript allow_busy", Group: "scripting", Since: "7.0.0", Summary: "Return information about the function currently running (name, description, duration)", Handler: f.cmdStats},
		{Name: "kill", Arity: 2, Flags: "noscript allow_busy", Group: "scripting", Since: "7.0.0", Summary: "Kill the function currently in execution.", Handler: f.cmdKill},
		{Name: "help", Arity: 2, Flags: "loading stale", Group: "scripting", Since: "7.0.0", Summary: "Show helpful text about the different subcommands", Handler: cmdFunctionHelp},
	}
}

// syntaxError is a FUNCTION subcommand's reply to arguments it does not take.
func syntaxError(sub []byte) error {
	return errors.New("unknown subcommand or wrong number of arguments for '" + command.Truncate(sub, 128) + "'. Try FUNCTION HELP.")
}

// FUNCTION LOAD [REPLACE] function-code
func (f *Family) cmdLoad(c *command.Ctx, args [][]byte) error {
	replace := false
	i := 2
	for ; i < len(args)-1; i++ {
		if !strings.EqualFold(string(args[i]), "replace") {
			return errors.New("Unknown option given: " + command.Truncate(args[i], 128))
		}
		replace = true
	}
	var name string
	err := f.change(func(ls *scripting.Libraries) (*scripting.Libraries, error) {
		next, lib, err := f.eng.LoadLibrary(args[i], ls, replace, scripting.LoadTimeout)
		if err == nil {
			name = lib.Name
		}
		return next, err
	})
	if err != nil {
		return err
	}
	c.W.BulkString(name)
	return nil
}

// FUNCTION DELETE library-name
func (f *Family) cmdDelete(c *command.Ctx, args [][]byte) error {
	err := f.change(func(ls *scripting.Libraries) (*scripting.Libraries, error) {
		next, ok := ls.Without(string(args[2]))
		if !ok {
			return nil, errors.New("Library not found")
		}
		return next, nil
	})
	if err != nil {
		return err
	}
	c.W.OK()
	return nil
}

// FUNCTION FLUSH [ASYNC|SYNC]
func (f *Family) cmdFlush(c *command.Ctx, args [][]byte) error {
	switch {
	case len(args) > 3:
		return syntaxError(args[1])
	case len(args) == 3 && !strings.EqualFold(string(args[2]), "sync") && !strings.EqualFold(string(args[2]), "async"):
		return errors.New("FUNCTION FLUSH only supports SYNC|ASYNC option")
	}
	err := f.change(func(*scripting.Libraries) (*scripting.Libraries, error) { return nil, nil })
	if err != nil {
		return err
	}
	c.W.OK()
	return nil
}

// FUNCTION LIST [LIBRARYNAME library-name-pattern] [WITHCODE]
func (f *Family) cmdList(c *command.Ctx, args [][]byte) error {
	withCode := false
	var pattern []byte
	for i := 2; i < len(args); i++ {
		switch a := string(args[i]); {
		case !withCode && strings.EqualFold(a, "withcode"):
			withCode = true
		case pattern == nil && strings.EqualFold(a, "libraryname"):
			if i == len(args)-1 {
				return errors.New("library name argument was not given")
			}
			i++
			pattern = []byte(strings.ToLower(string(args[i])))
		default:
			return errors.New("Unknown argument " + command.Truncate(args[i], 128))
		}
	}
	var libs []*scripting.Library
	for _, l := range f.Libraries().List() {
		if pattern == nil || glob.Match(pattern, []byte(strings.ToLower(l.Name))) {
			libs = append(libs, l)
		}
	}
	fields := 3
	if withCode {
		fields++ // library_code
	}
	w := &c.W
	w.Array(len(libs))
	for _, l := range libs {
		w.Map(fields)
		w.BulkString("library_name")
		w.BulkString(l.Name)
		w.BulkString("engine")
		w.BulkString("LUA")
		w.BulkString("functions")
		w.Array(len(l.Functions))
		for _, fn := range l.Functions {
			w.Map(3)
			w.BulkString("name")
			w.BulkString(fn.Name)
			w.BulkString("description")
			if fn.HasDesc {
				w.BulkString(fn.Description)
			} else {
				w.Null()
			}
			w.BulkString("flags")
			var names []string
			for _, fl := range scripting.FlagNames {
				if fn.Flags&fl.Flag != 0 {
					names = append(names, fl.Name)
				}
			}
			w.SetHeader(len(names))
			for _, n := range names {
				w.Simple(n)
			}
		}
		if withCode {
			w.BulkString("library_code")
			w.BulkString(l.Code)
		}
	}
	return nil
}

// FUNCTION DUMP: Redis's payload (scripting/dump.go), which Redis restores too.
func (f *Family) cmdDump(c *command.Ctx, args [][]byte) error {
	c.W.Bulk(scripting.Dump(f.Libraries().List()))
	return nil
}

// FUNCTION RESTORE serialized-value [FLUSH|APPEND|REPLACE]
func (f *Family) cmdRestore(c *command.Ctx, args [][]byte) error {
	if len(args) > 4 {
		return syntaxError(args[1])
	}
	policy := "append"
	if len(args) == 4 {
		policy = strings.ToLower(string(args[3]))
		if policy != "append" && policy != "replace" && policy != "flush" {
			return errors.New("Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
		}
	}
	codes, err := scripting.ParseDump(args[2])
	if err != nil {
		return err
	}
	var loaded *scripting.Libraries
	for _, code := range codes {
		if loaded, _, err = f.eng.LoadLibrary(code, loaded, false, 0); err != nil {
			return err
		}
	}
	err = f.change(func(ls *scripting.Libraries) (*scripting.Libraries, error) {
		if policy == "flush" {
			return loaded, nil
		}
		return ls.Join(loaded.List(), policy == "replace")
	})
	if err != nil {
		return err
	}
	c.W.OK()
	return nil
}

// FUNCTION STATS: the function running past busy-reply-threshold, if any, and the engine's
// libraries and functions.
func (f *Family) cmdStats(c *command.Ctx, args [][]byte) error {
	running, err := f.cfg.Running()
	if err != nil {
		return err // an EVAL is busy: Redis answers so
	}
	w := &c.W
	w.Map(2)
	w.BulkString("running_script")
	if running == nil {
		w.Null()
	} else {
		w.Map(3)
		w.BulkString("name")
		w.BulkString(running.Name)
		w.BulkString("command")
		w.Array(len(running.Args))
		for _, a := range running.Args {
			w.Bulk(a)
		}
		w.BulkString("duration_ms")
		w.Int(running.Duration.Milliseconds())
	}
	libs, funcs := f.Libraries().Len()
	w.BulkString("engines")
	w.Map(1)
	w.BulkString("LUA")
	w.Map(2)
	w.BulkString("libraries_count")
	w.Int(int64(libs))
	w.BulkString("functions_count")
	w.Int(int64(funcs))
	return nil
}

// FUNCTION KILL: SCRIPT KILL's twin for functions.
func (f *Family) cmdKill(c *command.Ctx, args [][]byte) error {
	if err := f.cfg.Kill(true); err != nil {
		return err
	}
	c.W.OK()
	return nil
}

// FUNCTION HELP
func cmdFunctionHelp(c *command.Ctx, args [][]byte) error {
	c.WriteHelp("FUNCTION", []string{
		"LOAD [REPLACE] <FUNCTION CODE>",
		"    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>",
		"    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
		"    Return general information on all the libraries:",
		"    * Library name",
		"    * The engine used to run the Library",
		"    * Library description",
		"    * Functions list",
		"    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
		"STATS",
		"    Return information about the current function running:",
		"    * Function name",
		"    * Command used to run the function",
		"    * Duration in MS that the function is running",
		"    If no function is running, return nil",
		"    In addition, returns a list of available engines.",
		"KILL",
		"    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]",
		"    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.",
		"    * SYNC: Synchronously flush the libraries.",
		"DUMP",
		"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
		"      libraries with the new libraries (notice that even on this option there is a chance of failure",
		"      in case of functions name collision with another library).",
	})
	return nil
}
