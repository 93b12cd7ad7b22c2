package upstream

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Global limits (the GLOBAL option, package global) do not go through the dispatcher: each
// instance decides them from a local allowance, and its sync loop calls SyncGlobal every
// global-sync-interval. SyncGlobal sends one pipeline (one per master of a Cluster, which
// the client sends together): a heartbeat, then one script per active key, and hands back
// what each key holds on the upstream. This file only moves the bytes; package global owns
// the maths and the format of the state.
//
// On the upstream a global key K is the hash "throttled:global:" + K (one Redis key: no
// cross-slot call, whatever K's hash tag), with the fields
//
//	s         the global state: an 8-byte tag, then what package global encodes
//	p         admitted units reported and not yet folded into s (HINCRBY)
//	t         the sum over those reports of units * the report's time in Unix ms
//	          (HINCRBYFLOAT): their mean time is when the fold takes them
//	d:<id>    instance id's demand in the last interval, the allowance it had over it, and
//	          when it wrote them: "<units>:<allowance>:<Unix ms>"
//
// and the hash expires when the key is idle (PEXPIRE at every sync). The live instances are
// the members of the sorted set "throttled:global:instances", each scored with the Unix ms
// (the upstream's TIME) at which its heartbeat runs out.

// GlobalPrefix is the prefix of a global key's hash on the upstream.
const GlobalPrefix = "throttled:global:"

// GlobalInstances is the sorted set of the live instances' heartbeats.
const GlobalInstances = "throttled:global:instances"

// globalScript is one key's sync. KEYS[1] is the key's hash; ARGV: the instance's id, the
// units it admitted since its last sync, its demand, now (Unix ms), the stamp under which
// another instance's demand is stale (deleted), the state to fold in ("" for none), the tag
// of the state that fold was computed from ("" when there was none), the pending units it
// folded, the hash's time to live in ms, the time of the units admitted (Unix ms) and the
// pending units-times it folded (field t), and the allowance it had since its last sync. The fold is made only when s still holds what
// it was computed from (another instance may have folded first: then its own fold counted
// the same units). Replies HGETALL of the hash.
const globalScript = `
local h = KEYS[1]
if ARGV[6] ~= '' then
  local cur = redis.call('HGET', h, 's')
  local tag = ''
  if cur then tag = string.sub(cur, 1, 8) end
  if tag == ARGV[7] then
    redis.call('HSET', h, 's', ARGV[6])
    redis.call('HINCRBY', h, 'p', 0 - tonumber(ARGV[8]))
    redis.call('HINCRBYFLOAT', h, 't', 0 - tonumber(ARGV[11]))
  end
end
if ARGV[2] ~= '0' then
  redis.call('HINCRBY', h, 'p', ARGV[2])
  redis.call('HINCRBYFLOAT', h, 't', tonumber(ARGV[2]) * tonumber(ARGV[10]))
end
redis.call('HSET', h, 'd:' .. ARGV[1], ARGV[3] .. ':' .. ARGV[12] .. ':' .. ARGV[4])
local all = redis.call('HGETALL', h)
local cutoff = tonumber(ARGV[5])
for i = 1, #all, 2 do
  local f = all[i]
  if string.sub(f, 1, 2) == 'd:' then
    local at = tonumber(string.match(all[i+1], ':(%d+)$'))
    if at and at < cutoff then redis.call('HDEL', h, f) end
  end
end
redis.call('PEXPIRE', h, ARGV[9])
return all
`

