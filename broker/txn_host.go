package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/partlog/partlog/internal/nodehooks"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/topicconfig"
	"github.com/partlog/partlog/txn"
)

// Transactions live on the partitions of __transaction_state the node
// leads (coordinator_partitions.go), in one txn.Coordinator that a loop
// goroutine owns, as a replica.Node owns its replica: every input — a
// request, the passing of time, an append's or a marker write's outcome,
// a load or an unload — runs on the loop, and after each the loop carries
// out the coordinator's Ready (txn/doc.go numbers the duties): appends go
// to the partition's replica as acks=all batches, in order per
// partition; markers go to the partitions' leaders; answers go to the
// requests waiting for them.

// txnTickInterval is how often the transaction coordinator ticks: it
// retries markers and aborts transactions that timed out.
const txnTickInterval = 100 * time.Millisecond

// txnStateSegmentBytes is Kafka's transaction.state.log.segment.bytes.
const txnStateSegmentBytes = 100 << 20

// txnAppendTimeout bounds a coordinator's replicated write.
const txnAppendTimeout = 5 * time.Second

// txnHost runs the node's transaction coordinator.
type txnHost struct {
	n     *Broker
	state *coordinatorPartitions
	in    chan func()
	stop  chan struct{}
	done  chan struct{}
	wg    sync.WaitGroup // the appenders and marker writers

	// Owned by the loop goroutine:
	c         *txn.Coordinator
	waiting   map[uint64]chan txn.Answer
	next      uint64
	appenders map[int32]chan txn.Append
}

// startTxns starts the transaction coordinator's loop, which Close stops.
func (n *Broker) startTxns() error {
	h := &txnHost{n: n, in: make(chan func(), 64), stop: make(chan struct{}), done: make(chan struct{}),
		waiting: map[uint64]chan txn.Answer{}, appenders: map[int32]chan txn.Append{}}
	c, err := txn.New(txnIDs{n}, txn.Options{
		StatePartitions:   txnStatePartitions,
		OffsetsPartitions: n.offsetsTopicPartitions(),
		Logger:            n.logger.With("component", "transaction-coordinator"),
	})
	if err != nil {
		return err
	}
	h.c = c
	h.state = newCoordinatorPartitions(n, kafka.TransactionStateTopic, txnState{h})
	n.txns = h
	go h.run()
	return nil
}

// txnStatePartitions is transaction.state.log.num.partitions.
const txnStatePartitions = kafka.DefaultCoordinatorPartitions

// txnStateConfigs are the configs of __transaction_state when the node
// creates it.
func txnStateConfigs() map[string]string {
	return map[string]string{topicconfig.CleanupPolicy: "compact", topicconfig.SegmentBytes: strconv.Itoa(txnStateSegmentBytes)}
}

// stopTxns stops the loop and waits for it and the writes it started.
func (h *txnHost) stopTxns() {
	close(h.stop)
	<-h.done
	h.wg.Wait()
}

// run is the loop: it takes inputs and ticks until stop, carrying out
// the coordinator's Ready after each.
func (h *txnHost) run() {
	defer close(h.done)
	t := time.NewTicker(txnTickInterval)
	defer t.Stop()
	for {
		select {
		case f := <-h.in:
			f()
		case <-t.C:
			h.c.Tick(h.now())
		case <-h.stop:
			for _, ch := range h.appenders {
				close(ch)
			}
			return
		}
		h.carryOut()
	}
}

// now is the coordinator's clock, in ms.
func (h *txnHost) now() int64 { return h.n.opts.Now().UnixMilli() }

// post runs f on the loop, or reports that the loop has stopped.
func (h *txnHost) post(f func()) bool {
	select {
	case h.in <- f:
		return true
	case <-h.stop:
		return false
	}
}

// carryOut does what the coordinator's Ready asks, on the loop.
func (h *txnHost) carryOut() {
	for h.c.HasReady() {
		rd := h.c.Ready()
		for _, a := range rd.Answers {
			if ch, ok := h.waiting[a.Request]; ok {
				ch <- a
				delete(h.waiting, a.Request)
			}
		}
		for _, a := range rd.Appends {
			h.appender(a.Partition) <- a
		}
		for _, mw := range rd.Markers {
			h.wg.Go(func() { h.writeMarkers(mw) })
		}
	}
}

// request runs a request on the coordinator (do gets the request's id and
// the clock) and waits for its answer, ctx's end, or the loop's.
func (h *txnHost) request(ctx context.Context, do func(id uint64, nowMs int64)) (txn.Answer, error) {
	ch := make(chan txn.Answer, 1)
	if !h.post(func() {
		h.next++
		h.waiting[h.next] = ch
		do(h.next, h.now())
	}) {
		return txn.Answer{}, ErrClosed
	}
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		return txn.Answer{}, fmt.Errorf("%w: %w", kafka.ErrRequestTimedOut, ctx.Err())
	case <-h.done:
		return txn.Answer{}, ErrClosed
	}
}

