package producer

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog/record"
)

// partitionState accumulates one partition's records into batches, as
// Kafka's RecordAccumulator keeps a deque per partition: the open batch
// takes records until it is full, then joins the queue of batches waiting
// for the sender. At most limit batches of a partition are in flight: one,
// or with idempotence MaxInFlight.
type partitionState struct {
	topic *topicState
	id    int32
	// limit bounds the partition's batches in requests at once.
	limit int

	mu sync.Mutex
	// open takes new records; nil until the next record comes.
	open *batch
	// queue[head:] holds closed batches waiting to be sent, oldest first.
	// A batch that failed and will be retried goes back in front of every
	// batch not sent yet, in the order of outstanding.
	queue []*batch
	head  int
	// outstanding holds, oldest first, the batches sent at least once (or
	// failed before they could be) whose promises have not run yet:
	// promises run in this order, which is the order batches were closed.
	outstanding []*batch
	// inRequest counts the partition's batches in requests now.
	inRequest int
	// draining is set while a goroutine runs outstanding batches'
	// promises.
	draining bool
	// promising is the settled batch whose promises run now, taken out of
	// outstanding; older than every batch there.
	promising *batch
	// nextSequence is the sequence number the next batch sent for the
	// first time starts at (idempotence).
	nextSequence int32
	// acked counts the partition's batches acknowledged so far.
	acked uint64
	// inTxn says the partition is in the open transaction: its batches
	// may be sent. txnRequested says it was asked to be added.
	inTxn, txnRequested bool
}

// queued returns the number of closed batches waiting.
func (ps *partitionState) queued() int { return len(ps.queue) - ps.head }

// frontLocked returns the batch the sender would send next: the oldest
// queued one, else the open one.
func (ps *partitionState) frontLocked() *batch {
	if ps.queued() > 0 {
		return ps.queue[ps.head]
	}
	return ps.open
}

// lastLocked returns the youngest batch of the partition, in flight or
// not: when it completes, every record produced so far has.
func (ps *partitionState) lastLocked() *batch {
	switch {
	case ps.open != nil:
		return ps.open
	case ps.queued() > 0 && !ps.queue[len(ps.queue)-1].outstanding:
		return ps.queue[len(ps.queue)-1] // never sent, so younger than any sent
	case len(ps.outstanding) > 0:
		return ps.outstanding[len(ps.outstanding)-1]
	}
	return ps.promising
}

// canSendLocked reports whether the front batch b may go into a request
// now. A new batch may while fewer than limit batches are outstanding:
// then no batch has more than limit-1 younger ones that could land before
// it, and a retry of it is still among the five batches the leader
// remembers (without idempotence, the limit of 1 waits for the last
// batch's answer, not for its promises: a batch whose promises run has
// left the outstanding ones, older than all of them). A retry goes alone,
// once every earlier attempt has come back, so that it cannot be
// overtaken again.
func (ps *partitionState) canSendLocked(b *batch) bool {
	if b.attempts == 0 {
		return len(ps.outstanding) < ps.limit
	}
	return ps.inRequest == 0
}

// takeLocked moves the front batch b into a request.
func (ps *partitionState) takeLocked(b *batch) {
	ps.popFrontLocked()
	b.inRequest, b.ackedAtSend = true, ps.acked
	ps.inRequest++
	ps.markOutstandingLocked(b)
}

// markOutstandingLocked adds b to the outstanding batches if it is not
// there yet; a batch not sent before is younger than every one there.
func (ps *partitionState) markOutstandingLocked(b *batch) {
	if !b.outstanding {
		b.outstanding = true
		ps.outstanding = append(ps.outstanding, b)
	}
}

// leaveRequestLocked notes that b's request came back.
func (ps *partitionState) leaveRequestLocked(b *batch) {
	if b.inRequest {
		b.inRequest = false
		ps.inRequest--
	}
}

// outstandingIndexLocked returns b's position among the outstanding
// batches, or -1.
func (ps *partitionState) outstandingIndexLocked(b *batch) int {
	for i, o := range ps.outstanding {
		if o == b {
			return i
		}
	}
	return -1
}

// requeueLocked puts outstanding batches (consecutive, in order) back in
// the queue to be sent again: behind the queued retries older than them,
// in front of everything else.
func (ps *partitionState) requeueLocked(bs ...*batch) {
	pos := ps.outstandingIndexLocked(bs[0])
	at := ps.head
	for at < len(ps.queue) && ps.queue[at].outstanding && ps.outstandingIndexLocked(ps.queue[at]) < pos {
		at++
	}
	if at == ps.head {
		ps.pushFrontLocked(bs...)
		return
	}
	q := make([]*batch, 0, ps.queued()+len(bs))
	q = append(append(append(q, ps.queue[ps.head:at]...), bs...), ps.queue[at:]...)
	ps.queue, ps.head = q, 0
}

