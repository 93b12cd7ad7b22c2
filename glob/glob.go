// Package glob matches Redis's glob-style patterns, as KEYS, SCAN, CONFIG GET and the
// pattern subscriptions of pub/sub use them.
package glob

// Match reports whether s matches a Redis glob pattern: * ? [abc] [^a-z]
// and \ escapes. It backtracks only to the last star, so no pattern makes it slow.
func Match(p, s []byte) bool {
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(p) {
			switch p[pi] {
			case '*':
				starP, starS = pi, si
				pi++
				continue
			case '?':
				pi, si = pi+1, si+1
				continue
			case '[':
				if rest, ok := matchClass(p[pi+1:], s[si]); ok {
					pi, si = len(p)-len(rest), si+1
					continue
				}
			default:
				c, w := p[pi], 1
				if c == '\\' && pi+1 < len(p) {
					c, w = p[pi+1], 2
				}
				if c == s[si] {
					pi, si = pi+w, si+1
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starS++
		pi, si = starP+1, starS
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// matchClass matches c against a [...] class whose body starts p; it returns the pattern after the class.
func matchClass(p []byte, c byte) ([]byte, bool) {
	not := len(p) > 0 && p[0] == '^'
	if not {
		p = p[1:]
	}
	match := false
	for len(p) > 0 && p[0] != ']' {
		switch {
		case p[0] == '\\' && len(p) > 1:
			match = match || p[1] == c
			p = p[2:]
		case len(p) > 2 && p[1] == '-' && p[2] != ']':
			lo, hi := p[0], p[2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || lo <= c && c <= hi
			p = p[3:]
		default:
			match = match || p[0] == c
			p = p[1:]
		}
	}
	if len(p) > 0 {
		p = p[1:] // the closing ]
	}
	return p, match != not
}
