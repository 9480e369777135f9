package partition

import (
	"errors"
	"fmt"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/segment"
	"github.com/partlog/partlog/vfs"
)

// This file is the partition's side of Kafka's transactions (KIP-98): the
// last stable offset, read_committed reads with their aborted
// transactions, the markers a transaction coordinator writes, and the
// verification of KIP-890 part 1. The producer state follows each
// producer's transaction (producer_state.go); the log keeps the .txnindex
// the state names the aborted transactions in (see package log).

// TxnVerifier answers KIP-890 part 1's question for a partition leader
// about to accept a transactional batch that would open a transaction on
// the partition: is producerID, at producerEpoch, in an ongoing
// transaction that includes tp? It returns nil if so, and otherwise the
// error the produce request gets — kafka.ErrTransactionAbortable when the
// partition is not in the transaction, ErrProducerFenced for a stale
// epoch, ErrInvalidProducerIDMapping, ErrConcurrentTransactions, as the
// coordinator answers (txn.Coordinator.VerifyPartitions).
//
// It is called with the log's append lock held (or on the replica's
// loop), in the order the batches are appended: it must answer from memory.
// A broker asks the coordinator before it appends — the produce request
// carries the transactional id the coordinator wants — and answers here
// from what it learned, refusing when it learned nothing. Kafka's
// verification guard is the same split: an asynchronous question, then a
// check under the log's lock. The guard ties the two: the broker takes
// one with StartVerification before it asks, and VerifyTransaction is
// given the producer's guard of the moment, zero when it has none; a
// marker of the producer in between withdraws the guard, so the answer the
// coordinator gave about the transaction that marker ended no longer
// matches.
type TxnVerifier interface {
	// VerifyTransaction returns nil when producerID, at producerEpoch, has
	// an ongoing transaction that includes tp, verified under guard, and
	// otherwise the error that refuses the batch.
	VerifyTransaction(tp kafka.TopicPartition, producerID int64, producerEpoch int16, guard VerificationGuard) error
}

// VerificationGuard names one verification of a producer's transaction
// on a partition (Kafka's VerificationGuard): StartVerification hands it
// out, and the producer's next COMMIT or ABORT marker withdraws it. Zero
// is no guard.
type VerificationGuard uint64

// StartVerification returns the producer's verification guard, handing
// out a new one when it has none, for a leader about to ask the
// coordinator whether the producer's transaction includes this partition;
// the TxnVerifier then accepts the producer's batch only under the same
// guard. Errors are Kafka's (KAFKA_STORAGE_ERROR, when the producer state
// cannot be loaded).
func (p *Partition) StartVerification(producerID int64) (VerificationGuard, error) {
	m := p.producers
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.ensureLoadedLocked(); err != nil {
		return 0, kafkaError(err)
	}
	s := m.state
	g, ok := s.guards[producerID]
	if !ok {
		m.lastGuard++
		g = m.lastGuard
		s.guards[producerID] = g
	}
	return g, nil
}

// AbortedTransaction names an aborted transaction in a read_committed
// fetch answer, as Kafka's FetchResponse does: the consumer skips the
// producer's transactional records from FirstOffset until the producer's
// ABORT marker.
type AbortedTransaction struct {
	// ProducerID is the transaction's producer.
	ProducerID int64
	// FirstOffset is the offset of the transaction's first record.
	FirstOffset int64
}

// LastStableOffset returns the offset below which every transaction is
// decided: the high watermark, or, when lower, the partition's first
// unstable offset — the first offset of the oldest transaction that is
// open, or whose marker the high watermark has not yet passed (Kafka's
// firstUnstableOffset, from its ongoing and unreplicated transactions). A
// read_committed consumer reads below it. It loads the producer state if
// no append has yet; errors are Kafka's (KAFKA_STORAGE_ERROR).
func (p *Partition) LastStableOffset() (int64, error) {
	return p.lastStableOffset(p.HighWatermark())
}

// lastStableOffset is LastStableOffset with the high watermark hw.
func (p *Partition) lastStableOffset(hw int64) (int64, error) {
	first, err := p.producers.firstUnstableOffset(hw)
	if err != nil {
		return hw, kafkaError(err)
	}
	if first >= 0 && first < hw {
		return first, nil
	}
	return hw, nil
}

