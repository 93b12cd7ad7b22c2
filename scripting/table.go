package scripting

import (
	lua "github.com/yuin/gopher-lua"
)

// table.insert, table.remove and table.sort as Lua 5.1's ltablib.c has them. Ours rather
// than gopher-lua's for two reasons: they must refuse the sandbox's read-only views, as
// Redis's refuse its read-only tables, so that no script can leave anything in them for
// the next; and table.sort must be Lua's own quicksort, so that elements a comparator
// finds equal end up in the same order as on Redis, and an inconsistent comparator fails
// as there ("invalid order function for sorting").

func (st *state) writable(L *lua.LState, n int) *lua.LTable {
	t := L.CheckTable(n)
	if st.protected[t] {
		L.Error(lua.LString(errReadonly), 0) // from C: no position, as Redis
	}
	return t
}

// tableInsert is table.insert(t, [pos,] value).
func (st *state) tableInsert(L *lua.LState) int {
	t := st.writable(L, 1)
	e := t.Len() + 1
	var pos int
	switch L.GetTop() {
	case 2:
		pos = e
	case 3:
		pos = checkInt(L, 2)
		if pos > e {
			e = pos
		}
		for i := e; i > pos; i-- {
			t.RawSetInt(i, t.RawGetInt(i-1))
		}
	default:
		L.RaiseError("wrong number of arguments to 'insert'")
	}
	t.RawSetInt(pos, L.Get(L.GetTop()))
	return 0
}

// tableRemove is table.remove(t [, pos]).
func (st *state) tableRemove(L *lua.LState) int {
	t := st.writable(L, 1)
	e := t.Len()
	pos := optInt(L, 2, e)
	if pos < 1 || pos > e {
		return 0
	}
	v := t.RawGetInt(pos)
	for ; pos < e; pos++ {
		t.RawSetInt(pos, t.RawGetInt(pos+1))
	}
	t.RawSetInt(e, lua.LNil)
	L.Push(v)
	return 1
}

// tableSort is table.sort(t [, comp]).
func (st *state) tableSort(L *lua.LState) int {
	t := st.writable(L, 1)
	var comp *lua.LFunction
	if v := L.Get(2); v != lua.LNil {
		comp = L.CheckFunction(2)
	}
	less := func(a, b lua.LValue) bool {
		if comp == nil {
			return L.LessThan(a, b)
		}
		L.Push(comp)
		L.Push(a)
		L.Push(b)
		L.Call(2, 1)
		r := lua.LVAsBool(L.Get(-1))
		L.Pop(1)
		return r
	}
	auxsort(L, t, 1, t.Len(), less)
	return 0
}

// auxsort is Lua 5.1's quicksort of t[l..u], step for step: the same comparisons in the
// same order, the same swaps.
func auxsort(L *lua.LState, t *lua.LTable, l, u int, less func(a, b lua.LValue) bool) {
	get := t.RawGetInt
	set := t.RawSetInt
	for l < u {
		// Sort a[l], a[(l+u)/2] and a[u].
		al, au := get(l), get(u)
		if less(au, al) {
			set(l, au)
			set(u, al)
		}
		if u-l == 1 {
			break
		}
		i := (l + u) / 2
		ai, al := get(i), get(l)
		if less(ai, al) {
			set(i, al)
			set(l, ai)
		} else {
			au := get(u)
			if less(au, ai) {
				set(i, au)
				set(u, ai)
			}
		}
		if u-l == 2 {
			break
		}
		p := get(i) // the pivot, moved to u-1
		set(i, get(u-1))
		set(u-1, p)
		i, j := l, u-1
		for {
			for {
				i++
				if !less(get(i), p) {
					break
				}
				if i > u {
					L.RaiseError("invalid order function for sorting")
				}
			}
			for {
				j--
				if !less(p, get(j)) {
					break
				}
				if j < l {
					L.RaiseError("invalid order function for sorting")
				}
			}
			if j < i {
				break
			}
			ai, aj := get(i), get(j)
			set(i, aj)
			set(j, ai)
		}
		aum1, ai2 := get(u-1), get(i)
		set(u-1, ai2)
		set(i, aum1)
		// Recurse into the smaller half, loop on the larger.
		if i-l < u-i {
			j = l
			i = i - 1
			l = i + 2
		} else {
			j = i + 1
			i = u
			u = j - 2
		}
		auxsort(L, t, j, i, less)
	}
}
