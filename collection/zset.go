package collection

import (
	"bytes"
	"encoding/binary"
	"math"
)

// A sorted set's pack is its entries back to back, each a member (AppendString, or in a
// small set written as its score when that is shorter: zscoreMember) and its score
// (AppendScore), in order of score, then of member by bytes (shorter first on a common
// prefix), as Redis orders them. A small set has nothing else: every operation is a walk
// from the front, as on Redis's listpack, which for the sets rate limiters keep (a sliding
// log of up to a few hundred timestamps) is short. A big one has an index in front of its
// pack (zindex.go). The walks compare a member as its encoded bytes and read a score
// without building an Elem, and stop as soon as order tells them the rest cannot matter:
// removing the oldest entries reads only those.

// ZNext returns the entry at the start of z: its member, its score and the bytes both take,
// or n == 0 when z does not start with a whole entry (its end, or a damaged pack).
func ZNext(z []byte) (member Elem, score float64, n int) {
	m, k := Read(z)
	if k == 0 {
		return Elem{}, 0, 0
	}
	s, j := Read(z[k:])
	if j == 0 || s.Kind == Str {
		return Elem{}, 0, 0
	}
	return m, s.Number(), k + j
}

// zskip returns the bytes the entry at the start of z takes, 0 at the end.
func zskip(z []byte) int {
	k := Skip(z)
	if k == 0 {
		return 0
	}
	j := Skip(z[k:])
	if j == 0 {
		return 0
	}
	return k + j
}

// ZSeek returns the offset of the entry of rank i (from 0), len(z) when there are not that many.
func ZSeek(z []byte, i int) int {
	off := 0
	for ; i > 0 && off < len(z); i-- {
		n := zskip(z[off:])
		if n == 0 {
			return len(z)
		}
		off += n
	}
	return off
}

// ZOffsets appends the offset of every entry of z to dst, for the commands that walk a set
// backwards (the pack has no back-links).
func ZOffsets(dst []int, z []byte) []int {
	for off := 0; off < len(z); {
		n := zskip(z[off:])
		if n == 0 {
			break
		}
		dst = append(dst, off)
		off += n
	}
	return dst
}

// zreadScore reads the score at the start of z and the bytes it takes (0 when there is
// none), without building an Elem: the scans' inner loop.
func zreadScore(z []byte) (float64, int) {
	if len(z) == 0 {
		return 0, 0
	}
	t := z[0]
	switch {
	case t >= tagSmall:
		return float64(t - tagSmall), 1
	case t > tagInt && t <= tagInt+8:
		w := int(t - tagInt)
		if w >= len(z) {
			return 0, 0
		}
		var u uint64
		if len(z) >= 9 {
			u = binary.LittleEndian.Uint64(z[1:]) // one load; the bytes past the integer shift out
		} else {
			for i := w; i >= 1; i-- {
				u = u<<8 | uint64(z[i])
			}
		}
		shift := 64 - 8*uint(w)
		return float64(int64(u<<shift) >> shift), 1 + w
	case t == tagFloat:
		if len(z) < 9 {
			return 0, 0
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(z[1:])), 9
	}
	return 0, 0
}

// zmemberKey is a member as a scan compares it with the pack's: as its encoding
// (AppendString's, which is canonical: equal members, equal bytes), so that finding it
// needs no decoding: the encoding's head (its tag, length or whole integer) and its body.
// A small set's entry may hold its member written as its score instead (zscoreMember):
// lead and suffix are the member split as that form splits it, leadOK whether it can be
// written so.
type zmemberKey struct {
	head   [10]byte
	n      int
	body   []byte
	lead   int64
	leadOK bool
	suffix []byte
}

func zkeyOf(member []byte) zmemberKey {
	var k zmemberKey
	k.lead, k.suffix, k.leadOK = zsplit(member)
	if n, ok := canonicalInt(member); ok {
		k.n = len(AppendInt(k.head[:0], n))
		return k
	}
	if len(member) <= tagMaxShort {
		k.head[0] = byte(len(member))
		k.n = 1
	} else {
		k.head[0] = tagLong
		k.n = 1 + len(binary.AppendUvarint(k.head[1:1], uint64(len(member))))
	}
	k.body = member
	return k
}

