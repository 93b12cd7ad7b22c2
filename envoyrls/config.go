package envoyrls

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"gopkg.in/yaml.v3"

	"github.com/throttledhq/throttled/algorithms"
	"github.com/throttledhq/throttled/policy"
)

// The configuration, as envoyproxy/ratelimit's users write it, one domain a file:
//
//	domain: messaging
//	response_headers: true          # throttled's: RateLimit headers on every answer
//	descriptors:
//	  - key: message_type
//	    value: marketing
//	    descriptors:
//	      - key: to_number
//	        rate_limit: {unit: day, requests_per_unit: 5, algorithm: sliding}
//	  - key: to_number
//	    rate_limit: {unit: day, requests_per_unit: 100}
//
// Each descriptor with a rate_limit becomes a Rule, and each limited Rule a policy named
// "rls." + the descriptor's path as envoyproxy/ratelimit names it in its logs
// (messaging.message_type_marketing.to_number), every byte a policy name may not hold
// written '-'. The policy's key holds the request's values where the descriptor names none
// or a wildcard: that is the subject CHECK sees, so overrides and allow and deny lists match
// it (an address for remote_address).

// Algorithms maps the algorithm a rate_limit may name (throttled's addition) to the verb its
// policy uses; gcra is the default. A fixed window is envoyproxy/ratelimit's own, and admits
// twice the limit across a window's edge.
var Algorithms = map[string]string{
	"gcra":           "THROTTLE",
	"sliding":        "SLIDE",
	"sliding-approx": "SLIDE",
	"window":         "WINDOW",
	"tokenbucket":    "TOKENBUCKET",
}

// units are the rate_limit units and their seconds (a month 30 days, a year 365, as
// envoyproxy/ratelimit counts them). A fixed window (algorithm: window) of one week, month
// or year is instead the calendar's (calendarArgs).
var units = map[string]int64{
	"second": 1, "minute": 60, "hour": 3600, "day": 86400,
	"week": 7 * 86400, "month": 30 * 86400, "year": 365 * 86400,
}

// Rule is one descriptor of the configuration that has a rate_limit.
type Rule struct {
	Policy         string // the policy's name; empty when Unlimited
	Args           []string
	Name           string // rate_limit's name, that replaces refers to
	Replaces       []string
	Unit           string // lower case
	PerUnit        uint32
	Window         int64 // seconds: the unit times unit_multiplier
	Unlimited      bool
	Shadow         bool
	DetailedMetric bool
	File           string
	Line           int
	// current is the rule's current_limit, made once: responses share it (marshalling only
	// reads it).
	current *rlsv3.RateLimitResponse_RateLimit
}

// node is a descriptor of the tree requests are matched against.
type node struct {
	rule     *Rule
	children map[string]*node // by key "\x00" value, or the key alone for any value
	wild     []wildcard       // values ending in '*', longest prefix first
}

type wildcard struct {
	key, prefix string
	n           *node
}

// Domain is one domain's descriptors.
type Domain struct {
	Name    string
	Headers bool // response_headers: true
	// PriorityKey is the key of the entry that names a descriptor's priority tier
	// (priority_key): such an entry is taken out before the descriptor is matched.
	PriorityKey string
	root        *node
}

// Config is a loaded configuration: its domains by name, and the policies their rules make.
type Config struct {
	Domains  map[string]*Domain
	Policies policy.Table
	Rules    int
}

// yamlDescriptor and yamlLimit are the file's form.
type yamlDescriptor struct {
	Key            string            `yaml:"key"`
	Value          string            `yaml:"value"`
	RateLimit      *yamlLimit        `yaml:"rate_limit"`
	Descriptors    []*yamlDescriptor `yaml:"descriptors"`
	ShadowMode     bool              `yaml:"shadow_mode"`
	DetailedMetric bool              `yaml:"detailed_metric"`
	line           int
}

type yamlLimit struct {
	Name            string `yaml:"name"`
	Unit            string `yaml:"unit"`
	RequestsPerUnit int64  `yaml:"requests_per_unit"`
	UnitMultiplier  int64  `yaml:"unit_multiplier"`
	Unlimited       bool   `yaml:"unlimited"`
	Replaces        []struct {
		Name string `yaml:"name"`
	} `yaml:"replaces"`
	Algorithm string            `yaml:"algorithm"`
	Tiers     map[string]string `yaml:"tiers"`
	TimeZone  string            `yaml:"time_zone"`
	Global    bool              `yaml:"global"`
}

