// Package pubsub routes published messages to subscribers: the state behind Redis's
// SUBSCRIBE, PSUBSCRIBE and PUBLISH, with nothing of the protocol.
//
// A message's path: Hub.Publish finds the channel's subscribers, then every subscribed
// pattern the channel matches (Redis's glob), and hands the message to each subscriber's
// Receiver under the hub's read lock. A Receiver never blocks: the server's queues the
// message on the connection's bounded output and disconnects a subscriber whose output
// overflows, so that a slow subscriber never slows a publisher. Publishing where nobody
// listens costs an atomic load while nobody subscribes to anything, a map lookup under a
// read lock otherwise (plus a match per subscribed pattern), and allocates nothing: the
// server publishes its own events (denials) this way, on every one.
//
// A Subscriber is one receiver's subscriptions, changed by the receiver's own goroutine.
// Each change takes the hub's write lock and is confirmed to the receiver under it, so the
// receiver sees the confirmation of a subscription before any message it brings, and no
// message after the confirmation of an unsubscription, as a Redis client expects.
package pubsub
