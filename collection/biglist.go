package collection

import "slices"

// BigList is a list past its small size as the keyspace holds it: by reference
// (keyspace.Value.Obj), changed in place, as Redis's quicklist. Its elements are those of
// the list's pack, in order, cut into nodes of up to maxN elements and maxBytes bytes (one
// element past that is a node of its own), each an allocation of its own:
//
//   - a push or pop at either end touches the end node only (a full one gets a new node
//     beside it, an emptied one goes), so LPUSH, RPUSH, LPOP and RPOP cost O(1);
//   - nodes is a deque, live from head on, with room kept before head as after its end,
//     so that a node put at either end moves no other (amortized);
//   - an index is found by summing the nodes' counts from the nearer end, then walking one
//     node (LINDEX, LSET, LRANGE's start: O(n/maxN) plus a node); LINSERT and LREM walk to
//     their elements and rewrite the nodes they change, a node grown past its limits
//     splitting in two.
//
// Its bytes form (outside the process, and in the keyspace until the data types first
// read it) is the list's pack: the nodes' packs back to back.
type BigList struct {
	nodes []lnode // nodes[head:] are the list's, in order; those before head are room
	head  int
	n     int // elements
	bytes int // the packs' bytes
	maxN  int // the most elements a node holds
}

// lnode is a run of a BigList's elements, back to back as in a pack.
type lnode struct {
	pack []byte
	n    int
}

// maxListNode is the most bytes a BigList's node grows to unless it holds one element.
const maxListNode = maxChunk

// ListNodeEntries returns the most elements a BigList's node holds for Redis's
// list-max-listpack-size: that many when it is positive, else chunkMax(), a node's bytes
// being bounded apart.
func ListNodeEntries(size int64) int {
	if size > 0 {
		return int(min(size, 1<<16))
	}
	return chunkMax()
}

// ListIsBig reports whether a list of n elements in a pack of size bytes is past its
// small size for list-max-listpack-size: more elements than a node holds, or more than
// 8 KiB (Redis's default node size, -2).
func ListIsBig(n int64, size int, listSize int64) bool {
	return n > int64(ListNodeEntries(listSize)) || size > 2*maxListNode
}

// NewBigList returns the list whose pack is pack, of nodes of up to maxN elements.
func NewBigList(pack []byte, maxN int) *BigList {
	l := &BigList{maxN: max(maxN, 1)}
	for off := 0; off < len(pack); {
		end, n := off, 0
		for n < l.maxN && end < len(pack) {
			k := Skip(pack[end:])
			if k == 0 || n > 0 && end+k-off > maxListNode {
				break
			}
			end += k
			n++
		}
		if n == 0 {
			break // a damaged pack: the whole elements before the damage
		}
		l.nodes = append(l.nodes, lnode{pack: append(make([]byte, 0, end-off), pack[off:end]...), n: n})
		l.n += n
		l.bytes += end - off
		off = end
	}
	return l
}

// listGrow returns the capacity of a node's pack that needs n bytes: room to grow into,
// none past maxListNode.
func listGrow(n int) int {
	if n >= maxListNode {
		return n
	}
	return min(max(2*n, 64), maxListNode)
}

// Len returns the elements.
func (l *BigList) Len() int { return l.n }

// EncodedLen returns the length of the list's pack.
func (l *BigList) EncodedLen() int { return l.bytes }

// AppendEncoded appends the list's pack to dst: its form outside the process.
func (l *BigList) AppendEncoded(dst []byte) []byte {
	dst = slices.Grow(dst, l.bytes)
	for _, nd := range l.nodes[l.head:] {
		dst = append(dst, nd.pack...)
	}
	return dst
}

// Footprint returns the heap bytes l holds.
func (l *BigList) Footprint() int {
	n := 64 + 32*cap(l.nodes)
	for _, nd := range l.nodes[l.head:] {
		n += cap(nd.pack)
	}
	return n
}

// fits reports whether nd can take sz more bytes as one more element.
func (l *BigList) fits(nd *lnode, sz int) bool {
	return nd.n < l.maxN && len(nd.pack)+sz <= maxListNode
}

