package log

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// LockFileName is the file a Log holds locked in its directory.
const LockFileName = ".lock"

// Log is one partition's log. See the package documentation.
type Log struct {
	dir    string
	opts   atomic.Pointer[Options] // settings; Reconfigure swaps them
	fs     vfs.FS
	logger *slog.Logger
	lock   io.Closer
	report LoadReport

	// appendMu serialises the writers: appends, rolls, truncations,
	// retention and Close. They change the fields below mu under both locks,
	// so a writer may read them holding appendMu alone.
	appendMu sync.Mutex

	// mu guards the segment list, the log start offset and the epoch cache
	// for readers.
	mu             sync.RWMutex
	segments       []*segment.Segment // by base offset; the last is active
	logStartOffset int64
	epochs         *epochCache
	closed         bool

	// leo is the log end offset, published after each append.
	leo atomic.Int64

	flush  flusher
	groups writeGroups

	// txnMu orders the writes of the segments' .txnindex files
	// (txnindex.go). It is taken after appendMu and mu, never before.
	txnMu sync.Mutex

	// cleaning is the log cleaner's state (compact.go).
	cleaning cleaning
}

// Open opens the log in dir, creating the directory if needed, and locks
// it; a second Open of the same directory fails with ErrLocked until Close.
// It recovers the log as Options describe: see LoadReport for what it did.
func Open(dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Log{dir: path.Clean(dir), fs: opts.FS, logger: opts.Logger.With("log", dir)}
	l.opts.Store(&opts)
	if err := l.makeDir(); err != nil {
		return nil, err
	}
	lock, err := lockDir(l.fs, l.dir)
	if err != nil {
		return nil, err
	}
	l.lock = lock
	l.epochs = newEpochCache(l.fs, l.dir)
	l.cleaning.firstDirty = opts.FirstDirtyOffset
	if err := l.load(); err != nil {
		for _, s := range l.segments {
			s.Close()
		}
		lock.Close()
		return nil, err
	}
	// Records past the end of the log when the checkpoint was written may
	// have been lost since; what is appended there is dirty.
	l.cleaning.firstDirty = min(l.cleaning.firstDirty, l.leo.Load())
	l.flush.init(l)
	return l, nil
}

// lockDir takes the lock file of a directory, saying clearly when another
// Log or Dir holds it.
func lockDir(fsys vfs.FS, dir string) (io.Closer, error) {
	lock, err := fsys.Lock(path.Join(dir, LockFileName))
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("%w: %s is open in this or another process: %w", ErrLocked, dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("log: lock %s: %w", dir, err)
	}
	return lock, nil
}

// makeDir creates the log's directory, durably, if it does not exist.
func (l *Log) makeDir() error {
	if err := vfs.MkdirAllDurable(l.fs, l.dir, 0o755); err != nil {
		return fmt.Errorf("log: create %s: %w", l.dir, err)
	}
	return nil
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// LogStartOffset returns the first offset a reader may ask for.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logStartOffset
}

// LogEndOffset returns the offset the next appended record will get.
func (l *Log) LogEndOffset() int64 { return l.leo.Load() }

// options returns the log's settings in force. They never change under
// the caller: Reconfigure replaces them whole.
func (l *Log) options() *Options { return l.opts.Load() }

// Reconfigure changes, while the log is open, the settings a topic's
// configs set, as Kafka applies a topic config change to its open logs:
// SegmentBytes, SegmentMs, IndexIntervalBytes and MaxIndexBytes (for the
// segments rolled from now on), MaxMessageBytes, RetentionBytes,
// RetentionMs, CleanupPolicy and the compaction settings. The rest of o —
// FS, Logger, Now, the recovery state, OnFlush, and the flush policy
// (FlushMessages, FlushInterval, SyncBeforeAck), on which a partition's
// high watermark rests — is ignored: the log keeps what it was opened
// with until it is opened again. An invalid o is refused
// with the error Open would give, and nothing changes.
func (l *Log) Reconfigure(o Options) error {
	cur := l.options()
	o.FS, o.Logger, o.Now = cur.FS, cur.Logger, cur.Now
	o.RecoveryPoint, o.CleanShutdown, o.LogStartOffset, o.FirstDirtyOffset = cur.RecoveryPoint, cur.CleanShutdown, cur.LogStartOffset, cur.FirstDirtyOffset
	o.FlushInterval, o.FlushMessages, o.SyncBeforeAck, o.OnFlush = cur.FlushInterval, cur.FlushMessages, cur.SyncBeforeAck, cur.OnFlush
	o, err := o.withDefaults()
	if err != nil {
		return err
	}
	l.opts.Store(&o)
	return nil
}