type yamlFile struct {
	Domain          string            `yaml:"domain"`
	Descriptors     []*yamlDescriptor `yaml:"descriptors"`
	ResponseHeaders bool              `yaml:"response_headers"`
	PriorityKey     string            `yaml:"priority_key"`
}

// ErrNoFiles is Load's error for a directory that holds no .yaml or .yml file.
var ErrNoFiles = errors.New("no .yaml or .yml file")

// Files returns the configuration files of path: path itself, or the .yaml and .yml files of
// the directory it names (not its subdirectories, nor files starting with '.'), sorted.
func Files(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || !(strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			continue
		}
		out = append(out, filepath.Join(path, n))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrNoFiles)
	}
	return out, nil
}

// Load reads the configuration at path (a file, or a directory of them). An error names the
// file and, where the YAML says, the line.
func Load(path string) (*Config, error) {
	files, err := Files(path)
	if err != nil {
		return nil, err
	}
	c := &Config{Domains: map[string]*Domain{}, Policies: policy.Table{}}
	from := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := c.add(f, b, from); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Parse reads one file's bytes, named file in errors, into a configuration of its own.
func Parse(file string, b []byte) (*Config, error) {
	c := &Config{Domains: map[string]*Domain{}, Policies: policy.Table{}}
	if err := c.add(file, b, map[string]string{}); err != nil {
		return nil, err
	}
	return c, nil
}

// add adds one file's domain to c; from tells which file declared each domain.
func (c *Config) add(file string, b []byte, from map[string]string) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var yf yamlFile
	if err := doc.Decode(&yf); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := checkKeys(&doc); err != nil {
		return fmt.Errorf("%s:%w", file, err)
	}
	lines(&doc, yf.Descriptors)
	if yf.Domain == "" {
		return fmt.Errorf("%s: domain is missing or empty", file)
	}
	if f, ok := from[yf.Domain]; ok {
		return fmt.Errorf("%s: domain '%s' is declared again (first in %s)", file, yf.Domain, f)
	}
	from[yf.Domain] = file
	d := &Domain{Name: yf.Domain, Headers: yf.ResponseHeaders, PriorityKey: yf.PriorityKey, root: &node{}}
	if err := c.descriptors(file, d, d.root, yf.Domain, yf.Descriptors); err != nil {
		return err
	}
	c.Domains[d.Name] = d
	return nil
}

// descriptors adds ds below n, of domain d; path is the envoyproxy/ratelimit name of n.
func (c *Config) descriptors(file string, d *Domain, n *node, path string, ds []*yamlDescriptor) error {
	for _, yd := range ds {
		if yd == nil {
			continue
		}
		where := fmt.Sprintf("%s:%d", file, yd.line)
		if yd.Key == "" {
			return fmt.Errorf("%s: a descriptor needs a key", where)
		}
		if yd.Key == d.PriorityKey {
			return fmt.Errorf("%s: descriptor key '%s' is the domain's priority_key, which names a tier, not a level", where, yd.Key)
		}
		id := yd.Key
		if yd.Value != "" {
			id += "_" + yd.Value
		}
		mapKey := yd.Key
		if yd.Value != "" {
			mapKey += "\x00" + yd.Value
		}
		child := &node{}
		if strings.HasSuffix(yd.Value, "*") {
			for _, w := range n.wild {
				if w.key == yd.Key && w.prefix == strings.TrimSuffix(yd.Value, "*") {
					return fmt.Errorf("%s: descriptor %s.%s is declared twice", where, path, id)
				}
			}
			n.wild = append(n.wild, wildcard{key: yd.Key, prefix: strings.TrimSuffix(yd.Value, "*"), n: child})
			sort.SliceStable(n.wild, func(i, j int) bool { return len(n.wild[i].prefix) > len(n.wild[j].prefix) })
		} else {
			if n.children == nil {
				n.children = map[string]*node{}
			}
			if n.children[mapKey] != nil {
				return fmt.Errorf("%s: descriptor %s.%s is declared twice", where, path, id)
			}
			n.children[mapKey] = child
		}
		name := path + "." + id
		if yd.RateLimit != nil {
			r, err := c.rule(where, name, yd)
			if err != nil {
				return err
			}
			r.File, r.Line = file, yd.line
			child.rule = r
			c.Rules++
		}
		if err := c.descriptors(file, d, child, name, yd.Descriptors); err != nil {
			return err
		}
	}
	return nil
}

