package collection

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseScore: what redis-server 7.0.15 took as ZADD's score (its ZSCORE after, "" for
// an error) and as ZCOUNT's min.
func TestParseScore(t *testing.T) {
	for _, tc := range []struct {
		in    string
		score string // ZSCORE after ZADD; "" when ZADD refused it
		bound bool   // ZCOUNT key in +inf took it
	}{
		{"inf", "inf", true},
		{"+inf", "inf", true},
		{"-inf", "-inf", true},
		{"Inf", "inf", true},
		{"INFINITY", "inf", true},
		{"infinit", "", false},
		{"1e3", "1000", true},
		{" 1", "", true},
		{"1 ", "", false},
		{"nan", "", false},
		{"-nan", "", false},
		{"nan(1)", "", false},
		{"", "", true},
		{"0x10", "16", true},
		{"0X1P-2", "0.25", true},
		{"0x", "", false},
		{"0x.8", "0.5", true},
		{"0x1p", "", false},
		{"0x1p+", "", false},
		{"1e400", "", true},
		{"-1e400", "", true},
		{"1e-400", "", true},
		{"2e-324", "", true},
		{"3e-324", "4.9406564584124654e-324", true},
		{"4.9e-324", "4.9406564584124654e-324", true},
		{"1e-310", "9.9999999999999694e-311", true},
		{"-0", "0", true},
		{".5", "0.5", true},
		{"5.", "5", true},
		{"+1", "1", true},
		{"1e", "", false},
		{"1e+", "", false},
		{"1.5e2", "150", true},
		{"+.5e-1", "0.050000000000000003", true},
		{"1_0", "", false},
		{"0x1p3", "8", true},
		{"0x1p-1075", "", true},
		{"0x1p-1074", "4.9406564584124654e-324", true},
		{"0x1p1024", "", true},
		{"0xffffffffffffffffffff", "1.2089258196146292e+24", true},
		{"123456789012345678901234567890", "1.2345678901234568e+29", true},
		{"0.1", "0.10000000000000001", true},
		{"9007199254740993", "9007199254740992", true},
		{"1\x00", "", true},
		{"\x001", "", true},
		{"--1", "", false},
		{"+-1", "", false},
		{"1.2.3", "", false},
		{"e5", "", false},
		{".", "", false},
		{"+", "", false},
		{"-", "", false},
		{"0x1.fffffffffffff8p1023", "", true},
		{"1e308", "1e+308", true},
		{"1.7976931348623158e308", "1.7976931348623157e+308", true},
		{"1.7976931348623159e308", "", true},
		{"00012", "12", true},
		{"1e-5", "1.0000000000000001e-05", true},
		{"0e999999999999", "0", true},
		{"1e-99999999999999999999", "", true},
	} {
		t.Run(strconv.Quote(tc.in), func(t *testing.T) {
			f, ok := ParseScore([]byte(tc.in))
			require.Equal(t, tc.score != "", ok)
			if ok {
				if f == 0 {
					f = 0 // a listpack's -0 is 0
				}
				require.Equal(t, tc.score, string(AppendScoreText(nil, f)))
			}
			_, ok = ParseScoreRange([]byte(tc.in), []byte("+inf"))
			require.Equal(t, tc.bound, ok)
			_, ok = ParseScoreRange([]byte("("+tc.in), []byte("+inf"))
			require.Equal(t, tc.bound, ok)
		})
	}
}

