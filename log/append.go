package log

import (
	"fmt"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
)

// AppendInfo describes an appended batch.
type AppendInfo struct {
	// FirstOffset and LastOffset are the offsets of the first and last
	// records.
	FirstOffset int64
	// LastOffset is the offset of the batch's last record: the log end
	// offset after the append, less one.
	LastOffset int64
	// MaxTimestamp is the batch's largest record timestamp.
	MaxTimestamp int64
	// Records counts the batch's records.
	Records int
	// LogStartOffset is the log start offset after the append.
	LogStartOffset int64
}

// Append adds one record batch at the end of the log, giving its records the
// next offsets: it rewrites the batch's base offset in place (the CRC does
// not cover it). Append borrows batch until it returns: it writes from the
// caller's bytes (or copies them to share a write with other appenders)
// and keeps no reference after, so the caller may then reuse batch —
// whatever Append returned. The batch must be a whole,
// valid RecordBatch v2 (an error matching record.ErrCorrupt otherwise) of
// at most MaxMessageBytes (ErrRecordTooLarge).
//
// Append returns once the batch is readable; with SyncBeforeAck, or when
// FlushMessages is reached, once it is also durable.
func (l *Log) Append(batch []byte) (AppendInfo, error) { return l.appendChecked(batch, nil) }

// appendChecked is Append, with AppendChecked's check when c is not nil.
func (l *Log) appendChecked(batch []byte, c AppendCheck) (AppendInfo, error) {
	x, _ := c.(TxnIndexer)
	h, err := l.check(batch)
	if err != nil {
		return AppendInfo{}, err
	}
	if l.options().SyncBeforeAck {
		return l.appendGrouped(h, batch, c)
	}
	l.appendMu.Lock()
	if err := l.writable(); err != nil {
		l.appendMu.Unlock()
		return AppendInfo{}, err
	}
	h.BaseOffset = l.leo.Load()
	if c != nil {
		if err := c.CheckAppend(h, h.BaseOffset); err != nil {
			l.appendMu.Unlock()
			return AppendInfo{}, err
		}
	}
	record.SetBaseOffset(batch, h.BaseOffset)
	err = l.appendLocked(h, batch, x)
	if err != nil && c != nil {
		c.AppendFailed(h, err)
	}
	start := l.logStartOffset
	l.appendMu.Unlock()
	if err != nil {
		return AppendInfo{}, err
	}
	info := AppendInfo{FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(), MaxTimestamp: h.MaxTimestamp,
		Records: int(h.NumRecords), LogStartOffset: start}
	return info, l.afterAppend(h.NextOffset())
}

// AppendAsFollower adds batches whose offsets a leader already assigned, as
// a follower does with what it fetched: batches holds one or more whole
// batches back to back. The first must start at or above the log end offset
// (ErrUnexpectedAppendOffset otherwise; gaps are allowed, as compaction
// leaves them) and each must start above the one before. Nothing is
// appended unless every batch is valid. AppendAsFollower reads batches
// until it returns, changes nothing in them, and keeps no reference.
func (l *Log) AppendAsFollower(batches []byte) (AppendInfo, error) {
	return l.AppendAsFollowerIndexed(batches, nil)
}

// AppendAsFollowerIndexed is AppendAsFollower that asks x, as each batch is
// written, whether it completes an aborted transaction, and indexes it in
// the segment's .txnindex if so (see TxnIndexer): a follower keeps the
// same .txnindex as its leader. x may be nil.
func (l *Log) AppendAsFollowerIndexed(batches []byte, x TxnIndexer) (AppendInfo, error) {
	type batch struct {
		h record.Header
		b []byte
	}
	var list []batch
	for rest := batches; len(rest) > 0; {
		if len(rest) < record.LogOverhead {
			return AppendInfo{}, fmt.Errorf("log: append: %w: %d trailing bytes", record.ErrTruncated, len(rest))
		}
		h, err := record.ParseHeader(rest)
		if err != nil {
			return AppendInfo{}, fmt.Errorf("log: append: %w", err)
		}
		if h.Size() > len(rest) {
			return AppendInfo{}, fmt.Errorf("log: append: %w: batch of %d bytes, %d left", record.ErrTruncated, h.Size(), len(rest))
		}
		b := rest[:h.Size()]
		if _, err := l.check(b); err != nil {
			return AppendInfo{}, err
		}
		if n := len(list); n > 0 && h.BaseOffset <= list[n-1].h.LastOffset() {
			return AppendInfo{}, fmt.Errorf("%w: batch at %d after batch ending at %d", ErrUnexpectedAppendOffset, h.BaseOffset, list[n-1].h.LastOffset())
		}
		list = append(list, batch{h, b})
		rest = rest[h.Size():]
	}
	if len(list) == 0 {
		return AppendInfo{}, fmt.Errorf("log: append: no batches")
	}
	l.appendMu.Lock()
	if err := l.writable(); err != nil {
		l.appendMu.Unlock()
		return AppendInfo{}, err
	}
	if leo := l.leo.Load(); list[0].h.BaseOffset < leo {
		l.appendMu.Unlock()
		return AppendInfo{}, fmt.Errorf("%w: first offset %d is below the log end offset %d", ErrUnexpectedAppendOffset, list[0].h.BaseOffset, leo)
	}
	info := AppendInfo{FirstOffset: list[0].h.BaseOffset, MaxTimestamp: -1}
	for _, b := range list {
		if err := l.appendLocked(b.h, b.b, x); err != nil {
			l.appendMu.Unlock()
			return AppendInfo{}, err
		}
		info.LastOffset = b.h.LastOffset()
		info.MaxTimestamp = max(info.MaxTimestamp, b.h.MaxTimestamp)
		info.Records += int(b.h.NumRecords)
	}
	info.LogStartOffset = l.logStartOffset
	l.appendMu.Unlock()
	return info, l.afterAppend(info.LastOffset + 1)
}

