package producer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog/record"
)

// partitionState accumulates one partition's records into batches, as
// Kafka's RecordAccumulator keeps a deque per partition: the open batch
// takes records until it is full, then joins the queue of batches waiting
// for the sender. At most one batch of a partition is in flight.
type partitionState struct {
	topic *topicState
	id    int32

	mu sync.Mutex
	// open takes new records; nil until the next record comes.
	open *batch
	// queue[head:] holds closed batches waiting to be sent, oldest first.
	// A batch that failed and will be retried goes back to the front.
	queue []*batch
	head  int
	// sending is the batch in flight, or being failed, or nil.
	sending *batch
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
	case ps.queued() > 0:
		return ps.queue[len(ps.queue)-1]
	}
	return ps.sending
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
	return ps.sending == nil && ps.queued() == 1
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

	// wire is the encoded batch of the current attempt.
	wire     []byte
	attempts int
	retryAt  time.Time
	lastErr  error
	// done, when a Flush wants to know, is closed once the batch is
	// settled; set and closed under the partition's lock.
	done chan struct{}
}

// pending is a record of a batch and its promise.
type pending struct {
	r       *Record
	promise func(*Record, error)
}

// zeros fills a recycled builder's buffer once per batch (see newBatch).
var zeros [64 << 10]byte

func (p *Producer) newBatch(ps *partitionState, reserved int64, now time.Time, recordSize int) *batch {
	b, _ := p.batches.Get().(*batch)
	if b == nil {
		b = new(batch)
	}
	// No producer id, epoch or sequence yet: an idempotent producer will
	// set them here, or, as Kafka assigns sequences when it drains a
	// batch, just before the batch is first encoded in send.
	opts := record.DefaultBatchOptions()
	opts.Compression = p.cfg.compression
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
		p.batches.Put(b)
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
			if ps.sending == nil && ps.queued() == 0 && p.lingerBeforeSender(b.created) {
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

// discard gives back a batch made for a record that went elsewhere.
func (p *Producer) discard(b *batch) {
	if b != nil {
		p.memory.release(b.reserved)
		p.recycle(b)
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
