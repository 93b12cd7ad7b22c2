package server

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/command"
)

// redisVersion is the Redis version whose behaviour the server follows; clients read it from HELLO and INFO.
const redisVersion = "7.2.0"

func connectionCommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "ping", arity: -1, flags: "fast stale", group: "connection", since: "1.0.0", summary: "Returns the server's liveliness response.", syntax: "[message]", handler: cmdPing, whileSubscribed: true},
		{name: "echo", arity: 2, flags: "fast stale", group: "connection", since: "1.0.0", summary: "Returns the given string.", syntax: "message", handler: cmdEcho},
		{name: "hello", allowBusy: true, noScript: true, arity: -1, flags: "no-auth fast stale", group: "connection", since: "6.0.0", summary: "Handshakes with the server.", syntax: "[protover [AUTH username password] [SETNAME clientname]]", handler: cmdHello},
		{name: "auth", allowBusy: true, noScript: true, arity: -2, flags: "no-auth fast stale", group: "connection", since: "1.0.0", summary: "Authenticates the connection.", syntax: "[username] password", handler: cmdAuth},
		{name: "select", arity: 2, flags: "fast stale", group: "connection", since: "1.0.0", summary: "Changes the selected database (only 0 exists).", syntax: "index", handler: cmdSelect},
		{name: "quit", allowBusy: true, noScript: true, arity: -1, flags: "no-auth fast stale", bits: flagNoQueue, group: "connection", since: "1.0.0", summary: "Closes the connection.", handler: cmdQuit, whileSubscribed: true},
		{name: "reset", allowBusy: true, noScript: true, arity: 1, flags: "no-auth fast stale", bits: flagNoQueue, group: "connection", since: "6.2.0", summary: "Resets the connection.", handler: cmdReset, whileSubscribed: true},
		{name: "client", noScript: true, arity: -2, flags: "stale", group: "connection", since: "2.4.0", summary: "A container for client connection commands."},
	}
}

func clientSubcommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "id", arity: 2, flags: "fast stale", group: "connection", since: "5.0.0", summary: "Returns the unique client ID of the connection.", handler: cmdClientID},
		{name: "setname", arity: 3, flags: "fast stale", group: "connection", since: "2.6.9", summary: "Sets the connection name.", syntax: "connection-name", handler: cmdClientSetName},
		{name: "getname", arity: 2, flags: "fast stale", group: "connection", since: "2.6.9", summary: "Returns the name of the connection.", handler: cmdClientGetName},
		{name: "setinfo", arity: 4, flags: "fast stale", group: "connection", since: "7.2.0", summary: "Sets information specific to the client or connection.", syntax: "LIB-NAME|LIB-VER value", handler: cmdClientSetInfo},
		{name: "info", arity: 2, flags: "stale", group: "connection", since: "6.2.0", summary: "Returns information about the connection.", handler: cmdClientInfo},
		{name: "list", acl: "dangerous", arity: -2, flags: "admin stale", group: "connection", since: "2.4.0", summary: "Lists open connections.", syntax: "[TYPE client-type] [ID client-id ...]", handler: cmdClientList},
		{name: "kill", acl: "dangerous", arity: -3, flags: "admin stale", group: "connection", since: "2.4.0", summary: "Terminates open connections.", syntax: "[ID client-id] [TYPE client-type] [ADDR ip:port] [LADDR ip:port] [USER username] [SKIPME yes|no] [MAXAGE maxage]", handler: cmdClientKill},
		{name: "help", arity: 2, flags: "fast stale", group: "connection", since: "5.0.0", summary: "Returns helpful text about the different subcommands.", handler: cmdClientHelp},
	}
}

// PING [message]
func cmdPing(c *client, args [][]byte) error {
	if len(args) > 2 {
		return errors.New("wrong number of arguments for 'ping' command")
	}
	if c.W.Proto == 2 && c.subscribed() {
		// A RESP2 subscriber tells replies from messages by their shape: Redis answers an array.
		c.W.Array(2)
		c.W.BulkString("pong")
		if len(args) == 2 {
			c.W.Bulk(args[1])
		} else {
			c.W.BulkString("")
		}
		return nil
	}
	if len(args) == 2 {
		c.W.Bulk(args[1])
		return nil
	}
	c.W.Simple("PONG")
	return nil
}

