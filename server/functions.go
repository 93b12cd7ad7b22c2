package server

import (
	"errors"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/scripting"
)

// FCALL and FCALL_RO run a function of the libraries package scripting/functions keeps
// (FUNCTION's family): the server finds it in the loaded set (Libraries, read without a
// lock) and runs it as it runs a script (scripting.go), on the family's engine.

func functionCommands() []*cmdEntry {
	const fcallFlags = "noscript stale skip_monitor no_mandatory_keys movablekeys"
	return []*cmdEntry{
		{name: "fcall", holdsStripes: true, noScript: true, arity: -3, flags: fcallFlags, group: "scripting", since: "7.0.0", summary: "Invoke a function", syntax: "function numkeys [key ...] [arg ...]", handler: fcallHandler(false), keysOf: evalKeys},
		{name: "fcall_ro", holdsStripes: true, noScript: true, arity: -3, flags: "readonly " + fcallFlags, group: "scripting", since: "7.0.0", summary: "Invoke a read-only function", syntax: "function numkeys [key ...] [arg ...]", handler: fcallHandler(true), keysOf: evalKeys},
	}
}

var (
	// errFunctionNotFound is FCALL of a name no library registered.
	errFunctionNotFound = errors.New("Function not found")
	// errBadNumKeys is FCALL's numkeys that is no integer.
	errBadNumKeys = errors.New("Bad number of keys provided")
	// errBusyFunction is any other command while a function has run past busy-reply-threshold,
	// and SCRIPT KILL then.
	errBusyFunction = &command.Error{Code: "BUSY", Msg: "Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."}
)

// fcallHandler makes FCALL and FCALL_RO.
func fcallHandler(readOnly bool) handler {
	return func(c *client, args [][]byte) error {
		c.monitorScript(args)
		s := c.s
		f := s.fn.Libraries().Function(args[1])
		if f == nil {
			return errFunctionNotFound
		}
		if f.Flags&scripting.NoWrites == 0 && s.isReplica.Load() {
			return command.ErrReadOnly
		}
		numkeys, ok := command.ParseInt(args[2])
		switch {
		case !ok:
			return errBadNumKeys
		case numkeys > int64(len(args)-3):
			return command.ErrKeysTooMany
		case numkeys < 0:
			return errKeysNegative
		}
		if err := s.checkScriptFlags(f.Flags, readOnly); err != nil {
			return err
		}
		return c.runScript(nil, f, args, args[3:3+numkeys], args[3+numkeys:], readOnly || f.Flags&scripting.NoWrites != 0)
	}
}