// rule makes the Rule and its policy of a descriptor's rate_limit.
func (c *Config) rule(where, name string, yd *yamlDescriptor) (*Rule, error) {
	yl := yd.RateLimit
	r := &Rule{Name: yl.Name, Unlimited: yl.Unlimited, Shadow: yd.ShadowMode, DetailedMetric: yd.DetailedMetric}
	for _, rep := range yl.Replaces {
		if rep.Name == "" {
			return nil, fmt.Errorf("%s: replaces needs a name", where)
		}
		r.Replaces = append(r.Replaces, rep.Name)
	}
	if r.Unlimited {
		if yl.Unit != "" || yl.RequestsPerUnit != 0 {
			return nil, fmt.Errorf("%s: an unlimited rate_limit takes no unit nor requests_per_unit", where)
		}
		return r, nil
	}
	r.Unit = strings.ToLower(yl.Unit)
	secs, ok := units[r.Unit]
	if !ok {
		return nil, fmt.Errorf("%s: unit must be second, minute, hour, day, week, month or year, got '%s'", where, yl.Unit)
	}
	if yl.RequestsPerUnit < 0 || yl.RequestsPerUnit > math.MaxUint32 {
		return nil, fmt.Errorf("%s: requests_per_unit must be between 0 and %d, got %d", where, uint32(math.MaxUint32), yl.RequestsPerUnit)
	}
	r.PerUnit = uint32(yl.RequestsPerUnit)
	mult := yl.UnitMultiplier
	if mult == 0 {
		mult = 1
	}
	if mult < 0 || mult > 1e6 {
		return nil, fmt.Errorf("%s: unit_multiplier must be between 1 and 1000000, got %d", where, yl.UnitMultiplier)
	}
	r.Window = secs * mult
	alg := strings.ToLower(yl.Algorithm)
	if alg == "" {
		alg = "gcra"
	}
	verb, ok := Algorithms[alg]
	if !ok {
		return nil, fmt.Errorf("%s: algorithm must be gcra, sliding, sliding-approx, window or tokenbucket, got '%s'", where, yl.Algorithm)
	}
	// requests_per_unit 0 denies everything (envoyproxy/ratelimit's way to block a
	// value): the policy holds one unit and every request asks for more (Cost).
	n := max(int64(r.PerUnit), 1)
	period := strconv.FormatInt(secs*mult, 10)
	count := strconv.FormatInt(n, 10)
	switch verb {
	case "THROTTLE":
		r.Args = []string{verb, strconv.FormatInt(n-1, 10), count, period}
	case "TOKENBUCKET":
		r.Args = []string{verb, count, count, period}
	default:
		r.Args = []string{verb, count, period}
		if alg == "sliding-approx" {
			r.Args = append(r.Args, "APPROX")
		}
	}
	if err := calendarArgs(where, r, verb, mult, yl.TimeZone); err != nil {
		return nil, err
	}
	if len(yl.Tiers) > 0 {
		// TIERS name=share, the shares as CHECK reads them, the names in a fixed order.
		names := make([]string, 0, len(yl.Tiers))
		for t := range yl.Tiers {
			names = append(names, t)
		}
		sort.Strings(names)
		r.Args = append(r.Args, "TIERS")
		for _, t := range names {
			if t == "" || strings.ContainsAny(t, "= \t") {
				return nil, fmt.Errorf("%s: tier name '%s' must be non-empty, without '=' or spaces", where, t)
			}
			if _, ok := algorithms.ParseShare([]byte(yl.Tiers[t])); !ok {
				return nil, fmt.Errorf("%s: tier '%s': share must be a number above 0 and at most 1, got '%s'", where, t, yl.Tiers[t])
			}
			r.Args = append(r.Args, t+"="+yl.Tiers[t])
		}
	}
	if yl.Global {
		// GLOBAL (upstream mode): decided from this instance's allowance, agreed on
		// through the upstream; an allowance has no tiers to honour.
		if len(yl.Tiers) > 0 {
			return nil, fmt.Errorf("%s: a global rate_limit takes no tiers", where)
		}
		r.Args = append(r.Args, "GLOBAL")
	}
	r.current = &rlsv3.RateLimitResponse_RateLimit{Name: r.Name, RequestsPerUnit: r.PerUnit, Unit: unitCode(r.Unit)}
	r.Policy = c.policyName(name)
	c.Policies[r.Policy] = &policy.Policy{Name: r.Policy, Args: r.Args, Shadow: r.Shadow}
	return r, nil
}