// check validates a batch before it is appended.
func (l *Log) check(batch []byte) (record.Header, error) {
	if limit := l.options().MaxMessageBytes; len(batch) > limit {
		return record.Header{}, fmt.Errorf("%w: %d bytes, max.message.bytes is %d", ErrRecordTooLarge, len(batch), limit)
	}
	h, err := record.Validate(batch)
	if err != nil {
		return h, fmt.Errorf("log: append: %w", err)
	}
	return h, nil
}

// appendLocked writes one batch with assigned offsets, rolling first when
// the active segment says so, and indexes the aborted transaction it
// completes, if x says it does. The caller holds appendMu.
func (l *Log) appendLocked(h record.Header, batch []byte, x TxnIndexer) error {
	if err := l.noteEpoch(h); err != nil {
		return err
	}
	s, o := l.active(), l.options()
	if reason := s.ShouldRoll(h, 0, l.nowMs(), o.SegmentBytes, o.SegmentMs.Milliseconds()); reason != "" {
		var err error
		if s, err = l.roll(h.BaseOffset, reason); err != nil {
			return err
		}
	}
	if err := s.Append(h, batch); err != nil {
		return l.classify("append", err)
	}
	if err := l.indexTxn(x, s, h, batch); err != nil {
		return err
	}
	l.leo.Store(h.NextOffset())
	return nil
}

// noteEpoch records a batch's leader epoch when it is newer than the
// latest: the epoch starts at the batch. The caller holds appendMu.
func (l *Log) noteEpoch(h record.Header) error {
	if e, _ := l.epochs.latest(); h.PartitionLeaderEpoch <= e.Epoch {
		return nil
	}
	err := l.setEpochs(func(c *epochCache) bool { return c.assign(h.PartitionLeaderEpoch, h.BaseOffset) })
	return l.classify("record leader epoch", err)
}

// afterAppend applies the flush policy to an append that ended at next.
func (l *Log) afterAppend(next int64) error {
	if l.options().SyncBeforeAck {
		return l.WaitDurable(next)
	}
	if n := l.options().FlushMessages; n > 0 && l.leo.Load()-l.flush.recoveryPoint.Load() >= n {
		return l.WaitDurable(next)
	}
	return nil
}

// roll seals the active segment and starts a new one at base. An empty
// active segment is replaced instead. The caller holds appendMu.
func (l *Log) roll(base int64, reason segment.RollReason) (*segment.Segment, error) {
	old := l.active()
	if old.Size() == 0 && old.BaseOffset() == base {
		return old, nil
	}
	next, err := segment.Create(l.fs, l.dir, base, l.nowMs(), l.options().segmentOptions())
	if err != nil {
		return nil, l.classify("roll", err)
	}
	l.logger.Debug("rolled segment", "old", old.BaseOffset(), "new", base, "reason", string(reason))
	if old.Size() == 0 {
		l.mu.Lock()
		l.segments[len(l.segments)-1] = next
		l.mu.Unlock()
		if err := old.Delete(); err != nil {
			return nil, l.classify("delete empty segment", err)
		}
		return next, nil
	}
	// Sealing remaps the old segment's indexes: no reader may be in them.
	l.mu.Lock()
	err = old.Seal()
	if err == nil {
		l.segments = append(l.segments, next)
	}
	l.mu.Unlock()
	if err != nil {
		next.Delete()
		return nil, l.classify("seal segment", err)
	}
	return next, nil
}
