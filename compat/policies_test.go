package compat

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPoliciesFromFileAndSIGHUP declares policies in the config file, changes the file and
// sends SIGHUP to the real binary: the new policies apply on the connection already open,
// which is never dropped, and a bad file keeps the old ones.
func TestPoliciesFromFileAndSIGHUP(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "throttled.conf")
	write := func(s string) { require.NoError(t, os.WriteFile(conf, []byte(s), 0o644)) }
	write("loglevel notice\npolicy api THROTTLE 4 5 1m SOFT 0.6\npolicy-deny api 10.0.0.0/8\npolicy-allow api vip\n")
	p := start(t, conf)
	require.Equal(t, "0\n5\n4\n-1\n12000\nok", p.cli(t, "CHECK", "api", "u"))
	require.Equal(t, "1\n5\n0\n-1\n0\ndenylisted", p.cli(t, "CHECK", "api", "10.2.3.4"))
	require.Equal(t, "allowlisted", lastLine(p.cli(t, "CHECK", "api", "vip")))
	require.Equal(t, "OK", p.cli(t, "POLICY.OVERRIDE", "api", "big", "THROTTLE", "99", "100", "1m", "EX", "60"))

	// One redis-cli session spans the reloads: its connection stays.
	cli := startInteractive(t, p)
	lines := cli.send(t, "CHECK api w", 6)
	require.Equal(t, "4", lines[2])
	require.Equal(t, "ok", cli.last)

	write("loglevel notice\npolicy api THROTTLE 9 10 1m\npolicy web WINDOW 100 1s SHADOW\n")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool { return strings.Contains(p.cli(t, "POLICY.LIST"), "web") }, 5*time.Second, 20*time.Millisecond)
	require.Equal(t, "ok", lastLine(p.cli(t, "CHECK", "api", "10.2.3.4")), "the file's deny entry is gone")
	require.Equal(t, "100", strings.Split(p.cli(t, "CHECK", "api", "big"), "\n")[1], "the command's override stays")
	lines = cli.send(t, "CHECK api w", 6)
	require.Equal(t, []string{"0", "10", "7"}, lines[:3], "w keeps what it used: 1 of 5 is 2 of 10, then 1 more")

	write("policy api THROTTLE 9 10\n")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool { return strings.Contains(p.stderr.String(), "policies not reloaded") }, 5*time.Second, 20*time.Millisecond)
	require.Contains(t, p.stderr.String(), conf+":1: policy: wrong number of arguments for 'throttle'")
	require.Equal(t, "ERR policies not reloaded, the old ones stay: "+conf+":1: policy: wrong number of arguments for 'throttle'",
		p.cli(t, "POLICY.RELOAD"))
	require.Equal(t, "api\nweb", p.cli(t, "POLICY.LIST"))
	require.Contains(t, p.cli(t, "INFO", "throttle"), "policy_api:allowed=")
	// The policies' record is no key; the keys CHECK derived are.
	require.Equal(t, "4", p.cli(t, "DBSIZE"))
	require.Equal(t, "policy:api:10.2.3.4\npolicy:api:big\npolicy:api:u\npolicy:api:w", sortedLines(p.cli(t, "KEYS", "*")))
}

func lastLine(s string) string { return s[strings.LastIndexByte(s, '\n')+1:] }

// interactive is a redis-cli session on one connection, fed line by line.
type interactive struct {
	in   *os.File
	out  *os.File
	last string
}

func startInteractive(t *testing.T, p *process) *interactive {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	cmd := execCli(p, inR, outW)
	require.NoError(t, cmd.Start())
	inR.Close()
	outW.Close()
	t.Cleanup(func() {
		inW.Close()
		cmd.Wait()
		outR.Close()
	})
	return &interactive{in: inW, out: outR}
}

// send writes one command and reads n lines of its reply; the last is kept in last.
func (c *interactive) send(t *testing.T, line string, n int) []string {
	t.Helper()
	_, err := c.in.WriteString(line + "\n")
	require.NoError(t, err)
	var lines []string
	var buf [1]byte
	cur := []byte{}
	c.out.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(lines) < n {
		_, err := c.out.Read(buf[:])
		require.NoError(t, err, "read so far: %q", lines)
		if buf[0] == '\n' {
			lines = append(lines, string(cur))
			cur = cur[:0]
			continue
		}
		cur = append(cur, buf[0])
	}
	c.last = lines[len(lines)-1]
	return lines
}

func execCli(p *process, in, out *os.File) *exec.Cmd {
	cmd := exec.Command("redis-cli", "-p", strconv.Itoa(p.port))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, out
	return cmd
}

func sortedLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
