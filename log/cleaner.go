package log

import (
	"context"
	"fmt"
	"slices"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
)

// cleaner is one clean's working state.
type cleaner struct {
	l      *Log
	now    int64 // the clean's time, for delete horizons
	bounds CleanBounds
	stats  *CleanStats

	offsets *offsetMap
	tails   map[int64]*producerTail // producer ID -> where its state lies
	txns    cleanerTxns

	// Scratch reused from batch to batch.
	records []record.Record
	keep    []int
	kept    []record.Record
	builder *record.Builder
	out     []byte
	scratch []byte
	headers []record.Header
}

func newCleaner(l *Log, now int64, b CleanBounds, st *CleanStats) *cleaner {
	return &cleaner{l: l, now: now, bounds: b, stats: st, offsets: newOffsetMap(), tails: map[int64]*producerTail{},
		txns:    cleanerTxns{open: map[int64]int64{}, aborted: map[int64][][2]int64{}, live: map[int64]bool{}},
		builder: record.NewBuilder(record.DefaultBatchOptions())}
}

// flushBytes is how much a cleaned segment's writer buffers per write.
const flushBytes = 1 << 20

// cleanGroup writes the cleaned copy of a run of segments as a ".cleaned"
// segment, sealed and durable. It returns nil, having written nothing that
// stays, when the run is one segment from which nothing would go.
func (c *cleaner) cleanGroup(ctx context.Context, group []*segment.Segment) (*segment.Segment, error) {
	l := c.l
	if len(group) == 1 {
		// Most segments of a clean section change on no clean: find out
		// cheaply, without creating files and syncing them.
		change, err := c.wouldChange(group[0])
		if err != nil || !change {
			return nil, err
		}
	}
	// The cleaned segment is no larger than the group (but for a few bytes
	// of delete horizons): its indexes need no more room than the group's
	// bytes call for, which spares mapping segment.index.bytes.
	var groupBytes int64
	for _, s := range group {
		groupBytes += s.Size()
	}
	so := l.options().segmentOptions().WithDefaults()
	so.MaxIndexBytes = int(min((groupBytes/int64(so.IndexIntervalBytes)+16)*12, int64(so.MaxIndexBytes)))
	out, err := segment.CreateWithSuffix(l.fs, l.dir, group[0].BaseOffset(), c.now, so, segment.CleanedSuffix)
	if err != nil {
		return nil, fmt.Errorf("log: clean %s: %w", l.dir, err)
	}
	fail := func(err error) (*segment.Segment, error) {
		_ = out.Delete()
		return nil, err
	}
	changed := len(group) > 1
	c.out, c.headers = c.out[:0], c.headers[:0]
	for i, s := range group {
		if err := c.l.cleanCheck(ctx); err != nil {
			return fail(err)
		}
		size := s.Size()
		sc := segment.NewScanner(s.File(), 0, size, segment.ScanVerified)
		for sc.Next() {
			h := sc.Header()
			last := i == len(group)-1 && sc.Pos()+int64(h.Size()) == size
			kept, same, err := c.filter(h, sc.Batch(), last)
			if err != nil {
				return fail(fmt.Errorf("log: clean %s: segment %d at %d: %w", l.dir, s.BaseOffset(), sc.Pos(), err))
			}
			changed = changed || !same
			if kept == nil {
				continue
			}
			kh, _ := record.ParseHeader(kept)
			c.headers = append(c.headers, kh)
			c.out = append(c.out, kept...)
			if len(c.out) >= flushBytes {
				if err := c.write(out); err != nil {
					return fail(err)
				}
			}
		}
		if err := sc.Err(); err != nil {
			return fail(fmt.Errorf("log: clean %s: %w", l.dir, err))
		}
	}
	if !changed {
		return fail(nil)
	}
	if err := c.write(out); err != nil {
		return fail(err)
	}
	if err := c.copyTxnIndexes(group, out); err != nil {
		return fail(err)
	}
	if err := out.Seal(); err != nil {
		return fail(err)
	}
	if err := out.Flush(); err != nil {
		return fail(err)
	}
	return out, nil
}

// copyTxnIndexes gives the cleaned segment the .txnindex entries of the
// segments it replaces, but those of transactions the clean found empty
// (see keepsAbortedTxn) — and a .txnindex even when there are none, which
// an interrupted swap's recovery relies on (see swap.go).
func (c *cleaner) copyTxnIndexes(group []*segment.Segment, out *segment.Segment) error {
	l := c.l
	if err := out.EnsureTxnIndex(); err != nil {
		return fmt.Errorf("log: clean %s: %w", l.dir, err)
	}
	// Readers of the segment list are never in a segment retention or a
	// truncation closes: hold the list, and stop if the group left it.
	l.mu.RLock()
	defer l.mu.RUnlock()
	l.txnMu.Lock() // no rewrite of the group's entries meanwhile
	defer l.txnMu.Unlock()
	for _, s := range group {
		if !slices.Contains(l.segments, s) {
			return ErrCleanAborted
		}
	}
	for _, s := range group {
		es, err := s.AbortedTxns()
		if err != nil {
			return fmt.Errorf("log: clean %s: %w", l.dir, err)
		}
		for _, e := range es {
			if !c.keepsAbortedTxn(e) {
				continue
			}
			if err := out.AppendAbortedTxn(e); err != nil {
				return fmt.Errorf("log: clean %s: %w", l.dir, err)
			}
		}
	}
	return nil
}