func TestParseScoreRange(t *testing.T) {
	for _, tc := range []struct {
		min, max string
		want     ScoreRange
	}{
		{"-inf", "+inf", ScoreRange{Min: math.Inf(-1), Max: math.Inf(1)}},
		{"(1", "(2.5", ScoreRange{Min: 1, Max: 2.5, MinEx: true, MaxEx: true}},
		{"", "(", ScoreRange{MaxEx: true}},
		{" 1", "1e400", ScoreRange{Min: 1, Max: math.Inf(1)}},
		{"1\x00junk", "0x10", ScoreRange{Min: 1, Max: 16}},
		{"(1732512345000", "1732512345999", ScoreRange{Min: 1732512345000, Max: 1732512345999, MinEx: true}},
	} {
		t.Run(tc.min+" "+tc.max, func(t *testing.T) {
			r, ok := ParseScoreRange([]byte(tc.min), []byte(tc.max))
			require.True(t, ok)
			require.Equal(t, tc.want, r)
		})
	}
	for _, bad := range []string{"((1", "[1", "abc", " ", "nan", "(nan", "1 ", "1e"} {
		_, ok := ParseScoreRange([]byte(bad), []byte("1"))
		require.False(t, ok, bad)
	}
}

func TestParseLexRange(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want LexBound
		ok   bool
	}{
		{"-", LexBound{Inf: -1, Ex: true}, true},
		{"+", LexBound{Inf: 1, Ex: true}, true},
		{"-\x00x", LexBound{Inf: -1, Ex: true}, true},
		{"[a", LexBound{S: []byte("a")}, true},
		{"(a", LexBound{S: []byte("a"), Ex: true}, true},
		{"[", LexBound{S: []byte{}}, true},
		{"", LexBound{}, false},
		{"a", LexBound{}, false},
		{"-a", LexBound{}, false},
		{"+a", LexBound{}, false},
	} {
		t.Run(strconv.Quote(tc.in), func(t *testing.T) {
			r, ok := ParseLexRange([]byte(tc.in), []byte("+"))
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.want, r.Min)
			}
		})
	}
}

// zpack builds a pack of member, score pairs in the order given (not sorted).
func zpack(entries ...any) []byte {
	var z []byte
	for i := 0; i < len(entries); i += 2 {
		z = AppendString(z, []byte(entries[i].(string)))
		z = AppendScore(z, entries[i+1].(float64))
	}
	return z
}

// zentries reads a pack back as member, score pairs.
func zentries(t *testing.T, z []byte) []any {
	var out []any
	for len(z) > 0 {
		m, s, n := ZNext(z)
		require.NotZero(t, n)
		out = append(out, string(m.Append(nil)), s)
		z = z[n:]
	}
	return out
}

