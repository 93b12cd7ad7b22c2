package keyspace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// model is a reference implementation: a map of every stored key, expired or not. With
// change tracking on, mirror is a copy kept up to date by draining the changes, as
// persistence does, and copies the same from the replicas' feed, which captures them.
type model struct {
	t       testing.TB
	ks      *Keyspace
	m       map[string]Value
	mirror  map[string]Value
	copies  map[string]Value
	scratch []byte // edit's buffer for new byte values, as the server's
}

func newModel(t testing.TB, shards int) *model {
	ks := New(shards)
	ks.Track(DiskFeed, true)
	ks.Track(ReplicaFeed, true)
	return &model{t: t, ks: ks, m: map[string]Value{}, mirror: map[string]Value{}, copies: map[string]Value{}}
}

func expired(v Value, now int64) bool { return v.Expire != 0 && now >= v.Expire }

func (m *model) set(key string, v Value) {
	set(m.ks, key, v)
	if v.Kind == None {
		delete(m.m, key)
		return
	}
	v.Bytes = bytes.Clone(v.Bytes)
	if len(v.Bytes) == 0 {
		v.Bytes = nil
	}
	m.m[key] = v
}

// edit rewrites the value of key as the server's limits do: under the shard's lock it reads
// the value and writes back one with the bytes shortened by aliasing the stored ones (the
// oldest admissions of a log leave the window), rebuilt longer in a scratch buffer (an
// admission), changed in place, or with Num2 turning zero or not; the bytes of a missing
// key start near maxInlineValue, so that edits take them in and out of the entry.
func (m *model) edit(r *rand.Rand, key string, now int64) {
	want, wok := m.m[key]
	if wok && expired(want, now) {
		delete(m.m, key)
		wok = false
	}
	s := m.ks.Shard([]byte(key))
	s.Lock()
	defer s.Unlock()
	v, ok := s.GetLocked([]byte(key), now)
	require.Equal(m.t, wok, ok, "edit %q", key)
	if !ok {
		v = Value{Kind: SlidingLog, Num: now, Bytes: bytes.Repeat([]byte{byte(r.Int())}, maxInlineValue-10+r.IntN(20))}
		if r.IntN(2) == 0 {
			v.Expire = now + 1 + r.Int64N(200)
		}
	}
	grow := func(n int) {
		v.Bytes = append(m.scratch[:0], v.Bytes...)
		for range n {
			v.Bytes = append(v.Bytes, byte(r.Int()))
		}
		m.scratch = v.Bytes
	}
	switch r.IntN(5) {
	case 0:
		v.Bytes = v.Bytes[min(len(v.Bytes), r.IntN(9)):]
	case 1, 2:
		grow(r.IntN(9))
	case 3:
		if len(v.Bytes) > 0 {
			v.Bytes[r.IntN(len(v.Bytes))]++ // the stored bytes themselves
		}
	case 4:
		// The fixed part grows or shrinks by 8 bytes and the value the other way, so that
		// the entry keeps its size but not its layout.
		if v.Num2 == 0 {
			v.Num2 = 1 + r.Int64N(5)
			v.Bytes = v.Bytes[min(len(v.Bytes), 8):]
		} else {
			v.Num2 = 0
			grow(8)
		}
	}
	v.Num++
	want = v
	want.Bytes = bytes.Clone(v.Bytes) // before SetLocked, which may write over what v.Bytes aliases
	if len(want.Bytes) == 0 {
		want.Bytes = nil
	}
	s.SetLocked([]byte(key), v)
	m.m[key] = want
}

func (m *model) get(key string, now int64) {
	got, ok := get(m.ks, key, now)
	want, wok := m.m[key]
	if wok && expired(want, now) {
		delete(m.m, key)
		wok = false
	}
	require.Equal(m.t, wok, ok, "get %q", key)
	if ok {
		require.Equal(m.t, want, got, "get %q", key)
	}
}

func (m *model) del(key string) {
	_, want := m.m[key]
	delete(m.m, key)
	require.Equal(m.t, want, del(m.ks, key), "del %q", key)
}

func (m *model) delAt(key string, now int64) {
	v, ok := m.m[key]
	want := ok && !expired(v, now)
	delete(m.m, key)
	s := m.ks.Shard([]byte(key))
	s.Lock()
	got := s.DeleteAtLocked([]byte(key), now)
	s.Unlock()
	require.Equal(m.t, want, got, "delete %q at %d", key, now)
}

// expireCycle runs ExpireCycle, then checks that it removed only expired keys and forgets
// the ones it removed.
func (m *model) expireCycle(now int64, work int) {
	removed := m.ks.ExpireCycle(now, work)
	require.LessOrEqual(m.t, removed, work)
	gone := 0
	for k, v := range m.m {
		if !stored(m.ks, k) {
			require.True(m.t, expired(v, now), "ExpireCycle removed live key %q", k)
			delete(m.m, k)
			gone++
		}
	}
	require.Equal(m.t, removed, gone)
}

