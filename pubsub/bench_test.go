package pubsub

import (
	"testing"
)

// discard is a Receiver that drops everything.
type discard struct{}

func (discard) Message(pattern, channel, message []byte)      {}
func (discard) Confirm(change Change, name []byte, count int) {}

// BenchmarkPublish: the deny events publish on every denial, usually where nobody listens.
func BenchmarkPublish(b *testing.B) {
	channel, message := []byte("__throttled__:denied"), []byte("throttle user:42 1500")
	cases := []struct {
		name  string
		setup func(h *Hub)
	}{
		{"nobody subscribed", func(h *Hub) {}},
		{"others subscribed", func(h *Hub) { h.NewSubscriber(discard{}).Subscribe([]byte("__sentinel__:hello")) }},
		{"one subscriber", func(h *Hub) { h.NewSubscriber(discard{}).Subscribe(channel) }},
		{"one pattern", func(h *Hub) { h.NewSubscriber(discard{}).PSubscribe([]byte("__throttled__:denied*")) }},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			h := New()
			tc.setup(h)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					h.Publish(channel, message)
				}
			})
		})
	}
}
