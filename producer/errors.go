package producer

import (
	"errors"

	"github.com/partlog/partlog/kafka"
)

var (
	// ErrClosed means the producer was closed: Produce was called after
	// Close, or Close gave up on a record it could not deliver in time.
	ErrClosed = errors.New("producer: closed")

	// ErrBufferFull means a record found buffer.memory used up and it
	// stayed so for max.block.ms (at once when MaxBlock is 0). Kafka throws
	// a TimeoutException ("Failed to allocate memory within the configured
	// max blocking time") in the same place.
	ErrBufferFull = errors.New("producer: buffer full")

	// ErrRecordTooLarge means a record, encoded, is larger than
	// max.request.size or buffer.memory allow, as Kafka's
	// RecordTooLargeException. It is never sent; the error also matches
	// kafka.ErrMessageTooLarge, the broker's error for the same thing.
	ErrRecordTooLarge = errors.New("producer: record too large")

	// ErrDeliveryTimeout means delivery.timeout.ms passed before the
	// record's batch was acknowledged: it waited too long to be sent,
	// or its retries outlasted the timeout. When an attempt failed first,
	// the error also wraps that attempt's error. Kafka reports this as a
	// TimeoutException ("Expiring N record(s)").
	ErrDeliveryTimeout = errors.New("producer: delivery timeout expired")

	// ErrFatal means an idempotent producer can no longer keep its
	// promise of order without duplicates, and has stopped: the leader
	// refused a batch's sequence or epoch (the error also wraps why:
	// kafka.ErrOutOfOrderSequence, kafka.ErrInvalidProducerEpoch),
	// the epoch could not be bumped any more, or InitProducerId failed.
	// Every record not acknowledged by then, and every later Produce,
	// fails with it; Close the producer and make a new one.
	ErrFatal = errors.New("producer: fatal error, the producer must be closed")

	// ErrAbortable means the open transaction failed — a record of it,
	// adding a partition to it, or its offsets — and can only be
	// aborted: CommitTransaction and Produce fail with it until
	// AbortTransaction, after which the producer goes on. Kafka calls
	// these errors abortable (TransactionAbortableException and the
	// others the TransactionManager handles as abortable).
	ErrAbortable = errors.New("producer: transaction failed and must be aborted")

	// ErrTransactionAborted fails the records of a transaction that
	// AbortTransaction aborted before they were sent, as Kafka's
	// TransactionAbortedException.
	ErrTransactionAborted = errors.New("producer: transaction aborted")

	// ErrTransactionState means a call the producer's transaction state
	// does not allow: BeginTransaction while a transaction is open,
	// Produce outside one, any transaction call on a producer without
	// TransactionalID. Kafka throws an IllegalStateException for these.
	ErrTransactionState = errors.New("producer: not allowed in the transaction's state")
)

// IsRetriable reports whether a failed produce may succeed if sent again:
// err wraps one of Kafka's retriable errors (kafka.IsRetriable), such
// as kafka.ErrNotLeaderOrFollower or ErrRequestTimedOut. The producer
// retries exactly these, within Retries and DeliveryTimeout; it is the one
// retry policy, for callers too.
func IsRetriable(err error) bool {
	return kafka.IsRetriable(err)
}
