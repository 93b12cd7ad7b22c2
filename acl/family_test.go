package acl

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/resp"
)

// testFamily is the ACL family over testCatalog, with Config hooks that record what the
// commands tell the server.
type testFamily struct {
	*Family
	users   *Registry
	me      *User    // the calling connection's user (UserOf)
	closed  []string // the users whose connections CloseUsers closed
	cleared int      // ClearRequirePass's calls
}

func newTestFamily(t *testing.T, cfg Config, requirePass string) *testFamily {
	tf := &testFamily{}
	cfg.UserOf = func(*command.Ctx) *User { return tf.me }
	cfg.CloseUsers = func(_ *command.Ctx, gone []*User) {
		for _, u := range gone {
			tf.closed = append(tf.closed, u.Name())
		}
	}
	cfg.ClearRequirePass = func() { tf.cleared++ }
	tf.Family = NewFamily(cfg)
	r, err := tf.Open(testCatalog(), requirePass)
	require.NoError(t, err)
	tf.users, tf.me = r, r.Default()
	return tf
}

// run runs the ACL subcommand of args and returns its reply, or its error's text.
func (tf *testFamily) run(t *testing.T, args ...string) string {
	var sub *command.Spec
	for _, sp := range tf.Commands()[0].Subcommands {
		if sp.Name == args[0] {
			sub = sp
		}
	}
	require.NotNil(t, sub, args[0])
	in := [][]byte{[]byte("ACL")}
	for _, a := range args {
		in = append(in, []byte(a))
	}
	c := &command.Ctx{W: resp.Writer{Proto: 2}}
	if err := sub.Handler(c, in); err != nil {
		return "-" + command.ErrorText(err)
	}
	return string(c.W.B)
}

func TestFamilyOpen(t *testing.T) {
	tf := newTestFamily(t, Config{Users: [][]string{{"app", "on", ">pw", "+get", "~app:*"}}}, "s3cret")
	require.False(t, tf.users.DefaultOpen())
	require.NotNil(t, tf.users.Authenticate([]byte("default"), []byte("s3cret")))
	require.NotNil(t, tf.users.Authenticate([]byte("app"), []byte("pw")))

	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{"empty user line", Config{Users: [][]string{{}}}, "user: a name and rules expected"},
		{"bad rule", Config{Users: [][]string{{"app", "bogus"}}}, "user app: Error in ACL SETUSER modifier 'bogus': Syntax error"},
		{"missing file", Config{File: filepath.Join(t.TempDir(), "none.acl")}, "aclfile: open "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewFamily(tc.cfg).Open(testCatalog(), "")
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestFamilyHooks(t *testing.T) {
	tf := newTestFamily(t, Config{}, "s3cret")
	require.Equal(t, "+OK\r\n", tf.run(t, "setuser", "app", "on", "nopass"))
	require.Equal(t, 0, tf.cleared, "a user but the default leaves requirepass alone")
	require.Equal(t, "+OK\r\n", tf.run(t, "setuser", "default", ">another"))
	require.Equal(t, 0, tf.cleared, "the default user still has a password")
	require.Equal(t, "+OK\r\n", tf.run(t, "setuser", "default", "nopass"))
	require.Equal(t, 1, tf.cleared)

	require.Equal(t, ":0\r\n", tf.run(t, "deluser", "nobody"))
	require.Empty(t, tf.closed, "no user gone, no connection closed")
	require.Equal(t, ":1\r\n", tf.run(t, "deluser", "app", "nobody"))
	require.Equal(t, []string{"app"}, tf.closed)
	require.Equal(t, "-ERR The 'default' user cannot be removed", tf.run(t, "deluser", "default"))

	tf.me = tf.users.Get("default")
	require.Equal(t, "$7\r\ndefault\r\n", tf.run(t, "whoami"))
}

func TestFamilyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte("user default on nopass ~* &* +@all\nuser app on nopass ~app:* +get\n"), 0o600))
	tf := newTestFamily(t, Config{File: path}, "")
	require.NotNil(t, tf.users.Get("app"))

	require.Equal(t, "+OK\r\n", tf.run(t, "setuser", "other", "on", "nopass"))
	require.Equal(t, "+OK\r\n", tf.run(t, "load"))
	require.Equal(t, []string{"other"}, tf.closed, "a user not in the file is gone")
	require.Equal(t, 1, tf.cleared)

	require.Equal(t, "+OK\r\n", tf.run(t, "setuser", "app", "off"))
	require.Equal(t, "+OK\r\n", tf.run(t, "save"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(b), "user app off ")

	require.NoError(t, os.WriteFile(path, []byte("bogus line\n"), 0o600))
	require.Equal(t, "-ERR "+path+":1: a line is \"user name rule...\"", tf.run(t, "load"))
	require.NotNil(t, tf.users.Get("app"), "a file that does not load changes nothing")

	none := newTestFamily(t, Config{}, "")
	require.Equal(t, "-"+command.ErrorText(errNoFile), none.run(t, "load"))
	require.Equal(t, "-"+command.ErrorText(errNoFile), none.run(t, "save"))
}

func TestFamilyCatAndGenPass(t *testing.T) {
	tf := newTestFamily(t, Config{}, "")
	require.Equal(t, "*2\r\n$10\r\nconfig|get\r\n$10\r\nconfig|set\r\n", tf.run(t, "cat", "dangerous"))
	require.Equal(t, "-ERR Unknown category 'nope'", tf.run(t, "cat", "nope"))
	require.Equal(t, "-ERR wrong number of arguments for 'acl|cat' command", tf.run(t, "cat", "a", "b"))
	for _, tc := range []struct {
		bits []string
		want int // hex digits
	}{{nil, 64}, {[]string{"1"}, 1}, {[]string{"5"}, 2}, {[]string{"4096"}, 1024}} {
		got := tf.run(t, append([]string{"genpass"}, tc.bits...)...)
		require.Len(t, got, len("$")+len(strconv.Itoa(tc.want))+2+tc.want+2, got)
	}
	require.Equal(t, "-ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096", tf.run(t, "genpass", "0"))
}
