package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// Where a forward-auth subject comes from, and who is believed about it.
//
// A header is whatever the peer wrote, so a subject read from one (X-Forwarded-For, Forwarded,
// X-Real-IP, header:<name>) is believed only when the peer is a trusted proxy
// (http-trusted-proxies); from any other peer the subject is the peer's address, and a
// client that sends a new X-Forwarded-For with each request gets no new budget by it.
//
// A proxy appends the address of the peer it saw to X-Forwarded-For and Forwarded, after
// whatever its client sent. The hops are therefore read from the right: each trusted proxy's
// hop says who talked to it, and the first hop that is not a trusted proxy is the client. A hop
// the client prepends lies to the left of it and changes nothing. When every hop is a trusted
// proxy, the leftmost is the subject (as nginx's real_ip_recursive): nobody else told us more.

// Proxies are the networks whose peers' headers are believed: http-trusted-proxies.
type Proxies []netip.Prefix

// DefaultProxies is http-trusted-proxies' default: the loopback, where a proxy on the same
// host (the examples' nginx and Caddy) connects from.
const DefaultProxies = "127.0.0.0/8 ::1/128"

// ParseProxies reads CIDRs (10.0.0.0/8, fd00::/8) or single addresses separated by blanks or
// commas; an empty list trusts nobody.
func ParseProxies(s string) (Proxies, error) {
	var p Proxies
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		if pre, err := netip.ParsePrefix(f); err == nil {
			p = append(p, pre.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("'%s' is not a CIDR (10.0.0.0/8) or an address", truncate(f, 64))
		}
		p = append(p, netip.PrefixFrom(a, a.BitLen()))
	}
	return p, nil
}

// String writes p as ParseProxies reads it.
func (p Proxies) String() string {
	s := make([]string, len(p))
	for i, pre := range p {
		s[i] = pre.String()
	}
	return strings.Join(s, " ")
}

// Contains reports whether a is in one of p's networks; an IPv4 address mapped into IPv6
// (::ffff:127.0.0.1, as a dual-stack listener sees an IPv4 peer) is taken as the IPv4 one.
func (p Proxies) Contains(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, pre := range p {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// trustedPeer reports whether r's peer is one of the trusted proxies.
func (s *Server) trustedPeer(r *http.Request) (Proxies, bool) {
	if s.opt.TrustedProxies == nil {
		return nil, false
	}
	p := s.opt.TrustedProxies()
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return p, err == nil && p.Contains(ap.Addr())
}

// node reads one hop, an X-Forwarded-For entry or a Forwarded for= value: an address (its
// port and zone dropped, so that a port per connection is not a subject per connection), or
// else an identifier (RFC 7239's "unknown" or an obfuscated _name), its port dropped.
func node(h string) (subject string, ip netip.Addr, isIP bool) {
	if a, err := netip.ParseAddr(h); err == nil {
		a = a.Unmap().WithZone("")
		return a.String(), a, true
	}
	if ap, err := netip.ParseAddrPort(h); err == nil {
		a := ap.Addr().Unmap().WithZone("")
		return a.String(), a, true
	}
	if rest, ok := strings.CutPrefix(h, "["); ok { // [2001:db8::1] or [2001:db8::1]:_obfport
		if inside, _, ok := strings.Cut(rest, "]"); ok {
			if a, err := netip.ParseAddr(inside); err == nil {
				a = a.Unmap().WithZone("")
				return a.String(), a, true
			}
		}
	}
	name, _, _ := strings.Cut(h, ":")
	return name, netip.Addr{}, false
}

// fromRight returns the subject of hops, written left to right: the rightmost hop that is
// not a trusted proxy, or the leftmost when all are.
func fromRight(hops []string, trusted Proxies, what string) (string, error) {
	for i := len(hops) - 1; i >= 0; i-- {
		if hops[i] == "" {
			return "", fmt.Errorf("empty hop in %s", what)
		}
		sub, ip, isIP := node(hops[i])
		if isIP && trusted.Contains(ip) && i > 0 {
			continue
		}
		return subject(sub, what)
	}
	return "", fmt.Errorf("empty subject: %s", what)
}

// forwardedFor splits the values of X-Forwarded-For (one header or several, in order)
// into its hops.
func forwardedFor(values []string) []string {
	var hops []string
	for _, v := range values {
		for _, h := range strings.Split(v, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	return hops
}

// errForwarded is for a Forwarded header that is not RFC 7239's syntax.
var errForwarded = errors.New("malformed Forwarded header (RFC 7239: for=192.0.2.1;proto=https, for=\"[2001:db8::1]:8080\")")

// forwardedHops reads the for= of each element of Forwarded's values (RFC 7239 section 4:
// elements separated by commas, pairs by semicolons, each value a token or a quoted string)
// as X-Forwarded-For's hops. An element without for= says nothing of a client and is left
// out. A parameter given twice in one element, or a syntax error, refuses the header.
func forwardedHops(values []string) ([]string, error) {
	var hops []string
	for _, v := range values {
		var forValue string
		var hasFor bool
		i := 0
		for {
			i = skipSpace(v, i)
			if i == len(v) || v[i] == ',' {
				if hasFor {
					hops = append(hops, forValue)
				}
				if i == len(v) {
					break
				}
				i++
				forValue, hasFor = "", false
				continue
			}
			if v[i] == ';' {
				i++
				continue
			}
			j := i
			for j < len(v) && isTchar(v[j]) {
				j++
			}
			if j == i || j == len(v) || v[j] != '=' {
				return nil, errForwarded
			}
			name := v[i:j]
			val, next, ok := pairValue(v, j+1)
			if !ok {
				return nil, errForwarded
			}
			if strings.EqualFold(name, "for") {
				if hasFor {
					return nil, errForwarded
				}
				forValue, hasFor = val, true
			}
			i = skipSpace(v, next)
			if i < len(v) && v[i] != ';' && v[i] != ',' {
				return nil, errForwarded
			}
		}
	}
	return hops, nil
}

// pairValue reads a token or a quoted string (its escapes undone) at v[i:].
func pairValue(v string, i int) (val string, next int, ok bool) {
	if i < len(v) && v[i] == '"' {
		var b strings.Builder
		for i++; i < len(v); i++ {
			switch c := v[i]; c {
			case '"':
				return b.String(), i + 1, true
			case '\\':
				if i+1 == len(v) {
					return "", 0, false
				}
				i++
				b.WriteByte(v[i])
			default:
				b.WriteByte(c)
			}
		}
		return "", 0, false // no closing quote
	}
	j := i
	for j < len(v) && isTchar(v[j]) {
		j++
	}
	return v[i:j], j, j > i
}

func skipSpace(v string, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
		i++
	}
	return i
}

// isTchar reports whether c may be in an HTTP token (RFC 9110 section 5.6.2).
func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