// wouldChange reports whether cleaning would change the segment, reading
// it up to the first batch that changes.
func (c *cleaner) wouldChange(s *segment.Segment) (bool, error) {
	saved := *c.stats
	defer func() { *c.stats = saved }()
	size := s.Size()
	sc := segment.NewScanner(s.File(), 0, size, segment.ScanVerified)
	for sc.Next() {
		h := sc.Header()
		_, same, err := c.filter(h, sc.Batch(), sc.Pos()+int64(h.Size()) == size)
		if err != nil {
			return false, fmt.Errorf("log: clean %s: segment %d at %d: %w", c.l.dir, s.BaseOffset(), sc.Pos(), err)
		}
		if !same {
			return true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("log: clean %s: %w", c.l.dir, err)
	}
	return false, nil
}

// write appends the buffered batches to the cleaned segment.
func (c *cleaner) write(out *segment.Segment) error {
	if len(c.headers) == 0 {
		return nil
	}
	if err := out.AppendBatches(c.headers, c.out); err != nil {
		return fmt.Errorf("log: clean %s: %w", c.l.dir, err)
	}
	c.out, c.headers = c.out[:0], c.headers[:0]
	return nil
}

// filter returns what the cleaned segment keeps of a batch: the batch
// itself (same), a rewrite with fewer records or a delete horizon, an empty
// batch, or nil. mustKeep says the batch ends its group, whose end offset
// the cleaned segment keeps. The returned bytes are valid until the next
// call.
func (c *cleaner) filter(h record.Header, batch []byte, mustKeep bool) (kept []byte, same bool, err error) {
	if h.Attributes.IsControl() {
		return c.filterControl(&h, batch, mustKeep)
	}
	switch c.txns.state(&h) {
	case txnOpen:
		return batch, true, nil // undecided: its records stay as they are
	case txnAborted:
		if c.l.cleaning.off.keepAborted {
			return batch, true, nil
		}
		c.stats.RecordsRead += int64(h.NumRecords)
		c.stats.AbortedRecordsRemoved += int64(h.NumRecords)
		return c.emptied(&h, batch, mustKeep)
	}
	if h.NumRecords == 0 {
		return c.emptied(&h, batch, mustKeep)
	}
	b, err := record.DecodeInto(c.records, batch, record.SkipCRC) // the scanner checked it
	if err != nil {
		return nil, false, err
	}
	c.records = b.Records
	c.stats.RecordsRead += int64(len(b.Records))
	c.keep = c.keep[:0]
	horizonPassed := h.Attributes.HasDeleteHorizon() && c.now >= h.BaseTimestamp
	tombstones := false
	for i, r := range b.Records {
		if r.Key == nil || c.offsets.superseded(r.Key, r.Offset) {
			continue
		}
		if r.Value == nil {
			if horizonPassed {
				c.stats.TombstonesRemoved++
				continue
			}
			tombstones = true
		}
		c.keep = append(c.keep, i)
	}
	c.stats.RecordsKept += int64(len(c.keep))
	needHorizon := tombstones && !h.Attributes.HasDeleteHorizon()
	switch {
	case len(c.keep) == len(b.Records) && !needHorizon:
		return batch, true, nil
	case len(c.keep) == 0:
		return c.emptied(&h, batch, mustKeep)
	}
	c.kept = c.kept[:0]
	for _, i := range c.keep {
		c.kept = append(c.kept, b.Records[i])
	}
	return c.rewrite(&h, c.kept, needHorizon), false, nil
}

// rewrite returns h's batch with only the records kept (at least one),
// and with a delete horizon DeleteRetentionMs ahead when stampHorizon. The
// batch keeps its offset range. The returned bytes are valid until the
// next call.
func (c *cleaner) rewrite(h *record.Header, kept []record.Record, stampHorizon bool) []byte {
	opts := h.Options()
	if stampHorizon {
		opts.DeleteHorizon = max(c.now+max(c.l.options().DeleteRetentionMs.Milliseconds(), 0), 1)
	}
	c.builder.Reset(opts)
	for _, r := range kept {
		c.builder.AppendWithOffset(r)
	}
	c.scratch = c.builder.AppendTo(c.scratch[:0])
	// The batch keeps its offset range; rewriting the delta costs a
	// second CRC pass, needed only when its last record went.
	if last := kept[len(kept)-1]; last.Offset != h.LastOffset() {
		record.SetLastOffsetDelta(c.scratch, h.LastOffsetDelta)
	}
	return c.scratch
}
