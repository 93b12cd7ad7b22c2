package conffile

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSizes(t *testing.T) {
	for v, want := range map[string]int64{"0": 0, "1k": 1000, "1kb": 1024, "2MB": 2 << 20, "3g": 3e9, "1gb": 1 << 30, "-5": -5} {
		n, err := ParseSize(v)
		require.NoError(t, err, v)
		require.Equal(t, want, n, v)
	}
	for _, v := range []string{"", "k", "1.5mb", "9223372036854775807kb", "x"} {
		_, err := ParseSize(v)
		require.Error(t, err, v)
	}
	require.Equal(t, "1mb", FormatSize(1<<20))
	require.Equal(t, "1536kb", FormatSize(1536<<10))
	require.Equal(t, "1000", FormatSize(1000))
	require.Equal(t, "0", FormatSize(0))
}

// TestQuoteRoundTrip: what Quote writes, SplitLine reads back as one word, whatever its bytes.
func TestQuoteRoundTrip(t *testing.T) {
	for _, s := range []string{"", "a b", `q"uo\te`, "line\nbreak\r\t\a\b", "\x00\xff bytes", "'single'"} {
		words, err := SplitLine("requirepass " + Quote(s))
		require.NoError(t, err, s)
		require.Equal(t, []string{"requirepass", s}, words)
	}
	_, err := SplitLine(`requirepass "unbalanced`)
	require.EqualError(t, err, "unbalanced quotes")
}