// removeQueuedLocked takes b out of the queue, where it waits to be sent
// again.
func (ps *partitionState) removeQueuedLocked(b *batch) {
	for i := ps.head; i < len(ps.queue); i++ {
		if ps.queue[i] == b {
			ps.queue = slices.Delete(ps.queue, i, i+1)
			if ps.head == len(ps.queue) {
				ps.queue, ps.head = ps.queue[:0], 0
			}
			return
		}
	}
}

// earlierPendingLocked reports whether an outstanding batch older than b
// has no outcome yet.
func (ps *partitionState) earlierPendingLocked(b *batch) bool {
	for _, o := range ps.outstanding {
		if o == b {
			return false
		}
		if !o.settled {
			return true
		}
	}
	return false
}

// closeOpenLocked closes the open batch: it joins the queue, to be sent as
// soon as the partition has no batch in flight. It reports whether the
// sender must be woken to send it.
func (ps *partitionState) closeOpenLocked() bool {
	if ps.head > 0 && len(ps.queue) == cap(ps.queue) {
		// Full with sent batches' slots at the front: reuse those.
		n := copy(ps.queue, ps.queue[ps.head:])
		clear(ps.queue[n:])
		ps.queue, ps.head = ps.queue[:n], 0
	}
	ps.queue = append(ps.queue, ps.open)
	ps.open = nil
	return len(ps.outstanding) < ps.limit && ps.queued() == 1
}

// popFrontLocked removes the front batch (see frontLocked).
func (ps *partitionState) popFrontLocked() *batch {
	if ps.queued() == 0 {
		b := ps.open
		ps.open = nil
		return b
	}
	b := ps.queue[ps.head]
	ps.queue[ps.head] = nil
	ps.head++
	if ps.head == len(ps.queue) {
		ps.queue, ps.head = ps.queue[:0], 0
	}
	return b
}

// pushFrontLocked puts batches back at the front of the queue, in order.
func (ps *partitionState) pushFrontLocked(bs ...*batch) {
	if ps.head >= len(bs) {
		ps.head -= len(bs)
		copy(ps.queue[ps.head:], bs)
		return
	}
	ps.queue = append(append(make([]*batch, 0, len(bs)+ps.queued()), bs...), ps.queue[ps.head:]...)
	ps.head = 0
}

// batch is one partition's records on their way: encoded into a Builder as
// they come, and the promises to keep once the batch is settled.
type batch struct {
	part    *partitionState
	builder *record.Builder
	records []pending
	// created is when the first record came: linger and delivery timeout
	// count from here.
	created time.Time
	// reserved is the buffer memory the batch holds.
	reserved int64

	// The fields below belong to the goroutine that holds the batch
	// outside the partition's queue (the sender), or to the partition's
	// lock while the batch is queued.

	// wire is the encoded batch of the current attempt when it is
	// compressed; an uncompressed batch is sent from the builder's buffer.
	wire     []byte
	attempts int
	retryAt  time.Time
	lastErr  error
	// done, when a Flush wants to know, is closed once the batch is
	// settled; set and closed under the partition's lock.
	done chan struct{}

	// Under the partition's lock: outstanding says the batch is in the
	// partition's outstanding list, inRequest that it is in a request
	// now, settled that its outcome is known (the result fields) and its
	// promises may run once every older batch's have.
	outstanding bool
	inRequest   bool
	settled     bool
	result      batchResult

	// sequenced says the batch has its producer id, epoch and base
	// sequence (idempotence), set when it is first sent.
	sequenced    bool
	baseSequence int32
	// maybeWritten says an attempt ended without an answer that rules out
	// that the leader wrote the batch.
	maybeWritten bool
	// ackedAtSend is the partition's acked count when the batch was last
	// sent.
	ackedAtSend uint64
}

// batchResult is the outcome of a batch: its base offset and log append
// time, or the error that failed it.
type batchResult struct {
	baseOffset, logAppendTime int64
	err                       error
}

// pending is a record of a batch and its promise.
type pending struct {
	r       *Record
	promise func(*Record, error)
}

// zeros fills a recycled builder's buffer once per batch (see newBatch).
var zeros [64 << 10]byte

func (p *Producer) newBatch(ps *partitionState, reserved int64, now time.Time, recordSize int) *batch {
	b := p.batches.get()
	if b == nil {
		b = new(batch)
	}
	// No producer id, epoch or sequence yet: an idempotent producer will
	// set them here, or, as Kafka assigns sequences when it drains a
	// batch, just before the batch is first encoded in send.
	opts := record.DefaultBatchOptions()
	opts.Compression = p.cfg.compression
	opts.Transactional = p.txn != nil
	if b.builder == nil {
		b.builder = record.NewBuilder(opts)
		b.builder.Grow(int(min(reserved, int64(p.cfg.batchSize))))
	} else {
		// A recycled buffer was last read on another core, by the sender
		// and the client. For small records, writing it whole now, in one
		// streaming pass, brings it back to this core's cache at once,
		// instead of a cache miss per record, each exposed by the
		// partition lock's atomic operations (20-30% of the hot path
		// without it). Large records stream well enough on their own. The
		// Builder keeps its buffer across Reset.
		if n := min(p.cfg.batchSize, len(zeros)) - record.HeaderSize - recordOverhead; n > 0 && recordSize < 512 {
			b.builder.Reset(opts)
			b.builder.Append(record.Record{Value: zeros[:n]})
		}
		b.builder.Reset(opts)
		clear(b.records[:cap(b.records)])
	}
	b.part, b.created, b.reserved = ps, now, reserved
	return b
}