// Push adds elem at the head or at the tail.
func (l *BigList) Push(elem []byte, head bool) {
	var buf [64]byte
	l.PushRaw(AppendString(buf[:0], elem), head)
}

// PushRaw adds raw, one element as a pack holds it, at the head or at the tail.
func (l *BigList) PushRaw(raw []byte, head bool) {
	l.n++
	l.bytes += len(raw)
	if head {
		if l.head == len(l.nodes) || !l.fits(&l.nodes[l.head], len(raw)) {
			if l.head < len(l.nodes) {
				l.nodes[l.head].clip()
			}
			l.newFront()
		}
		nd := &l.nodes[l.head]
		nd.pack = insertBytes(nd.pack, 0, raw)
		nd.n++
		return
	}
	if l.head == len(l.nodes) || !l.fits(&l.nodes[len(l.nodes)-1], len(raw)) {
		if l.head < len(l.nodes) {
			l.nodes[len(l.nodes)-1].clip()
		}
		l.nodes = append(l.nodes, lnode{})
	}
	nd := &l.nodes[len(l.nodes)-1]
	if nd.pack == nil {
		nd.pack = make([]byte, 0, listGrow(len(raw)))
	}
	nd.pack = append(nd.pack, raw...)
	nd.n++
}

// clip gives back the room a node's pack has past its bytes once pushes have moved on to
// a new node beside it: a copy of at most maxListNode bytes per node filled, so that a
// list costs about its bytes (the room comes back when an insert needs it).
func (nd *lnode) clip() {
	if cap(nd.pack)-len(nd.pack) > len(nd.pack)/16 {
		nd.pack = append(make([]byte, 0, len(nd.pack)), nd.pack...)
	}
}

// insertBytes returns pack with raw inserted at byte offset at, growing it as a node's.
func insertBytes(pack []byte, at int, raw []byte) []byte {
	if len(pack)+len(raw) > cap(pack) {
		p := make([]byte, len(pack)+len(raw), listGrow(len(pack)+len(raw)))
		copy(p, pack[:at])
		copy(p[at+len(raw):], pack[at:])
		copy(p[at:], raw)
		return p
	}
	pack = pack[:len(pack)+len(raw)]
	copy(pack[at+len(raw):], pack[at:])
	copy(pack[at:], raw)
	return pack
}

// newFront puts an empty node before the head, making room before it when there is none:
// as much as the list has nodes, so that the moves are amortized.
func (l *BigList) newFront() {
	if l.head == 0 {
		live := len(l.nodes)
		room := live + 4
		nodes := make([]lnode, room+live, room+2*live+4)
		copy(nodes[room:], l.nodes)
		l.nodes, l.head = nodes, room
	}
	l.head--
	l.nodes[l.head] = lnode{}
}

// End returns the element at the head or the tail as a pack holds it, aliasing l (valid
// until it changes); nil when l is empty.
func (l *BigList) End(head bool) []byte {
	if l.n == 0 {
		return nil
	}
	if head {
		p := l.nodes[l.head].pack
		return p[:Skip(p)]
	}
	nd := l.nodes[len(l.nodes)-1]
	off := ListOffset(nd.pack, int64(nd.n-1))
	return nd.pack[off:]
}

// Pop removes the element at the head or at the tail; End reads it first.
func (l *BigList) Pop(head bool) {
	if l.n == 0 {
		return
	}
	i := len(l.nodes) - 1
	if head {
		i = l.head
	}
	nd := &l.nodes[i]
	var k int
	if head {
		k = Skip(nd.pack)
		nd.pack = nd.pack[:copy(nd.pack, nd.pack[k:])]
	} else {
		off := ListOffset(nd.pack, int64(nd.n-1))
		k = len(nd.pack) - off
		nd.pack = nd.pack[:off]
	}
	nd.n--
	l.n--
	l.bytes -= k
	if nd.n == 0 {
		l.dropNode(i)
	}
}

