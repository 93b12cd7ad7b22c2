package persistence

import (
	"testing"

	"github.com/stretchr/testify/require"

	"throttled/keyspace"
)

func TestValueRoundTrip(t *testing.T) {
	for name, v := range map[string]keyspace.Value{
		"gcra":       {Kind: keyspace.GCRA, Num: t0, Expire: t0 + 1},
		"string":     {Kind: keyspace.String, Bytes: []byte("v")},
		"wide":       {Kind: keyspace.TokenBucket, Num: -5, Num2: 1 << 62, Expire: 1},
		"later kind": {Kind: 42, Bytes: []byte{0}},
		"empty":      {Kind: keyspace.String},
	} {
		t.Run(name, func(t *testing.T) {
			b := make([]byte, valueLen(v))
			encodeValue(b, v)
			got, err := decodeValue(b)
			require.NoError(t, err)
			require.Equal(t, v, got)
		})
	}
	require.Len(t, make([]byte, valueLen(keyspace.Value{Kind: keyspace.GCRA, Num: 1, Expire: 1})), 19)
}

// FuzzDecodeValue: no stored value makes decoding panic, and what decodes re-encodes the same.
func FuzzDecodeValue(f *testing.F) {
	f.Add([]byte{1, 2, 3, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 1, 0, 'x'})
	f.Add([]byte{2, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decodeValue(b)
		if err != nil {
			return
		}
		out := make([]byte, valueLen(v))
		encodeValue(out, v)
		back, err := decodeValue(out)
		require.NoError(t, err)
		require.Equal(t, v, back)
	})
}
