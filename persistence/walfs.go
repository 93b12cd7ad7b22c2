package persistence

import (
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// walFS makes a sync of Pebble's write-ahead log a write, and the fsync a choice of the
// writer's. Every batch is committed with pebble.Sync, so that its commit returns only once
// Pebble's log writer has handed the batch's bytes to the operating system (write(2)); a
// commit without a sync would leave them in the log writer's buffer, which a kill -9 loses.
// The log file's Sync then does nothing unless the writer asked for a real one (realSync:
// appendfsync always, once a second with everysec, SAVE), as Redis writes its AOF before
// every reply and fsyncs it once a second.
//
// A log file with writes not yet synced is synced for real when Pebble closes it (it rotates
// the log when a memtable fills), so that a sync of the newest log covers the older ones too.
type walFS struct {
	vfs.FS
	realSync atomic.Bool // a log sync now is an fsync
}

// isLog reports whether name is a write-ahead log.
func isLog(name string) bool { return strings.HasSuffix(name, ".log") }

func (fs *walFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return fs.wrap(f, name), err
}

func (fs *walFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(f, newname), err
}

func (fs *walFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	return fs.wrap(f, name), err
}

// Unwrap returns the file system walFS wraps.
func (fs *walFS) Unwrap() vfs.FS { return fs.FS }

func (fs *walFS) wrap(f vfs.File, name string) vfs.File {
	if f == nil || !isLog(name) {
		return f
	}
	return &walFile{File: f, fs: fs}
}

// walFile is a log file whose syncs are fsyncs only when its walFS says so.
type walFile struct {
	vfs.File
	fs    *walFS
	dirty atomic.Bool // written since the last real sync
}

func (f *walFile) Write(p []byte) (int, error) {
	f.dirty.Store(true)
	return f.File.Write(p)
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	f.dirty.Store(true)
	return f.File.WriteAt(p, off)
}

func (f *walFile) Sync() error {
	if !f.fs.realSync.Load() {
		return nil
	}
	return f.sync()
}

func (f *walFile) SyncData() error { return f.Sync() }

func (f *walFile) SyncTo(length int64) (fullSync bool, err error) {
	if !f.fs.realSync.Load() {
		return false, nil
	}
	return true, f.sync()
}

// sync is a real one. dirty is cleared first: a write during the sync leaves it set.
func (f *walFile) sync() error {
	f.dirty.Store(false)
	if err := f.File.Sync(); err != nil {
		f.dirty.Store(true)
		return err
	}
	return nil
}

// Close syncs what skipped syncs left: the next real sync is of another file.
func (f *walFile) Close() error {
	if f.dirty.Load() {
		if err := f.sync(); err != nil {
			f.File.Close()
			return err
		}
	}
	return f.File.Close()
}