// dropNode removes the emptied node at nodes[i].
func (l *BigList) dropNode(i int) {
	switch i {
	case l.head:
		l.nodes[i] = lnode{}
		l.head++
		l.compact()
	case len(l.nodes) - 1:
		l.nodes[i] = lnode{}
		l.nodes = l.nodes[:i]
	default:
		l.nodes = slices.Delete(l.nodes, i, i+1)
	}
	if l.head == len(l.nodes) {
		l.nodes, l.head = l.nodes[:0], 0
	}
}

// compact gives back the room before the head when it is most of the deque, as a queue
// (RPUSH, LPOP) would otherwise grow it for ever.
func (l *BigList) compact() {
	if live := len(l.nodes) - l.head; l.head > 16 && l.head > 2*live {
		nodes := make([]lnode, live, 2*live+4)
		copy(nodes, l.nodes[l.head:])
		l.nodes, l.head = nodes, 0
	}
}

// locate returns the node holding element i, 0 <= i < l.n, and i's byte offset in it,
// summing the nodes' counts from the nearer end.
func (l *BigList) locate(i int) (node, off int) {
	if i < l.n/2 {
		for node = l.head; i >= l.nodes[node].n; node++ {
			i -= l.nodes[node].n
		}
	} else {
		left := l.n - i // elements from i to the tail
		for node = len(l.nodes) - 1; left > l.nodes[node].n; node-- {
			left -= l.nodes[node].n
		}
		i = l.nodes[node].n - left
	}
	return node, ListOffset(l.nodes[node].pack, int64(i))
}

// index turns a list index (negative from the tail) into one from the head, false when
// there is no such element.
func (l *BigList) index(i int64) (int, bool) {
	if i < 0 {
		i += int64(l.n)
	}
	return int(i), i >= 0 && i < int64(l.n)
}

// Index returns the element at index i (a negative index counts from the tail), false
// when there is none. It aliases l.
func (l *BigList) Index(i int64) (Elem, bool) {
	j, ok := l.index(i)
	if !ok {
		return Elem{}, false
	}
	node, off := l.locate(j)
	e, _ := Read(l.nodes[node].pack[off:])
	return e, true
}

// Range yields the elements from index from to index to, 0 <= from <= to < Len(), in
// order; they alias l.
func (l *BigList) Range(from, to int64, yield func(e Elem) bool) {
	node, off := l.locate(int(from))
	for left := to - from + 1; left > 0; node, off = node+1, 0 {
		p := l.nodes[node].pack
		for ; off < len(p) && left > 0; left-- {
			e, k := Read(p[off:])
			if !yield(e) {
				return
			}
			off += k
		}
	}
}

// Set replaces the element at index i (a negative index counts from the tail) with elem;
// false when there is no such element.
func (l *BigList) Set(i int64, elem []byte) bool {
	j, ok := l.index(i)
	if !ok {
		return false
	}
	node, off := l.locate(j)
	nd := &l.nodes[node]
	k := Skip(nd.pack[off:])
	var buf [64]byte
	raw := AppendString(buf[:0], elem)
	l.bytes += len(raw) - k
	if len(raw) == k {
		copy(nd.pack[off:], raw)
		return true
	}
	rest := len(nd.pack) - off - k
	if len(raw) < k {
		copy(nd.pack[off:], raw)
		copy(nd.pack[off+len(raw):], nd.pack[off+k:])
		nd.pack = nd.pack[:off+len(raw)+rest]
	} else {
		nd.pack = insertBytes(nd.pack, off+k, raw[k:])
		copy(nd.pack[off:], raw[:k])
	}
	l.settle(node)
	return true
}

// Insert puts elem before or after the first element equal to pivot; false, and l as it
// was, when no element is.
func (l *BigList) Insert(before bool, pivot, elem []byte) bool {
	for node := l.head; node < len(l.nodes); node++ {
		p := l.nodes[node].pack
		for off := 0; off < len(p); {
			e, k := Read(p[off:])
			if k == 0 {
				break
			}
			if e.Equal(pivot) {
				at := off
				if !before {
					at += k
				}
				var buf [64]byte
				raw := AppendString(buf[:0], elem)
				nd := &l.nodes[node]
				nd.pack = insertBytes(nd.pack, at, raw)
				nd.n++
				l.n++
				l.bytes += len(raw)
				l.settle(node)
				return true
			}
			off += k
		}
	}
	return false
}

