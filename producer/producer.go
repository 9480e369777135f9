package producer

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// Producer sends records to a cluster's partitions in batches. It is safe
// for concurrent use; Close it to stop its goroutines.
type Producer struct {
	client transport.Client
	cfg    config
	memory *bufferPool
	// idem is the idempotence state, nil without idempotence.
	idem *idempotence
	// txn is the transaction state, nil without TransactionalID.
	txn *transaction

	topicsMu sync.Mutex // serializes changes to topics and allPartitions
	// topics maps names to topics, replaced whole when a topic is added,
	// so that readers take no lock.
	topics atomic.Pointer[map[string]*topicState]
	// lastTopic caches the topic of the last lookup.
	lastTopic atomic.Pointer[topicState]
	// allPartitions lists every partition of every known topic, for the
	// sender to walk.
	allPartitions atomicSlice[partitionState]
	refreshing    atomic.Bool
	// batches recycles settled batches with their buffers.
	batches *batchPool

	// flushing counts Flush calls under way: while any is, every batch is
	// ready at once.
	flushing atomic.Int32
	// closing is set when Close begins: Produce fails from then on.
	closing atomic.Bool
	// stopped is set when Close stops sending: workers take no new batch.
	stopped atomic.Bool
	// inflight counts the request slots taken (see takeSlot).
	inflight atomic.Int32
	// drainFrom rotates where collect starts walking the partitions, so
	// that none is always last when a request fills up.
	drainFrom atomic.Uint32
	// senderWakeAt is when the sender loop will wake up next (UnixNano),
	// math.MaxInt64 while it is looking or has nothing to wait for.
	senderWakeAt atomic.Int64

	wake chan struct{} // wakes the sender loop; holds one value at most
	stop chan struct{} // closed by Close to stop the sender loop
	// ctx is the parent of every request's context; Close cancels it.
	ctx        context.Context
	cancel     context.CancelFunc
	requestCtx atomic.Pointer[sharedContext]
	// goroutines are the sender loop, its workers and metadata refreshes.
	goroutines sync.WaitGroup
	closeOnce  sync.Once
	closeErr   error
}

