package producer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

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
// (closeGapLocked). Otherwise — and when the leader fences the producer or
// finds a gap — the producer fails: its error, wrapping ErrFatal and the
// cause, fails every record not yet acknowledged and every later Produce.
// (Kafka 2.5+ instead bumps the epoch and starts the sequences over; that
// is not done here yet.) UNKNOWN_PRODUCER_ID for the oldest batch still to
// land means the leader forgot the producer: the partition's sequence
// starts over at 0 (forgotten).

// idempotence is an idempotent producer's state.
type idempotence struct {
	client transport.ProducerIDClient
	// ready is set once id and epoch hold the producer id.
	ready   atomic.Bool
	id      int64
	epoch   int16
	initing atomic.Bool
	// fatal, once set, is the error that failed the producer.
	fatal atomic.Pointer[error]
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
			p.idem.id, p.idem.epoch = resp.ProducerID, resp.ProducerEpoch
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
	b.builder.SetProducer(p.idem.id, p.idem.epoch, seq)
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
	return errors.Is(err, transport.ErrOutOfOrderSequence) || errors.Is(err, transport.ErrUnknownProducerID) ||
		errors.Is(err, transport.ErrInvalidProducerEpoch) || errors.Is(err, transport.ErrProducerFenced)
}

// mayHaveWritten reports whether a leader's answer leaves open that it
// wrote the batch.
func mayHaveWritten(err error) bool {
	return errors.Is(err, transport.ErrRequestTimedOut) || errors.Is(err, transport.ErrNotEnoughReplicasAfter) ||
		errors.Is(err, transport.ErrKafkaStorage) || errors.Is(err, transport.ErrUnknownServerError)
}

// overtaken reports whether err refuses an idempotent batch as out of
// order, or as the first of a producer the leader does not know, because
// it overtook an older batch of its partition: one that has not landed
// yet, or that was acknowledged since the batch was sent (its answer may
// have been handled first). The batch is sent again after that one, which
// is no gap; were there one, the next answer would say so again.
func (p *Producer) overtaken(b *batch, err error) bool {
	if p.idem == nil || !b.sequenced ||
		!errors.Is(err, transport.ErrOutOfOrderSequence) && !errors.Is(err, transport.ErrUnknownProducerID) {
		return false
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
	if p.idem == nil || !b.sequenced || !errors.Is(err, transport.ErrUnknownProducerID) || !now.Before(b.deadline(p)) {
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

// sequenceFailed fails the producer because a batch that had a sequence
// failed for good, and returns the batch's error, which says so.
func (p *Producer) sequenceFailed(b *batch, err error) error {
	if errors.Is(err, ErrClosed) || errors.Is(err, ErrFatal) {
		return err
	}
	fatal := fmt.Errorf("%w: batch of %s-%d at sequence %d failed: %w", ErrFatal, b.part.topic.name, b.part.id, b.baseSequence, err)
	p.setFatal(fatal)
	return fatal
}
