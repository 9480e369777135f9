package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// The fetcher is the consumer's one goroutine. It loops: plan a step under
// the lock, take it without the lock, apply its answer under the lock. A
// step is one request — Metadata (to find a subscription's partitions),
// ListOffsets (to find positions) or Fetch — or a wait for something to
// do. Only one request is in flight at a time, as Kafka's consumer keeps
// one fetch in flight per node. The fetcher keeps fetching while the
// consumer buffers less than FetchMaxBytes, so that the next fetch is on
// its way while Poll's caller works through the records before it; it
// queues what it fetched as whole batches, which Poll (or Records)
// decodes, so that the buffer holds raw bytes, not decoded records.

// step is what the fetcher does next.
type step struct {
	metadata bool
	resets   []target
	fetch    []target
	// buf is the buffer to fetch into, when buffers are reused.
	buf *fetchBuf
	// until is when to plan again if nothing wakes the fetcher earlier;
	// zero means only when woken.
	until time.Time
}

// target is a partition a request asks about, with the epoch the answer
// must still match, and the offset fetched from or the timestamp whose
// offset is asked for.
type target struct {
	p     *partState
	epoch uint64
	from  int64
	at    int64
}

func (c *Consumer) run() {
	defer close(c.donec)
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		now := time.Now()
		s := c.planLocked(now)
		ctx, cancel := c.ctx, context.CancelFunc(nil)
		if len(s.fetch) > 0 {
			ctx, cancel = context.WithCancel(c.ctx)
			c.cancelFetch = cancel
		}
		c.mu.Unlock()
		switch {
		case s.metadata:
			c.refreshMetadata()
		case len(s.resets) > 0:
			c.resetOffsets(s.resets)
		case len(s.fetch) > 0:
			c.fetch(ctx, now, s.fetch, s.buf)
			cancel()
		default:
			c.wait(s.until)
		}
	}
}

// wait blocks until the fetcher is woken, until passes, or the consumer
// closes.
func (c *Consumer) wait(until time.Time) {
	var timeout <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-c.kick:
	case <-timeout:
	case <-c.closing:
	}
}

// planLocked decides the fetcher's next step.
func (c *Consumer) planLocked(now time.Time) step {
	var s step
	if !c.started {
		return s
	}
	if now.Before(c.requests.until) {
		s.until = c.requests.until
		return s
	}
	if c.cfg.subscribing && c.grp == nil {
		if !now.Before(c.metadataDue) {
			s.metadata = true
			return s
		}
		s.until = c.metadataDue
	}
	later := func(t time.Time) {
		if s.until.IsZero() || t.Before(s.until) {
			s.until = t
		}
	}
	stopped := false
	for _, p := range c.order {
		if p.state != posReset {
			continue
		}
		if now.Before(p.retry.until) {
			later(p.retry.until)
			continue
		}
		if p.reset == None {
			c.stopLocked(p, &FetchError{Topic: p.tp.Topic, Partition: p.tp.Partition, Offset: -1, Err: ErrNoOffset})
			stopped = true
			continue
		}
		at := kafka.LatestTimestamp
		if p.reset == Earliest {
			at = kafka.EarliestTimestamp
		}
		s.resets = append(s.resets, target{p: p, epoch: p.epoch, at: at})
	}
	if stopped {
		c.broadcastLocked()
	}
	if len(s.resets) > 0 {
		return s
	}
	if now.Before(c.idleUntil) {
		later(c.idleUntil)
		return s
	}
	for _, p := range c.order {
		if !c.fetchableLocked(p) {
			continue
		}
		if now.Before(p.retry.until) {
			later(p.retry.until)
			continue
		}
		p.inflight = true
		s.fetch = append(s.fetch, target{p: p, epoch: p.epoch, from: p.fetchOffset})
	}
	if len(s.fetch) > 0 {
		// Sized for a fetch of every partition, so that buffers fit
		// whichever partitions the next fetch is for.
		s.buf = c.getBufLocked(min(len(c.order)*int(c.cfg.maxPartitionFetchBytes), int(c.cfg.fetchMaxBytes)))
	}
	return s
}

