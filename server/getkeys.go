package server

import (
	"errors"
	"strings"
	"unsafe"

	"github.com/throttledhq/throttled/command"
)

// COMMAND GETKEYS and GETKEYSANDFLAGS: the keys of a request, and the flags Redis's key
// specifications give each (how the command uses the key: RO, RW, OW or RM, then access,
// update, insert or delete).

// keySpecs are the key specifications of server/'s own commands with keys, as
// redis-server's COMMAND INFO gives them; a family's command has its own in its literal
// (command.Spec.KeySpecs). A command with neither (the rate-limit verbs) reads and writes
// its keys: RW access update, or RO access for a read-only one.
var keySpecs = map[string][]command.KeySpec{
	"eval":         {{Begin: 2, Flags: "RW access update"}},
	"eval_ro":      {{Begin: 2, Flags: "RO access"}},
	"evalsha":      {{Begin: 2, Flags: "RW access update"}},
	"evalsha_ro":   {{Begin: 2, Flags: "RO access"}},
	"fcall":        {{Begin: 2, Flags: "RW access update"}},
	"fcall_ro":     {{Begin: 2, Flags: "RO access"}},
	"watch":        {{Begin: 1, Flags: "RO"}},
	"memory|usage": {{Begin: 2, Flags: "RO"}},
}

var (
	// errGetKeysCommand is GETKEYS of a command the server does not have.
	errGetKeysCommand = errors.New("Invalid command specified")
	// errGetKeysNone is GETKEYS of a command that never has keys.
	errGetKeysNone = errors.New("The command has no key arguments")
	// errGetKeysArity is GETKEYS of a request with the wrong number of arguments.
	errGetKeysArity = errors.New("Invalid number of arguments specified for command")
	// errGetKeysArgs is GETKEYS of a request whose keys cannot be found.
	errGetKeysArgs = errors.New("Invalid arguments specified for command")
)

// requestKeys returns the command of the request in args (a command name and its
// arguments) and the positions of its keys in args, with Redis's errors.
func (s *Server) requestKeys(args [][]byte) (*cmdEntry, []int, error) {
	cmd := s.findCommand(string(args[0]))
	if cmd == nil {
		return nil, nil, errGetKeysCommand
	}
	if len(cmd.subcommands) > 0 {
		// A container names no command by itself; Redis looks up its subcommand.
		if len(args) < 2 || cmd.subcommand(args[1]) == nil {
			return nil, nil, errGetKeysCommand
		}
		cmd = cmd.subcommand(args[1])
	}
	if cmd.firstKey == 0 && cmd.keysOf == nil {
		return nil, nil, errGetKeysNone
	}
	if !cmd.arityOK(len(args)) {
		return nil, nil, errGetKeysArity
	}
	keys := commandKeys(cmd, args)
	if len(keys) == 0 {
		if cmd.keysOf != nil && hasFlag(cmd.flags, "no_mandatory_keys") {
			return cmd, nil, nil
		}
		return nil, nil, errGetKeysArgs
	}
	return cmd, keyPositions(args, keys), nil
}

// keyPositions finds where each of keys, slices of args, is in args.
func keyPositions(args, keys [][]byte) []int {
	pos := make([]int, 0, len(keys))
	from := 1
	for _, k := range keys {
		for i := from; i < len(args); i++ {
			if len(args[i]) == len(k) && unsafe.SliceData(args[i]) == unsafe.SliceData(k) {
				pos = append(pos, i)
				from = i + 1
				break
			}
		}
	}
	return pos
}

func hasFlag(flags, f string) bool {
	for _, x := range strings.Fields(flags) {
		if x == f {
			return true
		}
	}
	return false
}

// keyFlags returns the flags of the key at argument pos of the request args for cmd: those
// its literal's KeyFlags gives where they depend on the request, else those of the last key
// specification that begins at or before pos.
func keyFlags(cmd *cmdEntry, args [][]byte, pos int) string {
	if cmd.keyFlags != nil {
		return cmd.keyFlags(args, pos)
	}
	specs := cmd.keySpecs
	if specs == nil {
		specs = keySpecs[cmd.name]
	}
	if len(specs) == 0 {
		if cmd.has(flagReadonly) {
			return "RO access"
		}
		return "RW access update"
	}
	flags := specs[0].Flags
	for _, sp := range specs {
		if sp.Begin <= pos {
			flags = sp.Flags
		}
	}
	return flags
}

// COMMAND GETKEYS command [arg ...]
func cmdCommandGetKeys(c *client, args [][]byte) error {
	_, pos, err := c.s.requestKeys(args[2:])
	if err != nil {
		return err
	}
	c.W.Array(len(pos))
	for _, p := range pos {
		c.W.Bulk(args[2+p])
	}
	return nil
}

// COMMAND GETKEYSANDFLAGS command [arg ...]
func cmdCommandGetKeysAndFlags(c *client, args [][]byte) error {
	cmd, pos, err := c.s.requestKeys(args[2:])
	if err != nil {
		return err
	}
	c.W.Array(len(pos))
	for _, p := range pos {
		c.W.Array(2)
		c.W.Bulk(args[2+p])
		flags := strings.Fields(keyFlags(cmd, args[2:], p))
		c.W.SetHeader(len(flags))
		for _, f := range flags {
			c.W.Simple(f)
		}
	}
	return nil
}