func TestZEditorAdd(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct {
		name    string
		start   []any
		member  string
		score   float64
		flags   ZAddFlags
		big     bool
		want    []any
		score2  float64
		outcome ZAddOutcome
	}{
		{"into an empty set", nil, "a", 1, ZAddFlags{}, false, []any{"a", 1.0}, 1, ZAdded},
		{"at the end", []any{"a", 1.0, "b", 2.0}, "c", 3, ZAddFlags{}, false, []any{"a", 1.0, "b", 2.0, "c", 3.0}, 3, ZAdded},
		{"at the front", []any{"a", 1.0}, "b", 0, ZAddFlags{}, false, []any{"b", 0.0, "a", 1.0}, 0, ZAdded},
		{"a tie goes by bytes", []any{"a", 1.0, "c", 1.0}, "b", 1, ZAddFlags{}, false, []any{"a", 1.0, "b", 1.0, "c", 1.0}, 1, ZAdded},
		{"shorter first", []any{"ab", 1.0}, "a", 1, ZAddFlags{}, false, []any{"a", 1.0, "ab", 1.0}, 1, ZAdded},
		{"integers by their text", []any{"10", 1.0, "9", 1.0}, "100", 1, ZAddFlags{}, false, []any{"10", 1.0, "100", 1.0, "9", 1.0}, 1, ZAdded},
		{"moves forward", []any{"a", 1.0, "b", 2.0, "c", 3.0}, "a", 2.5, ZAddFlags{}, false, []any{"b", 2.0, "a", 2.5, "c", 3.0}, 2.5, ZUpdated},
		{"moves back", []any{"a", 1.0, "b", 2.0, "c", 3.0}, "c", 0, ZAddFlags{}, false, []any{"c", 0.0, "a", 1.0, "b", 2.0}, 0, ZUpdated},
		{"same score", []any{"a", 1.0}, "a", 1, ZAddFlags{}, false, []any{"a", 1.0}, 1, ZUnchanged},
		{"NX on a member", []any{"a", 1.0}, "a", 5, ZAddFlags{NX: true}, false, []any{"a", 1.0}, 1, ZNop},
		{"XX on none", []any{"a", 1.0}, "b", 5, ZAddFlags{XX: true}, false, []any{"a", 1.0}, 0, ZNop},
		{"GT lower", []any{"a", 2.0}, "a", 1, ZAddFlags{GT: true}, false, []any{"a", 2.0}, 2, ZNop},
		{"GT higher", []any{"a", 2.0}, "a", 3, ZAddFlags{GT: true}, false, []any{"a", 3.0}, 3, ZUpdated},
		{"GT adds", nil, "a", 3, ZAddFlags{GT: true}, false, []any{"a", 3.0}, 3, ZAdded},
		{"LT equal", []any{"a", 2.0}, "a", 2, ZAddFlags{LT: true}, false, []any{"a", 2.0}, 2, ZNop},
		{"INCR", []any{"a", 2.0, "b", 3.0}, "a", 2, ZAddFlags{Incr: true}, false, []any{"b", 3.0, "a", 4.0}, 4, ZUpdated},
		{"INCR new", nil, "a", 2, ZAddFlags{Incr: true}, false, []any{"a", 2.0}, 2, ZAdded},
		{"INCR to NaN", []any{"a", math.Inf(1)}, "a", math.Inf(-1), ZAddFlags{Incr: true}, false, []any{"a", math.Inf(1)}, 0, ZNaN},
		{"INCR GT not higher", []any{"a", 2.0}, "a", -1, ZAddFlags{Incr: true, GT: true}, false, []any{"a", 2.0}, 2, ZNop},
		{"-0 small", nil, "a", negZero, ZAddFlags{}, false, []any{"a", 0.0}, negZero, ZAdded},
		{"-0 big", nil, "a", negZero, ZAddFlags{}, true, []any{"a", negZero}, negZero, ZAdded},
		{"-0 over 0", []any{"a", 0.0}, "a", negZero, ZAddFlags{}, true, []any{"a", 0.0}, negZero, ZUnchanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := zpack(tc.start...)
			orig := slices.Clone(start)
			ed := NewZEditor(ZSetOf(start, false), int64(len(tc.start)/2), tc.big, 128, 64, nil)
			score, out := ed.Add([]byte(tc.member), tc.score, tc.flags)
			require.Equal(t, tc.outcome, out)
			require.Equal(t, math.Float64bits(tc.score2), math.Float64bits(score))
			got := zentries(t, ed.Z)
			require.Equal(t, len(tc.want), len(got))
			for i := range got {
				if f, ok := tc.want[i].(float64); ok {
					require.Equal(t, math.Float64bits(f), math.Float64bits(got[i].(float64)), "entry %d", i/2)
				} else {
					require.Equal(t, tc.want[i], got[i])
				}
			}
			require.Equal(t, int64(len(tc.want)/2), ed.Num)
			require.Equal(t, orig, start, "the pack it started from is never written")
			require.Equal(t, out == ZAdded || out == ZUpdated, ed.Changed())
		})
	}
}

// TestZEditorBig: a set turns big past either limit, when a member is added, never back.
func TestZEditorBig(t *testing.T) {
	ed := NewZEditor(ZSet{}, 0, false, 2, 3, nil)
	ed.Add([]byte("a"), 1, ZAddFlags{})
	ed.Add([]byte("b"), 1, ZAddFlags{})
	require.False(t, ed.Big)
	ed.Add([]byte("b"), 2, ZAddFlags{})
	ed.Add([]byte("cccc"), 2, ZAddFlags{XX: true})
	require.False(t, ed.Big, "updates and no-ops convert nothing")
	ed.Add([]byte("c"), 1, ZAddFlags{})
	require.True(t, ed.Big)
	require.True(t, ed.Remove([]byte("c")))
	require.True(t, ed.Big)

	ed = NewZEditor(ZSet{}, 0, false, 128, 3, nil)
	ed.Add([]byte("abcd"), 1, ZAddFlags{})
	require.True(t, ed.Big)
}

