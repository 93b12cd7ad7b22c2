package keyspace

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValueRoundTrip(t *testing.T) {
	for name, v := range map[string]Value{
		"gcra":       {Kind: GCRA, Num: 1_700_000_000_000_000_000, Expire: 1_700_000_000_000_000_000 + 1},
		"string":     {Kind: String, Bytes: []byte("v")},
		"wide":       {Kind: TokenBucket, Num: -5, Num2: 1 << 62, Expire: 1},
		"later kind": {Kind: 42, Bytes: []byte{0}},
		"empty":      {Kind: String},
	} {
		t.Run(name, func(t *testing.T) {
			b := make([]byte, EncodedLen(v))
			Encode(b, v)
			got, err := DecodeValue(b)
			require.NoError(t, err)
			require.Equal(t, v, got)
		})
	}
	require.Len(t, make([]byte, EncodedLen(Value{Kind: GCRA, Num: 1, Expire: 1})), 19)
}

// FuzzDecodeValue: no stored value makes decoding panic, and what decodes re-encodes the same.
func FuzzDecodeValue(f *testing.F) {
	f.Add([]byte{1, 2, 3, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 1, 0, 'x'})
	f.Add([]byte{2, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeValue(b)
		if err != nil {
			return
		}
		out := make([]byte, EncodedLen(v))
		Encode(out, v)
		back, err := DecodeValue(out)
		require.NoError(t, err)
		require.Equal(t, v, back)
	})
}
