package upstream

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/internal/redistest"
)

func TestSlot(t *testing.T) {
	for _, tc := range []struct {
		key  string
		slot int
	}{
		{"123456789", 12739}, // CRC16/XMODEM's check value, 0x31C3
		{"a", 15495},
		{"b", 3300},
		{"{user1000}.following", Slot([]byte("user1000"))},
		{"foo{}{bar}", Slot([]byte("foo{}{bar}"))}, // an empty tag: the whole key
		{"foo{{bar}}zap", Slot([]byte("{bar"))},
	} {
		t.Run(tc.key, func(t *testing.T) { require.Equal(t, tc.slot, Slot([]byte(tc.key))) })
	}
}

// TestClockIsTheUpstreams: the client's clock is the upstream's TIME, within a millisecond
// or so of a round trip on loopback.
func TestClockIsTheUpstreams(t *testing.T) {
	redis := redistest.Start(t)
	u, err := New(Config{URL: redis.URL()})
	require.NoError(t, err)
	t.Cleanup(func() { u.Close() })
	require.False(t, u.Open())
	rdb := redis.Client()
	for range 5 {
		before := u.Now()
		ts, err := rdb.Time(context.Background()).Result()
		require.NoError(t, err)
		after := u.Now()
		// TIME was read between before and after: off by at most the client's estimate of
		// the offset (a few ms on loopback), however long a loaded machine made the round trip.
		require.InDelta(t, float64(before+after)/2, float64(ts.UnixNano()), float64(after-before)/2+float64(5*time.Millisecond))
	}
}

// TestStartsOpenWhenTheUpstreamIsAway: a client whose upstream does not answer starts with
// its breaker open, so that calls are decided locally from the first.
func TestStartsOpenWhenTheUpstreamIsAway(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	u, err := New(Config{URL: "redis://" + addr, Timeout: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { u.Close() })
	require.True(t, u.Open())
	st := u.Stats()
	require.Equal(t, "open", st.Breaker)
	require.Equal(t, "down", st.Link)
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "upstream: neither a URL nor cluster nodes"},
		{Config{URL: "redis://x:1", Cluster: []string{"y:2"}}, "upstream and upstream-cluster: give one of them"},
		{Config{URL: "http://x:1"}, "upstream: \"http://x:1\": redis: invalid URL scheme: http"},
		{Config{Cluster: []string{"nohost"}}, "upstream-cluster: \"nohost\" is not host:port"},
	} {
		require.EqualError(t, tc.cfg.Validate(), tc.want)
	}
}
