package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/throttledhq/throttled/keyspace"
)

// Config says which upstream to use and how.
type Config struct {
	// URL is one Redis: redis://[user:password@]host:port[/db], or rediss:// for TLS.
	URL string
	// Cluster lists nodes of a Redis Cluster instead (host:port); the client finds the rest
	// and follows slots through MOVED and ASK.
	Cluster []string
	// Timeout bounds a round trip; one that takes longer counts as a failure. Default 50ms.
	Timeout time.Duration
	// Conns is how many connections (and batches in flight) serve the calls; default 2.
	// Calls that come while every batch is out wait and go together in the next, so that
	// batches grow with the load: with 4, P=1 on loopback made a fifth fewer decisions (more,
	// smaller round trips), and P=16 no more.
	Conns int
	// Now, when set, is the clock decisions use instead of the upstream's TIME (tests).
	Now func() int64
	// Logger receives the breaker's changes; nil logs nothing.
	Logger *slog.Logger
}

// Validate reports the first bad field, naming its option.
func (c Config) Validate() error {
	switch {
	case c.URL == "" && len(c.Cluster) == 0:
		return errors.New("upstream: neither a URL nor cluster nodes")
	case c.URL != "" && len(c.Cluster) > 0:
		return errors.New("upstream and upstream-cluster: give one of them")
	case c.Timeout < 0:
		return fmt.Errorf("upstream-timeout: %v must not be negative", c.Timeout)
	}
	if c.URL != "" {
		if _, err := redis.ParseURL(c.URL); err != nil {
			return fmt.Errorf("upstream: %q: %w", redactURL(c.URL), err)
		}
	}
	for _, n := range c.Cluster {
		if !strings.Contains(n, ":") {
			return fmt.Errorf("upstream-cluster: %q is not host:port", n)
		}
	}
	return nil
}

// redactURL hides a password in u for messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

// Outcome says what a call's evaluation needs from the upstream.
type Outcome uint8

const (
	// Settled: nothing changes, and the decision holds for any state other instances can
	// make of Cur, since they only consume (a denial of a key that only refills with time).
	// Answered at once when Cur was seen on the upstream.
	Settled Outcome = iota
	// Verify: nothing changes, but the decision holds only if Cur is the current state.
	Verify
	// Write: the keys whose State.Write is set must hold State.Next.
	Write
)

// State is one key of a call, as Eval sees and changes it.
type State struct {
	// Cur is the key's state (Kind None when missing). Its Bytes are valid during Eval only.
	Cur keyspace.Value
	// Next is what the key holds after the call when Write is set; Kind None deletes it.
	// Its Bytes must stay unchanged until the call's next Eval or Done.
	Next  keyspace.Value
	Write bool
}

// Call is one rate-limit request decided through the upstream.
type Call interface {
	// Keys returns the distinct keys the call reads and may write; they stay unchanged
	// until Done.
	Keys() [][]byte
	// States returns one State per key, which Eval reads and fills.
	States() []State
	// Eval evaluates the call at now on States()[i].Cur, fills Next and Write, keeps its
	// reply, and says what the upstream must do for the reply to hold. It may be called
	// again with newer states until Done.
	Eval(now int64) Outcome
	// Done ends the call: err nil means the last Eval stands; ErrUnavailable means the
	// upstream could not decide it (the caller decides locally); any other error is the
	// reply. Done runs on the dispatcher's goroutine and must not block.
	Done(err error)
}

var (
	// ErrUnavailable is what Done gets when the upstream failed, timed out or the breaker
	// is open: the call must be decided locally.
	ErrUnavailable = errors.New("upstream: unavailable")
	// ErrForeignValue is a key on the upstream holding a value throttled did not write.
	ErrForeignValue = errors.New("the upstream key holds a value throttled did not write (delete it there to use the key)")
	// ErrCrossSlot is a call over keys of different hash slots in a Cluster.
	ErrCrossSlot = errors.New("keys of one call must share a hash slot in upstream-cluster mode")
)

// Breaker states.
const (
	closed int32 = iota
	open
	halfOpen
)

// failuresToOpen is how many round trips in a row must fail before the breaker opens: a
// killed upstream fails them at once, a hung one within one timeout (they are in flight
// together).
const failuresToOpen = 3

// probeEvery is how often an open breaker's prober tries the upstream.
const probeEvery = 100 * time.Millisecond

// Client decides calls through one upstream. All methods are safe for concurrent use.
type Client struct {
	cfg     Config
	log     *slog.Logger
	rdb     redis.UniversalClient
	cluster bool
	clock   clock
	cache   *keyspace.Keyspace // the state last seen of each key, see cache.go

	mu    sync.Mutex // guards queue
	queue []Call
	wake  chan struct{} // a call was queued (buffered 1)

	work    chan *batch // to the connections' goroutines
	results chan *batch // back to the dispatcher
	done    chan struct{}
	wg      sync.WaitGroup

	breaker  atomic.Int32
	linkUp   atomic.Bool
	scriptMu sync.Mutex // one SCRIPT LOAD at a time
	stats    stats
}

