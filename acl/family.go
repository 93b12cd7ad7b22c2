package acl

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/conffile"
)

// The ACL command as a family: ACL SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT,
// GENPASS, LOAD, SAVE and HELP (commands.go), over the Registry that Open makes. The server
// keeps the check at dispatch (a connection's Perms against the command it runs) and the
// Catalog it builds from its command table; what the commands need of it besides (the
// calling connection's user, closing the connections of users gone, requirepass) is Config.

// Config is what the ACL commands read of the server and tell it.
type Config struct {
	// File is aclfile: the users Open and ACL LOAD read and ACL SAVE writes; "" when none.
	File string
	// Users are the config file's user lines, each a name and its rules, applied by Open.
	Users [][]string
	// UserOf returns the user of the connection running c (ACL WHOAMI).
	UserOf func(c *command.Ctx) *User
	// CloseUsers closes the connections of the users gone (deleted, or not in a reloaded
	// ACL file), as Redis does; c's own closes once its reply is written.
	CloseUsers func(c *command.Ctx, gone []*User)
	// ClearRequirePass: the default user was left without a password (nopass), so CONFIG
	// GET requirepass says "" from now on.
	ClearRequirePass func()
}

// Family is the ACL commands, with the users they change.
type Family struct {
	cfg   Config
	users *Registry // nil until Open
	cat   *Catalog  // the commands, for ACL CAT
}

// NewFamily returns the family of cfg; its commands serve users once Open has made them.
func NewFamily(cfg Config) *Family { return &Family{cfg: cfg} }

// Open makes the users of the commands in cat: the default user with requirePass as its
// password ("": none, as Redis's requirepass), then the config's user lines, then the ACL
// file's. The commands serve the registry it returns from then on.
func (f *Family) Open(cat *Catalog, requirePass string) (*Registry, error) {
	f.users, f.cat = New(cat), cat
	if err := f.users.SetRequirePass(requirePass); err != nil {
		return nil, err
	}
	for _, line := range f.cfg.Users {
		if len(line) == 0 {
			return nil, errors.New("user: a name and rules expected")
		}
		if _, err := f.users.SetUser(line[0], line[1:]); err != nil {
			return nil, fmt.Errorf("user %s: %w", line[0], err)
		}
	}
	if f.cfg.File != "" {
		if _, err := f.loadFile(); err != nil {
			return nil, fmt.Errorf("aclfile: %w", err)
		}
	}
	return f.users, nil
}

// SetRequirePass makes pass the default user's only password, or none ("") as Redis's
// requirepass does.
func (r *Registry) SetRequirePass(pass string) error {
	rules := []string{"nopass"}
	if pass != "" {
		rules = []string{"resetpass", ">" + pass}
	}
	_, err := r.SetUser(DefaultUser, rules)
	return err
}

// errNoFile is ACL LOAD or SAVE without an aclfile, in Redis's words.
var errNoFile = errors.New("This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.")

// loadFile replaces the users with the ACL file's, all or none; it returns the users gone.
func (f *Family) loadFile() ([]*User, error) {
	b, err := os.ReadFile(f.cfg.File)
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
			return nil, fmt.Errorf("%s:%d: a line is \"user name rule...\"", f.cfg.File, n+1)
		}
		users = append(users, words[1:])
	}
	gone, err := f.users.Load(users)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.cfg.File, err)
	}
	return gone, nil
}

// saveFile writes the users to the ACL file, one "user" line each, as ACL LIST shows them.
func (f *Family) saveFile() error {
	var b strings.Builder
	for _, n := range f.users.Names() {
		if line, ok := f.users.Describe(n); ok {
			b.WriteString(line + "\n")
		}
	}
	return conffile.WriteAtomic(f.cfg.File, []byte(b.String()))
}

// syncRequirePass keeps CONFIG GET requirepass in step with ACL SETUSER default and ACL
// LOAD: the default user's first password is not known in clear, so a change that leaves
// it without nopass keeps the old value, and nopass empties it.
func (f *Family) syncRequirePass() {
	if f.users.DefaultOpen() {
		f.cfg.ClearRequirePass()
	}
}
