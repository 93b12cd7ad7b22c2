package algorithms

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// acquire is CONCURRENCY.ACQUIRE with limit 2 and a 10s lease.
func acquire(id string) Concurrency { return Concurrency{Limit: 2, Lease: 10 * sec, ID: []byte(id)} }

func TestConcurrencySequence(t *testing.T) {
	steps := []struct {
		name    string
		at      int64 // ns after base
		id      string
		cost    int64 // -1: release
		want    [6]int64
		release bool // for releases: whether the id held slots
	}{
		{name: "a takes a slot", at: 0, id: "a", cost: 1, want: [6]int64{0, 2, 1, -1, 10 * sec, 0}},
		{name: "b takes the other", at: 0, id: "b", cost: 1, want: [6]int64{0, 2, 0, -1, 10 * sec, 0}},
		{name: "c waits for the first lease", at: sec, id: "c", cost: 1, want: [6]int64{1, 2, 0, 9 * sec, 9 * sec, 0}},
		{name: "a renews: no second slot", at: 2 * sec, id: "a", cost: 1, want: [6]int64{0, 2, 0, -1, 10 * sec, 0}},
		{name: "c now waits for b", at: 3 * sec, id: "c", cost: 1, want: [6]int64{1, 2, 0, 7 * sec, 9 * sec, 0}},
		{name: "probe", at: 3 * sec, id: "c", cost: 0, want: [6]int64{0, 2, 0, -1, 9 * sec, 0}},
		{name: "release b", at: 4 * sec, id: "b", cost: -1, release: true},
		{name: "c takes b's slot", at: 4 * sec, id: "c", cost: 1, want: [6]int64{0, 2, 0, -1, 10 * sec, 0}},
		{name: "release b again: held none", at: 4 * sec, id: "b", cost: -1, release: false},
		{name: "a's lease has expired at 12s", at: 12 * sec, id: "d", cost: 1, want: [6]int64{0, 2, 0, -1, 10 * sec, 0}},
		{name: "release of an expired lease", at: 12 * sec, id: "a", cost: -1, release: false},
		{name: "cost 2 waits for both", at: 13 * sec, id: "e", cost: 2, want: [6]int64{1, 2, 0, 9 * sec, 9 * sec, 0}},
		{name: "cost above the limit never fits", at: 13 * sec, id: "e", cost: 3, want: [6]int64{1, 2, 0, -1, 9 * sec, 0}},
		{name: "c renews with cost 2: d's slot is in the way", at: 13 * sec, id: "c", cost: 2, want: [6]int64{1, 2, 0, 9 * sec, 9 * sec, 0}},
		{name: "release c", at: 13 * sec, id: "c", cost: -1, release: true},
		{name: "release d: the key is empty", at: 13 * sec, id: "d", cost: -1, release: true},
		{name: "empty", at: 13 * sec, id: "x", cost: 0, want: [6]int64{0, 2, 2, -1, 0, 0}},
	}
	var k key
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.cost < 0 {
				require.Equal(t, s.release, k.release(t, base+s.at, s.id))
				return
			}
			require.Equal(t, s.want, reply(k.take(t, acquire(s.id), base+s.at, s.cost)))
		})
	}
	require.False(t, k.exists, "releasing the last holder deletes the key")
}

func TestConcurrencyLeases(t *testing.T) {
	t.Run("a lease ends at now+lease rounded up to the µs", func(t *testing.T) {
		var k key
		k.take(t, acquire("a"), base+1, 1)
		k.take(t, acquire("b"), base+1, 1)
		require.True(t, k.take(t, acquire("c"), base+10*sec+999, 1).Limited)
		require.False(t, k.take(t, acquire("c"), base+10*sec+1000, 1).Limited)
	})
	t.Run("renewing keeps the slot past the first lease", func(t *testing.T) {
		var k key
		for at := int64(0); at < 60*sec; at += 5 * sec {
			require.False(t, k.take(t, acquire("a"), base+at, 1).Limited)
			require.False(t, k.take(t, acquire("b"), base+at, 1).Limited)
			require.True(t, k.take(t, acquire("c"), base+at+sec, 1).Limited)
		}
	})
	t.Run("a renewal takes the new lease", func(t *testing.T) {
		var k key
		k.take(t, acquire("a"), base, 1)
		d := k.take(t, Concurrency{Limit: 2, Lease: sec, ID: []byte("a")}, base, 1)
		require.Equal(t, sec, d.ResetAfter)
	})
	t.Run("holders stay in order of expiry", func(t *testing.T) {
		var k key
		k.take(t, Concurrency{Limit: 5, Lease: 30 * sec, ID: []byte("long")}, base, 1)
		k.take(t, Concurrency{Limit: 5, Lease: 10 * sec, ID: []byte("short")}, base, 1)
		k.take(t, Concurrency{Limit: 5, Lease: 20 * sec, ID: []byte("mid")}, base, 1)
		var ids []string
		r := holderReader{b: k.st.Bytes, t: k.st.Num}
		for _, _, id, ok := r.next(); ok; _, _, id, ok = r.next() {
			ids = append(ids, string(id))
		}
		require.Equal(t, []string{"short", "mid", "long"}, ids)
		require.Equal(t, base+30*sec, k.st.Expire)
	})
}