// policyName returns the policy name of the descriptor path name: "rls." and name with the
// bytes a policy name may not hold written '-', made unique, at most 128 bytes.
func (c *Config) policyName(name string) string {
	b := []byte("rls." + name)
	for i, ch := range b {
		if !('a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || ch == '_' || ch == '-' || ch == '.') {
			b[i] = '-'
		}
	}
	s := string(b)
	if len(s) > 128 || c.Policies[s] != nil {
		h := fnv.New64a()
		h.Write([]byte(name))
		suffix := fmt.Sprintf("-%016x", h.Sum64())
		s = s[:min(len(s), 128-len(suffix))] + suffix
	}
	return s
}

// checkKeys refuses a mapping key the format does not have, with its line: a typo such as
// request_per_unit would otherwise leave a limit out unnoticed.
func checkKeys(doc *yaml.Node) error {
	known := map[string]bool{
		"domain": true, "descriptors": true, "response_headers": true, "key": true, "value": true,
		"rate_limit": true, "shadow_mode": true, "detailed_metric": true, "name": true, "unit": true,
		"requests_per_unit": true, "unit_multiplier": true, "unlimited": true, "replaces": true, "algorithm": true,
		"tiers": true, "priority_key": true, "time_zone": true, "global": true,
	}
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		for i, ch := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				if !known[ch.Value] {
					return fmt.Errorf("%d: unknown field '%s'", ch.Line, ch.Value)
				}
				continue
			}
			if n.Kind == yaml.MappingNode && n.Content[i-1].Value == "tiers" {
				continue // the tiers' names are the user's
			}
			if err := walk(ch); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(doc)
}

// lines sets each descriptor's line from the document's nodes, in the order Decode filled them.
func lines(doc *yaml.Node, ds []*yamlDescriptor) {
	var list func(n *yaml.Node, ds []*yamlDescriptor)
	field := func(n *yaml.Node, name string) *yaml.Node {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				return n.Content[i+1]
			}
		}
		return nil
	}
	list = func(n *yaml.Node, ds []*yamlDescriptor) {
		if n == nil || n.Kind != yaml.SequenceNode {
			return
		}
		for i, item := range n.Content {
			if i < len(ds) && ds[i] != nil {
				ds[i].line = item.Line
				list(field(item, "descriptors"), ds[i].Descriptors)
			}
		}
	}
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	list(field(root, "descriptors"), ds)
}

// calendars are the units whose fixed window (algorithm: window, unit_multiplier 1) is a
// calendar period, WINDOW's: the ISO week, the month and the year, in UTC or in the
// rate_limit's time_zone (throttled's addition), which also makes a day the zone's.
// envoyproxy/ratelimit counts them as 7, 30 and 365 days since the epoch (its weeks start
// on Thursday), or, with USE_CALENDAR_MONTH_RATE_LIMIT, the UTC calendar month for a month.
var calendars = map[string]string{"day": "1d", "week": "1w", "month": "1mo", "year": "1y"}

// calendarArgs makes r's WINDOW count in calendar periods where its unit is one, and adds
// TZ time_zone; time_zone on a limit that has no calendar period is an error.
func calendarArgs(where string, r *Rule, verb string, mult int64, zone string) error {
	cal, ok := calendars[r.Unit]
	if verb != "WINDOW" || mult != 1 || !ok || r.Unit == "day" && zone == "" {
		if zone != "" {
			return fmt.Errorf("%s: time_zone needs algorithm: window and a unit of day, week, month or year (unit_multiplier 1)", where)
		}
		return nil
	}
	r.Args[2] = cal
	if zone == "" {
		return nil
	}
	if zone == "Local" || strings.ContainsAny(zone, ". \\") || strings.Contains(zone, "//") || strings.HasPrefix(zone, "/") {
		return fmt.Errorf("%s: time_zone '%s' is not an IANA time zone's name (Europe/Berlin, America/New_York, UTC)", where, zone)
	}
	if _, err := time.LoadLocation(zone); err != nil {
		return fmt.Errorf("%s: unknown time_zone '%s': an IANA name such as Europe/Berlin, America/New_York or UTC", where, zone)
	}
	r.Args = append(r.Args, "TZ", zone)
	return nil
}