// MaxMessageBytes is the largest batch the log appends (max.message.bytes).
func (l *Log) MaxMessageBytes() int { return l.options().MaxMessageBytes }

// RecoveryPoint returns the offset below which every batch is durable.
func (l *Log) RecoveryPoint() int64 { return l.flush.recoveryPoint.Load() }

// Size returns the bytes of all segments.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segments {
		n += s.Size()
	}
	return n
}

// SegmentInfo describes one segment.
type SegmentInfo struct {
	// BaseOffset is the segment's base offset, the number in its file
	// names.
	BaseOffset int64
	// NextOffset is the offset after the segment's last batch, or
	// BaseOffset when it is empty.
	NextOffset int64
	// Size is the bytes of the segment's batches.
	Size int64
	// MaxTimestamp is the largest timestamp of the segment's records, in
	// milliseconds, or -1 when it has none.
	MaxTimestamp int64
	// Path is the path of the segment's .log file.
	Path string
}

// Segments describes the segments, oldest first; the last is active.
func (l *Log) Segments() []SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]SegmentInfo, len(l.segments))
	for i, s := range l.segments {
		out[i] = SegmentInfo{BaseOffset: s.BaseOffset(), NextOffset: s.NextOffset(), Size: s.Size(),
			MaxTimestamp: s.MaxTimestamp(), Path: s.Path(segment.LogSuffix)}
	}
	return out
}

// Gap is a run of offsets, [From, To), that no segment holds.
type Gap struct {
	// From is the gap's first offset and To the offset after its last.
	From, To int64
}

// LoadReport says what Open found and did.
type LoadReport struct {
	// Clean is set when the log was opened as cleanly shut down.
	Clean bool
	// Recovered lists the base offsets of the segments scanned batch by
	// batch, because they were above the recovery point or their index was
	// damaged.
	Recovered []int64
	// TruncatedBytes counts the bytes cut from the end of the log, and
	// Cause says why (nil when nothing was cut).
	TruncatedBytes int64
	// Cause is why bytes were cut, typically a *segment.CorruptionError;
	// nil when nothing was.
	Cause error
	// DeletedSegments lists segments removed because they followed the
	// point where the log was cut.
	DeletedSegments []int64
	// Damaged lists segments that failed to open as sound although the log
	// was closed cleanly (a torn tail, bytes added after the last batch):
	// the log was recovered from the first of them, as after a crash.
	Damaged []int64
	// Gaps lists offsets missing between one segment and the next, which
	// only compaction leaves (and is not counted): a segment file added to
	// the directory, or a tail lost before the next segment.
	Gaps []Gap
	// IgnoredLogStartOffset, when not zero, is a log start offset the
	// options gave (a checkpoint) that lay past the log end offset after a
	// clean shutdown, and was ignored as damage: the log starts at its
	// first segment instead.
	IgnoredLogStartOffset int64
	// DamagedTxnIndexes lists segments whose .txnindex failed its check
	// (see segment.Segment.TxnIndexErr): a torn or damaged file, or
	// entries for markers the log no longer holds. The log keeps them as
	// they are: the partition rebuilds them from the log, from the newest
	// producer state snapshot at or below the first of them and of
	// Recovered (see LoadReport.TxnIndexRebuildFrom).
	DamagedTxnIndexes []int64
	// Quarantined, when not empty, is the directory inside the log's that
	// segments were moved to rather than deleted: segments overlapping the
	// one before (a file that cannot belong), or every segment when the
	// log ended below its log start offset after an unclean shutdown (the
	// log started empty at that offset instead).
	Quarantined string
}

// LoadReport says what Open found and did.
func (l *Log) LoadReport() LoadReport { return l.report }

// TxnIndexRebuildFrom returns the base offset of the first segment whose
// .txnindex Open did not find sound and in step with the log: the first
// of Recovered and DamagedTxnIndexes — what Kafka's log loader rebuilds
// the transaction index of. ok is false when there is none.
func (r LoadReport) TxnIndexRebuildFrom() (offset int64, ok bool) {
	for _, list := range [][]int64{r.Recovered, r.DamagedTxnIndexes} {
		for _, b := range list {
			if !ok || b < offset {
				offset, ok = b, true
			}
		}
	}
	return offset, ok
}