// readLimit returns the offset a read at isolation stops before: the high
// watermark, or the last stable offset for read_committed.
func (p *Partition) readLimit(isolation kafka.IsolationLevel) (hw, lso, limit int64, err error) {
	p.mu.Lock()
	hw, closed := p.hw, p.closed
	p.mu.Unlock()
	if closed {
		return 0, 0, 0, kafka.ErrClosed
	}
	if isolation != kafka.ReadUncommitted && isolation != kafka.ReadCommitted {
		return 0, 0, 0, fmt.Errorf("%w: isolation level %d", kafka.ErrInvalidRequest, isolation)
	}
	if lso, err = p.lastStableOffset(hw); err != nil {
		return hw, lso, 0, err
	}
	if isolation == kafka.ReadCommitted {
		return hw, lso, lso, nil
	}
	return hw, lso, hw, nil
}

// FetchIsolated appends to dst the batches from offset on that lie below
// the high watermark — below the last stable offset for
// kafka.ReadCommitted — at most maxBytes of them but at least one. Reading
// at or past that bound (up to the log end offset) returns no records; an
// offset outside the log is kafka.ErrOffsetOutOfRange. A read_committed
// fetch answers the aborted transactions its records overlap, from the
// .txnindex of the segments from the one holding offset on, as Kafka's
// collectAbortedTransactions: a list, empty when there are none, where a
// read_uncommitted fetch's is nil (null on Kafka's wire). The records are
// appended to dst (the caller's, as with log.Log.Read); the
// AbortedTransactions are new.
func (p *Partition) FetchIsolated(dst []byte, offset int64, maxBytes int, isolation kafka.IsolationLevel) (FetchResult, error) {
	hw, lso, limit, err := p.readLimit(isolation)
	if err != nil {
		return FetchResult{}, err
	}
	res := FetchResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: p.log.LogStartOffset()}
	records, err := p.log.Read(dst, offset, limit, maxBytes)
	if err != nil {
		return res, kafkaError(err)
	}
	res.Records = records
	if isolation == kafka.ReadCommitted {
		res.AbortedTransactions = []AbortedTransaction{}
	}
	if isolation == kafka.ReadCommitted && len(records) > len(dst) {
		next := offset
		_ = walkBatches(records[len(dst):], func(h *record.Header, _ []byte) error {
			next = h.NextOffset()
			return nil
		})
		if res.AbortedTransactions, err = p.abortedTransactions(offset, next); err != nil {
			return res, err
		}
	}
	return res, nil
}

// FetchRangeIsolated is FetchIsolated for a network server, as FetchRange
// is Fetch's: rather than reading the batches, it returns where they lie
// in a segment file, as a vfs.FileRange whose descriptor the caller sends
// with sendfile and closes. A zero range means no records. On a
// filesystem without file descriptors it returns log.ErrNoDescriptor,
// unwrapped, and the caller uses FetchIsolated.
func (p *Partition) FetchRangeIsolated(offset int64, maxBytes int, isolation kafka.IsolationLevel) (FetchResult, vfs.FileRange, error) {
	hw, lso, limit, err := p.readLimit(isolation)
	if err != nil {
		return FetchResult{}, vfs.FileRange{}, err
	}
	res := FetchResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: p.log.LogStartOffset()}
	r, next, err := p.log.ReadRangeTo(offset, limit, maxBytes)
	if errors.Is(err, log.ErrNoDescriptor) {
		return res, r, err
	}
	if err != nil {
		return res, r, kafkaError(err)
	}
	if isolation == kafka.ReadCommitted {
		res.AbortedTransactions = []AbortedTransaction{}
	}
	if isolation == kafka.ReadCommitted && r.Size > 0 {
		if res.AbortedTransactions, err = p.abortedTransactions(offset, next); err != nil {
			r.Close()
			return res, vfs.FileRange{}, err
		}
	}
	return res, r, nil
}

// abortedTransactions returns the aborted transactions overlapping
// [offset, upper): what a read_committed fetch of those offsets answers.
func (p *Partition) abortedTransactions(offset, upper int64) ([]AbortedTransaction, error) {
	txns, err := p.log.CollectAbortedTxns(nil, offset, upper)
	if err != nil {
		return nil, fmt.Errorf("%w: %s-%d: %w", kafka.ErrKafkaStorage, p.topic, p.partition, err)
	}
	out := make([]AbortedTransaction, len(txns))
	for i, t := range txns {
		out[i] = AbortedTransaction{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset}
	}
	return out, nil
}

