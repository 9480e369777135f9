package consumer

import (
	"context"
	"errors"
	"iter"

	"github.com/partlog/partlog/record"
)

// Records returns an iterator over the consumer's records, for the
// idiomatic loop:
//
//	for rec, err := range c.Records(ctx) {
//		if err != nil {
//			// a *FetchError, or a client's error, as Poll returns them
//			continue
//		}
//		process(rec)
//	}
//
// It yields each record, or a zero Record and an error for each error
// Poll would return, and waits for records as long as it takes. The loop
// ends when ctx ends or the consumer is closed, without yielding that
// error: check ctx.Err() after the loop to tell.
//
// Records are yielded by value: each is the caller's, to keep as it is,
// and its Key, Value and Headers point into fetched bytes that the
// consumer never reuses — unless FetchBuffers(ReuseBuffers) says so: then
// they are valid only until the loop body returns. The iterator decodes batches straight into the
// values it yields, so that a loop allocates nothing per record: it is the
// fastest way through a partition.
//
// Each partition's position moves past a run of records (up to
// MaxPollRecords) as the loop starts on it. The loop body may Seek: the
// records of the moved partition not yet yielded are dropped. Breaking out
// of the loop leaves each partition's position just after the last record
// the body got, so that the next Poll or loop goes on from there. The loop
// body must not call Poll.
func (c *Consumer) Records(ctx context.Context) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		var scratch []record.Record
		for {
			r, err := c.take(ctx)
			if err != nil {
				if errors.Is(err, ErrClosed) || ctx.Err() != nil {
					return
				}
				if !yield(Record{}, err) {
					return
				}
				continue
			}
			if !c.yieldRun(&r, &scratch, yield) {
				return
			}
		}
	}
}

// take waits for a run of records, or an error, until ctx ends or the
// consumer closes.
func (c *Consumer) take(ctx context.Context) (run, error) {
	if err := ctx.Err(); err != nil {
		return run{}, err
	}
	for {
		if c.grp != nil {
			if err := c.grp.poll(ctx); err != nil {
				return run{}, err
			}
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return run{}, ErrClosed
		}
		c.startLocked()
		c.recycleLocked()
		r, ok, err := c.takeLocked(c.cfg.maxPollRecords, true, nil)
		ready := c.ready
		c.mu.Unlock()
		if ok || err != nil {
			return r, err
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return run{}, ctx.Err()
		}
	}
}

// yieldRun yields the records of r, decoding its batches into scratch,
// and reports whether the loop goes on.
func (c *Consumer) yieldRun(r *run, scratch *[]record.Record, yield func(Record, error) bool) bool {
	seen := c.seeks.Load()
	// moved reports whether the loop body moved r's partition.
	moved := func() bool {
		if s := c.seeks.Load(); s != seen {
			seen = s
			return c.movedSince(r)
		}
		return false
	}
	for i := range r.records {
		if !yield(r.records[i], nil) {
			c.unread(r, r.records[i+1:], r.end, nil)
			return false
		}
		if moved() {
			return true
		}
	}
	br := batchReader{data: r.batches, from: r.from, crc: c.cfg.checkCRCs, aborted: r.aborted, pos: r.start}
	for {
		before := br.pos
		h, src, ok, err := br.next(scratch)
		if err != nil {
			return yield(Record{}, c.failRun(r, before, err, true))
		}
		if !ok {
			return true
		}
		epoch, tsType := h.PartitionLeaderEpoch, h.Attributes.TimestampType()
		for i := range src {
			s := &src[i]
			if s.Offset < r.from {
				continue
			}
			rec := Record{
				Topic: r.tp.Topic, Partition: r.tp.Partition, LeaderEpoch: epoch,
				Offset: s.Offset, Timestamp: timeOf(s.Timestamp), TimestampType: tsType,
				Key: s.Key, Value: s.Value, Headers: s.Headers,
			}
			if !yield(rec, nil) {
				rest := appendRecords(nil, src[i+1:], r.tp, r.from, &h)
				c.unread(r, rest, h.NextOffset(), br.data)
				return false
			}
			if moved() {
				return true
			}
		}
	}
}

// movedSince reports whether r's partition was moved, or unassigned,
// since r was taken.
func (c *Consumer) movedSince(r *run) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[r.tp]
	return p == nil || p.seeks != r.seeks
}
