package pubsub

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// recorder is a Receiver that writes down what it gets, one line an event.
type recorder struct {
	mu     sync.Mutex // guards events
	events []string
}

func (r *recorder) Message(pattern, channel, message []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if pattern == nil {
		r.events = append(r.events, fmt.Sprintf("message %s %s", channel, message))
		return
	}
	r.events = append(r.events, fmt.Sprintf("pmessage %s %s %s", pattern, channel, message))
}

func (r *recorder) Confirm(change Change, name []byte, count int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if name == nil {
		r.events = append(r.events, fmt.Sprintf("%s <nil> %d", change, count))
		return
	}
	r.events = append(r.events, fmt.Sprintf("%s %s %d", change, name, count))
}

// take returns the events so far and forgets them.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events
	r.events = nil
	return ev
}

func bs(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, v := range s {
		out[i] = []byte(v)
	}
	return out
}

func TestSubscribePublishUnsubscribe(t *testing.T) {
	h := New()
	var ra, rb recorder
	a, b := h.NewSubscriber(&ra), h.NewSubscriber(&rb)

	require.Equal(t, 0, h.Publish([]byte("news"), []byte("nobody")))
	a.Subscribe(bs("news", "sport", "news")...)
	require.Equal(t, []string{"subscribe news 1", "subscribe sport 2", "subscribe news 2"}, ra.take())
	b.PSubscribe(bs("n*", "s[pq]ort")...)
	require.Equal(t, []string{"psubscribe n* 1", "psubscribe s[pq]ort 2"}, rb.take())
	b.Subscribe([]byte("news"))
	require.Equal(t, []string{"subscribe news 3"}, rb.take())

	require.Equal(t, 3, h.Publish([]byte("news"), []byte("hi")))
	require.Equal(t, []string{"message news hi"}, ra.take())
	require.ElementsMatch(t, []string{"message news hi", "pmessage n* news hi"}, rb.take())
	require.Equal(t, 2, h.Publish([]byte("sport"), []byte("goal")))
	require.Equal(t, []string{"message sport goal"}, ra.take())
	require.Equal(t, []string{"pmessage s[pq]ort sport goal"}, rb.take())
	require.Equal(t, 0, h.Publish([]byte("weather"), []byte("rain")))

	require.Equal(t, 2, h.NumSub([]byte("news")))
	require.Equal(t, 1, h.NumSub([]byte("sport")))
	require.Equal(t, 0, h.NumSub([]byte("weather")))
	require.Equal(t, 2, h.NumPat())
	require.Equal(t, 2, h.NumChannels())
	require.Equal(t, []string{"news", "sport"}, h.Channels(nil))
	require.Equal(t, []string{"sport"}, h.Channels([]byte("s*")))
	require.True(t, h.Listened([]byte("nothing-but-a-pattern"))) // n*
	require.False(t, h.Listened([]byte("weather")))
	ch, pat := b.Counts()
	require.Equal(t, []int{1, 2}, []int{ch, pat})

	a.Unsubscribe([]byte("sport"), []byte("never"))
	require.Equal(t, []string{"unsubscribe sport 1", "unsubscribe never 1"}, ra.take())
	a.Unsubscribe()
	require.Equal(t, []string{"unsubscribe news 0"}, ra.take())
	a.Unsubscribe()
	require.Equal(t, []string{"unsubscribe <nil> 0"}, ra.take())
	a.PUnsubscribe()
	require.Equal(t, []string{"punsubscribe <nil> 0"}, ra.take())
	require.Equal(t, []string{"news"}, h.Channels(nil))

	b.Unsubscribe() // patterns stay: the nil confirmation counts them
	require.Equal(t, []string{"unsubscribe news 2"}, rb.take())
	b.Unsubscribe()
	require.Equal(t, []string{"unsubscribe <nil> 2"}, rb.take())
	b.Close()
	require.Empty(t, rb.take(), "Close confirms nothing")
	require.Equal(t, 0, h.NumPat())
	require.Equal(t, 0, h.NumChannels())
	require.Equal(t, int64(0), h.active.Load())
	require.Equal(t, 0, h.Publish([]byte("news"), []byte("gone")))
}

// A subscriber sees its confirmation before any message its subscription brings, and none
// after the confirmation that it left, however publishers race with it.
func TestConfirmationsOrderedWithMessages(t *testing.T) {
	h := New()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				h.Publish([]byte(fmt.Sprintf("ch%d", i%3)), []byte("m"))
			}
		}()
	}
	var recs []*recorder
	var subsWG sync.WaitGroup
	for s := 0; s < 4; s++ {
		r := &recorder{}
		recs = append(recs, r)
		subsWG.Add(1)
		go func() {
			defer subsWG.Done()
			sub := h.NewSubscriber(r)
			for i := 0; i < 200; i++ {
				sub.Subscribe(bs("ch0", "ch1")...)
				sub.PSubscribe([]byte("ch*"))
				sub.Unsubscribe([]byte("ch0"))
				sub.Unsubscribe()
				sub.PUnsubscribe()
			}
			sub.Close()
		}()
	}
	subsWG.Wait()
	close(stop)
	wg.Wait()
	for _, r := range recs {
		in := map[string]bool{}
		for _, ev := range r.take() {
			f := strings.Fields(ev)
			switch f[0] {
			case "subscribe", "psubscribe":
				in[f[1]] = true
			case "unsubscribe", "punsubscribe":
				delete(in, f[1])
			case "message":
				require.True(t, in[f[1]], "a message on %s outside its subscription", f[1])
			case "pmessage":
				require.True(t, in[f[1]], "a message for %s outside its subscription", f[1])
			}
		}
	}
	require.Equal(t, 0, h.NumChannels())
	require.Equal(t, 0, h.NumPat())
}

// The empty channel and the empty pattern are names like any other, never "none".
func TestEmptyNames(t *testing.T) {
	h := New()
	var r recorder
	s := h.NewSubscriber(&r)
	s.Subscribe([]byte{})
	s.PSubscribe([]byte{})
	require.Equal(t, []string{"subscribe  1", "psubscribe  2"}, r.take())
	require.Equal(t, 2, h.Publish([]byte{}, []byte("m")))
	require.Equal(t, []string{"message  m", "pmessage   m"}, r.take())
	s.Unsubscribe()
	s.PUnsubscribe()
	require.Equal(t, []string{"unsubscribe  1", "punsubscribe  0"}, r.take())
}
