package producer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// A transactional producer (TransactionalID; Kafka's transactional.id,
// KIP-98) writes records to many partitions, and commits consumer
// offsets, atomically: a read_committed consumer sees all of a
// transaction's records or none. It is Kafka's TransactionManager:
//
//   - New finds the transactional id's coordinator (FindCoordinator) and
//     runs InitProducerId with the id: the coordinator aborts what an
//     older instance with the id left open and fences it (a new epoch).
//   - Before the first batch of a partition in a transaction is sent, the
//     partition joins the transaction (AddPartitionsToTxn); the sender
//     adds every new partition of one drain in one request, and holds
//     their batches until it is answered.
//   - SendOffsetsToTransaction adds the group's offsets partition to the
//     transaction (AddOffsetsToTxn), then commits the offsets in it
//     (TxnOffsetCommit): they become the group's only when the
//     transaction commits.
//   - When the node finalizes transaction.version at 2 (its features, as
//     the client reports them, say so at BeginTransaction), the producer
//     sends neither AddPartitionsToTxn nor AddOffsetsToTxn: its Produce
//     goes in version 12 and its TxnOffsetCommit in version 5, and the
//     partition's leader and the group's coordinator add the partitions
//     (KIP-890 part 2). A batch goes out without waiting for a round
//     trip to the coordinator.
//   - CommitTransaction flushes every record, then ends the transaction
//     (EndTxn); AbortTransaction fails what was not sent yet, waits for
//     what is in flight, and ends it with ABORT. EndTxn goes in version 5
//     (transaction version 2, KIP-890): the coordinator answers the epoch
//     of the next transaction, and every partition's sequence starts over
//     at 0 in it. A coordinator that answers no epoch keeps the producer's
//     after a commit; after an abort the producer bumps its epoch with
//     InitProducerId (KIP-360), since batches failed in the transaction may
//     have left gaps in its sequences.
//
// Errors are of two kinds, as Kafka classifies them. Fatal ones — the
// producer was fenced by a newer instance (kafka.ErrProducerFenced,
// ErrInvalidProducerEpoch), or the coordinator found the transaction in a
// state the producer cannot have put it in (ErrInvalidTxnState,
// ErrInvalidProducerIDMapping) — leave the producer in StateFatalError:
// every call fails with an error matching ErrFatal, and it must be
// closed. Any other failure of a record, of AddPartitionsToTxn or of the
// offsets is abortable: the producer goes to StateAbortableError, records
// produced or committed from then on fail with an error matching
// ErrAbortable, and AbortTransaction gets it back to StateReady.

// TransactionState is where a transactional producer is in its state
// machine:
//
//	Uninitialized ──New──▶ Ready ──BeginTransaction──▶ InTransaction
//	InTransaction ──CommitTransaction──▶ Committing ──EndTxn──▶ Ready
//	InTransaction ──AbortTransaction──▶ Aborting ──EndTxn──▶ Ready
//	InTransaction, Committing ──a record, AddPartitionsToTxn or the offsets fail──▶ AbortableError
//	AbortableError ──AbortTransaction──▶ Aborting
//	any ──fenced, or a state error from the coordinator──▶ FatalError
//
// A CommitTransaction or AbortTransaction whose ctx ended before the
// coordinator answered leaves the producer Committing or Aborting; calling
// the same method again goes on where it stopped.
type TransactionState int32

// The transaction states.
const (
	// StateUninitialized: the producer has no producer id yet.
	StateUninitialized TransactionState = iota
	// StateReady: no transaction is open; BeginTransaction opens one.
	StateReady
	// StateInTransaction: records produced now belong to the transaction.
	StateInTransaction
	// StateCommitting: CommitTransaction is under way.
	StateCommitting
	// StateAborting: AbortTransaction is under way.
	StateAborting
	// StateAbortableError: the transaction failed; only AbortTransaction
	// is allowed.
	StateAbortableError
	// StateFatalError: the producer can do nothing more; Close it.
	StateFatalError
)

