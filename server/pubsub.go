package server

import (
	"errors"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/pubsub"
	"github.com/throttledhq/throttled/resp"
)

func pubsubCommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "subscribe", noScript: true, arity: -2, flags: "pubsub noscript loading stale", group: "pubsub", since: "2.0.0", summary: "Listens for messages published to channels.", syntax: "channel ...", handler: cmdSubscribe, detach: true, whileSubscribed: true},
		{name: "unsubscribe", noScript: true, arity: -1, flags: "pubsub noscript loading stale", group: "pubsub", since: "2.0.0", summary: "Stops listening to messages posted to channels.", syntax: "[channel ...]", handler: cmdUnsubscribe, whileSubscribed: true},
		{name: "psubscribe", noScript: true, arity: -2, flags: "pubsub noscript loading stale", group: "pubsub", since: "2.0.0", summary: "Listens for messages published to channels that match one or more patterns.", syntax: "pattern ...", handler: cmdPSubscribe, detach: true, whileSubscribed: true},
		{name: "punsubscribe", noScript: true, arity: -1, flags: "pubsub noscript loading stale", group: "pubsub", since: "2.0.0", summary: "Stops listening to messages published to channels that match one or more patterns.", syntax: "[pattern ...]", handler: cmdPUnsubscribe, whileSubscribed: true},
		{name: "publish", arity: 3, flags: "pubsub loading stale fast", group: "pubsub", since: "2.0.0", summary: "Posts a message to a channel.", syntax: "channel message", handler: cmdPublish},
		{name: "pubsub", arity: -2, group: "pubsub", since: "2.8.0", summary: "A container for Pub/Sub commands."},
	}
}

func pubsubSubcommands() []*cmdEntry {
	return []*cmdEntry{
		{name: "channels", arity: -2, flags: "pubsub loading stale", group: "pubsub", since: "2.8.0", summary: "Returns the active channels.", syntax: "[pattern]", handler: cmdPubsubChannels},
		{name: "numsub", arity: -2, flags: "pubsub loading stale", group: "pubsub", since: "2.8.0", summary: "Returns a count of subscribers to channels.", syntax: "[channel ...]", handler: cmdPubsubNumSub},
		{name: "numpat", arity: 2, flags: "pubsub loading stale", group: "pubsub", since: "2.8.0", summary: "Returns a count of unique pattern subscriptions.", handler: cmdPubsubNumPat},
		{name: "help", arity: 2, flags: "loading stale", group: "pubsub", since: "6.2.0", summary: "Returns helpful text about the different subcommands.", handler: cmdPubsubHelp},
	}
}

// errNotDetached is a subscription on a path that skipped the dispatcher's detach (a
// handler calling another): the client has no output for messages to go to.
var errNotDetached = errors.New("SUBSCRIBE and PSUBSCRIBE are not allowed in this context")

// SUBSCRIBE channel [channel ...]
func cmdSubscribe(c *client, args [][]byte) error {
	if c.out == nil {
		return errNotDetached
	}
	c.subscriber().Subscribe(args[1:]...)
	c.setPubSubKind()
	return nil
}

// PSUBSCRIBE pattern [pattern ...]
func cmdPSubscribe(c *client, args [][]byte) error {
	if c.out == nil {
		return errNotDetached
	}
	c.subscriber().PSubscribe(args[1:]...)
	c.setPubSubKind()
	return nil
}

// UNSUBSCRIBE [channel ...]
func cmdUnsubscribe(c *client, args [][]byte) error {
	if c.sub == nil {
		confirmNothing(c, pubsub.Unsubscribe, args[1:])
		return nil
	}
	c.flush() // the replies before go before the confirmations, which go straight to c.out
	c.sub.Unsubscribe(args[1:]...)
	c.setPubSubKind()
	return nil
}

// PUNSUBSCRIBE [pattern ...]
func cmdPUnsubscribe(c *client, args [][]byte) error {
	if c.sub == nil {
		confirmNothing(c, pubsub.PUnsubscribe, args[1:])
		return nil
	}
	c.flush()
	c.sub.PUnsubscribe(args[1:]...)
	c.setPubSubKind()
	return nil
}

// confirmNothing answers an unsubscription from a client that never subscribed: each name
// left, with nothing left after it, or a nil name when none was given.
func confirmNothing(c *client, change pubsub.Change, names [][]byte) {
	if len(names) == 0 {
		writePubsubConfirm(&c.W, change, nil, 0)
	}
	for _, name := range names {
		writePubsubConfirm(&c.W, change, name, 0)
	}
}