// zsplit splits member into the integer its digits start with and what follows them, ok
// when that integer is written canonically and the rest is at most maxSuffix bytes: a
// member that an entry can write as its score ("1732512345000", "1732512345000-42").
func zsplit(member []byte) (lead int64, suffix []byte, ok bool) {
	i := 0
	if len(member) > 0 && member[0] == '-' {
		i = 1
	}
	for i < len(member) && isDigit(member[i]) {
		i++
	}
	if len(member)-i > maxSuffix {
		return 0, nil, false
	}
	lead, ok = canonicalInt(member[:i])
	return lead, member[i:], ok
}

// equal reports whether the member's element at the start of e, k bytes long and followed
// by its score, is the member's.
func (k *zmemberKey) equal(e []byte, n int) bool {
	raw := e[:n]
	if isScoreMember(raw) {
		if !k.leadOK || n != 3+len(k.suffix) || len(k.suffix) > 0 && string(raw[3:]) != string(k.suffix) {
			return false
		}
		s, j := readInt(e[n:])
		return j > 0 && s == k.lead
	}
	return len(raw) == k.n+len(k.body) && raw[0] == k.head[0] &&
		bytes.Equal(raw[1:k.n], k.head[1:k.n]) && bytes.Equal(raw[k.n:], k.body)
}

// zscoreMember returns the suffix of member when an entry of it and score is shorter with
// the member written as its score: the mark (the bytes tagLong, 0: a long string of no
// bytes, which AppendString never writes), the suffix's length (a byte) and the suffix,
// the member being the decimal of the score that follows, then the suffix. A sliding log's
// timestamps, members and scores alike, take 3 bytes a member that way instead of 7, and
// "1732512345000-42" 6 instead of 17. Only a small set writes them: a big one hashes its
// members' elements (NewBig and ZEditor write them out in full first).
func zscoreMember(member []byte, score float64) (suffix []byte, ok bool) {
	if score != math.Trunc(score) || math.Abs(score) > maxScoreInt || score == 0 && math.Signbit(score) {
		return nil, false
	}
	lead, suffix, ok := zsplit(member)
	if !ok || lead != int64(score) || 3+len(suffix) >= ElemLen(member) {
		return nil, false
	}
	return suffix, true
}

// ZPlain appends z to dst with every member written as AppendString writes it: the form a
// big set keeps, and DUMP's. It returns z itself when it has no member written as its score.
func ZPlain(dst, z []byte) []byte {
	if !zhasScoreMember(z) {
		return z
	}
	for off := 0; off < len(z); {
		m, s, n := ZNext(z[off:])
		if n == 0 {
			break
		}
		var buf [32]byte
		dst = AppendScore(AppendString(dst, m.Append(buf[:0])), s)
		off += n
	}
	return dst
}

// zhasScoreMember reports whether an entry of z has its member written as its score.
func zhasScoreMember(z []byte) bool {
	for off := 0; off < len(z); {
		if isScoreMember(z[off:]) {
			return true
		}
		n := zskip(z[off:])
		if n == 0 {
			break
		}
		off += n
	}
	return false
}

// zafter reports whether the entry at the start of z, whose score is s, goes after an
// entry of score and member.
func zafter(z []byte, s, score float64, member []byte) bool {
	if s != score {
		return s > score
	}
	m, _ := Read(z)
	return m.Compare(member) > 0
}

// ZLoc is what ZLocate finds in a pack.
type ZLoc struct {
	Found   bool
	At, End int     // the member's entry, when Found
	Rank    int     // its rank from 0, when Found
	Score   float64 // its score, when Found
	// Ins is where an entry of the score ZLocate was given (and of the member) goes, with
	// the member's own entry still in place: never strictly inside it.
	Ins int
}