var stateNames = [...]string{"Uninitialized", "Ready", "InTransaction", "Committing", "Aborting", "AbortableError", "FatalError"}

// String returns the state's name, as Kafka's TransactionManager spells
// it in CamelCase.
func (s TransactionState) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("TransactionState(%d)", int32(s))
}

// GroupMetadata names the consumer group member on whose behalf
// SendOffsetsToTransaction commits offsets (Kafka's
// ConsumerGroupMetadata), so that the group's coordinator refuses the
// offsets of a member the group has replaced (KIP-447). A consumer's
// GroupMetadata gives it:
//
//	m := c.GroupMetadata()
//	producer.GroupMetadata{Group: m.Group, GenerationID: m.Generation,
//		MemberID: m.MemberID, GroupInstanceID: m.GroupInstanceID}
//
// A producer that commits outside group membership leaves GenerationID
// transport.NoGeneration (-1) and MemberID empty.
type GroupMetadata struct {
	// Group is the group.id.
	Group string
	// GenerationID is the member's generation, or transport.NoGeneration.
	GenerationID int32
	// MemberID is the member's id, or empty.
	MemberID string
	// GroupInstanceID is the member's group.instance.id, or empty.
	GroupInstanceID string
}

// The versions of the transaction requests the producer sends: the
// newest whose answers it understands (see transport.TxnClient).
const (
	initProducerIDVersion     = 5
	addPartitionsToTxnVersion = 3 // 4 and up are for brokers
	addOffsetsToTxnVersion    = 4
	endTxnVersion             = 5 // transaction version 2
	txnOffsetCommitVersion    = 4 // after AddOffsetsToTxn
	// Under transaction version 2 the producer adds no partition itself.
	produceAddingVersion         = 12 // the leader adds the partition
	txnOffsetCommitAddingVersion = 5  // the group coordinator adds the offsets' partition
)

// transaction is a transactional producer's state.
type transaction struct {
	client transport.TxnClient
	id     string

	mu sync.Mutex
	// state is the TransactionState, written under mu; Produce reads it
	// without.
	state atomic.Int32
	// err is why the producer is in StateAbortableError or
	// StateFatalError.
	err error
	// started says the coordinator has the transaction open: a
	// partition or the offsets were added, so it must be ended with EndTxn.
	started bool
	// pending are the partitions waiting to be added; adding says a
	// goroutine adds them, and addDone is closed when it returns, so that
	// endTxn waits for it and no AddPartitionsToTxn races an EndTxn. (A
	// channel, not a mutex held across the goroutine's retries: waiting
	// on one is a durable block, as testing/synctest needs.)
	pending []*partitionState
	adding  bool
	addDone chan struct{}
	// addsItself says the open transaction is in transaction version 2
	// (the node's feature transaction.version is 2, as BeginTransaction
	// found it): its partitions are added by the Produce (version 12)
	// and the TxnOffsetCommit (version 5) that write them, with no
	// AddPartitionsToTxn or AddOffsetsToTxn.
	addsItself atomic.Bool
}

// stateOf returns the transaction's state.
func (t *transaction) stateOf() TransactionState { return TransactionState(t.state.Load()) }

// setLocked moves the transaction to state s. The caller holds t.mu.
func (t *transaction) setLocked(s TransactionState) { t.state.Store(int32(s)) }

// fatalTxnError reports whether err, answering a transaction request or a
// transactional write, leaves the producer unusable.
func fatalTxnError(err error) bool {
	return errors.Is(err, ErrFatal) || errors.Is(err, kafka.ErrProducerFenced) || errors.Is(err, kafka.ErrInvalidProducerEpoch) ||
		errors.Is(err, kafka.ErrInvalidTxnState) || errors.Is(err, kafka.ErrInvalidProducerIDMapping) ||
		errors.Is(err, kafka.ErrTransactionalIDNotFound)
}

