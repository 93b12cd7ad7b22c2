package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/replication"
)

func replicationCommands() []*cmdEntry {
	replicaOf := func(name, since string) *cmdEntry {
		return &cmdEntry{name: name, arity: 3, flags: "admin noscript stale no-async-loading", group: "server", since: since,
			summary: "Makes the server a replica of another instance, or promotes it to a primary.", syntax: "host port", handler: cmdReplicaOf}
	}
	return []*cmdEntry{
		replicaOf("replicaof", "5.0.0"),
		replicaOf("slaveof", "1.0.0"),
		{name: "role", arity: 1, flags: "noscript loading stale fast", group: "server", since: "2.8.12", summary: "Returns the replication role.", handler: cmdRole},
		{name: "wait", arity: 3, flags: "blocking no-multi", group: "generic", since: "3.0.0", detach: true,
			summary: "Blocks until the changes of the connection are acknowledged by a number of replicas, or the timeout passes.", syntax: "numreplicas timeout", handler: cmdWait},
		{name: "psync", arity: -3, flags: "admin noscript no-async-loading no-multi", group: "server", since: "2.8.0", detach: true,
			summary: "An internal command used in replication.", syntax: "replicationid offset", handler: cmdPSync},
		{name: "sync", arity: 1, flags: "admin noscript no-async-loading no-multi", group: "server", since: "1.0.0", detach: true,
			summary: "An internal command used in replication.", handler: cmdPSync},
		{name: "replconf", arity: -1, flags: "admin noscript loading stale allow-busy", group: "server", since: "3.0.0",
			summary: "An internal command for configuring the replication stream.", syntax: "option value [option value ...]", handler: cmdReplconf},
	}
}

// newReplication makes the server's replication node, before the store opens: the store
// keeps the node's checkpoint with the keyspace.
func (s *Server) newReplication() {
	s.repl = replication.New(s.ks, replication.Options{
		Logger:      s.log,
		BacklogSize: func() int64 { return max(s.replCfg.backlogSize.Load(), 16<<10) },
		Flush:       s.flushLocal,
		Now:         s.nowNano,
		Hello:       s.replicaHello,
		Dial:        s.dialPrimary,
	})
}

// startReplication takes up the history the store kept, and with replicaof set starts
// following the primary.
func (s *Server) startReplication() error {
	host, port := "", 0
	if s.cfg.ReplicaOf != "" {
		var err error
		if host, port, err = parseHostPort(strings.Fields(s.cfg.ReplicaOf)); err != nil {
			return errors.New("replicaof: " + err.Error())
		}
	}
	if s.store != nil {
		s.repl.Restore(s.store.Checkpoint(), host != "")
	}
	if host != "" {
		s.setReplicaOf(host, port)
	}
	return nil
}

// replicaHello is what this server tells a primary about itself.
func (s *Server) replicaHello() replication.Hello {
	r := &s.replCfg
	port := int(r.announcePort.Load())
	if port == 0 {
		port = s.cfg.Port
		if a, ok := s.Addr().(*net.TCPAddr); ok {
			port = a.Port
		}
	}
	return replication.Hello{Port: port, AnnounceIP: *r.announceIP.Load(), User: *r.masterUser.Load(), Pass: *r.masterAuth.Load()}
}

func parseHostPort(f []string) (string, int, error) {
	if len(f) != 2 {
		return "", 0, errors.New("takes a host and a port")
	}
	port, err := strconv.Atoi(f[1])
	if err != nil || port < 1 || port > 65535 {
		return "", 0, errors.New("Invalid master port")
	}
	return f[0], port, nil
}

// setReplicaOf makes the server a replica of host:port, or a primary with host "".
func (s *Server) setReplicaOf(host string, port int) {
	s.replMu.Lock()
	defer s.replMu.Unlock()
	if host == "" {
		s.replicaOfAddr = ""
	} else {
		s.replicaOfAddr = host + " " + strconv.Itoa(port)
	}
	s.isReplica.Store(host != "")
	s.repl.ReplicaOf(host, port)
}

// replicaOf is "host port" of the primary this server replicates, "" for a primary: what
// CONFIG REWRITE writes as replicaof.
func (s *Server) replicaOf() string {
	s.replMu.Lock()
	defer s.replMu.Unlock()
	return s.replicaOfAddr
}

// dropMasterLink closes a replica's link to its primary (CLIENT KILL TYPE master) and
// reports how many links it closed; the replica reconnects.
func (s *Server) dropMasterLink() int {
	if s.repl.DropLink() {
		return 1
	}
	return 0
}

