package log

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/partlog/partlog/segment"
)

// A cleaned segment replaces the segments it was cleaned from as Kafka's
// replaceSegments does, in steps that each end with a directory sync:
//
//  1. the cleaned segment is written as "<base>.log.cleaned" (and
//     ".index.cleaned", ".timeindex.cleaned", ".txnindex.cleaned") and
//     synced; a cleaned segment always has a .txnindex, empty when the
//     segments it replaces had no aborted transactions;
//  2. its files are renamed to ".swap", the log file last. A durable
//     ".log.swap" commits the swap;
//  3. the old segments' files are renamed to ".deleted";
//  4. the ".swap" files take their final names;
//  5. the ".deleted" files are removed.
//
// Open finishes what a crash interrupted (completeSwaps): ".cleaned" files
// are removed, which rolls back a swap not yet committed; a ".log.swap"
// replaces every segment whose base offset lies in its offset range, its
// ".txnindex.swap" (which cannot be rebuilt from the log alone) takes its
// final name, and its other indexes are rebuilt; ".deleted" files and
// other leftovers go.

// swapIn replaces the segments old with cleaned, which was cleaned from
// them, unless the log changed since the clean began (ErrCleanAborted, and
// cleaned is deleted). Past the commit point a failure fails the log.
func (l *Log) swapIn(cleaned *segment.Segment, old []*segment.Segment, generation uint64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	discard := func(err error) error {
		_ = cleaned.Delete()
		return err
	}
	if err := l.writable(); err != nil {
		return discard(err)
	}
	i := slices.Index(l.segments, old[0])
	if l.cleaning.generation != generation || i < 0 || i+len(old) >= len(l.segments) ||
		!slices.Equal(l.segments[i:i+len(old)], old) {
		return discard(ErrCleanAborted)
	}
	if err := cleaned.RenameFiles(segment.SwapSuffix); err != nil {
		// A failed rename leaves the files' names unknown: reopening
		// sorts them out.
		return l.flush.fail(fmt.Errorf("clean %s: %w", l.dir, err))
	}
	if err := l.syncDir("commit cleaned segment"); err != nil {
		return err
	}
	for _, s := range old {
		for _, suffix := range segment.FileSuffixes() {
			name := s.Path(suffix)
			if err := l.fs.Rename(name, name+segment.DeletedSuffix); err != nil && !isNotExist(err) {
				return l.flush.fail(fmt.Errorf("clean %s: rename %s: %w", l.dir, name, err))
			}
		}
	}
	if err := l.syncDir("mark replaced segments deleted"); err != nil {
		return err
	}
	if err := cleaned.RenameFiles(""); err != nil {
		return l.flush.fail(fmt.Errorf("clean %s: %w", l.dir, err))
	}
	if err := l.syncDir("install cleaned segment"); err != nil {
		return err
	}
	// Readers hold mu while they use a segment: once the list changes, no
	// one is left in the old ones.
	l.mu.Lock()
	l.segments = slices.Concat(l.segments[:i], []*segment.Segment{cleaned}, l.segments[i+len(old):])
	l.mu.Unlock()
	for _, s := range old {
		_ = s.Close()
		for _, suffix := range segment.FileSuffixes() {
			if err := l.fs.Remove(s.Path(suffix) + segment.DeletedSuffix); err != nil && !isNotExist(err) {
				// Open removes what is left.
				l.logger.Warn("removing a replaced segment failed", "segment", s.BaseOffset(), "err", err)
			}
		}
	}
	return nil
}

// syncDir syncs the log's directory during a swap, failing the log if that
// fails.
func (l *Log) syncDir(step string) error {
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.flush.fail(fmt.Errorf("clean %s: %s: sync directory: %w", l.dir, step, err))
	}
	return nil
}