func TestZEditorRemoveAndSpans(t *testing.T) {
	z := zpack("a", 1.0, "b", 2.0, "c", 3.0, "d", 4.0, "e", 5.0)
	ed := NewZEditor(ZSetOf(z, false), 5, false, 128, 64, nil)
	require.False(t, ed.Remove([]byte("x")))
	require.False(t, ed.Changed())
	require.True(t, ed.Remove([]byte("c")))
	require.Equal(t, []any{"a", 1.0, "b", 2.0, "d", 4.0, "e", 5.0}, zentries(t, ed.Z))
	from, to, n, rank := ZScoreSpan(ed.Z, ScoreRange{Min: 2, Max: 4})
	require.Equal(t, int64(2), n)
	require.Equal(t, 1, rank)
	ed.DeleteSpan(from, to, n)
	require.Equal(t, []any{"a", 1.0, "e", 5.0}, zentries(t, ed.Z))
	require.Equal(t, int64(2), ed.Num)
	require.Equal(t, zpack("a", 1.0, "b", 2.0, "c", 3.0, "d", 4.0, "e", 5.0), z)
}

func TestZScoreSpan(t *testing.T) {
	z := zpack("a", 1.0, "b", 2.0, "c", 2.0, "d", 3.0)
	for _, tc := range []struct {
		r       ScoreRange
		n, rank int
	}{
		{ScoreRange{Min: math.Inf(-1), Max: math.Inf(1)}, 4, 0},
		{ScoreRange{Min: 2, Max: 2}, 2, 1},
		{ScoreRange{Min: 2, Max: 2, MinEx: true}, 0, 0},
		{ScoreRange{Min: 1, Max: 3, MinEx: true, MaxEx: true}, 2, 1},
		{ScoreRange{Min: 3, Max: 1}, 0, 0},
		{ScoreRange{Min: 4, Max: 9}, 0, 0},
		{ScoreRange{Min: math.Inf(-1), Max: 1, MaxEx: true}, 0, 0},
	} {
		from, to, n, rank := ZScoreSpan(z, tc.r)
		require.Equal(t, int64(tc.n), n, "%+v", tc.r)
		require.Equal(t, tc.rank, rank, "%+v", tc.r)
		if n > 0 {
			require.Equal(t, tc.n, len(zentries(t, z[from:to]))/2)
		}
	}
}

// TestZLex: the lexicographic walks, as Redis's listpack walks them, over members whose
// scores differ too (where what they answer is whatever the walk finds).
func TestZLex(t *testing.T) {
	lex := func(min, max string) LexRange {
		r, ok := ParseLexRange([]byte(min), []byte(max))
		require.True(t, ok)
		return r
	}
	same := zpack("a", 0.0, "b", 0.0, "c", 0.0, "d", 0.0)
	mixed := zpack("c", 1.0, "a", 2.0, "d", 3.0, "b", 4.0)
	offs := ZOffsets(nil, mixed)
	for _, tc := range []struct {
		name       string
		z          []byte
		r          LexRange
		first      int // rank of ZLexFirst, -1 for none
		count      int64
		last       int // index of ZLexLast, -1 for none
		inRangeNot bool
	}{
		{"all", same, lex("-", "+"), 0, 4, 3, false},
		{"inner", same, lex("(a", "[c"), 1, 2, 2, false},
		{"empty by bounds", same, lex("[c", "(c"), -1, 0, -1, true},
		{"- -", same, lex("-", "-"), -1, 0, -1, true},
		{"+ -", same, lex("+", "-"), -1, 0, -1, true},
		{"above all", same, lex("(d", "+"), -1, 0, -1, true},
		{"mixed: first not below, stops above", mixed, lex("[b", "[c"), 0, 2, 3, false},
		{"mixed: a..b", mixed, lex("[a", "[b"), -1, 0, -1, true},
		{"mixed: from the end", mixed, lex("[a", "[c"), 0, 2, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := tc.z
			off, rank := ZLexFirst(z, tc.r)
			if tc.first < 0 {
				require.Equal(t, -1, off)
			} else {
				require.Equal(t, tc.first, rank)
			}
			_, _, n := ZLexSpan(z, tc.r)
			require.Equal(t, tc.count, n)
			require.Equal(t, tc.last, ZLexLast(z, ZOffsets(nil, z), tc.r))
			require.Equal(t, !tc.inRangeNot, ZLexInRange(z, tc.r))
		})
	}
	require.Len(t, offs, 4)
}

