package collection

// The operations of several sets (SINTER, SUNION, SDIFF and their STORE forms,
// SINTERCARD), over sets read from the keyspace, each known with its count of members.

// AddAll adds every member of s to e.
func (e *SetEditor) AddAll(s Set) {
	var buf [24]byte
	for m := range s.Members() {
		e.Add(m.Bytes(buf[:0]))
	}
}

// AddUnion adds to e every member of sets.
func (e *SetEditor) AddUnion(sets []Set) {
	for _, s := range sets {
		e.AddAll(s)
	}
}

// AddDiff adds to e the members of sets[0] that no other of sets has.
func (e *SetEditor) AddDiff(sets []Set) {
	var buf [24]byte
	for m := range sets[0].Members() {
		if mb := m.Bytes(buf[:0]); !anyHas(sets[1:], mb) {
			e.Add(mb)
		}
	}
}

// anyHas reports whether one of sets has member.
func anyHas(sets []Set, member []byte) bool {
	for _, s := range sets {
		if s.Has(member) {
			return true
		}
	}
	return false
}

// Inter calls yield with each member of the intersection of sets (cards[i] the members of
// sets[i]), walking the smallest set's, until it returns false or limit members (0: no
// limit) have been yielded; it returns how many were.
func Inter(sets []Set, cards []int64, limit int64, yield func(Elem) bool) int64 {
	if len(sets) == 0 {
		return 0
	}
	least := 0
	for i, n := range cards {
		if n < cards[least] {
			least = i
		}
	}
	if cards[least] == 0 {
		return 0
	}
	n := int64(0)
	var buf [24]byte
	for m := range sets[least].Members() {
		mb := m.Bytes(buf[:0])
		in := true
		for i, s := range sets {
			if i != least && !s.Has(mb) {
				in = false
				break
			}
		}
		if !in {
			continue
		}
		n++
		if !yield(m) || limit > 0 && n >= limit {
			break
		}
	}
	return n
}
