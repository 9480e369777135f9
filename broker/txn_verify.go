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

// appendVerified appends a produced batch to h as appendReplicated does,
// and when the partition refuses it as unverified, asks the coordinator of
// transactionalID about it and appends again. batch stays the caller's
// throughout: a refused attempt leaves it whole (the check rewrites only
// header fields — offsets, epoch, a LogAppendTime stamp with its CRC —
// that the next attempt writes again), so the same bytes are proposed
// again.
func (n *Broker) appendVerified(ctx context.Context, h *replicaHost, transactionalID string, batch []byte, acks kafka.Acks, timeout time.Duration) (int64, int64, error) {
	for attempt := 1; ; attempt++ {
		base, appendTime, err := n.appendReplicated(ctx, h, batch, acks, timeout)
		if !errors.Is(err, errUnverified) || attempt == verifyAttempts {
			return base, appendTime, err
		}
		if err := n.verifyProduce(ctx, h, transactionalID, batch); err != nil {
			return -1, -1, err
		}
	}
}

// verifyProduce asks the coordinator of transactionalID whether the
// producer of batch, a transactional batch, has h's partition in its
// ongoing transaction, and records a yes under the partition's guard. The
// errors are what the produce request answers: Kafka's
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED for a transactional batch in a
// request without a transactional id, INVALID_TXN_STATE for a partition
// the transaction does not include, the coordinator's fencing errors, and
// NOT_ENOUGH_REPLICAS (retriable) when the coordinator cannot be asked, as
// Kafka maps it for producers.
func (n *Broker) verifyProduce(ctx context.Context, h *replicaHost, transactionalID string, batch []byte) error {
	hdr, err := record.ParseHeader(batch)
	if err != nil {
		return fmt.Errorf("%w: %v", kafka.ErrCorruptMessage, err)
	}
	if transactionalID == "" {
		return fmt.Errorf("%w: a transactional batch of producer %d without a transactional id", kafka.ErrTransactionalIDAuthorizationFailed, hdr.ProducerID)
	}
	tp := h.tp
	guard, err := h.p.StartVerification(hdr.ProducerID)
	if err != nil {
		return err
	}
	t := transport.AddPartitionsToTxnTransaction{TransactionalID: transactionalID, ProducerID: hdr.ProducerID,
		ProducerEpoch: hdr.ProducerEpoch, VerifyOnly: true, Partitions: []kafka.TopicPartition{tp}}
	switch err := n.askCoordinator(ctx, t); {
	case err == nil:
		n.verifier.record(verifiedTxn{tp, hdr.ProducerID, hdr.ProducerEpoch}, guard)
		return nil
	case errors.Is(err, kafka.ErrTransactionAbortable):
		return fmt.Errorf("%w: %v", kafka.ErrInvalidTxnState, err)
	case errors.Is(err, kafka.ErrNotCoordinator), errors.Is(err, kafka.ErrCoordinatorNotAvailable),
		errors.Is(err, kafka.ErrCoordinatorLoadInProgress), errors.Is(err, kafka.ErrRequestTimedOut), errors.Is(err, kafka.ErrNetwork):
		return fmt.Errorf("%w: verifying the transaction of %q: %v", kafka.ErrNotEnoughReplicas, transactionalID, err)
	default:
		return err
	}
}

// askCoordinator sends a VerifyOnly transaction to its coordinator — this
// node's own, or the leader of its __transaction_state partition — and
// returns the answer for its one partition.
func (n *Broker) askCoordinator(ctx context.Context, t transport.AddPartitionsToTxnTransaction) error {
	md, _ := n.member.metadata()
	st, ok := md.Topics[kafka.TransactionStateTopic]
	if !ok || len(st.Partitions) == 0 {
		return fmt.Errorf("%w: %s does not exist", kafka.ErrCoordinatorNotAvailable, kafka.TransactionStateTopic)
	}
	p := kafka.CoordinatorPartition(t.TransactionalID, int32(len(st.Partitions)))
	switch leader := st.Partitions[p].Leader; leader {
	case n.meta.NodeID:
		return n.verifyTxnPartitions(ctx, t)[0]
	case replica.NoLeader:
		return fmt.Errorf("%w: %s-%d has no leader", kafka.ErrCoordinatorNotAvailable, kafka.TransactionStateTopic, p)
	default:
		c, err := n.member.nodeClient(ctx, leader)
		if err != nil {
			return fmt.Errorf("%w: node %d: %v", kafka.ErrNetwork, leader, err)
		}
		resp, err := c.AddPartitionsToTxn(ctx, &transport.AddPartitionsToTxnRequest{Version: 4,
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
