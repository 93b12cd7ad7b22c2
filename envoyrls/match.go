package envoyrls

import "strings"

// Entry is one key and value of a request's descriptor.
type Entry struct{ Key, Value string }

// Match returns the rule the descriptor made of entries meets in d, and the subject its
// policy's key takes: the values of the entries that met a descriptor naming no value or a
// wildcard, joined by ':' ("-" when every value was named). As envoyproxy/ratelimit, each
// entry is matched at its own level, key and value first, then the longest wildcard, then the
// key alone; the rule is the one of the level of the last entry: a request with more or fewer
// entries than the configuration's levels meets none (nil).
func (d *Domain) Match(entries []Entry) (*Rule, string) {
	if d == nil || len(entries) == 0 {
		return nil, ""
	}
	n := d.root
	var subject strings.Builder
	vars := 0
	for i, e := range entries {
		next, variable := n.child(e)
		if next == nil {
			return nil, ""
		}
		if variable {
			if vars > 0 {
				subject.WriteByte(':')
			}
			subject.WriteString(e.Value)
			vars++
		}
		if i == len(entries)-1 {
			if next.rule == nil {
				return nil, ""
			}
			if vars == 0 {
				return next.rule, "-"
			}
			return next.rule, subject.String()
		}
		n = next
	}
	return nil, ""
}

// child returns the descriptor below n that e meets, and whether its value is variable.
func (n *node) child(e Entry) (*node, bool) {
	if n.children != nil {
		if c := n.children[e.Key+"\x00"+e.Value]; c != nil && e.Value != "" {
			return c, false
		}
	}
	for _, w := range n.wild {
		if w.key == e.Key && strings.HasPrefix(e.Value, w.prefix) {
			return w.n, true
		}
	}
	if n.children != nil {
		if c := n.children[e.Key]; c != nil {
			return c, true
		}
	}
	return nil, false
}