// txnFailed records that something of the transaction failed with err:
// a fatal error fails the producer; any other moves an open or committing
// transaction to StateAbortableError. Failures while aborting are what
// aborting means, and change nothing.
func (p *Producer) txnFailed(err error) {
	t := p.txn
	if errors.Is(err, ErrClosed) {
		return
	}
	if fatalTxnError(err) {
		p.txnFatal(err)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.stateOf() {
	case StateInTransaction, StateCommitting:
		t.err = err
		t.setLocked(StateAbortableError)
	}
}

// txnFatal fails the producer for good with err.
func (p *Producer) txnFatal(err error) {
	if !errors.Is(err, ErrFatal) {
		err = fmt.Errorf("%w: transactional id %q: %w", ErrFatal, p.txn.id, err)
	}
	t := p.txn
	t.mu.Lock()
	if t.stateOf() != StateFatalError {
		t.err = err
		t.setLocked(StateFatalError)
	}
	t.mu.Unlock()
	p.setFatal(err)
}

// produceErr returns why a transactional producer cannot take a record
// now, or nil.
func (p *Producer) produceErr() error {
	t := p.txn
	switch t.stateOf() {
	case StateInTransaction:
		return nil
	case StateAbortableError, StateFatalError:
		t.mu.Lock()
		defer t.mu.Unlock()
		if errors.Is(t.err, ErrFatal) {
			return t.err
		}
		return fmt.Errorf("%w: %w", ErrAbortable, t.err)
	}
	return fmt.Errorf("%w: Produce in state %v: records of a transactional producer need BeginTransaction first", ErrTransactionState, t.stateOf())
}

// undrainedErr returns the error that batches not sent yet fail with:
// the abortable error, or ErrTransactionAborted while aborting; nil
// otherwise, when they are sent.
func (p *Producer) undrainedErr() error {
	t := p.txn
	switch t.stateOf() {
	case StateAbortableError:
		t.mu.Lock()
		defer t.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrAbortable, t.err)
	case StateAborting:
		return ErrTransactionAborted
	}
	return nil
}

// initTransactions runs InitProducerId for the transactional id, after
// FindCoordinator, retrying what is retriable until ctx ends. fromID and
// fromEpoch are the id and epoch the producer has (-1 for none): given,
// the coordinator bumps the epoch rather than fencing (KIP-360).
func (p *Producer) initTransactions(ctx context.Context, fromID int64, fromEpoch int16) error {
	t := p.txn
	var resp *transport.InitProducerIDResponse
	err := p.txnRetry(ctx, "FindCoordinator", func(ctx context.Context) error {
		r, err := t.client.FindCoordinator(ctx, &transport.FindCoordinatorRequest{Key: t.id, KeyType: transport.CoordinatorTransaction})
		if err != nil {
			return err
		}
		return r.Err
	})
	if err == nil {
		err = p.txnRetry(ctx, "InitProducerId", func(ctx context.Context) error {
			r, err := t.client.InitProducerID(ctx, &transport.InitProducerIDRequest{Version: initProducerIDVersion,
				TransactionalID: t.id, TransactionTimeout: p.cfg.transactionTimeout, ProducerID: fromID, ProducerEpoch: fromEpoch})
			if err != nil {
				return err
			}
			resp = r
			return r.Err
		})
	}
	if err != nil {
		return err
	}
	p.newEpoch(resp.ProducerID, resp.ProducerEpoch)
	p.idem.ready.Store(true)
	return nil
}

// The calls that add to a transaction, as txnRetry names them, and how
// soon they retry while the coordinator answers CONCURRENT_TRANSACTIONS.
const (
	addPartitionsCall    = "AddPartitionsToTxn"
	addOffsetsCall       = "AddOffsetsToTxn"
	concurrentTxnBackoff = 20 * time.Millisecond
)

