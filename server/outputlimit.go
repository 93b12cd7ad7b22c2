package server

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/conffile"
)

// client-output-buffer-limit, as Redis's: for each class of client (normal, replica,
// pubsub) a hard limit of output bytes past which the client is disconnected at once, and a
// soft limit it may stay over for a number of seconds. Here the limits bound the outbox of a
// detached client (detach.go): subscribers (pubsub) and clients that ran a blocking command
// (normal). Other clients need none: their event loop or goroutine stops reading their
// requests while their replies wait for the socket, so a client that never reads holds at
// most a pipeline's replies. The replica class is shown for Sentinel and tools; the
// replication stream bounds its own backlog (repl-backlog-size).

// outputClass is a class's limits: hard and soft in bytes (0 for none) and the seconds a
// client may stay over soft.
type outputClass struct{ hard, soft, seconds int64 }

// outputLimits are the three classes' limits.
type outputLimits struct{ normal, replica, pubsub outputClass }

// defaultOutputLimits are Redis's defaults.
var defaultOutputLimits = outputLimits{
	normal:  outputClass{},
	replica: outputClass{256 << 20, 64 << 20, 60},
	pubsub:  outputClass{32 << 20, 8 << 20, 60},
}

func (l *outputLimits) String() string {
	f := func(name string, c outputClass) string {
		return name + " " + itoa(c.hard) + " " + itoa(c.soft) + " " + itoa(c.seconds)
	}
	return f("normal", l.normal) + " " + f("slave", l.replica) + " " + f("pubsub", l.pubsub)
}

// parseOutputLimits reads "class hard soft seconds [class hard soft seconds ...]" over
// base: the classes named change, the others keep their limits.
func parseOutputLimits(v string, base outputLimits) (outputLimits, error) {
	f := strings.Fields(v)
	if len(f) == 0 || len(f)%4 != 0 {
		return base, errors.New("Wrong number of arguments in buffer limit configuration.")
	}
	out := base
	for i := 0; i < len(f); i += 4 {
		hard, err1 := conffile.ParseSize(f[i+1])
		soft, err2 := conffile.ParseSize(f[i+2])
		secs, err3 := strconv.ParseInt(f[i+3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || hard < 0 || soft < 0 || secs < 0 {
			return base, errors.New("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
		}
		c := outputClass{hard, soft, secs}
		switch strings.ToLower(f[i]) {
		case "normal":
			out.normal = c
		case "replica", "slave":
			out.replica = c
		case "pubsub":
			out.pubsub = c
		default:
			return base, errors.New("Invalid client class specified in buffer limit configuration.")
		}
	}
	return out, nil
}

// overLimitLocked reports whether the outbox has gone past its client class's limits, and
// the limit it passed: the hard one at once, the soft one after its seconds.
func (o *outbox) overLimitLocked() (bool, int64) {
	limits := o.c.s.outputLimits.Load()
	class := limits.normal
	if clientKind(o.c.kind.Load()) == kindPubSub {
		class = limits.pubsub
	}
	hard := class.hard
	if hard == 0 {
		hard = outputLimit
	}
	if int64(o.queued) > hard {
		return true, hard
	}
	if class.soft == 0 || int64(o.queued) <= class.soft {
		o.softSince = time.Time{}
		return false, 0
	}
	now := time.Now()
	if o.softSince.IsZero() {
		o.softSince = now
		return false, 0
	}
	return now.Sub(o.softSince) > time.Duration(class.seconds)*time.Second, class.soft
}
