package producer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// The sender moves ready batches into produce requests, as Kafka's Sender
// thread does. Its loop (run) owns the timers — linger, retry backoff,
// delivery timeout, metadata age — and starts a worker for each request
// while fewer than MaxInFlight are in flight. A worker sends its request,
// settles the batches with the answer (running their promises), then
// collects the next ready batches itself and goes on, so a busy pipeline
// passes batches from producer to client without waking the loop.

// request is one produce request and the batches it carries.
type request struct {
	batches []*batch
	size    int
	// deadline is the earliest delivery timeout of the batches.
	deadline time.Time
	msg      transport.ProduceRequest
}

// wakeSender makes the sender loop look at the partitions again.
func (p *Producer) wakeSender() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run is the sender loop. It returns when Close stops it.
func (p *Producer) run() {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	nextRefresh := time.Now().Add(p.cfg.metadataMaxAge)
	for {
		// While the loop looks, every new batch wakes it again, so that
		// none is missed between the look and the wait.
		p.senderWakeAt.Store(math.MaxInt64)
		next := p.dispatch()
		if now := time.Now(); !now.Before(nextRefresh) {
			p.refreshInBackground(nil)
			nextRefresh = now.Add(p.cfg.metadataMaxAge)
		}
		if next.IsZero() || nextRefresh.Before(next) {
			next = nextRefresh
		}
		p.senderWakeAt.Store(next.UnixNano())
		timer.Reset(time.Until(next))
		select {
		case <-p.wake:
		case <-timer.C:
		case <-p.stop:
			timer.Stop()
			return
		}
		timer.Stop()
	}
}

// dispatch starts workers for ready batches while request slots are free,
// and fails batches past their delivery timeout whether or not there are.
// It returns when the loop must look again: when the next batch that is
// not ready yet will be, or will expire (zero if no batch waits).
func (p *Producer) dispatch() time.Time {
	if p.idem != nil && !p.idem.ready.Load() {
		// Nothing is sent before the producer has its id.
		p.startInit()
		_, next := p.collect(nil, false)
		return next
	}
	for {
		if !p.takeSlot() {
			// A worker wakes the loop when it finishes.
			_, next := p.collect(nil, false)
			return next
		}
		req, next := p.collect(nil, true)
		if req == nil {
			p.inflight.Add(-1)
			return next
		}
		p.goroutines.Go(func() { p.work(req) })
	}
}

