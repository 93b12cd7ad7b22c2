package collection

// A list's pack is its elements from head to tail, each as AppendString writes it; its
// length is the keyspace Value's Num. The pack has no back-links, so an operation at the
// tail (RPOP, a negative LPOS RANK, LREM with a negative count) walks forward from the
// head: fine for a small list; a big one is a BigList (biglist.go).

// ListOffset returns the byte offset in pack of element i, 0 <= i, or len(pack) when the
// pack has i elements or fewer.
func ListOffset(pack []byte, i int64) int {
	off := 0
	for ; i > 0 && off < len(pack); i-- {
		n := Skip(pack[off:])
		if n == 0 {
			return len(pack)
		}
		off += n
	}
	return off
}

// ListOffsets appends to dst the offset of every element of pack, in order, so that a
// caller can read them from the tail (RPOP with a count).
func ListOffsets(pack []byte, dst []int) []int {
	for off := 0; off < len(pack); {
		n := Skip(pack[off:])
		if n == 0 {
			break
		}
		dst = append(dst, off)
		off += n
	}
	return dst
}

// IndexRange turns Redis's start and stop indexes (LRANGE, LTRIM, ZRANGE, ZREMRANGEBYRANK),
// where a negative index counts from the tail (-1 is the last element), into the first and
// last index of a list or sorted set of n elements, clamped to it; ok is false when the
// range holds nothing.
func IndexRange(n, start, stop int64) (from, to int64, ok bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0, false
	}
	return start, min(stop, n-1), true
}

// ListIndex returns the element at index i of a list of n elements (a negative index
// counts from the tail), false when there is none.
func ListIndex(pack []byte, n, i int64) (Elem, bool) {
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return Elem{}, false
	}
	e, k := Read(pack[ListOffset(pack, i):])
	return e, k > 0
}

// ListPush appends to dst pack with elems added one by one at the head (LPUSH: the last
// of elems ends first) or at the tail.
func ListPush(dst, pack []byte, head bool, elems [][]byte) []byte {
	if !head {
		dst = append(dst, pack...)
		for _, e := range elems {
			dst = AppendString(dst, e)
		}
		return dst
	}
	for i := len(elems) - 1; i >= 0; i-- {
		dst = AppendString(dst, elems[i])
	}
	return append(dst, pack...)
}

// ListPushRaw appends to dst pack with raw, elements already encoded (as another pack
// holds them), added at the head or at the tail.
func ListPushRaw(dst, pack []byte, head bool, raw []byte) []byte {
	if head {
		return append(append(dst, raw...), pack...)
	}
	return append(append(dst, pack...), raw...)
}

// ListSet appends to dst pack with its element at index i of n (a negative index counts
// from the tail) replaced by elem; ok is false when there is no such element.
func ListSet(dst, pack []byte, n, i int64, elem []byte) (out []byte, ok bool) {
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return dst, false
	}
	off := ListOffset(pack, i)
	end := off + Skip(pack[off:])
	dst = append(dst, pack[:off]...)
	dst = AppendString(dst, elem)
	return append(dst, pack[end:]...), true
}

// ListInsert appends to dst pack with elem inserted before or after the first element
// equal to pivot; found is false, and dst left as it was, when no element is.
func ListInsert(dst, pack []byte, before bool, pivot, elem []byte) (out []byte, found bool) {
	for off := 0; off < len(pack); {
		e, n := Read(pack[off:])
		if n == 0 {
			break
		}
		if e.Equal(pivot) {
			at := off
			if !before {
				at += n
			}
			dst = append(dst, pack[:at]...)
			dst = AppendString(dst, elem)
			return append(dst, pack[at:]...), true
		}
		off += n
	}
	return dst, false
}

// ListRemove appends to dst pack without the elements equal to elem that LREM's count
// picks: the first count from the head when it is positive, the last -count when it is
// negative, all when it is 0. It returns how many it removed.
func ListRemove(dst, pack []byte, count int64, elem []byte) (out []byte, removed int64) {
	// skip is the number of matches from the head to keep before removing.
	var skip, want int64
	switch {
	case count > 0:
		want = count
	case count < 0:
		m := listMatches(pack, elem, 0, len(pack))
		if count >= -m {
			skip = m + count
		}
		want = m - skip
	default:
		want = -1 // all
	}
	var seen int64
	for off := 0; off < len(pack); {
		e, n := Read(pack[off:])
		if n == 0 {
			break
		}
		if removed != want && e.Equal(elem) {
			seen++
			if seen > skip {
				removed++
				off += n
				continue
			}
		}
		dst = append(dst, pack[off:off+n]...)
		off += n
	}
	return dst, removed
}

// listMatches returns the number of elements equal to elem in pack[from:to].
func listMatches(pack, elem []byte, from, to int) int64 {
	var m int64
	for off := from; off < to; {
		e, n := Read(pack[off:to])
		if n == 0 {
			break
		}
		if e.Equal(elem) {
			m++
		}
		off += n
	}
	return m
}

// ListPos appends to dst the indices of the elements equal to elem in a list of n elements,
// as LPOS replies them: with rank r > 0 from the r-th match from the head on, with r < 0
// from the -r-th match from the tail on, toward the head; at most count of them (0: all);
// looking at only the first (or, from the tail, last) maxlen elements (0: all).
func ListPos(pack []byte, n int64, elem []byte, rank, count, maxlen int64, dst []int64) []int64 {
	from, to := 0, len(pack) // the byte range searched
	first := int64(0)        // the index of the element at from
	if maxlen > 0 && maxlen < n {
		if rank > 0 {
			to = ListOffset(pack, maxlen)
		} else {
			first = n - maxlen
			from = ListOffset(pack, first)
		}
	}
	// The matches wanted, numbered from 1 in order from the head: lo to hi.
	var lo, hi int64
	if rank > 0 {
		lo, hi = rank, -1 // -1: up to the last
		if count > 0 && rank <= (1<<63-1)-count {
			hi = rank + count - 1
		}
	} else {
		m := listMatches(pack, elem, from, to)
		hi = m + rank + 1 // rank is -1 for the last match, m
		if hi < 1 {
			return dst
		}
		lo = 1
		if count > 0 && hi > count {
			lo = hi - count + 1
		}
	}
	start := len(dst)
	var seen int64
	i := first
	for off := from; off < to && (hi < 0 || seen < hi); i++ {
		e, k := Read(pack[off:to])
		if k == 0 {
			break
		}
		if e.Equal(elem) {
			seen++
			if seen >= lo {
				dst = append(dst, i)
			}
		}
		off += k
	}
	if rank < 0 {
		found := dst[start:]
		for a, b := 0, len(found)-1; a < b; a, b = a+1, b-1 {
			found[a], found[b] = found[b], found[a]
		}
	}
	return dst
}
