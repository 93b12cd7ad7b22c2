package difftest

import (
	"math/rand/v2"
	"strings"
)

// SORT and SORT_RO against redis-server: lists, sets and sorted sets of numbers and words
// on Keys, weights in strings w_<element> and hash fields h_<element>->f, every option and
// bad ones. A set's own order is Redis's hash table's: SORT of a set without sorting (BY
// a constant, without STORE) and ALPHA BY, whose equal weights keep that order, are
// compared unordered (with LIMIT, which cuts it anywhere, only for being errors).

var sortElems = []string{"1", "2", "3", "10", "-4", "2.5", "a", "b", "c", "ab", "", "1e3", " 5", "0x10", "inf"}

func sortElem(r *rand.Rand) string { return sortElems[r.IntN(len(sortElems))] }

// Sort draws SORT, SORT_RO, or a write of what they read.
func Sort(r *rand.Rand) Cmd {
	k := Key(r)
	switch r.IntN(12) {
	case 0:
		return Cmd{Args: []string{Pick(r, "RPUSH", "LPUSH", "SADD"), k, sortElem(r), sortElem(r), sortElem(r)}}
	case 1:
		return Cmd{Args: []string{"ZADD", k, Int(r, -5, 5), sortElem(r), Int(r, -5, 5), sortElem(r)}}
	case 2:
		return Cmd{Args: []string{"SET", "w_" + sortElem(r), Pick(r, "1", "5", "-3", "2.5", "abc", "10", "")}}
	case 3:
		return Cmd{Args: []string{"HSET", "h_" + sortElem(r), Pick(r, "f", "g"), Pick(r, "1", "7", "x", "-2")}}
	case 4:
		if r.IntN(3) == 0 {
			return Cmd{Args: []string{"SET", k, "v"}}
		}
		return Cmd{Args: []string{"DEL", k}}
	}
	ro := r.IntN(4) == 0
	args := []string{"SORT", k}
	if ro {
		args[0] = "SORT_RO"
	}
	for range r.IntN(5) {
		switch r.IntN(12) {
		case 0, 1:
			args = append(args, "BY", Pick(r, "w_*", "h_*->f", "h_*->g", "nosort", "w_*->", "#", "x*y"))
		case 2, 3:
			args = append(args, "GET", Pick(r, "#", "w_*", "h_*->f", "nokey", "h_*->"))
		case 4:
			args = append(args, "LIMIT", Int(r, -1, 4), Int(r, -2, 4))
		case 5, 6:
			args = append(args, Pick(r, "ASC", "DESC", "desc"))
		case 7, 8:
			args = append(args, Pick(r, "ALPHA", "alpha"))
		case 9:
			args = append(args, "STORE", Key(r))
		case 10:
			args = append(args, Pick(r, "LIMIT", "BY", "GET", "STORE", "nosuch"))
		}
	}
	own, limited, stored := sortInOwnOrder(args)
	if own && stored { // what it stores would differ: not drawn
		return Cmd{Args: []string{"SORT_RO", k}}
	}
	return Cmd{Args: args, Unordered: own && !limited, Skip: own && limited}
}

// sortInOwnOrder reports whether SORT's reply may keep a set's own order (compared
// unordered, or only for being an error where LIMIT cuts it anywhere), whether it has a
// LIMIT, and whether it stores. A set keeps its order without sorting (a BY without '*',
// without STORE), and with ALPHA BY (equal weights keep it). The options are read as
// Redis reads them.
func sortInOwnOrder(args []string) (own, limited, stored bool) {
	var constBy, by, alpha, store bool
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch a := strings.ToLower(args[j]); {
		case a == "alpha":
			alpha = true
		case a == "limit" && left >= 2:
			limited = true
			j += 2
		case a == "store" && left >= 1 && args[0] == "SORT":
			store = true
			j++
		case a == "by" && left >= 1:
			if strings.Contains(args[j+1], "*") {
				by = true
			} else {
				constBy = true
			}
			j++
		case a == "get" && left >= 1:
			j++
		}
	}
	return constBy && !store || alpha && by && !constBy, limited, store
}
