package envoyrls

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// limit is a file of one descriptor with the rate_limit given, on line 3.
func limit(rateLimit string) string {
	return "domain: d\ndescriptors:\n  - key: k\n    rate_limit: " + rateLimit + "\n"
}

func TestParseErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct{ name, yaml, err string }{
		{"no domain", "descriptors: []\n", "f.yaml: domain is missing or empty"},
		{"no key", "domain: d\ndescriptors:\n  - value: v\n", "f.yaml:3: a descriptor needs a key"},
		{"unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n", "f.yaml:3: unit must be"},
		{"unknown field", "domain: d\ndescriptors:\n  - key: k\n    ratelimit: {}\n", "f.yaml:4: unknown field 'ratelimit'"},
		{"twice", "domain: d\ndescriptors:\n  - key: k\n  - key: k\n", "f.yaml:4: descriptor d.k is declared twice"},
		{"algorithm", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: magic}\n", "f.yaml:3: algorithm must be"},
		{"negative", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: -1}\n", "f.yaml:3: requests_per_unit must be"},
		{"unlimited with unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, unit: second}\n", "f.yaml:3: an unlimited rate_limit"},
		{"bad yaml", "domain: [\n", "f.yaml: yaml:"},
		{"bad share", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, tiers: {a: 2}}\n", "f.yaml:3: tier 'a': share must be"},
		{"tiers as a list", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, tiers: [a]}\n", "f.yaml: yaml:"},
		{"tier with =", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, tiers: {a=b: 1}}\n", "f.yaml:3: tier name 'a=b'"},
		{"priority key as a level", "domain: d\npriority_key: k\ndescriptors:\n  - key: k\n", "f.yaml:4: descriptor key 'k' is the domain's priority_key"},
		{"zone on gcra", limit("{unit: month, requests_per_unit: 1, time_zone: UTC}"), "f.yaml:3: time_zone needs algorithm: window"},
		{"zone on an hour", limit("{unit: hour, requests_per_unit: 1, algorithm: window, time_zone: UTC}"), "f.yaml:3: time_zone needs algorithm: window"},
		{"zone on a multiple", limit("{unit: week, unit_multiplier: 2, requests_per_unit: 1, algorithm: window, time_zone: UTC}"), "f.yaml:3: time_zone needs"},
		{"unknown zone", limit("{unit: month, requests_per_unit: 1, algorithm: window, time_zone: Mars/Base}"), "f.yaml:3: unknown time_zone 'Mars/Base'"},
		{"a path", limit("{unit: month, requests_per_unit: 1, algorithm: window, time_zone: ../../etc/passwd}"), "f.yaml:3: time_zone '../../etc/passwd' is not"},
		{"Local", limit("{unit: month, requests_per_unit: 1, algorithm: window, time_zone: Local}"), "f.yaml:3: time_zone 'Local' is not"},
		{"global with tiers", limit("{unit: second, requests_per_unit: 1, tiers: {a: 1}, global: true}"), "f.yaml:3: a global rate_limit takes no tiers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tc.yaml))
			require.ErrorContains(t, err, tc.err)
		})
	}
}

func TestPoliciesAndMatch(t *testing.T) {
	c, err := Parse("f.yaml", []byte(`
domain: web
descriptors:
  - key: path
    value: /api/*
    descriptors:
      - key: user
        rate_limit: {unit: minute, requests_per_unit: 60, algorithm: tokenbucket}
  - key: path
    value: /api/v1/*
    rate_limit: {unit: second, requests_per_unit: 5, unit_multiplier: 10, algorithm: sliding-approx}
  - key: path
    value: /health
    rate_limit: {unit: second, requests_per_unit: 100}
  - key: path
    rate_limit: {unit: hour, requests_per_unit: 1000, algorithm: window}
`))
	require.NoError(t, err)
	args := map[string][]string{}
	for n, p := range c.Policies {
		args[n] = p.Args
	}
	require.Equal(t, map[string][]string{
		"rls.web.path_-api--.user": {"TOKENBUCKET", "60", "60", "60"},
		"rls.web.path_-api-v1--":   {"SLIDE", "5", "10", "APPROX"},
		"rls.web.path_-health":     {"THROTTLE", "99", "100", "1"},
		"rls.web.path":             {"WINDOW", "1000", "3600"},
	}, args)
	d := c.Domains["web"]
	for _, tc := range []struct {
		entries         []Entry
		policy, subject string
	}{
		{[]Entry{{"path", "/health"}}, "rls.web.path_-health", "-"},
		{[]Entry{{"path", "/api/v1/x"}}, "rls.web.path_-api-v1--", "/api/v1/x"}, // the longest wildcard
		{[]Entry{{"path", "/api/x"}}, "", ""},                                   // as envoyproxy/ratelimit: the wildcard is met first, and its level has no limit
		{[]Entry{{"path", "/api/x"}, {"user", "ann"}}, "rls.web.path_-api--.user", "/api/x:ann"},
		{[]Entry{{"path", "/api/x"}, {"user", "ann"}, {"more", "x"}}, "", ""},
		{[]Entry{{"other", "x"}}, "", ""},
		{nil, "", ""},
	} {
		r, subject := d.Match(tc.entries)
		if tc.policy == "" {
			require.Nil(t, r, "%v", tc.entries)
			continue
		}
		require.NotNil(t, r, "%v", tc.entries)
		require.Equal(t, tc.policy, r.Policy)
		require.Equal(t, tc.subject, subject)
	}
}

