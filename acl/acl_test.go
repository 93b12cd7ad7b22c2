package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func bit(name string) uint64 { b, _ := Category(name); return b }

func testCatalog() *Catalog {
	return NewCatalog([]Command{
		{Name: "get", Parent: -1, Categories: bit("read") | bit("fast") | bit("string")},
		{Name: "set", Parent: -1, Categories: bit("write") | bit("slow") | bit("string")},
		{Name: "throttle", Parent: -1, Categories: bit("write") | bit("fast") | bit("ratelimit")},
		{Name: "config", Parent: -1, Categories: bit("slow")},
		{Name: "config|get", Parent: 3, Categories: bit("admin") | bit("slow") | bit("dangerous")},
		{Name: "config|set", Parent: 3, Categories: bit("admin") | bit("slow") | bit("dangerous")},
	})
}

func TestDefaultUser(t *testing.T) {
	r := New(testCatalog())
	require.True(t, r.DefaultOpen())
	p := r.Default().Perms()
	require.True(t, p.All)
	require.NotNil(t, r.Authenticate([]byte("default"), []byte("anything")))

	_, err := r.SetUser("default", []string{"resetpass", ">secret"})
	require.NoError(t, err)
	require.False(t, r.DefaultOpen())
	require.Nil(t, r.Authenticate([]byte("default"), []byte("wrong")))
	require.Equal(t, r.Default(), r.Authenticate([]byte("default"), []byte("secret")))
}

func TestApplicationUser(t *testing.T) {
	r := New(testCatalog())
	u, err := r.SetUser("app", []string{"on", ">pw", "~tenant:*", "+@ratelimit"})
	require.NoError(t, err)
	p := u.Perms()
	require.False(t, p.All)
	require.True(t, p.CanRun(2))
	require.False(t, p.CanRun(0))
	require.False(t, p.CanRun(1))
	require.True(t, p.CanKey([]byte("tenant:a"), Write))
	require.False(t, p.CanKey([]byte("other"), Read))
	require.False(t, p.CanChannel([]byte("x"), false))

	in, ok := r.Info("app")
	require.True(t, ok)
	require.Equal(t, []string{"on", "sanitize-payload"}, in.Flags)
	sum := sha256.Sum256([]byte("pw"))
	require.Equal(t, []string{hex.EncodeToString(sum[:])}, in.Passwords)
	require.Equal(t, "-@all +@ratelimit", in.Commands)
	require.Equal(t, "~tenant:*", in.Keys)

	line, _ := r.Describe("app")
	require.Equal(t, "user app on sanitize-payload #"+hex.EncodeToString(sum[:])+" ~tenant:* resetchannels -@all +@ratelimit", line)
}

func TestRules(t *testing.T) {
	r := New(testCatalog())
	for i, tc := range []struct {
		name  string
		rules []string
		check func(t *testing.T, p *Perms)
	}{
		{"subcommand", []string{"+config|get"}, func(t *testing.T, p *Perms) {
			require.True(t, p.CanRun(4))
			require.False(t, p.CanRun(5))
		}},
		{"container", []string{"+config", "-config|set"}, func(t *testing.T, p *Perms) {
			require.True(t, p.CanRun(3))
			require.True(t, p.CanRun(4))
			require.False(t, p.CanRun(5))
		}},
		{"read and write patterns", []string{"%R~r:*", "%W~w:*", "%RW~rw:*"}, func(t *testing.T, p *Perms) {
			require.True(t, p.CanKey([]byte("r:1"), Read))
			require.False(t, p.CanKey([]byte("r:1"), Write))
			require.True(t, p.CanKey([]byte("w:1"), Write))
			require.False(t, p.CanKey([]byte("w:1"), Read|Write))
			require.True(t, p.CanKey([]byte("rw:1"), Read|Write))
		}},
		{"channels", []string{"&news.*"}, func(t *testing.T, p *Perms) {
			require.True(t, p.CanChannel([]byte("news.a"), false))
			require.False(t, p.CanChannel([]byte("news.a"), true))
			require.True(t, p.CanChannel([]byte("news.*"), true))
		}},
		{"all", []string{"allcommands", "allkeys", "allchannels"}, func(t *testing.T, p *Perms) {
			require.True(t, p.All)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := r.SetUser(fmt.Sprintf("u%d", i), tc.rules)
			require.NoError(t, err)
			tc.check(t, u.Perms())
		})
	}
}

func TestBadRulesChangeNothing(t *testing.T) {
	r := New(testCatalog())
	_, err := r.SetUser("app", []string{"on", "nopass", "+get"})
	require.NoError(t, err)
	for _, rules := range [][]string{
		{""}, {"+nosuch"}, {"+@nosuch"}, {"#abc"}, {"%X~a"}, {"bogus"}, {"-get", "!" + hex.EncodeToString(make([]byte, 32))},
	} {
		_, err := r.SetUser("app", rules)
		require.True(t, errors.Is(err, ErrRule), "%v", rules)
	}
	require.True(t, r.Get("app").Perms().CanRun(0))
	_, err = r.SetUser("x", []string{"~*", "~a"})
	require.Error(t, err)
	require.Nil(t, r.Get("x"))
}

