package server

import (
	"math/rand/v2"
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
)

// The differential tests send the same random commands to throttled and to a real
// redis-server and require the same reply, byte for byte (package difftest). The data
// types' run in package datatype; server's own (scripts, functions, COMMAND) draw from their
// generators too.

// diffCmd is one generated command.
type diffCmd = difftest.Cmd

func cmd(args ...string) diffCmd { return diffCmd{Args: args} }

// runDifferential runs difftest.Run with gen against a server of startServer's on the real
// clock.
func runDifferential(t *testing.T, gen func(*rand.Rand) diffCmd) {
	difftest.Run(t, gen, func(t *testing.T) string {
		return startServer(t, func(c *Config) { c.Now = nil }).addr
	})
}

// diffKnown holds the commands this server has.
var diffKnown = func() map[string]bool {
	m := make(map[string]bool)
	for name := range (&Server{}).commandTable() {
		m[name] = true
	}
	return m
}()
