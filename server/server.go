package server

import (
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/acl"
	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/conffile"
	"github.com/throttledhq/throttled/datatype"
	"github.com/throttledhq/throttled/global"
	"github.com/throttledhq/throttled/internal/sdnotify"
	"github.com/throttledhq/throttled/keyspace"
	"github.com/throttledhq/throttled/latency"
	"github.com/throttledhq/throttled/listen"
	"github.com/throttledhq/throttled/notify"
	"github.com/throttledhq/throttled/persistence"
	"github.com/throttledhq/throttled/pubsub"
	"github.com/throttledhq/throttled/ratelimit"
	"github.com/throttledhq/throttled/replication"
	"github.com/throttledhq/throttled/resp"
	"github.com/throttledhq/throttled/scripting/functions"
)

// Server answers Redis-protocol clients from a sharded keyspace.
type Server struct {
	cfg Config
	log *slog.Logger
	// logFile is logfile, open for appending; nil when the logs go to stderr or Config.Logger.
	logFile *os.File
	// pidFile is pidfile once written, "" before; removed by Close. Guarded by mu.
	pidFile string
	ks      *keyspace.Keyspace
	pubsub  *pubsub.Hub
	store   *persistence.Store // nil with appendonly no
	repl    *replication.Node
	runID   string // INFO's run_id: new at each start
	// clockBase is the zero of observer.mono; without a configured clock, now is clockBase's
	// wall time plus mono, so that a command's timing reading serves as its time (client.now).
	clockBase time.Time
	now       func() time.Time
	env       command.Env          // what every command's context reads (newCtx)
	events    notify.Notifier      // keyspace notifications, env.Events
	types     *datatype.Family     // the data types' commands
	commands  map[string]*cmdEntry // by lower-case name
	listpack  datatype.Limits      // hash-max-listpack-entries and the rest (typeparams.go)
	started   time.Time

	blocked blockedSet // the clients a blocking command parks (blocking.go)

	mu        sync.Mutex // guards ln, clients, closed
	ln        net.Listener
	clients   map[int64]*client
	password  atomic.Pointer[string] // requirepass; "" when none
	closed    bool
	shutdown  chan struct{} // closed once the server stops
	sweepDone chan struct{} // closed when the expiry loop has stopped
	stopped   chan struct{} // closed when Close has saved the state; closeErr is set then
	closeErr  error

	metricsHTTP []*http.Server // serving metrics-port (metrics.go); guarded by mu
	http        httpFront      // http-port (edgehttp.go); its api guarded by mu

	level      *slog.LevelVar         // the log level CONFIG SET changes
	levelName  atomic.Pointer[string] // loglevel as configured
	maxClients atomic.Int64
	// prefetchBatch is prefetch-batch-max-size (prefetch.go).
	prefetchBatch atomic.Int64
	replCfg       replConfig // the replication options CONFIG SET changes

	params       []*param          // the configuration parameters, in CONFIG REWRITE's order
	paramsByName map[string]*param // by every name, lower case
	paramNames   []paramNamed      // every name, sorted, for CONFIG GET
	rewriteMu    sync.Mutex        // one CONFIG REWRITE at a time

	txLocks txLocks  // EXEC's and scripts' stripes by key
	latency tracking // latency-tracking's histograms (latency.go)
	latmon  monitor  // the latency monitor's events (latencymon.go)
	// queryBufIdle is how long an event loop's client keeps its empty read buffer while it
	// sends nothing (trimQueryBuffers): 2 seconds, as Redis frees an idle client's querybuf.
	queryBufIdle time.Duration
	savePoints   atomic.Pointer[string] // CONFIG SET save's value, which changes nothing here (setSavePoints)

	scripts luaScripts // the script cache, interpreters and busy scripts (scripting.go)

	rl *ratelimit.Family // the rate-limit verbs, CHECK and the policies
	fn *functions.Family // FUNCTION and SCRIPT, the function libraries (scripting/functions)

	aclCmds    *acl.Family   // the ACL command, which changes the users
	acl        *acl.Registry // the ACL users (acl.go)
	aclCatalog *acl.Catalog  // the commands as the ACL rules name them

	mem memoryLimit // maxmemory (memory.go)

	conns        connLimits                   // timeout, tcp-keepalive, protected-mode (conns.go)
	outputLimits atomic.Pointer[outputLimits] // client-output-buffer-limit (outputlimit.go)

	tlsFiles *listen.TLSFiles // the certificates, nil without TLS (tls.go)
	tlsLn    net.Listener     // the tls-port listener; guarded by mu
	// tlsHandshakes counts TLS handshakes under way: they count against maxclients.
	tlsHandshakes atomic.Int64

	up *upstreamMode // nil unless the limits live in an upstream Redis (upstream.go)
	// global holds GLOBAL's allowances in upstream mode; nil otherwise (upstream.go).
	global *global.Registry

	loops    []*loop // event loops serving the clients, round robin; none on other systems
	nextLoop atomic.Uint64
	slots    []*statSlot   // the counters the commands' path writes, per event loop (counters.go)
	nextSlot atomic.Uint64 // the slot of the next client made with no connection

	nextID     atomic.Int64
	connected  atomic.Int64 // clients connected now
	stats      stats
	edge       edge        // Envoy's rate-limit service on grpc-port (envoy.go)
	obs        observer    // commandstats, SLOWLOG, MONITOR, TOPDENIED, deny events (observe.go)
	pause      clientPause // CLIENT PAUSE (clientctl.go)
	netGone    netTally    // what the clients gone read and wrote; guarded by mu
	netReset   netTally    // the figures at CONFIG RESETSTAT, subtracted; guarded by mu
	errStats   errorStats  // INFO errorstats (infofields.go)
	memStartup int64       // INFO used_memory_startup
	instants   instants    // INFO's instantaneous rates (netstats.go); the expiry loop's

	lastSave atomic.Int64 // Unix seconds: the start, LASTSAVE with appendonly no

	replMu        sync.Mutex  // orders REPLICAOF calls; guards replicaOfAddr
	replicaOfAddr string      // "host port" while a replica
	isReplica     atomic.Bool // refuse writes: READONLY
}

