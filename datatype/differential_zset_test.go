package datatype_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/difftest"
	"github.com/throttledhq/throttled/internal/testserver"
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

// TestDifferentialZSetInfinities: weights and scores whose products are 0 times inf (NaN)
// or sums inf less inf, where Redis makes a SUM 0, in ZINTER's first product and its later
// ones, and in ZUNION's.
func TestDifferentialZSetInfinities(t *testing.T) {
	redis, ours := difftest.Dial(t, testserver.Redis(t).Addr, 2), difftest.Dial(t, throttled(t), 2)
	cmds := []difftest.Cmd{
		{Args: []string{"ZADD", "{k}a", "0", "zero", "5", "five", "-3", "neg"}},
		{Args: []string{"ZADD", "{k}b", "5", "zero", "0", "five", "3", "neg"}},
		{Args: []string{"SADD", "{k}s", "zero", "five"}},
	}
	for _, op := range []string{"ZINTER", "ZUNION"} {
		for _, w := range [][]string{{"-inf", "-inf"}, {"inf", "-inf"}, {"0", "inf"}, {"1", "-inf"}} {
			for _, agg := range []string{"SUM", "MIN", "MAX"} {
				cmds = append(cmds,
					difftest.Cmd{Args: []string{op, "2", "{k}a", "{k}b", "WEIGHTS", w[0], w[1], "AGGREGATE", agg, "WITHSCORES"}},
					difftest.Cmd{Args: []string{op, "2", "{k}s", "{k}a", "WEIGHTS", w[0], w[1], "AGGREGATE", agg, "WITHSCORES"}})
			}
		}
	}
	require.Equal(t, redis.Pipeline(t, cmds), ours.Pipeline(t, cmds))
}
