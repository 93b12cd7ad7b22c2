package datatype_test

import (
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

// throttled starts the server a differential test compares with Redis: on the real clock,
// as Redis is.
func throttled(t *testing.T) string {
	return testserver.Start(t, func(c *server.Config) { c.Now = nil }).Addr
}

func TestDifferentialStrings(t *testing.T) { difftest.Run(t, difftest.Strings, throttled) }