// recycle returns a settled batch to the pool, unless its buffers grew
// past what batches usually need.
func (p *Producer) recycle(b *batch) {
	clear(b.records)
	limit := 2*p.cfg.batchSize + 4096
	keep := cap(b.wire) <= limit && b.builder.Size() <= limit
	*b = batch{builder: b.builder, records: b.records[:0], wire: b.wire[:0]}
	if keep {
		p.batches.put(b)
	}
}

// add encodes r into the batch.
func (b *batch) add(r *Record, rec *record.Record, promise func(*Record, error)) {
	b.builder.Append(*rec)
	b.records = append(b.records, pending{r, promise})
}

// append adds a record of the given size bound to its partition's open
// batch, opening a batch — and taking buffer memory for it — when there is
// none or the record does not fit. When stamp is set, the record gets the
// current time as its timestamp. Waiting for memory is the only place
// Produce blocks; it ends with ctx, at the deadline (zero fails at once; a
// zero deadline is set to now plus MaxBlock when MaxBlock is not zero), or
// when the producer closes.
func (p *Producer) append(ctx context.Context, ps *partitionState, r *Record, rec *record.Record, size int, stamp bool, promise func(*Record, error), deadline *time.Time) error {
	batchSize := p.cfg.batchSize
	var fresh *batch // a batch made ready outside the lock, holding memory
	for {
		wake := false
		ps.mu.Lock()
		if p.closing.Load() {
			ps.mu.Unlock()
			p.discard(fresh)
			return ErrClosed
		}
		b := ps.open
		if b != nil && b.builder.Size()+size > batchSize && b.builder.Len() > 0 {
			wake = ps.closeOpenLocked() // the record does not fit
			b = nil
		}
		if b == nil && fresh != nil {
			b, fresh = fresh, nil
			ps.open = b
			if len(ps.outstanding) < ps.limit && ps.queued() == 0 && p.lingerBeforeSender(b.created) {
				wake = true // the sender must learn of the new linger deadline
			}
		}
		if b != nil {
			if stamp {
				// The batch's creation time carries both clocks: reading
				// only the monotonic one costs half of time.Now, and the
				// sum is the same wall time.
				stampRecord(r, rec, b.created.Add(time.Since(b.created)))
			}
			b.add(r, rec, promise)
			if b.builder.Size()+size > batchSize {
				// The next record like this one would not fit: send the
				// batch now rather than after the linger.
				wake = ps.closeOpenLocked() || wake
			}
			ps.mu.Unlock()
			p.discard(fresh)
			if wake {
				p.wakeSender()
			}
			return nil
		}
		ps.mu.Unlock()
		if wake {
			p.wakeSender()
		}

		// A new batch, and its share of buffer memory.
		need := int64(max(batchSize, record.HeaderSize+size))
		if !p.memory.tryAcquire(need) {
			if deadline.IsZero() && p.cfg.maxBlock > 0 {
				*deadline = time.Now().Add(p.cfg.maxBlock)
			}
			if err := p.memory.acquire(ctx, need, *deadline, p.wakeSender); err != nil {
				return err
			}
		}
		fresh = p.newBatch(ps, need, time.Now(), size)
	}
}

// discard gives back a batch that is done with (settled, or made for a
// record that went elsewhere) and its memory. It goes back to the pool
// before its memory is released: a Produce waiting for that memory then
// finds the batch's buffer to reuse rather than allocating, zeroing and
// faulting in a new one.
func (p *Producer) discard(b *batch) {
	if b != nil {
		reserved := b.reserved
		p.recycle(b)
		p.memory.release(reserved)
	}
}

// stampRecord gives a record without a timestamp the time now.
func stampRecord(r *Record, rec *record.Record, now time.Time) {
	r.Timestamp = now
	rec.Timestamp = now.UnixMilli()
}

// lingerBeforeSender reports whether a batch opened now becomes ready
// before the sender means to wake up.
func (p *Producer) lingerBeforeSender(now time.Time) bool {
	return now.Add(p.cfg.linger).UnixNano() < p.senderWakeAt.Load()
}

// atomicSlice is a slice of pointers, loaded and replaced atomically.
type atomicSlice[T any] struct{ p atomic.Pointer[[]*T] }

func (s *atomicSlice[T]) Load() []*T {
	if v := s.p.Load(); v != nil {
		return *v
	}
	return nil
}

func (s *atomicSlice[T]) Store(v []*T) { s.p.Store(&v) }
