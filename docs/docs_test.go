package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/server"
)

// start is where the clock of every page's server stands at first. It has digits down to the
// nanosecond, as a real clock has, so that the pages show the roundings a user sees (a lease's
// reset rounded up to the next millisecond), not those of a round second. A page moves the
// clock with <!-- console: clock +d -->.
var start = time.Date(2026, 11, 27, 9, 0, 0, 123456789, time.UTC)

// command is one `$ redis-cli ...` line of a console block and the reply the page shows.
type command struct {
	line  int    // of the command in its file, 1-based
	args  string // what follows `redis-cli`, as the shell reads it
	reply string // the lines after it, comments and trailing blanks removed
}

// step is what a page asks for, in its order: move the clock, or run a console block.
type step struct {
	advance  time.Duration
	commands []command
}

var (
	// directive is an HTML comment outside fences that the test obeys and a reader never
	// sees: <!-- console: clock +1.5s --> moves the page's clock forward before the next block.
	directive = regexp.MustCompile(`^<!-- console: clock \+(\S+) -->$`)
	// comment is a note on a reply line: two spaces or more, then `# `.
	comment = regexp.MustCompile(` {2,}# .*$`)
	// session is a line that looks like a console session wherever it stands.
	session = regexp.MustCompile(`^\s*(\$ redis-cli\b|\d+\.\d+\.\d+\.\d+:\d+> )`)
)

// parse reads a page's steps. A session outside a ```console block, a console block with
// no command or a command other than redis-cli is an error: every session must be checked.
func parse(name string, r io.Reader) ([]step, error) {
	var (
		steps   []step
		fence   string // the fence of the open block, "" outside one
		console bool   // the open block is a console block
		cmds    []command
		n       int
	)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		n++
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		if fence == "" {
			if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
				fence = trimmed[:3]
				console = strings.TrimSpace(trimmed[3:]) == "console"
				cmds = nil
				continue
			}
			if m := directive.FindStringSubmatch(trimmed); m != nil {
				d, err := time.ParseDuration(m[1])
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %v", name, n, err)
				}
				steps = append(steps, step{advance: d})
				continue
			}
			if session.MatchString(text) {
				return nil, fmt.Errorf("%s:%d: a console session outside a ```console block: %s", name, n, trimmed)
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(trimmed[3:]) == "" {
			if console {
				if len(cmds) == 0 {
					return nil, fmt.Errorf("%s:%d: a console block without a command", name, n)
				}
				for i := range cmds {
					cmds[i].reply = strings.TrimRight(cmds[i].reply, "\n")
				}
				steps = append(steps, step{commands: cmds})
			}
			fence, console = "", false
			continue
		}
		if !console {
			if session.MatchString(text) {
				return nil, fmt.Errorf("%s:%d: a console session outside a ```console block: %s", name, n, trimmed)
			}
			continue
		}
		if rest, ok := strings.CutPrefix(text, "$ "); ok {
			args, ok := strings.CutPrefix(rest, "redis-cli ")
			if !ok {
				return nil, fmt.Errorf("%s:%d: a console block runs redis-cli only: %s", name, n, text)
			}
			cmds = append(cmds, command{line: n, args: args})
			continue
		}
		if len(cmds) == 0 {
			if trimmed == "" {
				continue
			}
			return nil, fmt.Errorf("%s:%d: a reply before any command: %s", name, n, text)
		}
		if strings.HasPrefix(trimmed, "# ") && comment.MatchString(text) {
			continue // a note's second line, under the first
		}
		c := &cmds[len(cmds)-1]
		c.reply += strings.TrimRight(comment.ReplaceAllString(text, ""), " ") + "\n"
	}
	if fence != "" {
		return nil, fmt.Errorf("%s: a fence left open", name)
	}
	return steps, sc.Err()
}

// clock is a settable time source, so that every time in a reply is exact.
type clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// startServer starts a server of the default configuration in memory on 127.0.0.1, on a
// port of its own, with clk as its clock, and returns that port.
func startServer(t *testing.T, clk *clock) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Port = 0
	cfg.Dir = t.TempDir()
	cfg.AppendOnly = false
	cfg.Now = clk.now
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := server.New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go s.Serve(ln)
	t.Cleanup(func() { s.Close() })
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	return port
}

