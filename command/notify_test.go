package command

import (
	"testing"

	"github.com/throttledhq/throttled/notify"
	"github.com/throttledhq/throttled/pubsub"
)

// BenchmarkNotifyOff is what a handler's event costs while its class is off (the default):
// a call, an atomic load and a test.
func BenchmarkNotifyOff(b *testing.B) {
	c := &Ctx{Env: &Env{}}
	c.Events = &notify.Notifier{}
	c.Events.Init(pubsub.New())
	key := []byte("key")
	b.ReportAllocs()
	for b.Loop() {
		c.Notify(notify.String, "set", key)
	}
}

// BenchmarkNotifyNobodyListens: the class on, nobody subscribed.
func BenchmarkNotifyNobodyListens(b *testing.B) {
	c := &Ctx{Env: &Env{}}
	c.Events = &notify.Notifier{}
	c.Events.Init(pubsub.New())
	c.Events.Set(notify.Keyspace | notify.Keyevent | notify.All)
	key := []byte("key")
	b.ReportAllocs()
	for b.Loop() {
		c.Notify(notify.String, "set", key)
	}
}

// BenchmarkNotifySubscribed: the class on, a subscriber to every keyspace and keyevent
// channel by pattern: two messages built and delivered.
func BenchmarkNotifySubscribed(b *testing.B) {
	c := &Ctx{Env: &Env{}}
	hub := pubsub.New()
	hub.NewSubscriber(nopReceiver{}).PSubscribe([]byte("__key*__:*"))
	c.Events = &notify.Notifier{}
	c.Events.Init(hub)
	c.Events.Set(notify.Keyspace | notify.Keyevent | notify.All)
	key := []byte("key")
	b.ReportAllocs()
	for b.Loop() {
		c.Notify(notify.String, "set", key)
	}
}

type nopReceiver struct{}

func (nopReceiver) Message(pattern, channel, message []byte)             {}
func (nopReceiver) Confirm(change pubsub.Change, name []byte, count int) {}
