package httpapi

import (
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/ratelimit"
)

func TestParseProxies(t *testing.T) {
	p, err := ParseProxies(DefaultProxies)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.0/8 ::1/128", p.String())
	p, err = ParseProxies("10.1.2.3/8, 192.0.2.7 2001:db8::/32")
	require.NoError(t, err)
	require.Equal(t, "10.0.0.0/8 192.0.2.7/32 2001:db8::/32", p.String())
	require.True(t, p.Contains(netip.MustParseAddr("::ffff:10.9.9.9")), "an IPv4 peer on a dual-stack listener")
	require.False(t, p.Contains(netip.MustParseAddr("192.0.2.8")))
	p, err = ParseProxies("")
	require.NoError(t, err)
	require.Empty(t, p)
	require.False(t, p.Contains(netip.MustParseAddr("127.0.0.1")))
	for _, bad := range []string{"10.0.0.0/33", "localhost", "fe80::1%eth0", "10.0.0.0/8/8"} {
		_, err := ParseProxies(bad)
		require.ErrorContains(t, err, "is not a CIDR", bad)
	}
}

// TestSubjectTrust: a header names the subject only when the peer is a trusted proxy; the
// hops are read from the right, so what a client prepends changes nothing.
func TestSubjectTrust(t *testing.T) {
	proxies := Proxies{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:1::/48")}
	for _, tc := range []struct {
		name, peer, from string
		header           []string
		want, err        string
	}{
		{"an untrusted peer's X-Forwarded-For", "198.51.100.9:4000", "", []string{"X-Forwarded-For", "203.0.113.1"}, "198.51.100.9", ""},
		{"an untrusted peer's Forwarded", "198.51.100.9:4000", "forwarded", []string{"Forwarded", "for=203.0.113.1"}, "198.51.100.9", ""},
		{"an untrusted peer's X-Real-IP", "198.51.100.9:4000", "x-real-ip", []string{"X-Real-IP", "203.0.113.1"}, "198.51.100.9", ""},
		{"an untrusted peer's named header", "198.51.100.9:4000", "header:X-Api-Key", []string{"X-Api-Key", "k1"}, "198.51.100.9", ""},
		{"an untrusted IPv6 peer", "[2001:db8:2::5]:4000", "", []string{"X-Forwarded-For", "203.0.113.1"}, "2001:db8:2::5", ""},
		{"an IPv4 peer of a dual-stack listener", "[::ffff:198.51.100.9]:4000", "", []string{"X-Forwarded-For", "203.0.113.1"}, "198.51.100.9", ""},
		{"a trusted proxy: the hop it appended", "10.0.0.2:4000", "", []string{"X-Forwarded-For", "203.0.113.1"}, "203.0.113.1", ""},
		{"a prepended hop changes nothing", "10.0.0.2:4000", "", []string{"X-Forwarded-For", "198.51.100.77, 203.0.113.1"}, "203.0.113.1", ""},
		{"trusted hops are skipped", "10.0.0.2:4000", "xff", []string{"X-Forwarded-For", "198.51.100.77, 203.0.113.1, 10.0.0.3,10.9.9.9"}, "203.0.113.1", ""},
		{"several header lines are one list", "10.0.0.2:4000", "", []string{"X-Forwarded-For", "198.51.100.77", "X-Forwarded-For", "203.0.113.1, 10.0.0.3"}, "203.0.113.1", ""},
		{"all hops trusted: the leftmost", "10.0.0.2:4000", "", []string{"X-Forwarded-For", "10.0.0.5, 10.0.0.3"}, "10.0.0.5", ""},
		{"a hop with a port", "10.0.0.2:4000", "", []string{"X-Forwarded-For", "203.0.113.1:5555"}, "203.0.113.1", ""},
		{"an IPv6 hop, canonical", "10.0.0.2:4000", "", []string{"X-Forwarded-For", "2001:DB8:0::7"}, "2001:db8::7", ""},
		{"a trusted proxy without the header", "10.0.0.2:4000", "", nil, "10.0.0.2", ""},
		{"Forwarded from a trusted proxy", "10.0.0.2:4000", "forwarded", []string{"Forwarded", `for=198.51.100.77, for=203.0.113.1;proto=https, for="[2001:db8:1::9]:80"`}, "203.0.113.1", ""},
		{"Forwarded's bracketed IPv6 with a port", "10.0.0.2:4000", "forwarded", []string{"Forwarded", `For="[2001:db8:cafe::17]:4711"`}, "2001:db8:cafe::17", ""},
		{"Forwarded's IPv4 with a port", "10.0.0.2:4000", "forwarded", []string{"Forwarded", `for="203.0.113.1:80";by=10.0.0.2`}, "203.0.113.1", ""},
		{"Forwarded's obfuscated client", "10.0.0.2:4000", "forwarded", []string{"Forwarded", `for="_hidden:_port", for=10.0.0.3`}, "_hidden", ""},
		{"Forwarded's unknown client", "10.0.0.2:4000", "forwarded", []string{"Forwarded", `for=unknown`}, "unknown", ""},
		{"Forwarded's elements without for=", "10.0.0.2:4000", "forwarded", []string{"Forwarded", `for=203.0.113.1, proto=https;by=10.0.0.3`}, "203.0.113.1", ""},
		{"Forwarded without any for=", "10.0.0.2:4000", "forwarded", []string{"Forwarded", `proto=https`}, "10.0.0.2", ""},
		{"Forwarded's quoted escapes", "10.0.0.2:4000", "forwarded", []string{"Forwarded", `for="_a\"b"`}, `_a"b`, ""},
		{"Forwarded's for= twice", "10.0.0.2:4000", "forwarded", []string{"Forwarded", `for=1.2.3.4;for=5.6.7.8`}, "", "malformed Forwarded"},
		{"Forwarded unterminated", "10.0.0.2:4000", "forwarded", []string{"Forwarded", `for="[2001:db8::1`}, "", "malformed Forwarded"},
		{"Forwarded without =", "10.0.0.2:4000", "forwarded", []string{"Forwarded", `for`}, "", "malformed Forwarded"},
		{"X-Real-IP from a trusted proxy", "10.0.0.2:4000", "x-real-ip", []string{"X-Real-IP", "203.0.113.1"}, "203.0.113.1", ""},
		{"a named header from a trusted proxy", "10.0.0.2:4000", "header:X-Api-Key", []string{"X-Api-Key", "k1"}, "k1", ""},
		{"a hop too long", "10.0.0.2:4000", "", []string{"X-Forwarded-For", strings.Repeat("x", ratelimit.MaxSubject+1)}, "", "subject longer than 1024 bytes"},
		{"a header too long", "10.0.0.2:4000", "header:X-Api-Key", []string{"X-Api-Key", strings.Repeat("k", ratelimit.MaxSubject+1)}, "", "subject longer than 1024 bytes"},
		{"a header at the cap", "10.0.0.2:4000", "header:X-Api-Key", []string{"X-Api-Key", strings.Repeat("k", ratelimit.MaxSubject)}, strings.Repeat("k", ratelimit.MaxSubject), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(nil, Options{TrustedProxies: func() Proxies { return proxies }})
			r := httptest.NewRequest("GET", "/v1/auth/api", nil)
			r.RemoteAddr = tc.peer
			for i := 0; i+1 < len(tc.header); i += 2 {
				r.Header.Add(tc.header[i], tc.header[i+1])
			}
			p, trusted := s.trustedPeer(r)
			got, err := subjectFrom(r, tc.from, p, trusted)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestTierTrust: a tier read from a header is believed only from a trusted proxy.
func TestTierTrust(t *testing.T) {
	r := httptest.NewRequest("GET", "/v1/auth/api", nil)
	r.Header.Set("X-Tier", "payments")
	got, anyTier, err := priorityFrom(r, "header:X-Tier", false)
	require.NoError(t, err)
	require.Equal(t, "", got, "a client must not claim a better tier")
	require.False(t, anyTier)
	got, anyTier, err = priorityFrom(r, "header:X-Tier", true)
	require.NoError(t, err)
	require.Equal(t, "payments", got)
	require.True(t, anyTier)
	got, _, err = priorityFrom(r, "payments", false)
	require.NoError(t, err)
	require.Equal(t, "payments", got, "the tier of the proxy's own URL")
}

// No Options.TrustedProxies trusts nobody.
func TestNoTrustedProxies(t *testing.T) {
	s := New(nil, Options{})
	r := httptest.NewRequest("GET", "/v1/auth/api", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	_, trusted := s.trustedPeer(r)
	require.False(t, trusted)
}

// fuzzProxies are the fuzz targets' trusted proxies; their peer 10.0.0.2 is one.
var fuzzProxies = Proxies{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// checkHopSubject is the fuzz targets' invariant: the subject is one of the hops (as node
// reads it) or the peer, never empty, within the cap.
func checkHopSubject(t *testing.T, got string, err error, hops []string, peer string) {
	if err != nil {
		return
	}
	require.NotEmpty(t, got)
	require.LessOrEqual(t, len(got), ratelimit.MaxSubject)
	if got == peer {
		return
	}
	for _, h := range hops {
		if sub, _, _ := node(h); sub == got {
			return
		}
	}
	t.Fatalf("subject %q is neither a hop of %q nor the peer", got, hops)
}

// FuzzXForwardedFor: X-Forwarded-For from a trusted proxy never panics, and its subject is
// one of its hops or the peer.
func FuzzXForwardedFor(f *testing.F) {
	f.Add("203.0.113.1")
	f.Add("198.51.100.7, 203.0.113.1, 10.0.0.3")
	f.Add(" , ,")
	f.Add("[2001:db8::1]:80, ::ffff:10.1.1.1, fe80::1%eth0")
	f.Add("10.0.0.1,10.0.0.2")
	f.Fuzz(func(t *testing.T, v string) {
		r := httptest.NewRequest("GET", "/v1/auth/api", nil)
		r.RemoteAddr = "10.0.0.2:4000"
		r.Header.Set("X-Forwarded-For", v)
		got, err := subjectFrom(r, "", fuzzProxies, true)
		checkHopSubject(t, got, err, forwardedFor([]string{v}), "10.0.0.2")
	})
}

// FuzzForwarded: RFC 7239 Forwarded from a trusted proxy never panics, and its subject is
// one of its for= values or the peer.
func FuzzForwarded(f *testing.F) {
	f.Add(`for=203.0.113.1`)
	f.Add(`for=198.51.100.7, for="[2001:db8:cafe::17]:4711";proto=https, for=10.0.0.3`)
	f.Add(`for="_hidden:_port";by=_x, for=unknown`)
	f.Add(`for="a\"b;c", ,;, proto=http`)
	f.Add(`for=1;for=2`)
	f.Fuzz(func(t *testing.T, v string) {
		r := httptest.NewRequest("GET", "/v1/auth/api", nil)
		r.RemoteAddr = "10.0.0.2:4000"
		r.Header.Set("Forwarded", v)
		got, err := subjectFrom(r, "forwarded", fuzzProxies, true)
		hops, perr := forwardedHops([]string{v})
		if perr != nil {
			require.Error(t, err)
			return
		}
		checkHopSubject(t, got, err, hops, "10.0.0.2")
	})
}

// FuzzSubjectFrom: any source and header from any peer never panics; a subject is never
// empty nor over the cap, and a header names it only from a trusted proxy.
func FuzzSubjectFrom(f *testing.F) {
	for _, from := range []string{"", "forwarded", "x-real-ip", "header:X-Id", "user", "ip", "cookie"} {
		f.Add(from, "203.0.113.1", "10.0.0.2:4000")
		f.Add(from, "203.0.113.1", "192.0.2.1:4000")
	}
	f.Add("header:X-Id", "k", "[::1]:80")
	f.Add("", "1.2.3.4", "not an address")
	f.Fuzz(func(t *testing.T, from, v, peer string) {
		r := httptest.NewRequest("GET", "/v1/auth/api", nil)
		r.RemoteAddr = peer
		for _, h := range []string{"X-Forwarded-For", "Forwarded", "X-Real-IP", "X-Id", "Authorization"} {
			r.Header.Set(h, v)
		}
		s := New(nil, Options{TrustedProxies: func() Proxies { return fuzzProxies }})
		p, trusted := s.trustedPeer(r)
		got, err := subjectFrom(r, from, p, trusted)
		tier, _, terr := priorityFrom(r, "header:X-Id", trusted)
		if !trusted {
			require.NoError(t, terr)
			require.Empty(t, tier, "a tier from an untrusted peer")
		}
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(got), ratelimit.MaxSubject)
		if !trusted && strings.ToLower(from) != "user" {
			require.Equal(t, peerIP(r), got, "a header believed from an untrusted peer")
		}
	})
}

// BenchmarkSubjectFrom is the subject of one forward-auth request from a trusted proxy.
func BenchmarkSubjectFrom(b *testing.B) {
	for _, bc := range []struct{ name, from, header, value string }{
		{"x-forwarded-for", "", "X-Forwarded-For", "198.51.100.7, 203.0.113.9, 10.0.0.3"},
		{"forwarded", "forwarded", "Forwarded", `for=198.51.100.7, for="[2001:db8::9]:443";proto=https, for=10.0.0.3`},
		{"header", "header:X-Api-Key", "X-Api-Key", "k-123456"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/v1/auth/api", nil)
			r.RemoteAddr = "10.0.0.2:4000"
			r.Header.Set(bc.header, bc.value)
			s := New(nil, Options{TrustedProxies: func() Proxies { return fuzzProxies }})
			b.ReportAllocs()
			for b.Loop() {
				p, trusted := s.trustedPeer(r)
				if _, err := subjectFrom(r, bc.from, p, trusted); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
