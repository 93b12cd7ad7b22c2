// Package acl keeps the users of Redis's ACL model in the part a rate limiter needs: users
// that are on or off, with SHA-256 password hashes, the commands and command categories they
// may run, the key patterns they may read or write and the pub/sub channels they may use.
//
// The server describes its commands once (a Catalog: names, parent commands, categories) and
// builds a Registry from it. ACL SETUSER and the config file's user lines become SetUser
// calls: a rule list is applied to a copy of the user and takes effect all at once, or not at
// all. A connection holds its *User; at each command it loads the user's Perms (one atomic
// load) and, unless Perms.All says everything is allowed, asks CanRun, CanKey and CanChannel.
// Perms are immutable: a change makes new ones, so that a check never locks.
//
// The ACL command is this package's command family (Family, commands.go): the server finds
// an ACL subcommand's literal among Family.Commands and calls its handler with the
// connection's command.Ctx; the handler changes or reads the Registry that Family.Open made
// and writes its reply to Ctx.W. What it needs of the server (the calling connection's
// user, closing the connections of users gone, requirepass) is Config. The family never
// imports the server.
package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/throttledhq/throttled/glob"
)

// DefaultUser is the user every connection starts as; requirepass is its password.
const DefaultUser = "default"

// Categories are the command categories, Redis's, @ratelimit and @policy, in ACL CAT's order. A
// category's bit in Command.Categories is 1 << its index here.
var Categories = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting", "ratelimit", "policy",
}

// Category returns the bit of the named category (without its @), or false.
func Category(name string) (uint64, bool) {
	for i, c := range Categories {
		if strings.EqualFold(c, name) {
			return 1 << i, true
		}
	}
	return 0, false
}

// Command is one entry of a Catalog.
type Command struct {
	// Name is the command's lower-case name; a subcommand's is "parent|sub".
	Name string
	// Parent is the index of the container command in the catalogue, or -1.
	Parent int
	// Categories has the bit of each category the command is in.
	Categories uint64
}

// Catalog is the commands the rules name; a command's id is its index.
type Catalog struct {
	cmds   []Command
	byName map[string]int
	subs   map[int][]int // a container's subcommands
}

// NewCatalog indexes cmds: ids are their positions.
func NewCatalog(cmds []Command) *Catalog {
	c := &Catalog{cmds: cmds, byName: make(map[string]int, len(cmds)), subs: make(map[int][]int)}
	for i, cmd := range cmds {
		c.byName[cmd.Name] = i
		if cmd.Parent >= 0 {
			c.subs[cmd.Parent] = append(c.subs[cmd.Parent], i)
		}
	}
	return c
}

// Len is the number of commands.
func (c *Catalog) Len() int { return len(c.cmds) }

