package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// Seek sets tp's position: the next Poll returns tp's records from offset
// on. What was fetched for tp and not yet returned is dropped, and an error
// that stopped tp is cleared. An offset outside the partition is reset as
// AutoOffsetReset says when it is fetched, as in Kafka.
func (c *Consumer) Seek(tp kafka.TopicPartition, offset int64) error {
	if offset < 0 {
		return fmt.Errorf("consumer: seek %v to negative offset %d", tp, offset)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	p := c.parts[tp]
	if p == nil {
		return fmt.Errorf("%w: %v", ErrNotAssigned, tp)
	}
	c.seekLocked(p, offset)
	return nil
}

func (c *Consumer) seekLocked(p *partState, offset int64) {
	c.repositionLocked(p, true)
	p.state, p.position, p.fetchOffset = posReady, offset, offset
	c.wakeFetcherLocked(p, true)
	c.broadcastLocked()
}

// SeekToBeginning moves each of tps, or every assigned partition when none
// is named, to its log start offset: the oldest record kept. Like Kafka's
// seekToBeginning it is lazy: the offset is looked up by the next Poll or
// Position.
func (c *Consumer) SeekToBeginning(tps ...kafka.TopicPartition) error {
	return c.seekToReset(Earliest, tps)
}

// SeekToEnd moves each of tps, or every assigned partition when none is
// named, to its end (the high watermark): the next Poll returns only
// records produced after the end was looked up. Like Kafka's seekToEnd it
// is lazy: the offset is looked up by the next Poll or Position.
func (c *Consumer) SeekToEnd(tps ...kafka.TopicPartition) error {
	return c.seekToReset(Latest, tps)
}

func (c *Consumer) seekToReset(to OffsetReset, tps []kafka.TopicPartition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, err := c.partitionsLocked(tps)
	if err != nil {
		return err
	}
	for _, p := range ps {
		c.resetLocked(p, to, true)
	}
	c.broadcastLocked()
	return nil
}

// resetLocked drops p's position, for the fetcher to look one up as to
// says. byUser says the consumer's user asked for it.
func (c *Consumer) resetLocked(p *partState, to OffsetReset, byUser bool) {
	c.repositionLocked(p, byUser)
	p.state, p.reset = posReset, to
	c.wakeFetcherLocked(p, true)
}

// partitionsLocked returns the states of tps, or of every assigned
// partition when tps is empty.
func (c *Consumer) partitionsLocked(tps []kafka.TopicPartition) ([]*partState, error) {
	if c.closed {
		return nil, ErrClosed
	}
	if len(tps) == 0 {
		return append([]*partState(nil), c.order...), nil
	}
	ps := make([]*partState, len(tps))
	for i, tp := range tps {
		if ps[i] = c.parts[tp]; ps[i] == nil {
			return nil, fmt.Errorf("%w: %v", ErrNotAssigned, tp)
		}
	}
	return ps, nil
}

// SeekToTimestamp moves each of tps, or every assigned partition when none
// is named, to the first record whose timestamp is at or after ts, found
// with ListOffsets, as Kafka's offsetsForTimes followed by seek. A
// partition with no such record moves to its end. It returns when the
// offsets are found; a partition whose lookup fails keeps its position,
// and the error names it.
func (c *Consumer) SeekToTimestamp(ctx context.Context, ts time.Time, tps ...kafka.TopicPartition) error {
	c.mu.Lock()
	ps, err := c.partitionsLocked(tps)
	c.mu.Unlock()
	if err != nil || len(ps) == 0 {
		return err
	}
	var names []kafka.TopicPartition
	for _, p := range ps {
		names = append(names, p.tp)
	}
	req := listOffsetsRequest(names, func(kafka.TopicPartition) int64 { return ts.UnixMilli() }, c.cfg.isolation)
	resp, err := c.client.ListOffsets(ctx, req)
	if err != nil {
		return fmt.Errorf("consumer: seek to %v: %w", ts, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	var errs []error
	found := 0
	eachListOffsets(resp, func(tp kafka.TopicPartition, r *transport.ListOffsetsPartitionResponse) {
		p := c.parts[tp]
		if p == nil {
			return
		}
		found++
		switch {
		case r.Err != nil:
			errs = append(errs, &FetchError{Topic: tp.Topic, Partition: tp.Partition, Offset: -1, Err: r.Err})
		case r.Offset < 0:
			c.resetLocked(p, Latest, true)
		default:
			c.seekLocked(p, r.Offset)
		}
	})
	if found < len(names) {
		errs = append(errs, fmt.Errorf("consumer: seek to %v: the answer leaves out %d partitions", ts, len(names)-found))
	}
	c.broadcastLocked()
	return errors.Join(errs...)
}

// Position returns tp's position: the offset of the next record Poll will
// return for it. When the position is still to be looked up (after
// SeekToBeginning, SeekToEnd, or for a new partition) it waits until the
// consumer has found it, or ctx ends. A partition stopped by an error
// returns that error (a *FetchError).
func (c *Consumer) Position(ctx context.Context, tp kafka.TopicPartition) (int64, error) {
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return -1, ErrClosed
		}
		p := c.parts[tp]
		if p == nil {
			c.mu.Unlock()
			return -1, fmt.Errorf("%w: %v", ErrNotAssigned, tp)
		}
		switch p.state {
		case posReady:
			off := p.position
			c.mu.Unlock()
			return off, nil
		case posStopped:
			err := p.err
			c.mu.Unlock()
			return -1, err
		}
		c.startLocked()
		ready := c.ready
		c.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
}

// Pause stops fetching tps, or every assigned partition when none is
// named, and Poll returns none of their records until Resume. Positions do
// not change; records fetched ahead are dropped, so that a paused
// partition holds no buffer, and fetched again after Resume.
func (c *Consumer) Pause(tps ...kafka.TopicPartition) error {
	return c.setPaused(tps, true)
}

// Resume undoes Pause for tps, or every assigned partition when none is
// named.
func (c *Consumer) Resume(tps ...kafka.TopicPartition) error {
	return c.setPaused(tps, false)
}

func (c *Consumer) setPaused(tps []kafka.TopicPartition, paused bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, err := c.partitionsLocked(tps)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if paused && !p.paused {
			c.dropChunksLocked(p)
			p.epoch++ // what is in flight for it is stale
			p.fetchOffset = p.position
		}
		p.paused = paused
		c.wakeFetcherLocked(p, paused)
	}
	c.broadcastLocked()
	return nil
}

// Paused returns the paused partitions, sorted.
func (c *Consumer) Paused() []kafka.TopicPartition {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []kafka.TopicPartition
	for _, p := range c.order {
		if p.paused {
			out = append(out, p.tp)
		}
	}
	return out
}

// listOffsetsRequest asks for the offset of each of tps at the timestamp
// at returns for it.
func listOffsetsRequest(tps []kafka.TopicPartition, at func(kafka.TopicPartition) int64, isolation IsolationLevel) *transport.ListOffsetsRequest {
	req := &transport.ListOffsetsRequest{ReplicaID: kafka.ConsumerReplicaID, Isolation: isolation}
	topics := map[string]int{}
	for _, tp := range tps {
		i, ok := topics[tp.Topic]
		if !ok {
			i = len(req.Topics)
			topics[tp.Topic] = i
			req.Topics = append(req.Topics, transport.ListOffsetsTopic{Topic: tp.Topic})
		}
		t := &req.Topics[i]
		t.Partitions = append(t.Partitions, transport.ListOffsetsPartition{
			Partition: tp.Partition, CurrentLeaderEpoch: -1, Timestamp: at(tp),
		})
	}
	return req
}

// eachListOffsets calls fn with each partition of resp.
func eachListOffsets(resp *transport.ListOffsetsResponse, fn func(kafka.TopicPartition, *transport.ListOffsetsPartitionResponse)) {
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			fn(kafka.TopicPartition{Topic: t.Topic, Partition: t.Partitions[j].Partition}, &t.Partitions[j])
		}
	}
}
