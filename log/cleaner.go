package log

import (
	"context"
	"fmt"
	"slices"

	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
)

// cleaner is one Clean's working state.
type cleaner struct {
	l     *Log
	now   int64 // the clean's time, for delete horizons
	stats *CleanStats

	offsets       *offsetMap
	producerTails map[int64]int64 // producer ID -> base offset of its last data batch
	txns          cleanerTxns

	// Scratch reused from batch to batch.
	records []record.Record
	keep    []int
	builder *record.Builder
	out     []byte
	scratch []byte
	headers []record.Header
}

func newCleaner(l *Log, now int64, st *CleanStats) *cleaner {
	return &cleaner{l: l, now: now, stats: st, offsets: newOffsetMap(), producerTails: map[int64]int64{},
		txns:    cleanerTxns{open: map[int64]int64{}, aborted: map[int64][][2]int64{}},
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
// segments it replaces, whose markers it keeps — and a .txnindex even when
// there are none, which an interrupted swap's recovery relies on (see
// swap.go).
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
		return batch, true, nil // transaction markers stay
	}
	if c.txns.keepsWhole(&h) {
		return batch, true, nil // an open or aborted transaction's records stay as they are
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
		if tail, ok := c.producerTails[h.ProducerID]; mustKeep || ok && tail == h.BaseOffset {
			return record.EmptyBatch(h), false, nil
		}
		return nil, false, nil
	}
	opts := h.Options()
	if needHorizon {
		opts.DeleteHorizon = max(c.now+max(c.l.options().DeleteRetentionMs.Milliseconds(), 0), 1)
	}
	c.builder.Reset(opts)
	for _, i := range c.keep {
		c.builder.AppendWithOffset(b.Records[i])
	}
	c.scratch = c.builder.AppendTo(c.scratch[:0])
	// The batch keeps its offset range; rewriting the delta costs a
	// second CRC pass, needed only when its last record went.
	if last := b.Records[c.keep[len(c.keep)-1]]; last.Offset != h.LastOffset() {
		record.SetLastOffsetDelta(c.scratch, h.LastOffsetDelta)
	}
	return c.scratch, false, nil
}
