package persistence

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// retryFS is the file system Pebble writes through. Pebble treats a failed write to its
// log or MANIFEST as fatal (it cannot know what reached the disk, so it exits), which
// would turn a full disk into a crash. retryFS instead holds a write that failed because
// of the disk (full, read-only, quota, I/O error) and retries it with backoff until it
// succeeds, reporting the failure meanwhile: Pebble sees a slow disk, the writes queued
// behind stay in order, and the server goes on answering from memory. What was durable
// stays durable; nothing is dropped.
//
// The one caveat is an fsync that fails with EIO: some kernels then drop the dirty pages,
// so a later fsync may succeed without the data. retryFS retries it like the rest and
// reports it; such a disk needs an operator anyway.
type retryFS struct {
	vfs.FS
	failing atomic.Int64 // operations failing now
	retries atomic.Int64 // failed attempts in all
	onFail  func(op, name string, err error)
	onOK    func() // called when the last failing operation succeeded
}

func newRetryFS(fs vfs.FS, onFail func(op, name string, err error), onOK func()) *retryFS {
	return &retryFS{FS: fs, onFail: onFail, onOK: onOK}
}

// diskTrouble reports whether err is the disk's condition, which may pass, rather than a
// mistake in the call.
func diskTrouble(err error) bool {
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

const (
	firstBackoff = 10 * time.Millisecond
	maxBackoff   = time.Second
)

// retry runs f until it succeeds or fails with something other than disk trouble; err is
// what its first run returned.
func (fs *retryFS) retry(op, name string, err error, f func() error) error {
	fs.failing.Add(1)
	defer func() {
		if fs.failing.Add(-1) == 0 && fs.onOK != nil {
			fs.onOK()
		}
	}()
	for backoff := firstBackoff; ; backoff = min(2*backoff, maxBackoff) {
		fs.retries.Add(1)
		if fs.onFail != nil {
			fs.onFail(op, name, err)
		}
		time.Sleep(backoff)
		if err = f(); err == nil || !diskTrouble(err) {
			return err
		}
	}
}

func (fs *retryFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil && diskTrouble(err) {
		err = fs.retry("create", name, err, func() (err error) {
			f, err = fs.FS.Create(name, category)
			return err
		})
	}
	return fs.wrap(f, name), err
}

func (fs *retryFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	if err != nil && diskTrouble(err) {
		err = fs.retry("open", name, err, func() (err error) {
			f, err = fs.FS.OpenReadWrite(name, category, opts...)
			return err
		})
	}
	return fs.wrap(f, name), err
}

func (fs *retryFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	return fs.wrap(f, name), err
}

// ReuseForWrite is a rename and an open, each retried: a retried ReuseForWrite could find
// its old name gone.
func (fs *retryFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := fs.Rename(oldname, newname); err != nil {
		return nil, err
	}
	return fs.OpenReadWrite(newname, category)
}

func (fs *retryFS) Rename(oldname, newname string) error {
	err := fs.FS.Rename(oldname, newname)
	if err != nil && diskTrouble(err) {
		err = fs.retry("rename", oldname, err, func() error { return fs.FS.Rename(oldname, newname) })
	}
	return err
}

func (fs *retryFS) Link(oldname, newname string) error {
	err := fs.FS.Link(oldname, newname)
	if err != nil && diskTrouble(err) {
		err = fs.retry("link", oldname, err, func() error { return fs.FS.Link(oldname, newname) })
	}
	return err
}

func (fs *retryFS) MkdirAll(dir string, perm os.FileMode) error {
	err := fs.FS.MkdirAll(dir, perm)
	if err != nil && diskTrouble(err) {
		err = fs.retry("mkdir", dir, err, func() error { return fs.FS.MkdirAll(dir, perm) })
	}
	return err
}

// Unwrap returns the file system retryFS wraps.
func (fs *retryFS) Unwrap() vfs.FS { return fs.FS }

func (fs *retryFS) wrap(f vfs.File, name string) vfs.File {
	if f == nil {
		return nil
	}
	return &retryFile{File: f, fs: fs, name: name}
}

// retryFile retries the writes and syncs of one file.
type retryFile struct {
	vfs.File
	fs   *retryFS
	name string
}

func (f *retryFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if err != nil && diskTrouble(err) {
		// Write on: a short write moved the offset past what it wrote.
		err = f.fs.retry("write", f.name, err, func() error {
			m, err := f.File.Write(p[n:])
			n += m
			return err
		})
	}
	return n, err
}

func (f *retryFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	if err != nil && diskTrouble(err) {
		err = f.fs.retry("write", f.name, err, func() error {
			m, err := f.File.WriteAt(p[n:], off+int64(n))
			n += m
			return err
		})
	}
	return n, err
}

func (f *retryFile) Preallocate(offset, length int64) error {
	err := f.File.Preallocate(offset, length)
	if err != nil && diskTrouble(err) {
		err = f.fs.retry("preallocate", f.name, err, func() error { return f.File.Preallocate(offset, length) })
	}
	return err
}

func (f *retryFile) Sync() error {
	err := f.File.Sync()
	if err != nil && diskTrouble(err) {
		err = f.fs.retry("sync", f.name, err, f.File.Sync)
	}
	return err
}

func (f *retryFile) SyncData() error {
	err := f.File.SyncData()
	if err != nil && diskTrouble(err) {
		err = f.fs.retry("sync", f.name, err, f.File.SyncData)
	}
	return err
}

func (f *retryFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	if err != nil && diskTrouble(err) {
		err = f.fs.retry("sync", f.name, err, func() (err error) {
			full, err = f.File.SyncTo(length)
			return err
		})
	}
	return full, err
}