// txnRetry calls call, with a context bounded by RequestTimeout, until it
// succeeds, fails with an error that is not retriable, or ctx ends;
// every RetryBackoff while it fails with a retriable error
// (kafka.ErrConcurrentTransactions, ErrNotCoordinator,
// ErrCoordinatorLoadInProgress, ...) or gets no answer — but an add to a
// transaction answered CONCURRENT_TRANSACTIONS retries after at most
// 20 ms.
func (p *Producer) txnRetry(ctx context.Context, what string, call func(ctx context.Context) error) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.requestTimeout)
		err := call(rctx)
		cancel()
		if err == nil {
			return nil
		}
		var ke *kafka.Error
		if errors.As(err, &ke) && !ke.Retriable {
			return fmt.Errorf("producer: %s: %w", what, err)
		}
		if p.ctx.Err() != nil {
			return fmt.Errorf("%w: %s: %w", ErrClosed, what, err)
		}
		backoff := p.cfg.retryBackoff
		if errors.Is(err, kafka.ErrConcurrentTransactions) && (what == addPartitionsCall || what == addOffsetsCall) {
			// The last transaction is still completing — its markers
			// follow the EndTxn answer — which takes milliseconds: the
			// next one's first add retries soon, as Kafka's producer
			// does (KAFKA-5477), not after a whole retry.backoff.ms.
			backoff = min(backoff, concurrentTxnBackoff)
		}
		timer := time.NewTimer(backoff)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("producer: %s: %w (last error: %w)", what, ctx.Err(), err)
		case <-p.ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w: %s: %w", ErrClosed, what, err)
		}
	}
}

// newEpoch makes id and epoch the producer's, and starts every
// partition's sequence over at 0 when they changed. No batch is
// outstanding: it runs between transactions.
func (p *Producer) newEpoch(id int64, epoch int16) {
	idem := p.idem
	idem.epochMu.Lock()
	defer idem.epochMu.Unlock()
	if idem.ready.Load() && idem.id.Load() == id && idem.epoch.Load() == int32(epoch) {
		return
	}
	idem.id.Store(id)
	idem.epoch.Store(int32(epoch))
	idem.bumpPending.Store(false)
	for _, ps := range p.allPartitions.Load() {
		ps.mu.Lock()
		ps.nextSequence = 0
		ps.mu.Unlock()
	}
}

// BeginTransaction opens a transaction: the records produced from now
// until CommitTransaction or AbortTransaction belong to it. It needs
// StateReady, else it fails with ErrTransactionState (ErrFatal in
// StateFatalError). Like Kafka's, it sends nothing: the coordinator learns
// of the transaction when its first partition or offsets are added.
func (p *Producer) BeginTransaction() error {
	t, err := p.enter("BeginTransaction", StateInTransaction, StateReady)
	if err == nil {
		t.addsItself.Store(speaksTV2(t.client))
	}
	return err
}

// speaksTV2 reports whether the node behind client finalizes
// transaction.version at 2 or more (KIP-890 part 2), as its features say.
func speaksTV2(client transport.TxnClient) bool {
	fr, ok := client.(transport.FeatureReporter)
	return ok && transport.FinalizedLevel(fr.Features(), transport.FeatureTransactionVersion) >= 2
}

// enter moves the transaction to state to when it is in one of from, and
// returns it; otherwise it returns the error of a call the state does not
// allow (see stateErrLocked).
func (p *Producer) enter(call string, to TransactionState, from ...TransactionState) (*transaction, error) {
	t, err := p.transactional(call)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.stateOf(); !slices.Contains(from, s) {
		return nil, p.stateErrLocked(call, s)
	}
	t.setLocked(to)
	return t, nil
}

// transactional returns the producer's transaction, or an error for a
// producer without TransactionalID.
func (p *Producer) transactional(call string) (*transaction, error) {
	if p.txn == nil {
		return nil, fmt.Errorf("%w: %s needs TransactionalID", ErrTransactionState, call)
	}
	return p.txn, nil
}

