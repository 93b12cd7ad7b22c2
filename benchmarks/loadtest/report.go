package loadtest

import (
	"errors"
	"net"
	"os"
	"strings"
)

// LoadAverage is the machine's load averages over 1, 5 and 15 minutes, as a report states
// them beside its figures; "unknown" where /proc has none.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

// WriteSection replaces the part of the Markdown file at path that starts with the line
// heading (up to the next "## " heading) by text, or adds text at the end: each benchmark
// tool owns one section of benchmarks/RESULTS.md.
func WriteSection(path, heading, text string) error {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	doc := string(b)
	if i := strings.Index(doc, heading+"\n"); i >= 0 {
		rest := doc[i+len(heading)+1:]
		end := len(doc)
		if j := strings.Index(rest, "\n## "); j >= 0 {
			end = i + len(heading) + 1 + j + 1
		}
		doc = doc[:i] + text + "\n" + doc[end:]
	} else {
		if doc != "" && !strings.HasSuffix(doc, "\n\n") {
			doc = strings.TrimRight(doc, "\n") + "\n\n"
		}
		doc += text
	}
	return os.WriteFile(path, []byte(strings.TrimRight(doc, "\n")+"\n"), 0o644)
}

// FreePort returns a loopback port that was free a moment ago, for a server a tool starts.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
