package envoyrls

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/policy"
)

// tables records the policies a service hands over; its decisions are never asked for here
// (the server's tests drive the real ones).
type tables struct {
	mu   sync.Mutex // guards last
	last policy.Table
}

func (d *tables) Decide(context.Context, []Item) ([]Decision, error) { return nil, nil }

func (d *tables) SetPolicies(t policy.Table) {
	d.mu.Lock()
	d.last = t
	d.mu.Unlock()
}

func (d *tables) args(name string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p := d.last[name]; p != nil {
		return p.Args
	}
	return nil
}

// TestWatchReloadsAChangedFile: a changed file is read without SIGHUP; a bad one is not,
// and the policies stay.
func TestWatchReloadsAChangedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.yaml")
	write := func(n string) {
		require.NoError(t, os.WriteFile(path, []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: "+n+"}\n"), 0o644))
	}
	write("1")
	d := &tables{}
	s, err := New(path, d, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.Equal(t, []string{"THROTTLE", "0", "1", "1"}, d.args("rls.d.k"))
	stop := make(chan struct{})
	defer close(stop)
	go s.Watch(stop, 5*time.Millisecond)
	write("22")
	require.Eventually(t, func() bool { return len(d.args("rls.d.k")) == 4 && d.args("rls.d.k")[2] == "22" }, 5*time.Second, 5*time.Millisecond)
	write("-3")
	time.Sleep(50 * time.Millisecond) // ten looks: the bad file is read and refused
	require.Equal(t, "22", d.args("rls.d.k")[2])
	require.Equal(t, uint32(22), s.Config().Domains["d"].root.children["k"].rule.PerUnit)
}
