package bitmap

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGetSet(t *testing.T) {
	b := make([]byte, 2)
	require.Equal(t, 0, Set(b, 1, true))
	require.Equal(t, 0, Set(b, 15, true))
	require.Equal(t, []byte{0x40, 0x01}, b)
	require.Equal(t, 1, Get(b, 1))
	require.Equal(t, 0, Get(b, 0))
	require.Equal(t, 0, Get(b, 1000))
	require.Equal(t, 1, Set(b, 1, false))
	require.Equal(t, []byte{0x00, 0x01}, b)
}

func TestCount(t *testing.T) {
	b := []byte("foobar") // as in Redis's BITCOUNT documentation
	for _, tc := range []struct {
		name       string
		start, end int64
		bit        bool
		want       int64
	}{
		{"whole", 0, -1, false, 26},
		{"first byte", 0, 0, false, 4},
		{"second byte", 1, 1, false, 6},
		{"bytes 1 to 1 by bit", 5, 30, true, 17},
		{"last bit range", -1, -1, true, 0},
		{"negative reversed", -1, -2, false, 0},
		{"start past end", 7, 10, false, 0},
		{"clamped", -100, 100, false, 26},
		{"bits in one byte", 1, 2, true, 2},
		{"empty bit range", 3, 2, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Count(b, tc.start, tc.end, tc.bit))
		})
	}
}
