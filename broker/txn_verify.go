package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// This file is KIP-890 part 1 on the partition leader's side: before it
// takes a transactional batch that would open a transaction on a
// partition, the leader asks the transaction's coordinator whether the
// producer added the partition to its ongoing transaction. A produce that
// arrives late — after its transaction was aborted, or after the next one
// began elsewhere — would otherwise open a transaction no coordinator
// knows of: one that never ends, holding the last stable offset back for
// ever (the "hanging transaction" of KIP-890).
//
// The question is asynchronous and the check is not: the partition asks
// its TxnVerifier under the log's append lock. So the produce path appends
// first; a batch that needs an answer the verifier does not have is refused
// with errUnverified; the path then takes the partition's verification
// guard, asks the coordinator, records the answer under the guard, and
// appends again. A marker between the question and the append withdraws
// the guard, and the answer with it.

// errUnverified refuses a batch that would open a transaction the
// coordinator has not verified under the producer's current guard: the
// produce path asks the coordinator and appends again. A request that
// still gets it answers INVALID_TXN_STATE, as Kafka's log does when the
// verification guard does not match.
var errUnverified = fmt.Errorf("%w: the transaction's coordinator has not verified the partition", kafka.ErrInvalidTxnState)

// verifyAttempts bounds the rounds of question and append for one batch:
// each round lost means a marker of the producer landed in between.
const verifyAttempts = 3

// maxVerified bounds the answers kept: an answer whose append never came
// is forgotten when the table is full.
const maxVerified = 1 << 14

// txnVerifier is a broker's partition.TxnVerifier: the coordinator's
// answers that the produce path fetched, each under the guard its
// partition handed out, used once.
type txnVerifier struct {
	mu       sync.Mutex
	verified map[verifiedTxn]partition.VerificationGuard
}

// verifiedTxn is what one answer is about: a producer, at an epoch, in a
// transaction that includes a partition.
type verifiedTxn struct {
	tp            kafka.TopicPartition
	producerID    int64
	producerEpoch int16
}

func newTxnVerifier() *txnVerifier {
	return &txnVerifier{verified: map[verifiedTxn]partition.VerificationGuard{}}
}

// VerifyTransaction admits the batch when the coordinator verified the
// producer's transaction on tp under guard, and uses that answer up;
// otherwise it returns errUnverified.
func (v *txnVerifier) VerifyTransaction(tp kafka.TopicPartition, producerID int64, producerEpoch int16, guard partition.VerificationGuard) error {
	k := verifiedTxn{tp, producerID, producerEpoch}
	v.mu.Lock()
	defer v.mu.Unlock()
	g, ok := v.verified[k]
	delete(v.verified, k)
	if !ok || guard == 0 || g != guard {
		return fmt.Errorf("%w: producer %d epoch %d on %s", errUnverified, producerID, producerEpoch, tp)
	}
	return nil
}

// record keeps the coordinator's yes for k, given under guard.
func (v *txnVerifier) record(k verifiedTxn, guard partition.VerificationGuard) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.verified) >= maxVerified {
		clear(v.verified)
	}
	v.verified[k] = guard
}

// The versions from which a request means transaction version 2
// (KIP-890 part 2): its partition is added to the transaction by the
// broker, not by the producer beforehand.
const (
	// firstAddingProduce is the first Produce whose transactional
	// batches add their partition.
	firstAddingProduce = 12
	// firstAbortableProduce is the first Produce that may answer
	// TRANSACTION_ABORTABLE; older ones get INVALID_TXN_STATE instead.
	firstAbortableProduce = 11
	// firstAddingTxnOffsetCommit is the first TxnOffsetCommit that adds
	// the group's partition of __consumer_offsets.
	firstAddingTxnOffsetCommit = 5
)

// A coordinator busy ending the producer's previous transaction answers
// an add with CONCURRENT_TRANSACTIONS; the broker asks again every
// addRetryBackoff, addRetries times, before it answers the client:
// Kafka's add.partitions.to.txn.retry.backoff.ms (20) and
// add.partitions.to.txn.retry.backoff.max.ms (100).
const (
	addRetryBackoff = 20 * time.Millisecond
	addRetries      = 5
)

