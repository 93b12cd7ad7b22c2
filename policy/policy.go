// Package policy holds named rate-limit policies, their per-subject overrides and their
// allow and deny lists, as the server keeps them: parsed from commands, from the config
// file's directives, or from the one record the keyspace stores them in, and matched
// against a subject on every CHECK.
//
// A request's path: the server reads the stored Table (Decode) or the file's (ParseFile),
// compiles each Policy's verb into its own limit (the server knows the verbs; this package
// only splits the words), and for each CHECK asks the policy's Lists which entry applies to
// the subject (Match): a deny entry, an allow entry, or the most specific override.
//
// The package knows nothing of RESP or of the keyspace: it never imports the server.
package policy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// EntryKind says what an entry does for the subjects it matches.
type EntryKind uint8

// The kinds of entries. The numbers are stored, never reorder them.
const (
	Override EntryKind = iota + 1 // another verb and parameters for the subject
	Allow                         // the subject always passes, consuming nothing
	Deny                          // the subject never passes
)

// String returns the entry kind's name as POLICY.LISTS shows it.
func (k EntryKind) String() string {
	switch k {
	case Override:
		return "override"
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Entry is an override, allow or deny entry of a policy.
type Entry struct {
	Kind    EntryKind
	Subject string   // an exact subject, a prefix ending in '*', or a CIDR network (10.0.0.0/8)
	Expire  int64    // Unix ns at which the entry lapses; 0 means never
	Args    []string // Override: the verb and its parameters
}

// Policy is a named limit: a native verb with its parameters, and what CHECK does around it.
type Policy struct {
	Name string
	// Args is the verb and its parameters (THROTTLE 99 100 1m); nil in a stored record that
	// only adds entries to a policy of the config file.
	Args    []string
	Soft    float64 // the share of the limit used at or above which CHECK says warning; 0: never
	Shadow  bool    // denials pass, with the status shadow, and are counted
	Entries []Entry
	Line    int // the config file's line that declared it; 0 when it came from a command
}

// Table is a set of policies by name.
type Table map[string]*Policy

// Errors.
var (
	// ErrName is returned for a policy name that is not made of letters, digits, '_', '-' and '.'.
	ErrName = errors.New("policy names are 1 to 128 letters, digits, '_', '-' or '.'")
	// ErrBadRecord is returned by Decode for bytes it did not encode.
	ErrBadRecord = errors.New("policy: damaged record")
)

// ValidName reports whether name may name a policy: the key CHECK derives from it
// (policy:<name>:<subject>) then names one policy and one subject only, and CHECK's list of
// names (a,b) splits on commas.
func ValidName(name []byte) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// ParsePolicy parses "name verb params... [SOFT ratio] [SHADOW]" (POLICY.SET's arguments, the
// policy directive's words). SOFT and SHADOW may stand anywhere after the verb; the verb's
// own words are left in Args for the server to check.
func ParsePolicy(args []string) (*Policy, error) {
	if len(args) < 2 {
		return nil, errors.New("a policy takes a name, a verb and its parameters")
	}
	if !ValidName([]byte(args[0])) {
		return nil, fmt.Errorf("%w, got '%s'", ErrName, trunc(args[0]))
	}
	p := &Policy{Name: args[0], Args: []string{args[1]}}
	for i := 2; i < len(args); i++ {
		switch {
		case strings.EqualFold(args[i], "soft"):
			if i+1 >= len(args) {
				return nil, errors.New("SOFT needs a ratio")
			}
			r, err := strconv.ParseFloat(args[i+1], 64)
			if err != nil || !(r > 0 && r <= 1) {
				return nil, fmt.Errorf("SOFT must be a ratio greater than 0 and at most 1, got '%s'", trunc(args[i+1]))
			}
			p.Soft = r
			i++
		case strings.EqualFold(args[i], "shadow"):
			p.Shadow = true
		default:
			p.Args = append(p.Args, args[i])
		}
	}
	return p, nil
}

// ParseEntry parses an entry's words after the policy's name: "subject verb params... [EX
// seconds]" for an Override, "subject [EX seconds]" for Allow and Deny. EX counts from now
// (Unix ns).
func ParseEntry(kind EntryKind, args []string, now int64) (Entry, error) {
	e := Entry{Kind: kind}
	if len(args) < 1 {
		return e, errors.New("an entry takes a subject")
	}
	if err := CheckSubject(args[0]); err != nil {
		return e, err
	}
	e.Subject = args[0]
	for i := 1; i < len(args); i++ {
		if strings.EqualFold(args[i], "ex") && i+1 < len(args) {
			n, err := strconv.ParseInt(args[i+1], 10, 64)
			if err != nil || n <= 0 || n > (math.MaxInt64-now)/1_000_000_000-1 {
				return e, fmt.Errorf("EX must be a whole number of seconds greater than 0, got '%s'", trunc(args[i+1]))
			}
			e.Expire = now + n*1e9
			i++
			continue
		}
		if kind != Override {
			return e, fmt.Errorf("unknown option '%s'", trunc(args[i]))
		}
		e.Args = append(e.Args, args[i])
	}
	if kind == Override && len(e.Args) == 0 {
		return e, errors.New("an override takes a verb and its parameters")
	}
	return e, nil
}

// CheckSubject checks an entry's subject: a CIDR network when it holds '/', else any
// non-empty string (a trailing '*' makes it a prefix).
func CheckSubject(s string) error {
	if s == "" || s == "*" {
		return errors.New("a subject must not be empty (nor '*' alone)")
	}
	if strings.Contains(s, "/") {
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Errorf("subject '%s' holds '/' but is no CIDR network: %v", trunc(s), err)
		}
	}
	return nil
}

// Live returns the entries of p not lapsed at now.
func (p *Policy) Live(now int64) []Entry {
	var out []Entry
	for _, e := range p.Entries {
		if e.Expire == 0 || now < e.Expire {
			out = append(out, e)
		}
	}
	return out
}

// Put adds e to p, replacing the entry of the same kind class and subject: an override
// replaces an override, and allow and deny replace each other (a subject is on one list).
func (p *Policy) Put(e Entry) {
	list := func(k EntryKind) bool { return k == Allow || k == Deny }
	for i, o := range p.Entries {
		if o.Subject == e.Subject && (o.Kind == e.Kind || list(o.Kind) && list(e.Kind)) {
			p.Entries[i] = e
			return
		}
	}
	p.Entries = append(p.Entries, e)
}

// Remove removes the entries of subject whose kind keep reports, and returns how many.
func (p *Policy) Remove(subject string, kind func(EntryKind) bool) int {
	n := len(p.Entries)
	p.Entries = slices.DeleteFunc(p.Entries, func(e Entry) bool { return e.Subject == subject && kind(e.Kind) })
	return n - len(p.Entries)
}

// Clone returns a deep copy of p, to change while readers hold p.
func (p *Policy) Clone() *Policy {
	q := *p
	q.Args = slices.Clone(p.Args)
	q.Entries = slices.Clone(p.Entries)
	return &q
}

// Names returns the table's names, sorted.
func (t Table) Names() []string {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// recordVersion is the first byte of an encoded table.
const recordVersion = 1

// Encode returns the table as the bytes of its keyspace record, leaving out the entries
// lapsed at now.
func (t Table) Encode(now int64) []byte {
	b := []byte{recordVersion}
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	strs := func(ss []string) {
		b = binary.AppendUvarint(b, uint64(len(ss)))
		for _, s := range ss {
			str(s)
		}
	}
	names := t.Names()
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		p := t[n]
		str(p.Name)
		strs(p.Args)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.Soft))
		shadow := byte(0)
		if p.Shadow {
			shadow = 1
		}
		b = append(b, shadow)
		live := p.Live(now)
		b = binary.AppendUvarint(b, uint64(len(live)))
		for _, e := range live {
			b = append(b, byte(e.Kind))
			str(e.Subject)
			b = binary.LittleEndian.AppendUint64(b, uint64(e.Expire))
			strs(e.Args)
		}
	}
	return b
}

