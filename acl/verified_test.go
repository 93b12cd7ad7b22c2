package acl

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVerified(t *testing.T) {
	var cc Verified
	u := &User{}
	require.Nil(t, cc.Get(1, "a"))
	cc.Put(1, "a", u)
	require.Same(t, u, cc.Get(1, "a"))
	require.Nil(t, cc.Get(2, "a"), "the ACL changed since")
	cc.Put(2, "b", u)
	require.Nil(t, cc.Get(2, "a"), "an older generation is not carried over")
	for i := range 2 * MaxVerified {
		cc.Put(2, strings.Repeat("x", i), u)
	}
	require.LessOrEqual(t, len(cc.p.Load().users), MaxVerified)
}
