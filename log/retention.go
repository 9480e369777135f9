package log

import (
	"fmt"

	"github.com/partlog/partlog/segment"
)

// DeleteRetained removes the oldest segments that retention lets go: those
// wholly below the log start offset, those whose newest record is older than
// RetentionMs, and, while the log is larger than RetentionBytes, the oldest.
// Under CleanupCompact only the first kind goes. The active segment always
// stays. It returns how many segments went.
func (l *Log) DeleteRetained() (int, error) { return l.DeleteRetainedUpTo(-1) }

// DeleteRetainedUpTo is DeleteRetained that keeps every segment holding an
// offset at or above upTo, and those after it: a partition passes its last
// stable offset, so that retention never removes an open transaction's
// records (nor, as Kafka's, records above the high watermark). A negative
// upTo means no bound.
func (l *Log) DeleteRetainedUpTo(upTo int64) (int, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writable(); err != nil {
		return 0, err
	}
	now := l.nowMs()
	var total int64
	for _, s := range l.segments {
		total += s.Size()
	}
	n := 0
	o := l.options()
	deletes := o.CleanupPolicy.Deletes() // compact alone keeps every segment but by log start offset
	for _, s := range l.segments[:len(l.segments)-1] {
		byStart := s.NextOffset() <= l.logStartOffset
		byTime := deletes && o.RetentionMs > 0 && s.MaxTimestamp() >= 0 && now-s.MaxTimestamp() > o.RetentionMs.Milliseconds()
		bySize := deletes && o.RetentionBytes > 0 && total-s.Size() >= o.RetentionBytes
		if !byStart && !byTime && !bySize || upTo >= 0 && s.NextOffset() > upTo {
			break
		}
		total -= s.Size()
		n++
	}
	return n, l.deleteOldest(n)
}

// DeleteRecordsBefore moves the log start offset up to offset (Kafka's
// DeleteRecords) and removes the segments wholly below it. offset may not
// pass the log end offset; a lower offset than the current start changes
// nothing.
func (l *Log) DeleteRecordsBefore(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if leo := l.leo.Load(); offset > leo {
		return &OffsetOutOfRangeError{Offset: offset, LogStartOffset: l.logStartOffset, LogEndOffset: leo}
	}
	if offset <= l.logStartOffset {
		return nil
	}
	if err := l.setEpochs(func(c *epochCache) bool { return c.truncateFromStart(offset) }); err != nil {
		return l.classify("truncate leader epochs", err)
	}
	l.mu.Lock()
	l.logStartOffset = offset
	l.mu.Unlock()
	n := 0
	for _, s := range l.segments[:len(l.segments)-1] {
		if s.NextOffset() > offset {
			break
		}
		n++
	}
	return l.deleteOldest(n)
}

// deleteOldest removes the n oldest segments, never the active one, and
// raises the log start offset to the first segment left. The caller holds
// appendMu.
func (l *Log) deleteOldest(n int) error {
	if n == 0 {
		return nil
	}
	gone := l.segments[:n]
	start := max(l.logStartOffset, l.segments[n].BaseOffset())
	if err := l.setEpochs(func(c *epochCache) bool { return c.truncateFromStart(start) }); err != nil {
		return l.classify("truncate leader epochs", err)
	}
	l.mu.Lock()
	l.segments = append([]*segment.Segment(nil), l.segments[n:]...)
	l.logStartOffset = start
	l.mu.Unlock()
	for _, s := range gone {
		l.logger.Info("deleted segment", "base_offset", s.BaseOffset(), "next_offset", s.NextOffset(), "bytes", s.Size())
		if err := s.Delete(); err != nil {
			return l.classify("delete segment", err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.classify("sync directory", fmt.Errorf("after deleting segments: %w", err))
	}
	return nil
}