func TestZFindAndSeek(t *testing.T) {
	z := zpack("a", 1.0, "1732512345123", 2.0, string(make([]byte, 300)), 2.5, "-5", math.Inf(1))
	for i, m := range []string{"a", "1732512345123", string(make([]byte, 300)), "-5"} {
		loc := ZFind(z, []byte(m))
		require.True(t, loc.Found, m)
		require.Equal(t, i, loc.Rank)
		require.Equal(t, ZSeek(z, i), loc.At)
		require.Equal(t, ZSeek(z, i+1), loc.End)
	}
	for _, m := range []string{"b", "-0", "01732512345123", string(make([]byte, 299)), ""} {
		require.False(t, ZFind(z, []byte(m)).Found, m)
	}
	require.Equal(t, len(z), ZSeek(z, 9))
	require.Equal(t, []int{0, ZSeek(z, 1), ZSeek(z, 2), ZSeek(z, 3)}, ZOffsets(nil, z))
}

// BenchmarkZLocate is the scan ZADD makes of a sliding log of 100 millisecond timestamps,
// to add the next one at its end.
// TestZScoreMember: a small set writes a member that is its integer score's decimal, with
// or without a short suffix, as its score (3 bytes and the suffix), finds it either way, and
// writes it in full again for a big set and for DUMP.
func TestZScoreMember(t *testing.T) {
	for _, tc := range []struct {
		member string
		score  float64
		short  bool // written as its score
	}{
		{"1732512345000", 1732512345000, true},
		{"1732512345000-42", 1732512345000, true},
		{"-1732512345000:x", -1732512345000, true},
		{"1732512345000-12345678901", 1732512345000, false}, // a suffix past maxSuffix
		{"1732512345001", 1732512345000, false},             // another number
		{"17325123450001", 1732512345000, false},            // its digits run on
		{"1732512345000", 1732512345000.5, false},           // a score with a fraction
		{"01732512345000", 1732512345000, false},            // not canonical
		{"7", 7, false},                                     // one byte in full already
		{"-0", 0, false},
		{"9007199254740993", 9007199254740993, false}, // past 2^53: its score is no integer
	} {
		t.Run(tc.member, func(t *testing.T) {
			ed := NewZEditor(ZSet{}, 0, false, 128, 64, nil)
			_, out := ed.Add([]byte(tc.member), tc.score, ZAddFlags{})
			require.Equal(t, ZAdded, out)
			plain := zpack(tc.member, tc.score)
			require.Equal(t, tc.short, isScoreMember(ed.Z))
			if tc.short {
				require.Less(t, len(ed.Z), len(plain))
			} else {
				require.Equal(t, plain, ed.Z)
			}
			require.Equal(t, []any{tc.member, tc.score}, zentries(t, ed.Z))
			require.Equal(t, plain, ZPlain(nil, ed.Z))
			require.True(t, ZFind(ed.Z, []byte(tc.member)).Found)
			require.True(t, ZFind(plain, []byte(tc.member)).Found, "the full form is found as well")
			for _, other := range []string{tc.member + "0", tc.member[:len(tc.member)-1], "1732512345000-4", "1732512345000"} {
				if other != tc.member {
					require.False(t, ZFind(ed.Z, []byte(other)).Found, other)
				}
			}
			m, _ := Read(ed.Z)
			require.True(t, m.Equal([]byte(tc.member)))
			require.False(t, m.Equal([]byte(tc.member+"0")))
			require.Equal(t, 0, m.Compare([]byte(tc.member)))
			require.Equal(t, len(tc.member), m.Len())
			require.Equal(t, 2, Count(ed.Z))
			_, _, ok := CheckPack(ed.Z, 2, true)
			require.True(t, ok)
			if tc.short {
				_, _, ok = CheckPack(ed.Z, 2, false)
				require.False(t, ok, "a hash never holds one")
				_, _, ok = CheckPack(ed.Z, 1, false)
				require.False(t, ok, "nor a list")
				b := NewBig(ed.Z, true)
				require.Equal(t, plain, b.AppendEncoded(nil))
			}
		})
	}
}