// ECHO message
func cmdEcho(c *client, args [][]byte) error {
	c.W.Bulk(args[1])
	return nil
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *client, args [][]byte) error {
	proto := c.W.Proto
	if len(args) > 1 {
		v, err := strconv.Atoi(string(args[1]))
		if err != nil {
			return errors.New("Protocol version is not an integer or out of range")
		}
		if v != 2 && v != 3 {
			return errNoProto
		}
		proto = v
	}
	var name []byte
	setName := false
	for i := 2; i < len(args); i++ {
		switch opt := strings.ToLower(string(args[i])); {
		case opt == "auth" && i+2 < len(args):
			u, err := c.s.authenticate(args[i+1], args[i+2])
			if err != nil {
				return err
			}
			c.user.Store(u)
			c.setAuthed(true)
			i += 2
		case opt == "setname" && i+1 < len(args):
			if err := validClientName(args[i+1]); err != nil {
				return err
			}
			name, setName = args[i+1], true
			i++
		default:
			return errors.New("Syntax error in HELLO option '" + command.Truncate(args[i], 128) + "'")
		}
	}
	if !c.authed && c.s.passwordSet() {
		return &command.Error{Code: "NOAUTH", Msg: "HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"}
	}
	c.mu.Lock()
	if setName {
		c.name = string(name)
	}
	c.resp = proto
	c.mu.Unlock()
	c.W.Proto = proto
	c.W.Map(7)
	c.W.BulkString("server")
	c.W.BulkString("redis")
	c.W.BulkString("version")
	c.W.BulkString(redisVersion)
	c.W.BulkString("proto")
	c.W.Int(int64(proto))
	c.W.BulkString("id")
	c.W.Int(c.id)
	c.W.BulkString("mode")
	c.W.BulkString("standalone")
	c.W.BulkString("role")
	if c.s.isReplica.Load() {
		c.W.BulkString("replica")
	} else {
		c.W.BulkString("master")
	}
	c.W.BulkString("modules")
	c.W.Array(0)
	return nil
}

