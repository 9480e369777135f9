package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sync/atomic"

	"github.com/partlog/partlog/index"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/vfs"
)

// MaxSize is the largest a segment's log may grow: positions in the offset
// index are 32-bit.
const MaxSize = math.MaxInt32

// Options configures a segment. The zero value works.
type Options struct {
	// IndexIntervalBytes is index.interval.bytes: how many bytes of log
	// pass between index entries. Zero means 4096.
	IndexIntervalBytes int
	// MaxIndexBytes is segment.index.bytes: the room each index has, which
	// bounds its entries (its file grows as they come). Zero means 10 MiB.
	MaxIndexBytes int
}

// WithDefaults returns o with its zero (or negative) fields set to the
// defaults a segment uses for them.
func (o Options) WithDefaults() Options {
	if o.IndexIntervalBytes <= 0 {
		o.IndexIntervalBytes = 4096
	}
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = index.DefaultMaxBytes
	}
	return o
}

// Segment is one .log file with its .index and .timeindex, and the
// .txnindex of the aborted transactions whose markers it holds.
type Segment struct {
	fs   vfs.FS
	dir  string
	base int64
	opts Options
	// extra follows each file name's usual suffix while the segment is
	// being swapped in by the log cleaner (".cleaned", ".swap"); empty
	// otherwise. See CreateWithSuffix.
	extra string

	log         vfs.File
	offsetIndex *index.OffsetIndex
	timeIndex   *index.TimeIndex
	txnIndex    *txnIndex // never nil once open; its file exists once needed

	// size and nextOffset describe the batches appended so far. Append
	// publishes them after writing; readers look no further.
	size       atomic.Int64
	nextOffset atomic.Int64

	// maxTimestamp is the largest batch MaxTimestamp, -1 when none; atomic
	// so that retention and time lookups can read it beside appends.
	maxTimestamp atomic.Int64

	// The writer's state.
	offsetOfMaxTimestamp int64 // last offset of the batch with maxTimestamp
	firstTimestamp       int64 // MaxTimestamp of the first batch, -1 when none
	createdMs            int64 // when the segment was created (or emptied)
	bytesSinceIndexEntry int
	// lastBatchPos is where the last batch started when the segment was
	// opened as sound, -1 when that is not known (VerifyLastBatch).
	lastBatchPos int64
	closed       bool
}

// Create creates an empty segment in dir starting at base, replacing any
// files of that name, and makes its directory entries durable. nowMs is the
// current time, from which segment.ms counts when records carry no
// timestamps.
func Create(fsys vfs.FS, dir string, base int64, nowMs int64, opts Options) (*Segment, error) {
	s := newSegment(fsys, dir, base, opts)
	s.createdMs = nowMs
	s.nextOffset.Store(base)
	if err := s.createFiles(); err != nil {
		// Leave nothing behind: a half-made segment would be loaded
		// after a restart.
		_ = s.Delete()
		return nil, err
	}
	return s, nil
}

func (s *Segment) createFiles() error {
	var err error
	if s.log, err = s.fs.Create(s.Path(LogSuffix)); err != nil {
		return fmt.Errorf("segment: create %s: %w", s.Path(LogSuffix), err)
	}
	if s.offsetIndex, err = index.CreateOffsetIndex(s.fs, s.Path(IndexSuffix), s.base, s.opts.MaxIndexBytes); err != nil {
		return err
	}
	if s.timeIndex, err = index.CreateTimeIndex(s.fs, s.Path(TimeIndexSuffix), s.base, s.opts.MaxIndexBytes); err != nil {
		return err
	}
	// A .txnindex is created by its first entry; one left by an earlier
	// segment of this name is not this one's.
	if err := s.fs.Remove(s.Path(TxnIndexSuffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("segment: remove %s: %w", s.Path(TxnIndexSuffix), err)
	}
	s.txnIndex = &txnIndex{fs: s.fs, path: s.Path(TxnIndexSuffix), last: -1}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("segment: sync directory %s: %w", s.dir, err)
	}
	return nil
}

