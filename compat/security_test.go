package compat

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// residentKB reads a process's resident set from /proc, 0 where there is none.
func residentKB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// TestFloodUnderMaxMemory floods the binary with random keys through redis-benchmark under
// maxmemory: it keeps answering, its resident memory stays within twice maxmemory plus what
// the process holds at rest, and the busy keys' limits are never reset by eviction.
func TestFloodUnderMaxMemory(t *testing.T) {
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		t.Fatal("redis-benchmark is missing; `make deps` installs it (apt-get install redis-tools)")
	}
	const maxMemory = 16 << 20
	p := start(t, "--appendonly", "no", "--maxmemory", "16mb", "--maxmemory-policy", "volatile-ttl")
	for i := 0; i < 10; i++ {
		for j := 0; j < 11; j++ { // the 11th call is limited for an hour
			p.cli(t, "throttle", "busy:"+strconv.Itoa(i), "10", "1", "1h")
		}
	}
	rest := residentKB(p.cmd.Process.Pid)
	var peak int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			peak = max(peak, residentKB(p.cmd.Process.Pid))
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	n := "2000000"
	if testing.Short() {
		n = "500000"
	}
	out, err := exec.Command("redis-benchmark", "-p", strconv.Itoa(p.port), "-q", "-r", "10000000", "-n", n,
		"-P", "64", "-c", "4", "throttle", "flood:__rand_int__", "10", "10", "1h").CombinedOutput()
	close(stop)
	wg.Wait()
	require.NoError(t, err, string(out))
	info := p.cli(t, "info")
	require.Contains(t, info, "maxmemory_policy:volatile-ttl")
	require.NotContains(t, info, "evicted_keys:0\r")
	t.Logf("resident at rest %d KiB, peak %d KiB under the flood; %s", rest, peak, strings.TrimSpace(string(out[len(out)-min(len(out), 60):])))
	require.Less(t, peak, rest+2*maxMemory/1024, "resident memory (KiB)")
	for i := 0; i < 10; i++ {
		require.True(t, strings.HasPrefix(p.cli(t, "throttle", "busy:"+strconv.Itoa(i), "10", "1", "1h"), "1\n"), "busy:%d was reset", i)
	}
}

// TestACLUserFromFlags: a user from the command line may call the rate-limit verbs on its
// prefix and nothing else; redis-cli logs in with --user and --pass.
func TestACLUserFromFlags(t *testing.T) {
	p := start(t, "--appendonly", "no", "--requirepass", "adminpw", "--user", "app", "on", ">apppw", "~app:*", "+@ratelimit")
	as := func(args ...string) string {
		return p.cli(t, append([]string{"--user", "app", "--pass", "apppw", "--no-auth-warning"}, args...)...)
	}
	require.Equal(t, "0\n6\n5\n-1\n1", as("cl.throttle", "app:x", "5", "1", "1"))
	require.Equal(t, "NOPERM No permissions to access a key", as("cl.throttle", "other", "5", "1", "1"))
	require.Equal(t, "NOPERM User app has no permissions to run the 'keys' command", as("keys", "*"))
	require.Equal(t, "NOAUTH Authentication required.", p.cli(t, "ping"))
	require.Contains(t, p.cli(t, "-a", "adminpw", "--no-auth-warning", "acl", "list"), "user app on sanitize-payload #")
}
