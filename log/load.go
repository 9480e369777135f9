package log

import (
	"errors"
	"fmt"
	"path"
	"slices"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// load opens the segments found in the directory, recovering those the
// Options say may be damaged, and sets the log's offsets.
func (l *Log) load() error {
	if err := l.completeSwaps(); err != nil {
		return err
	}
	bases, err := l.scanDir()
	if err != nil {
		return err
	}
	epochsOK, err := l.epochs.load()
	if err != nil {
		return err
	}
	now := l.nowMs()
	if len(bases) == 0 {
		s, err := segment.Create(l.fs, l.dir, l.options().LogStartOffset, now, l.options().segmentOptions())
		if err != nil {
			return fmt.Errorf("log: create first segment: %w", err)
		}
		l.segments = []*segment.Segment{s}
		return l.settle(epochsOK, false)
	}

	// Segments from the one holding the recovery point on may hold batches
	// that never reached the disk whole; after a clean shutdown none does.
	recoverFrom := len(bases)
	l.report.Clean = l.options().CleanShutdown
	if !l.options().CleanShutdown {
		recoverFrom = 0
		for i, b := range bases {
			if b <= l.options().RecoveryPoint {
				recoverFrom = i
			}
		}
	}
	// Recovery rebuilds the epochs of the batches it scans, as Kafka's
	// segment recovery does: entries from the segment's base on are dropped
	// and each batch with a newer epoch than the latest adds one.
	visit := func(h record.Header) {
		if e, _ := l.epochs.latest(); h.PartitionLeaderEpoch > e.Epoch {
			l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		}
	}
	for i, base := range bases {
		var s *segment.Segment
		if i < recoverFrom {
			s, err = segment.Open(l.fs, l.dir, base, now, l.options().segmentOptions())
			if err == nil && i == len(bases)-1 {
				// The active segment's last batch is where a write cut
				// short would be.
				if err = s.VerifyLastBatch(); err != nil {
					s.Close()
				}
			}
			switch {
			case errors.Is(err, segment.ErrCorrupt):
				// Damage a clean shutdown cannot explain (a torn write left
				// by a failed disk, bytes added to the file): recover the
				// log from this segment on, as after a crash, rather than
				// refuse to open it.
				l.logger.Warn("segment damaged although the log was closed cleanly; recovering it", "segment", base, "err", err)
				l.report.Damaged = append(l.report.Damaged, base)
				recoverFrom = i
			case err != nil:
				return fmt.Errorf("log: open segment %d of %s: %w", base, l.dir, err)
			case !epochsOK:
				if err := l.scanEpochs(s); err != nil {
					return err
				}
			}
		}
		lostTail := false
		if i >= recoverFrom {
			s, err = segment.OpenForRecovery(l.fs, l.dir, base, now, l.options().segmentOptions())
			if err != nil {
				return fmt.Errorf("log: open segment %d of %s: %w", base, l.dir, err)
			}
			l.epochs.truncateFromEnd(base)
			r, err := s.Recover(visit)
			if err != nil {
				s.Close()
				return fmt.Errorf("log: recover segment %d of %s: %w", base, l.dir, err)
			}
			l.report.Recovered = append(l.report.Recovered, base)
			// The next segment follows on when it starts where this one
			// ends — or inside it: then it cannot belong here, and the
			// overlap check below moves it aside when its turn comes.
			continues := i+1 < len(bases) && s.NextOffset() >= bases[i+1]
			if r.Truncated > 0 {
				l.report.TruncatedBytes += r.Truncated
				l.report.Cause = r.Cause
				l.logger.Warn("cut log at the first invalid batch", "segment", base,
					"valid_bytes", r.ValidBytes, "truncated_bytes", r.Truncated, "cause", r.Cause)
				// Bytes after the segment's last whole batch (garbage, a
				// torn write) leave it ending where the next one starts:
				// what follows still follows on from it.
				lostTail = !continues
			} else if i+1 < len(bases) && !continues {
				// The segment ends short of the next one: its tail never
				// reached the disk (nothing above the recovery point was
				// synced, and segments are synced in order). What follows
				// cannot follow on from it.
				l.report.Cause = fmt.Errorf("%w: segment %d ends at offset %d but the next starts at %d",
					segment.ErrCorrupt, base, s.NextOffset(), bases[i+1])
				l.logger.Warn("dropping segments after a lost tail", "segment", base, "cause", l.report.Cause)
				lostTail = true
			}
		}
		if n := len(l.segments); n > 0 && base < l.segments[n-1].NextOffset() {
			// A segment that starts inside the one before cannot be part of
			// this log (a file dropped in, a copy from elsewhere): the log
			// keeps the one before and moves this one aside.
			s.Close()
			dir, err := l.quarantine(base)
			if err != nil {
				return fmt.Errorf("log: %w", err)
			}
			l.logger.Warn("segment overlaps the one before; moved aside", "segment", base,
				"previous_ends_at", l.segments[n-1].NextOffset(), "moved_to", dir)
			continue
		}
		if n := len(l.segments); n > 0 && base > l.segments[n-1].NextOffset() && !l.options().CleanupPolicy.Compacts() {
			// Only compaction leaves offsets out between segments; here a
			// segment file was added, or the one before lost its tail.
			gap := Gap{From: l.segments[n-1].NextOffset(), To: base}
			l.report.Gaps = append(l.report.Gaps, gap)
			l.logger.Warn("offsets missing between segments", "from", gap.From, "to", gap.To, "segment", base)
		}
		l.segments = append(l.segments, s)
		if err := s.TxnIndexErr(); err != nil {
			l.report.DamagedTxnIndexes = append(l.report.DamagedTxnIndexes, base)
			l.logger.Warn("transaction index damaged; the partition rebuilds it from the log", "segment", base, "err", err)
		}
		if lostTail && i+1 < len(bases) {
			// Nothing after a cut can follow on from it. After a crash
			// that is a tail that never reached the disk whole, deleted as
			// Kafka deletes it; after a clean shutdown it is damage, and
			// the segments are moved aside instead.
			if l.options().CleanShutdown {
				dir, err := l.quarantine(bases[i+1:]...)
				if err != nil {
					return fmt.Errorf("log: %w", err)
				}
				l.logger.Warn("segments after damage moved aside", "segments", bases[i+1:], "moved_to", dir)
			} else {
				if err := l.deleteFiles(bases[i+1:]); err != nil {
					return err
				}
				l.report.DeletedSegments = bases[i+1:]
			}
			break
		}
	}
	return l.settle(epochsOK, recoverFrom < len(bases))
}

// settle sets the offsets once the segments are open: the log end offset
// from the active segment, the log start offset from the options and the
// first segment, the epoch cache trimmed to both. Recovered segments are
// flushed, which makes the whole log durable.
func (l *Log) settle(epochsOK, recovered bool) error {
	if err := l.active().Activate(); err != nil {
		return err
	}
	leo := l.active().NextOffset()
	if leo < l.options().LogStartOffset {
		switch {
		case l.options().CleanShutdown:
			// Nothing was lost in a clean shutdown: a log start offset past
			// the end names records the log never had, so the checkpoint
			// is damaged (or was edited). The segments are what is known.
			l.report.IgnoredLogStartOffset = l.options().LogStartOffset
			l.logger.Warn("ignoring a log start offset beyond the log end offset; keeping every segment",
				"log_start_offset", l.options().LogStartOffset, "log_end_offset", leo)
			l.options().LogStartOffset = l.segments[0].BaseOffset()
		default:
			// A crash took a tail that DeleteRecordsBefore had already
			// passed, or the checkpoint is damaged. Offsets below the start
			// must not be handed out again, so the log starts empty there,
			// as Kafka's does — but the segments are moved aside, not
			// deleted, in case it was the checkpoint.
			dir, err := l.restartQuarantinedAt(l.options().LogStartOffset)
			if err != nil {
				return fmt.Errorf("log: %w", err)
			}
			l.logger.Warn("log ends below its log start offset after an unclean shutdown; starting it empty there, its segments moved aside",
				"log_end_offset", leo, "log_start_offset", l.options().LogStartOffset, "moved_to", dir)
			l.epochs.clear()
			leo = l.options().LogStartOffset
			recovered = true
		}
	}
	l.leo.Store(leo)
	l.logStartOffset = min(max(l.options().LogStartOffset, l.segments[0].BaseOffset()), leo)
	changed := l.epochs.truncateFromEnd(leo)
	changed = l.epochs.truncateFromStart(l.logStartOffset) || changed
	if changed || !epochsOK || recovered {
		if err := l.epochs.flush(); err != nil {
			return err
		}
	}
	if recovered {
		// What recovery validated may sit only in the page cache (a killed
		// process leaves it there); make it durable before counting it so.
		for _, s := range l.segments {
			if err := s.Flush(); err != nil {
				return fmt.Errorf("log: flush recovered segment %d of %s: %w", s.BaseOffset(), l.dir, err)
			}
		}
	}
	l.flush.recoveryPoint.Store(leo)
	l.flush.indexesFlushedTo = leo
	return nil
}

// scanEpochs rebuilds leader epoch entries from a trusted segment's batch
// headers, for when the checkpoint was unreadable.
func (l *Log) scanEpochs(s *segment.Segment) error {
	sc := segment.NewScanner(s.File(), 0, s.Size(), segment.ScanHeaders)
	for sc.Next() {
		h := sc.Header()
		if e, _ := l.epochs.latest(); h.PartitionLeaderEpoch > e.Epoch {
			l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
		}
	}
	return sc.Err()
}

// scanDir lists the directory: the base offsets of the segments, oldest
// first. It removes what a crash can leave behind: index files whose log
// is gone and temporary files.
func (l *Log) scanDir() ([]int64, error) {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return nil, fmt.Errorf("log: list %s: %w", l.dir, err)
	}
	logs := map[int64]bool{}
	for _, name := range names {
		if base, suffix, ok := isSegmentFile(name); ok && suffix == segment.LogSuffix {
			logs[base] = true
		}
	}
	var stray []string
	for _, name := range names {
		base, suffix, ok := isSegmentFile(name)
		if ok && suffix != segment.LogSuffix && !logs[base] || isTemporary(name) {
			stray = append(stray, name)
		}
	}
	for _, name := range stray {
		if err := l.fs.Remove(path.Join(l.dir, name)); err != nil {
			return nil, fmt.Errorf("log: remove leftover %s: %w", name, err)
		}
	}
	if len(stray) > 0 {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return nil, fmt.Errorf("log: sync directory %s: %w", l.dir, err)
		}
	}
	bases := make([]int64, 0, len(logs))
	for b := range logs {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	return bases, nil
}