func newSegment(fsys vfs.FS, dir string, base int64, opts Options) *Segment {
	s := &Segment{
		fs: fsys, dir: dir, base: base, opts: opts.WithDefaults(),
		offsetOfMaxTimestamp: base, firstTimestamp: -1, lastBatchPos: -1,
	}
	s.maxTimestamp.Store(-1)
	return s
}

// Open opens an existing segment that was closed cleanly or lies below the
// recovery point. It trusts the log's batches without reading them all: it
// checks the indexes, rebuilding one that is missing or damaged (which does
// read the whole log), and reads the batches after the last index entry to
// find the segment's end. When those are not valid it returns a
// *CorruptionError and the caller should Recover instead.
//
// A segment meant to take appends must also be Activated.
func Open(fsys vfs.FS, dir string, base int64, nowMs int64, opts Options) (*Segment, error) {
	s := newSegment(fsys, dir, base, opts)
	s.createdMs = nowMs
	if err := s.openFiles(); err != nil {
		return nil, err
	}
	if err := s.checkIndexes(); err != nil {
		s.closeFiles()
		return nil, err
	}
	s.txnIndex.check(s.base, s.nextOffset.Load())
	return s, nil
}

// OpenForRecovery opens an existing segment whose contents are not trusted:
// call Recover next.
func OpenForRecovery(fsys vfs.FS, dir string, base int64, nowMs int64, opts Options) (*Segment, error) {
	s := newSegment(fsys, dir, base, opts)
	s.createdMs = nowMs
	if err := s.openFiles(); err != nil {
		return nil, err
	}
	return s, nil
}

// openFiles opens the log and both indexes. An index that cannot be opened
// because it is damaged is recreated empty; a missing index is created empty
// and flagged for rebuilding by checkIndexes (through its size).
func (s *Segment) openFiles() error {
	var err error
	if s.log, err = s.fs.OpenReadWrite(s.Path(LogSuffix)); err != nil {
		return fmt.Errorf("segment: open %s: %w", s.Path(LogSuffix), err)
	}
	size, err := s.log.Size()
	if err != nil {
		s.closeFiles()
		return fmt.Errorf("segment: size of %s: %w", s.Path(LogSuffix), err)
	}
	if size > MaxSize {
		size = MaxSize // anything past a valid segment's size is cut by recovery
	}
	s.size.Store(size)
	s.nextOffset.Store(s.base)
	max := s.opts.MaxIndexBytes
	s.offsetIndex, err = index.OpenOffsetIndex(s.fs, s.Path(IndexSuffix), s.base, max)
	if errors.Is(err, index.ErrCorrupt) {
		s.offsetIndex, err = index.CreateOffsetIndex(s.fs, s.Path(IndexSuffix), s.base, max)
	}
	if err != nil {
		s.closeFiles()
		return err
	}
	s.timeIndex, err = index.OpenTimeIndex(s.fs, s.Path(TimeIndexSuffix), s.base, max)
	if errors.Is(err, index.ErrCorrupt) {
		s.timeIndex, err = index.CreateTimeIndex(s.fs, s.Path(TimeIndexSuffix), s.base, max)
	}
	if err != nil {
		s.closeFiles()
		return err
	}
	if s.txnIndex, err = openTxnIndex(s.fs, s.Path(TxnIndexSuffix)); err != nil {
		s.closeFiles()
		return err
	}
	return nil
}

