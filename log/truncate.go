package log

import (
	"fmt"

	"github.com/partlog/partlog/segment"
)

// TruncateTo removes every record at or above offset, as a follower does
// before it fetches from a new leader. offset should be a batch boundary: a
// batch that straddles it goes entirely, and the log then ends at that
// batch's base offset. An offset below the log start offset empties the log,
// as TruncateFullyAndStartAt(offset).
func (l *Log) TruncateTo(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("log: truncate to offset %d: offsets are not negative", offset)
	}
	if offset >= l.leo.Load() {
		return nil
	}
	if offset < l.logStartOffset {
		return l.truncateFullyLocked(offset)
	}
	l.noteTruncation(offset)
	return l.flush.withToken(func() error {
		i := l.floor(offset)
		gone := append([]*segment.Segment(nil), l.segments[i+1:]...)
		keep := l.segments[i]
		l.mu.Lock()
		l.segments = l.segments[:i+1]
		_, err := keep.TruncateTo(offset)
		if err == nil {
			// Make the cut durable: records a follower removed must not
			// come back after a crash.
			err = keep.Sync()
		}
		if err == nil {
			err = keep.SyncTxnIndex()
		}
		if err == nil && len(gone) > 0 {
			err = keep.Activate()
		}
		leo := keep.NextOffset()
		l.leo.Store(leo)
		l.mu.Unlock()
		if err != nil {
			return l.classify("truncate", err)
		}
		for _, s := range gone {
			if err := s.Delete(); err != nil {
				return l.classify("delete segment", err)
			}
		}
		if leo < l.logStartOffset {
			// The batch straddling offset began below the log start
			// offset; offsets below it are not handed out again.
			return l.restartLocked(l.logStartOffset)
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return l.classify("sync directory", err)
		}
		if err := l.setEpochs(func(c *epochCache) bool { return c.truncateFromEnd(leo) }); err != nil {
			return l.classify("truncate leader epochs", err)
		}
		return nil
	})
}

// TruncateFullyAndStartAt removes every segment and restarts the log, empty,
// at offset: log start offset and log end offset both become offset. A
// follower does this when the leader's log starts above its end.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("log: cannot start at negative offset %d", offset)
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	return l.flush.withToken(func() error { return l.restartLocked(offset) })
}

// restartLocked replaces every segment with one empty segment at offset,
// which becomes both log start and log end offset. The caller holds
// appendMu and the sync token.
func (l *Log) restartLocked(offset int64) error {
	l.noteTruncation(offset)
	if err := l.restartEmptyAt(offset); err != nil {
		// The old segments are closed: nothing sound is left to append to.
		return l.flush.fail(err)
	}
	l.mu.Lock()
	l.logStartOffset = offset
	l.leo.Store(offset)
	l.mu.Unlock()
	l.flush.recoveryPoint.Store(offset)
	l.flush.indexesFlushedTo = offset
	if err := l.setEpochs(func(c *epochCache) bool { return c.clear() }); err != nil {
		return l.classify("clear leader epochs", err)
	}
	return nil
}
