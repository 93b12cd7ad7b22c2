package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBlockedPopReplicates: what a blocked client pops when a push serves it is a write
// like any other: the replica gets the list as it is after the pop.
func TestBlockedPopReplicates(t *testing.T) {
	ctx := context.Background()
	primary := startServer(t)
	p := primary.client(t, 2)
	replica := startReplica(t, primary)
	r := replica.client(t, 2)
	sameState(t, primary, replica)

	waiter := primary.client(t, 2)
	got := make(chan []string, 1)
	go func() { got <- waiter.BLPop(ctx, 10*time.Second, "q").Val() }()
	require.Eventually(t, func() bool { return primary.blocked.n.Load() == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, p.RPush(ctx, "q", "a", "b").Err())
	require.Equal(t, []string{"q", "a"}, <-got)
	sameState(t, primary, replica)
	require.Equal(t, []string{"b"}, r.LRange(ctx, "q", 0, -1).Val())
}
