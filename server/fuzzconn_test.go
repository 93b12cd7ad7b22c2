package server

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// FuzzConnections sends each input as the bytes of a connection to a running server (RESP,
// inline commands, garbage, cut anywhere), reads what comes back until the server closes the
// connection, and then requires the server to answer another, long-lived connection: no
// input may crash the server or harm other clients. Commands that stop the server, make it
// a replica of some host or close other clients are left out, being what they are for.
func FuzzConnections(f *testing.F) {
	ts := startServer(f, func(c *Config) { c.AppendOnly = false })
	admin := ts.raw(f)
	for _, seed := range []string{
		"*1\r\n$4\r\nPING\r\n",
		"PING\r\nECHO hello\r\n",
		"*5\r\n$8\r\nTHROTTLE\r\n$1\r\nk\r\n$2\r\n10\r\n$1\r\n5\r\n$2\r\n1s\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$-1\r\n",
		"*2\r\n$3\r\nGET\r\n$99999999999\r\n",
		"*-1\r\n*0\r\n*1\r\n$0\r\n\r\n",
		"HELLO 3 AUTH default x\r\n",
		"ACL SETUSER fuzz on nopass ~f* +@ratelimit\r\nAUTH fuzz x\r\nTHROTTLE f 1 1 1\r\nGET f\r\n",
		"MULTI\r\nTHROTTLE k 1 1 1\r\nEXEC\r\n",
		"SUBSCRIBE a\r\nPING\r\nRESET\r\n",
		"\"unbalanced\r\n",
		"*2\r\n$4\r\nINFO\r\n:1\r\n",
		"ALLOF throttle a 1 1 1 window b 1 1\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		lower := bytes.ToLower(input)
		for _, skip := range []string{"shutdown", "replicaof", "slaveof", "kill", "deluser", "debug", "maxclients", "requirepass", "default", "protected-mode", "timeout", "wait"} {
			if bytes.Contains(lower, []byte(skip)) {
				return
			}
		}
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(2 * time.Second))
		nc.Write(input)
		nc.(*net.TCPConn).CloseWrite()
		io.Copy(io.Discard, bufio.NewReader(nc)) // until the server closes, or the deadline

		admin.nc.SetDeadline(time.Now().Add(5 * time.Second))
		admin.send(t, "PING\r\n")
		if got := admin.line(t); got != "+PONG" {
			t.Fatalf("after %q the server answers PING with %q", input, got)
		}
	})
}
