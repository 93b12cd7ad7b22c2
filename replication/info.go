package replication

import "time"

// Info is what INFO replication and ROLE show of the node.
type Info struct {
	Primary    bool
	ID, ID2    string
	Offset     int64 // master_repl_offset: the end of the stream
	Offset2    int64 // second_repl_offset; -1 when none
	BacklogOn  bool  // repl_backlog_active
	BacklogLen int64
	BacklogOff int64 // repl_backlog_first_byte_offset
	Replicas   []ReplicaInfo

	SyncFull, PartialOK, PartialErr int64

	// A replica's link to its primary.
	Host           string
	Port           int
	LinkUp         bool
	Syncing        bool
	LastIO         time.Duration // since the last byte from the primary
	LinkDownFor    time.Duration // while the link is down
	ConnectedSince time.Time
}

// ReplicaInfo is one follower, as INFO's slaveN line shows it.
type ReplicaInfo struct {
	Addr   string
	Port   int
	State  string // wait_bgsave (taking the full copy) or online
	Offset int64  // acknowledged
	Lag    time.Duration
}

// Info returns the node's state now.
func (n *Node) Info() Info {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.o.Now()
	in := Info{
		Primary:    n.link == nil,
		ID:         n.id,
		ID2:        n.id2,
		Offset:     n.bl.end(),
		Offset2:    n.off2,
		BacklogOn:  n.feedStop != nil || n.link != nil || len(n.followers) > 0,
		BacklogLen: int64(len(n.bl.buf)),
		BacklogOff: n.bl.start + 1,
		SyncFull:   n.syncFull.Load(),
		PartialOK:  n.partialOK.Load(),
		PartialErr: n.partialErr.Load(),
	}
	if in.ID2 == "" {
		in.ID2 = "0000000000000000000000000000000000000000"
	}
	for f := range n.followers {
		r := ReplicaInfo{Addr: f.addr, Port: f.port, State: "wait_bgsave", Offset: f.ack, Lag: time.Duration(now - f.ackAt)}
		if f.online {
			r.State = "online"
		}
		in.Replicas = append(in.Replicas, r)
	}
	sortReplicas(in.Replicas)
	if l := n.link; l != nil {
		in.Host, in.Port = l.host, l.port
		in.LinkUp, in.Syncing = l.up.Load(), l.syncing.Load()
		if in.LinkUp {
			in.LastIO = time.Since(time.Unix(0, l.lastIO.Load()))
		} else if d := l.downSince.Load(); d != 0 {
			in.LinkDownFor = time.Since(time.Unix(0, d))
		}
	}
	return in
}

// GoodReplicas counts the online followers that acknowledged within maxLag
// (min-replicas-to-write).
func (n *Node) GoodReplicas(maxLag time.Duration) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	now, k := n.o.Now(), 0
	for f := range n.followers {
		if f.online && time.Duration(now-f.ackAt) <= maxLag {
			k++
		}
	}
	return k
}

func sortReplicas(r []ReplicaInfo) {
	for i := 1; i < len(r); i++ {
		for j := i; j > 0 && (r[j].Addr < r[j-1].Addr || r[j].Addr == r[j-1].Addr && r[j].Port < r[j-1].Port); j-- {
			r[j], r[j-1] = r[j-1], r[j]
		}
	}
}
