// Package persistence keeps the keyspace durable in a Pebble store, so that a restart,
// even after kill -9, never hands out fresh quotas.
//
// The keyspace in memory stays the source of truth for every answer; this package only
// records it. A change's path: a command changes a key under its shard's lock, and the
// keyspace's change tracking queues the key (once, however often it changes) or logs its
// deletion. The writer goroutine (Store.run) wakes every interval (100 ms, more under
// load, at most a second; with everysec it writes a batch far less often, see below), or at
// once when a client waits for a sync, drains every shard
// (deletions, then the latest state of each changed key) into one Pebble batch and
// commits it: one write per changed key per batch, whatever the number of connections
// (group commit). Every batch is committed with a Pebble sync that walFS turns into a
// plain write unless a real one is due.
//
// A client that changed state gets its replies only once its change is written to a file
// (Store.Wait; the server waits once per event-loop round), as Redis writes its AOF before
// it replies: kill -9 loses nothing acknowledged. With everysec and no that file is the
// redo log (redo.go), not Pebble: at the end of a round, the changes made since the last
// flush (the keyspace's RedoFeed, which logs each in order) are appended to it as one
// record with one write(2), and one flush serves every event loop waiting. Pebble's batches keep merging a
// hot key's changes over the interval. The ordering rule: a batch that rotates the redo log
// (a synced one, or any with appendfsync no) switches to a new file under redoMu before it
// drains any shard, and stores the new file's generation with its last piece; once
// committed, the older files are removed. Loading replays, after the store, only the files
// of that generation on, in order: a key with no record there was drained by the batch
// after its last acknowledged change (whose flush wrote to an older file), and a key with
// records ends at its last one, drained after every change acknowledged before it, so no
// key goes back past a state a client was answered for (redo.go). The fsync choice (Redis's
// appendfsync) says which batches are synced:
//
//   - always: every batch, and the replies wait for the sync as well as the redo log's
//     write; one sync serves every client waiting.
//   - everysec (default): the redo log is synced once a second, as Redis syncs its AOF, and
//     Pebble gets a batch (synced, rotating the redo log) only once the redo log holds
//     redoBatchBytes or redoBatchEvery after the last one: a machine crash loses at most
//     about a second, and Pebble writes a key changing all the time once in ten seconds,
//     not every second.
//   - no: never; the operating system writes back when it likes.
//
// Open reads the write-ahead logs before Pebble replays them (walcheck.go): a torn tail of
// the newest log is cut off and logged, corruption refuses to start with the file and the
// offset unless Options.Salvage allows dropping it (Redis's aof-load-truncated and
// aof-load-broken). The redo files are read the same way before the store is opened for
// writing (checkRedo), and replayed into the keyspace after it is loaded, marked changed so
// that the next batch writes them.
//
// The store holds a marker key (the format version) and one key per live key: 'k' and the
// user key, and a small versioned encoding of Kind, Expire, Num, Num2 and Bytes (codec.go).
// Deleted and expired keys are deleted from the store too, and FLUSHALL deletes the
// range, so the directory's size follows the live keys. An expiry is a wall-clock time,
// so a TTL keeps counting while the server is down; Open drops what expired meanwhile.
//
// Open refuses, before writing anything, a directory that is not throttled's (files that
// are not a Pebble store, or a Pebble store without the marker) and a store that Pebble
// cannot open or read (a damaged MANIFEST): it looks at an existing store read-only first,
// loads it from there, and only then opens it for writing. Pebble never creates a store
// where one is expected, so nothing is "repaired" away.
//
// A disk that fills or turns read-only does not stop the server: Pebble's writes go
// through retryFS, which holds a failed write and retries it until the disk works again,
// while Info and the log say so. Changes made meanwhile wait in the keyspace's tracking
// (a shard whose log of deletions overflows asks for a full rewrite instead) and are
// written, in order, once the disk is back; clients waiting for a sync get their replies
// without it.
//
// Pebble v2 rather than v1: v2 is the line CockroachDB ships and maintains (v1.1 gets only
// critical fixes), new stores get its current on-disk format, and a new project has no v1
// stores to stay compatible with. Its cost here: it builds zstd with cgo when cgo is on.
package persistence
