package persistence

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"strings"

	pebblerecord "github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Before Pebble opens the store, checkLogs reads every write-ahead log itself. Pebble stops
// replaying a log at the first record it cannot read and, unless a later chunk proves the
// log was synced past it, takes that for the log's end: a byte flipped in the middle of the
// newest log then silently dropped every batch after it. checkLogs tells the two cases
// apart, and what is dropped is never silent:
//
//   - a torn tail: the newest log ends with bytes that are not a whole record, and no
//     record of the log follows them. A crash of the machine leaves that (a process crash
//     cannot: every acknowledged batch was written whole). The torn bytes are cut off and
//     the store opens, as Redis loads an AOF with a truncated tail (aof-load-truncated
//     yes, the default); with aof-load-truncated no, Open refuses.
//   - corruption: a record that cannot be read with records of the same log after it (or
//     the log's end-of-log trailer), or any unreadable record in a log that is not the
//     newest. Open refuses, naming the file and the offset, unless aof-load-broken is on
//     and what would be dropped (from the bad record to the end of the logs) is at most
//     aof-load-broken-max-size: then the log is cut at the bad record, the later logs are
//     removed, and the store opens with the changes written before it, as Redis's
//     aof-load-broken truncates a broken AOF.
//
// Either way the log (Store.Info's Recovery, INFO persistence) says what was dropped.
// Cutting a log at a record boundary leaves a log Pebble reads to its end without error.

// Recovery says what the last Open dropped from the logs.
type Recovery struct {
	Status  string // "ok", "truncated" (a torn tail) or "broken" (corruption, aof-load-broken)
	File    string // the log cut; empty when nothing was dropped
	Offset  int64  // where it was cut
	Dropped int64  // bytes dropped, from the cut to the end of the logs
}

// Salvage says what Open may drop from damaged logs: Redis's AOF loading options.
type Salvage struct {
	// RefuseTruncated refuses a torn tail of the newest log (aof-load-truncated no).
	RefuseTruncated bool
	// Broken lets Open drop a corrupt part of the logs (aof-load-broken yes) ...
	Broken bool
	// BrokenMaxSize ... of at most this many bytes (aof-load-broken-max-size).
	BrokenMaxSize int64
}

// ErrCorrupt is returned, wrapped with the file and the offset, for a log that cannot be read
// to its end and may not be salvaged.
var ErrCorrupt = errors.New("persistence: corrupt write-ahead log")

// logFile is one numbered log in the directory: a write-ahead log (its number) or a redo
// file (its generation).
type logFile struct {
	name string
	num  uint64
	size int64
}

// listLogs returns dir's write-ahead logs, oldest first.
func listLogs(fs vfs.FS, dir string) ([]logFile, error) {
	return listNumbered(fs, dir, func(name string) (uint64, bool) {
		num, err := strconv.ParseUint(strings.TrimSuffix(name, ".log"), 10, 64)
		return num, isLog(name) && err == nil
	})
}

// listNumbered returns the files of dir to which number gives a number, in its order.
func listNumbered(fs vfs.FS, dir string, number func(name string) (uint64, bool)) ([]logFile, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	var logs []logFile
	for _, n := range names {
		num, ok := number(n)
		if !ok {
			continue
		}
		info, err := fs.Stat(fs.PathJoin(dir, n))
		if err != nil {
			return nil, err
		}
		logs = append(logs, logFile{name: n, num: num, size: info.Size()})
	}
	slices.SortFunc(logs, func(a, b logFile) int { return cmp.Compare(a.num, b.num) })
	return logs, nil
}

// damage is where a log stops being readable.
type damage struct {
	end     int64 // the end of the last whole record: where the log would be cut
	records int   // whole records before it
	later   bool  // a record of the log, or its end-of-log trailer, follows the damage
	torn    int64 // bytes after end that are not zeros or another log's (a recycled file's) chunks
}

