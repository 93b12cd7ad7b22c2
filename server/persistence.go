package server

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/throttledhq/throttled/persistence"
)

// errNoPersistence is SAVE's and BGSAVE's answer with appendonly no.
var errNoPersistence = errors.New("appendonly is no: the state is kept in memory only")

// openStore opens the data directory and loads it into the keyspace, before the server
// accepts anyone.
func (s *Server) openStore() error {
	if !s.cfg.AppendOnly {
		s.log.Warn("appendonly is no: the state will not survive a restart")
		return nil
	}
	fsync, err := persistence.ParseFsync(s.cfg.AppendFsync)
	if err != nil {
		return fmt.Errorf("appendfsync: %w", err)
	}
	st, err := persistence.Open(s.cfg.Dir, s.ks, persistence.Options{Fsync: fsync, Logger: s.log, Now: s.nowNano, Checkpoint: s.repl.Checkpoint,
		Salvage: persistence.Salvage{
			RefuseTruncated: !s.cfg.AOFLoadTruncated,
			Broken:          s.cfg.AOFLoadBroken,
			BrokenMaxSize:   int64(s.cfg.AOFLoadBrokenMaxSize),
		}})
	if err != nil {
		return err
	}
	s.store = st
	s.log.Info("persistence on", "dir", s.cfg.Dir, "appendfsync", fsync.String(), "keys", s.ks.Len())
	return nil
}

// closeStore writes the last changes and closes the store.
func (s *Server) closeStore() error {
	if s.store == nil {
		return nil
	}
	if err := s.store.Close(); err != nil {
		s.log.Error("could not save the state", "dir", s.cfg.Dir, "err", err)
		return err
	}
	s.log.Info("state saved", "dir", s.cfg.Dir)
	return nil
}

// syncWrites reports whether replies to write commands wait for the store: with every
// appendfsync mode, as Redis writes its AOF before it replies, a change is written to the
// log (always: and synced) before the client hears of it. One write serves every client of
// an event loop's round (see loop.flushSyncing).
func (s *Server) syncWrites() bool { return s.store != nil }

// flushAll empties the keyspace, and the store with it, and tells the replicas (FLUSHALL).
func (s *Server) flushAll() error { return s.repl.Flush(s.flushLocal) }

// flushLocal empties the keyspace and the store.
func (s *Server) flushLocal() error {
	if s.store == nil {
		s.ks.Flush()
		return nil
	}
	return s.store.FlushAll()
}

// appendFsync is appendfsync's current value.
func (s *Server) appendFsync() string {
	if s.store == nil {
		return s.cfg.AppendFsync
	}
	return s.store.Fsync().String()
}

// infoPersistence is INFO's persistence section: Redis's fields, where "save" means a
// sync of every change written before it, plus the store's own.
func (s *Server) infoPersistence() [][2]string {
	if s.store == nil {
		return [][2]string{
			{"loading", "0"},
			{"async_loading", "0"},
			{"rdb_changes_since_last_save", "0"},
			{"rdb_bgsave_in_progress", "0"},
			{"rdb_last_save_time", itoa(s.lastSave.Load())},
			{"rdb_last_bgsave_status", "ok"},
			{"aof_enabled", "0"},
			{"aof_rewrite_in_progress", "0"},
			{"aof_last_write_status", "ok"},
		}
	}
	in := s.store.Info()
	status := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "err"
	}
	out := [][2]string{
		{"loading", "0"}, // loading happens before the server accepts anyone
		{"async_loading", "0"},
		{"rdb_changes_since_last_save", itoa(in.Changes)},
		{"rdb_bgsave_in_progress", boolInt(in.SaveWanted)},
		{"rdb_last_save_time", itoa(in.LastSave.Unix())},
		{"rdb_last_bgsave_status", status(in.LastSaveOK)},
		{"aof_enabled", "1"},
		{"aof_fsync", in.Fsync.String()},
		{"aof_rewrite_in_progress", "0"},
		{"aof_rewrites", itoa(in.Rewrites)},
		{"aof_last_write_status", status(in.WriteOK)},
	}
	if !in.WriteOK {
		out = append(out,
			[2]string{"aof_last_write_error", in.WriteError},
			[2]string{"aof_failing_since", itoa(in.FailingSince.Unix())})
	}
	return append(out,
		[2]string{"aof_write_retries", itoa(in.Retries)},
		[2]string{"aof_current_size", itoa(in.DiskBytes)},
		[2]string{"aof_batches", itoa(in.Batches)},
		[2]string{"aof_syncs", itoa(in.Syncs)},
		[2]string{"aof_keys_written", itoa(in.KeysWritten)},
		[2]string{"aof_keys_deleted", itoa(in.KeysDeleted)},
		[2]string{"aof_loaded_keys", strconv.Itoa(in.LoadedKeys)},
		[2]string{"aof_loaded_expired_keys", strconv.Itoa(in.ExpiredAtLoad)},
		[2]string{"aof_loaded_redo_records", itoa(in.RedoRecords)},
		[2]string{"aof_loaded_redo_bytes", itoa(in.RedoBytes)},
		[2]string{"aof_load_time_ms", itoa(in.LoadTime.Milliseconds())},
		[2]string{"aof_last_load_status", in.Recovery.Status},
		[2]string{"aof_last_load_dropped_bytes", itoa(in.Recovery.Dropped)},
		[2]string{"aof_last_load_dropped_file", in.Recovery.File},
		[2]string{"aof_last_load_dropped_offset", itoa(in.Recovery.Offset)},
		[2]string{"aof_dir", in.Dir},
	)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func boolInt(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// lastSaveTime is LASTSAVE's answer: the last sync of everything written before it, or
// the start with appendonly no.
func (s *Server) lastSaveTime() int64 {
	if s.store == nil {
		return s.lastSave.Load()
	}
	return s.store.Info().LastSave.Unix()
}