// appendVerified appends a produced batch to h as appendReplicated does,
// and when the partition refuses it as unverified, asks the coordinator of
// the request's transactional id about it and appends again: whether the
// partition is in the transaction, or, for a Produce of version 12 and up,
// to add it. batch stays the caller's throughout: a refused attempt leaves
// it whole (the check rewrites only header fields — offsets, epoch, a
// LogAppendTime stamp with its CRC — that the next attempt writes again),
// so the same bytes are proposed again.
func (n *Broker) appendVerified(ctx context.Context, h *replicaHost, req *transport.ProduceRequest, batch []byte) (int64, int64, error) {
	if req.Version >= firstAddingProduce && n.opts.NoTransactionVerification {
		// The partitions have no verifier to refuse the batch, and the
		// producer added no partition: add it before every
		// transactional batch, or its coordinator would never write the
		// partition's marker.
		if hdr, err := record.ParseHeader(batch); err == nil && hdr.Attributes.IsTransactional() {
			if err := n.askForProduce(ctx, h.tp, req, hdr); err != nil {
				return -1, -1, err
			}
		}
		return n.appendReplicated(ctx, h, batch, req.Acks, req.Timeout)
	}
	for attempt := 1; ; attempt++ {
		base, appendTime, err := n.appendReplicated(ctx, h, batch, req.Acks, req.Timeout)
		if !errors.Is(err, errUnverified) || attempt == verifyAttempts {
			return base, appendTime, err
		}
		if err := n.verifyProduce(ctx, h, req, batch); err != nil {
			return -1, -1, err
		}
	}
}

// verifyProduce asks the coordinator of req's transactional id about
// batch, a transactional batch for h's partition (see askForProduce), and
// records a yes under the partition's verification guard.
func (n *Broker) verifyProduce(ctx context.Context, h *replicaHost, req *transport.ProduceRequest, batch []byte) error {
	hdr, err := record.ParseHeader(batch)
	if err != nil {
		return fmt.Errorf("%w: %v", kafka.ErrCorruptMessage, err)
	}
	guard, err := h.p.StartVerification(hdr.ProducerID)
	if err != nil {
		return err
	}
	if err := n.askForProduce(ctx, h.tp, req, hdr); err != nil {
		return err
	}
	n.verifier.record(verifiedTxn{h.tp, hdr.ProducerID, hdr.ProducerEpoch}, guard)
	return nil
}

// askForProduce asks the coordinator of req's transactional id whether the
// producer of hdr, a transactional batch for tp, has tp in its ongoing
// transaction (KIP-890 part 1), or, for a Produce of version 12 and up,
// to add it (part 2). The errors are what the produce request answers, as
// Kafka's leader translates them: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// for a transactional batch in a request without a transactional id,
// INVALID_TXN_STATE (TRANSACTION_ABORTABLE from version 11) for a
// partition the transaction does not include, INVALID_PRODUCER_EPOCH for
// a fenced producer, and NOT_ENOUGH_REPLICAS, which producers retry, when
// the coordinator cannot be asked or is busy ending the previous
// transaction.
func (n *Broker) askForProduce(ctx context.Context, tp kafka.TopicPartition, req *transport.ProduceRequest, hdr record.Header) error {
	if req.TransactionalID == "" {
		return fmt.Errorf("%w: a transactional batch of producer %d without a transactional id", kafka.ErrTransactionalIDAuthorizationFailed, hdr.ProducerID)
	}
	t := transport.AddPartitionsToTxnTransaction{TransactionalID: req.TransactionalID, ProducerID: hdr.ProducerID,
		ProducerEpoch: hdr.ProducerEpoch, VerifyOnly: req.Version < firstAddingProduce, Partitions: []kafka.TopicPartition{tp}}
	return verifyAnswer(n.askCoordinator(ctx, t), req.TransactionalID, req.Version >= firstAbortableProduce, kafka.ErrNotEnoughReplicas)
}

// verifyAnswer translates the coordinator's answer err about transactional
// id id for the request that asked it, as Kafka does: TRANSACTION_ABORTABLE
// stays only for a request that may answer it (abortable), and is
// INVALID_TXN_STATE otherwise; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH,
// which producers expect there; a coordinator that cannot answer now is
// unreachable, an error the request's client retries.
func verifyAnswer(err error, id string, abortable bool, unreachable *kafka.Error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kafka.ErrTransactionAbortable) && !abortable:
		return fmt.Errorf("%w: %v", kafka.ErrInvalidTxnState, err)
	case errors.Is(err, kafka.ErrProducerFenced):
		return fmt.Errorf("%w: %v", kafka.ErrInvalidProducerEpoch, err)
	case coordinatorUnreachable(err):
		return fmt.Errorf("%w: verifying the transaction of %q: %v", unreachable, id, err)
	}
	return err
}

