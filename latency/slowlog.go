package latency

import (
	"fmt"
	"sync"
)

// The bounds of what a SLOWLOG entry keeps of a request, as Redis's SLOWLOG_ENTRY_MAX_ARGC and
// SLOWLOG_ENTRY_MAX_STRING.
const (
	SlowlogMaxArgs   = 32
	SlowlogMaxString = 128
)

// SlowEntry is one SLOWLOG entry, in the order SLOWLOG GET replies its fields.
type SlowEntry struct {
	ID   int64
	At   int64 // Unix seconds
	Usec int64
	Args []string
	Peer string
	Name string
}

// NewSlowEntry is an entry for a request of args (secrets already redacted), cut as Redis
// cuts them: at most SlowlogMaxArgs arguments, the last saying how many more there were,
// each at most SlowlogMaxString bytes and how many more it had.
func NewSlowEntry(args [][]byte, at, usec int64, peer, name string) SlowEntry {
	n := min(len(args), SlowlogMaxArgs)
	e := SlowEntry{At: at, Usec: usec, Peer: peer, Name: name, Args: make([]string, n)}
	for i := range n {
		switch a := args[i]; {
		case i == SlowlogMaxArgs-1 && len(args) > SlowlogMaxArgs:
			e.Args[i] = fmt.Sprintf("... (%d more arguments)", len(args)-SlowlogMaxArgs+1)
		case len(a) > SlowlogMaxString:
			e.Args[i] = fmt.Sprintf("%s... (%d more bytes)", a[:SlowlogMaxString], len(a)-SlowlogMaxString)
		default:
			e.Args[i] = string(a)
		}
	}
	return e
}

// Slowlog is Redis's SLOWLOG: the latest entries, each numbered. Safe for concurrent use.
type Slowlog struct {
	mu      sync.Mutex  // guards entries and nextID
	entries []SlowEntry // oldest first
	nextID  int64
}

// Add numbers e and keeps it, with at most maxLen entries in all (slowlog-max-len).
func (l *Slowlog) Add(e SlowEntry, maxLen int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.ID = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	l.trimLocked(maxLen)
}

// Trim drops the oldest entries past maxLen, as a smaller slowlog-max-len does at once.
func (l *Slowlog) Trim(maxLen int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trimLocked(maxLen)
}

func (l *Slowlog) trimLocked(maxLen int) {
	if over := len(l.entries) - maxLen; over > 0 {
		l.entries = append(l.entries[:0], l.entries[over:]...)
	}
}

// Latest returns the count newest entries, newest first; all of them when count is negative.
func (l *Slowlog) Latest(count int) []SlowEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if count < 0 || count > len(l.entries) {
		count = len(l.entries)
	}
	out := make([]SlowEntry, count)
	for i := range out {
		out[i] = l.entries[len(l.entries)-1-i]
	}
	return out
}

// Len is the number of entries kept.
func (l *Slowlog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Reset forgets every entry; the numbering goes on.
func (l *Slowlog) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}