// InCategory lists the names of the commands in the category with bit cat, sorted.
func (c *Catalog) InCategory(cat uint64) []string {
	var out []string
	for _, cmd := range c.cmds {
		if cmd.Categories&cat != 0 {
			out = append(out, cmd.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Key access a command needs, for Perms.CanKey.
const (
	Read  = 1
	Write = 2
)

// keyPattern is a ~pattern (read and write), %R~pattern or %W~pattern.
type keyPattern struct {
	pattern []byte
	access  int // Read, Write or both
}

// Perms are what a user may do, as the check at each command reads them. They never change:
// a new rule makes new Perms.
type Perms struct {
	// All means every command, key and channel: nothing more to check.
	All         bool
	allKeys     bool // ~* or allkeys: every key, read and write
	allChannels bool
	cmds        []uint64 // a bit per command id
	keys        []keyPattern
	channels    [][]byte
}

// CanRun reports whether the command with id may run.
func (p *Perms) CanRun(id int) bool {
	return id >= 0 && id/64 < len(p.cmds) && p.cmds[id/64]&(1<<(id%64)) != 0
}

// CanKey reports whether key may be accessed with access (Read, Write or both).
func (p *Perms) CanKey(key []byte, access int) bool {
	if p.allKeys {
		return true
	}
	for _, k := range p.keys {
		if k.access&access == access && glob.Match(k.pattern, key) {
			return true
		}
	}
	return false
}

// CanChannel reports whether ch may be published or subscribed to; a pattern subscription
// (literal) must name one of the user's channel patterns exactly, as in Redis.
func (p *Perms) CanChannel(ch []byte, literal bool) bool {
	if p.allChannels {
		return true
	}
	for _, pat := range p.channels {
		if literal && string(pat) == string(ch) || !literal && glob.Match(pat, ch) {
			return true
		}
	}
	return false
}

// spec is a user's rules as set, the source of its Perms and its description.
type spec struct {
	enabled     bool
	nopass      bool
	passwords   [][sha256.Size]byte
	cmds        []uint64
	cmdRules    []string // the command rules since the last +@all or -@all, for ACL LIST
	allKeys     bool
	keys        []keyPattern
	allChannels bool
	channels    [][]byte
}

func (sp *spec) clone() spec {
	c := *sp
	c.passwords = append([][sha256.Size]byte(nil), sp.passwords...)
	c.cmds = append([]uint64(nil), sp.cmds...)
	c.cmdRules = append([]string(nil), sp.cmdRules...)
	c.keys = append([]keyPattern(nil), sp.keys...)
	c.channels = append([][]byte(nil), sp.channels...)
	return c
}

// User is one ACL user. Its rules change under the Registry's lock; its Perms are read
// without.
type User struct {
	name  string
	perms atomic.Pointer[Perms]
	spec  spec // guarded by Registry.mu
}

// Name is the user's name.
func (u *User) Name() string { return u.name }

// Perms returns what the user may do now.
func (u *User) Perms() *Perms { return u.perms.Load() }

// Registry holds the users.
type Registry struct {
	cat         *Catalog
	mu          sync.Mutex // guards users and every User.spec
	users       map[string]*User
	defaultUser *User
	defaultOpen atomic.Bool // the default user is on and nopass: connections start authenticated
	// changes counts the changes of users (SetUser, DelUser, Load), so that a door that caches
	// a verified credential knows when it must verify it again.
	changes atomic.Uint64
}

// New returns a registry with the default user, which may do everything without a password.
func New(cat *Catalog) *Registry {
	r := &Registry{cat: cat, users: make(map[string]*User)}
	u := &User{name: DefaultUser, spec: spec{cmds: make([]uint64, (cat.Len()+63)/64)}}
	if err := r.applyLocked(&u.spec, []string{"on", "nopass", "~*", "&*", "+@all"}); err != nil {
		panic("acl: the default user's rules: " + err.Error())
	}
	u.perms.Store(u.spec.perms())
	r.users[DefaultUser] = u
	r.defaultUser = u
	r.defaultOpen.Store(true)
	return r
}

// Default returns the default user.
func (r *Registry) Default() *User { return r.defaultUser }

// DefaultOpen reports whether the default user is on and needs no password: then
// connections start authenticated, as in Redis.
func (r *Registry) DefaultOpen() bool { return r.defaultOpen.Load() }

// Changes returns a number that grows with every change of a user (its rules, its
// passwords, its removal): a credential verified while Changes was n holds while it is n.
func (r *Registry) Changes() uint64 { return r.changes.Load() }

// Get returns the user named name, or nil.
func (r *Registry) Get(name string) *User {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.users[name]
}

// Enabled returns the user named name when it is on, or nil: for a door that authenticated
// the client by other means than a password (a TLS certificate naming the user).
func (r *Registry) Enabled(name string) *User {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u := r.users[name]; u != nil && u.spec.enabled {
		return u
	}
	return nil
}

// Names returns the users' names, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.users))
	for n := range r.users {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ErrRule is a rule SetUser does not understand; the error names the rule.
var ErrRule = errors.New("acl: bad rule")

// RuleError is a rule that failed, with Redis's reason.
type RuleError struct {
	Rule   string
	Reason string
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("Error in ACL SETUSER modifier '%s': %s", e.Rule, e.Reason)
}

// Unwrap makes errors.Is(err, ErrRule) hold.
func (e *RuleError) Unwrap() error { return ErrRule }

// SetUser creates the user name if needed (off, no password, no permissions, as Redis's new
// users) and applies rules in order. Either every rule applies or none does. It returns the
// user.
func (r *Registry) SetUser(name string, rules []string) (*User, error) {
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		return nil, errors.New("Usernames can't contain spaces or null characters")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.users[name]
	var sp spec
	if u != nil {
		sp = u.spec.clone()
	} else {
		sp = spec{cmds: make([]uint64, (r.cat.Len()+63)/64), cmdRules: []string{"-@all"}}
	}
	if err := r.applyLocked(&sp, rules); err != nil {
		return nil, err
	}
	if u == nil {
		u = &User{name: name}
		r.users[name] = u
	}
	u.spec = sp
	u.perms.Store(sp.perms())
	r.changes.Add(1)
	if u == r.defaultUser {
		r.defaultOpen.Store(sp.enabled && sp.nopass)
	}
	return u, nil
}

// DelUser removes the users named; it returns those that existed. The default user cannot
// be removed.
func (r *Registry) DelUser(names []string) ([]*User, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if n == DefaultUser {
			return nil, errors.New("The 'default' user cannot be removed")
		}
	}
	var gone []*User
	for _, n := range names {
		if u := r.users[n]; u != nil {
			gone = append(gone, u)
			delete(r.users, n)
		}
	}
	r.changes.Add(1)
	return gone, nil
}

// Authenticate returns the user named name when it is on and pass is one of its passwords
// (or it has nopass); nil otherwise. Every stored hash is compared in constant time.
func (r *Registry) Authenticate(name, pass []byte) *User {
	sum := sha256.Sum256(pass)
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.users[string(name)]
	if u == nil || !u.spec.enabled {
		return nil
	}
	if u.spec.nopass {
		return u
	}
	ok := 0
	for _, h := range u.spec.passwords {
		ok |= subtle.ConstantTimeCompare(h[:], sum[:])
	}
	if ok == 1 {
		return u
	}
	return nil
}

// applyLocked applies rules to sp in order; it stops at the first bad one.
func (r *Registry) applyLocked(sp *spec, rules []string) error {
	for _, rule := range rules {
		if err := r.apply(sp, rule); err != nil {
			return &RuleError{Rule: rule, Reason: err.Error()}
		}
	}
	return nil
}

var errUnknownCommand = errors.New("Unknown command or category name in ACL")

// apply applies one rule.
func (r *Registry) apply(sp *spec, rule string) error {
	lower := strings.ToLower(rule)
	switch lower {
	case "on":
		sp.enabled = true
		return nil
	case "off":
		sp.enabled = false
		return nil
	case "nopass":
		sp.nopass, sp.passwords = true, nil
		return nil
	case "resetpass":
		sp.nopass, sp.passwords = false, nil
		return nil
	case "allkeys":
		sp.allKeys, sp.keys = true, nil
		return nil
	case "resetkeys":
		sp.allKeys, sp.keys = false, nil
		return nil
	case "allchannels":
		sp.allChannels, sp.channels = true, nil
		return nil
	case "resetchannels":
		sp.allChannels, sp.channels = false, nil
		return nil
	case "allcommands":
		return r.apply(sp, "+@all")
	case "nocommands":
		return r.apply(sp, "-@all")
	case "reset":
		for _, x := range []string{"resetpass", "resetkeys", "resetchannels", "off", "-@all"} {
			if err := r.apply(sp, x); err != nil {
				return err
			}
		}
		return nil
	case "sanitize-payload", "skip-sanitize-payload", "clearselectors":
		return nil // nothing to sanitize; no selectors
	}
	switch {
	case rule == "":
		return errors.New("Syntax error")
	case rule[0] == '>':
		h := sha256.Sum256([]byte(rule[1:]))
		sp.addPassword(h)
		return nil
	case rule[0] == '<':
		sp.removePassword(sha256.Sum256([]byte(rule[1:])))
		return nil
	case rule[0] == '#' || rule[0] == '!':
		h, err := parseHash(rule[1:])
		if err != nil {
			return err
		}
		if rule[0] == '#' {
			sp.addPassword(h)
		} else if !sp.removePassword(h) {
			return errors.New("The password you are trying to remove from the user does not exist")
		}
		return nil
	case (rule[0] == '~' || rule[0] == '%' || rule[0] == '&') && strings.ContainsAny(rule, " \t\r\n\x00"):
		return errors.New("Syntax error") // a pattern with blanks would not read back from ACL LIST
	case rule[0] == '~':
		return sp.addKeys(rule[1:], Read|Write)
	case rule[0] == '%':
		perm, pattern, ok := strings.Cut(rule[1:], "~")
		if !ok || perm == "" {
			return errors.New("Syntax error")
		}
		access := 0
		for _, ch := range strings.ToUpper(perm) {
			switch ch {
			case 'R':
				access |= Read
			case 'W':
				access |= Write
			default:
				return errors.New("Syntax error")
			}
		}
		return sp.addKeys(pattern, access)
	case rule[0] == '&':
		if rule == "&*" {
			sp.allChannels, sp.channels = true, nil
		} else if !sp.allChannels {
			sp.channels = append(sp.channels, []byte(rule[1:]))
		}
		return nil
	case rule[0] == '+' || rule[0] == '-':
		return r.applyCommand(sp, lower)
	}
	return errors.New("Syntax error")
}

func (sp *spec) addPassword(h [sha256.Size]byte) {
	sp.nopass = false
	for _, p := range sp.passwords {
		if p == h {
			return
		}
	}
	sp.passwords = append(sp.passwords, h)
}

func (sp *spec) removePassword(h [sha256.Size]byte) bool {
	for i, p := range sp.passwords {
		if p == h {
			sp.passwords = append(sp.passwords[:i], sp.passwords[i+1:]...)
			return true
		}
	}
	return false
}

func (sp *spec) addKeys(pattern string, access int) error {
	if pattern == "*" && access == Read|Write {
		sp.allKeys, sp.keys = true, nil
		return nil
	}
	if sp.allKeys {
		return errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	}
	sp.keys = append(sp.keys, keyPattern{pattern: []byte(pattern), access: access})
	return nil
}

func parseHash(h string) ([sha256.Size]byte, error) {
	var out [sha256.Size]byte
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != sha256.Size || strings.ToLower(h) != h {
		return out, errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	}
	copy(out[:], b)
	return out, nil
}

// applyCommand applies +cmd, -cmd, +cmd|sub, -cmd|sub, +@category or -@category.
func (r *Registry) applyCommand(sp *spec, rule string) error {
	allow := rule[0] == '+'
	name := rule[1:]
	set := func(id int) {
		if allow {
			sp.cmds[id/64] |= 1 << (id % 64)
		} else {
			sp.cmds[id/64] &^= 1 << (id % 64)
		}
	}
	if cat, ok := strings.CutPrefix(name, "@"); ok {
		if cat == "all" {
			for i := range sp.cmds {
				sp.cmds[i] = 0
			}
			if allow {
				for id := 0; id < r.cat.Len(); id++ {
					set(id)
				}
			}
			sp.cmdRules = []string{rule}
			return nil
		}
		bit, ok := Category(cat)
		if !ok {
			return errUnknownCommand
		}
		for id, cmd := range r.cat.cmds {
			if cmd.Categories&bit != 0 {
				set(id)
			}
		}
		sp.cmdRules = append(sp.cmdRules, rule)
		return nil
	}
	id, ok := r.cat.byName[name]
	if !ok {
		return errUnknownCommand
	}
	set(id)
	for _, sub := range r.cat.subs[id] {
		set(sub)
	}
	sp.cmdRules = append(sp.cmdRules, rule)
	return nil
}

// perms builds the Perms the rules in sp give.
func (sp *spec) perms() *Perms {
	p := &Perms{
		allKeys:     sp.allKeys,
		allChannels: sp.allChannels,
		cmds:        append([]uint64(nil), sp.cmds...),
		keys:        append([]keyPattern(nil), sp.keys...),
		channels:    append([][]byte(nil), sp.channels...),
	}
	all := len(sp.cmdRules) == 1 && sp.cmdRules[0] == "+@all"
	p.All = all && sp.allKeys && sp.allChannels
	return p
}

// Info is what ACL GETUSER shows of a user.
type Info struct {
	Flags     []string // on or off, nopass, sanitize-payload
	Passwords []string // the SHA-256 hashes, in hex
	Commands  string   // "+@all", "-@all +throttle ..."
	Keys      string   // "~*", "~tenant:* %R~shared:*", "" for none
	Channels  string   // "&*" or the patterns
}

// Info describes the user named name; false when there is none.
func (r *Registry) Info(name string) (Info, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.users[name]
	if u == nil {
		return Info{}, false
	}
	sp := &u.spec
	var in Info
	if sp.enabled {
		in.Flags = append(in.Flags, "on")
	} else {
		in.Flags = append(in.Flags, "off")
	}
	if sp.nopass {
		in.Flags = append(in.Flags, "nopass")
	}
	in.Flags = append(in.Flags, "sanitize-payload")
	for _, h := range sp.passwords {
		in.Passwords = append(in.Passwords, hex.EncodeToString(h[:]))
	}
	in.Commands = strings.Join(sp.cmdRules, " ")
	in.Keys = sp.describeKeys()
	in.Channels = sp.describeChannels()
	return in, true
}

func (sp *spec) describeKeys() string {
	if sp.allKeys {
		return "~*"
	}
	var parts []string
	for _, k := range sp.keys {
		switch k.access {
		case Read | Write:
			parts = append(parts, "~"+string(k.pattern))
		case Read:
			parts = append(parts, "%R~"+string(k.pattern))
		case Write:
			parts = append(parts, "%W~"+string(k.pattern))
		}
	}
	return strings.Join(parts, " ")
}

func (sp *spec) describeChannels() string {
	if sp.allChannels {
		return "&*"
	}
	var parts []string
	for _, ch := range sp.channels {
		parts = append(parts, "&"+string(ch))
	}
	return strings.Join(parts, " ")
}

// Describe is the user's line in ACL LIST and in a config file: "user name on #hash ~* &* +@all".
// The rules read back give the same user.
func (r *Registry) Describe(name string) (string, bool) {
	in, ok := r.Info(name)
	if !ok {
		return "", false
	}
	parts := []string{"user", name}
	parts = append(parts, in.Flags...)
	for _, h := range in.Passwords {
		parts = append(parts, "#"+h)
	}
	if in.Keys != "" {
		parts = append(parts, in.Keys)
	} else {
		parts = append(parts, "resetkeys")
	}
	if in.Channels != "" {
		parts = append(parts, in.Channels)
	} else {
		parts = append(parts, "resetchannels")
	}
	parts = append(parts, in.Commands)
	return strings.Join(parts, " "), true
}

// Load replaces every user with those of users, each a name and its rules, as ACL LOAD does
// from an ACL file: the default user, when not among them, gets its defaults (on, nopass,
// every key, channel and command). It is all or nothing: a bad rule or a name given twice
// changes no user. Users that stay keep their *User, so that their connections follow the
// new rules; it returns the users that are gone, whose connections should close.
func (r *Registry) Load(users [][]string) ([]*User, error) {
	specs := make(map[string]spec, len(users))
	var order []string
	for i, line := range users {
		if len(line) == 0 || line[0] == "" || strings.ContainsAny(line[0], " \t\r\n") {
			return nil, fmt.Errorf("line %d: a user name expected", i+1)
		}
		name := line[0]
		if _, dup := specs[name]; dup {
			return nil, fmt.Errorf("line %d: duplicate user '%s'", i+1, name)
		}
		sp := spec{cmds: make([]uint64, (r.cat.Len()+63)/64), cmdRules: []string{"-@all"}}
		if err := r.applyLocked(&sp, line[1:]); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		specs[name] = sp
		order = append(order, name)
	}
	if _, ok := specs[DefaultUser]; !ok {
		sp := spec{cmds: make([]uint64, (r.cat.Len()+63)/64)}
		if err := r.applyLocked(&sp, []string{"on", "nopass", "~*", "&*", "+@all"}); err != nil {
			return nil, err
		}
		specs[DefaultUser] = sp
		order = append(order, DefaultUser)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []*User
	for name, u := range r.users {
		if _, stays := specs[name]; !stays {
			gone = append(gone, u)
			delete(r.users, name)
		}
	}
	for _, name := range order {
		u := r.users[name]
		if u == nil {
			u = &User{name: name}
			r.users[name] = u
		}
		u.spec = specs[name]
		u.perms.Store(u.spec.perms())
	}
	d := r.defaultUser.spec
	r.defaultOpen.Store(d.enabled && d.nopass)
	r.changes.Add(1)
	return gone, nil
}
