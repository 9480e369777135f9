package log

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/vfs"
)

// Files a Dir keeps at its top, named as in a Kafka log directory.
const (
	RecoveryPointFileName  = "recovery-point-offset-checkpoint"
	LogStartOffsetFileName = "log-start-offset-checkpoint"
	CleanShutdownFileName  = ".kafka_cleanshutdown"
	// CleanerOffsetFileName holds each compacted log's first dirty offset:
	// where the next Clean's dirty section starts.
	CleanerOffsetFileName = "cleaner-offset-checkpoint"
)

// ParseTopicPartition splits a partition directory name at its last dash.
// The topic must be a legal Kafka topic name.
func ParseTopicPartition(name string) (kafka.TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || !legalTopic(name[:i]) {
		return kafka.TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return kafka.TopicPartition{}, false
	}
	return kafka.TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// DirOptions configures a Dir. The zero value works.
type DirOptions struct {
	// FS is the filesystem. Nil means vfs.Default, the OS.
	FS vfs.FS
	// Logger receives reports. Nil discards them.
	Logger *slog.Logger
}

// Dir is a directory of partition logs, like one of Kafka's log.dirs: it
// holds the directory's lock, the recovery point and log start offset of
// every log (in Kafka's checkpoint files), and the clean-shutdown marker,
// and opens each log with them — so that a restart after Close scans no
// segment and one after a crash scans only what lies above each log's
// recovery point.
type Dir struct {
	fs     vfs.FS
	path   string
	logger *slog.Logger
	lock   io.Closer
	clean  bool

	mu sync.Mutex
	// recoveryPoints and logStartOffsets hold the checkpointed values of
	// the logs that are not open.
	recoveryPoints  map[string]int64
	logStartOffsets map[string]int64
	firstDirty      map[string]int64
	logs            map[string]*Log
	closed          bool
}

// OpenDir opens (creating if needed) and locks the log directory at dir. A
// second OpenDir of it, in this process or another, fails with ErrLocked.
func OpenDir(dir string, opts DirOptions) (*Dir, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Dir{fs: opts.FS, path: path.Clean(dir), logger: opts.Logger, logs: map[string]*Log{}}
	if err := vfs.MkdirAllDurable(d.fs, d.path, 0o755); err != nil {
		return nil, fmt.Errorf("log: create %s: %w", d.path, err)
	}
	lock, err := lockDir(d.fs, d.path)
	if err != nil {
		return nil, err
	}
	d.lock = lock
	if err := d.load(); err != nil {
		lock.Close()
		return nil, err
	}
	return d, nil
}

// load reads the checkpoints and consumes the clean-shutdown marker: from
// now on, until Close writes it again, a crash counts as unclean.
func (d *Dir) load() error {
	var err error
	d.recoveryPoints, err = readOffsetCheckpoint(d.fs, path.Join(d.path, RecoveryPointFileName))
	if err != nil {
		d.logger.Warn("ignoring recovery point checkpoint", "err", err)
		d.recoveryPoints = map[string]int64{}
	}
	d.logStartOffsets, err = readOffsetCheckpoint(d.fs, path.Join(d.path, LogStartOffsetFileName))
	if err != nil {
		d.logger.Warn("ignoring log start offset checkpoint", "err", err)
		d.logStartOffsets = map[string]int64{}
	}
	d.firstDirty, err = readOffsetCheckpoint(d.fs, path.Join(d.path, CleanerOffsetFileName))
	if err != nil {
		d.logger.Warn("ignoring cleaner offset checkpoint", "err", err)
		d.firstDirty = map[string]int64{}
	}
	marker := path.Join(d.path, CleanShutdownFileName)
	if _, err := d.fs.Stat(marker); err == nil {
		d.clean = true
		if err := d.fs.Remove(marker); err != nil {
			return fmt.Errorf("log: remove %s: %w", marker, err)
		}
		if err := d.fs.SyncDir(d.path); err != nil {
			return fmt.Errorf("log: sync directory %s: %w", d.path, err)
		}
	} else if !isNotExist(err) {
		return fmt.Errorf("log: stat %s: %w", marker, err)
	}
	return nil
}

// Path returns the directory.
func (d *Dir) Path() string { return d.path }

// WasClean reports whether the directory was closed cleanly before this
// OpenDir.
func (d *Dir) WasClean() bool { return d.clean }

// Partitions lists the partition directories present, sorted by name.
func (d *Dir) Partitions() ([]kafka.TopicPartition, error) {
	names, err := d.fs.List(d.path)
	if err != nil {
		return nil, fmt.Errorf("log: list %s: %w", d.path, err)
	}
	var out []kafka.TopicPartition
	for _, name := range names {
		if tp, ok := ParseTopicPartition(name); ok {
			if fi, err := d.fs.Stat(path.Join(d.path, name)); err == nil && fi.IsDir() {
				out = append(out, tp)
			}
		}
	}
	return out, nil
}

// Open opens the log of a partition, creating it if it does not exist. The
// Dir supplies FS, RecoveryPoint, CleanShutdown and LogStartOffset; the
// other options are the caller's.
func (d *Dir) Open(tp kafka.TopicPartition, opts Options) (*Log, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	name := tp.String()
	if _, ok := d.logs[name]; ok {
		return nil, fmt.Errorf("%w: %s is already open", ErrLocked, name)
	}
	rp, known := d.recoveryPoints[name]
	opts.FS = d.fs
	opts.RecoveryPoint = rp
	opts.CleanShutdown = d.clean && known
	if start, ok := d.logStartOffsets[name]; ok {
		opts.LogStartOffset = start
	}
	opts.FirstDirtyOffset = d.firstDirty[name]
	if opts.Logger == nil {
		opts.Logger = d.logger
	}
	l, err := Open(path.Join(d.path, name), opts)
	if err != nil {
		return nil, err
	}
	d.logs[name] = l
	return l, nil
}

// Remove closes a partition's log if it is open and deletes its directory.
func (d *Dir) Remove(tp kafka.TopicPartition) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := tp.String()
	if l, ok := d.logs[name]; ok {
		if err := l.Close(); err != nil {
			d.logger.Warn("closing removed log", "log", name, "err", err)
		}
		delete(d.logs, name)
	}
	delete(d.recoveryPoints, name)
	delete(d.logStartOffsets, name)
	delete(d.firstDirty, name)
	if err := d.fs.RemoveAll(path.Join(d.path, name)); err != nil {
		return fmt.Errorf("log: remove %s: %w", name, err)
	}
	if err := d.fs.SyncDir(d.path); err != nil {
		return fmt.Errorf("log: sync directory %s: %w", d.path, err)
	}
	return d.checkpointLocked()
}

