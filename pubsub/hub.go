package pubsub

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/throttledhq/throttled/glob"
)

// Change is a change to a subscriber's subscriptions, named as Redis confirms it.
type Change uint8

// The changes Receiver.Confirm reports.
const (
	Subscribe Change = iota
	Unsubscribe
	PSubscribe
	PUnsubscribe
)

var changeNames = [...]string{"subscribe", "unsubscribe", "psubscribe", "punsubscribe"}

func (c Change) String() string { return changeNames[c] }

// Receiver is where a Subscriber's messages and confirmations go: for the server, a
// connection's output. Its methods are called with the hub's lock held, in the order of
// events; they must not block, nor call the hub.
type Receiver interface {
	// Message delivers message, published to channel; pattern is the subscribed pattern
	// channel matched, or nil for a subscription to channel itself.
	Message(pattern, channel, message []byte)
	// Confirm acknowledges change for name, a channel or a pattern (nil when an
	// unsubscription from everything found nothing to leave); count is how many channels
	// and patterns the subscriber has after it.
	Confirm(change Change, name []byte, count int)
}

// topic is a channel or a pattern with its subscribers.
type topic struct {
	name []byte // the map key's bytes, for Receiver.Message and glob.Match
	subs map[*Subscriber]struct{}
}

// Hub holds every subscription of one server.
type Hub struct {
	mu       sync.RWMutex // guards channels, patterns and every Subscriber's sets
	channels map[string]*topic
	patterns map[string]*topic
	active   atomic.Int64 // subscriptions of every subscriber: Publish's look before the lock
}

// New returns a hub with no subscriptions.
func New() *Hub {
	return &Hub{channels: make(map[string]*topic), patterns: make(map[string]*topic)}
}

// Subscriber is one receiver's channels and patterns. Its methods other than Counts are
// called by one goroutine at a time: the receiver's own.
type Subscriber struct {
	hub                  *Hub
	recv                 Receiver
	channels             map[string]struct{}
	patterns             map[string]struct{}
	nchannels, npatterns atomic.Int32 // their sizes, for Counts from any goroutine
}

// NewSubscriber returns a subscriber with no subscriptions that delivers to r.
func (h *Hub) NewSubscriber(r Receiver) *Subscriber {
	return &Subscriber{hub: h, recv: r, channels: make(map[string]struct{}), patterns: make(map[string]struct{})}
}

// Publish delivers message to the subscribers of channel and of every pattern it matches,
// and returns how many deliveries it made (a subscriber of the channel and of a pattern
// counts twice, as in Redis).
func (h *Hub) Publish(channel, message []byte) int {
	if h.active.Load() == 0 {
		return 0
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	if t := h.channels[string(channel)]; t != nil {
		for s := range t.subs {
			s.recv.Message(nil, channel, message)
			n++
		}
	}
	for _, t := range h.patterns {
		if glob.Match(t.name, channel) {
			for s := range t.subs {
				s.recv.Message(t.name, channel, message)
				n++
			}
		}
	}
	return n
}

// Idle reports whether nobody subscribes to anything: a Publish now would reach nobody.
// It is an atomic load, for publishers that build their messages (keyspace events).
func (h *Hub) Idle() bool { return h.active.Load() == 0 }

// Listened reports whether a Publish to channel now would reach anyone, so that a caller
// can skip building a message nobody reads.
func (h *Hub) Listened(channel []byte) bool {
	if h.active.Load() == 0 {
		return false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.channels[string(channel)] != nil {
		return true
	}
	for _, t := range h.patterns {
		if glob.Match(t.name, channel) {
			return true
		}
	}
	return false
}

// NumSub returns how many subscribers channel has, not counting patterns (PUBSUB NUMSUB).
func (h *Hub) NumSub(channel []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if t := h.channels[string(channel)]; t != nil {
		return len(t.subs)
	}
	return 0
}

// NumPat returns how many distinct patterns are subscribed to (PUBSUB NUMPAT).
func (h *Hub) NumPat() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.patterns)
}

