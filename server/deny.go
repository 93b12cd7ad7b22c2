package server

import (
	"bytes"
	"strconv"
	"sync/atomic"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/ratelimit"
)

// Each denial is counted in the most-denied keys (TOPDENIED) and published on
// __throttled__:denied and __throttled__:denied:<verb> as "verb key retry_after_ms", with
// " blocked" after it when the key is in its penalty box (BLOCK), at most
// denied-events-per-second a second; nothing is built when nobody listens.

// deniedChannel is the channel of every denial; a verb's denials also go to
// deniedChannel + ":" + verb.
const deniedChannel = "__throttled__:denied"

// denyEvents counts the deny events and caps their rate.
type denyEvents struct {
	perSecond atomic.Int64 // denied-events-per-second; 0: none are published
	second    atomic.Int64 // the Unix second being counted
	inSecond  atomic.Int64 // events published or dropped in it
	published atomic.Int64 // events published since start or CONFIG RESETSTAT
	dropped   atomic.Int64 // events over the cap, not published
}

// denial records that cmd, run by c, denied key at now (ns), whose caller may retry after
// retryMs (-1: never); block says whether the key is in its penalty box (BLOCK), which INFO
// counts.
func (s *Server) denial(c *client, cmd *cmdEntry, key []byte, retryMs, now int64, block ratelimit.Block) {
	switch block {
	case ratelimit.BlockStarted:
		c.stat().blocks.Add(1)
	case ratelimit.BlockHeld:
		c.stat().blocked.Add(1)
	}
	c.recordDenied(key, now)
	hub := s.pubsub
	if !hub.Listened(s.obs.deniedAll) && !hub.Listened(cmd.deniedChannel) {
		return
	}
	ev := &s.obs.events
	sec := now / 1e9
	if old := ev.second.Load(); old != sec && ev.second.CompareAndSwap(old, sec) {
		ev.inSecond.Store(0)
	}
	if ev.inSecond.Add(1) > ev.perSecond.Load() {
		ev.dropped.Add(1)
		return
	}
	ev.published.Add(1)
	verb := cmd.name
	msg := make([]byte, 0, len(verb)+len(key)+32)
	msg = append(msg, verb...)
	msg = append(msg, ' ')
	msg = append(msg, key...)
	msg = append(msg, ' ')
	msg = strconv.AppendInt(msg, retryMs, 10)
	if block != ratelimit.BlockNone {
		msg = append(msg, blockedWord...)
	}
	hub.Publish(s.obs.deniedAll, msg)
	hub.Publish(cmd.deniedChannel, msg)
}

// seesEvent reports whether c's user may see message, published on channel: a deny event
// names a key, which, as in TOPDENIED, a user sees only when its patterns let it read the
// key (a channel pattern lets it subscribe; the key is another tenant's business). A
// message of any other channel, or one that is no deny event, is not judged.
func (c *client) seesEvent(channel, message []byte) bool {
	if !bytes.HasPrefix(channel, deniedPrefix) || len(channel) > len(deniedPrefix) && channel[len(deniedPrefix)] != ':' {
		return true
	}
	p := c.user.Load().Perms()
	if p.All {
		return true
	}
	// "verb key retry_after_ms [blocked]": the key is what lies between the first blank and
	// the last, once the word that follows the number is cut.
	message = bytes.TrimSuffix(message, blockedWord)
	i, j := bytes.IndexByte(message, ' '), bytes.LastIndexByte(message, ' ')
	return i < 0 || j <= i || p.CanKey(message[i+1:j], acl.Read)
}

// blockedWord ends the deny event of a key in its penalty box. Its key cannot end so: the
// event's last word but one is always a number.
var blockedWord = []byte(" blocked")

// deniedPrefix is deniedChannel's bytes.
var deniedPrefix = []byte(deniedChannel)

func (s *Server) infoDenyEvents() [][2]string {
	ev := &s.obs.events
	return [][2]string{
		{"denied_events_published", itoa(ev.published.Load())},
		{"denied_events_dropped", itoa(ev.dropped.Load())},
	}
}