// fetchableLocked reports whether p may be fetched, backoff aside: it has
// a position, is not paused or in flight, its last chunk did not leave the
// fetcher lost (see chunk.last), and the consumer buffers less than
// FetchMaxBytes.
func (c *Consumer) fetchableLocked(p *partState) bool {
	if p.state != posReady || p.paused || p.inflight || p.removed {
		return false
	}
	if n := len(p.chunks); n > 0 && p.chunks[n-1].last {
		return false
	}
	return c.buffered < int(c.cfg.fetchMaxBytes)
}

// releaseLocked stops counting n bytes against FetchMaxBytes, and wakes
// the fetcher if that makes room.
func (c *Consumer) releaseLocked(n int) {
	limit := int(c.cfg.fetchMaxBytes)
	was := c.buffered
	c.buffered -= n
	if was >= limit && c.buffered < limit {
		c.wakeFetcherLocked(nil, false)
	}
}

// stopLocked stops p with err, for Poll to report once.
func (c *Consumer) stopLocked(p *partState, err error) {
	c.dropChunksLocked(p)
	p.state, p.err, p.pending = posStopped, err, err
}

// failLocked backs p off after err. Poll reports err when report is set
// or when p has been failing for RetryTimeout.
func (c *Consumer) failLocked(p *partState, now time.Time, offset int64, err error, report bool) {
	if p.retry.fail(&c.cfg, now, report) {
		p.pending = &FetchError{Topic: p.tp.Topic, Partition: p.tp.Partition, Offset: offset, Err: err}
	}
	if kafka.IsRetriable(err) && c.cfg.subscribing {
		// The partition may have moved or gone: look again soon.
		if soon := now.Add(c.cfg.retryBackoff); soon.Before(c.metadataDue) {
			c.metadataDue = soon
			c.wakeFetcherLocked(nil, false)
		}
	}
}

// requestFailedLocked backs every request off after a request got no
// answer. Poll reports err unless it is retriable and has not lasted
// RetryTimeout.
func (c *Consumer) requestFailedLocked(now time.Time, what string, err error) {
	if c.requests.fail(&c.cfg, now, !kafka.IsRetriable(err)) {
		c.pending = fmt.Errorf("consumer: %s: %w", what, err)
		c.broadcastLocked()
	}
}

// refreshMetadata reads the subscribed topics' partitions and makes them
// the assignment: new partitions are added, to start as AutoOffsetReset
// says, and the partitions of topics that no longer exist are removed.
func (c *Consumer) refreshMetadata() {
	resp, err := c.client.Metadata(c.ctx, &transport.MetadataRequest{Topics: c.cfg.topics})
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.closed {
		return
	}
	if err != nil {
		c.metadataDue = now.Add(c.cfg.retryBackoff)
		c.requestFailedLocked(now, "metadata", err)
		return
	}
	c.requests = retry{}
	missing := false
	for _, t := range resp.Topics {
		if t.Err != nil {
			missing = true
			if errors.Is(t.Err, kafka.ErrUnknownTopicOrPartition) {
				var gone []*partState
				for _, p := range c.order {
					if p.tp.Topic == t.Topic {
						gone = append(gone, p)
					}
				}
				for _, p := range gone {
					c.removeLocked(p)
				}
			}
			continue
		}
		for _, pm := range t.Partitions {
			c.addLocked(kafka.TopicPartition{Topic: t.Topic, Partition: pm.Partition})
		}
	}
	if missing {
		c.metadataFailures++
		r := retry{failures: c.metadataFailures - 1}
		r.fail(&c.cfg, now, false)
		c.metadataDue = r.until
	} else {
		c.metadataFailures = 0
		c.metadataDue = now.Add(c.cfg.metadataMaxAge)
	}
	c.broadcastLocked()
}