// ZLocate finds member in z, and where an entry of score for it goes, in one pass.
func ZLocate(z, member []byte, score float64) ZLoc {
	key := zkeyOf(member)
	loc := ZLoc{Ins: -1}
	rank := 0
	for off := 0; off < len(z); rank++ {
		k := Skip(z[off:])
		if k == 0 {
			break
		}
		s, j := zreadScore(z[off+k:])
		if j == 0 {
			break
		}
		if loc.Ins < 0 && s >= score && zafter(z[off:], s, score, member) {
			loc.Ins = off
			if loc.Found {
				return loc
			}
		}
		if !loc.Found && key.equal(z[off:], k) {
			loc.Found, loc.At, loc.End, loc.Rank, loc.Score = true, off, off+k+j, rank, s
			if loc.Ins >= 0 {
				return loc
			}
		}
		off += k + j
	}
	if loc.Ins < 0 {
		loc.Ins = len(z)
	}
	return loc
}

// ZFind finds member in z: its entry, rank and score.
func ZFind(z, member []byte) ZLoc {
	key := zkeyOf(member)
	rank := 0
	for off := 0; off < len(z); rank++ {
		k := Skip(z[off:])
		if k == 0 {
			break
		}
		if key.equal(z[off:], k) {
			s, j := zreadScore(z[off+k:])
			if j == 0 {
				break
			}
			return ZLoc{Found: true, At: off, End: off + k + j, Rank: rank, Score: s}
		}
		j := Skip(z[off+k:])
		if j == 0 {
			break
		}
		off += k + j
	}
	return ZLoc{}
}

// ZAddFlags are ZADD's options.
type ZAddFlags struct {
	NX, XX, GT, LT, Incr bool
}

// ZAddOutcome is what ZEditor.Add did.
type ZAddOutcome uint8

// The outcomes of an add.
const (
	ZAdded     ZAddOutcome = iota // a new member
	ZUpdated                      // the member's score changed
	ZUnchanged                    // the member had that score already (or INCR by 0)
	ZNop                          // NX, XX, GT or LT said to leave it alone
	ZNaN                          // INCR made the score NaN: nothing changed
)

// ZEditor edits a sorted set copy-on-write (indexed): Big tells whether the set has passed
// its listpack limits (MaxEntries members, a member longer than MaxValue), which Add turns
// on as Redis converts a listpack, and never off; a big set has its index in front of Z.
type ZEditor struct {
	indexed
	Num                  int64 // members
	Big                  bool
	MaxEntries, MaxValue int64
}

// NewZEditor starts editing z, a set of num members, building in buf (its bytes reused);
// maxEntries and maxValue are the listpack limits (zset-max-listpack-entries and -value).
func NewZEditor(z ZSet, num int64, big bool, maxEntries, maxValue int64, buf []byte) ZEditor {
	return ZEditor{indexed: indexed{Z: z.Pack, ix: z.ix, buf: buf[:0]}, Num: num, Big: big, MaxEntries: maxEntries, MaxValue: maxValue}
}

// set returns the set being edited.
func (e *ZEditor) set() ZSet { return ZSet{Pack: e.Z, ix: e.ix} }

// own makes Z the editor's copy, with an index of this process's when the set is big.
func (e *ZEditor) own() { e.indexed.own(e.Big, int(e.Num)) }

// Add sets member's score as ZADD does with flags f (Incr: adds score to it), and returns
// the member's score after it (what ZADD INCR replies) and what it did. A small set keeps a
// score of -0 as 0, as Redis's listpack does (it holds a whole score as an integer); a big
// one keeps -0, as Redis's skip list does.
func (e *ZEditor) Add(member []byte, score float64, f ZAddFlags) (float64, ZAddOutcome) {
	if math.IsNaN(score) {
		return 0, ZNaN
	}
	loc := e.set().Locate(member, score)
	if loc.Found {
		if f.NX {
			return loc.Score, ZNop
		}
		if f.Incr {
			score += loc.Score
			if math.IsNaN(score) {
				return 0, ZNaN
			}
		}
		if f.LT && score >= loc.Score || f.GT && score <= loc.Score {
			return loc.Score, ZNop
		}
		if score == loc.Score {
			return score, ZUnchanged
		}
		stored := e.stored(score)
		e.own()
		e.delete(loc.At, loc.End)
		e.Num--
		e.insert(e.set().Locate(member, stored).Ins, member, stored, int(e.Num))
		e.Num++
		return score, ZUpdated
	}
	if f.XX {
		return 0, ZNop
	}
	if !e.Big && (e.Num+1 > e.MaxEntries || int64(len(member)) > e.MaxValue) {
		e.Big = true
		if zhasScoreMember(e.Z) { // a big set's members are in full
			e.Z, e.ix, e.owned = ZPlain(nil, e.Z), nil, false
		}
		e.reindex(int(e.Num))
		loc.Ins = e.set().Locate(member, score).Ins
	}
	e.own()
	e.insert(loc.Ins, member, e.stored(score), int(e.Num))
	e.Num++
	return score, ZAdded
}