func TestDelUser(t *testing.T) {
	r := New(testCatalog())
	_, err := r.DelUser([]string{"default"})
	require.Error(t, err)
	_, _ = r.SetUser("a", nil)
	gone, err := r.DelUser([]string{"a", "b"})
	require.NoError(t, err)
	require.Len(t, gone, 1)
	require.Equal(t, []string{"default"}, r.Names())
}

func TestDisabledUserCannotAuthenticate(t *testing.T) {
	r := New(testCatalog())
	_, _ = r.SetUser("a", []string{"off", ">pw"})
	require.Nil(t, r.Authenticate([]byte("a"), []byte("pw")))
	_, _ = r.SetUser("a", []string{"on"})
	require.NotNil(t, r.Authenticate([]byte("a"), []byte("pw")))
}

func BenchmarkCheck(b *testing.B) {
	r := New(testCatalog())
	u, _ := r.SetUser("app", []string{"on", ">pw", "~tenant:*", "+@ratelimit"})
	key := []byte("tenant:12345")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p := u.Perms()
		if !p.CanRun(2) || !p.CanKey(key, Write) {
			b.Fatal("denied")
		}
	}
}

// FuzzSetUser applies rules from the input: no rule list panics, a refused one changes
// nothing, and a user's description read back as rules describes the same user.
func FuzzSetUser(f *testing.F) {
	for _, seed := range []string{
		"on >pw ~tenant:* +@ratelimit", "off nopass allkeys allchannels +@all -set", "%R~a* %W~b* &c* +config|get",
		"reset #" + hex.EncodeToString(make([]byte, 32)), "-@all +get -get +@read", "~* ~a", "<pw !00 resetpass",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		r := New(testCatalog())
		rules := strings.Fields(input)
		if _, err := r.SetUser("u", rules); err != nil {
			require.Nil(t, r.Get("u"))
			return
		}
		line, ok := r.Describe("u")
		require.True(t, ok)
		words := strings.Fields(line)
		require.Equal(t, []string{"user", "u"}, words[:2])
		again := New(testCatalog())
		_, err := again.SetUser("u", words[2:])
		require.NoError(t, err, line)
		line2, _ := again.Describe("u")
		require.Equal(t, line, line2)
	})
}

func TestLoad(t *testing.T) {
	r := New(testCatalog())
	app, _ := r.SetUser("app", []string{"on", "nopass", "+get"})
	old, _ := r.SetUser("old", nil)
	_, err := r.Load([][]string{{"app", "on", "nopass", "+set"}, {"bad", "+nosuch"}})
	require.ErrorContains(t, err, "line 2")
	require.True(t, app.Perms().CanRun(0)) // nothing changed
	gone, err := r.Load([][]string{{"app", "on", "nopass", "+set"}, {"new", "on", ">pw"}})
	require.NoError(t, err)
	require.Equal(t, []*User{old}, gone)
	require.Same(t, app, r.Get("app"))
	require.False(t, app.Perms().CanRun(0))
	require.True(t, app.Perms().CanRun(1))
	require.Equal(t, []string{"app", "default", "new"}, r.Names())
	require.True(t, r.DefaultOpen())
	_, err = r.Load([][]string{{"a"}, {"a"}})
	require.ErrorContains(t, err, "duplicate")
}

// TestChangesAndEnabled: every change of a user moves Changes, a bad rule does not; Enabled
// finds only users that are on.
func TestChangesAndEnabled(t *testing.T) {
	r := New(testCatalog())
	n := r.Changes()
	step := func(what string, change func()) {
		t.Helper()
		change()
		require.Greater(t, r.Changes(), n, what)
		n = r.Changes()
	}
	step("SetUser", func() { r.SetUser("app", []string{"on", ">pw"}) })
	require.Equal(t, "app", r.Enabled("app").Name())
	step("a new password", func() { r.SetUser("app", []string{"resetpass", ">new"}) })
	step("off", func() { r.SetUser("app", []string{"off"}) })
	require.Nil(t, r.Enabled("app"))
	_, err := r.SetUser("app", []string{"on", "bogus"})
	require.Error(t, err)
	require.Equal(t, n, r.Changes(), "a bad rule changes nothing")
	step("DelUser", func() { r.DelUser([]string{"app"}) })
	require.Nil(t, r.Enabled("app"))
	step("Load", func() { r.Load([][]string{{"app", "on", "nopass"}}) })
	require.NotNil(t, r.Enabled("app"))
	require.Nil(t, r.Enabled("nobody"))
}
