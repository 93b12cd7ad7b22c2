package geo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The figures of Redis's documentation: GEOADD Sicily 13.361389 38.115556 "Palermo"
// 15.087269 37.502669 "Catania".
func TestDocumentedFigures(t *testing.T) {
	palermo, catania := Score(13.361389, 38.115556), Score(15.087269, 37.502669)
	require.Equal(t, 3479099956230698.0, palermo)
	require.Equal(t, 3479447370796909.0, catania)
	require.Equal(t, "sqc8b49rny0", String11(palermo))
	require.Equal(t, "sqdtr74hyu0", String11(catania))
	x1, y1 := Decode(palermo)
	x2, y2 := Decode(catania)
	require.InDelta(t, 166274.1516, Distance(x1, y1, x2, y2), 0.0001)
	require.InDelta(t, 13.36138933897018433, x1, 1e-12)
}

// TestScoreBits follows Redis's x86-64 cast of a sorted set's score that no GEOADD stored.
func TestScoreBits(t *testing.T) {
	for _, c := range []struct {
		score float64
		want  uint64
	}{{0, 0}, {-5, 0xfffffffffffffffb}, {1e20, 0}, {1 << 63, 1 << 63}, {3471579339700058, 3471579339700058}} {
		require.Equal(t, c.want, scoreBits(c.score), "%v", c.score)
	}
}
