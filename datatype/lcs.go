package datatype

import (
	"errors"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/keyspace"
)

var (
	// errLCSType is LCS of a key that holds no string.
	errLCSType = errors.New("The specified keys must contain string values")
	// errLCSLenIdx is LCS with both LEN and IDX.
	errLCSLenIdx = errors.New("If you want both the length and indexes, please just use IDX.")
	// errLCSMemory is LCS whose table would pass proto-max-bulk-len.
	errLCSMemory = errors.New("Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
)

func (dt *Family) lcsCommands() []*command.Spec {
	return []*command.Spec{
		{Name: "lcs", Arity: -3, Flags: "readonly", FirstKey: 1, LastKey: 2, KeySpecs: []command.KeySpec{{Begin: 1, Flags: "RO access"}}, Group: "string", Since: "7.0.0", Summary: "Finds the longest common substring.", Syntax: "key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]", Handler: dt.cmdLCS},
	}
}

// lcsRange is one run of matching bytes, IDX's entry: where it is in each string.
type lcsRange struct{ aStart, aEnd, bStart, bEnd uint32 }

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]: the longest common
// subsequence of two strings (a missing key an empty one), by Redis's dynamic programming
// table and its walk back from the end, so that IDX's runs are Redis's.
func (dt *Family) cmdLCS(c *command.Ctx, args [][]byte) error {
	shards := c.Keys.LockKeys(args[1:3], nil)
	defer keyspace.UnlockShards(shards)
	now := c.Now()
	var strs [2][]byte
	wrong := false // both keys are looked up before either's type counts, as Redis's
	for i, k := range args[1:3] {
		v, ok := c.Keys.Shard(k).GetLocked(k, now)
		countRead(c, c.Keys.Shard(k), k, ok)
		wrong = wrong || ok && v.Kind != keyspace.String
		strs[i] = v.Bytes
	}
	if wrong {
		return errLCSType
	}
	a, b := strs[0], strs[1]
	var getLen, getIdx, withLen bool
	var minLen int64
	for j := 3; j < len(args); j++ {
		switch o := args[j]; {
		case command.EqualFold(o, "idx"):
			getIdx = true
		case command.EqualFold(o, "len"):
			getLen = true
		case command.EqualFold(o, "withmatchlen"):
			withLen = true
		case command.EqualFold(o, "minmatchlen") && j+1 < len(args):
			n, ok := command.ParseInt(args[j+1])
			if !ok {
				return command.ErrNotInteger
			}
			minLen = max(n, 0)
			j++
		default:
			return command.ErrSyntax
		}
	}
	if getLen && getIdx {
		return errLCSLenIdx
	}
	alen, blen := uint32(len(a)), uint32(len(b))
	if uint64(alen+1)*uint64(blen+1)*4 > uint64(dt.cfg.MaxBulk) {
		return errLCSMemory
	}
	w := blen + 1
	lcs := make([]uint32, (alen+1)*w)
	at := func(i, j uint32) uint32 { return lcs[j+i*w] }
	for i := uint32(1); i <= alen; i++ {
		for j := uint32(1); j <= blen; j++ {
			if a[i-1] == b[j-1] {
				lcs[j+i*w] = at(i-1, j-1) + 1
			} else {
				lcs[j+i*w] = max(at(i-1, j), at(i, j-1))
			}
		}
	}
	idx := at(alen, blen)
	if getLen {
		c.W.Int(int64(idx))
		return nil
	}
	result := make([]byte, idx)
	var ranges []lcsRange
	cur := lcsRange{aStart: alen} // aStart == alen: no run started
	for i, j := alen, blen; i > 0 && j > 0; {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			switch {
			case cur.aStart == alen:
				cur = lcsRange{i - 1, i - 1, j - 1, j - 1}
			case cur.aStart == i && cur.bStart == j:
				cur.aStart--
				cur.bStart--
			default:
				emit = true
			}
			if cur.aStart == 0 || cur.bStart == 0 {
				emit = true
			}
			idx, i, j = idx-1, i-1, j-1
		} else {
			if at(i-1, j) > at(i, j-1) {
				i--
			} else {
				j--
			}
			emit = cur.aStart != alen
		}
		if emit {
			if n := cur.aEnd - cur.aStart + 1; minLen == 0 || int64(n) >= minLen {
				ranges = append(ranges, cur)
			}
			cur.aStart = alen
		}
	}
	if !getIdx {
		c.W.Bulk(result)
		return nil
	}
	c.W.Map(2)
	c.W.BulkString("matches")
	c.W.Array(len(ranges))
	for _, r := range ranges {
		c.W.Array(2 + int(b2i(withLen)))
		c.W.Array(2)
		c.W.Int(int64(r.aStart))
		c.W.Int(int64(r.aEnd))
		c.W.Array(2)
		c.W.Int(int64(r.bStart))
		c.W.Int(int64(r.bEnd))
		if withLen {
			c.W.Int(int64(r.aEnd - r.aStart + 1))
		}
	}
	c.W.BulkString("len")
	c.W.Int(int64(at(alen, blen)))
	return nil
}