// AUTH [username] password
func cmdAuth(c *client, args [][]byte) error {
	var user, pass []byte
	switch len(args) {
	case 2:
		user, pass = []byte("default"), args[1]
	case 3:
		user, pass = args[1], args[2]
	default:
		return command.ErrSyntax
	}
	if !c.s.passwordSet() && len(args) == 2 {
		return errors.New("AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	}
	u, err := c.s.authenticate(user, pass)
	if err != nil {
		return err
	}
	c.user.Store(u)
	c.setAuthed(true)
	c.W.OK()
	return nil
}

// authenticate checks a username and password against the ACL users (requirepass is the
// default user's password) and returns the user.
func (s *Server) authenticate(user, pass []byte) (*acl.User, error) {
	if u := s.acl.Authenticate(user, pass); u != nil {
		return u, nil
	}
	s.log.Warn("authentication failed", "user", command.Truncate(user, 128))
	return nil, errWrongPass
}

// SELECT index
func cmdSelect(c *client, args [][]byte) error {
	n, err := strconv.Atoi(string(args[1]))
	if err != nil {
		return command.ErrNotInteger
	}
	if n != 0 {
		return errors.New("DB index is out of range")
	}
	c.W.OK()
	return nil
}

// QUIT
func cmdQuit(c *client, args [][]byte) error {
	c.W.OK()
	c.closing = true
	return nil
}

// RESET
func cmdReset(c *client, args [][]byte) error {
	c.endMulti()
	c.unwatchAll()
	c.s.unmonitor(c)
	if c.sub != nil {
		c.sub.Close()
		c.setPubSubKind()
	}
	c.W.Proto = 2
	c.mu.Lock()
	c.name, c.resp = "", 2
	c.mu.Unlock()
	c.user.Store(c.s.acl.Default())
	c.setAuthed(!c.s.passwordSet())
	c.W.Simple("RESET")
	return nil
}

// CLIENT ID
func cmdClientID(c *client, args [][]byte) error {
	c.W.Int(c.id)
	return nil
}

// CLIENT SETNAME connection-name
func cmdClientSetName(c *client, args [][]byte) error {
	if err := validClientName(args[2]); err != nil {
		return err
	}
	c.mu.Lock()
	c.name = string(args[2])
	c.mu.Unlock()
	c.W.OK()
	return nil
}

func validClientName(name []byte) error {
	for _, ch := range name {
		if ch <= ' ' || ch > '~' {
			return errors.New("Client names cannot contain spaces, newlines or special characters.")
		}
	}
	return nil
}

// CLIENT GETNAME
func cmdClientGetName(c *client, args [][]byte) error {
	c.mu.Lock()
	name := c.name
	c.mu.Unlock()
	if name == "" {
		c.W.Null()
		return nil
	}
	c.W.BulkString(name)
	return nil
}

// CLIENT SETINFO LIB-NAME|LIB-VER value
func cmdClientSetInfo(c *client, args [][]byte) error {
	if err := validClientName(args[3]); err != nil {
		return errors.New(strings.Replace(err.Error(), "Client names", "lib-name or lib-ver", 1))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch strings.ToLower(string(args[2])) {
	case "lib-name":
		c.libName = string(args[3])
	case "lib-ver":
		c.libVer = string(args[3])
	default:
		return errors.New("Unrecognized option '" + command.Truncate(args[2], 128) + "'")
	}
	c.W.OK()
	return nil
}

// CLIENT INFO
func cmdClientInfo(c *client, args [][]byte) error {
	c.W.Verbatim(c.info(time.Now(), c, args) + "\n")
	return nil
}

// CLIENT LIST [TYPE normal|master|replica|pubsub] | CLIENT LIST [ID client-id ...]
func cmdClientList(c *client, args [][]byte) error {
	var ids map[int64]bool
	kind := anyKind
	switch {
	case len(args) == 2:
	case len(args) == 4 && strings.EqualFold(string(args[2]), "type"):
		k, err := parseClientKind(args[3])
		if err != nil {
			return err
		}
		kind = k
	case len(args) > 3 && strings.EqualFold(string(args[2]), "id"):
		ids = make(map[int64]bool)
		for _, a := range args[3:] {
			id, err := strconv.ParseInt(string(a), 10, 64)
			if err != nil {
				return errors.New("Invalid client ID")
			}
			ids[id] = true
		}
	default:
		return command.ErrSyntax
	}
	now := time.Now()
	var b strings.Builder
	for _, cl := range c.s.clientsByID() {
		if (ids == nil || ids[cl.id]) && (kind == anyKind || clientKind(cl.kind.Load()) == kind) {
			b.WriteString(cl.info(now, c, args))
			b.WriteByte('\n')
		}
	}
	c.W.Verbatim(b.String())
	return nil
}

// CLIENT LIST TYPE and CLIENT KILL TYPE name kinds besides the clients': any, and the link
// of a replica to its primary, which is not among the clients.
const (
	anyKind    clientKind = -1
	masterKind clientKind = -2
)

// parseClientKind reads a client type as Redis names them: normal, master, replica (or
// slave), pubsub.
func parseClientKind(name []byte) (clientKind, error) {
	switch strings.ToLower(string(name)) {
	case "normal":
		return kindNormal, nil
	case "pubsub":
		return kindPubSub, nil
	case "replica", "slave":
		return kindReplica, nil
	case "master":
		return masterKind, nil
	}
	return 0, errors.New("Unknown client type '" + command.Truncate(name, 128) + "'")
}

// clientsByID returns the connected clients, oldest first, but for those CLIENT KILL hung up.
func (s *Server) clientsByID() []*client {
	s.mu.Lock()
	out := make([]*client, 0, len(s.clients))
	for _, cl := range s.clients {
		if !cl.killed.Load() { // its loop has yet to see the hang-up and let it go
			out = append(out, cl)
		}
	}
	s.mu.Unlock()
	sortClients(out)
	return out
}

func sortClients(cl []*client) {
	for i := 1; i < len(cl); i++ {
		for j := i; j > 0 && cl[j].id < cl[j-1].id; j-- {
			cl[j], cl[j-1] = cl[j-1], cl[j]
		}
	}
}

// CLIENT KILL addr:port | CLIENT KILL [ID id] [TYPE normal|master|replica|pubsub] [ADDR addr]
// [LADDR addr] [USER name] [SKIPME yes|no] [MAXAGE seconds] ...
func cmdClientKill(c *client, args [][]byte) error {
	if len(args) == 3 {
		addr := string(args[2])
		for _, cl := range c.s.clientsByID() {
			if cl.raddr == addr {
				cl.kill(c)
				c.W.OK()
				return nil
			}
		}
		return errors.New("No such client")
	}
	if len(args)%2 != 0 {
		return command.ErrSyntax
	}
	var id, maxAge int64
	var addr, laddr, user string
	kind := anyKind
	skipMe := true
	for i := 2; i < len(args); i += 2 {
		v := string(args[i+1])
		switch strings.ToLower(string(args[i])) {
		case "id":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return errors.New("client-id should be greater than 0")
			}
			id = n
		case "type":
			k, err := parseClientKind(args[i+1])
			if err != nil {
				return err
			}
			kind = k
		case "addr":
			addr = v
		case "laddr":
			laddr = v
		case "user":
			if c.s.acl.Get(v) == nil {
				return errors.New("No such user '" + v + "'")
			}
			user = v
		case "skipme":
			switch strings.ToLower(v) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				return command.ErrSyntax
			}
		case "maxage":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return command.ErrNotInteger
			}
			maxAge = n
		default:
			return command.ErrSyntax
		}
	}
	if kind == masterKind {
		// The link to the primary is no client here: only TYPE and SKIPME can select it.
		killed := 0
		if id == 0 && addr == "" && laddr == "" && (user == "" || user == acl.DefaultUser) && maxAge == 0 {
			killed = c.s.dropMasterLink()
		}
		c.W.Int(int64(killed))
		return nil
	}
	now := time.Now()
	killed := 0
	for _, cl := range c.s.clientsByID() {
		switch {
		case id != 0 && cl.id != id,
			kind != anyKind && clientKind(cl.kind.Load()) != kind,
			addr != "" && cl.raddr != addr,
			laddr != "" && cl.laddr != laddr,
			user != "" && user != cl.user.Load().Name(),
			maxAge != 0 && int64(now.Sub(cl.created)/time.Second) < maxAge,
			skipMe && cl == c:
			continue
		}
		cl.kill(c)
		killed++
	}
	c.W.Int(int64(killed))
	return nil
}

