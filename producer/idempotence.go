package producer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// An idempotent producer (Kafka's enable.idempotence, KIP-98) gets a
// producer id from InitProducerId before it sends anything, and numbers
// each partition's records: a batch carries the id, the epoch and the
// sequence number of its first record, given when the batch is first sent
// and kept on every retry. The leader remembers each producer's last five
// batches per partition, answers a retry of one of them with its original
// offsets instead of appending it again, and refuses a batch that does not
// follow the last one (OUT_OF_ORDER_SEQUENCE_NUMBER).
//
// So up to MaxInFlight batches of a partition may be in flight at once. A
// batch that arrives before an older one that is still on its way — a
// Client promises no order between concurrent calls — is refused as out of
// order and sent again, alone, once the older ones have landed. Promises
// run in the order the batches were made, whatever order the answers came
// in.
//
// A batch that had its sequence and then failed for good leaves a gap. If
// no attempt of it can have been written and no later batch of its
// partition is in a request, the later batches take its numbers
// (closeGapLocked). Otherwise — it timed out, may have been written, or
// later batches are in flight — the producer bumps its epoch, as Kafka
// 2.5+ does (KIP-360, bump): once no request is in flight, every
// partition's sequence starts over at 0 in epoch+1, and a late batch of
// the old epoch is fenced by the leader. When the leader refuses the
// producer's epoch (INVALID_PRODUCER_EPOCH) or finds a gap it did not
// expect (OUT_OF_ORDER_SEQUENCE_NUMBER), the producer fails: its error,
// wrapping ErrFatal and the cause, fails every record not yet acknowledged
// and every later Produce. UNKNOWN_PRODUCER_ID for the oldest batch still
// to land means the leader forgot the producer: the partition's sequence
// starts over at 0 (forgotten).

// idempotence is an idempotent producer's state.
type idempotence struct {
	client transport.ProducerIDClient
	// ready is set once id and epoch hold the producer id.
	ready   atomic.Bool
	id      atomic.Int64
	epoch   atomic.Int32
	initing atomic.Bool
	// fatal, once set, is the error that failed the producer.
	fatal atomic.Pointer[error]

	// bumpPending says a batch failed in a way that needs a new epoch:
	// nothing is sent until every request has come back and bump has
	// run. epochMu is held shared by collect while it gives sequences and
	// sends, and exclusively by bump.
	bumpPending atomic.Bool
	epochMu     sync.RWMutex
}

// fatalErr returns the error that failed an idempotent producer, or nil.
func (p *Producer) fatalErr() error {
	if p.idem == nil {
		return nil
	}
	if err := p.idem.fatal.Load(); err != nil {
		return *err
	}
	return nil
}

// setFatal fails the producer with err, unless it failed already.
func (p *Producer) setFatal(err error) {
	if p.idem.fatal.CompareAndSwap(nil, &err) {
		p.wakeSender() // to fail what waits
	}
}

// startInit asks for a producer id on a goroutine, unless that is under
// way.
func (p *Producer) startInit() {
	if p.idem.initing.CompareAndSwap(false, true) {
		p.goroutines.Go(p.initProducerID)
	}
}

// initProducerID sends InitProducerId until it is answered, every
// RetryBackoff while it fails with a retriable error. A non-retriable one
// fails the producer.
func (p *Producer) initProducerID() {
	for {
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.requestTimeout)
		resp, err := p.idem.client.InitProducerID(ctx, &transport.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
		if err != nil {
			err = p.requestError(ctx, err)
		} else if resp.Err != nil {
			err = resp.Err
		}
		cancel()
		switch {
		case err == nil:
			p.idem.id.Store(resp.ProducerID)
			p.idem.epoch.Store(int32(resp.ProducerEpoch))
			p.idem.ready.Store(true)
			p.wakeSender()
			return
		case p.ctx.Err() != nil:
			return // closed
		case !IsRetriable(err):
			p.setFatal(fmt.Errorf("%w: InitProducerId: %w", ErrFatal, err))
			return
		}
		timer := time.NewTimer(p.cfg.retryBackoff)
		select {
		case <-timer.C:
		case <-p.stop:
			timer.Stop()
			return
		}
	}
}

