package compat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	pebblerecord "github.com/cockroachdb/pebble/v2/record"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// launch runs the binary on dir and waits until it answers. Unlike start, it leaves the
// process's end to the test: kill -9, SIGTERM, or a kill at cleanup.
func launch(t *testing.T, dir string, args ...string) *process {
	t.Helper()
	return launchOn(t, freePort(t), dir, args...)
}

// launchOn is launch on a given port.
func launchOn(t *testing.T, port int, dir string, args ...string) *process {
	t.Helper()
	p := &process{port: port, stderr: &lockedWriter{w: new(bytes.Buffer)}, exited: make(chan error, 1)}
	p.cmd = exec.Command(binary, append(args, "--port", strconv.Itoa(p.port), "--dir", dir)...)
	p.cmd.Stderr = p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() { p.cmd.Process.Kill() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
		if err == nil {
			c.Close()
			return p
		}
		select {
		case err := <-p.exited:
			t.Fatalf("throttled exited: %v\n%s", err, p.stderr)
		default:
		}
		require.True(t, time.Now().Before(deadline), "throttled did not start:\n%s", p.stderr)
		time.Sleep(10 * time.Millisecond)
	}
}

// lockedWriter lets the test read stderr while the process writes it.
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// kill9 kills p at once, as a crash would, and waits until it is gone.
func (p *process) kill9(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("throttled survived kill -9")
	}
}

// stop sends SIGTERM and requires a clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-p.exited:
		require.NoError(t, err, "exit after SIGTERM:\n%s", p.stderr)
	case <-time.After(20 * time.Second):
		t.Fatal("throttled did not stop on SIGTERM")
	}
}

func (p *process) client() *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: fmt.Sprintf("127.0.0.1:%d", p.port), Protocol: 2, MaxRetries: -1, PoolSize: 8,
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: time.Second,
	})
}

// The crash tests' limit: 100000 admissions a day per key, so that nothing refills during
// a test and the units a key has used are exactly limit - remaining.
const (
	crashKeys  = 200
	crashLimit = 100000
)

func crashKey(i int) string { return "crash:" + strconv.Itoa(i) }

// used reads how many units each key has used, with COST 0 probes that change nothing.
func used(t *testing.T, rdb *redis.Client) []int64 {
	t.Helper()
	out := make([]int64, crashKeys)
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, crashKeys)
	for i := range cmds {
		cmds[i] = pipe.Do(context.Background(), "THROTTLE", crashKey(i), crashLimit-1, 1, "1d", "COST", 0)
	}
	_, err := pipe.Exec(context.Background())
	require.NoError(t, err)
	for i, c := range cmds {
		d, err := c.Slice()
		require.NoError(t, err)
		out[i] = crashLimit - d[2].(int64)
	}
	return out
}

// acks are the admissions one load run saw acknowledged, per key, in the order their
// replies came, and how many requests it sent per key.
type acks struct {
	mu   sync.Mutex
	at   [crashKeys][]time.Time
	sent [crashKeys]int64
}

