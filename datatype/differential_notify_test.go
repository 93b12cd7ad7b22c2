package datatype_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/testserver"
	"github.com/throttledhq/throttled/server"
)

// TestDifferentialKeyspaceEvents: random commands of every type fire the same keyspace
// events, in the same order, as on Redis, with notify-keyspace-events KEA.
func TestDifferentialKeyspaceEvents(t *testing.T) {
	difftest.RunEvents(t, "KEA", difftest.Keyspace, throttled)
}

// TestDifferentialKeyspaceEventsAll adds the classes A leaves out: n (a key created) and m
// (a read that found no key).
func TestDifferentialKeyspaceEventsAll(t *testing.T) {
	difftest.RunEvents(t, "KEAnm", difftest.Keyspace, throttled)
}

// TestDifferentialKeyspaceEventsBig is TestDifferentialKeyspaceEventsAll with every
// collection past its listpack (or intset) at a few elements, so that the big encodings'
// paths fire their events too. Events do not depend on encodings: Redis keeps its own.
func TestDifferentialKeyspaceEventsBig(t *testing.T) {
	difftest.RunEvents(t, "KEAnm", keyspaceBig, func(t *testing.T) string {
		return testserver.Start(t, func(c *server.Config) {
			c.Now = nil
			c.ListMaxListpackSize = 2
			c.HashMaxListpackEntries, c.ZsetMaxListpackEntries = 2, 2
			c.SetMaxIntsetEntries, c.SetMaxListpackEntries = 2, 2
		}).Addr
	})
}

// keyspaceBig is difftest.Keyspace for a throttled whose sorted sets are past the listpack
// where Redis's (at its default limits) are not: a listpack holds a score of -0 as 0, a
// skip list keeps -0, so the replies that carry scores are compared by their shape only
// (their events still in full).
func keyspaceBig(r *rand.Rand) difftest.Cmd {
	c := difftest.Keyspace(r)
	switch strings.ToUpper(c.Args[0]) {
	case "ZSCORE", "ZMSCORE", "ZINCRBY", "ZADD", "ZPOPMIN", "ZPOPMAX", "ZMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP":
		c.Shape = true
	}
	for _, a := range c.Args {
		if strings.EqualFold(a, "withscores") {
			c.Shape = true
		}
	}
	return c
}
