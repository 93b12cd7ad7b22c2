package datatype_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/difftest"
)

func TestDifferentialZSet(t *testing.T) {
	difftest.Run(t, func(r *rand.Rand) difftest.Cmd {
		c := difftest.ZSet(r)
		if r.IntN(8) == 0 { // options and command names in any case
			for i, a := range c.Args {
				if i != 1 && a != strings.ToLower(a) && strings.Trim(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
					c.Args[i] = strings.ToLower(a)
				}
			}
		}
		return c
	}, throttled)
}