// kill closes cl's connection: whatever serves it sees the closed socket and lets it go.
// A client killing itself gets its reply first.
func (cl *client) kill(by *client) {
	if cl == by {
		cl.closing = true
		return
	}
	cl.killed.Store(true)
	cl.hangup()
}

// CLIENT HELP
func cmdClientHelp(c *client, args [][]byte) error {
	c.WriteHelp("CLIENT", []string{
		"GETNAME", "    Return the name of the current connection.",
		"ID", "    Return the ID of the current connection.",
		"INFO", "    Return information about the current client connection.",
		"KILL <ip:port>", "    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]", "    Kill connections. Options are ID, TYPE (NORMAL|MASTER|REPLICA|PUBSUB), ADDR, LADDR, USER, SKIPME, MAXAGE.",
		"LIST [TYPE <type>] [ID <id> [<id> ...]]", "    Return information about client connections.",
		"UNPAUSE", "    Stop the current client pause, resuming traffic.",
		"PAUSE <timeout> [WRITE|ALL]", "    Suspend all, or just write, clients for <timeout> milliseconds.",
		"REPLY (ON|OFF|SKIP)", "    Control the replies sent to the current connection.",
		"SETINFO <LIB-NAME|LIB-VER> <value>", "    Set client library name or version.",
		"SETNAME <name>", "    Assign the name <name> to the current connection.",
		"NO-EVICT (ON|OFF)", "    Protect current client connection from eviction.",
	})
	return nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