// settle splits the node at nodes[i] in two while it is past its limits and holds more
// than one element.
func (l *BigList) settle(i int) {
	nd := &l.nodes[i]
	if nd.n <= 1 || nd.n <= l.maxN && len(nd.pack) <= maxListNode {
		return
	}
	half := nd.n / 2
	mid := ListOffset(nd.pack, int64(half))
	if nd.n <= l.maxN {
		// Too many bytes: cut at the first element past half of them, one at least on
		// each side.
		mid, half = 0, 0
		for half < nd.n-1 && (half == 0 || mid < len(nd.pack)/2) {
			mid += Skip(nd.pack[mid:])
			half++
		}
	}
	second := lnode{pack: append(make([]byte, 0, listGrow(len(nd.pack)-mid)), nd.pack[mid:]...), n: nd.n - half}
	first := lnode{pack: append(make([]byte, 0, listGrow(mid)), nd.pack[:mid]...), n: half}
	l.nodes[i] = first
	l.nodes = slices.Insert(l.nodes, i+1, second)
	l.settle(i + 1) // first: settling i moves what follows it
	l.settle(i)
}

// Remove removes the elements equal to elem that LREM's count picks: the first count
// from the head when it is positive, the last -count when it is negative, all when it
// is 0. It returns how many it removed.
func (l *BigList) Remove(count int64, elem []byte) int64 {
	var skip, want int64
	switch {
	case count > 0:
		want = count
	case count < 0:
		var m int64
		for _, nd := range l.nodes[l.head:] {
			m += listMatches(nd.pack, elem, 0, len(nd.pack))
		}
		if count >= -m {
			skip = m + count
		}
		want = m - skip
	default:
		want = -1 // all
	}
	var seen, removed int64
	for node := l.head; node < len(l.nodes) && removed != want; {
		nd := &l.nodes[node]
		w := 0 // the node's pack is rewritten in place: w never passes the read offset
		for off := 0; off < len(nd.pack); {
			e, k := Read(nd.pack[off:])
			if k == 0 {
				break
			}
			if removed != want && e.Equal(elem) {
				seen++
				if seen > skip {
					removed++
					nd.n--
					l.n--
					l.bytes -= k
					off += k
					continue
				}
			}
			w += copy(nd.pack[w:], nd.pack[off:off+k])
			off += k
		}
		nd.pack = nd.pack[:w]
		if nd.n == 0 {
			wasHead := node == l.head
			l.dropNode(node)
			if wasHead {
				node = l.head
			} // else the next node took its place, or there is none
			continue
		}
		node++
	}
	return removed
}

// Trim keeps the elements from index from to index to, 0 <= from <= to < Len().
func (l *BigList) Trim(from, to int64) {
	last, end := l.locate(int(to))
	end += Skip(l.nodes[last].pack[end:])
	first, off := l.locate(int(from))
	// The tail first: first's offsets stay right when first == last.
	for i := last + 1; i < len(l.nodes); i++ {
		l.nodes[i] = lnode{}
	}
	l.nodes = l.nodes[:last+1]
	nd := &l.nodes[last]
	nd.n = Count(nd.pack[:end])
	nd.pack = nd.pack[:end]
	for i := l.head; i < first; i++ {
		l.nodes[i] = lnode{}
	}
	l.head = first
	nd = &l.nodes[first]
	nd.pack = nd.pack[:copy(nd.pack, nd.pack[off:])]
	nd.n = Count(nd.pack)
	l.compact()
	l.n = int(to - from + 1)
	l.bytes = 0
	for _, nd := range l.nodes[l.head:] {
		l.bytes += len(nd.pack)
	}
}