// load sends THROTTLE requests on random keys from 8 connections until ctx ends or the
// server dies, and records every admission acknowledged.
func load(ctx context.Context, rdb *redis.Client, a *acks) {
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for ctx.Err() == nil {
				k := r.IntN(crashKeys)
				a.mu.Lock()
				a.sent[k]++
				a.mu.Unlock()
				d, err := rdb.Do(ctx, "THROTTLE", crashKey(k), crashLimit-1, 1, "1d").Slice()
				if err != nil {
					return // killed
				}
				if d[0].(int64) == 0 {
					now := time.Now()
					a.mu.Lock()
					a.at[k] = append(a.at[k], now)
					a.mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
}

// crashCycles kills the server under load and restarts it, cycles times, and checks after
// each restart that the state lost at most the admissions acknowledged in the last
// maxLoss before the kill (none for 0). It returns the longest loss seen.
func crashCycles(t *testing.T, fsync string, cycles int, loadFor func() time.Duration, maxLoss time.Duration) time.Duration {
	dir := t.TempDir()
	p := launch(t, dir, "--appendfsync", fsync)
	rdb := p.client()
	before := used(t, rdb)
	var worst time.Duration
	total := 0
	for cycle := range cycles {
		a := &acks{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { load(ctx, rdb, a); close(done) }()
		time.Sleep(loadFor())
		p.kill9(t)
		killed := time.Now()
		<-done
		cancel()
		rdb.Close()

		p = launch(t, dir, "--appendfsync", fsync)
		rdb = p.client()
		after := used(t, rdb)
		for k := range crashKeys {
			acked := int64(len(a.at[k]))
			total += len(a.at[k])
			kept := after[k] - before[k]
			require.LessOrEqual(t, kept, a.sent[k], "cycle %d key %d: more admissions than requests", cycle, k)
			lost := acked - kept
			if lost <= 0 {
				continue
			}
			// The lost admissions of a key are its last ones: the state on disk is an
			// earlier state of the key.
			window := killed.Sub(a.at[k][acked-lost])
			worst = max(worst, window)
			require.LessOrEqual(t, window, maxLoss,
				"cycle %d key %d: %d acknowledged admissions forgotten, from %v before the kill", cycle, k, lost, window)
		}
		before = after
	}
	t.Logf("appendfsync %s: %d cycles, %d acknowledged admissions, longest loss %v", fsync, cycles, total, worst)
	require.Greater(t, total, cycles*100, "the load ran")
	p.stop(t)
	rdb.Close()
	// A clean stop keeps everything.
	p = launch(t, dir, "--appendfsync", fsync)
	rdb = p.client()
	defer rdb.Close()
	require.Equal(t, before, used(t, rdb))
	p.stop(t)
	return worst
}

// TestCrashAlways: with appendfsync always, no admission a client saw acknowledged is
// forgotten, however often the server is killed.
func TestCrashAlways(t *testing.T) {
	worst := crashCycles(t, "always", 15, func() time.Duration {
		return time.Duration(100+rand.IntN(300)) * time.Millisecond
	}, 0)
	require.Zero(t, worst)
}

// TestCrashEverysec: with appendfsync everysec too, no admission a client saw acknowledged
// is forgotten by a kill: the reply left once the change was in the log file.
func TestCrashEverysec(t *testing.T) {
	worst := crashCycles(t, "everysec", 8, func() time.Duration {
		return time.Duration(300+rand.IntN(1200)) * time.Millisecond
	}, 0)
	require.Zero(t, worst)
}

// incrLoad sends INCR on random keys of n from several connections until the server dies,
// and returns the highest value each key's acknowledged replies reached.
func incrLoad(rdb *redis.Client, n int) (acked []int64, total int64) {
	var mu sync.Mutex
	acked = make([]int64, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for {
				k := r.IntN(n)
				v, err := rdb.Incr(context.Background(), "incr:"+strconv.Itoa(k)).Result()
				if err != nil {
					return // killed
				}
				mu.Lock()
				acked[k] = max(acked[k], v)
				total++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return acked, total
}

// TestCrashIncr: with appendfsync everysec (the default) and no, kill -9 under INCR load
// loses no acknowledged INCR: a reply leaves only once its change is in the log file, as
// Redis writes its AOF before it replies. Only a machine crash may lose what was not synced.
func TestCrashIncr(t *testing.T) {
	for _, fsync := range []string{"everysec", "no"} {
		t.Run(fsync, func(t *testing.T) { crashIncr(t, fsync) })
	}
}

func crashIncr(t *testing.T, fsync string) {
	const keys = 50
	dir := t.TempDir()
	var lost, total int64
	for cycle := range 4 {
		p := launch(t, dir, "--appendfsync", fsync)
		rdb := p.client()
		done := make(chan struct{})
		var acked []int64
		var n int64
		go func() { acked, n = incrLoad(rdb, keys); close(done) }()
		time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
		p.kill9(t)
		<-done
		rdb.Close()
		total += n

		p = launch(t, dir, "--appendfsync", fsync)
		rdb = p.client()
		for k, want := range acked {
			got, err := rdb.Get(context.Background(), "incr:"+strconv.Itoa(k)).Int64()
			if errors.Is(err, redis.Nil) {
				got, err = 0, nil
			}
			require.NoError(t, err)
			if got < want {
				t.Logf("cycle %d: incr:%d is %d after the restart, %d was acknowledged", cycle, k, got, want)
				lost += want - got
			}
		}
		rdb.Close()
		p.kill9(t)
	}
	t.Logf("%d acknowledged INCRs, %d lost", total, lost)
	require.Greater(t, total, int64(1000), "the load ran")
	require.Zero(t, lost, "acknowledged INCRs lost to kill -9")
}

// TestCorruptLogRefused: a byte flipped in a record of the write-ahead logs after a kill -9,
// with a record after it, stops the next start with the file and the offset, changing
// nothing; with aof-load-broken the server starts with the batches before the bad one and
// says so. The keys are written in three phases, each ended by a SAVE, so that the record
// flipped, the last but one, comes after the whole first phase however the server groups its
// writes.
func TestCorruptLogRefused(t *testing.T) {
	const phase = 1000
	dir := t.TempDir()
	p := launch(t, dir)
	rdb := p.client()
	for i := range 3 * phase {
		require.NoError(t, rdb.Set(context.Background(), "k"+strconv.Itoa(i), "v", 0).Err())
		if i%phase == phase-1 {
			// A batch of its own in Pebble's log, synced: with everysec the writer would
			// leave the phase in the redo log for up to ten seconds.
			require.NoError(t, rdb.Do(context.Background(), "SAVE").Err())
		}
	}
	p.kill9(t)
	rdb.Close()
	file, off := lastButOneRecord(t, dir)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	b[off] ^= 0x20 // the chunk's checksum
	require.NoError(t, os.WriteFile(file, b, 0o644))

	sums := checksums(t, dir)
	out := runToExit(t, dir)
	require.Contains(t, out, fmt.Sprintf("%s is corrupt at offset %d ", file, off))
	require.Contains(t, out, "aof-load-broken")
	require.Equal(t, sums, checksums(t, dir), "nothing deleted, added or rewritten")

	p = launch(t, dir, "--aof-load-broken", "yes", "--aof-load-broken-max-size", "64mb")
	info := p.cli(t, "INFO", "persistence")
	require.Contains(t, info, "aof_last_load_status:broken")
	require.Contains(t, info, "aof_last_load_dropped_file:"+filepath.Base(file))
	require.Contains(t, p.stderr.String(), "dropping the corrupt end of the logs")
	n, err := strconv.Atoi(p.cli(t, "DBSIZE"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, phase, "the first phase, written before the bad record, is kept")
	require.Less(t, n, 3*phase, "the last record is dropped")
	p.stop(t)
}

// lastButOneRecord returns the log in dir holding the last record but one of all the logs,
// and that record's offset in it.
func lastButOneRecord(t *testing.T, dir string) (string, int64) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err) // the names are zero-padded numbers: oldest first
	type at struct {
		file string
		off  int64
	}
	var records []at
	for _, l := range logs {
		num, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(l), ".log"), 10, 64)
		require.NoError(t, err)
		f, err := os.Open(l)
		require.NoError(t, err)
		r := pebblerecord.NewReader(f, logNum(pebblerecord.NewReader, num))
		for {
			off := r.Offset()
			rec, err := r.Next()
			if err == nil {
				_, err = io.Copy(io.Discard, rec)
			}
			if err != nil {
				break // the log's end
			}
			records = append(records, at{l, off})
		}
		f.Close()
	}
	require.GreaterOrEqual(t, len(records), 3, "a record for each phase at least")
	r := records[len(records)-2]
	return r.file, r.off
}

// logNum converts n to the type of newReader's log number, which lives in one of Pebble's
// internal packages.
func logNum[T ~uint64](newReader func(io.Reader, T) *pebblerecord.Reader, n uint64) T { return T(n) }

// runToExit runs the binary on dir, which must refuse to start, and returns its output.
func runToExit(t *testing.T, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "--port", strconv.Itoa(freePort(t)), "--dir", dir).CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "throttled started on %s:\n%s", dir, out)
	require.NotEqual(t, 0, exit.ExitCode())
	return string(out)
}