// New returns a producer that sends records through client — a
// *partlog.Node in the same process, or a network client — configured by
// opts. It starts the producer's sender goroutine; Close stops it.
func New(client transport.Client, opts ...Option) (*Producer, error) {
	if client == nil {
		return nil, fmt.Errorf("producer: nil client")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var (
		idem *idempotence
		txn  *transaction
	)
	if cfg.transactionalID != "" {
		tc, ok := client.(transport.TxnClient)
		if !ok {
			return nil, fmt.Errorf("producer: TransactionalID (transactional.id): the client %T does not implement transport.TxnClient", client)
		}
		txn = &transaction{client: tc, id: cfg.transactionalID}
	}
	if cfg.idempotent {
		pc, ok := client.(transport.ProducerIDClient)
		switch {
		case ok:
			idem = &idempotence{client: pc}
		case cfg.idempotentSet:
			return nil, fmt.Errorf("producer: Idempotent (enable.idempotence): the client %T does not implement transport.ProducerIDClient", client)
		}
	}
	p := &Producer{
		idem:    idem,
		txn:     txn,
		client:  client,
		cfg:     cfg,
		memory:  newBufferPool(cfg.bufferMemory),
		batches: newBatchPool(cfg.bufferMemory, cfg.batchSize),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
	p.topics.Store(&map[string]*topicState{})
	p.senderWakeAt.Store(math.MaxInt64)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if txn != nil {
		ctx, cancel := context.WithTimeout(p.ctx, max(cfg.maxBlock, cfg.requestTimeout))
		err := p.initTransactions(ctx, -1, -1)
		cancel()
		if err != nil {
			p.cancel()
			return nil, fmt.Errorf("producer: init transactions for %q: %w", cfg.transactionalID, err)
		}
		txn.mu.Lock()
		txn.setLocked(StateReady)
		txn.mu.Unlock()
	}
	p.goroutines.Go(p.run)
	return p, nil
}

// noPromise is the promise of a record produced without one.
func noPromise(*Record, error) {}

// Produce adds r to its partition's batch and returns; promise runs, exactly
// once, when the record is acknowledged (err nil, r.Partition and r.Offset
// set) or has failed (r.Offset -1). A nil promise is allowed.
//
// Promises run on the producer's goroutines, one at a time per partition
// and in offset order within a partition. A promise should return quickly;
// it must not call Flush or Close, and a Produce from a promise may hold up
// the producer while buffer.memory is used up. A record that fails before it joins a
// batch — the producer is closed (ErrClosed), the record is too large
// (ErrRecordTooLarge), the topic or explicit partition does not exist
// (kafka.ErrUnknownTopicOrPartition), no buffer memory freed in time
// (ErrBufferFull), an idempotent producer failed for good (ErrFatal), or a
// transactional producer has no open transaction (ErrTransactionState) or
// a failed one (ErrAbortable) — has its promise run before Produce
// returns, on the caller's goroutine.
//
// Produce blocks only to wait for buffer memory or for the first metadata
// of a topic, for up to MaxBlock; ctx ends that wait early. ctx has no
// effect on a record once it is in a batch.
func (p *Producer) Produce(ctx context.Context, r *Record, promise func(*Record, error)) {
	if promise == nil {
		promise = noPromise
	}
	if err := p.produce(ctx, r, promise); err != nil {
		r.Offset = -1
		promise(r, err)
	}
}

func (p *Producer) produce(ctx context.Context, r *Record, promise func(*Record, error)) error {
	// Everything read of r is read first: a record fresh from the caller
	// is often not in this core's cache yet, and its two cache lines then
	// load at once rather than one after the other.
	explicit, stamp := r.explicit, r.Timestamp.IsZero()
	rec := record.Record{Key: r.Key, Value: r.Value, Headers: r.Headers}
	if !stamp {
		rec.Timestamp = r.Timestamp.UnixMilli()
	}
	if p.closing.Load() {
		return ErrClosed
	}
	if p.idem != nil {
		if err := p.fatalErr(); err != nil {
			return err
		}
	}
	if p.txn != nil {
		if err := p.produceErr(); err != nil {
			return err
		}
	}
	var deadline time.Time // when blocking must end; set when first needed
	t := p.lookup(r.Topic)
	if t == nil {
		if r.Topic == "" {
			return fmt.Errorf("%w: a record needs a topic", kafka.ErrInvalidTopic)
		}
		if p.cfg.maxBlock > 0 {
			deadline = time.Now().Add(p.cfg.maxBlock)
		}
		var err error
		if t, err = p.loadTopic(ctx, r.Topic, deadline); err != nil {
			return err
		}
	}
	parts := t.partitions.Load()
	if explicit {
		if r.Partition < 0 || int(r.Partition) >= len(parts) {
			return fmt.Errorf("%w: %s-%d: the topic has %d partitions", kafka.ErrUnknownTopicOrPartition, r.Topic, r.Partition, len(parts))
		}
	} else {
		i := t.partitioner.Partition(r, len(parts))
		if i < 0 || i >= len(parts) {
			return fmt.Errorf("%w: %s-%d: the partitioner chose a partition outside the topic's %d", kafka.ErrUnknownTopicOrPartition, r.Topic, i, len(parts))
		}
		r.Partition = int32(i)
	}
	size := r.sizeBound()
	if record.HeaderSize+size > p.cfg.maxRequestSize || int64(record.HeaderSize+size) > p.cfg.bufferMemory {
		return fmt.Errorf("%w: %d bytes with its batch header, over max.request.size %d or buffer.memory %d (%w)",
			ErrRecordTooLarge, record.HeaderSize+size, p.cfg.maxRequestSize, p.cfg.bufferMemory, kafka.ErrMessageTooLarge)
	}
	return p.append(ctx, parts[r.Partition], r, &rec, size, stamp, promise, &deadline)
}

// ProduceSync produces rs and waits until every one is acknowledged or has
// failed. The results are in the order of rs. ctx bounds the blocking of
// Produce (see there); records already in batches are waited for, which
// DeliveryTimeout bounds.
func (p *Producer) ProduceSync(ctx context.Context, rs ...*Record) Results {
	results := make(Results, len(rs))
	if len(rs) == 0 {
		return results
	}
	var left atomic.Int64
	left.Store(int64(len(rs)))
	done := make(chan struct{})
	for i, r := range rs {
		results[i].Record = r
		p.Produce(ctx, r, func(_ *Record, err error) {
			results[i].Err = err
			if left.Add(-1) == 0 {
				close(done)
			}
		})
	}
	<-done
	return results
}

// Flush sends every record produced before the call without waiting for
// linger, and waits until each is acknowledged or has failed, or ctx ends.
// Records produced while Flush runs are sent at once too.
func (p *Producer) Flush(ctx context.Context) error {
	p.flushing.Add(1)
	defer p.flushing.Add(-1)
	p.wakeSender()
	var waits []chan struct{}
	for _, ps := range p.allPartitions.Load() {
		ps.mu.Lock()
		if b := ps.lastLocked(); b != nil {
			if b.done == nil {
				b.done = make(chan struct{})
			}
			waits = append(waits, b.done)
		}
		ps.mu.Unlock()
	}
	for _, ch := range waits {
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("producer: flush: %w", ctx.Err())
		}
	}
	return nil
}

// Close stops the producer: Produce fails with ErrClosed from now on, and
// what is buffered is sent and waited for up to DeliveryTimeout (Flush).
// Then the sender stops: the contexts of requests still in flight are
// canceled (their records fail with ErrClosed unless an answer comes
// anyway), Close waits for their calls to return, and every record not
// sent fails with ErrClosed. It returns the flush's error, if any. Close
// must not be called from a promise. Calling it again returns the first
// call's result.
func (p *Producer) Close() error {
	p.closeOnce.Do(func() {
		p.closing.Store(true)
		p.memory.close() // Produce calls waiting for memory fail
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.deliveryTimeout)
		if err := p.Flush(ctx); err != nil {
			p.closeErr = fmt.Errorf("producer: close: records left undelivered: %w", err)
		}
		cancel()

		p.stopped.Store(true)
		close(p.stop)
		p.cancel()
		p.goroutines.Wait()

		for _, ps := range p.allPartitions.Load() {
			ps.mu.Lock()
			var left []*batch
			for b := ps.popFrontLocked(); b != nil; b = ps.popFrontLocked() {
				left = append(left, b)
			}
			ps.mu.Unlock()
			for _, b := range left {
				p.settle(b, -1, -1, ErrClosed)
			}
		}
	})
	return p.closeErr
}