// NumChannels returns how many channels have a subscriber.
func (h *Hub) NumChannels() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.channels)
}

// Channels returns the channels with a subscriber that match pattern, or all of them when
// pattern is nil, sorted (PUBSUB CHANNELS).
func (h *Hub) Channels(pattern []byte) []string {
	h.mu.RLock()
	var out []string
	for name, t := range h.channels {
		if pattern == nil || glob.Match(pattern, t.name) {
			out = append(out, name)
		}
	}
	h.mu.RUnlock()
	sort.Strings(out)
	return out
}

// Subscribe subscribes to each channel and confirms each, even one already subscribed.
func (s *Subscriber) Subscribe(channels ...[]byte) {
	s.change(Subscribe, channels)
}

// PSubscribe subscribes to each pattern and confirms each, even one already subscribed.
func (s *Subscriber) PSubscribe(patterns ...[]byte) {
	s.change(PSubscribe, patterns)
}

// Unsubscribe leaves each channel, or every channel when none is named, and confirms each,
// even one not subscribed; with none named and none subscribed it confirms a nil name.
func (s *Subscriber) Unsubscribe(channels ...[]byte) {
	s.change(Unsubscribe, channels)
}

// PUnsubscribe is Unsubscribe for patterns.
func (s *Subscriber) PUnsubscribe(patterns ...[]byte) {
	s.change(PUnsubscribe, patterns)
}

// Close leaves every channel and pattern without confirming anything: the receiver is
// gone or reset.
func (s *Subscriber) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	for name := range s.channels {
		s.removeLocked(Unsubscribe, name)
	}
	for name := range s.patterns {
		s.removeLocked(PUnsubscribe, name)
	}
}

// Counts returns how many channels and patterns s is subscribed to; any goroutine may call it.
func (s *Subscriber) Counts() (channels, patterns int) {
	return int(s.nchannels.Load()), int(s.npatterns.Load())
}

func (s *Subscriber) count() int {
	return int(s.nchannels.Load() + s.npatterns.Load())
}

// change applies change to each of names under the hub's lock, confirming each.
func (s *Subscriber) change(change Change, names [][]byte) {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(names) == 0 && (change == Unsubscribe || change == PUnsubscribe) {
		mine := s.channels
		if change == PUnsubscribe {
			mine = s.patterns
		}
		if len(mine) == 0 {
			s.recv.Confirm(change, nil, s.count())
		}
		for name := range mine {
			s.removeLocked(change, name)
			s.recv.Confirm(change, []byte(name), s.count())
		}
		return
	}
	for _, name := range names {
		switch change {
		case Subscribe, PSubscribe:
			s.addLocked(change, name)
		default:
			s.removeLocked(change, string(name))
		}
		s.recv.Confirm(change, name, s.count())
	}
}

// sets returns what change works on: the subscriber's own set, the hub's and the count.
func (s *Subscriber) sets(change Change) (map[string]struct{}, map[string]*topic, *atomic.Int32) {
	if change == Subscribe || change == Unsubscribe {
		return s.channels, s.hub.channels, &s.nchannels
	}
	return s.patterns, s.hub.patterns, &s.npatterns
}

func (s *Subscriber) addLocked(change Change, name []byte) {
	mine, topics, n := s.sets(change)
	if _, ok := mine[string(name)]; ok {
		return
	}
	key := string(name)
	mine[key] = struct{}{}
	t := topics[key]
	if t == nil {
		t = &topic{name: []byte(key), subs: make(map[*Subscriber]struct{}, 1)}
		topics[key] = t
	}
	t.subs[s] = struct{}{}
	n.Add(1)
	s.hub.active.Add(1)
}

func (s *Subscriber) removeLocked(change Change, name string) {
	mine, topics, n := s.sets(change)
	if _, ok := mine[name]; !ok {
		return
	}
	delete(mine, name)
	t := topics[name]
	delete(t.subs, s)
	if len(t.subs) == 0 {
		delete(topics, name) // so that channels nobody listens to take no memory
	}
	n.Add(-1)
	s.hub.active.Add(-1)
}