// stateErrLocked returns the error of a call the state s does not allow:
// the producer's fatal error in StateFatalError, else ErrTransactionState.
func (p *Producer) stateErrLocked(call string, s TransactionState) error {
	if s == StateFatalError {
		return p.txn.err
	}
	if s == StateAbortableError {
		return fmt.Errorf("%w: %s in state %v: %w", ErrTransactionState, call, s, fmt.Errorf("%w: %w", ErrAbortable, p.txn.err))
	}
	return fmt.Errorf("%w: %s in state %v", ErrTransactionState, call, s)
}

// TransactionState returns the producer's state; StateUninitialized for a
// producer without TransactionalID.
func (p *Producer) TransactionState() TransactionState {
	if p.txn == nil {
		return StateUninitialized
	}
	return p.txn.stateOf()
}

// CommitTransaction commits the open transaction: it flushes every record
// (see Flush), then asks the coordinator to commit (EndTxn), which makes
// the records and offsets visible to read_committed consumers. It returns
// once the coordinator has decided; its markers follow. When a record,
// a partition or the offsets of the transaction failed, nothing is
// committed: it returns an error matching ErrAbortable, and the producer
// waits in StateAbortableError for AbortTransaction. A fatal error
// matches ErrFatal. When ctx ends first the producer stays in
// StateCommitting, and CommitTransaction may be called again.
func (p *Producer) CommitTransaction(ctx context.Context) error {
	t, err := p.enter("CommitTransaction", StateCommitting, StateInTransaction, StateCommitting)
	if err != nil {
		return err
	}
	if err := p.Flush(ctx); err != nil {
		return fmt.Errorf("producer: commit transaction: %w", err)
	}
	t.mu.Lock()
	if s := t.stateOf(); s != StateCommitting {
		// A record, or the partitions, failed meanwhile.
		err := fmt.Errorf("producer: commit transaction: %w", p.stateErrLocked("CommitTransaction", s))
		if s == StateAbortableError {
			err = fmt.Errorf("producer: commit transaction: %w: %w", ErrAbortable, t.err)
		}
		t.mu.Unlock()
		return err
	}
	t.mu.Unlock()
	return p.endTxn(ctx, transport.TxnCommit)
}

// AbortTransaction aborts the open transaction, or the failed one in
// StateAbortableError: records not sent yet fail with
// ErrTransactionAborted, those in flight are waited for, and the
// coordinator is asked to abort (EndTxn), so that read_committed
// consumers never see the transaction's records nor its offsets. When
// ctx ends first the producer stays in StateAborting, and AbortTransaction
// may be called again.
func (p *Producer) AbortTransaction(ctx context.Context) error {
	if _, err := p.enter("AbortTransaction", StateAborting, StateInTransaction, StateAbortableError, StateAborting); err != nil {
		return err
	}
	p.wakeSender() // to fail what was not sent
	if err := p.Flush(ctx); err != nil {
		return fmt.Errorf("producer: abort transaction: %w", err)
	}
	return p.endTxn(ctx, transport.TxnAbort)
}