// stats are INFO upstream's counters.
type stats struct {
	roundTrips atomic.Int64 // pipelines sent
	commands   atomic.Int64 // CAS and checks sent
	conflicts  atomic.Int64 // CAS that found another state
	local      atomic.Int64 // calls settled from the cache without a round trip
	failures   atomic.Int64 // round trips that failed or timed out
	unavail    atomic.Int64 // calls handed back as unavailable
	opened     atomic.Int64 // times the breaker opened
	rttSum     atomic.Int64 // ns, over roundTrips
	rttLast    atomic.Int64 // ns
}

// Stats is a snapshot of the client's counters, for INFO upstream.
type Stats struct {
	Mode        string // "redis" or "cluster"
	Link        string // "up" or "down"
	Breaker     string // "closed", "open" or "half-open"
	RoundTrips  int64
	Commands    int64
	Conflicts   int64
	Local       int64
	Failures    int64
	Unavailable int64
	Opened      int64
	LastRTT     time.Duration
	AvgRTT      time.Duration
	ClockOffset time.Duration // the upstream's clock minus the local one
	CachedKeys  int
}

// New connects to the upstream described by cfg. An upstream that does not answer yet is not
// an error: the breaker starts open and the prober takes the upstream once it answers.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 50 * time.Millisecond
	}
	if cfg.Conns <= 0 {
		cfg.Conns = 2
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	u := &Client{
		cfg:     cfg,
		log:     log,
		cache:   keyspace.New(64),
		wake:    make(chan struct{}, 1),
		work:    make(chan *batch),
		results: make(chan *batch, cfg.Conns),
		done:    make(chan struct{}),
	}
	u.clock.init(cfg.Now)
	if cfg.URL != "" {
		opt, err := redis.ParseURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("upstream: %w", err)
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = cfg.Timeout, cfg.Timeout, cfg.Timeout
		opt.PoolSize, opt.MaxRetries, opt.Protocol, opt.DisableIndentity = cfg.Conns+2, -1, 2, true
		u.rdb = redis.NewClient(opt)
	} else {
		u.cluster = true
		u.rdb = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:       cfg.Cluster,
			DialTimeout: cfg.Timeout, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout,
			PoolSize: cfg.Conns + 2, MaxRetries: -1, MaxRedirects: 8, MinRetryBackoff: -1,
			Protocol: 2, DisableIndentity: true,
		})
	}
	u.breaker.Store(open)
	if u.probe() {
		u.breaker.Store(closed)
	} else {
		u.stats.opened.Add(1)
		log.Warn("upstream: not answering at start; deciding locally until it does", "upstream", u.name())
	}
	u.wg.Add(2 + cfg.Conns)
	go u.dispatch()
	go u.monitor()
	for range cfg.Conns {
		go u.roundTrips()
	}
	return u, nil
}

// name is the upstream as logs show it, without a password.
func (u *Client) name() string {
	if u.cluster {
		return strings.Join(u.cfg.Cluster, ",")
	}
	return redactURL(u.cfg.URL)
}

// Close stops the client; calls still queued are handed back as unavailable.
func (u *Client) Close() error {
	close(u.done)
	u.wg.Wait()
	return u.rdb.Close()
}

// Now is the shared clock in Unix ns: the upstream's time, never going back.
func (u *Client) Now() int64 { return u.clock.now() }

// Open reports whether the breaker is open: calls are then decided locally at once.
func (u *Client) Open() bool { return u.breaker.Load() == open }

// Submit queues calls for the dispatcher; each one's Done is called once it is decided.
// Calls submitted together go out together when a connection is free: a caller with
// several at hand (an event loop's round of clients) submits them at once.
func (u *Client) Submit(calls ...Call) {
	u.mu.Lock()
	u.queue = append(u.queue, calls...)
	u.mu.Unlock()
	select {
	case u.wake <- struct{}{}:
	default:
	}
}

// Settle evaluates a one-key call on the state last seen for its key and reports whether
// that decides it without the upstream (see Settled). The call's reply is then its last
// Eval's; otherwise Submit it. local is the caller's reading of the local clock (Unix ns).
func (u *Client) Settle(c Call, local int64) bool {
	keys := c.Keys()
	if len(keys) != 1 {
		return false
	}
	now := u.clock.at(local)
	sh := u.cache.Shard(keys[0])
	sh.Lock()
	e, ok := getCached(sh, keys[0], now)
	if !ok {
		sh.Unlock()
		return false
	}
	st := c.States()
	st[0] = State{Cur: e.state(now)}
	var held *[]byte
	if len(st[0].Cur.Bytes) > 0 { // the entry's bytes outlive the lock in a copy
		held = settleBufs.Get().(*[]byte)
		*held = append((*held)[:0], st[0].Cur.Bytes...)
		st[0].Cur.Bytes = *held
	}
	sh.Unlock()
	out := c.Eval(now)
	if held != nil {
		settleBufs.Put(held)
	}
	if out != Settled {
		return false
	}
	u.stats.local.Add(1)
	return true
}