// resetOffsets looks up the positions of the partitions in ts, each as its
// reset policy says.
func (c *Consumer) resetOffsets(ts []target) {
	tps := make([]kafka.TopicPartition, len(ts))
	byTP := make(map[kafka.TopicPartition]target, len(ts))
	for i, t := range ts {
		tps[i] = t.p.tp
		byTP[t.p.tp] = t
	}
	req := listOffsetsRequest(tps, func(tp kafka.TopicPartition) int64 { return byTP[tp].at }, c.cfg.isolation)
	resp, err := c.client.ListOffsets(c.ctx, req)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.closed {
		return
	}
	if err != nil {
		c.requestFailedLocked(now, "list offsets", err)
		return
	}
	c.requests = retry{}
	eachListOffsets(resp, func(tp kafka.TopicPartition, r *transport.ListOffsetsPartitionResponse) {
		t, ok := byTP[tp]
		if !ok || t.p.removed || t.p.epoch != t.epoch || t.p.state != posReset {
			return
		}
		delete(byTP, tp)
		p := t.p
		switch {
		case r.Err != nil:
			c.failLocked(p, now, -1, r.Err, !kafka.IsRetriable(r.Err))
		case r.Offset < 0:
			c.failLocked(p, now, -1, fmt.Errorf("%w: no offset in the answer", kafka.ErrUnknownServerError), true)
		default:
			p.retry = retry{}
			p.state, p.position, p.fetchOffset = posReady, r.Offset, r.Offset
		}
	})
	for _, t := range byTP { // left out of the answer
		if !t.p.removed && t.p.epoch == t.epoch {
			c.failLocked(t.p, now, -1, fmt.Errorf("%w: partition left out of the answer", kafka.ErrUnknownServerError), false)
		}
	}
	c.broadcastLocked()
}

// fetch sends one fetch for the partitions in ts and queues each
// partition's whole batches for Poll. ctx is cancelled when a partition
// that is not part of the fetch wants fetching, or one that is was moved.
func (c *Consumer) fetch(ctx context.Context, start time.Time, ts []target, buf *fetchBuf) {
	req := &transport.FetchRequest{
		ReplicaID: kafka.ConsumerReplicaID,
		MaxWait:   c.cfg.fetchMaxWait,
		MinBytes:  c.cfg.fetchMinBytes,
		MaxBytes:  c.cfg.fetchMaxBytes,
		Isolation: c.cfg.isolation,
	}
	if buf != nil {
		req.Buffer = buf.b
	}
	for _, t := range ts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != t.p.tp.Topic {
			req.Topics = append(req.Topics, transport.FetchTopic{Topic: t.p.tp.Topic})
		}
		ft := &req.Topics[len(req.Topics)-1]
		ft.Partitions = append(ft.Partitions, transport.FetchPartition{
			Partition:          t.p.tp.Partition,
			CurrentLeaderEpoch: -1,
			FetchOffset:        t.from,
			LastFetchedEpoch:   -1,
			LogStartOffset:     -1,
			MaxBytes:           c.cfg.maxPartitionFetchBytes,
		})
	}
	resp, err := c.client.Fetch(ctx, req)
	cancelled := ctx.Err() != nil

	// Find the whole batches without the lock; Poll decodes them.
	answers := make([]*transport.FetchPartitionResponse, len(ts))
	chunks := make([]*chunk, len(ts))
	empty := true
	answered := 0
	if err == nil {
		matchFetch(resp, ts, answers)
		for i, t := range ts {
			a := answers[i]
			if a != nil {
				answered += len(a.Records)
			}
			if a == nil || a.Err != nil || len(a.Records) == 0 {
				continue
			}
			limit := a.HighWatermark
			if c.cfg.isolation == ReadCommitted && a.LastStableOffset >= 0 {
				limit = min(limit, a.LastStableOffset)
			}
			data, next, bad := scanBatches(a.Records, t.from, limit)
			if len(data) == 0 {
				continue
			}
			var aborted []int64
			if c.cfg.isolation == ReadCommitted && len(a.AbortedTransactions) > 0 {
				aborted = abortedBatches(data, a.AbortedTransactions)
			}
			empty = false
			chunks[i] = &chunk{
				data: data, from: t.from, end: t.from, fetched: next, bytes: len(data), last: bad, aborted: aborted,
				highWatermark: a.HighWatermark, lastStable: a.LastStableOffset, logStart: a.LogStartOffset,
			}
		}
	}
	shared := buf != nil && !copyOutSmall(cap(buf.b), chunks)

	c.mu.Lock()
	defer c.mu.Unlock()
	// Every chunk queued holds a reference to the buffer, whether or not
	// its bytes landed in it; the buffer goes back at once if none does.
	defer c.putBufLocked(buf)
	c.outgrewLocked(buf, answered)
	now := time.Now()
	c.cancelFetch = nil
	for _, t := range ts {
		t.p.inflight = false
	}
	if c.closed {
		return
	}
	if err != nil {
		if !cancelled || c.ctx.Err() != nil {
			c.requestFailedLocked(now, "fetch", err)
		}
		return // cancelled on purpose: plan again at once
	}
	c.requests = retry{}
	if empty && now.Sub(start) < c.cfg.retryBackoff {
		c.idleUntil = start.Add(c.cfg.retryBackoff)
	}
	for i, t := range ts {
		if t.p.removed || t.p.epoch != t.epoch {
			continue // moved or unassigned since: the answer is stale
		}
		if ch := chunks[i]; ch != nil && shared {
			ch.buf = buf
			buf.refs++
		}
		c.applyLocked(t, answers[i], chunks[i], now)
	}
	c.broadcastLocked()
}