// endTxn ends the transaction with result, once no AddPartitionsToTxn is
// under way (one in flight is waited for, up to RequestTimeout, whatever
// ctx), and makes the producer ready for the next one.
func (p *Producer) endTxn(ctx context.Context, result transport.TxnResult) error {
	t := p.txn
	t.mu.Lock()
	adding := t.addDone
	t.mu.Unlock()
	if adding != nil {
		<-adding
	}
	t.mu.Lock()
	started := t.started
	t.mu.Unlock()
	if started {
		id, epoch := p.idem.id.Load(), int16(p.idem.epoch.Load())
		var resp *transport.EndTxnResponse
		err := p.txnRetry(ctx, "EndTxn", func(ctx context.Context) error {
			r, err := t.client.EndTxn(ctx, &transport.EndTxnRequest{Version: endTxnVersion, TransactionalID: t.id,
				ProducerID: id, ProducerEpoch: epoch, Result: result})
			if err != nil {
				return err
			}
			resp = r
			return r.Err
		})
		switch {
		case err != nil && fatalTxnError(err):
			p.txnFatal(err)
			return p.txn.err
		case err != nil && ctx.Err() == nil && !errors.Is(err, ErrClosed):
			// Neither retriable nor fatal: Kafka's KafkaException.
			p.txnFatal(err)
			return p.txn.err
		case err != nil:
			return err // ctx ended or closed: the call may be made again
		case resp.ProducerEpoch >= 0:
			p.newEpoch(resp.ProducerID, resp.ProducerEpoch)
		case result == transport.TxnAbort:
			// Transaction version 0: batches failed in the transaction may
			// have left gaps in the sequences; a new epoch closes them.
			if err := p.initTransactions(ctx, id, epoch); err != nil {
				if fatalTxnError(err) || ctx.Err() == nil {
					p.txnFatal(err)
					return p.txn.err
				}
				return err
			}
		}
	}
	for _, ps := range p.allPartitions.Load() {
		ps.mu.Lock()
		ps.inTxn, ps.txnRequested = false, false
		ps.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stateOf() == StateFatalError {
		return t.err
	}
	t.started, t.err, t.pending = false, nil, nil
	t.setLocked(StateReady)
	return nil
}

// SendOffsetsToTransaction commits offsets — each the offset of the next
// record to consume of a partition — for the consumer group member group
// in the open transaction (Kafka's sendOffsetsToTransaction): they become
// the group's committed offsets when the transaction commits, and are
// dropped when it aborts. This is how consume-transform-produce reads,
// writes and commits exactly once. It adds the group's offsets partition
// to the transaction (AddOffsetsToTxn), then sends the offsets to the
// group's coordinator (TxnOffsetCommit), retrying retriable errors until
// ctx ends. A refusal from the group (the member is not the group's, a
// rebalance moved on: kafka.ErrUnknownMemberID, ErrIllegalGeneration,
// ErrFencedInstanceID) is abortable.
func (p *Producer) SendOffsetsToTransaction(ctx context.Context, offsets map[kafka.TopicPartition]int64, group GroupMetadata) error {
	t, err := p.enter("SendOffsetsToTransaction", StateInTransaction, StateInTransaction)
	if err != nil {
		return err
	}
	id, epoch := p.idem.id.Load(), int16(p.idem.epoch.Load())
	version := int16(txnOffsetCommitVersion)
	if t.addsItself.Load() {
		version = txnOffsetCommitAddingVersion
	} else {
		err = p.txnRetry(ctx, addOffsetsCall, func(ctx context.Context) error {
			r, err := t.client.AddOffsetsToTxn(ctx, &transport.AddOffsetsToTxnRequest{Version: addOffsetsToTxnVersion,
				TransactionalID: t.id, ProducerID: id, ProducerEpoch: epoch, Group: group.Group})
			if err != nil {
				return err
			}
			return r.Err
		})
	}
	if err == nil {
		t.mu.Lock()
		t.started = true
		t.mu.Unlock()
		err = p.txnRetry(ctx, "TxnOffsetCommit", func(ctx context.Context) error {
			return p.txnOffsetCommit(ctx, version, id, epoch, offsets, group)
		})
	}
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, ErrClosed) {
			p.txnFailed(err)
			if s := t.stateOf(); s == StateAbortableError {
				return fmt.Errorf("%w: %w", ErrAbortable, err)
			}
		}
		return err
	}
	return nil
}