// settleBufs hold the state Settle evaluates, out of the cache's lock.
var settleBufs = sync.Pool{New: func() any { return new([]byte) }}

// CheckSlots returns an error naming two keys of different hash slots when the upstream is
// a Cluster; nil otherwise.
func (u *Client) CheckSlots(keys [][]byte) error {
	if !u.cluster || len(keys) < 2 {
		return nil
	}
	first := Slot(keys[0])
	for _, k := range keys[1:] {
		if s := Slot(k); s != first {
			return fmt.Errorf("%w: '%s' is in slot %d and '%s' in slot %d; give them a common {hash tag}",
				ErrCrossSlot, printable(keys[0]), first, printable(k), s)
		}
	}
	return nil
}

// printable is at most 64 bytes of a key, for an error line.
func printable(k []byte) string {
	if len(k) > 64 {
		k = k[:64]
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, string(k))
}

// Stats returns the counters.
func (u *Client) Stats() Stats {
	st := Stats{Mode: "redis", Link: "down", Breaker: "closed",
		RoundTrips: u.stats.roundTrips.Load(), Commands: u.stats.commands.Load(),
		Conflicts: u.stats.conflicts.Load(), Local: u.stats.local.Load(), Failures: u.stats.failures.Load(),
		Unavailable: u.stats.unavail.Load(), Opened: u.stats.opened.Load(),
		LastRTT: time.Duration(u.stats.rttLast.Load()), ClockOffset: time.Duration(u.clock.offset.Load()),
		CachedKeys: u.cache.Len()}
	if u.cluster {
		st.Mode = "cluster"
	}
	if u.linkUp.Load() {
		st.Link = "up"
	}
	switch u.breaker.Load() {
	case open:
		st.Breaker = "open"
	case halfOpen:
		st.Breaker = "half-open"
	}
	if st.RoundTrips > 0 {
		st.AvgRTT = time.Duration(u.stats.rttSum.Load() / st.RoundTrips)
	}
	return st
}

// monitor refreshes the clock every second, sweeps idle keys out of the cache, and while
// the breaker is open probes the upstream every probeEvery.
func (u *Client) monitor() {
	defer u.wg.Done()
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	lastClock := time.Now()
	for {
		select {
		case <-u.done:
			return
		case <-tick.C:
		}
		for {
			if _, done := u.cache.ExpireStep(u.clock.now(), 1000); done {
				break
			}
		}
		if u.breaker.Load() == open {
			if u.probe() && u.breaker.CompareAndSwap(open, halfOpen) {
				u.log.Info("upstream: answering again; trying it (breaker half-open)", "upstream", u.name())
			}
			continue
		}
		if time.Since(lastClock) >= time.Second {
			lastClock = time.Now()
			u.refreshClock()
		}
	}
}

// probe checks that the upstream answers, loads the script and takes its clock.
func (u *Client) probe() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 4*u.cfg.Timeout)
	defer cancel()
	if err := u.loadScript(ctx); err != nil {
		u.linkUp.Store(false)
		return false
	}
	u.linkUp.Store(true)
	u.refreshClock()
	return true
}

// refreshClock measures the upstream's clock against the local one.
func (u *Client) refreshClock() {
	ctx, cancel := context.WithTimeout(context.Background(), u.cfg.Timeout)
	defer cancel()
	t0 := u.clock.local()
	t, err := u.rdb.Time(ctx).Result()
	t1 := u.clock.local()
	if err == nil {
		u.clock.set(t.UnixNano() - (t0+t1)/2)
	}
}

// loadScript loads the CAS script (on every master of a Cluster).
func (u *Client) loadScript(ctx context.Context) error {
	u.scriptMu.Lock()
	defer u.scriptMu.Unlock()
	return u.rdb.ScriptLoad(ctx, casScript).Err()
}

// failed records a round trip that failed; reason says why, for the log.
func (u *Client) failed(streak int, reason error) {
	u.stats.failures.Add(1)
	u.linkUp.Store(false)
	if u.breaker.Load() == halfOpen || streak >= failuresToOpen {
		if u.breaker.Swap(open) != open {
			u.stats.opened.Add(1)
			u.log.Warn("upstream: failing; deciding locally with the fallback share (breaker open)",
				"upstream", u.name(), "err", reason)
		}
	}
}

// succeeded records a round trip that went through.
func (u *Client) succeeded(rtt time.Duration) {
	u.linkUp.Store(true)
	u.stats.rttLast.Store(int64(rtt))
	u.stats.rttSum.Add(int64(rtt))
	if u.breaker.CompareAndSwap(halfOpen, closed) {
		u.log.Info("upstream: back; deciding through it again (breaker closed)", "upstream", u.name())
	}
}
