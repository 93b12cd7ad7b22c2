package ratelimit

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/algorithms"
	"github.com/throttledhq/throttled/command"
)

// Calendar windows: WINDOW key limit 1w|1mo|1y [TZ name] counts in the ISO weeks, months or
// years of a time zone (and 1d with TZ in its days); package algorithms holds the calendar
// maths, and this file what the verbs parse: the period and the zone.

// maxZones bounds the zone cache: tzdata names about 600 zones, so only spellings of names
// that load and are not canonical (on a case-insensitive file system) go past it, and are
// loaded each time instead.
const maxZones = 1024

// zoneCache memoizes time.LoadLocation, which reads and parses a zone's file at each call
// (tens of µs), so that a call with TZ costs a map lookup. Readers load the map without a
// lock, and a new zone replaces it with a copy (copy on write): zones are few and read at
// every call. A *time.Location is immutable once loaded and safe for concurrent use.
type zoneCache struct {
	mu sync.Mutex // serializes the writers of m
	m  atomic.Pointer[map[string]*time.Location]
}

// zones is the process's zone cache. It is package state only as a memo is: the same name
// gives the same zone whenever it is asked for (the embedded tzdata, or the host's), so
// nothing a caller sees depends on it, and every parser of a WINDOW (a call, ALLOF, a
// policy, upstream mode's Call) shares it without being handed it.
var zones zoneCache

// errZoneOption is TZ on a verb other than WINDOW.
var errZoneOption = errors.New("TZ is WINDOW's option: the time zone of a calendar window (1d, 1w, 1mo or 1y)")

// load returns the zone named name: an IANA name such as Europe/Berlin, or UTC.
func (z *zoneCache) load(name []byte) (*time.Location, error) {
	if m := z.m.Load(); m != nil {
		if loc, ok := (*m)[string(name)]; ok {
			return loc, nil
		}
	}
	if !zoneName(name) {
		return nil, fmt.Errorf("TZ '%s' is not a time zone: an IANA name such as Europe/Berlin, America/New_York or UTC", command.Truncate(name, 64))
	}
	loc, err := time.LoadLocation(string(name))
	if err != nil {
		return nil, fmt.Errorf("unknown time zone '%s' for TZ: an IANA name such as Europe/Berlin, America/New_York or UTC", command.Truncate(name, 64))
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	old := z.m.Load()
	if old != nil && len(*old) >= maxZones {
		return loc, nil
	}
	m := make(map[string]*time.Location, 1+lenOf(old))
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[string(name)] = loc
	z.m.Store(&m)
	return loc, nil
}

func lenOf(m *map[string]*time.Location) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// zoneName reports whether name is spelled as an IANA zone's name: at most 64 bytes of
// letters, digits, '_', '+' and '-' in components joined by single '/'. It keeps out what
// time.LoadLocation would read as a path (".", "..", "//"), the server's own "Local" (a
// quota must not follow the host's TZ setting) and "", which it takes for UTC.
func zoneName(name []byte) bool {
	if len(name) == 0 || len(name) > 64 || string(name) == "Local" || name[0] == '/' || name[len(name)-1] == '/' {
		return false
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '+', c == '-':
		case c == '/' && name[i-1] != '/':
		default:
			return false
		}
	}
	return true
}

// parseZone reads TZ name at the start of args into o (only WINDOW, set.zone, takes it) and
// returns the count of arguments it used.
func (o *nativeOptions) parseZone(args [][]byte, set nativeOptionSet) (int, error) {
	switch {
	case !set.zone:
		return 0, errZoneOption
	case len(args) < 2:
		return 0, errors.New("TZ needs a time zone's name, such as Europe/Berlin")
	case o.loc != nil:
		return 0, errors.New("TZ given twice")
	}
	loc, err := zones.load(args[1])
	if err != nil {
		return 0, err
	}
	o.loc = loc
	return 2, nil
}

// calendarOf returns the calendar period that a WINDOW's window names: 1w, 1mo, 1y, and 1d
// when the call gives a zone (without one, 1d is the fixed day of 86400 s since the epoch,
// which is UTC's calendar day); Fixed for any other window.
func calendarOf(window []byte, zoned bool) algorithms.Calendar {
	if len(window) < 2 || window[0] != '1' {
		return algorithms.Fixed
	}
	switch string(window[1:]) {
	case "d":
		if zoned {
			return algorithms.Day
		}
	case "w":
		return algorithms.Week
	case "mo":
		return algorithms.Month
	case "y":
		return algorithms.Year
	}
	return algorithms.Fixed
}

// calendarError explains a window that is not a duration but looks like a calendar period
// (2w, 3mo, 1.5y; on SLIDE any), or nil.
func calendarError(verb string, window []byte) error {
	if verb == "slide" {
		if calendarOf(window, true) != algorithms.Fixed && calendarOf(window, false) != algorithms.Fixed {
			return fmt.Errorf("SLIDE's window is a duration (ms, s, m, h, d), got '%s': calendar periods (1w, 1mo, 1y) are WINDOW's", command.Truncate(window, 64))
		}
		return nil
	}
	n := len(window)
	if n > 1 && (window[n-1] == 'w' || window[n-1] == 'y') || n > 2 && string(window[n-2:]) == "mo" {
		return fmt.Errorf("invalid window '%s': a calendar window is one period: 1d, 1w, 1mo or 1y (with TZ name for a zone's)", command.Truncate(window, 64))
	}
	return nil
}