// checkLogs reads every log in dir and handles what it finds as the package comment above
// says. It changes files only to salvage.
func (s *Store) checkLogs(fs vfs.FS, sv Salvage) error {
	logs, err := listLogs(fs, s.dir)
	if err != nil {
		return fmt.Errorf("persistence: %s: %w", s.dir, err)
	}
	s.recovery = Recovery{Status: "ok"}
	for i, l := range logs {
		path := fs.PathJoin(s.dir, l.name)
		d, err := scanLog(fs, path, l.num, l.size)
		if err != nil {
			return fmt.Errorf("persistence: read %s: %w", path, err)
		}
		if d == nil {
			continue
		}
		newest := i == len(logs)-1
		dropped := l.size - d.end
		for _, later := range logs[i+1:] {
			dropped += later.size
		}
		if newest && !d.later {
			if d.torn == 0 {
				continue // the log just ends there: zeros, or an older log's chunks in a recycled file
			}
			if sv.RefuseTruncated {
				return fmt.Errorf("%w: %s is torn at offset %d after %d records (%d bytes after it; aof-load-truncated no): %s",
					ErrCorrupt, path, d.end, d.records, d.torn, untouched)
			}
			s.log.Warn("persistence: the newest log ends with a torn write, as a machine crash leaves; dropping it (aof-load-truncated yes)",
				"file", path, "offset", d.end, "records_kept", d.records, "bytes_dropped", d.torn)
			s.recovery = Recovery{Status: "truncated", File: l.name, Offset: d.end, Dropped: d.torn}
			return cutLogs(fs, s.dir, path, d.end, nil)
		}
		what := fmt.Sprintf("%s is corrupt at offset %d after %d records, with %d bytes of the logs after it", path, d.end, d.records, dropped)
		if !sv.Broken || dropped > sv.BrokenMaxSize {
			return fmt.Errorf("%w: %s; %s (aof-load-broken with a large enough aof-load-broken-max-size drops them)", ErrCorrupt, what, untouched)
		}
		s.log.Warn("persistence: dropping the corrupt end of the logs (aof-load-broken yes)",
			"file", path, "offset", d.end, "records_kept", d.records, "bytes_dropped", dropped, "logs_removed", len(logs)-i-1)
		s.recovery = Recovery{Status: "broken", File: l.name, Offset: d.end, Dropped: dropped}
		return cutLogs(fs, s.dir, path, d.end, logs[i+1:])
	}
	return nil
}

// cutLogs cuts the log at path to its first off bytes and removes the later logs. The cut
// log is written anew and renamed over the old one (vfs has no truncate), so that a crash
// meanwhile leaves one or the other.
func cutLogs(fs vfs.FS, dir, path string, off int64, later []logFile) error {
	err := func() error {
		old, err := fs.Open(path)
		if err != nil {
			return err
		}
		head := make([]byte, off)
		_, err = old.ReadAt(head, 0)
		old.Close()
		if err != nil {
			return err
		}
		tmp := path + ".cut"
		f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		_, err = f.Write(head)
		if err == nil {
			err = f.Sync()
		}
		if err = errors.Join(err, f.Close()); err != nil {
			return err
		}
		return fs.Rename(tmp, path)
	}()
	for _, l := range later {
		err = errors.Join(err, fs.Remove(fs.PathJoin(dir, l.name)))
	}
	if err != nil {
		return fmt.Errorf("persistence: cut %s at %d: %w", path, off, err)
	}
	return nil
}

// scanLog reads the log at path, number num, with Pebble's record reader, and returns nil
// when every record reads whole to its end.
func scanLog(fs vfs.FS, path string, num uint64, size int64) (*damage, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := pebblerecord.NewReader(f, fileNum(pebblerecord.NewReader, num))
	d := &damage{}
	for {
		d.end = r.Offset()
		rec, err := r.Next()
		if err == nil {
			_, err = io.Copy(io.Discard, rec)
		}
		if err == io.EOF {
			return nil, nil
		}
		if err != nil && !errors.Is(err, pebblerecord.ErrUnexpectedEOF) && !errors.Is(err, pebblerecord.ErrInvalidChunk) &&
			!errors.Is(err, pebblerecord.ErrZeroedChunk) {
			return nil, err
		}
		if err != nil {
			break
		}
		d.records++
	}
	if d.end >= size {
		return nil, nil
	}
	tail := make([]byte, size-d.end)
	if _, err := f.ReadAt(tail, d.end); err != nil && err != io.EOF {
		return nil, err
	}
	d.later, d.torn = scanTail(tail, d.end, uint32(num))
	return d, nil
}