// heartbeatScript keeps an instance's heartbeat: ARGV the id, how long its heartbeat lasts
// in ms and the set's time to live in ms. Replies the live ids. The heartbeats are scored on
// the upstream's own clock (TIME, of the one node that holds the set), from when each
// reaches it: the instances' clocks, each an offset measured over a round trip, may disagree
// by more than a heartbeat's margin on a loaded machine.
const heartbeatScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. now)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return redis.call('ZRANGE', KEYS[1], 0, -1)
`

var (
	globalSHA    = func() string { h := sha1.Sum([]byte(globalScript)); return hex.EncodeToString(h[:]) }()
	heartbeatSHA = func() string { h := sha1.Sum([]byte(heartbeatScript)); return hex.EncodeToString(h[:]) }()
)

// GlobalReport is what an instance sends of one global key at a sync.
type GlobalReport struct {
	Key      []byte  // the limit's key, as clients name it
	Admitted int64   // units admitted since the last sync that reached the upstream
	Demand   int64   // units asked (admitted or denied) in the last interval
	Grant    int64   // the allowance it had over the last interval
	Fold     []byte  // the state to fold in (tag first), nil for none
	FoldFrom []byte  // the tag of the state Fold was computed from; nil when there was none
	FoldP    int64   // the pending units Fold counts
	FoldT    float64 // and their units * times (GlobalReply.PendingT)
	At       int64   // when the units were admitted, at the earliest (Unix ns)
	TTL      time.Duration
}

// GlobalDemand is one instance's demand of a key, as the upstream holds it.
type GlobalDemand struct {
	ID     string
	Units  int64
	Grant  int64 // its allowance over the interval before the sync that wrote it
	Stamp  int64 // Unix ms of the sync that wrote it
	Broken bool  // a field throttled did not write
}

// GlobalReply is what the upstream holds of one global key after a sync.
type GlobalReply struct {
	Err     error  // the key's sync failed: its node is down, or the call timed out
	State   []byte // field s, nil when missing
	Pending int64  // field p
	// PendingT is field t: the pending units' mean time of admission is PendingT / Pending
	// (Unix ms).
	PendingT float64
	Demands  []GlobalDemand
}

// GlobalSync is one sync of an instance.
type GlobalSync struct {
	ID        string        // the instance's id
	Now       int64         // Unix ns, the shared clock's
	Heartbeat time.Duration // how long the heartbeat lasts
	Stale     time.Duration // a demand older than this is deleted
	Reports   []GlobalReport
	// Replies get one reply per report (the slice is reused, grown).
	Replies []GlobalReply
	// Live are the live instances' ids, when the heartbeat went through.
	Live         []string
	HeartbeatErr error
	Commands     int // the commands sent
}

// SyncGlobal sends s's heartbeat and reports in one pipeline (per master) within ctx and
// fills its replies. A key whose script failed gets its error; the others are unaffected.
func (u *Client) SyncGlobal(ctx context.Context, s *GlobalSync) {
	nowMs := s.Now / 1e6
	cmds := make([]*redis.Cmd, 0, len(s.Reports)+1)
	run := func() {
		cmds = cmds[:0]
		pipe := u.rdb.Pipeline()
		hbTTL := s.Heartbeat.Milliseconds()
		cmds = append(cmds, redis.NewCmd(ctx, "evalsha", heartbeatSHA, 1, GlobalInstances,
			s.ID, max(hbTTL, 1), 4*max(hbTTL, 1)))
		cutoff := nowMs - s.Stale.Milliseconds()
		for i := range s.Reports {
			r := &s.Reports[i]
			fold, from := "", ""
			if r.Fold != nil {
				fold, from = string(r.Fold), string(r.FoldFrom)
			}
			cmds = append(cmds, redis.NewCmd(ctx, "evalsha", globalSHA, 1, GlobalPrefix+string(r.Key),
				s.ID, r.Admitted, r.Demand, nowMs, cutoff, fold, from, r.FoldP, max(r.TTL.Milliseconds(), 1),
				r.At/1e6, strconv.FormatFloat(r.FoldT, 'f', -1, 64), r.Grant))
		}
		for _, c := range cmds {
			pipe.Process(ctx, c)
		}
		_, err := pipe.Exec(ctx)
		if err != nil {
			for _, c := range cmds {
				if c.Err() == nil && c.Val() == nil {
					c.SetErr(err)
				}
			}
		}
		s.Commands += len(cmds)
	}
	run()
	for _, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			u.scriptMu.Lock() // a Cluster client loads them on every master
			u.rdb.ScriptLoad(ctx, globalScript)
			u.rdb.ScriptLoad(ctx, heartbeatScript)
			u.scriptMu.Unlock()
			run()
			break
		}
	}
	s.Live, s.HeartbeatErr = s.Live[:0], cmds[0].Err()
	if s.HeartbeatErr == nil {
		ids, _ := cmds[0].Val().([]any)
		for _, id := range ids {
			if id, ok := id.(string); ok {
				s.Live = append(s.Live, id)
			}
		}
	}
	for len(s.Replies) < len(s.Reports) {
		s.Replies = append(s.Replies, GlobalReply{})
	}
	s.Replies = s.Replies[:len(s.Reports)]
	for i, c := range cmds[1:] {
		s.Replies[i] = parseGlobalReply(c, s.Replies[i].Demands[:0])
	}
}

// errGlobalReply is a hash that is not what the script keeps.
var errGlobalReply = errors.New("upstream: a global key's hash holds fields throttled did not write")

func parseGlobalReply(c *redis.Cmd, demands []GlobalDemand) GlobalReply {
	r := GlobalReply{Demands: demands}
	v, err := c.Result()
	if err != nil {
		r.Err = err
		return r
	}
	all, ok := v.([]any)
	if !ok || len(all)%2 != 0 {
		r.Err = errGlobalReply
		return r
	}
	for i := 0; i < len(all); i += 2 {
		f, _ := all[i].(string)
		val, _ := all[i+1].(string)
		switch {
		case f == "s":
			r.State = []byte(val)
		case f == "p":
			r.Pending, _ = strconv.ParseInt(val, 10, 64)
		case f == "t":
			r.PendingT, _ = strconv.ParseFloat(val, 64)
		case strings.HasPrefix(f, "d:"):
			d := GlobalDemand{ID: f[2:]}
			parts := strings.Split(val, ":")
			var e1, e2, e3 error
			if len(parts) == 3 {
				d.Units, e1 = strconv.ParseInt(parts[0], 10, 64)
				d.Grant, e2 = strconv.ParseInt(parts[1], 10, 64)
				d.Stamp, e3 = strconv.ParseInt(parts[2], 10, 64)
			}
			d.Broken = len(parts) != 3 || e1 != nil || e2 != nil || e3 != nil || d.Units < 0 || d.Grant < 0
			r.Demands = append(r.Demands, d)
		}
	}
	return r
}