// TestZSlidingLog: a sliding log of timestamps as members, added and trimmed as a limiter
// does, takes 10 bytes an entry, and its walks allocate nothing.
func TestZSlidingLog(t *testing.T) {
	const base = 1732512345000
	for _, suffix := range []string{"", "-7"} {
		ed := NewZEditor(ZSet{}, 0, false, 128, 64, nil)
		for i := range 100 {
			ts := strconv.Itoa(base + 600*i)
			ed.Add([]byte(ts+suffix), float64(base+600*i), ZAddFlags{})
		}
		require.Equal(t, 100*(3+len(suffix)+7), len(ed.Z))
		z := slices.Clone(ed.Z)
		m := []byte(strconv.Itoa(base+600*50) + suffix)
		require.Equal(t, 50, ZFind(z, m).Rank)
		require.Zero(t, testing.AllocsPerRun(100, func() {
			ZLocate(z, m, base+600*50)
			ZFind(z, m)
			ZScoreSpan(z, ScoreRange{Min: math.Inf(-1), Max: base + 600*20, MaxEx: true})
		}))
		from, to, n, _ := ZScoreSpan(z, ScoreRange{Min: math.Inf(-1), Max: base + 600*20, MaxEx: true})
		require.Equal(t, int64(20), n)
		ed = NewZEditor(ZSetOf(z, false), 100, false, 128, 64, nil)
		ed.DeleteSpan(from, to, n)
		got := zentries(t, ed.Z)
		require.Equal(t, strconv.Itoa(base+600*20)+suffix, got[0])
	}
}

func BenchmarkZLocate(b *testing.B) {
	var z []byte
	for i := range 100 {
		ts := strconv.Itoa(1732512345000 + i)
		z = AppendScore(AppendString(z, []byte(ts)), float64(1732512345000+i))
	}
	m := []byte("1732512345100")
	b.ReportAllocs()
	for b.Loop() {
		ZLocate(z, m, 1732512345100)
	}
}

