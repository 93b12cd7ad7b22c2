package policy

import (
	"bytes"
	"net/netip"
	"strings"
	"unsafe"
)

// Lists finds the entry of a policy that applies to a subject. It is built once per
// version of the policy and read by any number of CHECKs at once; Match allocates nothing.
type Lists struct {
	entries  []Entry
	exact    map[string][]int32 // entries by exact subject
	prefixes []int32            // entries with a prefix subject, longest prefix first
	nets     []int32            // entries with a CIDR subject, longest mask first
	nprefix  []netip.Prefix     // the parsed networks, parallel to nets
}

// NewLists indexes entries (an empty Lists matches nothing).
func NewLists(entries []Entry) *Lists {
	l := &Lists{entries: entries}
	for i, e := range entries {
		switch {
		case strings.Contains(e.Subject, "/"):
			if p, err := netip.ParsePrefix(e.Subject); err == nil {
				l.nets = append(l.nets, int32(i))
				l.nprefix = append(l.nprefix, p.Masked())
			}
		case strings.HasSuffix(e.Subject, "*"):
			l.prefixes = append(l.prefixes, int32(i))
		default:
			if l.exact == nil {
				l.exact = make(map[string][]int32)
			}
			l.exact[e.Subject] = append(l.exact[e.Subject], int32(i))
		}
	}
	// Most specific first: a longer prefix, a longer mask (insertion sort: lists are short
	// or built rarely).
	for i := 1; i < len(l.prefixes); i++ {
		for j := i; j > 0 && len(entries[l.prefixes[j]].Subject) > len(entries[l.prefixes[j-1]].Subject); j-- {
			l.prefixes[j], l.prefixes[j-1] = l.prefixes[j-1], l.prefixes[j]
		}
	}
	for i := 1; i < len(l.nets); i++ {
		for j := i; j > 0 && l.nprefix[j].Bits() > l.nprefix[j-1].Bits(); j-- {
			l.nets[j], l.nets[j-1] = l.nets[j-1], l.nets[j]
			l.nprefix[j], l.nprefix[j-1] = l.nprefix[j-1], l.nprefix[j]
		}
	}
	return l
}

// Entry returns entry i.
func (l *Lists) Entry(i int) *Entry { return &l.entries[i] }

// Empty reports whether there are no entries at all.
func (l *Lists) Empty() bool { return len(l.entries) == 0 }

// Match returns the kind and index of the entry that applies to subject at now, or 0 and
// -1 when none does. A deny entry that matches wins over everything (a subject on the deny
// list never passes, whatever else says), then an allow entry, then the most specific
// override: exact, then the longest prefix, then the longest network. Lapsed entries are
// skipped.
func (l *Lists) Match(subject []byte, now int64) (EntryKind, int) {
	if len(l.entries) == 0 {
		return 0, -1
	}
	best := [Deny + 1]int{-1, -1, -1, -1} // by kind: the most specific entry of the kind
	see := func(i int32) {
		e := &l.entries[i]
		if (e.Expire == 0 || now < e.Expire) && best[e.Kind] < 0 {
			best[e.Kind] = int(i)
		}
	}
	for _, i := range l.exact[string(subject)] {
		see(i)
	}
	for _, i := range l.prefixes {
		p := l.entries[i].Subject
		if bytes.HasPrefix(subject, unsafe.Slice(unsafe.StringData(p), len(p)-1)) {
			see(i)
		}
	}
	if len(l.nets) > 0 && maybeAddr(subject) {
		// The address does not keep the string: without a zone, it is parsed into numbers.
		if a, err := netip.ParseAddr(unsafe.String(&subject[0], len(subject))); err == nil {
			a = a.Unmap()
			for j, i := range l.nets {
				if l.nprefix[j].Contains(a) {
					see(i)
				}
			}
		}
	}
	for _, k := range [...]EntryKind{Deny, Allow, Override} {
		if best[k] >= 0 {
			return k, best[k]
		}
	}
	return 0, -1
}

// maybeAddr reports whether subject may be an IP address without a zone: hex digits, dots
// and colons, with a dot or a colon. Other subjects are not parsed, for a failed parse
// allocates its error.
func maybeAddr(subject []byte) bool {
	sep := false
	for _, c := range subject {
		switch {
		case c == '.' || c == ':':
			sep = true
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return sep
}