// REPLICAOF host port | NO ONE
func cmdReplicaOf(c *client, args [][]byte) error {
	if c.s.up != nil {
		return errors.New("REPLICAOF is not available in upstream mode: the upstream holds the limits' state")
	}
	if strings.EqualFold(string(args[1]), "no") && strings.EqualFold(string(args[2]), "one") {
		if c.s.isReplica.Load() {
			c.s.setReplicaOf("", 0)
			c.s.log.Info("REPLICAOF NO ONE: now a primary", "client", c.raddr)
		}
		c.W.OK()
		return nil
	}
	host, port, err := parseHostPort([]string{string(args[1]), string(args[2])})
	if err != nil {
		return err
	}
	if c.s.replicaOf() == host+" "+strconv.Itoa(port) {
		c.W.Simple("OK Already connected to specified master")
		return nil
	}
	c.s.setReplicaOf(host, port)
	c.s.log.Info("REPLICAOF: now a replica", "host", host, "port", port, "client", c.raddr)
	c.W.OK()
	return nil
}

// ROLE
func cmdRole(c *client, args [][]byte) error {
	in := c.s.repl.Info()
	if in.Primary {
		c.W.Array(3)
		c.W.BulkString("master")
		c.W.Int(in.Offset)
		c.W.Array(len(in.Replicas))
		for _, r := range in.Replicas {
			c.W.Array(3)
			c.W.BulkString(r.Addr)
			c.W.BulkString(strconv.Itoa(r.Port))
			c.W.BulkString(itoa(r.Offset))
		}
		return nil
	}
	c.W.Array(5)
	c.W.BulkString("slave")
	c.W.BulkString(in.Host)
	c.W.Int(int64(in.Port))
	c.W.BulkString(linkState(in))
	c.W.Int(in.Offset)
	return nil
}

// linkState is ROLE's state of a replica's link: connect, sync or connected.
func linkState(in replication.Info) string {
	switch {
	case in.LinkUp:
		return "connected"
	case in.Syncing:
		return "sync"
	}
	return "connect"
}

// WAIT numreplicas timeout
func cmdWait(c *client, args [][]byte) error {
	num, err1 := strconv.ParseInt(string(args[1]), 10, 64)
	ms, err2 := strconv.ParseInt(string(args[2]), 10, 64)
	if err1 != nil || err2 != nil {
		return command.ErrNotInteger
	}
	if ms < 0 {
		return errors.New("timeout is negative")
	}
	k, err := c.s.repl.Wait(int(min(num, 1<<30)), time.Duration(ms)*time.Millisecond)
	if err != nil {
		return err
	}
	c.W.Int(int64(k))
	return nil
}

// PSYNC replicationid offset, SYNC: the connection becomes a replica's link, served by
// the replication node until it ends.
func cmdPSync(c *client, args [][]byte) error {
	if c.out == nil {
		return errors.New("PSYNC needs a connection of its own") // run hands it over first (detach)
	}
	if c.follower != nil {
		return errors.New("Replica already streaming")
	}
	replid, offset := "?", int64(-1)
	if len(args) == 3 {
		replid = string(args[1])
		off, err := strconv.ParseInt(string(args[2]), 10, 64)
		if err != nil {
			return command.ErrNotInteger
		}
		offset = off
	} else if len(args) != 1 {
		return command.ErrSyntax
	}
	// The replies so far go out first; from here the follower alone writes to the socket,
	// and a replica's link expects no reply (REPLCONF ACK has none).
	if !c.flush() {
		return nil
	}
	c.out.stop()
	addr := c.replIP
	if addr == "" {
		addr, _, _ = net.SplitHostPort(c.raddr)
	}
	c.kind.Store(int32(kindReplica))
	c.follower = c.s.repl.Attach(c.nc, c.hangup, replid, offset, addr, c.replPort)
	return nil
}

