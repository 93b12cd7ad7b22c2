package difftest

import (
	"math/rand/v2"
	"strconv"
)

// diffKeyCmd draws SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, LCS, DUMP and RESTORE on k. A DUMP payload is each
// server's own: its reply is compared by shape, and RESTORE gets only payloads both refuse
// (damaged, short, or a Redis payload's footer with a wrong checksum), with its options and
// its ttl, so that their errors and the order Redis checks them in compare exactly.
// Offsets stay small but for ones both refuse: a bit far out takes 512 MB on both.
func diffKeyCmd(r *rand.Rand, k string) Cmd {
	if r.IntN(3) == 0 {
		return diffBitCmd(r, k)
	}
	switch r.IntN(6) {
	case 0, 1:
		off := strconv.Itoa(r.IntN(40))
		if r.IntN(8) == 0 {
			off = Pick(r, "-1", "abc", "", "4294967296", "9223372036854775807", "1.5")
		}
		return cmd("SETBIT", k, off, Pick(r, "0", "1", "1", "0", "2", "-1", "01", "x", ""))
	case 2:
		off := strconv.Itoa(r.IntN(60))
		if r.IntN(8) == 0 {
			off = Pick(r, "-1", "abc", "4294967296", "4294967295", "9223372036854775807")
		}
		return cmd("GETBIT", k, off)
	case 3:
		c := cmd("BITCOUNT", k)
		switch r.IntN(5) {
		case 0:
			c.Args = append(c.Args, Int(r, -10, 10))
		case 1, 2:
			c.Args = append(c.Args, Int(r, -20, 20), Int(r, -20, 20))
		case 3:
			c.Args = append(c.Args, Int(r, -80, 80), Int(r, -80, 80), Pick(r, "BIT", "bit", "BYTE", "byte", "bits", ""))
		case 4:
			c.Args = append(c.Args, "0", "-1", "BIT", "x")
		}
		return c
	case 4:
		return Cmd{Args: []string{"DUMP", k}, Shape: true}
	}
	c := cmd("RESTORE", k, Pick(r, "0", "0", "100000", "-1", "x", ""), Pick(r, "", "abc",
		"\x00\x03abc\x0a\x00\x01\x02\x03\x04\x05\x06\x07\x08",  // Redis's form, a wrong CRC
		"\x00\x03abc\x01\x74\x01\x02\x03\x04\x05\x06\x07\x08",  // this server's version, a wrong CRC
		"\x00\x03abc\xff\x00\x00\x00\x00\x00\x00\x00\x00\x00")) // a version past Redis's
	for range r.IntN(3) {
		switch r.IntN(6) {
		case 0:
			c.Args = append(c.Args, Pick(r, "REPLACE", "replace"))
		case 1:
			c.Args = append(c.Args, Pick(r, "ABSTTL", "absttl"))
		case 2:
			c.Args = append(c.Args, Pick(r, "IDLETIME", "idletime"), Pick(r, "5", "-1", "x"))
		case 3:
			c.Args = append(c.Args, "FREQ", Pick(r, "5", "255", "256", "-1", "x"))
		case 4:
			c.Args = append(c.Args, Pick(r, "IDLETIME", "FREQ", "bogus"))
		}
	}
	return c
}

// diffBitCmd draws BITPOS, BITOP, BITFIELD, BITFIELD_RO and LCS on k and the other keys.
func diffBitCmd(r *rand.Rand, k string) Cmd {
	switch r.IntN(7) {
	case 5, 6:
		c := cmd(Pick(r, "BITFIELD", "BITFIELD", "BITFIELD_RO"), k)
		for range r.IntN(4) {
			typ := Pick(r, "i", "u") + Int(r, 1, 64)
			off := Int(r, 0, 40)
			if r.IntN(5) == 0 {
				off = "#" + Int(r, 0, 5)
			}
			switch r.IntN(6) {
			case 0, 1:
				c.Args = append(c.Args, Pick(r, "GET", "get"), typ, off)
			case 2:
				c.Args = append(c.Args, "SET", typ, off, Int(r, -300, 300))
			case 3:
				c.Args = append(c.Args, Pick(r, "INCRBY", "incrby"), typ, off, Int(r, -300, 300))
			case 4:
				c.Args = append(c.Args, "OVERFLOW", Pick(r, "WRAP", "SAT", "FAIL", "sat", "nosuch"))
			case 5:
				c.Args = append(c.Args, Pick(r, "GET", "SET", "INCRBY", "OVERFLOW", "nosuch"), typ)
			}
		}
		return c
	case 0, 1:
		c := cmd("BITPOS", k, Pick(r, "0", "1", "1", "0", "2", "-1", "x"))
		switch r.IntN(5) {
		case 0:
			c.Args = append(c.Args, Int(r, -10, 10))
		case 1, 2:
			c.Args = append(c.Args, Int(r, -20, 20), Int(r, -20, 20))
		case 3:
			c.Args = append(c.Args, Int(r, -80, 80), Int(r, -80, 80), Pick(r, "BIT", "bit", "BYTE", "byte", "bits"))
		}
		return c
	case 2, 3:
		c := cmd("BITOP", Pick(r, "AND", "OR", "XOR", "NOT", "and", "not", "nand"), Key(r), k)
		for range r.IntN(3) {
			c.Args = append(c.Args, Key(r))
		}
		return c
	}
	c := cmd("LCS", k, Key(r))
	for range r.IntN(4) {
		switch r.IntN(6) {
		case 0:
			c.Args = append(c.Args, Pick(r, "LEN", "len"))
		case 1, 2:
			c.Args = append(c.Args, Pick(r, "IDX", "idx"))
		case 3:
			c.Args = append(c.Args, "MINMATCHLEN", Pick(r, "0", "1", "2", "3", "-1", "x"))
		case 4:
			c.Args = append(c.Args, Pick(r, "WITHMATCHLEN", "withmatchlen"))
		case 5:
			c.Args = append(c.Args, Pick(r, "MINMATCHLEN", "nosuch"))
		}
	}
	return c
}

// RandomKey draws over one key only, so that RANDOMKEY's answer is determined: nil on an
// empty keyspace, else that key.
func RandomKey(r *rand.Rand) Cmd {
	switch r.IntN(5) {
	case 0:
		return cmd("SET", "k0", diffStrValue(r))
	case 1:
		return cmd("DEL", "k0")
	case 2:
		return cmd("SETBIT", "k0", strconv.Itoa(r.IntN(20)), "1")
	}
	return cmd("RANDOMKEY")
}