// sequenceLocked gives a batch sent for the first time the producer id,
// the epoch and its partition's next sequence numbers. The caller holds
// the partition's lock.
func (p *Producer) sequenceLocked(ps *partitionState, b *batch) {
	p.setSequence(b, ps.nextSequence)
	ps.nextSequence = incrementSequence(ps.nextSequence, int32(len(b.records)))
}

// setSequence stamps a batch with the producer id, epoch and base
// sequence.
func (p *Producer) setSequence(b *batch, seq int32) {
	b.builder.SetProducer(p.idem.id.Load(), int16(p.idem.epoch.Load()), seq)
	b.sequenced, b.baseSequence = true, seq
}

// incrementSequence returns seq advanced by n, wrapping past
// math.MaxInt32 to 0 as Kafka's sequence numbers do.
func incrementSequence(seq, n int32) int32 {
	if seq > math.MaxInt32-n {
		return n - (math.MaxInt32 - seq) - 1
	}
	return seq + n
}

// sequenceError reports whether err is the leader refusing a batch for
// its producer id, epoch or sequence.
func sequenceError(err error) bool {
	return errors.Is(err, kafka.ErrOutOfOrderSequence) || errors.Is(err, kafka.ErrUnknownProducerID) ||
		errors.Is(err, kafka.ErrInvalidProducerEpoch) || errors.Is(err, kafka.ErrProducerFenced)
}

// mayHaveWritten reports whether a leader's answer leaves open that it
// wrote the batch.
func mayHaveWritten(err error) bool {
	return errors.Is(err, kafka.ErrRequestTimedOut) || errors.Is(err, kafka.ErrNotEnoughReplicasAfter) ||
		errors.Is(err, kafka.ErrKafkaStorage) || errors.Is(err, kafka.ErrUnknownServerError)
}

// overtaken reports whether err refuses an idempotent batch as out of
// order, or as the first of a producer the leader does not know, because
// it overtook an older batch of its partition: one that has not landed
// yet, or that was acknowledged since the batch was sent (its answer may
// have been handled first). The batch is sent again after that one, which
// is no gap; were there one, the next answer would say so again.
func (p *Producer) overtaken(b *batch, err error) bool {
	if p.idem == nil || !b.sequenced ||
		!errors.Is(err, kafka.ErrOutOfOrderSequence) && !errors.Is(err, kafka.ErrUnknownProducerID) {
		return false
	}
	if p.idem.bumpPending.Load() {
		return true // behind a batch that failed: it goes again in the new epoch
	}
	ps := b.part
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.earlierPendingLocked(b) || ps.acked != b.ackedAtSend
}

// forgotten handles UNKNOWN_PRODUCER_ID for the oldest batch of its
// partition still to land: the leader forgot the producer
// (producer.id.expiration.ms), so the batch and the later ones start the
// sequence over at 0, and the batch is sent again at once. It reports
// false, leaving the error to fail the producer, when it cannot: a later
// batch is in a request with its old sequence.
func (p *Producer) forgotten(b *batch, err error, now time.Time) bool {
	if p.idem == nil || !b.sequenced || !errors.Is(err, kafka.ErrUnknownProducerID) || !now.Before(b.deadline(p)) {
		return false
	}
	ps := b.part
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.leaveRequestLocked(b)
	if !p.resequenceLocked(b, true, 0) {
		return false
	}
	b.lastErr, b.retryAt = err, now
	ps.requeueLocked(b)
	p.wakeSender()
	return true
}

// closeGapLocked handles a batch with a sequence that failed for good
// without having been written (an attempt's answer ruled it out each
// time): the later batches of its partition, none of them written either,
// take its sequence numbers, so no gap is left. It reports false when it
// cannot: the batch may have been written, the error is about the
// producer's sequence or epoch, or a later batch is in a request. The
// caller holds the partition's lock.
func (p *Producer) closeGapLocked(b *batch, err error) bool {
	if b.maybeWritten || sequenceError(err) || errors.Is(err, ErrFatal) || errors.Is(err, ErrClosed) {
		return false
	}
	return p.resequenceLocked(b, false, b.baseSequence)
}

