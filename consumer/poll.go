package consumer

import (
	"context"
	"time"
)

// Poll returns the records that are ready, at most MaxPollRecords of
// them, and moves each partition's position past the records returned.
// When none are ready it waits for some, up to timeout (not at all when
// timeout is zero or less), and returns an empty Fetches and a nil error
// if none come. It does not loop: a fetch waits in the node, up to
// FetchMaxWait, for records to arrive, and Poll waits for the fetch.
//
// Poll returns records or an error, never both. Errors come one at a time,
// each once, after the records fetched before them:
//
//   - A *FetchError that stops its partition until a Seek (or SeekTo...):
//     ErrNoOffset when the partition has no position and AutoOffsetReset is
//     None; kafka.ErrOffsetOutOfRange when its position is out of range
//     and AutoOffsetReset is None (with Earliest or Latest the position is
//     reset instead, silently); a batch that failed its checks
//     (record.ErrCorrupt, and kafka.ErrCorruptMessage when the node
//     found it), at the batch's offset, after the records before it.
//   - A *FetchError that does not stop its partition, which is retried
//     with backoff: a retriable error (kafka.IsRetriable, such as
//     kafka.ErrNotLeaderOrFollower, or ErrUnknownTopicOrPartition
//     while metadata catches up) once it has lasted RetryTimeout, and
//     any other error at once.
//   - An error from the client for a request that got no answer (the node
//     closed, the network failed), wrapped: at once unless retriable.
//   - ctx's error when ctx ends, and ErrClosed once the consumer is closed.
//
// Fetching goes on in the background between Polls, up to FetchMaxBytes
// ahead, so that records are usually ready when Poll is called. The first
// Poll starts it, and looks up the positions of the partitions that have
// none.
//
// With a Group, Poll first does what the group needs: an automatic commit
// when one is due, and a rebalance when one is due — revoking, rejoining,
// assigning, with the rebalance callbacks — which waits for the other
// members to rejoin and so may take longer than timeout (at most the
// group's rebalance timeout, or until ctx ends).
//
// Poll and Records are meant for one goroutine: do not call Poll from
// another goroutine, or from the body of a Records loop, while a Records
// loop runs.
func (c *Consumer) Poll(ctx context.Context, timeout time.Duration) (Fetches, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var expired <-chan time.Time
	for {
		if c.grp != nil {
			if err := c.grp.poll(ctx); err != nil {
				return nil, err
			}
		}
		fs, ready, err := c.collect()
		if len(fs) > 0 || err != nil || timeout <= 0 {
			return fs, err
		}
		if expired == nil {
			t := time.NewTimer(timeout)
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-ready:
		case <-expired:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// collect takes up to MaxPollRecords ready records, one run from each
// partition at most, or an error. With neither it returns the channel
// that tells when to look again.
func (c *Consumer) collect() (Fetches, <-chan struct{}, error) {
	c.pollMu.Lock()
	defer c.pollMu.Unlock()
	max := c.cfg.maxPollRecords
	var out Fetches
	var taken []*partState
	n := 0
	for first := true; n < max; first = false {
		c.mu.Lock()
		if first {
			c.recycleLocked() // the last Poll's records are done with
		}
		if c.closed {
			c.mu.Unlock()
			if n > 0 {
				break
			}
			return nil, nil, ErrClosed
		}
		c.startLocked()
		r, ok, err := c.takeLocked(max-n, n == 0, taken)
		ready := c.ready
		c.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			if n == 0 {
				return nil, ready, nil
			}
			break
		}
		taken = append(taken, r.p)
		recs, err := c.decodeRun(&r, max-n, n == 0)
		if len(recs) == 0 && err == nil {
			// Batches without records for us (a compacted topic's
			// emptied batches and gaps) moved the position only: take
			// from the partition again, and let startLocked fetch on.
			taken = taken[:len(taken)-1]
		}
		if len(recs) > 0 {
			out = append(out, FetchPartition{
				Topic: r.tp.Topic, Partition: r.tp.Partition,
				HighWatermark: r.highWatermark, LastStableOffset: r.lastStable, LogStartOffset: r.logStart,
				Records: recs,
			})
			n += len(recs)
		}
		if err != nil {
			if n == 0 {
				return nil, nil, err
			}
			break // reported by the next Poll
		}
	}
	return out, nil, nil
}

// decodeRun returns the records of r, at most want: those decoded before,
// or those of its batches, decoded into a new slice. What is beyond want
// is given back. A batch that fails its checks stops the partition there
// and returns the error with the records before it; report says whether
// the caller reports it, or leaves it to the next Poll.
func (c *Consumer) decodeRun(r *run, want int, report bool) ([]Record, error) {
	if r.batches == nil {
		return r.records, nil
	}
	recs := make([]Record, 0, countRecords(r.batches, r.from, want, r.aborted))
	br := batchReader{data: r.batches, from: r.from, crc: c.cfg.checkCRCs, aborted: r.aborted, pos: r.start}
	for {
		before := br.pos
		h, src, ok, err := br.next(&c.pollScratch)
		if err != nil {
			return recs, c.failRun(r, before, err, report && len(recs) == 0)
		}
		if !ok {
			return recs, nil
		}
		recs = appendRecords(recs, src, r.tp, r.from, &h)
		if len(recs) >= want {
			if len(recs) > want || len(br.data) > 0 {
				c.unread(r, recs[want:], h.NextOffset(), br.data)
			}
			return recs[:want:want], nil
		}
	}
}