// restartQuarantinedAt replaces every segment with one empty segment at
// offset, as restartEmptyAt does, but moves the old segments' files aside
// (see quarantine) instead of deleting them, and returns where to.
func (l *Log) restartQuarantinedAt(offset int64) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	bases := make([]int64, len(l.segments))
	for i, s := range l.segments {
		if err := s.Close(); err != nil {
			return "", fmt.Errorf("close segment %d of %s: %w", s.BaseOffset(), l.dir, err)
		}
		bases[i] = s.BaseOffset()
	}
	dir, err := l.quarantine(bases...)
	if err != nil {
		return "", err
	}
	s, err := segment.Create(l.fs, l.dir, offset, l.nowMs(), l.options().segmentOptions())
	if err != nil {
		return "", fmt.Errorf("create segment at %d: %w", offset, err)
	}
	l.segments = []*segment.Segment{s}
	return dir, nil
}

// quarantine moves the files of segments that are not open into the
// log's quarantine directory (quarantine-<ms> inside the log's, which
// the log never reads; LoadReport.Quarantined names it), and returns its
// path: what the log will not use is kept for an operator, not deleted.
// Load only.
func (l *Log) quarantine(bases ...int64) (string, error) {
	if l.report.Quarantined == "" {
		l.report.Quarantined = path.Join(l.dir, fmt.Sprintf("quarantine-%d", l.nowMs()))
	}
	dir := l.report.Quarantined
	if err := vfs.MkdirAllDurable(l.fs, dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	for _, base := range bases {
		for _, suffix := range segment.FileSuffixes() {
			name := segment.FileName(base, suffix)
			err := l.fs.Rename(path.Join(l.dir, name), path.Join(dir, name))
			if err != nil && !isNotExist(err) {
				return "", fmt.Errorf("move %s to %s: %w", name, dir, err)
			}
		}
	}
	if err := l.fs.SyncDir(dir); err != nil {
		return "", fmt.Errorf("sync %s: %w", dir, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return "", fmt.Errorf("sync %s: %w", l.dir, err)
	}
	return dir, nil
}

// deleteFiles removes segments that are not open.
func (l *Log) deleteFiles(bases []int64) error {
	for _, b := range bases {
		for _, suffix := range segment.FileSuffixes() {
			err := l.fs.Remove(path.Join(l.dir, segment.FileName(b, suffix)))
			if err != nil && !isNotExist(err) {
				return fmt.Errorf("log: delete segment %d of %s: %w", b, l.dir, err)
			}
		}
	}
	if len(bases) == 0 {
		return nil
	}
	return l.fs.SyncDir(l.dir)
}

// restartEmptyAt replaces every segment with one empty segment at offset.
// Creating it syncs the directory, which makes the deletions durable too.
// Readers walk the segments under mu, so the old ones are closed and the
// new one put in place with mu held: no reader is in a segment as it
// closes. (The new segment may take an old one's name, so the old ones
// go first.) The caller holds appendMu.
func (l *Log) restartEmptyAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segments {
		if err := s.Delete(); err != nil {
			return fmt.Errorf("delete segment %d of %s: %w", s.BaseOffset(), l.dir, err)
		}
	}
	s, err := segment.Create(l.fs, l.dir, offset, l.nowMs(), l.options().segmentOptions())
	if err != nil {
		return fmt.Errorf("create segment at %d: %w", offset, err)
	}
	l.segments = []*segment.Segment{s}
	return nil
}
