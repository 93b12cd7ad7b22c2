package notify

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestParseAndString: Redis's keyspaceEventsStringToFlags and keyspaceEventsFlagsToString,
// their quirks included (A hides n; m comes after K and E).
func TestParseAndString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"KEA", "AKE"},
		{"AKE", "AKE"},
		{"g$lshzxetd", "A"},
		{"g$lshzxe", "g$lshzxe"},
		{"Elg", "glE"},
		{"mEK", "KEm"},
		{"KEAn", "AKE"},
		{"n", "n"},
		{"xx", "x"},
		{"Ex", "xE"},
	} {
		c, err := Parse(tc.in)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, c.String(), tc.in)
	}
	for _, bad := range []string{"Q", "KEa", " ", "K E", "$$$!"} {
		_, err := Parse(bad)
		require.ErrorIs(t, err, ErrBadClass, bad)
	}
	require.Equal(t, "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.", ErrBadClass.Error())
}

// recorder is a Publisher that keeps what it is given.
type recorder struct {
	idle bool
	got  []string
}

func (r *recorder) Publish(channel, message []byte) int {
	r.got = append(r.got, string(channel)+" "+string(message))
	return 1
}

func (r *recorder) Idle() bool { return r.idle }

// TestFire: an event goes out on the channels K and E ask for, only while its class is on,
// and not at all without K or E, or while nobody subscribes.
func TestFire(t *testing.T) {
	for _, tc := range []struct {
		flags string
		class Class
		want  []string
	}{
		{"KE$", String, []string{"__keyspace@0__:k set", "__keyevent@0__:set k"}},
		{"K$", String, []string{"__keyspace@0__:k set"}},
		{"E$", String, []string{"__keyevent@0__:set k"}},
		{"KEl", String, nil},
		{"$", String, nil},
		{"KEA", NewKey, nil},
		{"KEn", NewKey, []string{"__keyspace@0__:k set", "__keyevent@0__:set k"}},
		{"", String, nil},
	} {
		var n Notifier
		r := &recorder{}
		n.Init(r)
		c, err := Parse(tc.flags)
		require.NoError(t, err)
		n.Set(c)
		n.Fire(tc.class, "set", []byte("k"))
		require.Equal(t, tc.want, r.got, tc.flags)
	}
	var n Notifier
	r := &recorder{idle: true}
	n.Init(r)
	n.Set(Keyspace | Keyevent | All)
	n.Fire(String, "set", []byte("k"))
	require.Empty(t, r.got, "nobody subscribes")
	var zero Notifier // never given a publisher: off, whatever is set
	zero.Set(Keyspace | All)
	zero.Fire(String, "set", []byte("k"))
}