// stored returns the score as the set keeps it: a listpack holds a whole score as an
// integer, and -0 as 0.
func (e *ZEditor) stored(score float64) float64 {
	if !e.Big && score == 0 {
		return 0
	}
	return score
}

// Remove removes member, and reports whether it was there.
func (e *ZEditor) Remove(member []byte) bool {
	loc := e.set().Find(member)
	if !loc.Found {
		return false
	}
	e.DeleteSpan(loc.At, loc.End, 1)
	return true
}

// DeleteSpan removes the n entries that Z[from:to] holds.
func (e *ZEditor) DeleteSpan(from, to int, n int64) {
	if n == 0 {
		return
	}
	e.deleteSpan(from, to, e.Big, int(e.Num))
	e.Num -= n
	e.shrunk(int(e.Num))
}

// insert inserts the entry of member and score at Z[at], which must be owned, and indexes
// it; num is the entries before it.
func (e *ZEditor) insert(at int, member []byte, score float64, num int) {
	var sbuf [9]byte
	s := AppendScore(sbuf[:0], score)
	if suffix, ok := zscoreMember(member, score); ok && !e.Big {
		room := e.makeRoom(at, 3+len(suffix)+len(s))
		room[0], room[1], room[2] = tagLong, 0, byte(len(suffix))
		copy(room[3+copy(room[3:], suffix):], s)
		e.indexInsert(at, len(room), num)
		return
	}
	room := e.makeRoom(at, ElemLen(member)+len(s))
	copy(room[len(AppendString(room[:0], member)):], s)
	e.indexInsert(at, len(room), num)
}

// ScoreRange is a range of scores as ZRANGEBYSCORE takes it: from Min to Max, each bound
// exclusive when its Ex is set.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

// GteMin reports whether f is not below the range.
func (r ScoreRange) GteMin(f float64) bool {
	if r.MinEx {
		return f > r.Min
	}
	return f >= r.Min
}

// LteMax reports whether f is not above the range.
func (r ScoreRange) LteMax(f float64) bool {
	if r.MaxEx {
		return f < r.Max
	}
	return f <= r.Max
}

// Empty reports whether no score can be in the range.
func (r ScoreRange) Empty() bool {
	return r.Min > r.Max || r.Min == r.Max && (r.MinEx || r.MaxEx)
}

// ZScoreSpan returns the entries of z with scores in r: they are z[from:to], n of them,
// the first of rank rank.
func ZScoreSpan(z []byte, r ScoreRange) (from, to int, n int64, rank int) {
	from = -1
	if r.Empty() {
		return 0, 0, 0, 0
	}
	for off := 0; off < len(z); {
		m := Skip(z[off:])
		if m == 0 {
			break
		}
		s, j := zreadScore(z[off+m:])
		if j == 0 || !r.LteMax(s) {
			break
		}
		k := m + j
		if from < 0 {
			if r.GteMin(s) {
				from = off
			} else {
				rank++
			}
		}
		if from >= 0 {
			n++
		}
		off += k
		to = off
	}
	if from < 0 {
		return 0, 0, 0, 0
	}
	return from, to, n, rank
}