// fileNum converts n to the type of newReader's file number, which lives in one of Pebble's
// internal packages and cannot be named here.
func fileNum[T ~uint64](newReader func(io.Reader, T) *pebblerecord.Reader, n uint64) T { return T(n) }

// The chunk format of Pebble's logs (record package): 32 KiB blocks of chunks, each a header
// (a masked CRC-32C of the rest of the chunk, the payload's length, its type, and from the
// recyclable formats on the log's number, and with the sync format a synced offset) and the
// payload. A block's end too short for a header is zeros.
const (
	blockSize      = 32 << 10
	legacyHeader   = 7
	recyclableHead = 11
	syncHeader     = 19
)

// scanTail looks at a log's bytes after its last whole record (tail, at offset off in the
// file) for evidence that the log went on: a whole first or full chunk of log num, or its
// end-of-log trailer (a chunk of log num+1), once a chunk that does not read has been
// passed. It also counts the bytes that are neither zeros nor whole chunks of another log.
func scanTail(tail []byte, off int64, num uint32) (later bool, torn int64) {
	bad := false
	for p := 0; p < len(tail); {
		blockEnd := min(len(tail), p+int(blockSize-(off+int64(p))%blockSize))
		h, n, ok := chunkAt(tail[p:blockEnd])
		switch {
		case ok && h.num == num:
			if bad && (h.pos == 1 || h.pos == 2) {
				return true, torn
			}
			if !bad {
				torn += int64(n) // part of the record that did not read whole
			}
			p += n
		case ok && h.num == num+1:
			if bad {
				return true, torn
			}
			p += n
		case ok:
			p += n // a chunk of the log that used the file before (recycling)
		case allZero(tail[p:blockEnd]):
			p = blockEnd
		default:
			// Past a chunk that does not read: by the length its header gives, when that
			// fits (a flip in its payload), else a byte at a time, to the next chunk.
			bad = true
			if n = plausible(tail[p:blockEnd]); n == 0 {
				n = 1
			}
			torn += int64(n)
			p += n
		}
	}
	return false, torn
}

// plausible returns the length of the chunk whose header starts b, if its header reads and
// the chunk fits in b, else 0.
func plausible(b []byte) int {
	if len(b) < legacyHeader || b[6] == 0 || b[6] > 12 {
		return 0
	}
	n := headerLen(b[6]) + int(binary.LittleEndian.Uint16(b[4:6]))
	if n > len(b) {
		return 0
	}
	return n
}

// headerLen is the length of the header of a chunk of type typ (1 to 12).
func headerLen(typ byte) int {
	switch {
	case typ > 8:
		return syncHeader
	case typ > 4:
		return recyclableHead
	}
	return legacyHeader
}

// chunkHeader is what scanTail needs of a chunk's header.
type chunkHeader struct {
	pos int    // 1 full, 2 first, 3 middle, 4 last
	num uint32 // the log's number; 0 in the legacy format
}

// chunkAt reads the chunk at the start of b, the rest of a block: its header and its whole
// length, and whether its checksum holds.
func chunkAt(b []byte) (chunkHeader, int, bool) {
	if len(b) < legacyHeader {
		return chunkHeader{}, 0, false
	}
	typ := b[6]
	if typ == 0 || typ > 12 {
		return chunkHeader{}, 0, false
	}
	hlen := headerLen(typ)
	if len(b) < hlen {
		return chunkHeader{}, 0, false
	}
	n := hlen + int(binary.LittleEndian.Uint16(b[4:6]))
	if n > len(b) || binary.LittleEndian.Uint32(b[0:4]) != maskedCRC(b[6:n]) {
		return chunkHeader{}, 0, false
	}
	h := chunkHeader{pos: int(typ-1)%4 + 1}
	if hlen > legacyHeader {
		h.num = binary.LittleEndian.Uint32(b[7:11])
	}
	return h, n, true
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is the checksum of Pebble's chunks (LevelDB's masked CRC-32C).
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
