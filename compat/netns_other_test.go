//go:build !linux

package compat

import (
	"fmt"
	"os"
	"testing"
)

const netnsEnv = "THROTTLED_COMPAT_NETNS"

// runInNetns needs Linux's network namespaces.
func runInNetns(t *testing.T, addr string, server, client []string) (string, int) {
	t.Fatal("network namespaces need Linux")
	return "", 0
}

func netnsMain([]string) int {
	fmt.Fprintln(os.Stderr, "netns: network namespaces need Linux")
	return 100
}