// txnOffsetCommit sends one TxnOffsetCommit, and returns the first error
// of its partitions.
func (p *Producer) txnOffsetCommit(ctx context.Context, version int16, id int64, epoch int16, offsets map[kafka.TopicPartition]int64, group GroupMetadata) error {
	req := &transport.TxnOffsetCommitRequest{Version: version, TransactionalID: p.txn.id, Group: group.Group,
		ProducerID: id, ProducerEpoch: epoch, GenerationID: group.GenerationID, MemberID: group.MemberID,
		GroupInstanceID: group.GroupInstanceID}
	byTopic := map[string]int{}
	for tp, off := range offsets {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			req.Topics = append(req.Topics, transport.OffsetCommitTopic{Topic: tp.Topic})
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, transport.OffsetCommitPartition{Partition: tp.Partition, Offset: off, LeaderEpoch: -1})
	}
	resp, err := p.txn.client.TxnOffsetCommit(ctx, req)
	if err != nil {
		return err
	}
	for _, tr := range resp.Topics {
		for _, pr := range tr.Partitions {
			if pr.Err != nil {
				return fmt.Errorf("%s-%d: %w", tr.Topic, pr.Partition, pr.Err)
			}
		}
	}
	return nil
}

// requestPartitions asks for the partitions of needed, which have batches
// to send and are not in the transaction yet, to be added to it; a
// goroutine adds them, unless one is at it already.
func (p *Producer) requestPartitions(needed []*partitionState) {
	t := p.txn
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ps := range needed {
		ps.mu.Lock()
		fresh := !ps.txnRequested
		ps.txnRequested = true
		ps.mu.Unlock()
		if fresh {
			t.pending = append(t.pending, ps)
		}
	}
	if len(t.pending) > 0 && !t.adding {
		t.adding, t.addDone = true, make(chan struct{})
		p.goroutines.Go(p.addPartitions)
	}
}

// addPartitions adds the pending partitions to the transaction, all those
// pending at once in one AddPartitionsToTxn, until none is left, retrying
// retriable errors while the transaction is open or committing. A
// partition added lets its batches go; a failure is abortable, or fatal,
// and fails them.
func (p *Producer) addPartitions() {
	t := p.txn
	for {
		t.mu.Lock()
		parts := t.pending
		t.pending = nil
		if len(parts) == 0 {
			t.adding = false
			close(t.addDone)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		err := p.addPartitionsOnce(parts)
		if err != nil {
			p.txnFailed(err)
		} else {
			t.mu.Lock()
			t.started = true
			t.mu.Unlock()
			for _, ps := range parts {
				ps.mu.Lock()
				ps.inTxn = true
				ps.mu.Unlock()
			}
		}
		p.wakeSender()
	}
}

// addPartitionsOnce sends AddPartitionsToTxn for parts until it is
// answered without a retriable error, or the transaction is no longer
// open or committing.
func (p *Producer) addPartitionsOnce(parts []*partitionState) error {
	t := p.txn
	tps := make([]kafka.TopicPartition, len(parts))
	for i, ps := range parts {
		tps[i] = kafka.TopicPartition{Topic: ps.topic.name, Partition: ps.id}
	}
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	return p.txnRetry(ctx, addPartitionsCall, func(ctx context.Context) error {
		if s := t.stateOf(); s != StateInTransaction && s != StateCommitting {
			cancel()
			return fmt.Errorf("transaction %v", s)
		}
		resp, err := t.client.AddPartitionsToTxn(ctx, &transport.AddPartitionsToTxnRequest{Version: addPartitionsToTxnVersion,
			Transactions: []transport.AddPartitionsToTxnTransaction{{TransactionalID: t.id, ProducerID: p.idem.id.Load(),
				ProducerEpoch: int16(p.idem.epoch.Load()), Partitions: tps}}})
		if err != nil {
			return err
		}
		if resp.Err != nil {
			return resp.Err
		}
		// The error that counts is the first that is not
		// OPERATION_NOT_ATTEMPTED, which only says another partition
		// failed.
		var first error
		for _, tr := range resp.Transactions {
			for _, pr := range tr.Partitions {
				if pr.Err != nil && (first == nil || errors.Is(first, kafka.ErrOperationNotAttempted)) {
					first = fmt.Errorf("%s-%d: %w", pr.Topic, pr.Partition, pr.Err)
				}
			}
		}
		return first
	})
}
