package datatype_test

import (
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

func TestDifferentialList(t *testing.T) { difftest.Run(t, difftest.List, throttled) }

// TestDifferentialBigList compares lists held in nodes (collection.BigList) with Redis's:
// list-max-listpack-size 2 makes one of more than two elements big, of nodes of two.
func TestDifferentialBigList(t *testing.T) {
	difftest.Run(t, difftest.List, func(t *testing.T) string {
		return testserver.Start(t, func(c *server.Config) {
			c.Now = nil
			c.ListMaxListpackSize = 2
		}).Addr
	})
}