// Checkpoint writes every log's recovery point and log start offset, so
// that a crash scans less. Call it from time to time (Kafka does every
// minute); Close calls it.
func (d *Dir) Checkpoint() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	return d.checkpointLocked()
}

func (d *Dir) checkpointLocked() error {
	rps := maps(d.recoveryPoints)
	starts := maps(d.logStartOffsets)
	dirty := maps(d.firstDirty)
	for name, l := range d.logs {
		rps[name] = l.RecoveryPoint()
		starts[name] = l.LogStartOffset()
		if l.options().CleanupPolicy.Compacts() {
			dirty[name] = l.FirstDirtyOffset()
		}
	}
	if len(dirty) > 0 {
		if err := writeOffsetCheckpoint(d.fs, path.Join(d.path, CleanerOffsetFileName), dirty); err != nil {
			return err
		}
	}
	if err := writeOffsetCheckpoint(d.fs, path.Join(d.path, RecoveryPointFileName), rps); err != nil {
		return err
	}
	return writeOffsetCheckpoint(d.fs, path.Join(d.path, LogStartOffsetFileName), starts)
}

// Close closes every open log and, if all of them flushed, writes the
// checkpoints and — unless a log had failed (Log.Err) — the clean-shutdown
// marker, then releases the directory.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	failed := false
	for name, l := range d.logs {
		if err := l.Err(); err != nil {
			// Its tail may hold what a failed write or sync left: the
			// next open must scan it.
			d.logger.Warn("not marking the shutdown clean: a log failed", "log", name, "err", err)
			failed = true
		}
		if err := l.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", name, err))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, d.checkpointLocked())
	}
	if len(errs) == 1 && errs[0] == nil && !failed {
		errs = append(errs, d.writeCleanMarker())
	}
	errs = append(errs, d.lock.Close())
	return errors.Join(errs...)
}

func (d *Dir) writeCleanMarker() error {
	return writeFileAtomic(d.fs, path.Join(d.path, CleanShutdownFileName), nil)
}

func maps(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// readOffsetCheckpoint reads a "topic partition offset" checkpoint into a
// map keyed by partition directory name.
func readOffsetCheckpoint(fsys vfs.FS, name string) (map[string]int64, error) {
	lines, err := readCheckpoint(fsys, name, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(lines))
	for _, l := range lines {
		p, err1 := strconv.ParseInt(l[1], 10, 32)
		off, err2 := parseInt64(l[2])
		if err1 != nil || err2 != nil || p < 0 || off < 0 || !legalTopic(l[0]) {
			return nil, fmt.Errorf("%s: %w: entry %q", name, ErrBadCheckpoint, strings.Join(l, " "))
		}
		out[kafka.TopicPartition{Topic: l[0], Partition: int32(p)}.String()] = off
	}
	return out, nil
}

// writeOffsetCheckpoint writes a "topic partition offset" checkpoint,
// entries sorted by partition name.
func writeOffsetCheckpoint(fsys vfs.FS, name string, offsets map[string]int64) error {
	keys := make([]string, 0, len(offsets))
	for k := range offsets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lines := make([][]string, 0, len(keys))
	for _, k := range keys {
		tp, ok := ParseTopicPartition(k)
		if !ok {
			continue
		}
		lines = append(lines, []string{tp.Topic, strconv.FormatInt(int64(tp.Partition), 10), strconv.FormatInt(offsets[k], 10)})
	}
	return writeFileAtomic(fsys, name, formatCheckpoint(lines))
}

// legalTopic reports whether name is a legal Kafka topic name: 1 to 249
// ASCII letters, digits, '.', '_' and '-', and not "." or "..".
func legalTopic(name string) bool {
	if len(name) == 0 || len(name) > 249 || name == "." || name == ".." {
		return false
	}
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
