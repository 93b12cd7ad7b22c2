package latency

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMonitorSamples(t *testing.T) {
	var m Monitor
	require.Empty(t, m.Latest())
	require.Nil(t, m.History(EventCommand))

	m.Add(EventCommand, 30, 1000)
	m.Add(EventCommand, 20, 1000) // the same second keeps the worse
	m.Add(EventCommand, 50, 1000)
	m.Add(EventCommand, 10, 1001)
	m.Add(EventExpireCycle, 25, 1002)
	require.Equal(t, []Sample{{1000, 50}, {1001, 10}}, m.History(EventCommand))
	require.Equal(t, []Latest{
		{Event: EventCommand, Time: 1001, Ms: 10, Max: 50},
		{Event: EventExpireCycle, Time: 1002, Ms: 25, Max: 25},
	}, m.Latest())

	// The ring keeps the latest SeriesLen seconds, oldest first.
	for i := range int64(SeriesLen + 5) {
		m.Add(EventFastCommand, i+1, 2000+i)
	}
	h := m.History(EventFastCommand)
	require.Len(t, h, SeriesLen)
	require.Equal(t, Sample{2005, 6}, h[0])
	require.Equal(t, Sample{2000 + SeriesLen + 4, SeriesLen + 5}, h[SeriesLen-1])

	require.Equal(t, 0, m.Reset("nothing"))
	require.Equal(t, 1, m.Reset(EventExpireCycle, "nothing"))
	require.Equal(t, 2, m.Reset())
	require.Empty(t, m.Latest())
}

func TestMonitorGraph(t *testing.T) {
	var m Monitor
	_, ok := m.Graph(EventCommand, 0)
	require.False(t, ok)
	m.Add(EventCommand, 10, 166)
	m.Add(EventCommand, 40, 167)
	m.Add(EventCommand, 25, 169)
	got, ok := m.Graph(EventCommand, 169)
	require.True(t, ok)
	// As redis-server 7.0.15 drew the same samples (DEBUG SLEEP 0.010, 0.040 and 0.025 at
	// those seconds): 12 steps over 4 rows of "_o#", '|' below a full cell, then a blank
	// line and each sample's age written downwards.
	want := "command - high 40 ms, low 10 ms (all time high 40 ms)\n" +
		strings.Repeat("-", 80) + "\n" +
		" # \n" +
		" |_\n" +
		" ||\n" +
		"_||\n" +
		"   \n" +
		"320\n" +
		"sss\n"
	require.Equal(t, want, got)
}

func TestMonitorDoctor(t *testing.T) {
	var m Monitor
	require.Contains(t, m.Doctor(Advice{}, 0), "Latency monitoring is disabled")
	require.Contains(t, m.Doctor(Advice{ThresholdMs: 100}, 0), "no latency spike was observed")
	m.Add(EventCommand, 300, 100)
	m.Add(EventCommand, 500, 102)
	report := m.Doctor(Advice{ThresholdMs: 100, SlowlogSlowerThan: 10000, Hz: 10}, 104)
	require.Contains(t, report, "1. command: 2 latency spikes (average 400ms, mean deviation 100ms, period 2.00 sec). Worst all time event 500ms.\n")
	require.Contains(t, report, "- Check your Slow Log")
	require.NotContains(t, report, "Your current Slow Log configuration")
	report = m.Doctor(Advice{ThresholdMs: 1, SlowlogSlowerThan: 10000, Hz: 10}, 104)
	require.Contains(t, report, "'CONFIG SET slowlog-log-slower-than 1000'")
}
