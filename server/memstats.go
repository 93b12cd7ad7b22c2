package server

import (
	"runtime"

	"github.com/throttledhq/throttled/memory"
)

// The server's memory figures, for INFO memory and the MEMORY commands (package memory):
// what the Go runtime gives, and what only the server knows.

// storeBuffers returns the store's memtables and block cache, and what of them is outside
// the Go heap (with persistence on).
func (s *Server) storeBuffers() (memTables, blockCache, offHeap int64) {
	if s.store != nil {
		in := s.store.Info()
		memTables, blockCache = in.MemTableBytes, in.BlockCacheBytes
		if in.OffHeap {
			offHeap = memTables + blockCache
		}
	}
	return memTables, blockCache, offHeap
}

// heapFigures are the figures of m and the store's buffers offHeap, with what INFO memory
// gives besides: the startup and the dataset, the clients' buffers and the backlog.
func (s *Server) heapFigures(m *runtime.MemStats, offHeap int64) memory.Figures {
	f := memory.Measure(m, offHeap)
	f.Startup, f.Dataset = s.memStartup, s.ks.UsedMemory()
	f.Normal, f.Replicas, _, _ = s.clientFigures()
	if in := s.repl.Info(); in.BacklogOn {
		f.Backlog = in.BacklogLen
	}
	return f
}

// memoryFigures measures the server's memory, for MEMORY STATS and DOCTOR.
func (s *Server) memoryFigures() memory.Figures {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	_, _, offHeap := s.storeBuffers()
	f := s.heapFigures(&m, offHeap)
	f.MainHT = s.ks.IndexMemory()
	f.ExpiresHT = 8 * int64(s.ks.Expires()) // an expiry is 8 bytes of its key's entry
	f.Keys = int64(s.ks.Len())
	for _, c := range s.clientsByID() {
		if clientKind(c.kind.Load()) == kindReplica {
			f.ReplicaCount++
		} else {
			f.NormalClientCnt++
		}
	}
	st := s.scripts.eng.Stats()
	f.Lua, f.Scripts = st.BodyBytes, st.Scripts
	f.Functions = s.fn.FunctionCode()
	return f
}
