package compat

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRedisCliSubscribe: redis-cli in subscribe mode, as a user runs it, gets what another
// redis-cli publishes; on an event loop (the default) and with a goroutine per connection.
func TestRedisCliSubscribe(t *testing.T) {
	for _, threads := range []string{"1", "0"} {
		t.Run("io-threads "+threads, func(t *testing.T) {
			p := start(t, "--io-threads", threads, "--appendonly", "no")
			sub := exec.Command("redis-cli", "-p", strconv.Itoa(p.port), "subscribe", "news")
			stdout, err := sub.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, sub.Start())
			t.Cleanup(func() { sub.Process.Kill(); sub.Wait() })
			lines := make(chan string, 16)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			expect := func(want ...string) {
				t.Helper()
				for _, w := range want {
					select {
					case l := <-lines:
						require.Equal(t, w, l)
					case <-time.After(10 * time.Second):
						t.Fatalf("redis-cli printed nothing; wanted %q", w)
					}
				}
			}
			expect("subscribe", "news", "1")
			require.Equal(t, "1", p.cli(t, "PUBLISH", "news", "hello world"))
			expect("message", "news", "hello world")
			require.Equal(t, "news\n1", p.cli(t, "PUBSUB", "NUMSUB", "news"))
			require.Contains(t, p.cli(t, "CLIENT", "LIST"), "flags=P db=0 sub=1 psub=0")

			require.NoError(t, sub.Process.Kill())
			sub.Wait()
			require.Eventually(t, func() bool { return p.cli(t, "PUBSUB", "NUMSUB", "news") == "news\n0" },
				5*time.Second, 20*time.Millisecond)
			require.Equal(t, "0", p.cli(t, "PUBLISH", "news", "nobody"))
			require.Eventually(t, func() bool { return infoLine(t, p, "connected_clients") == "connected_clients:1" },
				5*time.Second, 20*time.Millisecond)
		})
	}
}

// infoLine returns INFO's line for field.
func infoLine(t *testing.T, p *process, field string) string {
	t.Helper()
	for _, l := range strings.Split(p.cli(t, "INFO"), "\n") {
		if strings.HasPrefix(l, field+":") {
			return strings.TrimSpace(l)
		}
	}
	t.Fatalf("INFO has no %s", field)
	return ""
}