func TestConcurrencyAdaptsNeverRefills(t *testing.T) {
	prepare := func(t *testing.T) *key {
		var k key
		for _, id := range []string{"a", "b", "c"} {
			k.take(t, Concurrency{Limit: 3, Lease: 10 * sec, ID: []byte(id)}, base, 1)
		}
		return &k
	}
	cases := []struct {
		name string
		p    Concurrency
		want [6]int64 // the reply at 1s
	}{
		{"limit shrinks: no new holder until enough leave", Concurrency{2, 10 * sec, []byte("d")}, [6]int64{1, 2, 0, 9 * sec, 9 * sec, 0}},
		{"limit shrinks: holders cannot renew either", Concurrency{2, 10 * sec, []byte("a")}, [6]int64{1, 2, 0, 9 * sec, 9 * sec, 0}},
		{"limit grows: the holders keep their slots", Concurrency{5, 10 * sec, []byte("d")}, [6]int64{0, 5, 1, -1, 10 * sec, 0}},
		{"shorter lease: the old leases run on", Concurrency{5, sec, []byte("d")}, [6]int64{0, 5, 1, -1, 9 * sec, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := prepare(t)
			require.Equal(t, c.want, reply(k.take(t, c.p, base+sec, 1)))
		})
	}
}

func TestConcurrencyEncoding(t *testing.T) {
	var k key
	id := func(i int) []byte { return []byte(strings.Repeat(string(rune('a'+i)), 16)) }
	k.take(t, Concurrency{Limit: 10, Lease: 30 * sec, ID: id(0)}, base, 1)
	require.Equal(t, 18, len(k.st.Bytes)) // delta 0, length, 16 bytes
	require.Equal(t, int64(0), k.st.Num2)
	k.take(t, Concurrency{Limit: 10, Lease: 30 * sec, ID: id(1)}, base+sec, 1)
	require.Equal(t, 18+20, len(k.st.Bytes)) // a delta of 1e6µs is 3 bytes
	k.take(t, Concurrency{Limit: 10, Lease: 30 * sec, ID: id(2)}, base+sec, 3)
	require.Equal(t, 18+20+19, len(k.st.Bytes)) // delta 0 and a count of 3
}

func TestConcurrencyLimits(t *testing.T) {
	t.Run("id length", func(t *testing.T) {
		long := bytes.Repeat([]byte("x"), MaxIDLength+1)
		requireErr(t, ErrIDLength, Concurrency{1, sec, long}.Validate())
		_, _, err := Release(base, State{}, false, long, nil)
		requireErr(t, ErrIDLength, err)
		var k key
		k.take(t, Concurrency{1, sec, long[:MaxIDLength]}, base, 1)
		k.take(t, Concurrency{1, sec, nil}, base+2*sec, 1) // the empty id
		require.True(t, k.release(t, base+2*sec, ""))
	})
	t.Run("holders", func(t *testing.T) {
		w := holderWriter{}
		for i := range MaxHolders {
			w.add(base/1000+1+int64(i), 1, []byte{byte(i), byte(i >> 8)})
		}
		st := State{Num: w.base, Bytes: w.buf}
		p := Concurrency{Limit: 1 << 20, Lease: 100 * sec, ID: []byte("new")}
		_, _, _, err := p.Take(base, st, true, 1, nil)
		requireErr(t, ErrHolders, err)
		// A holder renews, and once one has expired a new id fits.
		p.ID = []byte{5, 0}
		_, _, store, err := p.Take(base, st, true, 1, nil)
		require.NoError(t, err)
		require.True(t, store)
		p.ID = []byte("new")
		_, _, store, err = p.Take(base+1000, st, true, 1, nil)
		require.NoError(t, err)
		require.True(t, store)
	})
	t.Run("validate", func(t *testing.T) {
		requireErr(t, ErrLimit, Concurrency{0, sec, nil}.Validate())
		requireErr(t, ErrLease, Concurrency{1, 0, nil}.Validate())
		requireErr(t, ErrLease, Concurrency{1, MaxDuration + 1, nil}.Validate())
	})
}

func TestConcurrencyCorrupt(t *testing.T) {
	p := acquire("a")
	cases := []struct {
		name string
		st   State
	}{
		{"negative base", State{Num: -1}},
		{"truncated", State{Num: base / 1000, Bytes: []byte{0}}},
		{"id past the end", State{Num: base / 1000, Bytes: []byte{0, 3, 'a'}}},
		{"id too long", State{Num: base / 1000, Bytes: append([]byte{0, 0x81, 2}, make([]byte, 257)...)}},
		{"slots below 2", State{Num: base / 1000, Bytes: []byte{1, 1, 1, 'a'}}},
		{"expiry past 2189", State{Num: maxExpiryUs, Bytes: []byte{2, 1, 'a'}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, _, err := p.Take(base, c.st, true, 1, nil)
			requireErr(t, ErrCorrupt, err)
			_, _, err = Release(base, c.st, true, []byte("a"), nil)
			requireErr(t, ErrCorrupt, err)
		})
	}
}