// REPLCONF option value ...: a replica's handshake and acknowledgements.
func cmdReplconf(c *client, args [][]byte) error {
	if len(args)%2 != 1 {
		return command.ErrSyntax
	}
	for i := 1; i < len(args); i += 2 {
		v := string(args[i+1])
		switch strings.ToLower(string(args[i])) {
		case "listening-port":
			p, err := strconv.Atoi(v)
			if err != nil || p < 0 || p > 65535 {
				return errors.New("Invalid listening-port")
			}
			c.replPort = p
		case "ip-address":
			c.replIP = v
		case "ack":
			off, err := strconv.ParseInt(v, 10, 64)
			if err == nil && c.follower != nil {
				c.follower.Ack(off)
			}
			return nil // no reply, as Redis
		case "getack":
			return nil
		case "capa", "rdb-only", "rdb-filter-only":
		default:
			return errors.New("Unrecognized REPLCONF option: " + command.Truncate(args[i], 128))
		}
	}
	c.W.OK()
	return nil
}

// minReplicasMaxLag is min-replicas-max-lag as a duration.
func (s *Server) minReplicasMaxLag() time.Duration {
	return time.Duration(s.replCfg.minMaxLag.Load()) * time.Second
}

// errNoReplicas refuses a write while min-replicas-to-write is not met.
var errNoReplicas = &command.Error{Code: "NOREPLICAS", Msg: "Not enough good replicas to write."}

// checkWrite decides whether a write command may run: a replica refuses it (a rate-limit
// verb is left to decide by its arguments: PEEK and COST 0 are reads), and a primary with
// min-replicas-to-write refuses it while too few replicas are current.
func (s *Server) checkWrite(c *client, cmd *cmdEntry) error {
	c.ReadOnly = false
	if s.isReplica.Load() {
		if cmd.has(flagRatelimit) {
			c.ReadOnly = true
			return nil
		}
		return command.ErrReadOnly
	}
	if k := int(s.replCfg.minToWrite.Load()); k > 0 && s.repl.GoodReplicas(s.minReplicasMaxLag()) < k {
		return errNoReplicas
	}
	return nil
}

// infoReplication is INFO's replication section, with Redis's fields.
func (s *Server) infoReplication() [][2]string {
	in := s.repl.Info()
	var f [][2]string
	if in.Primary {
		f = append(f, [2]string{"role", "master"})
	} else {
		up := "down"
		if in.LinkUp {
			up = "up"
		}
		f = append(f,
			[2]string{"role", "slave"},
			[2]string{"master_host", in.Host},
			[2]string{"master_port", strconv.Itoa(in.Port)},
			[2]string{"master_link_status", up},
			[2]string{"master_last_io_seconds_ago", lastIO(in)},
			[2]string{"master_sync_in_progress", boolInt(in.Syncing)},
			[2]string{"slave_read_repl_offset", itoa(in.Offset)},
			[2]string{"slave_repl_offset", itoa(in.Offset)},
		)
		if !in.LinkUp {
			f = append(f, [2]string{"master_link_down_since_seconds", itoa(int64(in.LinkDownFor / time.Second))})
		}
		f = append(f,
			[2]string{"slave_priority", itoa(s.replCfg.priority.Load())},
			[2]string{"slave_read_only", "1"},
			[2]string{"replica_announced", "1"},
		)
	}
	f = append(f, [2]string{"connected_slaves", strconv.Itoa(len(in.Replicas))})
	for i, r := range in.Replicas {
		f = append(f, [2]string{"slave" + strconv.Itoa(i), "ip=" + r.Addr + ",port=" + strconv.Itoa(r.Port) +
			",state=" + r.State + ",offset=" + itoa(r.Offset) + ",lag=" + itoa(int64(r.Lag/time.Second))})
	}
	if s.replCfg.minToWrite.Load() > 0 {
		f = append(f, [2]string{"min_slaves_good_slaves", strconv.Itoa(s.repl.GoodReplicas(s.minReplicasMaxLag()))})
	}
	return append(f,
		[2]string{"master_failover_state", "no-failover"},
		[2]string{"master_replid", in.ID},
		[2]string{"master_replid2", in.ID2},
		[2]string{"master_repl_offset", itoa(in.Offset)},
		[2]string{"second_repl_offset", itoa(in.Offset2)},
		[2]string{"repl_backlog_active", boolInt(in.BacklogOn)},
		[2]string{"repl_backlog_size", itoa(s.replCfg.backlogSize.Load())},
		[2]string{"repl_backlog_first_byte_offset", itoa(in.BacklogOff)},
		[2]string{"repl_backlog_histlen", itoa(in.BacklogLen)},
	)
}

func lastIO(in replication.Info) string {
	if !in.LinkUp {
		return "-1"
	}
	return itoa(int64(in.LastIO / time.Second))
}

// newRunID returns INFO's run_id: 40 random hex digits, new at each start, as Redis's.
func newRunID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
