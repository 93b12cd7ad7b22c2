package policy

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// The config file's directives, one a line in redis.conf's style:
//
//	policy name verb params... [SOFT ratio] [SHADOW]
//	policy-override name subject verb params... [EX seconds]
//	policy-allow name subject [EX seconds]
//	policy-deny name subject [EX seconds]
//
// An entry's EX counts from the time the file is read. Other directives are the server's
// options: ParseFile skips them.

// Directive reports whether a config file directive (lower case) is one of the policies'.
func Directive(name string) bool {
	switch name {
	case "policy", "policy-override", "policy-allow", "policy-deny":
		return true
	}
	return false
}

// Words splits a config line into words as redis.conf does; the server provides it.
type Words func(line string) ([]string, error)

// CheckArgs checks a verb and its parameters; the server provides it.
type CheckArgs func(args []string) error

// ParseFile reads the policy directives of the config file at path into a table, at now.
// An error names the file and the line. Entries must follow the policy they belong to.
func ParseFile(path string, now int64, words Words, check CheckArgs) (Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := Table{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		ws, err := words(line)
		if err != nil || len(ws) == 0 {
			continue // the options' reader judges these lines
		}
		d := strings.ToLower(ws[0])
		if !Directive(d) {
			continue
		}
		if err := t.directive(d, ws[1:], n, now, check); err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", path, n, d, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// directive adds one directive's policy or entry to t.
func (t Table) directive(d string, args []string, line int, now int64, check CheckArgs) error {
	if d == "policy" {
		p, err := ParsePolicy(args)
		if err != nil {
			return err
		}
		if old := t[p.Name]; old != nil {
			return fmt.Errorf("policy '%s' is declared twice (line %d first)", p.Name, old.Line)
		}
		if err := check(p.Args); err != nil {
			return err
		}
		p.Line = line
		t[p.Name] = p
		return nil
	}
	if len(args) < 2 {
		return fmt.Errorf("takes a policy name and a subject")
	}
	p := t[args[0]]
	if p == nil {
		return fmt.Errorf("no policy '%s' declared above", trunc(args[0]))
	}
	kind := map[string]EntryKind{"policy-override": Override, "policy-allow": Allow, "policy-deny": Deny}[d]
	e, err := ParseEntry(kind, args[1:], now)
	if err != nil {
		return err
	}
	if kind == Override {
		if err := check(e.Args); err != nil {
			return err
		}
	}
	p.Put(e)
	return nil
}
