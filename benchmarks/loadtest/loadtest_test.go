package loadtest

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEncode(t *testing.T) {
	require.Equal(t, "*2\r\n$4\r\nINCR\r\n$0\r\n\r\n", string(Encode("INCR", "")))
}

func TestReader(t *testing.T) {
	in := ":42\r\n+OK\r\n$3\r\nabc\r\n$-1\r\n*5\r\n:1\r\n:2\r\n:0\r\n:-1\r\n:7\r\n-ERR bad\r\n*2\r\n$1\r\nx\r\n:3\r\n"
	r := NewReader(strings.NewReader(in))
	for _, want := range []int64{42, -1, -1, -1, 1} {
		got, err := r.Next()
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := r.Next()
	require.EqualError(t, err, "ERR bad")
	v, err := r.Value()
	require.NoError(t, err)
	require.Equal(t, []any{"x", int64(3)}, v)
}

func TestHistogram(t *testing.T) {
	t.Run("buckets are contiguous", func(t *testing.T) {
		for i := 0; i < 3700; i++ {
			require.Equal(t, i, bucket(lowest(i)))
			require.Equal(t, i, bucket(lowest(i+1)-1))
		}
	})
	t.Run("quantiles within 2%", func(t *testing.T) {
		var h Histogram
		for i := 1; i <= 100000; i++ {
			h.Record(time.Duration(i) * time.Microsecond)
		}
		for _, q := range []float64{0.5, 0.99, 0.999} {
			want := q * 100000 * float64(time.Microsecond)
			require.InEpsilon(t, want, float64(h.Quantile(q)), 0.02)
		}
	})
}

func TestRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() { // answers every request with a denied decision
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := NewReader(c)
				for {
					if _, err := r.Value(); err != nil {
						return
					}
					if _, err := c.Write([]byte("*2\r\n:1\r\n:5\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	res, err := Run(Load{Addr: ln.Addr().String(), Conns: 4, Pipeline: 8,
		Requests: [][]byte{Encode("PING")}, Warmup: 20 * time.Millisecond, Duration: 200 * time.Millisecond})
	require.NoError(t, err)
	require.Positive(t, res.Requests)
	require.Equal(t, res.Requests, res.Denied)
	require.Equal(t, res.Requests, 8*res.Latency.Count())
}

func TestScan(t *testing.T) {
	in := ":42\r\n+OK\r\n$3\r\nabc\r\n$-1\r\n*5\r\n:1\r\n:2\r\n:0\r\n:-1\r\n:7\r\n*2\r\n$1\r\nx\r\n:3\r\n"
	b := []byte(in)
	var firsts []int64
	for len(b) > 0 {
		for cut := 0; cut <= len(b); cut++ { // a reply is found only once all of it is there
			n, _, err := Scan(b[:cut])
			require.NoError(t, err)
			if n != 0 {
				require.Equal(t, cut, n)
				break
			}
		}
		n, first, err := Scan(b)
		require.NoError(t, err)
		require.Positive(t, n)
		firsts = append(firsts, first)
		b = b[n:]
	}
	require.Equal(t, []int64{42, -1, -1, -1, 1, -1}, firsts)

	n, _, err := Scan([]byte("*2\r\n-ERR bad\r\n:1\r\n:9\r\n"))
	require.EqualError(t, err, "ERR bad")
	require.Equal(t, len("*2\r\n-ERR bad\r\n:1\r\n"), n)
	_, _, err = Scan([]byte("?x\r\n"))
	require.ErrorIs(t, err, ErrProtocol)
}