// subscriber returns c's subscriptions, made on first use, after queuing the replies so far:
// the hub confirms each change on c's output (c is detached) under its lock, so that no
// message can come before its subscription's confirmation.
func (c *client) subscriber() *pubsub.Subscriber {
	c.flush()
	if c.sub == nil {
		sub := c.s.pubsub.NewSubscriber(c)
		c.mu.Lock()
		c.sub = sub
		c.mu.Unlock()
	}
	return c.sub
}

// subscribed reports whether c has a subscription: in RESP2 it may then run only the
// commands marked whileSubscribed.
func (c *client) subscribed() bool {
	if c.sub == nil {
		return false
	}
	channels, patterns := c.sub.Counts()
	return channels+patterns > 0
}

// setPubSubKind makes c a pub/sub client for CLIENT LIST and CLIENT KILL TYPE while it has
// subscriptions, and a normal one again after.
func (c *client) setPubSubKind() {
	switch kind := clientKind(c.kind.Load()); {
	case c.subscribed() && kind == kindNormal:
		c.kind.Store(int32(kindPubSub))
	case !c.subscribed() && kind == kindPubSub:
		c.kind.Store(int32(kindNormal))
	}
}

// Message implements pubsub.Receiver: a publisher queues the message on c's output, or,
// when that overflows, disconnects c.
func (c *client) Message(pattern, channel, message []byte) {
	if !c.seesEvent(channel, message) {
		return
	}
	o := c.out
	o.mu.Lock()
	ok := true
	if !o.dead {
		mark := len(o.w.B)
		writePubsubMessage(&o.w, pattern, channel, message)
		ok = o.queuedLocked(len(o.w.B) - mark)
	}
	o.mu.Unlock()
	if !ok {
		c.hangup()
	}
}

// Confirm implements pubsub.Receiver: c's own goroutine, changing its subscriptions, queues
// the confirmation on c's output.
func (c *client) Confirm(change pubsub.Change, name []byte, count int) {
	o := c.out
	o.mu.Lock()
	ok := true
	if !o.dead {
		mark := len(o.w.B)
		writePubsubConfirm(&o.w, change, name, count)
		ok = o.queuedLocked(len(o.w.B) - mark)
	}
	o.mu.Unlock()
	if !ok {
		c.hangup()
	}
}

// pubsubMessage writes a published message as Redis does: message, channel, payload; or
// pmessage, pattern, channel, payload.
func writePubsubMessage(w *resp.Writer, pattern, channel, message []byte) {
	if pattern == nil {
		w.Push(3)
		w.BulkString("message")
	} else {
		w.Push(4)
		w.BulkString("pmessage")
		w.Bulk(pattern)
	}
	w.Bulk(channel)
	w.Bulk(message)
}

// pubsubConfirm writes the confirmation of a subscription change: its kind, the channel or
// pattern (a null for none), and the subscriptions after it.
func writePubsubConfirm(w *resp.Writer, change pubsub.Change, name []byte, count int) {
	w.Push(3)
	w.BulkString(change.String())
	if name == nil {
		w.Null()
	} else {
		w.Bulk(name)
	}
	w.Int(int64(count))
}

// PUBLISH channel message
func cmdPublish(c *client, args [][]byte) error {
	c.W.Int(int64(c.s.pubsub.Publish(args[1], args[2])))
	return nil
}

// PUBSUB CHANNELS [pattern]
func cmdPubsubChannels(c *client, args [][]byte) error {
	var pattern []byte
	switch len(args) {
	case 2:
	case 3:
		pattern = args[2]
	default:
		return subcommandSyntax(args[1], "PUBSUB")
	}
	c.W.StringArray(c.s.pubsub.Channels(pattern))
	return nil
}

// PUBSUB NUMSUB [channel ...]
func cmdPubsubNumSub(c *client, args [][]byte) error {
	c.W.Array(2 * (len(args) - 2))
	for _, ch := range args[2:] {
		c.W.Bulk(ch)
		c.W.Int(int64(c.s.pubsub.NumSub(ch)))
	}
	return nil
}

// PUBSUB NUMPAT
func cmdPubsubNumPat(c *client, args [][]byte) error {
	c.W.Int(int64(c.s.pubsub.NumPat()))
	return nil
}

// PUBSUB HELP
func cmdPubsubHelp(c *client, args [][]byte) error {
	c.WriteHelp("PUBSUB", []string{
		"CHANNELS [<pattern>]", "    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT", "    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]", "    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
	})
	return nil
}

// subcommandSyntax is Redis's error for a subcommand given the wrong arguments.
func subcommandSyntax(sub []byte, parent string) error {
	return errors.New("unknown subcommand or wrong number of arguments for '" + command.Truncate(sub, 128) + "'. Try " + parent + " HELP.")
}