// appender returns the queue of appends to partition p, whose goroutine
// writes them in order.
func (h *txnHost) appender(p int32) chan<- txn.Append {
	ch, ok := h.appenders[p]
	if !ok {
		ch = make(chan txn.Append, 1024)
		h.appenders[p] = ch
		h.wg.Go(func() {
			for a := range ch {
				err := h.append(a)
				h.post(func() { h.c.AppendDone(a.ID, err, h.now()) })
			}
		})
	}
	return ch
}

// append writes a's records to its partition of __transaction_state as
// one acks=all batch, if the node still leads the partition in a's
// coordinator epoch.
func (h *txnHost) append(a txn.Append) error {
	n := h.n
	tp := kafka.TopicPartition{Topic: kafka.TransactionStateTopic, Partition: a.Partition}
	rh := n.member.replica(tp)
	if rh == nil || !rh.leadsIn(n.meta.NodeID, a.CoordinatorEpoch) {
		return fmt.Errorf("%w: node %d does not lead %s in epoch %d", kafka.ErrNotLeaderOrFollower, n.meta.NodeID, tp, a.CoordinatorEpoch)
	}
	if err := n.txnStepFault(func() nodehooks.TxnStep { return appendStep(a) }); err != nil {
		return err
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	for _, r := range a.Records {
		b.Append(record.Record{Timestamp: a.TimestampMs, Key: r.Key, Value: r.Value})
	}
	ctx, cancel := context.WithTimeout(context.Background(), txnAppendTimeout)
	defer cancel()
	_, _, err := n.appendReplicated(ctx, rh, b.Build(), kafka.AcksAll, txnAppendTimeout)
	return err
}

// appendStep describes a to a test's fault.
func appendStep(a txn.Append) nodehooks.TxnStep {
	var step nodehooks.TxnStep
	for _, r := range a.Records {
		if v, err := txn.DecodeValue(r.Value); err == nil && r.Value != nil {
			step.Append = append(step.Append, v)
		}
	}
	return step
}

// writeMarkers writes a transaction's markers and reports each
// partition's outcome.
func (h *txnHost) writeMarkers(mw txn.MarkerWrite) {
	results := h.n.writeMarkers(mw)
	h.post(func() { h.c.MarkersDone(mw.ID, results, h.now()) })
}

// txnState is the transaction coordinator's part in hosting the
// partitions of __transaction_state.
type txnState struct{ h *txnHost }

func (s txnState) load(rh *replicaHost, epoch int32, end int64, _ int32) (int, error) {
	var recs []txn.Record
	err := eachRecord(rh.p.Log(), end, func(r record.Record) (bool, error) {
		rec := txn.Record{Key: append([]byte(nil), r.Key...)}
		if r.Value != nil {
			rec.Value = append([]byte(nil), r.Value...)
		}
		recs = append(recs, rec)
		return true, nil
	})
	if err != nil {
		return 0, err
	}
	loadErr, err := onLoop(s.h, func() error { return s.h.c.Load(rh.tp.Partition, epoch, recs, s.h.now()) })
	if err != nil {
		return 0, err
	}
	return len(recs), loadErr
}

func (s txnState) unload(p int32) {
	s.h.post(func() { s.h.c.Unload(p) })
}

// txnIDs gives the coordinator producer ids from the node's blocks
// without blocking it: when the node's block is used up, the next is
// fetched in the background and the producer is asked to retry.
type txnIDs struct{ n *Broker }

func (t txnIDs) NextProducerID() (int64, error) {
	m := t.n.member
	if id, ok := m.tryProducerID(); ok {
		return id, nil
	}
	m.goUnlessLeaving(func() {
		ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
		defer cancel()
		if err := m.reserveProducerIDs(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.n.logger.Warn("reserving producer ids failed", "err", err)
		}
	})
	return -1, fmt.Errorf("%w: fetching producer ids", kafka.ErrCoordinatorLoadInProgress)
}

// onLoop runs f on the coordinator's loop and returns its result, or
// ErrClosed when the loop has stopped.
func onLoop[T any](h *txnHost, f func() T) (T, error) {
	ch := make(chan T, 1)
	var zero T
	if !h.post(func() { ch <- f() }) {
		return zero, ErrClosed
	}
	select {
	case v := <-ch:
		return v, nil
	case <-h.done:
		return zero, ErrClosed
	}
}

// describe returns the coordinator's Status of transactional id id.
func (h *txnHost) describe(id string) (txn.Status, error) {
	type described struct {
		s   txn.Status
		err error
	}
	d, err := onLoop(h, func() described {
		s, err := h.c.Describe(id)
		return described{s, err}
	})
	if err != nil {
		return txn.Status{}, err
	}
	return d.s, d.err
}

// list returns the coordinator's Status of every id it has loaded.
func (h *txnHost) list() ([]txn.Status, error) { return onLoop(h, h.c.List) }