// verify compares the whole keyspace with the model.
func (m *model) verify(now int64) {
	require.Equal(m.t, len(m.m), m.ks.Len())
	exp := 0
	for _, v := range m.m {
		if v.Expire != 0 {
			exp++
		}
	}
	require.Equal(m.t, exp, m.ks.Expires())
	seen := map[string]bool{}
	for cursor := uint64(0); ; {
		cursor = m.ks.Scan(cursor, 7, now, func(key []byte, v Value) {
			k := string(key)
			require.False(m.t, seen[k], "scan returned %q twice", k)
			seen[k] = true
			want, ok := m.m[k]
			require.True(m.t, ok, "scan returned unknown key %q", k)
			require.False(m.t, expired(want, now))
			require.Equal(m.t, want, Value{Kind: v.Kind, Expire: v.Expire, Num: v.Num, Num2: v.Num2, Bytes: bytes.Clone(v.Bytes)})
		})
		if cursor == 0 {
			break
		}
	}
	for k, v := range m.m {
		require.Equal(m.t, !expired(v, now), seen[k], "scan and key %q", k)
	}
	checkInvariants(m.t, m.ks)
	m.drain()
	require.Equal(m.t, m.m, m.mirror, "the mirror after draining every change")
	require.Equal(m.t, m.m, m.copies, "the copies after draining every change")
	require.Zero(m.t, m.ks.Pending(DiskFeed))
	require.Zero(m.t, m.ks.Pending(ReplicaFeed))
}

func randomValue(r *rand.Rand, now int64) Value {
	v := Value{Kind: Kind(1 + r.IntN(3))}
	if r.IntN(3) > 0 {
		v.Expire = now + 1 + r.Int64N(200)
	}
	v.Num = r.Int64()
	if r.IntN(2) == 0 {
		v.Num2 = r.Int64N(3)
	}
	switch r.IntN(5) {
	case 0:
		v.Bytes = bytes.Repeat([]byte{byte(r.Int())}, r.IntN(40))
	case 1:
		v.Bytes = make([]byte, r.IntN(2000))
	case 2:
		v.Bytes = bytes.Repeat([]byte{byte(r.Int())}, maxInlineValue-3+r.IntN(7)) // at the limit
	}
	return v
}

func TestModelRandom(t *testing.T) {
	for _, tc := range []struct {
		shards, keys, ops int
	}{{1, 50, 20000}, {1, 5000, 60000}, {4, 3000, 60000}, {64, 500, 20000}} {
		t.Run(fmt.Sprintf("%d shards %d keys", tc.shards, tc.keys), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.shards), uint64(tc.keys)))
			m := newModel(t, tc.shards)
			keys := make([]string, tc.keys)
			for i := range keys {
				keys[i] = fmt.Sprintf("k%d", i) + strings.Repeat("\x00", r.IntN(20))
				if i%500 == 7 {
					keys[i] += strings.Repeat("B", maxInlineKey)
				}
			}
			now := int64(1000)
			// Phases of mostly inserting, then mostly deleting, so that ids and arenas
			// grow and shrink.
			for op := range tc.ops {
				insert := (op/(tc.ops/6))%2 == 0
				key := keys[r.IntN(len(keys))]
				switch n := r.IntN(100); {
				case n < 40 && insert, n < 10:
					m.set(key, randomValue(r, now))
				case n < 50 && insert, n < 15:
					m.edit(r, key, now)
				case n < 60:
					m.get(key, now)
				case n < 90:
					m.del(key)
				case n < 93:
					m.delAt(key, now)
				case n < 97:
					now += r.Int64N(20)
				case n < 98:
					m.expireCycle(now, r.IntN(100))
				case n < 99:
					m.drain()
				default:
					m.set(key, Value{})
				}
				if op%(tc.ops/20) == 0 {
					m.verify(now)
				}
			}
			m.verify(now)
		})
	}
}

// FuzzKeyspace drives random op sequences against the model. Each op takes 4 bytes:
// the op, the key, and two of value or time.
func FuzzKeyspace(f *testing.F) {
	f.Add([]byte("\x00\x01\x05\x07\x01\x01\x00\x00\x02\x01\x00\x00"))
	f.Add(bytes.Repeat([]byte("\x00\x03\xff\x10\x05\x03\x09\x00\x03\x03\x00\x00"), 30))
	f.Add(bytes.Repeat([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, 20))
	keys := []string{"", "\x00", "a", "a\x00", "b", strings.Repeat("l", 200), strings.Repeat("h", maxInlineKey+5)}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := newModel(t, 2)
		now := int64(100)
		for ; len(data) >= 4; data = data[4:] {
			op, kb, a, b := data[0], data[1], data[2], data[3]
			var key string
			if int(kb) < len(keys) {
				key = keys[kb]
			} else {
				key = string(binary.AppendUvarint([]byte("k"), uint64(kb)))
			}
			switch op % 8 {
			case 0, 1:
				v := Value{Kind: Kind(1 + a%3), Num: int64(b) - 100, Num2: int64(a>>2) % 3}
				if a&0x20 != 0 {
					v.Expire = now + int64(b%16) + 1
				}
				if a&0x40 != 0 {
					n := int(b % 50)
					if a&0x80 != 0 {
						n += maxInlineValue - 25 // in and out of the entry
					}
					v.Bytes = bytes.Repeat([]byte{b}, n)
				}
				m.set(key, v)
			case 2:
				m.get(key, now)
			case 3:
				m.del(key)
			case 4:
				m.delAt(key, now)
			case 5:
				now += int64(a % 8)
			case 6:
				m.expireCycle(now, int(a%40))
			case 7:
				if a&1 == 0 {
					m.set(key, Value{})
				} else {
					m.drain()
				}
			}
		}
		m.verify(now)
	})
}