// checkIndexes runs the sanity checks, finding the segment's end on the way,
// and rebuilds the indexes from the log when either fails or looks
// incomplete.
func (s *Segment) checkIndexes() error {
	size := s.size.Load()
	bad := s.offsetIndex.SanityCheck(size) != nil
	// An empty offset index over a log longer than one index interval was
	// lost (or never flushed): rebuild it rather than scan on every read.
	if s.offsetIndex.Len() == 0 && size > int64(s.opts.IndexIntervalBytes)+record.HeaderSize {
		bad = true
	}
	if !bad {
		// The time index can be checked against the end offset only; find
		// the end first from the offset index, which is sound.
		if err := s.loadTail(); err != nil {
			return err
		}
		bad = s.timeIndex.SanityCheck(s.nextOffset.Load()) != nil ||
			s.timeIndex.Len() == 0 && s.maxTimestamp.Load() >= 0 && s.offsetIndex.Len() > 0
	}
	if !bad {
		return nil
	}
	// A segment opened as sound must not lose batches silently: rebuild
	// without cutting, and let the caller decide about damage.
	_, err := s.rebuild(false, nil)
	return err
}

// loadTail reads the batches after the last offset index entry to set the
// segment's end offset and largest timestamp.
func (s *Segment) loadTail() error {
	last := s.offsetIndex.LastEntry()
	end := s.size.Load()
	s.nextOffset.Store(s.base)
	if s.offsetIndex.Len() > 0 {
		s.nextOffset.Store(last.Offset) // the indexed batch ends at or after it
	}
	ts := s.timeIndex.LastEntry()
	s.setMaxTimestamp(ts.Timestamp, ts.Offset)
	s.bytesSinceIndexEntry = 0
	sc := NewScanner(s.log, last.Pos, end, ScanHeaders)
	s.lastBatchPos = -1
	for sc.Next() {
		h := sc.Header()
		s.nextOffset.Store(h.NextOffset())
		s.noteTimestamp(h)
		s.bytesSinceIndexEntry += h.Size()
		s.lastBatchPos = sc.Pos()
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return s.loadFirstTimestamp()
}

// loadFirstTimestamp reads the first batch's header for segment.ms.
func (s *Segment) loadFirstTimestamp() error {
	s.firstTimestamp = -1
	if s.size.Load() < record.HeaderSize {
		return nil
	}
	sc := NewScanner(s.log, 0, s.size.Load(), ScanHeaders)
	if sc.Next() {
		s.firstTimestamp = sc.Header().MaxTimestamp
	}
	return sc.Err()
}

// Activate readies a segment opened with Open or recovered for appends: its
// indexes get their room back.
func (s *Segment) Activate() error {
	if err := s.offsetIndex.Resize(s.opts.MaxIndexBytes); err != nil {
		return err
	}
	return s.timeIndex.Resize(s.opts.MaxIndexBytes)
}

// VerifyLastBatch checks the CRC of the segment's last batch, as found when
// the segment was opened: a log closed cleanly trusts its segments, but the
// last batch of the active one is where a write cut short (a full disk, a
// failed device) leaves a batch whose length holds and whose bytes do not.
// A bad batch is a *CorruptionError.
func (s *Segment) VerifyLastBatch() error {
	if s.lastBatchPos < 0 {
		return nil
	}
	sc := NewScanner(s.log, s.lastBatchPos, s.size.Load(), ScanVerified)
	sc.Next()
	return sc.Err()
}

// Path returns the path of the segment's file with the given suffix.
func (s *Segment) Path(suffix string) string {
	return path.Join(s.dir, FileName(s.base, suffix)+s.extra)
}

// File returns the segment's open log file, for zero-copy reads of a byte
// range (ReadAt, sendfile) while the segment stays open. Bytes past Size
// are not part of the segment. The segment keeps it: do not close it,
// write to it or move its offset.
func (s *Segment) File() vfs.File { return s.log }

// BaseOffset returns the first offset the segment may hold.
func (s *Segment) BaseOffset() int64 { return s.base }

// NextOffset returns the offset after the segment's last batch, or the base
// offset when it is empty.
func (s *Segment) NextOffset() int64 { return s.nextOffset.Load() }

// Size returns the bytes of the segment's batches.
func (s *Segment) Size() int64 { return s.size.Load() }

// MaxTimestamp returns the largest timestamp of the segment's records, or -1.
func (s *Segment) MaxTimestamp() int64 { return s.maxTimestamp.Load() }

// noteTimestamp raises the largest timestamp to the batch's.
func (s *Segment) noteTimestamp(h record.Header) {
	if h.MaxTimestamp > s.maxTimestamp.Load() {
		s.setMaxTimestamp(h.MaxTimestamp, h.LastOffset())
	}
}

func (s *Segment) setMaxTimestamp(ts, offset int64) {
	s.maxTimestamp.Store(ts)
	s.offsetOfMaxTimestamp = offset
}

// OffsetIndex returns the segment's offset index, for inspection.
func (s *Segment) OffsetIndex() *index.OffsetIndex { return s.offsetIndex }

// TimeIndex returns the segment's time index, for inspection.
func (s *Segment) TimeIndex() *index.TimeIndex { return s.timeIndex }

// Append writes one batch, whose offsets are already assigned, at the end of
// the segment, and indexes it. The batch must start above the segment's last
// offset, and its offsets must stay within 2^31 of the base offset.
//
// On an error nothing of the batch is visible; bytes that reached the file
// are overwritten by the next append or cut by recovery.
func (s *Segment) Append(h record.Header, batch []byte) error {
	hs := [1]record.Header{h}
	return s.AppendBatches(hs[:], batch)
}

// AppendBatches writes several batches at once, data holding them back to
// back as hs describes them, with one write: what a group commit does. The
// rules of Append apply to each batch.
func (s *Segment) AppendBatches(hs []record.Header, data []byte) error {
	if s.closed {
		return ErrClosed
	}
	next := s.nextOffset.Load()
	size := 0
	for _, h := range hs {
		if h.BaseOffset < next || h.BaseOffset < s.base || h.LastOffset()-s.base > math.MaxInt32 {
			return fmt.Errorf("%w: batch %d..%d in segment %d ending at %d", ErrOffsetOrder, h.BaseOffset, h.LastOffset(), s.base, next)
		}
		next = h.NextOffset()
		size += h.Size()
	}
	if size != len(data) || len(hs) == 0 {
		return fmt.Errorf("segment: %d batches of %d bytes described, %d bytes given", len(hs), size, len(data))
	}
	pos := s.size.Load()
	if pos+int64(len(data)) > MaxSize {
		return fmt.Errorf("segment: %d bytes do not fit segment %s of %d bytes", len(data), s.Path(LogSuffix), pos)
	}
	if n, err := s.log.WriteAt(data, pos); err != nil {
		if n > 0 {
			// Leave no partial batch behind: the append kept nothing.
			if terr := s.log.Truncate(pos); terr != nil {
				return fmt.Errorf("%w: %d of %d bytes written to %s at %d (%w), and cutting them failed: %w",
					ErrTornWrite, n, len(data), s.Path(LogSuffix), pos, err, terr)
			}
		}
		return fmt.Errorf("segment: append to %s at %d: %w", s.Path(LogSuffix), pos, err)
	}
	p := pos
	for _, h := range hs {
		s.noteTimestamp(h)
		if p == 0 {
			s.firstTimestamp = h.MaxTimestamp
		}
		s.maybeIndex(h, p)
		p += int64(h.Size())
	}
	s.size.Store(p)
	s.nextOffset.Store(next)
	return nil
}

// maybeIndex adds index entries for the batch at pos once an index interval
// has passed since the last ones. A full index skips the entry: the index is
// sparse, and the segment rolls before its next append.
func (s *Segment) maybeIndex(h record.Header, pos int64) {
	if s.bytesSinceIndexEntry > s.opts.IndexIntervalBytes && !s.offsetIndex.Full() {
		// The entry is above the last and there is room; the index file
		// may still fail to grow (a full disk). An entry missing only
		// makes a lookup scan further: the log write stands.
		_ = s.offsetIndex.Append(h.LastOffset(), pos)
		_, _ = s.timeIndex.MaybeAppend(s.maxTimestamp.Load(), s.offsetOfMaxTimestamp, false)
		s.bytesSinceIndexEntry = 0
	}
	s.bytesSinceIndexEntry += h.Size()
}

// RollReason says why a segment must roll; the zero value means it need not.
type RollReason string

// Roll reasons.
const (
	RollSize        RollReason = "segment.bytes reached"
	RollTime        RollReason = "segment.ms passed"
	RollIndexFull   RollReason = "index full"
	RollOffsetRange RollReason = "offsets beyond the relative range"
)

// ShouldRoll reports whether the batch described by h must go to a new
// segment, as Kafka decides: this segment, with pending bytes about to be
// written before the batch, would pass segmentBytes; or it is not empty and
// segmentMs has passed since its first batch's timestamp (or, without
// timestamps, since it was created); or an index is full; or the batch's
// offsets are too far from the base offset.
func (s *Segment) ShouldRoll(h record.Header, pending, nowMs, segmentBytes, segmentMs int64) RollReason {
	size := s.size.Load() + pending
	switch {
	case size > 0 && size > segmentBytes-int64(h.Size()):
		return RollSize
	case size > 0 && segmentMs > 0 && s.timeWaited(h, nowMs) > segmentMs:
		return RollTime
	case s.offsetIndex.Full() || s.timeIndex.Full():
		return RollIndexFull
	case h.LastOffset()-s.base > math.MaxInt32 || h.BaseOffset < s.base:
		return RollOffsetRange
	}
	return ""
}

func (s *Segment) timeWaited(h record.Header, nowMs int64) int64 {
	if s.firstTimestamp >= 0 && h.MaxTimestamp >= 0 {
		return h.MaxTimestamp - s.firstTimestamp
	}
	return nowMs - s.createdMs
}

// Seal ends the segment's life as the active one: the time index records the
// largest timestamp and both indexes shrink to their entries.
func (s *Segment) Seal() error {
	if ts := s.maxTimestamp.Load(); ts >= 0 {
		if _, err := s.timeIndex.MaybeAppend(ts, s.offsetOfMaxTimestamp, true); err != nil {
			return fmt.Errorf("segment: seal %s: %w", s.Path(LogSuffix), err)
		}
	}
	if err := s.offsetIndex.Trim(); err != nil {
		return err
	}
	return s.timeIndex.Trim()
}

// Sync makes the log file's batches durable (fdatasync). The indexes are
// not synced: recovery rebuilds them from the log.
func (s *Segment) Sync() error {
	if err := s.log.Sync(); err != nil {
		return fmt.Errorf("segment: sync %s: %w", s.Path(LogSuffix), err)
	}
	return nil
}

// Flush makes the log and every index durable.
func (s *Segment) Flush() error {
	if err := s.Sync(); err != nil {
		return err
	}
	if err := s.offsetIndex.Flush(); err != nil {
		return err
	}
	if err := s.timeIndex.Flush(); err != nil {
		return err
	}
	return s.txnIndex.sync()
}

// Close closes the segment's files; indexes are trimmed to their entries.
// It does not flush.
func (s *Segment) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	return s.closeFiles()
}

func (s *Segment) closeFiles() error {
	var errs []error
	if s.offsetIndex != nil {
		errs = append(errs, s.offsetIndex.Close())
	}
	if s.timeIndex != nil {
		errs = append(errs, s.timeIndex.Close())
	}
	if s.txnIndex != nil {
		errs = append(errs, s.txnIndex.close())
	}
	if s.log != nil {
		errs = append(errs, s.log.Close())
	}
	return errors.Join(errs...)
}

// Delete closes the segment and removes its files. The caller syncs the
// directory.
func (s *Segment) Delete() error {
	err := s.Close()
	for _, suffix := range FileSuffixes() {
		if rerr := s.fs.Remove(s.Path(suffix)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("segment: delete %s: %w", s.Path(suffix), rerr)
		}
	}
	return err
}
