package collection

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCanonicalInt(t *testing.T) {
	for _, tc := range []struct {
		s  string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"-1", -1, true}, {"123", 123, true},
		{"9223372036854775807", math.MaxInt64, true}, {"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"99999999999999999999", 0, false}, {"-0", 0, false}, {"01", 0, false}, {"+1", 0, false},
		{"", 0, false}, {"-", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"1.0", 0, false},
	} {
		t.Run(tc.s, func(t *testing.T) {
			n, ok := canonicalInt([]byte(tc.s))
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.n, n)
		})
	}
}

// TestElementsRoundTrip: every string reads back as the same bytes, in the encoding listed.
func TestElementsRoundTrip(t *testing.T) {
	strs := []string{"", "a", "tokens", "0", "53", "54", "-1", "127", "128", "-129", "1732512345123",
		"9223372036854775807", "-9223372036854775808", "01", "-0", "1.5", string(make([]byte, 191)),
		string(make([]byte, 192)), string(make([]byte, 70000))}
	var pack []byte
	for _, s := range strs {
		pack = AppendString(pack, []byte(s))
		require.Equal(t, ElemLen([]byte(s)), len(AppendString(nil, []byte(s))), s)
	}
	for _, s := range strs {
		e, n := Read(pack)
		require.NotZero(t, n)
		require.Equal(t, n, Skip(pack))
		require.Equal(t, s, string(e.Append(nil)))
		require.True(t, e.Equal([]byte(s)))
		require.Equal(t, 0, e.Compare([]byte(s)))
		require.Equal(t, len(s), e.Len())
		pack = pack[n:]
	}
	require.Empty(t, pack)
	require.Len(t, AppendString(nil, []byte("1732512345123")), 7)
	require.Len(t, AppendString(nil, []byte("7")), 1)
}

func TestScores(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e300, math.Inf(1), math.Inf(-1),
		1 << 53, 1<<53 + 2, -(1 << 53), 1732512345123, 2.5} {
		e, n := Read(AppendScore(nil, f))
		require.NotZero(t, n)
		require.Equal(t, math.Float64bits(f), math.Float64bits(e.Number()), strconv.FormatFloat(f, 'g', -1, 64))
	}
	require.Equal(t, "0.10000000000000001", string(AppendScoreText(nil, 0.1)))
	require.Equal(t, "-inf", string(AppendScoreText(nil, math.Inf(-1))))
	require.Equal(t, "1e+20", string(AppendScoreText(nil, 1e20)))
}

func TestReadDamaged(t *testing.T) {
	for _, b := range [][]byte{{5, 'a'}, {tagLong}, {tagLong, 0xff}, {tagLong, 3, 'a'}, {tagInt + 4, 1, 2}, {tagFloat, 1}} {
		_, n := Read(b)
		require.Zero(t, n, "%x", b)
		require.Zero(t, Skip(b), "%x", b)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte{3, 'a', 'b', 'c', tagSmall + 4})
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			e, n := Read(b)
			if n == 0 {
				return
			}
			require.Equal(t, n, Skip(b))
			s := e.Append(nil)
			if e.Kind != Float {
				require.Equal(t, ElemLen(s), len(AppendString(nil, s)))
			}
			b = b[n:]
		}
	})
}