// stats are INFO's counters.
type stats struct {
	connections atomic.Int64 // connections accepted
	rejected    atomic.Int64 // connections refused by maxclients
	unexpected  atomic.Int64 // error replies of a handler's panic (unexpected_error_replies)
	// The counters every call writes are in the counter slots (counters.go).
}

// New builds a server from cfg; Serve or ListenAndServe runs it.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	level := new(slog.LevelVar)
	level.Set(logLevels[strings.ToLower(cfg.LogLevel)])
	log := cfg.Logger
	var logFile *os.File
	if log == nil {
		var err error
		if log, logFile, err = newLogger(cfg, level); err != nil {
			return nil, err
		}
	}
	logBanner(log, cfg)
	base := time.Now() // the zero of the server's monotonic time (observer.mono)
	now := cfg.Now
	if now == nil {
		now = monotonicClock(base)
	}
	s := &Server{
		cfg:       cfg,
		log:       log,
		logFile:   logFile,
		level:     level,
		ks:        keyspace.New(cfg.Shards),
		pubsub:    pubsub.New(),
		now:       now,
		clockBase: base,
		started:   time.Now(),
		clients:   make(map[int64]*client),
		shutdown:  make(chan struct{}),
		sweepDone: make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	s.env = command.Env{Keys: s.ks, Base: base.UnixNano()}
	if cfg.Now != nil {
		s.env.Clock = s.nowNano
	}
	s.env.Events = &s.events
	s.env.Events.Init(s.pubsub)
	events, _ := notify.Parse(cfg.NotifyKeyspaceEvents) // Validate checked it
	s.env.Events.Set(events)
	s.ks.SetNotifier(s.env.Events)
	s.ks.SetClock(s.nowNano())            // the access clock; expireLoop keeps it going
	s.ks.SetObjectify(datatype.Objectify) // big collections read back from the store or a primary
	s.txLocks.seed = maphash.MakeSeed()
	initLimits(&s.listpack, cfg)
	s.types = datatype.New(datatype.Config{Limits: &s.listpack, MaxBulk: cfg.ProtoMaxBulkLen,
		LRU: func() bool { return s.mem.max.Load() != 0 && keyspace.Policy(s.mem.policy.Load()).LRU() }})
	s.password.Store(&cfg.RequirePass)
	s.levelName.Store(&cfg.LogLevel)
	s.maxClients.Store(int64(cfg.MaxClients))
	s.prefetchBatch.Store(int64(cfg.PrefetchBatch))
	s.lastSave.Store(s.started.Unix())
	s.replCfg.init(cfg)
	s.http.init(cfg)
	s.global = s.newGlobal()
	s.rl = ratelimit.New(ratelimit.Config{Keys: s.ks, Now: s.nowNano, Log: log, ConfigFile: cfg.ConfigFile,
		SplitLine: conffile.SplitLine, Upstream: cfg.Upstream != "" || len(cfg.UpstreamCluster) > 0, Global: s.global,
		Decided: func(c *command.Ctx, limited bool) { s.decided(c.Conn.(*client), limited) },
		Denied: func(c *command.Ctx, key []byte, retryMs, now int64, block ratelimit.Block) {
			cc := c.Conn.(*client)
			s.denial(cc, cc.lastCmd.Load(), key, retryMs, now, block)
		},
		Refunded: func(c *command.Ctx, n int64) { s.refunded(c.Conn.(*client), n) },
		Unstored: func(c *command.Ctx) { c.Conn.(*client).stat().unstored.Add(1) },
		Slots:    statSlots(cfg),
		Readable: func(c *command.Ctx, key []byte) bool {
			p := c.Conn.(*client).user.Load().Perms()
			return p.All || p.CanKey(key, acl.Read)
		}})
	s.aclCmds = acl.NewFamily(acl.Config{File: cfg.ACLFile, Users: cfg.Users,
		UserOf:     func(c *command.Ctx) *acl.User { return c.Conn.(*client).user.Load() },
		CloseUsers: func(c *command.Ctx, gone []*acl.User) { s.closeClientsOf(c.Conn.(*client), gone) },
		ClearRequirePass: func() {
			empty := ""
			s.password.Store(&empty)
		}})
	s.scripts.init(cfg)
	s.fn = functions.New(functions.Config{Keys: s.ks, Now: s.nowNano, Log: log, Scripts: s.scripts.eng,
		Kill: s.scripts.kill, Running: s.scripts.running})
	s.commands = s.commandTable()
	s.initObserver()
	if err := s.rl.LoadPolicies(); err != nil {
		return nil, err
	}
	if err := s.openACL(); err != nil {
		return nil, err
	}
	if err := s.openEdge(); err != nil { // after openACL: gRPC requests authenticate against its users
		return nil, err
	}
	s.initLatency()
	s.latmon.threshold.Store(int64(s.cfg.LatencyMonitorThreshold))
	s.queryBufIdle = 2 * time.Second
	if err := s.openTLS(); err != nil {
		return nil, err
	}
	s.runID = newRunID()
	s.newReplication()
	if err := s.openUpstream(); err != nil {
		return nil, err
	}
	if err := s.openStore(); err != nil {
		s.closeUpstream()
		return nil, err
	}
	// after openStore: appendonly shows whether the store is open
	s.params = append(append(append(append(append(s.paramTable(), s.observeParams()...), s.tlsParams()...), s.collectionParams()...), s.scriptParams()...), s.latencyParams()...)
	s.params = append(s.params, s.latencyMonitorParams()...)
	s.params = append(s.params, s.httpParams()...)
	s.params = append(s.params, s.edgeParams()...)
	s.params = append(s.params, s.startupParams()...)
	s.paramsByName, s.paramNames = indexParams(s.params)
	if err := s.startReplication(); err != nil {
		s.closeStore()
		return nil, err
	}
	go s.expireLoop()
	s.initMemory()
	s.initConns()
	if err := s.startMetrics(); err != nil {
		s.Close()
		return nil, err
	}
	err := s.startHTTP()
	if err == nil {
		err = s.startEdge()
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	s.memStartup = startupMemory()
	return s, nil
}

// monotonicClock returns the wall time at start plus the monotonic time
// since: the server's time never steps back with the wall clock.
func monotonicClock(start time.Time) func() time.Time {
	wall := start.Round(0)
	return func() time.Time { return wall.Add(time.Since(start)) }
}

// newCtx is a new connection's context for its commands, RESP2 until HELLO 3.
func (s *Server) newCtx() command.Ctx { return command.Ctx{Env: &s.env, W: resp.Writer{Proto: 2}} }

// nowNano is the server's time in Unix nanoseconds.
func (s *Server) nowNano() int64 { return s.now().UnixNano() }

// ListenAndServe listens on the configured bind address and port, and on tls-port when
// set, and serves until Close. With tls-port, port 0 serves TLS only, as in Redis.
func (s *Server) ListenAndServe() error {
	tln, err := s.listenTLS()
	if err != nil {
		return err
	}
	if tln != nil && s.cfg.Port == 0 {
		return s.ServeTLS(tln)
	}
	ln, err := s.listenAll()
	if err != nil {
		if tln != nil {
			tln.Close()
		}
		return err
	}
	if err := s.writePidFile(); err != nil {
		ln.Close()
		if tln != nil {
			tln.Close()
		}
		return err
	}
	if tln != nil {
		go func() {
			if err := s.ServeTLS(tln); err != nil {
				s.log.Error("TLS listener failed", "err", err)
			}
		}()
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln until Close; it returns nil after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.ln = ln
	err := s.startLoops(s.cfg.IOThreads)
	s.mu.Unlock()
	if err != nil {
		ln.Close()
		return fmt.Errorf("server: event loops: %w", err)
	}
	s.log.Info("ready to accept connections", "addr", ln.Addr().String())
	s.notify(sdnotify.Ready, sdnotify.Status("Ready to accept connections on "+ln.Addr().String()))
	for {
		nc, err := s.accept(ln)
		if err != nil || nc == nil {
			return err
		}
		if s.connected.Load() >= s.maxClients.Load() {
			s.stats.rejected.Add(1)
			nc.Write([]byte("-ERR max number of clients reached\r\n"))
			nc.Close()
			continue
		}
		if !s.admitConn(nc) {
			continue
		}
		if s.attach(nc) {
			continue
		}
		c := s.newClient(nc)
		if c == nil {
			nc.Close()
			continue
		}
		go c.serve(nil)
	}
}

// accept waits for the next connection on ln and counts it, riding out temporary errors;
// nil and no error once the server is closed.
func (s *Server) accept(ln net.Listener) (net.Conn, error) {
	for {
		nc, err := ln.Accept()
		if err == nil {
			s.stats.connections.Add(1)
			return nc, nil
		}
		select {
		case <-s.shutdown:
			return nil, nil
		default:
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		return nil, fmt.Errorf("server: accept on %s: %w", ln.Addr(), err)
	}
}

// Addr is the address the server listens on, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Done is closed once the server has stopped, by Close or by SHUTDOWN.
func (s *Server) Done() <-chan struct{} { return s.shutdown }

// Close stops accepting, closes every connection, stops background work and saves the
// state. Every caller gets the result once that is done.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.stopped
		return s.closeErr
	}
	s.closed = true
	s.notify(sdnotify.Stopping, sdnotify.Status("Saving the state and stopping"))
	s.scripts.eng.Close() // a script in an endless loop must not hold the shutdown
	close(s.shutdown)
	if s.ln != nil {
		s.ln.Close()
	}
	s.closeTLSLocked()
	for _, c := range s.clients {
		c.hangup()
	}
	s.closeMetricsLocked()
	httpAPI := s.http.api
	s.mu.Unlock()
	if httpAPI != nil {
		httpAPI.Close() // waits for its decisions under way, which may need s.mu
	}
	s.closeEdge()
	s.repl.Close()
	s.stopLoops()
	s.closeUpstream()
	<-s.sweepDone
	if s.mem.done != nil {
		<-s.mem.done
	}
	s.closeErr = s.closeStore()
	s.removeFiles()
	s.log.Info("server stopped")
	if s.logFile != nil {
		s.logFile.Close()
	}
	close(s.stopped)
	return s.closeErr
}

// Active expiry's pace, after Redis's (expire.c). A slow cycle runs ten times a second and
// goes on with the round over the shards (keyspace.ExpireStep) until the round is complete or
// a quarter of the period has passed: a keyspace with few expired keys costs one sample per
// shard, one with many gets up to a quarter of a core. A cycle that runs out of time means
// keys expire faster than slow cycles free them: fast cycles of a millisecond follow, each a
// millisecond after the previous one ended, until one completes its round. Redis runs its
// fast cycles before it sleeps for events; a goroutine of its own is the same here, and the
// time is the wall clock's: a cycle the scheduler pauses gets less done, never more.
const (
	expirePeriod   = 100 * time.Millisecond
	slowExpireTime = expirePeriod / 4
	fastExpireTime = time.Millisecond
	// expireSlice is the keys ExpireStep examines between two looks at the clock: about
	// 20 to 100 µs.
	expireSlice = 1000
)

// expireLoop frees expired keys that nobody touches, in slow cycles ten times a second and
// fast cycles in between while it falls behind.
func (s *Server) expireLoop() {
	defer close(s.sweepDone)
	slow := time.NewTicker(expirePeriod)
	defer slow.Stop()
	fast := time.NewTimer(fastExpireTime)
	fast.Stop()
	defer fast.Stop()
	var fastC <-chan time.Time // nil when no fast cycle is due
	ticks := 0
	for {
		budget := slowExpireTime
		select {
		case <-s.shutdown:
			return
		case <-slow.C:
			s.ks.SetClock(s.nowNano()) // OBJECT IDLETIME's and the LRU policies' second
			s.sampleInstants()
			if ticks++; ticks%10 == 0 {
				s.trimQueryBuffers()
			}
		case <-fastC:
			budget = fastExpireTime
		}
		if s.pause.mode.Load() != pauseNone {
			continue // no key expires while clients are paused, as in Redis
		}
		capped := s.expireFor(budget)
		if capped && budget == slowExpireTime {
			s.instants.expireCapped.Add(1)
		}
		if capped {
			fast.Reset(fastExpireTime)
			fastC = fast.C
		} else {
			fast.Stop()
			fastC = nil
		}
	}
}

// expireFor runs active expiry in slices until the round over the shards is complete or
// budget has passed, and reports whether it ran out of time.
func (s *Server) expireFor(budget time.Duration) bool {
	start := time.Now()
	for {
		if _, done := s.ks.ExpireStep(s.nowNano(), expireSlice); done {
			s.latencySpike(latency.EventExpireCycle, time.Since(start))
			return false
		}
		if d := time.Since(start); d >= budget {
			s.latencySpike(latency.EventExpireCycle, d)
			return true
		}
	}
}

// dispatch executes one request on c and writes its reply; inside MULTI it queues the
// request instead.
func (s *Server) dispatch(c *client, args [][]byte) {
	cmd := s.lookup(c, args[0])
	if cmd == nil {
		s.reject(c, nil, command.UnknownCommand(args))
		return
	}
	if len(cmd.subcommands) > 0 && len(args) > 1 {
		if sub := cmd.subcommand(args[1]); sub != nil {
			cmd = sub
		}
	}
	if !c.authed && s.passwordSet() && !cmd.has(flagNoAuth) {
		c.counts(cmd).rejected.Add(1)
		s.reject(c, cmd, errNoAuth)
		return
	}
	if !cmd.arityOK(len(args)) {
		c.counts(cmd).rejected.Add(1)
		s.reject(c, cmd, fmt.Errorf("wrong number of arguments for '%s' command", cmd.fullName()))
		return
	}
	if cmd.firstKey > 0 {
		if err := reservedKey(cmd, args); err != nil {
			s.reject(c, cmd, err)
			return
		}
	}
	if p := c.user.Load().Perms(); !p.All {
		if err := s.checkACL(c, p, cmd, args); err != nil {
			s.reject(c, cmd, err)
			return
		}
	}
	if s.scripts.nbusy.Load() > 0 && !cmd.has(flagAllowBusy) {
		s.reject(c, cmd, s.scripts.busyError()) // a script has run past busy-reply-threshold (scripting.go)
		return
	}
	if mode := s.pause.mode.Load(); mode != pauseNone && c.pausedFor(mode, cmd, args) {
		c.letGo() // nothing waits holding a shard (batch.go)
		if c.onLoop() {
			c.handoff = true // it waits on a goroutine of its own, not holding up the loop
			return
		}
		if !s.waitUnpaused(c, cmd, args) {
			c.closing = true
			return
		}
	}
	c.NoRoom = false
	if (cmd.bits|c.txBits(cmd))&flagDenyOOM != 0 && s.mem.full.Load() { // Redis refuses MULTI's requests, and EXEC of writes
		c.letGo() // evicting locks shards
		if err := s.makeRoom(); err != nil {
			if cmd.bits&flagRatelimit == 0 {
				s.reject(c, cmd, err)
				return
			}
			c.NoRoom = true // a decision is answered all the same (memory.go)
		}
	}
	if c.sub != nil && c.W.Proto == 2 && !cmd.whileSubscribed && c.subscribed() {
		c.counts(cmd).rejected.Add(1)
		s.replyError(c, fmt.Errorf("Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", cmd.fullName()))
		return
	}
	if c.tx != nil && !cmd.has(flagNoQueue) {
		c.lastCmd.Store(cmd)
		if cmd.bits&flagWrite != 0 {
			if err := s.checkWrite(c, cmd); err != nil {
				c.counts(cmd).rejected.Add(1)
				s.reject(c, cmd, err) // READONLY, NOREPLICAS: at queueing, as Redis
				return
			}
		}
		s.queue(c, cmd, args)
		return
	}
	if cmd.detach && c.out == nil {
		c.letGo()
		if c.nc == nil {
			c.handoff = true // an event loop serves c: it hands c over, and args run there
			return
		}
		c.startOutput()
	}
	c.lastCmd.Store(cmd)
	if cmd.gated {
		slot, own, err := s.enterGate(c, cmd, args)
		if err != nil {
			s.reject(c, cmd, err)
			return
		}
		s.call(c, cmd, args)
		s.leaveGate(slot, own)
		s.parkIfBlocked(c)
		return
	}
	s.call(c, cmd, args)
	s.parkIfBlocked(c)
}

// reject refuses a request (cmd, nil when unknown) before it runs. Inside MULTI that dooms the
// transaction, as in Redis: EXEC will reply EXECABORT; EXEC refused itself (BUSY, OOM, ACL)
// discards it, with the reason (Redis's execCommandAbort).
func (s *Server) reject(c *client, cmd *cmdEntry, err error) {
	if c.tx != nil && cmd != nil && cmd.name == "exec" {
		c.endMulti()
		c.unwatchAll()
		err = command.ExecAbort(err)
	} else if c.tx != nil {
		c.tx.failed = true
	}
	s.replyError(c, err)
}

// call runs cmd on c and writes its reply; a handler's panic becomes an error reply and is
// logged, and the connection goes on.
func (s *Server) call(c *client, cmd *cmdEntry, args [][]byte) { s.callFrom(c, cmd, args, c.Tick) }

// callFrom is call, the command timed from start (on client.tick's clock).
func (s *Server) callFrom(c *client, cmd *cmdEntry, args [][]byte, start int64) {
	if cmd.bits&flagWrite != 0 {
		if err := s.checkWrite(c, cmd); err != nil {
			c.counts(cmd).rejected.Add(1)
			s.replyError(c, err)
			return
		}
		if s.syncWrites() {
			c.mustSync = true // its replies wait for the store (see syncWrites)
		}
	}
	c.stat().commands.Add(1)
	c.Reading = cmd.bits&flagReadonly != 0
	mark := len(c.W.B)
	defer func() {
		if r := recover(); r != nil {
			cc := c.counts(cmd)
			cc.calls.Add(1)
			cc.failed.Add(1)
			s.log.Error("panic in command", "command", cmd.fullName(), "panic", r, "stack", string(debug.Stack()))
			s.stats.unexpected.Add(1)
			c.W.B = c.W.B[:mark] // drop a half-written reply
			s.replyError(c, fmt.Errorf("internal error in '%s': %v", cmd.fullName(), r))
		}
	}()
	if err := cmd.handler(c, args); err != nil {
		c.counts(cmd).failed.Add(1)
		s.replyError(c, err)
	}
	s.timed(c, cmd, args, start)
}

func (s *Server) replyError(c *client, err error) {
	c.stat().errors.Add(1)
	text := command.ErrorText(err)
	s.errStats.count(text)
	c.W.ErrorText(text)
}

// passwordSet reports whether connections must authenticate: the default user has a
// password (requirepass) or is off.
func (s *Server) passwordSet() bool { return !s.acl.DefaultOpen() }