// LexBound is one end of a range of members as ZRANGEBYLEX takes it: "-" (Inf -1, below
// every member), "+" (Inf 1, above every one), or a member, exclusive when Ex.
type LexBound struct {
	Inf int8
	S   []byte
	Ex  bool
}

// LexRange is a range of members from Min to Max.
type LexRange struct{ Min, Max LexBound }

// lexCmpBounds orders two bounds as Redis's sdscmplex: "-" and "+" equal only themselves.
func lexCmpBounds(a, b LexBound) int {
	switch {
	case a.Inf != 0 && a.Inf == b.Inf:
		return 0
	case a.Inf < 0 || b.Inf > 0:
		return -1
	case a.Inf > 0 || b.Inf < 0:
		return 1
	}
	return bytes.Compare(a.S, b.S)
}

// lexCmpMember compares a member with a bound.
func lexCmpMember(m Elem, b LexBound) int {
	if b.Inf != 0 {
		return -int(b.Inf)
	}
	return m.Compare(b.S)
}

// GteMin reports whether m is not below the range.
func (r LexRange) GteMin(m Elem) bool {
	c := lexCmpMember(m, r.Min)
	if r.Min.Ex {
		return c > 0
	}
	return c >= 0
}

// LteMax reports whether m is not above the range.
func (r LexRange) LteMax(m Elem) bool {
	c := lexCmpMember(m, r.Max)
	if r.Max.Ex {
		return c < 0
	}
	return c <= 0
}

// Empty reports whether no member can be in the range.
func (r LexRange) Empty() bool {
	c := lexCmpBounds(r.Min, r.Max)
	return c > 0 || c == 0 && (r.Min.Ex || r.Max.Ex)
}

// The lexicographic commands assume that every member has the same score; when they do
// not, Redis answers whatever its listpack walk finds, and these functions walk the pack
// the same way, so that a small set answers as Redis's does.

// ZLexInRange reports whether r may hold entries of z, as Redis checks before it walks:
// the range is not empty, the last member is not below it, the first not above it.
func ZLexInRange(z []byte, r LexRange) bool {
	if r.Empty() || len(z) == 0 {
		return false
	}
	first, _, n := ZNext(z)
	if n == 0 || !r.LteMax(first) {
		return false
	}
	last := first
	for off := n; off < len(z); {
		m, _, k := ZNext(z[off:])
		if k == 0 {
			break
		}
		last = m
		off += k
	}
	return r.GteMin(last)
}

// ZLexFirst returns the offset and rank of the first entry of z in r walking forward (the
// first member not below r, if it is not above it), or -1.
func ZLexFirst(z []byte, r LexRange) (off, rank int) {
	if !ZLexInRange(z, r) {
		return -1, 0
	}
	for off < len(z) {
		m, _, k := ZNext(z[off:])
		if k == 0 {
			break
		}
		if r.GteMin(m) {
			if r.LteMax(m) {
				return off, rank
			}
			return -1, 0
		}
		off += k
		rank++
	}
	return -1, 0
}

// ZLexLast returns the index in offs (z's ZOffsets) of the first entry in r walking
// backward (the last member not above r, if it is not below it), or -1.
func ZLexLast(z []byte, offs []int, r LexRange) int {
	if !ZLexInRange(z, r) {
		return -1
	}
	for i := len(offs) - 1; i >= 0; i-- {
		m, _, _ := ZNext(z[offs[i]:])
		if r.LteMax(m) {
			if r.GteMin(m) {
				return i
			}
			return -1
		}
	}
	return -1
}

// ZLexSpan returns the entries ZREMRANGEBYLEX and ZLEXCOUNT take: from the first in r
// walking forward, while members are not above r. They are z[from:to], n of them.
func ZLexSpan(z []byte, r LexRange) (from, to int, n int64) {
	from, _ = ZLexFirst(z, r)
	if from < 0 {
		return 0, 0, 0
	}
	to = from
	for to < len(z) {
		m, _, k := ZNext(z[to:])
		if k == 0 || !r.LteMax(m) {
			break
		}
		to += k
		n++
	}
	return from, to, n
}
