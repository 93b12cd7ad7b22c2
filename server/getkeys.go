package server

import (
	"errors"
	"strings"
	"unsafe"
)

// COMMAND GETKEYS and GETKEYSANDFLAGS: the keys of a request, and the flags Redis's key
// specifications give each (how the command uses the key: RO, RW, OW or RM, then access,
// update, insert or delete).

// keySpec is one key specification of a command: the keys from argument begin on (a
// command with keys in several places has one per place), and their flags.
type keySpec struct {
	begin int
	flags string
}

// keySpecs are the key specifications of Redis 7's commands that throttled has, as
// redis-server's COMMAND INFO gives them. A command not listed (the rate-limit verbs)
// reads and writes its keys: RW access update, or RO access for a read-only one.
var keySpecs = map[string][]keySpec{
	"append":           {{begin: 1, flags: "RW insert"}},
	"bitcount":         {{begin: 1, flags: "RO access"}},
	"copy":             {{begin: 1, flags: "RO access"}, {begin: 2, flags: "OW update"}},
	"decr":             {{begin: 1, flags: "RW access update"}},
	"decrby":           {{begin: 1, flags: "RW access update"}},
	"del":              {{begin: 1, flags: "RM delete"}},
	"dump":             {{begin: 1, flags: "RO access"}},
	"eval":             {{begin: 2, flags: "RW access update"}},
	"eval_ro":          {{begin: 2, flags: "RO access"}},
	"evalsha":          {{begin: 2, flags: "RW access update"}},
	"evalsha_ro":       {{begin: 2, flags: "RO access"}},
	"exists":           {{begin: 1, flags: "RO"}},
	"expire":           {{begin: 1, flags: "RW update"}},
	"expireat":         {{begin: 1, flags: "RW update"}},
	"expiretime":       {{begin: 1, flags: "RO access"}},
	"fcall":            {{begin: 2, flags: "RW access update"}},
	"fcall_ro":         {{begin: 2, flags: "RO access"}},
	"get":              {{begin: 1, flags: "RO access"}},
	"getbit":           {{begin: 1, flags: "RO access"}},
	"getdel":           {{begin: 1, flags: "RW access delete"}},
	"getex":            {{begin: 1, flags: "RW access update"}},
	"getrange":         {{begin: 1, flags: "RO access"}},
	"getset":           {{begin: 1, flags: "RW access update"}},
	"hdel":             {{begin: 1, flags: "RW delete"}},
	"hexists":          {{begin: 1, flags: "RO"}},
	"hget":             {{begin: 1, flags: "RO access"}},
	"hgetall":          {{begin: 1, flags: "RO access"}},
	"hincrby":          {{begin: 1, flags: "RW access update"}},
	"hincrbyfloat":     {{begin: 1, flags: "RW access update"}},
	"hkeys":            {{begin: 1, flags: "RO access"}},
	"hlen":             {{begin: 1, flags: "RO"}},
	"hmget":            {{begin: 1, flags: "RO access"}},
	"hmset":            {{begin: 1, flags: "RW update"}},
	"hrandfield":       {{begin: 1, flags: "RO access"}},
	"hscan":            {{begin: 1, flags: "RO access"}},
	"hset":             {{begin: 1, flags: "RW update"}},
	"hsetnx":           {{begin: 1, flags: "RW insert"}},
	"hstrlen":          {{begin: 1, flags: "RO"}},
	"hvals":            {{begin: 1, flags: "RO access"}},
	"incr":             {{begin: 1, flags: "RW access update"}},
	"incrby":           {{begin: 1, flags: "RW access update"}},
	"incrbyfloat":      {{begin: 1, flags: "RW access update"}},
	"lindex":           {{begin: 1, flags: "RO access"}},
	"linsert":          {{begin: 1, flags: "RW insert"}},
	"llen":             {{begin: 1, flags: "RO"}},
	"lmove":            {{begin: 1, flags: "RW access delete"}, {begin: 2, flags: "RW insert"}},
	"lpop":             {{begin: 1, flags: "RW access delete"}},
	"lpos":             {{begin: 1, flags: "RO access"}},
	"lpush":            {{begin: 1, flags: "RW insert"}},
	"lpushx":           {{begin: 1, flags: "RW insert"}},
	"lrange":           {{begin: 1, flags: "RO access"}},
	"lrem":             {{begin: 1, flags: "RW delete"}},
	"lset":             {{begin: 1, flags: "RW update"}},
	"ltrim":            {{begin: 1, flags: "RW delete"}},
	"mget":             {{begin: 1, flags: "RO access"}},
	"mset":             {{begin: 1, flags: "OW update"}},
	"msetnx":           {{begin: 1, flags: "OW insert"}},
	"object|encoding":  {{begin: 2, flags: "RO"}},
	"object|freq":      {{begin: 2, flags: "RO"}},
	"object|idletime":  {{begin: 2, flags: "RO"}},
	"object|refcount":  {{begin: 2, flags: "RO"}},
	"persist":          {{begin: 1, flags: "RW update"}},
	"pexpire":          {{begin: 1, flags: "RW update"}},
	"pexpireat":        {{begin: 1, flags: "RW update"}},
	"pexpiretime":      {{begin: 1, flags: "RO access"}},
	"psetex":           {{begin: 1, flags: "OW update"}},
	"pttl":             {{begin: 1, flags: "RO access"}},
	"rename":           {{begin: 1, flags: "RW access delete"}, {begin: 2, flags: "OW update"}},
	"renamenx":         {{begin: 1, flags: "RW access delete"}, {begin: 2, flags: "OW insert"}},
	"restore":          {{begin: 1, flags: "OW update"}},
	"rpop":             {{begin: 1, flags: "RW access delete"}},
	"rpoplpush":        {{begin: 1, flags: "RW access delete"}, {begin: 2, flags: "RW insert"}},
	"rpush":            {{begin: 1, flags: "RW insert"}},
	"rpushx":           {{begin: 1, flags: "RW insert"}},
	"sadd":             {{begin: 1, flags: "RW insert"}},
	"scard":            {{begin: 1, flags: "RO"}},
	"sdiff":            {{begin: 1, flags: "RO access"}},
	"sdiffstore":       {{begin: 1, flags: "OW update"}, {begin: 2, flags: "RO access"}},
	"set":              {{begin: 1, flags: "RW access update variable_flags"}},
	"setbit":           {{begin: 1, flags: "RW access update"}},
	"setex":            {{begin: 1, flags: "OW update"}},
	"setnx":            {{begin: 1, flags: "OW insert"}},
	"setrange":         {{begin: 1, flags: "RW update"}},
	"sinter":           {{begin: 1, flags: "RO access"}},
	"sintercard":       {{begin: 1, flags: "RO access"}},
	"sinterstore":      {{begin: 1, flags: "RW update"}, {begin: 2, flags: "RO access"}},
	"sismember":        {{begin: 1, flags: "RO"}},
	"smembers":         {{begin: 1, flags: "RO access"}},
	"smismember":       {{begin: 1, flags: "RO access"}},
	"smove":            {{begin: 1, flags: "RW access delete"}, {begin: 2, flags: "RW insert"}},
	"spop":             {{begin: 1, flags: "RW access delete"}},
	"srandmember":      {{begin: 1, flags: "RO access"}},
	"srem":             {{begin: 1, flags: "RW delete"}},
	"sscan":            {{begin: 1, flags: "RO access"}},
	"strlen":           {{begin: 1, flags: "RO"}},
	"substr":           {{begin: 1, flags: "RO access"}},
	"sunion":           {{begin: 1, flags: "RO access"}},
	"sunionstore":      {{begin: 1, flags: "OW update"}, {begin: 2, flags: "RO access"}},
	"touch":            {{begin: 1, flags: "RO"}},
	"ttl":              {{begin: 1, flags: "RO access"}},
	"type":             {{begin: 1, flags: "RO"}},
	"unlink":           {{begin: 1, flags: "RM delete"}},
	"watch":            {{begin: 1, flags: "RO"}},
	"zadd":             {{begin: 1, flags: "RW update"}},
	"zcard":            {{begin: 1, flags: "RO"}},
	"zcount":           {{begin: 1, flags: "RO access"}},
	"zincrby":          {{begin: 1, flags: "RW access update"}},
	"zlexcount":        {{begin: 1, flags: "RO access"}},
	"zmscore":          {{begin: 1, flags: "RO access"}},
	"zpopmax":          {{begin: 1, flags: "RW access delete"}},
	"zpopmin":          {{begin: 1, flags: "RW access delete"}},
	"zrange":           {{begin: 1, flags: "RO access"}},
	"zrangebylex":      {{begin: 1, flags: "RO access"}},
	"zrangebyscore":    {{begin: 1, flags: "RO access"}},
	"zrank":            {{begin: 1, flags: "RO access"}},
	"zrem":             {{begin: 1, flags: "RW delete"}},
	"zremrangebylex":   {{begin: 1, flags: "RW delete"}},
	"zremrangebyrank":  {{begin: 1, flags: "RW delete"}},
	"zremrangebyscore": {{begin: 1, flags: "RW delete"}},
	"zrevrange":        {{begin: 1, flags: "RO access"}},
	"zrevrangebylex":   {{begin: 1, flags: "RO access"}},
	"zrevrangebyscore": {{begin: 1, flags: "RO access"}},
	"zrevrank":         {{begin: 1, flags: "RO access"}},
	"zscan":            {{begin: 1, flags: "RO access"}},
	"zscore":           {{begin: 1, flags: "RO access"}},
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
func (s *Server) requestKeys(args [][]byte) (*command, []int, error) {
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
// of the last key specification that begins at or before pos. SET's depend on the request,
// as Redis's variable_flags say: it reads the key only with GET.
func keyFlags(cmd *command, args [][]byte, pos int) string {
	if cmd.name == "set" {
		for _, a := range args[3:] {
			if strings.EqualFold(string(a), "get") {
				return "RW access update"
			}
		}
		return "OW update"
	}
	specs := keySpecs[cmd.name]
	if len(specs) == 0 {
		if cmd.has(flagReadonly) {
			return "RO access"
		}
		return "RW access update"
	}
	flags := specs[0].flags
	for _, sp := range specs {
		if sp.begin <= pos {
			flags = sp.flags
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
	c.w.Array(len(pos))
	for _, p := range pos {
		c.w.Bulk(args[2+p])
	}
	return nil
}

// COMMAND GETKEYSANDFLAGS command [arg ...]
func cmdCommandGetKeysAndFlags(c *client, args [][]byte) error {
	cmd, pos, err := c.s.requestKeys(args[2:])
	if err != nil {
		return err
	}
	c.w.Array(len(pos))
	for _, p := range pos {
		c.w.Array(2)
		c.w.Bulk(args[2+p])
		flags := strings.Fields(keyFlags(cmd, args[2:], p))
		c.w.SetHeader(len(flags))
		for _, f := range flags {
			c.w.Simple(f)
		}
	}
	return nil
}
