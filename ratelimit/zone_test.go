package ratelimit

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the tests' zones, whatever the host has

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/algorithms"
)

// TestZoneCache: one *time.Location per name, shared by concurrent callers (run with -race),
// and a cached zone costs a call no allocation.
func TestZoneCache(t *testing.T) {
	names := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "UTC", "Asia/Kathmandu", "Etc/GMT+12"}
	var wg sync.WaitGroup
	got := make([][]*time.Location, 8)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range names {
				loc, err := zones.load([]byte(n))
				if err != nil {
					t.Error(err)
					return
				}
				got[g] = append(got[g], loc)
			}
		}()
	}
	wg.Wait()
	for g := range got {
		require.Equal(t, got[0], got[g], "the same zones for every caller")
	}
	for i, n := range names {
		require.Equal(t, n, got[0][i].String())
	}
	name := []byte("Europe/Berlin")
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = zones.load(name) }))
}

// TestZoneCacheBounded: past maxZones, a zone is loaded and answered but not kept.
func TestZoneCacheBounded(t *testing.T) {
	var z zoneCache
	m := make(map[string]*time.Location, maxZones)
	for i := range maxZones {
		m[strings.Repeat("x", i+1)] = time.UTC
	}
	z.m.Store(&m)
	loc, err := z.load([]byte("Europe/Paris"))
	require.NoError(t, err)
	require.Equal(t, "Europe/Paris", loc.String())
	require.Len(t, *z.m.Load(), maxZones)
}

func TestZoneName(t *testing.T) {
	for _, ok := range []string{"UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+12", "Etc/GMT-14", "America/Port-au-Prince"} {
		require.True(t, zoneName([]byte(ok)), ok)
	}
	for _, bad := range []string{"", "Local", "/etc/localtime", "Europe/", "Europe//Berlin", "../etc/passwd", "Europe/./Berlin",
		"Europe\\Berlin", "Europe/Berlin\x00", strings.Repeat("a", 65)} {
		require.False(t, zoneName([]byte(bad)), bad)
	}
}

// FuzzWindowArgs parses WINDOW's window and options as a call, ALLOF and a policy do, from
// arbitrary bytes: never a panic; an error for a window with TZ that is not a calendar
// period, for a name that is not spelled as a zone's and for TZ on another verb; and a limit
// that parses is valid, its calendar windows hold the time they are asked about.
func FuzzWindowArgs(f *testing.F) {
	for _, seed := range []string{"1mo TZ Europe/Berlin", "1w", "1y TZ Asia/Tokyo COST 2", "1d TZ America/New_York",
		"1d", "1m TZ UTC", "2mo", "1.5w TZ UTC", "1mo TZ", "1mo TZ ../../etc/passwd", "1mo TZ UTC TZ UTC", "1mo tz utc",
		"1mo TZ Local", "1y TZ Australia/Lord_Howe REFUND 1 PEEK"} {
		f.Add(seed, int64(1711846800e9))
	}
	f.Fuzz(func(t *testing.T, in string, now int64) {
		fields := bytes.Fields([]byte(in))
		if len(fields) == 0 {
			return
		}
		args := append([][]byte{[]byte("k"), []byte("10")}, fields...)
		var l limit
		_, err := l.parse("window", 2, args, false)
		tz := -1
		for i, a := range fields[1:] {
			if strings.EqualFold(string(a), "tz") {
				tz = i + 1
				break
			}
		}
		if err != nil {
			return
		}
		require.NoError(t, l.fw.Validate())
		if tz > 0 {
			require.NotNil(t, l.fw.Loc, "TZ parsed without a zone")
			require.NotEqual(t, algorithms.Fixed, l.fw.Calendar, "TZ on a fixed window %q", fields[0])
			require.True(t, zoneName(fields[tz+1]), "zone %q", fields[tz+1])
		}
		if l.fw.Calendar != algorithms.Fixed {
			ts := int64(uint64(now) % algorithms.MaxTime)
			start, end := l.fw.Calendar.Bounds(ts, l.fw.Loc)
			require.True(t, start <= ts && ts < end)
		}
		var o limit
		_, err = o.parse("slide", 2, args, false)
		if tz > 0 {
			require.Error(t, err, "TZ on SLIDE")
		}
	})
}