// coordinatorUnreachable reports whether err, from askCoordinator, says
// the question could not be answered now: the coordinator is elsewhere,
// loading, unreachable or busy.
func coordinatorUnreachable(err error) bool {
	for _, e := range []error{kafka.ErrNotCoordinator, kafka.ErrCoordinatorNotAvailable, kafka.ErrCoordinatorLoadInProgress,
		kafka.ErrRequestTimedOut, kafka.ErrNetwork, kafka.ErrConcurrentTransactions} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// askTxnOffsetCommit asks the coordinator of req's transactional id
// whether the group's partition tp of __consumer_offsets is in the
// producer's ongoing transaction, or, for a TxnOffsetCommit of version 5
// and up, to add it — Kafka's group coordinator does the same before it
// writes the offsets. The errors are the TxnOffsetCommit's:
// COORDINATOR_NOT_AVAILABLE when the transaction's coordinator cannot be
// asked now, INVALID_PRODUCER_EPOCH for a fenced producer,
// INVALID_TXN_STATE or TRANSACTION_ABORTABLE for a transaction without
// the partition.
func (n *Broker) askTxnOffsetCommit(ctx context.Context, req *transport.TxnOffsetCommitRequest, tp kafka.TopicPartition) error {
	if req.TransactionalID == "" {
		return fmt.Errorf("%w: a transactional offset commit without a transactional id", kafka.ErrTransactionalIDAuthorizationFailed)
	}
	adds := req.Version >= firstAddingTxnOffsetCommit
	if !adds && n.opts.NoTransactionVerification {
		return nil
	}
	t := transport.AddPartitionsToTxnTransaction{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID,
		ProducerEpoch: req.ProducerEpoch, VerifyOnly: !adds, Partitions: []kafka.TopicPartition{tp}}
	return verifyAnswer(n.askCoordinator(ctx, t), req.TransactionalID, adds, kafka.ErrCoordinatorNotAvailable)
}

// askCoordinator sends t, a transaction of one partition, to its
// coordinator — this node's own, or the leader of its __transaction_state
// partition — as AddPartitionsToTxn version 4 when t is VerifyOnly and
// version 5 (transaction version 2) when it adds, and returns the answer
// for its partition. An add the coordinator answers with
// CONCURRENT_TRANSACTIONS is asked again, a few times.
func (n *Broker) askCoordinator(ctx context.Context, t transport.AddPartitionsToTxnTransaction) error {
	for retry := 0; ; retry++ {
		err := n.askCoordinatorOnce(ctx, t)
		if t.VerifyOnly || !errors.Is(err, kafka.ErrConcurrentTransactions) || retry == addRetries {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-n.stop:
			return err
		case <-time.After(addRetryBackoff):
		}
	}
}

// askCoordinatorOnce is one question of askCoordinator.
func (n *Broker) askCoordinatorOnce(ctx context.Context, t transport.AddPartitionsToTxnTransaction) error {
	version := int16(5)
	if t.VerifyOnly {
		version = 4
	}
	md, _ := n.member.metadata()
	st, ok := md.Topics[kafka.TransactionStateTopic]
	if !ok || len(st.Partitions) == 0 {
		return fmt.Errorf("%w: %s does not exist", kafka.ErrCoordinatorNotAvailable, kafka.TransactionStateTopic)
	}
	p := kafka.CoordinatorPartition(t.TransactionalID, int32(len(st.Partitions)))
	switch leader := st.Partitions[p].Leader; leader {
	case n.meta.NodeID:
		if t.VerifyOnly {
			return n.verifyTxnPartitions(ctx, t)[0]
		}
		return n.addTxnPartitions(ctx, t, version)
	case replica.NoLeader:
		return fmt.Errorf("%w: %s-%d has no leader", kafka.ErrCoordinatorNotAvailable, kafka.TransactionStateTopic, p)
	default:
		c, err := n.member.nodeClient(ctx, leader)
		if err != nil {
			return fmt.Errorf("%w: node %d: %v", kafka.ErrNetwork, leader, err)
		}
		resp, err := c.AddPartitionsToTxn(ctx, &transport.AddPartitionsToTxnRequest{Version: version,
			Transactions: []transport.AddPartitionsToTxnTransaction{t}})
		switch {
		case err != nil:
			n.member.forgetNodeClient(leader)
			return fmt.Errorf("%w: AddPartitionsToTxn to node %d: %v", kafka.ErrNetwork, leader, err)
		case resp.Err != nil:
			return resp.Err
		case len(resp.Transactions) != 1 || len(resp.Transactions[0].Partitions) != 1:
			return fmt.Errorf("%w: node %d answered %d transactions for 1", kafka.ErrNetwork, leader, len(resp.Transactions))
		}
		return resp.Transactions[0].Partitions[0].Err
	}
}