func TestPolicyNamesAreValidAndUnique(t *testing.T) {
	long := ""
	for i := 0; i < 200; i++ {
		long += "x"
	}
	c, err := Parse("f.yaml", []byte("domain: d\ndescriptors:\n  - key: a\n    value: 'b c'\n    rate_limit: {unit: second, requests_per_unit: 1}\n  - key: a\n    value: 'b/c'\n    rate_limit: {unit: second, requests_per_unit: 1}\n  - key: "+long+"\n    rate_limit: {unit: second, requests_per_unit: 1}\n"))
	require.NoError(t, err)
	require.Len(t, c.Policies, 3)
	for n := range c.Policies {
		require.LessOrEqual(t, len(n), 128)
		for _, ch := range []byte(n) {
			require.True(t, 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || ch == '_' || ch == '-' || ch == '.', n)
		}
	}
}

func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	_, err := Load(dir)
	require.ErrorIs(t, err, ErrNoFiles)
	write("a.yaml", "domain: one\n")
	write("b.yml", "domain: two\n")
	write(".hidden.yaml", "not: [yaml\n")
	write("notes.txt", "not yaml\n")
	c, err := Load(dir)
	require.NoError(t, err)
	require.Len(t, c.Domains, 2)
	write("c.yaml", "domain: one\n")
	_, err = Load(dir)
	require.ErrorContains(t, err, "c.yaml: domain 'one' is declared again (first in "+filepath.Join(dir, "a.yaml")+")")
}

// TestCalendarUnits: a fixed window of a week, a month or a year counts in the calendar's
// periods (WINDOW's 1w, 1mo, 1y), in UTC or in time_zone, which also makes a day the
// zone's; the rate algorithms keep the units' seconds (a month is 30 days), as
// envoyproxy/ratelimit counts them.
func TestCalendarUnits(t *testing.T) {
	c, err := Parse("f.yaml", []byte(`
domain: billing
descriptors:
  - key: week
    rate_limit: {unit: week, requests_per_unit: 700, algorithm: window}
  - key: month
    rate_limit: {unit: month, requests_per_unit: 10000, algorithm: window, time_zone: Europe/Berlin}
  - key: year
    rate_limit: {unit: year, requests_per_unit: 100000, algorithm: window}
  - key: day
    rate_limit: {unit: day, requests_per_unit: 500, algorithm: window, time_zone: America/New_York}
  - key: utcday
    rate_limit: {unit: day, requests_per_unit: 500, algorithm: window}
  - key: quarter
    rate_limit: {unit: month, requests_per_unit: 30000, unit_multiplier: 3, algorithm: window}
  - key: gcra
    rate_limit: {unit: month, requests_per_unit: 10000}
`))
	require.NoError(t, err)
	args := map[string][]string{}
	for n, p := range c.Policies {
		args[n] = p.Args
	}
	require.Equal(t, map[string][]string{
		"rls.billing.week":    {"WINDOW", "700", "1w"},
		"rls.billing.month":   {"WINDOW", "10000", "1mo", "TZ", "Europe/Berlin"},
		"rls.billing.year":    {"WINDOW", "100000", "1y"},
		"rls.billing.day":     {"WINDOW", "500", "1d", "TZ", "America/New_York"},
		"rls.billing.utcday":  {"WINDOW", "500", "86400"},
		"rls.billing.quarter": {"WINDOW", "30000", "7776000"}, // 90 days: three months have no calendar period of their own
		"rls.billing.gcra":    {"THROTTLE", "9999", "10000", "2592000"},
	}, args)
}

// TestGlobalLimit: global: true makes the descriptor's policy GLOBAL (decided from each
// instance's allowance in upstream mode); an allowance has no tiers to honour.
func TestGlobalLimit(t *testing.T) {
	c, err := Parse("f.yaml", []byte(`
domain: api
descriptors:
  - key: tenant
    rate_limit: {unit: second, requests_per_unit: 100, global: true}
  - key: path
    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: sliding-approx, global: true}
`))
	require.NoError(t, err)
	require.Equal(t, []string{"THROTTLE", "99", "100", "1", "GLOBAL"}, c.Policies["rls.api.tenant"].Args)
	require.Equal(t, []string{"SLIDE", "10", "60", "APPROX", "GLOBAL"}, c.Policies["rls.api.path"].Args)
}
