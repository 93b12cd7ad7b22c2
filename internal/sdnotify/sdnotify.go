// Package sdnotify tells systemd how a service started with Type=notify is doing: it writes
// sd_notify(3)'s datagrams ("READY=1", "STOPPING=1", "STATUS=...") to the Unix socket that
// systemd names in $NOTIFY_SOCKET, as libsystemd does, without linking it.
package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
)

// Messages of sd_notify(3) the server sends.
const (
	// Ready says the service has started and accepts connections.
	Ready = "READY=1"
	// Stopping says the service is shutting down.
	Stopping = "STOPPING=1"
)

// ErrNoSocket is returned when $NOTIFY_SOCKET is not set: no supervisor listens.
var ErrNoSocket = errors.New("sdnotify: NOTIFY_SOCKET is not set")

// Socket is the path of the notification socket in the environment, "" when none. A leading @
// names a socket in the abstract namespace.
func Socket() string { return os.Getenv("NOTIFY_SOCKET") }

// Notify sends the state lines (each "NAME=value") in one datagram to socket: a path, or an
// abstract socket starting with @.
func Notify(socket string, state ...string) error {
	if socket == "" {
		return ErrNoSocket
	}
	addr := &net.UnixAddr{Name: socket, Net: "unixgram"}
	if strings.HasPrefix(socket, "@") {
		addr.Name = "\x00" + socket[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(strings.Join(state, "\n") + "\n")); err != nil {
		return fmt.Errorf("sdnotify: %w", err)
	}
	return nil
}

// Status is the STATUS= line that systemctl status shows.
func Status(text string) string { return "STATUS=" + strings.ReplaceAll(text, "\n", " ") }