// nowMs is the clock in Kafka's unit.
func (l *Log) nowMs() int64 { return l.options().Now().UnixMilli() }

// active returns the segment appends go to. Writers only.
func (l *Log) active() *segment.Segment { return l.segments[len(l.segments)-1] }

// floor returns the index of the segment holding offset: the last whose base
// offset is at or below it (0 when offset precedes every segment).
func (l *Log) floor(offset int64) int {
	i, found := slices.BinarySearchFunc(l.segments, offset, func(s *segment.Segment, off int64) int {
		switch {
		case s.BaseOffset() < off:
			return -1
		case s.BaseOffset() > off:
			return 1
		}
		return 0
	})
	if found {
		return i
	}
	return max(i-1, 0)
}

// EpochEntries returns the leader epoch cache: each epoch that wrote to the
// log and the offset where it started.
func (l *Log) EpochEntries() []EpochEntry {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.snapshot()
}

// LatestEpoch returns the newest leader epoch that wrote to the log, or
// UndefinedEpoch.
func (l *Log) LatestEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, _ := l.epochs.latest()
	return e.Epoch
}

// EndOffsetForEpoch answers Kafka's OffsetsForLeaderEpoch for this log: the
// largest epoch at or below epoch that wrote to it and the offset where that
// epoch ended (the start of the next one, or the log end offset). An epoch
// older than every entry answers itself and the first entry's start offset;
// one newer than the latest answers UndefinedEpoch and -1.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.endOffsetFor(epoch, l.leo.Load())
}

// Close flushes everything, closes the files and releases the directory.
// A log that failed (ErrStorage) is closed without flushing.
func (l *Log) Close() error {
	l.stopCleaning()
	defer l.cleaning.mu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return nil
	}
	l.flush.stop()
	var errs []error
	if l.flush.failure() == nil {
		errs = append(errs, l.flushAll())
	}
	l.mu.Lock()
	l.closed = true
	for _, s := range l.segments {
		errs = append(errs, s.Close())
	}
	l.mu.Unlock()
	errs = append(errs, l.lock.Close())
	return errors.Join(errs...)
}

func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}

// Err returns the write or sync failure that stopped the log's appends
// (matching ErrStorage), or nil. A failed log's tail is not known to be
// sound: a Dir does not mark its shutdown clean, so the next open
// recovers it.
func (l *Log) Err() error { return l.flush.failure() }

// writable returns why appends are refused, if they are.
func (l *Log) writable() error {
	if l.isClosed() {
		return ErrClosed
	}
	return l.flush.failure()
}

// setEpochs installs a changed epoch cache after writing its checkpoint, so
// that memory never runs ahead of the file. Writers only.
func (l *Log) setEpochs(change func(c *epochCache) bool) error {
	next := &epochCache{fs: l.epochs.fs, path: l.epochs.path, entries: l.epochs.snapshot()}
	if !change(next) {
		return nil
	}
	if err := next.flush(); err != nil {
		return err
	}
	l.mu.Lock()
	l.epochs = next
	l.mu.Unlock()
	return nil
}

// classify turns a write error into what the caller sees, failing the log
// when the error leaves the files' state unknown.
func (l *Log) classify(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, segment.ErrTornWrite):
		// The file holds what the failed write left: the log fails, so
		// that its shutdown is not marked clean and recovery cuts it.
		return l.flush.fail(fmt.Errorf("%s %s: %w", op, l.dir, err))
	case isNoSpace(err):
		return fmt.Errorf("log: %s %s: %w: %w", op, l.dir, ErrDiskFull, err)
	case errors.Is(err, segment.ErrOffsetOrder), errors.Is(err, ErrUnexpectedAppendOffset),
		errors.Is(err, record.ErrCorrupt), errors.Is(err, ErrRecordTooLarge):
		return err
	}
	return l.flush.fail(fmt.Errorf("%s %s: %w", op, l.dir, err))
}

// isSegmentFile reports whether a directory entry belongs to a segment.
func isSegmentFile(name string) (base int64, suffix string, ok bool) {
	base, suffix, ok = segment.ParseFileName(name)
	if !ok {
		return 0, "", false
	}
	switch suffix {
	case segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix, segment.TxnIndexSuffix:
		return base, suffix, true
	}
	return 0, "", false
}

// isTemporary reports whether a directory entry is a leftover of an
// interrupted atomic write.
func isTemporary(name string) bool { return strings.HasSuffix(name, ".tmp") }