// Decode returns the table Encode made into b.
func Decode(b []byte) (Table, error) {
	if len(b) == 0 || b[0] != recordVersion {
		return nil, ErrBadRecord
	}
	b = b[1:]
	bad := false
	num := func() uint64 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)) {
			bad = true
			return 0
		}
		b = b[k:]
		return n
	}
	str := func() string {
		n := num()
		if bad || n > uint64(len(b)) {
			bad = true
			return ""
		}
		s := string(b[:n])
		b = b[n:]
		return s
	}
	strs := func() []string {
		n := num()
		var ss []string
		for i := uint64(0); i < n && !bad; i++ {
			ss = append(ss, str())
		}
		return ss
	}
	u64 := func() uint64 {
		if len(b) < 8 {
			bad = true
			return 0
		}
		v := binary.LittleEndian.Uint64(b)
		b = b[8:]
		return v
	}
	t := Table{}
	n := num()
	for i := uint64(0); i < n && !bad; i++ {
		p := &Policy{Name: str(), Args: strs(), Soft: math.Float64frombits(u64())}
		if len(b) < 1 {
			return nil, ErrBadRecord
		}
		p.Shadow, b = b[0] == 1, b[1:]
		ne := num()
		for j := uint64(0); j < ne && !bad; j++ {
			if len(b) < 1 {
				return nil, ErrBadRecord
			}
			e := Entry{Kind: EntryKind(b[0])}
			b = b[1:]
			e.Subject, e.Expire, e.Args = str(), int64(u64()), strs()
			p.Entries = append(p.Entries, e)
		}
		t[p.Name] = p
	}
	if bad || len(b) != 0 {
		return nil, ErrBadRecord
	}
	return t, nil
}

func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