// completeSwaps finishes or rolls back the swaps a crash interrupted, before
// the segments are loaded (see the steps above).
func (l *Log) completeSwaps() error {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return fmt.Errorf("log: list %s: %w", l.dir, err)
	}
	changed := false
	remove := func(name string) error {
		err := l.fs.Remove(path.Join(l.dir, name))
		if err != nil && !isNotExist(err) {
			return fmt.Errorf("log: remove leftover %s: %w", name, err)
		}
		changed = true
		return nil
	}
	// Roll back swaps that were not committed.
	var swaps []int64
	for _, name := range names {
		if strings.HasSuffix(name, segment.CleanedSuffix) {
			if err := remove(name); err != nil {
				return err
			}
		}
		if base, suffix, ok := segment.ParseFileName(name); ok && suffix == segment.LogSuffix+segment.SwapSuffix {
			swaps = append(swaps, base)
		}
	}
	slices.Sort(swaps)
	for _, base := range swaps {
		if err := l.completeSwap(base, names); err != nil {
			return err
		}
		changed = true
	}
	// What is left of swaps: index ".swap" files (their log's indexes are
	// rebuilt) and the replaced segments.
	for _, name := range names {
		if strings.HasSuffix(name, segment.SwapSuffix) || strings.HasSuffix(name, segment.DeletedSuffix) {
			if err := remove(name); err != nil {
				return err
			}
		}
	}
	if changed {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return fmt.Errorf("log: sync directory %s: %w", l.dir, err)
		}
	}
	return nil
}

// completeSwap installs the committed cleaned segment "<base>.log.swap":
// the segments whose base offsets lie in its offset range are the ones it
// replaces. Their files, and the indexes at its final names (which may be
// the old segment's), go first; then its ".txnindex.swap", if still there,
// replaces the .txnindex at its final name, and last its log takes its
// final name. A crash in between leaves the swap to do again: a cleaned
// segment always has a .txnindex, so a missing ".txnindex.swap" means it
// was renamed already, and the .txnindex at the final name is the cleaned
// segment's.
func (l *Log) completeSwap(base int64, names []string) error {
	swapName := path.Join(l.dir, segment.FileName(base, segment.LogSuffix)+segment.SwapSuffix)
	f, err := l.fs.Open(swapName)
	if err != nil {
		return fmt.Errorf("log: open %s: %w", swapName, err)
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return fmt.Errorf("log: size of %s: %w", swapName, err)
	}
	next := base
	sc := segment.NewScanner(f, 0, size, segment.ScanVerified)
	for sc.Next() {
		next = sc.Header().NextOffset()
	}
	f.Close()
	if err := sc.Err(); err != nil {
		// A swap file is synced whole before it is committed.
		return fmt.Errorf("log: committed cleaned segment %s: %w", swapName, err)
	}
	l.logger.Warn("completing an interrupted segment swap", "segment", base, "next_offset", next)
	txnSwap := segment.FileName(base, segment.TxnIndexSuffix) + segment.SwapSuffix
	for _, name := range names {
		b, suffix, ok := segment.ParseFileName(name)
		if !ok || b < base || b >= next {
			continue
		}
		switch suffix {
		case segment.IndexSuffix, segment.TimeIndexSuffix:
		case segment.LogSuffix:
			if b == base {
				continue // replaced by the rename
			}
		case segment.TxnIndexSuffix:
			if b == base && !slices.Contains(names, txnSwap) {
				continue // the cleaned segment's, renamed before a crash
			}
		default:
			continue
		}
		if err := l.fs.Remove(path.Join(l.dir, name)); err != nil && !isNotExist(err) {
			return fmt.Errorf("log: remove replaced %s: %w", name, err)
		}
	}
	if slices.Contains(names, txnSwap) {
		final := path.Join(l.dir, segment.FileName(base, segment.TxnIndexSuffix))
		if err := l.fs.Rename(path.Join(l.dir, txnSwap), final); err != nil {
			return fmt.Errorf("log: rename %s: %w", txnSwap, err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("log: sync directory %s: %w", l.dir, err)
	}
	final := path.Join(l.dir, segment.FileName(base, segment.LogSuffix))
	if err := l.fs.Rename(swapName, final); err != nil {
		return fmt.Errorf("log: rename %s: %w", swapName, err)
	}
	return nil
}