// run runs a command as a reader would, through the shell (its quotes, its comments), with
// redis-cli pointed at port and printing as on a terminal (--no-raw).
func run(t *testing.T, port string, c command) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", "redis-cli -p "+port+" --no-raw "+c.args)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDISCLI_") { // a password or host of the user's own
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "redis-cli %s: %s", c.args, stderr.String())
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		// redis-cli warns of -a on the command line; anything else it says is a failure
		require.True(t, l == "" || strings.HasPrefix(l, "Warning: Using a password"), "redis-cli %s: %s", c.args, l)
	}
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \r") // INFO's lines end in CRLF; a terminal shows neither
	}
	return strings.Join(lines, "\n")
}

// pages is every Markdown page of the manual, and the README.
func pages(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob("*.md")
	require.NoError(t, err)
	return append(names, filepath.Join("..", "README.md"))
}

// TestConsoleSessions runs every console session of the manual against a server, one server
// per page, in the page's order, and requires each reply the page shows.
func TestConsoleSessions(t *testing.T) {
	_, err := exec.LookPath("redis-cli")
	require.NoError(t, err, "redis-cli runs the sessions: `make deps` installs it (redis-tools)")
	total := 0
	for _, name := range pages(t) {
		f, err := os.Open(name)
		require.NoError(t, err)
		steps, err := parse(name, f)
		f.Close()
		require.NoError(t, err)
		for _, s := range steps {
			total += len(s.commands)
		}
		t.Run(filepath.Base(name), func(t *testing.T) {
			clk := &clock{t: start}
			port := ""
			for _, s := range steps {
				clk.advance(s.advance)
				for _, c := range s.commands {
					if port == "" {
						port = startServer(t, clk)
					}
					t.Run(fmt.Sprintf("line %d", c.line), func(t *testing.T) {
						require.Equal(t, c.reply, run(t, port, c), "%s:%d: redis-cli %s", name, c.line, c.args)
					})
				}
			}
		})
	}
	require.NotZero(t, total, "no console session found")
}

// TestParse checks the reader of pages on the forms the manual uses, and that it refuses a
// session the test would not run.
func TestParse(t *testing.T) {
	page := "text\n<!-- console: clock +1.5s -->\n\n```console\n" +
		"$ redis-cli THROTTLE k 0 1 1s   # a note\n1) (integer) 0     # limited\n                  #   and a note's second line\n2) (integer) 1\n\n" +
		"$ redis-cli TYPE k\ngcra\n```\n\n```sh\nthrottled --port 7000\n```\n"
	steps, err := parse("page.md", strings.NewReader(page))
	require.NoError(t, err)
	require.Equal(t, []step{
		{advance: 1500 * time.Millisecond},
		{commands: []command{
			{line: 5, args: "THROTTLE k 0 1 1s   # a note", reply: "1) (integer) 0\n2) (integer) 1"},
			{line: 10, args: "TYPE k", reply: "gcra"},
		}},
	}, steps)

	for name, bad := range map[string]string{
		"outside a block": "$ redis-cli PING\nPONG\n",
		"in a sh block":   "```sh\n$ redis-cli PING\n```\n",
		"prompt":          "```\n127.0.0.1:6379> PING\nPONG\n```\n",
		"not redis-cli":   "```console\n$ curl localhost:8080\n```\n",
		"empty":           "```console\n```\n",
		"reply first":     "```console\nPONG\n$ redis-cli PING\n```\n",
		"open fence":      "```console\n$ redis-cli PING\nPONG\n",
		"bad clock":       "<!-- console: clock +soon -->\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse("page.md", strings.NewReader(bad))
			require.Error(t, err)
		})
	}
}

// link is a Markdown link's target: a path, an anchor, or both.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// anchors is the set of anchors a page's headings make, as GitHub makes them: lower case,
// punctuation dropped, spaces as dashes.
func anchors(t *testing.T, name string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	punct := regexp.MustCompile(`[^\w\- ]`)
	set := map[string]bool{}
	fenced := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		if h := strings.TrimLeft(l, "#"); !fenced && h != l && strings.HasPrefix(h, " ") {
			set[strings.ReplaceAll(punct.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")] = true
		}
	}
	return set
}

// TestLinks requires every relative link of the manual, the README and benchmarks/README.md
// to name a file that exists and, for a page, an anchor one of its headings makes.
func TestLinks(t *testing.T) {
	for _, name := range append(pages(t), filepath.Join("..", "benchmarks", "README.md")) {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			file := name
			if path != "" {
				file = filepath.Join(filepath.Dir(name), path)
			}
			_, err := os.Stat(file)
			require.NoError(t, err, "%s: link %s", name, target)
			if frag != "" && strings.HasSuffix(file, ".md") {
				require.True(t, anchors(t, file)[frag], "%s: link %s: no such heading in %s", name, target, file)
			}
		}
	}
}