// takeSlot reserves one of the MaxInFlight request slots.
func (p *Producer) takeSlot() bool {
	for {
		n := p.inflight.Load()
		if int(n) >= p.cfg.maxInFlight {
			return false
		}
		if p.inflight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// work sends req and the requests that follow it while batches are ready,
// holding one request slot.
func (p *Producer) work(req *request) {
	for req != nil {
		p.send(req)
		var next time.Time
		req, next = p.collect(req, true)
		if req != nil && !next.IsZero() && next.UnixNano() < p.senderWakeAt.Load() {
			// A batch will be ready before the loop means to look: while
			// this worker is busy with its next request, the loop may
			// have a free slot for it.
			p.wakeSender()
		}
	}
	p.inflight.Add(-1)
	p.wakeSender() // for batches that wait for a slot, and to rearm timers
}

// collect gathers the ready batches of partitions with none in flight into
// a request (reusing reuse), within max.request.size, taking them out of
// their partitions; with send false, or when none is ready, it returns
// nil. Batches past the delivery timeout are failed on the way. It also
// returns when the next batch not collected will be ready or expire.
//
// A batch is ready when it is closed (full), when its linger has passed,
// when its retry backoff has, or at once while the producer flushes, closes
// or has Produce calls waiting for memory, as in Kafka's
// RecordAccumulator.ready.
func (p *Producer) collect(reuse *request, send bool) (*request, time.Time) {
	if p.stopped.Load() {
		return nil, time.Time{}
	}
	if p.idem != nil {
		if p.idem.bumpPending.Load() {
			p.bump()
		}
		p.idem.epochMu.RLock()
		if p.idem.bumpPending.Load() {
			send = false // until the new epoch
		}
	}
	now := time.Now()
	hurry := p.flushing.Load() > 0 || p.closing.Load() || p.memory.waiting.Load() > 0
	fatal := p.fatalErr()
	if fatal == nil && p.txn != nil {
		fatal = p.undrainedErr()
	}
	var (
		req     *request
		next    time.Time
		expired []*batch
		doomed  []*batch // failed by the idempotent producer's fatal error, or the transaction's
		needed  []*partitionState
		// addedBySend says a partition joined the transaction by its
		// first batch (transaction version 2).
		addedBySend bool
	)
	soonest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	parts := p.allPartitions.Load()
	start := int(p.drainFrom.Add(1))
	for i := range parts {
		ps := parts[(start+i)%len(parts)]
		ps.mu.Lock()
		if fatal != nil {
			for b := ps.frontLocked(); b != nil; b = ps.frontLocked() {
				ps.popFrontLocked()
				ps.markOutstandingLocked(b) // promises keep their order
				doomed = append(doomed, b)
			}
			ps.mu.Unlock()
			continue
		}
		for b := ps.frontLocked(); b != nil && !now.Before(b.deadline(p)); b = ps.frontLocked() {
			ps.popFrontLocked()
			ps.markOutstandingLocked(b) // promises keep their order
			expired = append(expired, b)
		}
		b := ps.frontLocked()
		if b == nil || !ps.canSendLocked(b) {
			// A partition waiting for its requests is looked at again
			// when one comes back.
			ps.mu.Unlock()
			continue
		}
		var readyAt time.Time
		switch {
		case !b.retryAt.IsZero():
			readyAt = b.retryAt
		case b != ps.open || hurry:
			readyAt = now
		default:
			readyAt = b.created.Add(p.cfg.linger)
		}
		if now.Before(readyAt) || !send {
			if now.Before(readyAt) {
				soonest(readyAt)
			} // else it waits for a slot, and a worker wakes the loop
			soonest(b.deadline(p))
			ps.mu.Unlock()
			continue
		}
		if p.txn != nil && !ps.inTxn && p.txn.addsItself.Load() {
			// Transaction version 2: the Produce adds the partition.
			ps.inTxn, ps.txnRequested = true, true
			addedBySend = true
		}
		if p.txn != nil && !ps.inTxn {
			// Ready, but not in the transaction yet: the partitions of a
			// drain are added in one request, then their batches go.
			if !ps.txnRequested {
				needed = append(needed, ps)
			}
			soonest(b.deadline(p))
			ps.mu.Unlock()
			continue
		}
		size := b.builder.Size()
		if req != nil && req.size+size > p.cfg.maxRequestSize {
			ps.mu.Unlock()
			soonest(now) // the rest goes in the next request
			break
		}
		if p.idem != nil && !b.sequenced {
			p.sequenceLocked(ps, b)
		}
		ps.takeLocked(b)
		ps.mu.Unlock()
		if req == nil {
			req = reuse
			if req == nil {
				req = new(request)
			}
			req.batches, req.size, req.deadline = req.batches[:0], 0, time.Time{}
		}
		req.batches = append(req.batches, b)
		req.size += size
		if d := b.deadline(p); req.deadline.IsZero() || d.Before(req.deadline) {
			req.deadline = d
		}
	}
	if p.idem != nil {
		// Promises run below, and may wait; a bump must not wait on them.
		p.idem.epochMu.RUnlock()
	}
	if len(needed) > 0 {
		p.requestPartitions(needed)
	}
	if addedBySend {
		// The coordinator may have the transaction open once the
		// request is sent, whatever its answer: EndTxn must end it.
		p.txn.mu.Lock()
		p.txn.started = true
		p.txn.mu.Unlock()
	}
	if len(expired) > 0 {
		p.expire(expired, now)
	}
	for _, b := range doomed {
		p.settle(b, -1, -1, fatal)
	}
	return req, next
}

// deadline is when the batch's delivery timeout passes.
func (b *batch) deadline(p *Producer) time.Time { return b.created.Add(p.cfg.deliveryTimeout) }

// expire fails batches whose delivery timeout passed before they were sent.
func (p *Producer) expire(bs []*batch, now time.Time) {
	for _, b := range bs {
		err := fmt.Errorf("%w: %d records for %s-%d, %v after the batch was created", ErrDeliveryTimeout,
			len(b.records), b.part.topic.name, b.part.id, now.Sub(b.created).Round(time.Millisecond))
		if b.lastErr != nil {
			err = fmt.Errorf("%w; last error: %w", err, b.lastErr)
		}
		p.settle(b, -1, -1, err)
	}
	p.wakeSender()
}

// requestContext returns the context of a request: it ends at
// RequestTimeout, at the delivery timeout of the request's first batch to
// expire if that is sooner, or when Close abandons the request. A context
// with a deadline costs a timer and a registration with the producer's
// context, over a microsecond, so requests share one while at least nine
// tenths of RequestTimeout are left on it and no delivery timeout is
// nearer. One that is replaced ends at its deadline, which releases it.
func (p *Producer) requestContext(deliveryDeadline time.Time) (context.Context, context.CancelFunc) {
	now := time.Now()
	deadline := now.Add(p.cfg.requestTimeout)
	if deliveryDeadline.Before(deadline) {
		return context.WithDeadline(p.ctx, deliveryDeadline)
	}
	if rc := p.requestCtx.Load(); rc != nil && rc.deadline.Sub(now) >= p.cfg.requestTimeout-p.cfg.requestTimeout/10 {
		return rc.ctx, func() {}
	}
	rc := &sharedContext{deadline: deadline}
	rc.ctx, rc.cancel = context.WithDeadline(p.ctx, rc.deadline)
	p.requestCtx.Store(rc)
	return rc.ctx, func() {}
}

// sharedContext is a context shared by requests, and its deadline.
type sharedContext struct {
	ctx      context.Context
	cancel   context.CancelFunc // called by its deadline, or by Close
	deadline time.Time
}

// send sends one request and settles its batches with the answer.
func (p *Producer) send(req *request) {
	msg := &req.msg
	msg.Acks, msg.Timeout = p.cfg.acks, p.cfg.requestTimeout
	msg.Version = 0
	if p.txn != nil {
		// The leader asks the transaction's coordinator about the first
		// batch of the transaction it takes (KIP-890 part 1), or, under
		// transaction version 2, has it add the partition (part 2).
		msg.TransactionalID = p.txn.id
		if p.txn.addsItself.Load() {
			msg.Version = produceAddingVersion
		}
	}
	msg.Topics = msg.Topics[:0]
	for _, b := range req.batches {
		// Every attempt encodes the batch's header anew: the node rewrote
		// the last attempt's in place (base offset, leader epoch, and with
		// LogAppendTime the timestamps and CRC). Uncompressed, the batch
		// goes in the builder's own buffer, which takes no more records:
		// copying it would cost as much as encoding the records did.
		wire, ok := b.builder.Finish()
		if !ok {
			b.wire = b.builder.AppendTo(b.wire[:0])
			wire = b.wire
		}
		b.attempts++
		tp := topicOf(msg, b.part.topic.name)
		tp.Partitions = append(tp.Partitions, transport.ProducePartition{Partition: b.part.id, Records: wire})
	}

	ctx, cancel := p.requestContext(req.deadline)
	resp, err := p.client.Produce(ctx, msg)
	cancel()
	if err != nil {
		err = p.requestError(ctx, err)
	}

	var refresh []string
	for _, b := range req.batches {
		var pr *transport.ProducePartitionResponse
		berr := err
		if berr == nil {
			pr = findPartition(resp, b)
			if pr == nil && p.cfg.acks != kafka.AcksNone {
				berr = fmt.Errorf("%w: no answer for %s-%d", kafka.ErrUnknownServerError, b.part.topic.name, b.part.id)
			}
		}
		switch {
		case berr == nil && p.cfg.acks == kafka.AcksNone:
			p.settle(b, -1, -1, nil)
		case berr == nil && pr.Err == nil:
			p.settle(b, pr.BaseOffset, pr.LogAppendTime, nil)
		default:
			if berr == nil {
				berr = pr.Err
			}
			if err != nil || pr == nil || mayHaveWritten(pr.Err) {
				b.maybeWritten = true
			}
			if needsMetadata(berr) {
				if !slices.Contains(refresh, b.part.topic.name) {
					refresh = append(refresh, b.part.topic.name)
				}
			}
			p.failed(b, berr)
		}
	}
	for i := range msg.Topics {
		tp := &msg.Topics[i]
		clear(tp.Partitions)
		tp.Partitions = tp.Partitions[:0]
	}
	clear(req.batches)
	req.batches = req.batches[:0]
	if len(refresh) > 0 {
		p.refreshInBackground(refresh)
	}
}

// topicOf returns the request's entry for a topic, adding it (and reusing
// the partitions slice a previous request left at that position).
func topicOf(msg *transport.ProduceRequest, name string) *transport.ProduceTopic {
	for i := range msg.Topics {
		if msg.Topics[i].Topic == name {
			return &msg.Topics[i]
		}
	}
	if n := len(msg.Topics); n < cap(msg.Topics) {
		msg.Topics = msg.Topics[:n+1]
		msg.Topics[n].Topic = name
		return &msg.Topics[n]
	}
	msg.Topics = append(msg.Topics, transport.ProduceTopic{Topic: name})
	return &msg.Topics[len(msg.Topics)-1]
}

// findPartition returns the answer for a batch's partition.
func findPartition(resp *transport.ProduceResponse, b *batch) *transport.ProducePartitionResponse {
	if resp == nil {
		return nil
	}
	name, id := b.part.topic.name, b.part.id
	for ti := range resp.Topics {
		tr := &resp.Topics[ti]
		if tr.Topic != name {
			continue
		}
		for pi := range tr.Partitions {
			if tr.Partitions[pi].Partition == id {
				return &tr.Partitions[pi]
			}
		}
	}
	return nil
}

// requestError says why a request got no answer: the producer closing,
// the request timing out (retriable, as Kafka's request timeout is), or
// what the client said.
func (p *Producer) requestError(ctx context.Context, err error) error {
	switch {
	case p.ctx.Err() != nil:
		return fmt.Errorf("%w: request abandoned: %w", ErrClosed, err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: no answer in time (request.timeout.ms %v, or the delivery timeout): %w", kafka.ErrRequestTimedOut, p.cfg.requestTimeout, err)
	}
	return err
}

// needsMetadata reports whether err says the producer's idea of the
// partition's leader is stale, as Kafka's InvalidMetadataException.
func needsMetadata(err error) bool {
	return errors.Is(err, kafka.ErrNotLeaderOrFollower) || errors.Is(err, kafka.ErrUnknownTopicOrPartition) ||
		errors.Is(err, kafka.ErrLeaderNotAvailable) || errors.Is(err, kafka.ErrFencedLeaderEpoch) ||
		errors.Is(err, kafka.ErrUnknownLeaderEpoch)
}

// failed handles a batch whose attempt failed: it goes back to the front of
// its partition to be sent again after the backoff when the error is
// retriable and retries and time remain; a batch too large for the topic is
// split, as Kafka does; anything else fails its records.
func (p *Producer) failed(b *batch, err error) {
	now := time.Now()
	switch {
	case p.stopped.Load() || errors.Is(err, ErrClosed):
	case errors.Is(err, kafka.ErrMessageTooLarge) && len(b.records) > 1:
		if p.split(b) {
			return
		}
	case p.overtaken(b, err) && now.Before(b.deadline(p)):
		// An older batch of the partition is still to land: this one
		// goes again, without backoff, once it has.
		p.retry(b, err, now)
		return
	case p.forgotten(b, err, now):
		return // sent again, its sequence started over
	case IsRetriable(err) && b.attempts <= p.cfg.retries:
		if now.Add(p.cfg.retryBackoff).Before(b.deadline(p)) {
			if p.cfg.onRetry != nil {
				p.cfg.onRetry(Retry{Topic: b.part.topic.name, Partition: b.part.id, Records: len(b.records), Attempt: b.attempts, Err: err})
			}
			p.retry(b, err, now.Add(p.cfg.retryBackoff))
			return
		}
		err = fmt.Errorf("%w: %d records for %s-%d: no time left to retry after: %w", ErrDeliveryTimeout,
			len(b.records), b.part.topic.name, b.part.id, err)
	}
	p.settle(b, -1, -1, err)
}

// retry puts a failed batch back in its partition's queue, to be sent again
// at retryAt.
func (p *Producer) retry(b *batch, err error, retryAt time.Time) {
	b.lastErr, b.retryAt = err, retryAt
	ps := b.part
	ps.mu.Lock()
	ps.leaveRequestLocked(b)
	ps.requeueLocked(b)
	ps.mu.Unlock()
	p.wakeSender() // to arm the backoff timer
}

// settle records the outcome of a batch — success at baseOffset, or
// failure with err — and runs its promises once every older batch of its
// partition has run theirs, then frees its memory. With idempotence, a
// batch that had a sequence and failed makes the producer fail (see
// ErrFatal).
func (p *Producer) settle(b *batch, baseOffset, logAppendTime int64, err error) {
	if err != nil && p.txn != nil {
		// Before any promise runs or Flush returns, so that a commit
		// waiting for the batch sees the transaction failed.
		p.txnFailed(err)
	}
	ps := b.part
	ps.mu.Lock()
	ps.leaveRequestLocked(b)
	if err != nil && p.idem != nil && b.sequenced && !p.closeGapLocked(b, err) {
		err = p.sequenceFailed(b, err)
	}

	ps.markOutstandingLocked(b)
	b.settled, b.result = true, batchResult{baseOffset, logAppendTime, err}
	if err == nil {
		ps.acked++
	}
	if ps.draining {
		ps.mu.Unlock() // the goroutine draining runs b's promises in turn
		return
	}
	ps.draining = true
	for len(ps.outstanding) > 0 && ps.outstanding[0].settled {
		// The head leaves the outstanding batches before its promises
		// run: it is older than any batch still to be answered, so it
		// counts no longer against the partition's limit, and the next
		// batch can be appended while its promises run.
		head := ps.outstanding[0]
		n := copy(ps.outstanding, ps.outstanding[1:])
		ps.outstanding[n] = nil
		ps.outstanding = ps.outstanding[:n]
		ps.promising = head
		wake := ps.queued() > 0 && len(ps.outstanding) < ps.limit
		ps.mu.Unlock()
		if wake {
			p.wakeSender() // a closed batch is ready; this goroutine is busy
		}
		p.keepPromises(head)
		ps.mu.Lock()
		ps.promising = nil
		if head.done != nil {
			close(head.done)
		}
		ps.mu.Unlock()
		p.discard(head)
		ps.mu.Lock()
	}
	ps.draining = false
	ps.mu.Unlock()
}

// keepPromises runs the promises of a settled batch's records.
func (p *Producer) keepPromises(b *batch) {
	baseOffset, logAppendTime, err := b.result.baseOffset, b.result.logAppendTime, b.result.err
	for i := range b.records {
		pd := &b.records[i]
		r := pd.r
		switch {
		case err != nil || baseOffset < 0:
			r.Offset = -1
		default:
			r.Offset = baseOffset + int64(i)
		}
		if err == nil && logAppendTime >= 0 {
			r.Timestamp = time.UnixMilli(logAppendTime)
		}
		pd.promise(r, err)
	}
}

// split replaces a batch the topic found too large (MESSAGE_TOO_LARGE)
// with two batches of half its records each, sent in its place: Kafka's
// splitAndReenqueue. It reports false when the batch cannot be decoded.
func (p *Producer) split(b *batch) bool {
	decoded, err := record.Decode(b.builder.AppendTo(b.wire[:0]))
	if err != nil || len(decoded.Records) != len(b.records) {
		return false
	}
	half := len(b.records) / 2
	first := p.newBatch(b.part, b.reserved, b.created, 0)
	second := p.newBatch(b.part, 0, b.created, 0)
	for i, rec := range decoded.Records {
		nb := first
		if i >= half {
			nb = second
		}
		rec.Offset = 0
		nb.add(b.records[i].r, &rec, b.records[i].promise)
	}
	// The halves take b's place, as sent batches (a retry goes alone),
	// and with idempotence b's sequence numbers.
	first.attempts, second.attempts = b.attempts, b.attempts
	if b.sequenced {
		p.setSequence(first, b.baseSequence)
		p.setSequence(second, incrementSequence(b.baseSequence, int32(half)))
	}
	ps := b.part
	ps.mu.Lock()
	second.done, b.done = b.done, nil // a Flush waiting for b waits for its last part
	ps.leaveRequestLocked(b)
	i := ps.outstandingIndexLocked(b)
	ps.outstanding = slices.Insert(ps.outstanding, i+1, second)
	ps.outstanding[i] = first
	first.outstanding, second.outstanding = true, true
	ps.requeueLocked(first, second)
	ps.mu.Unlock()
	b.reserved = 0
	p.recycle(b)
	p.wakeSender()
	return true
}
