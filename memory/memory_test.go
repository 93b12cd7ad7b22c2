package memory

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throttledhq/throttled/command"
	"github.com/throttledhq/throttled/resp"
)

const mb = 1 << 20

// TestMemoryDoctor: the report Redis's thresholds give for each figure.
func TestMemoryDoctor(t *testing.T) {
	healthy := Figures{Total: 100 * mb, Peak: 110 * mb, Allocated: 95 * mb, Active: 100 * mb, Resident: 105 * mb, RSS: 110 * mb, NormalClientCnt: 1}
	require.Equal(t, "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n", doctorReport(healthy))
	require.Contains(t, doctorReport(Figures{Total: mb}), "this instance is empty")

	sick := healthy
	sick.Peak, sick.RSS, sick.Scripts = 200*mb, 200*mb, 1001
	report := doctorReport(sick)
	require.True(t, strings.HasPrefix(report, "Sam, I detected a few issues in this Redis instance memory implants:\n\n * Peak memory:"), report)
	require.Contains(t, report, " * High total RSS:")
	require.Contains(t, report, " * High process RSS overhead:")
	require.Contains(t, report, " * Many scripts:")
	require.NotContains(t, report, "Big client buffers")
	require.True(t, strings.HasSuffix(report, "I'm here to keep you safe, Sam. I want to help you.\n"))
}

// TestHumanBytes: INFO's *_human fields, two decimals from a KiB on.
func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{
		{0, "0B"}, {1023, "1023B"}, {1024, "1.00K"}, {1536, "1.50K"}, {mb, "1.00M"}, {5 * mb / 2, "2.50M"}, {3 << 30, "3.00G"},
	} {
		t.Run(tc.want, func(t *testing.T) { require.Equal(t, tc.want, HumanBytes(tc.n)) })
	}
}

// TestInfoFields: INFO memory's ratios and percentages from the figures, "0.00" where
// the divisor is not positive.
func TestInfoFields(t *testing.T) {
	f := Figures{Total: 100 * mb, Peak: 200 * mb, Startup: 20 * mb, Dataset: 40 * mb, Allocated: 90 * mb, Active: 100 * mb,
		Resident: 110 * mb, RSS: 121 * mb, Backlog: 7, Replicas: 8, Normal: 9}
	fields := make(map[string]string)
	for _, kv := range InfoFields(&f, 5) {
		fields[kv[0]] = kv[1]
	}
	for name, want := range map[string]string{
		"used_memory_peak_human":        "200.00M",
		"used_memory_peak_perc":         "50.00%",
		"used_memory_overhead":          "62914560",
		"used_memory_dataset_perc":      "50.00%",
		"allocator_frag_ratio":          "1.11",
		"allocator_frag_bytes":          "10485760",
		"allocator_rss_ratio":           "1.10",
		"rss_overhead_ratio":            "1.10",
		"mem_fragmentation_ratio":       "1.21",
		"mem_fragmentation_bytes":       "22020096",
		"mem_not_counted_for_evict":     "5",
		"mem_total_replication_buffers": "7",
		"mem_clients_slaves":            "8",
		"mem_clients_normal":            "9",
		"mem_allocator":                 "go-" + runtime.Version(),
	} {
		require.Equal(t, want, fields[name], name)
	}

	empty := InfoFields(&Figures{}, 0)
	require.Equal(t, [2]string{"used_memory_peak_perc", "0.00%"}, empty[1])
	require.Equal(t, [2]string{"allocator_frag_ratio", "0.00"}, empty[9])
}

// TestMeasure: the heap's figures from the runtime's, the store's off-heap bytes in the
// total and the peak.
func TestMeasure(t *testing.T) {
	m := runtime.MemStats{HeapInuse: 100, HeapSys: 300, HeapAlloc: 80, HeapReleased: 50, Sys: 1000}
	f := Measure(&m, 7)
	require.Equal(t, int64(107), f.Total)
	require.Equal(t, int64(307), f.Peak)
	require.Equal(t, int64(80), f.Allocated)
	require.Equal(t, int64(100), f.Active)
	require.Equal(t, int64(250), f.Resident)
	if _, ok := Resident(); !ok {
		require.Equal(t, int64(957), f.RSS)
	}
}

// TestStats: MEMORY STATS lays the figures out in Redis 7.0's order, db.0 only with keys.
func TestStats(t *testing.T) {
	f := Figures{Total: 100 * mb, Peak: 200 * mb, Startup: 20 * mb, Dataset: 40 * mb, Keys: 4, MainHT: 11, ExpiresHT: 12}
	cfg := Config{Figures: func() Figures { return f }}
	c := &command.Ctx{W: resp.Writer{Proto: 3}}
	require.NoError(t, cfg.stats(c, nil))
	out := string(c.W.B)
	require.True(t, strings.HasPrefix(out, "%28\r\n$14\r\npeak.allocated\r\n:209715200\r\n$15\r\ntotal.allocated\r\n:104857600\r\n"), out)
	require.Contains(t, out, "$4\r\ndb.0\r\n%3\r\n$23\r\noverhead.hashtable.main\r\n:11\r\n$26\r\noverhead.hashtable.expires\r\n:12\r\n")
	require.Contains(t, out, "$18\r\nkeys.bytes-per-key\r\n:20971520\r\n")
	require.Contains(t, out, "$18\r\ndataset.percentage\r\n,50\r\n")
	require.True(t, strings.HasSuffix(out, "$19\r\nfragmentation.bytes\r\n:-104857600\r\n"), out)

	f.Keys = 0
	c.W.B = nil
	require.NoError(t, cfg.stats(c, nil))
	require.True(t, strings.HasPrefix(string(c.W.B), "%27\r\n"))
	require.NotContains(t, string(c.W.B), "db.0")
}