// FuzzZSet runs random sequences of adds (with ZADD's flags), removals and removals of a
// range of scores on a sorted set, and checks it after each against a map and a sort: the
// same members, scores and order, and outcomes as ZADD's rules give.
func FuzzZSet(f *testing.F) {
	f.Add([]byte{0, 1, 2, 0, 3, 4, 1, 1, 0, 2, 0, 5})
	f.Add([]byte{0, 7, 7, 8, 0, 3, 5, 2, 2, 1, 9, 9, 3, 4, 0})
	members := []string{"a", "b", "ab", "", "0", "7", "10", "-1", "-0", "01", "1732512345123", "x\x00",
		"1732512345123-1", "1732512345123-10", "1732512345123x", "-1-a", "1-", "1732512345123-12345678901"}
	scores := []float64{0, math.Copysign(0, -1), 1, -1, 2.5, 1732512345123, math.Inf(1), math.Inf(-1), 1e17, 0.1}
	f.Fuzz(func(t *testing.T, ops []byte) {
		defer smallGroups()()
		model := map[string]float64{}
		var buf []byte
		z := []byte(nil) // the set's bytes: its index, when big, and its pack
		big := false
		next := func() int {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return int(b)
		}
		for len(ops) > 0 {
			ed := NewZEditor(ZSetOf(z, big), int64(len(model)), big, 8, 16, buf) // 16: timestamps fit a small set, written as their scores
			op := next() % 5
			m := members[next()%len(members)]
			s := scores[next()%len(scores)]
			switch op {
			case 0:
				fl := next()
				flags := ZAddFlags{NX: fl&1 != 0, XX: fl&2 != 0, GT: fl&4 != 0, LT: fl&8 != 0, Incr: fl&16 != 0}
				old, had := model[m]
				score, out := ed.Add([]byte(m), s, flags)
				want := ZNop
				newScore := s
				if flags.Incr && had {
					newScore += old
				}
				switch {
				case had && flags.NX, !had && flags.XX:
				case had && math.IsNaN(newScore):
					want = ZNaN
				case had && (flags.LT && newScore >= old || flags.GT && newScore <= old):
				case had && newScore == old:
					want = ZUnchanged
				case had:
					want, model[m] = ZUpdated, newScore
				default:
					want, model[m] = ZAdded, newScore
				}
				require.Equal(t, want, out, "%q %v %+v", m, s, flags)
				if want == ZAdded || want == ZUpdated || want == ZUnchanged {
					require.Equal(t, newScore, score)
				}
			case 1:
				_, had := model[m]
				require.Equal(t, had, ed.Remove([]byte(m)))
				delete(model, m)
			case 2:
				s2 := scores[next()%len(scores)]
				r := ScoreRange{Min: min(s, s2), Max: max(s, s2), MinEx: next()%2 == 0, MaxEx: next()%2 == 0}
				from, to, n, _ := ed.set().ScoreSpan(r)
				var removed int64
				for k, v := range model {
					if r.GteMin(v) && r.LteMax(v) {
						delete(model, k)
						removed++
					}
				}
				require.Equal(t, removed, n, "%+v", r)
				ed.DeleteSpan(from, to, n)
			case 3:
				loc := ed.set().Find([]byte(m))
				v, had := model[m]
				require.Equal(t, had, loc.Found)
				if had {
					require.Equal(t, v, loc.Score)
					require.Equal(t, ZFind(ed.Z, []byte(m)), loc)
				}
			case 4:
				if big && !ed.Changed() && len(z) >= 8 {
					z = slices.Clone(z)
					z[0] ^= 0x80 // another process's index: its slots are not to be used
				}
			}
			if ed.Changed() {
				z, buf = slices.Clone(ed.Bytes()), ed.Buf()[:0] // as the keyspace stores it: a copy the next edit must not write
			}
			big = ed.Big
			if big {
				ixCheck(t, z, len(model))
			}
			z0 := ZSetOf(z, big).Pack
			require.Equal(t, int64(len(model)), ed.Num)
			if len(model) > 8 {
				require.True(t, big)
			}
			// The pack holds the model's members in Redis's order.
			type entry struct {
				m string
				s float64
			}
			var want []entry
			for k, v := range model {
				want = append(want, entry{k, v})
			}
			slices.SortFunc(want, func(a, b entry) int {
				if a.s != b.s {
					if a.s < b.s {
						return -1
					}
					return 1
				}
				return strings.Compare(a.m, b.m)
			})
			got := zentries(t, z0)
			require.Equal(t, 2*len(want), len(got))
			for i, e := range want {
				require.Equal(t, e.m, got[2*i])
				require.Equal(t, e.s, got[2*i+1].(float64), e.m)
			}
		}
	})
}