// ListOffsetIsolated answers ListOffsets for a consumer at isolation:
// kafka.EarliestTimestamp gives the log start offset, LatestTimestamp the
// high watermark — the last stable offset for kafka.ReadCommitted — and a
// timestamp the first offset below that bound whose record is at or after
// it (offset -1 when there is none).
func (p *Partition) ListOffsetIsolated(timestamp int64, isolation kafka.IsolationLevel) (offset, recordTimestamp int64, err error) {
	_, _, limit, err := p.readLimit(isolation)
	if err != nil {
		return 0, 0, err
	}
	switch timestamp {
	case kafka.EarliestTimestamp:
		return p.log.LogStartOffset(), -1, nil
	case kafka.LatestTimestamp:
		return limit, -1, nil
	}
	if timestamp < 0 {
		return 0, 0, fmt.Errorf("%w: timestamp %d", kafka.ErrInvalidRequest, timestamp)
	}
	off, ts, found, err := p.log.FindOffsetByTimestamp(timestamp)
	if err != nil {
		return 0, 0, kafkaError(err)
	}
	if !found || off >= limit {
		return -1, -1, nil
	}
	return off, ts, nil
}

// AppendMarker writes a transaction marker as the leader, as a transaction
// coordinator's WriteTxnMarkers asks: a control batch of producerID at
// producerEpoch holding a COMMIT or ABORT marker (t) from the coordinator
// in coordinatorEpoch, appended with acks=all through Append's path, so
// that the checks and the write are one step under the log's append lock.
// It closes the producer's open transaction; an ABORT marker closing one
// puts the transaction in the .txnindex. Under transaction version 2 the
// marker's epoch is one above the transaction's, and becomes the
// producer's.
//
// A marker at an epoch older than the producer's is refused with
// kafka.ErrInvalidProducerEpoch, one from a coordinator epoch older than
// the producer's last marker's with kafka.ErrTransactionCoordinatorFenced:
// the errors a coordinator takes as "a newer one took over". A replicated
// partition's leader proposes record.ControlBatch instead (see
// CheckAppend).
func (p *Partition) AppendMarker(producerID int64, producerEpoch int16, coordinatorEpoch int32, t record.ControlType) (AppendResult, error) {
	if t != record.ControlCommit && t != record.ControlAbort {
		return AppendResult{LogAppendTime: -1}, fmt.Errorf("%w: marker type %s", kafka.ErrInvalidRequest, t)
	}
	if producerID < 0 {
		return AppendResult{LogAppendTime: -1}, fmt.Errorf("%w: marker for producer id %d", kafka.ErrInvalidRequest, producerID)
	}
	batch := record.ControlBatch(t, producerID, producerEpoch, coordinatorEpoch, p.options().Now().UnixMilli())
	return p.Append(batch, kafka.AcksAll)
}

// DeleteRetained removes the oldest segments retention lets go (see
// log.Log.DeleteRetained), but none holding an offset at or above the last
// stable offset: an open transaction's records stay, and so, as in Kafka,
// do records above the high watermark. It returns how many went.
func (p *Partition) DeleteRetained() (int, error) {
	lso, err := p.LastStableOffset()
	if err != nil {
		return 0, err
	}
	n, err := p.log.DeleteRetainedUpTo(lso)
	if err != nil {
		return n, kafkaError(err)
	}
	return n, nil
}

// AbortedTxns returns the log's whole aborted-transaction index (every
// segment's .txnindex entries, oldest first), loading the producer state
// first, which rebuilds entries a crash or damage left in doubt. For
// inspection and tests.
func (p *Partition) AbortedTxns() ([]segment.AbortedTxn, error) {
	if _, err := p.producers.firstUnstableOffset(0); err != nil {
		return nil, kafkaError(err)
	}
	txns, err := p.log.AbortedTxns()
	if err != nil {
		return txns, fmt.Errorf("%w: %w", kafka.ErrKafkaStorage, err)
	}
	return txns, nil
}
