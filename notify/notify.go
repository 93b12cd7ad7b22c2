// Package notify is Redis's keyspace notifications: the classes of notify-keyspace-events,
// their flag string, and the Notifier that turns an event into the two pub/sub messages
// Redis sends for it.
//
// An event's path: a command's handler (through command.Ctx.Notify) or the keyspace (a key
// it expires, evicts or creates) calls Notifier.Fire with the event's class, its name and
// the key. With the class off, that is one atomic load and a test, which the caller makes
// inline (On) before anything else. With it on, Fire formats the channels in a pooled
// buffer and publishes, as Redis's notifyKeyspaceEvent does: "__keyspace@0__:<key>" with
// the event as the message when K is set, "__keyevent@0__:<event>" with the key as the
// message when E is. There is one database, so the number is always 0. The publisher
// delivers synchronously (the server's pub/sub hub), so an event reaches subscribers in
// the order the keyspace saw it: callers fire under the lock of the key's shard.
package notify

import (
	"errors"
	"sync/atomic"
)

// Class is a set of notify-keyspace-events flags, Redis's bits (server.h NOTIFY_*).
type Class uint32

// The classes, each with its letter in notify-keyspace-events.
const (
	Keyspace Class = 1 << 0  // K: publish on __keyspace@0__:<key>
	Keyevent Class = 1 << 1  // E: publish on __keyevent@0__:<event>
	Generic  Class = 1 << 2  // g: DEL, EXPIRE, RENAME, COPY, RESTORE... of any type
	String   Class = 1 << 3  // $
	List     Class = 1 << 4  // l
	Set      Class = 1 << 5  // s
	Hash     Class = 1 << 6  // h
	ZSet     Class = 1 << 7  // z
	Expired  Class = 1 << 8  // x: a key removed because it expired (lazily or actively)
	Evicted  Class = 1 << 9  // e: a key removed for maxmemory
	Stream   Class = 1 << 10 // t: no stream commands here; accepted as Redis does
	KeyMiss  Class = 1 << 11 // m: a read found no key (not in A)
	Module   Class = 1 << 13 // d: no modules here; accepted as Redis does
	NewKey   Class = 1 << 14 // n: a key was created, event "new" (not in A)

	// All is A: every class but m and n.
	All = Generic | String | List | Set | Hash | ZSet | Expired | Evicted | Stream | Module
)

// ErrBadClass is a flag string with a character that names no class; the text is Redis's.
var ErrBadClass = errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")

// Parse returns the classes of a notify-keyspace-events string, as Redis's
// keyspaceEventsStringToFlags: any order, repeats allowed, "" for none.
func Parse(s string) (Class, error) {
	var c Class
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			c |= All
		case 'g':
			c |= Generic
		case '$':
			c |= String
		case 'l':
			c |= List
		case 's':
			c |= Set
		case 'h':
			c |= Hash
		case 'z':
			c |= ZSet
		case 'x':
			c |= Expired
		case 'e':
			c |= Evicted
		case 'K':
			c |= Keyspace
		case 'E':
			c |= Keyevent
		case 't':
			c |= Stream
		case 'm':
			c |= KeyMiss
		case 'd':
			c |= Module
		case 'n':
			c |= NewKey
		default:
			return 0, ErrBadClass
		}
	}
	return c, nil
}

// String returns the flags as Redis's CONFIG GET shows them (keyspaceEventsFlagsToString):
// A for all of All, else the class letters in Redis's order, then K, E and m.
func (c Class) String() string {
	var b []byte
	if c&All == All {
		b = append(b, 'A')
	} else {
		for _, f := range [...]struct {
			c Class
			l byte
		}{{Generic, 'g'}, {String, '$'}, {List, 'l'}, {Set, 's'}, {Hash, 'h'}, {ZSet, 'z'},
			{Expired, 'x'}, {Evicted, 'e'}, {Stream, 't'}, {Module, 'd'}, {NewKey, 'n'}} {
			if c&f.c != 0 {
				b = append(b, f.l)
			}
		}
	}
	for _, f := range [...]struct {
		c Class
		l byte
	}{{Keyspace, 'K'}, {Keyevent, 'E'}, {KeyMiss, 'm'}} {
		if c&f.c != 0 {
			b = append(b, f.l)
		}
	}
	return string(b)
}

// Publisher delivers a message to a channel's subscribers, synchronously: the bytes it is
// given are reused once it returns (the server's pubsub.Hub).
type Publisher interface {
	Publish(channel, message []byte) int
	// Idle reports that nobody subscribes to anything, so that nothing need be built.
	Idle() bool
}

// Notifier fires keyspace events. Its zero value is off, until Init gives it a publisher.
// It must not be copied after first use.
type Notifier struct {
	// live is what On tests: the configured classes, or 0 when neither K nor E is set,
	// since then nothing would be published.
	live  atomic.Uint32
	flags atomic.Uint32 // the configured classes, as CONFIG GET shows them
	pub   Publisher
	// bufs are the buffers channel names are built in, free for the next Send: a buffered
	// channel rather than a sync.Pool, which drops what it is given at random under the race
	// detector (an allocation a test of the hot path would see now and then).
	bufs chan *[]byte
}

// Init makes n publish through p. Call it before n is used; n stays off until Set.
func (n *Notifier) Init(p Publisher) {
	n.pub = p
	n.bufs = make(chan *[]byte, freeBufs)
}

// freeBufs is how many buffers wait for a Send at most: one for each event loop building
// names at once, and more.
const freeBufs = 64

// Set configures the classes (notify-keyspace-events).
func (n *Notifier) Set(c Class) {
	n.flags.Store(uint32(c))
	if c&(Keyspace|Keyevent) == 0 {
		c = 0
	}
	n.live.Store(uint32(c &^ (Keyspace | Keyevent)))
}

// Flags returns the configured classes.
func (n *Notifier) Flags() Class { return Class(n.flags.Load()) }

// On reports whether an event of class c would be published: the test callers make
// before Fire, which is all notifications cost while they are off. A nil Notifier
// publishes nothing.
func (n *Notifier) On(c Class) bool {
	return n != nil && Class(n.live.Load())&c != 0
}

// Fire publishes event, of class c, on key, as Redis's notifyKeyspaceEvent. It does
// nothing when c is off. key is read only during the call.
func (n *Notifier) Fire(c Class, event string, key []byte) {
	if n.On(c) {
		n.Send(event, key)
	}
}

// Send publishes event on key as Fire, for a caller that tested On for its class.
func (n *Notifier) Send(event string, key []byte) {
	if n.pub == nil || n.pub.Idle() {
		return
	}
	flags := Class(n.flags.Load())
	var bp *[]byte
	select {
	case bp = <-n.bufs:
	default:
		bp = new([]byte)
	}
	b := *bp
	if flags&Keyspace != 0 {
		b = append(append(b[:0], keyspacePrefix...), key...)
		mark := len(b)
		b = append(b, event...)
		n.pub.Publish(b[:mark], b[mark:])
	}
	if flags&Keyevent != 0 {
		b = append(append(b[:0], keyeventPrefix...), event...)
		n.pub.Publish(b, key)
	}
	if cap(b) <= maxPooled {
		*bp = b
		select {
		case n.bufs <- bp:
		default:
		}
	}
}

// The channels' prefixes: database 0, the only one.
const (
	keyspacePrefix = "__keyspace@0__:"
	keyeventPrefix = "__keyevent@0__:"
)

// maxPooled bounds the buffers kept for reuse: a huge key's channel is built once.
const maxPooled = 4 << 10