// checksums maps every file under dir to a checksum of its contents.
func checksums(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[path] = fmt.Sprintf("%x", sha256.Sum256(b))
		return nil
	}))
	return out
}

func TestDamagedDirectoryRefused(t *testing.T) {
	dir := t.TempDir()
	p := launch(t, dir)
	p.cli(t, "SET", "a", "1")
	p.cli(t, "THROTTLE", "b", "5", "10", "1m")
	p.stop(t)
	manifests, err := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	require.NoError(t, err)
	require.NotEmpty(t, manifests)
	for _, m := range manifests {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		for i := 8; i < len(b); i += 16 {
			b[i] ^= 0x5a
		}
		require.NoError(t, os.WriteFile(m, b, 0o644))
	}
	sums := checksums(t, dir)
	out := runToExit(t, dir)
	require.Contains(t, out, "data directory is damaged: "+dir)
	require.Contains(t, out, "nothing in it was changed")
	require.Equal(t, sums, checksums(t, dir), "nothing deleted, added or rewritten")
}

func TestForeignDirectoryRefused(t *testing.T) {
	t.Run("files", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "report.csv"), []byte("a,b\n"), 0o644))
		require.NoError(t, os.Mkdir(filepath.Join(dir, "photos"), 0o755))
		sums := checksums(t, dir)
		out := runToExit(t, dir)
		require.Contains(t, out, "not a throttled data directory: "+dir)
		require.Contains(t, out, `"report.csv"`)
		require.Equal(t, sums, checksums(t, dir))
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 2, "nothing added")
	})
	t.Run("another pebble store", func(t *testing.T) {
		dir := t.TempDir()
		db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
		require.NoError(t, err)
		require.NoError(t, db.Set([]byte("someone else's"), []byte("data"), pebble.Sync))
		require.NoError(t, db.Close())
		sums := checksums(t, dir)
		out := runToExit(t, dir)
		require.Contains(t, out, "holds a Pebble store without throttled's marker")
		require.Equal(t, sums, checksums(t, dir))
	})
}

// TestStateSurvivesRestart: the plain case, through the binary.
func TestStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	p := launch(t, dir)
	require.Equal(t, "OK", p.cli(t, "SET", "greeting", "hello", "EX", "1000"))
	p.cli(t, "THROTTLE", "login", "2", "10", "1h")
	p.stop(t)
	p = launch(t, dir)
	require.Equal(t, "hello", p.cli(t, "GET", "greeting"))
	ttl, err := strconv.Atoi(p.cli(t, "TTL", "greeting"))
	require.NoError(t, err)
	require.InDelta(t, 1000, ttl, 5)
	require.Equal(t, "0\n3\n1\n-1", strings.Join(strings.Fields(p.cli(t, "THROTTLE", "login", "2", "10", "1h"))[:4], "\n"))
	require.Contains(t, p.cli(t, "INFO", "persistence"), "aof_loaded_keys:2")
	p.stop(t)
}

// quietLogger keeps Pebble's own logs out of the test output.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Errorf(string, ...any)          {}
func (quietLogger) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
