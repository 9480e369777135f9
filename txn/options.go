package txn

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/partlog/partlog/kafka"
)

// StateTopic is the internal topic that holds the coordinator's state.
const StateTopic = kafka.TransactionStateTopic

// DefaultStatePartitions is Kafka's transaction.state.log.num.partitions.
const DefaultStatePartitions = 50

// PartitionFor returns the partition of __transaction_state, out of n,
// that holds a transactional id, and so which node coordinates it, as
// Kafka places it (kafka.CoordinatorPartition).
func PartitionFor(transactionalID string, n int32) int32 {
	return kafka.CoordinatorPartition(transactionalID, n)
}

var (
	// ErrCorrupt means a record of __transaction_state could not be
	// parsed.
	ErrCorrupt = errors.New("txn: corrupt record in __transaction_state")

	// ErrUnknownVersion means a record of __transaction_state has a key or
	// value version this package does not read (written by a newer
	// release).
	ErrUnknownVersion = errors.New("txn: unknown record version in __transaction_state")

	// ErrPartitionDeleted is what the caller reports (MarkersDone) for a
	// partition of a transaction that no longer exists: its topic was
	// deleted, so it needs no marker.
	ErrPartitionDeleted = errors.New("txn: the partition was deleted")
)

// ProducerIDAllocator hands out producer ids: the node's share of the
// cluster's ids, which the controller hands out in blocks.
type ProducerIDAllocator interface {
	// NextProducerID returns a producer id no producer has had. It must
	// not block, since the coordinator calls it while it steps: when no
	// id is at hand (the next block is still being fetched) it returns a
	// retriable error, as Kafka's ProducerIdManager answers
	// COORDINATOR_LOAD_IN_PROGRESS, and the producer tries again.
	NextProducerID() (int64, error)
}

// Options configures a Coordinator. The zero value works: Kafka's
// defaults.
type Options struct {
	// StatePartitions is transaction.state.log.num.partitions: how many
	// partitions __transaction_state has. It must not change while the
	// topic exists. Zero means 50.
	StatePartitions int32
	// OffsetsPartitions is offsets.topic.num.partitions, for finding the
	// partition of __consumer_offsets that AddOffsetsToTxn adds. Zero
	// means 50.
	OffsetsPartitions int32
	// TransactionMaxTimeout is transaction.max.timeout.ms: the longest
	// transaction.timeout.ms a producer may ask for. Zero means 15
	// minutes.
	TransactionMaxTimeout time.Duration
	// TransactionalIDExpiration is transactional.id.expiration.ms: a
	// transactional id with no open transaction whose state has not
	// changed for this long is removed (a tombstone is written). Zero
	// means 7 days.
	TransactionalIDExpiration time.Duration
	// Logger receives transactions aborted on timeout, partitions loaded
	// and markers given up on. Nil discards them.
	Logger *slog.Logger

	// Test switches that break one mechanism each, so that tests can show
	// they would catch its absence. Never set outside tests.
	//
	// markersBeforeDurable requests markers as soon as a Prepare record is
	// handed out, before it is durable.
	markersBeforeDurable bool
	// completeBeforeMarkers writes the Complete record as soon as the
	// Prepare record is durable, without waiting for markers.
	completeBeforeMarkers bool
	// fencePrepared lets InitProducerId fence a transaction whose outcome
	// is decided (PrepareCommit) as if it were Ongoing, aborting it.
	fencePrepared bool
	// reuseProducerID restarts an exhausted producer id at epoch 0
	// instead of moving to a new producer id.
	reuseProducerID bool
}

// Kafka's defaults.
const (
	defaultTransactionMaxTimeout     = 15 * time.Minute
	defaultTransactionalIDExpiration = 7 * 24 * time.Hour
)

// withDefaults returns o with zero fields set to their defaults, or an
// error naming a field that is out of range.
func (o Options) withDefaults() (Options, error) {
	if o.StatePartitions == 0 {
		o.StatePartitions = DefaultStatePartitions
	}
	if o.OffsetsPartitions == 0 {
		o.OffsetsPartitions = kafka.DefaultCoordinatorPartitions
	}
	if o.TransactionMaxTimeout == 0 {
		o.TransactionMaxTimeout = defaultTransactionMaxTimeout
	}
	if o.TransactionalIDExpiration == 0 {
		o.TransactionalIDExpiration = defaultTransactionalIDExpiration
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.StatePartitions < 0:
		return o, fmt.Errorf("txn: StatePartitions %d is negative", o.StatePartitions)
	case o.OffsetsPartitions < 0:
		return o, fmt.Errorf("txn: OffsetsPartitions %d is negative", o.OffsetsPartitions)
	case o.TransactionMaxTimeout < time.Millisecond || o.TransactionMaxTimeout.Milliseconds() > 1<<31-1:
		return o, fmt.Errorf("txn: TransactionMaxTimeout %v is outside [1ms, 2^31 ms)", o.TransactionMaxTimeout)
	case o.TransactionalIDExpiration < time.Millisecond:
		return o, fmt.Errorf("txn: TransactionalIDExpiration %v is below 1ms", o.TransactionalIDExpiration)
	}
	return o, nil
}
