package listen

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseBind(t *testing.T) {
	for _, tc := range []struct {
		bind  string
		want  []addr
		err   string
		first string
	}{
		{bind: "127.0.0.1", want: []addr{{host: "127.0.0.1", network: "tcp"}}, first: "127.0.0.1"},
		{bind: "127.0.0.1 -::1", want: []addr{{host: "127.0.0.1", network: "tcp"}, {host: "::1", network: "tcp", optional: true}}, first: "127.0.0.1"},
		{bind: "* -::*", want: []addr{{network: "tcp4"}, {network: "tcp6", optional: true}}, first: ""},
		{bind: "::*", want: []addr{{network: "tcp6"}}, first: "::"},
		{bind: "localhost", want: []addr{{host: "localhost", network: "tcp"}}, first: "localhost"},
		{bind: "  ", err: `bind: "  " names no address`, first: "  "},
		{bind: "127.0.0.1 example.com", err: `bind: "example.com" is not an IP address`, first: "127.0.0.1 example.com"},
	} {
		t.Run(tc.bind, func(t *testing.T) {
			got, err := parseBind(tc.bind)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				require.EqualError(t, ParseBind(tc.bind), tc.err)
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.want, got)
			}
			require.Equal(t, tc.first, First(tc.bind))
		})
	}
}

// TestOpen listens on two addresses of one port (the second one's a free port the first
// picked) and a Unix socket, and accepts from each; an optional address that cannot be bound
// is skipped and told of.
func TestOpen(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	var skipped []string
	ln, err := Open(Config{Bind: "127.0.0.1 -192.0.2.1", Backlog: 16, UnixSocket: sock, UnixSocketPerm: 0o700,
		Skipped: func(addr string, err error) { skipped = append(skipped, addr) }})
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	require.Equal(t, []string{"192.0.2.1"}, skipped, "TEST-NET-1 is no address of this machine")
	for _, dial := range [][2]string{{"tcp", ln.Addr().String()}, {"unix", sock}} {
		c, err := net.Dial(dial[0], dial[1])
		require.NoError(t, err)
		got, err := ln.Accept()
		require.NoError(t, err)
		got.Close()
		c.Close()
	}
	_, err = Open(Config{Bind: "192.0.2.1"})
	require.ErrorContains(t, err, "listen: ")
}