// resequenceLocked gives b (when withB) and the later outstanding batches
// of its partition that have no outcome yet new sequences from seq on,
// unless one of them is in a request; the partition's next sequence
// follows them. The caller holds the partition's lock and b is in no
// request.
func (p *Producer) resequenceLocked(b *batch, withB bool, seq int32) bool {
	ps := b.part
	i := ps.outstandingIndexLocked(b)
	later := ps.outstanding[i+1:]
	if i < 0 {
		later = nil
	}
	for _, o := range later {
		if o.inRequest {
			return false
		}
	}
	if withB {
		p.setSequence(b, seq)
		seq = incrementSequence(seq, int32(len(b.records)))
	}
	for _, o := range later {
		if o.sequenced && !o.settled {
			p.setSequence(o, seq)
			seq = incrementSequence(seq, int32(len(o.records)))
		}
	}
	ps.nextSequence = seq
	return true
}

// sequenceFailed handles a batch that had a sequence and failed for good,
// leaving a gap closeGapLocked could not close, and returns the batch's
// error. When the leader refused the producer's sequence or epoch, the
// producer fails (ErrFatal). Otherwise — the batch timed out, may have been
// written, or later batches are in flight — the producer bumps its epoch
// (bump), as Kafka 2.5+ does (KIP-360): the leader takes a new epoch at
// sequence 0, and fences anything late from the old one.
func (p *Producer) sequenceFailed(b *batch, err error) error {
	if errors.Is(err, ErrClosed) || errors.Is(err, ErrFatal) {
		return err
	}
	if p.txn != nil && !fatalTxnError(err) {
		// The transaction is abortable (settle); its end starts a new
		// epoch, at sequence 0, which closes the gap. A bump here would
		// take an epoch the coordinator never gave.
		return err
	}
	if p.txn == nil && !sequenceError(err) {
		p.idem.bumpPending.Store(true)
		return err
	}
	fatal := fmt.Errorf("%w: batch of %s-%d at sequence %d failed: %w", ErrFatal, b.part.topic.name, b.part.id, b.baseSequence, err)
	p.setFatal(fatal)
	return fatal
}

// bump starts a new epoch once no request is in flight: every partition's
// sequence starts over at 0, and the batches still to be sent again take
// new sequences in the new epoch — except those an attempt of which may
// have been written, which fail (resending them in a new epoch could write
// them twice). It does nothing while a request is in flight; the worker of
// the last one calls it again.
func (p *Producer) bump() {
	idem := p.idem
	idem.epochMu.Lock()
	if !idem.bumpPending.Load() {
		idem.epochMu.Unlock()
		return
	}
	parts := p.allPartitions.Load()
	for _, ps := range parts {
		ps.mu.Lock()
		busy := ps.inRequest > 0
		ps.mu.Unlock()
		if busy {
			idem.epochMu.Unlock()
			return // collect sends nothing meanwhile, so idle stays idle
		}
	}
	epoch := idem.epoch.Load()
	if epoch >= math.MaxInt16 {
		idem.epochMu.Unlock()
		p.setFatal(fmt.Errorf("%w: producer epoch %d cannot be bumped", ErrFatal, epoch))
		return
	}
	idem.epoch.Store(epoch + 1)
	var unknown []*batch
	for _, ps := range parts {
		ps.mu.Lock()
		seq := int32(0)
		for _, o := range ps.outstanding {
			if !o.sequenced || o.settled {
				continue
			}
			if o.maybeWritten {
				o.sequenced = false // it fails below, with no new bump
				ps.removeQueuedLocked(o)
				unknown = append(unknown, o)
				continue
			}
			p.setSequence(o, seq)
			seq = incrementSequence(seq, int32(len(o.records)))
		}
		ps.nextSequence = seq
		ps.mu.Unlock()
	}
	idem.bumpPending.Store(false)
	idem.epochMu.Unlock()
	for _, b := range unknown {
		p.settle(b, -1, -1, fmt.Errorf("producer: %s-%d: a batch that may have been written was given up to start producer epoch %d after an earlier batch failed: %w",
			b.part.topic.name, b.part.id, epoch+1, b.lastErr))
	}
	p.wakeSender()
}