// matchFetch finds the answer for each target, in the order asked when
// the answer keeps it.
func matchFetch(resp *transport.FetchResponse, ts []target, answers []*transport.FetchPartitionResponse) {
	i := 0
	inOrder := true
	for ti := range resp.Topics {
		rt := &resp.Topics[ti]
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			if inOrder && i < len(ts) && ts[i].p.tp.Topic == rt.Topic && ts[i].p.tp.Partition == rp.Partition {
				answers[i] = rp
				i++
				continue
			}
			inOrder = false
			for j := range ts {
				if answers[j] == nil && ts[j].p.tp.Topic == rt.Topic && ts[j].p.tp.Partition == rp.Partition {
					answers[j] = rp
					break
				}
			}
		}
	}
}

// applyLocked applies one partition's answer to a fetch.
func (c *Consumer) applyLocked(t target, a *transport.FetchPartitionResponse, ch *chunk, now time.Time) {
	p := t.p
	if a == nil {
		c.failLocked(p, now, t.from, fmt.Errorf("%w: partition left out of the answer", kafka.ErrUnknownServerError), false)
		return
	}
	switch {
	case a.Err == nil:
		p.retry = retry{}
		p.highWatermark = a.HighWatermark
		if ch == nil {
			return // nothing new
		}
		p.fetchOffset = ch.fetched
		p.chunks = append(p.chunks, ch)
		p.resets = 0
		c.buffered += ch.bytes
	case errors.Is(a.Err, kafka.ErrOffsetOutOfRange):
		if c.cfg.reset == None {
			c.stopLocked(p, &FetchError{Topic: p.tp.Topic, Partition: p.tp.Partition, Offset: t.from, Err: a.Err})
			return
		}
		c.resetLocked(p, c.cfg.reset, false)
		if p.resets++; p.resets > 1 {
			// Out of range again right after a reset: the node's offsets
			// are moving (retention at work), or it contradicts itself.
			c.failLocked(p, now, t.from, a.Err, false)
		}
	case errors.Is(a.Err, kafka.ErrCorruptMessage):
		c.stopLocked(p, &FetchError{Topic: p.tp.Topic, Partition: p.tp.Partition, Offset: t.from, Err: a.Err})
	default:
		c.failLocked(p, now, t.from, a.Err, !kafka.IsRetriable(a.Err))
	}
}
