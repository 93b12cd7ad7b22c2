package replication

// backlog is the end of the stream, kept so that a replica that lost its link for a while
// resumes where it stopped (a partial resync) instead of taking a full copy. It holds the
// bytes [start, end) of the stream: at least the last `keep` bytes (repl-backlog-size),
// and more while a connected replica has not been sent them yet, up to maxBacklog.
type backlog struct {
	buf   []byte
	start int64 // the offset of buf[0]
}

// maxBacklog bounds what the backlog holds for replicas that lag: past it the slowest are
// dropped (Redis's client-output-buffer-limit replica 256mb) and take a full copy.
const maxBacklog = 256 << 20

func (b *backlog) end() int64 { return b.start + int64(len(b.buf)) }

// covers reports whether the stream from offset off on is still held.
func (b *backlog) covers(off int64) bool { return off >= b.start && off <= b.end() }

// slice returns the held bytes from offset off on, at most max of them; valid until the
// next append or trim.
func (b *backlog) slice(off int64, max int) []byte {
	p := b.buf[off-b.start:]
	if len(p) > max {
		p = p[:max]
	}
	return p
}

// trim drops what is older than both the last keep bytes and need (the oldest offset a
// connected replica still waits for). It moves the bytes down only once the dead part is
// as large as the live one, so that appending stays amortized O(1).
func (b *backlog) trim(keep int64, need int64) {
	from := b.end() - keep
	if need < from {
		from = max(need, b.end()-maxBacklog)
	}
	if from <= b.start {
		return
	}
	dead := int(from - b.start)
	if dead < len(b.buf)-dead && cap(b.buf) < 2*maxBacklog {
		return
	}
	n := copy(b.buf, b.buf[dead:])
	b.buf = b.buf[:n]
	b.start = from
	if cap(b.buf) > 4*max(n, int(keep)) && cap(b.buf) > 1<<20 {
		b.buf = append([]byte(nil), b.buf...)
	}
}

// reset empties the backlog, which now starts at offset off.
func (b *backlog) reset(off int64) { b.buf, b.start = b.buf[:0], off }
