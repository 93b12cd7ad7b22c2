package sdnotify

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNotify: the datagrams reach a socket listening as systemd's does, by path and in the
// abstract namespace.
func TestNotify(t *testing.T) {
	for _, tc := range []struct {
		name   string
		socket func(t *testing.T) string
	}{
		{"path", func(t *testing.T) string { return filepath.Join(t.TempDir(), "notify") }},
		{"abstract", func(t *testing.T) string { return "@throttled-sdnotify-test-" + t.Name() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socket := tc.socket(t)
			name := socket
			if socket[0] == '@' {
				name = "\x00" + socket[1:]
			}
			conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
			require.NoError(t, err)
			t.Cleanup(func() { conn.Close() })

			require.NoError(t, Notify(socket, Ready, Status("Ready to accept connections")))
			buf := make([]byte, 1024)
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
			n, err := conn.Read(buf)
			require.NoError(t, err)
			require.Equal(t, "READY=1\nSTATUS=Ready to accept connections\n", string(buf[:n]))
		})
	}
	require.ErrorIs(t, Notify("", Ready), ErrNoSocket)
}
