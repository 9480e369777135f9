package transport

import (
	"context"
	"time"

	"github.com/partlog/partlog/kafka"
)

// TxnClient is what transactions (KIP-98, KIP-447, KIP-890) need of a
// cluster beyond producer ids: Kafka's transaction coordinator requests
// (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
// ListTransactions, and InitProducerId and FindCoordinator with a
// transactional id), the group coordinator's TxnOffsetCommit, and the
// WriteTxnMarkers that a transaction coordinator sends partition leaders.
// It is an optional interface: a Server answers these APIs, and advertises
// them in ApiVersions, only for a handler that implements it, and a
// producer finds it on its Client by type assertion,
//
//	tc, ok := client.(transport.TxnClient)
//
// A TxnClient's FindCoordinator is GroupClient's: it answers
// CoordinatorTransaction keys with the coordinator of the transactional id.
// As with Client, a method's error says the request got no answer; the
// answer's Err fields say what the node made of it. A TxnClient reads the
// slices of a request (Partitions, Markers, Topics, ...) only until the
// call returns, and keeps none, so the caller may reuse them then; the
// answer's slices are the caller's.
//
// Several requests carry Version, the version of Kafka's protocol they
// travel in, because the version changes what they mean: the coordinator
// answers versions that predate kafka.ErrProducerFenced with
// kafka.ErrInvalidProducerEpoch instead, EndTxn version 5 and up speaks
// transaction version 2 (KIP-890: the epoch is bumped at every
// transaction's end), and so on (see package txn). A Server sets Version
// from the request it read. A TCPClient sends the newest version both it
// and the node speak, up to Version when Version is above zero; a caller
// in the same process as the node sets the version whose answers it
// understands.
type TxnClient interface {
	ProducerIDClient
	FindCoordinator(ctx context.Context, req *FindCoordinatorRequest) (*FindCoordinatorResponse, error)
	AddPartitionsToTxn(ctx context.Context, req *AddPartitionsToTxnRequest) (*AddPartitionsToTxnResponse, error)
	AddOffsetsToTxn(ctx context.Context, req *AddOffsetsToTxnRequest) (*AddOffsetsToTxnResponse, error)
	EndTxn(ctx context.Context, req *EndTxnRequest) (*EndTxnResponse, error)
	WriteTxnMarkers(ctx context.Context, req *WriteTxnMarkersRequest) (*WriteTxnMarkersResponse, error)
	TxnOffsetCommit(ctx context.Context, req *TxnOffsetCommitRequest) (*TxnOffsetCommitResponse, error)
	DescribeTransactions(ctx context.Context, req *DescribeTransactionsRequest) (*DescribeTransactionsResponse, error)
	ListTransactions(ctx context.Context, req *ListTransactionsRequest) (*ListTransactionsResponse, error)
}

// TxnResult is how a transaction ends: EndTxn's committed and
// WriteTxnMarkers' transaction_result, a named bool as Kafka's is (true
// is COMMIT).
type TxnResult bool

// The transaction results.
const (
	// TxnAbort discards the transaction's writes: read_committed
	// consumers skip them.
	TxnAbort TxnResult = false
	// TxnCommit makes them visible to read_committed consumers.
	TxnCommit TxnResult = true
)

// String returns "COMMIT" or "ABORT", the marker's name.
func (r TxnResult) String() string {
	if r == TxnCommit {
		return "COMMIT"
	}
	return "ABORT"
}

// AddPartitionsToTxnRequest adds partitions to transactions, starting each
// transaction that is not yet open (Kafka's AddPartitionsToTxn). A
// producer sends one transaction, before it first produces to a partition
// in it (versions 0 to 3). A partition leader sends many at once
// (versions 4 and up, KIP-890 part 1): VerifyOnly ones to check, before it
// accepts a transactional write, that the partition is in the producer's
// transaction; and under transaction version 2, version 5 ones that add
// the partition on the producer's behalf.
type AddPartitionsToTxnRequest struct {
	// Version is the version of Kafka's AddPartitionsToTxn the request
	// travels in (see TxnClient). Versions 0 to 3 carry exactly one
	// transaction, never VerifyOnly; with Version zero a TCPClient sends
	// such a request in version 3 at most, as Kafka's producers do, and
	// any other in version 4 or later.
	Version int16
	// Transactions are the transactions to add partitions to, or to
	// verify.
	Transactions []AddPartitionsToTxnTransaction
}

// AddPartitionsToTxnTransaction is the part of an
// AddPartitionsToTxnRequest for one transaction.
type AddPartitionsToTxnTransaction struct {
	// TransactionalID is the producer's transactional.id.
	TransactionalID string
	// ProducerID is the producer id InitProducerId gave the
	// transactional id.
	ProducerID int64
	// ProducerEpoch is the producer's epoch, from InitProducerId (or,
	// under transaction version 2, from its last EndTxn).
	ProducerEpoch int16
	// VerifyOnly is verify_only (version 4 and up): check that each
	// partition is in the producer's ongoing transaction, and add none.
	// A partition that is not is answered with an error
	// (kafka.ErrTransactionAbortable).
	VerifyOnly bool
	// Partitions are the partitions to add or verify.
	Partitions []kafka.TopicPartition
}

// AddPartitionsToTxnResponse answers an AddPartitionsToTxnRequest,
// transaction by transaction.
type AddPartitionsToTxnResponse struct {
	// Err is error_code (version 4 and up): why the request as a whole
	// failed, with Transactions then empty. Before version 4 the wire
	// has no such field, and a Server answers every partition of the
	// request with Err instead.
	Err error
	// Transactions answers each transaction of the request.
	Transactions []AddPartitionsToTxnResult
}

// AddPartitionsToTxnResult answers one transaction of an
// AddPartitionsToTxnRequest.
type AddPartitionsToTxnResult struct {
	// TransactionalID is the transactional id, as asked.
	TransactionalID string
	// Partitions answers each partition of the transaction.
	Partitions []TxnPartitionResult
}

// TxnPartitionResult is what happened to one partition of a transaction
// request.
type TxnPartitionResult struct {
	kafka.TopicPartition
	// Err is nil, or why the partition was not added, verified or marked:
	// for AddPartitionsToTxn kafka.ErrConcurrentTransactions (retry),
	// ErrProducerFenced, ErrInvalidProducerEpoch,
	// ErrInvalidProducerIDMapping, ErrInvalidTxnState,
	// ErrTransactionAbortable, ErrUnknownTopicOrPartition,
	// ErrOperationNotAttempted, ErrNotCoordinator,
	// ErrCoordinatorLoadInProgress, ...; for WriteTxnMarkers
	// kafka.ErrNotLeaderOrFollower, ErrTransactionCoordinatorFenced,
	// ErrInvalidProducerEpoch, ErrNotEnoughReplicas,
	// ErrUnknownTopicOrPartition, ...
	Err error
}

// AddOffsetsToTxnRequest adds a consumer group's partition of
// __consumer_offsets to the producer's transaction (Kafka's
// AddOffsetsToTxn), so that the offsets it commits in the transaction
// (TxnOffsetCommit) get the transaction's marker.
type AddOffsetsToTxnRequest struct {
	// Version is the version of Kafka's AddOffsetsToTxn the request
	// travels in (see TxnClient): versions below 2 get
	// kafka.ErrInvalidProducerEpoch for kafka.ErrProducerFenced.
	Version int16
	// TransactionalID is the producer's transactional.id.
	TransactionalID string
	// ProducerID is the producer id InitProducerId gave it.
	ProducerID int64
	// ProducerEpoch is the producer's epoch.
	ProducerEpoch int16
	// Group is group_id: the consumer group whose offsets the transaction
	// commits.
	Group string
}

// AddOffsetsToTxnResponse answers an AddOffsetsToTxnRequest.
type AddOffsetsToTxnResponse struct {
	// Err is nil, or why the group's partition was not added
	// (kafka.ErrConcurrentTransactions, ErrProducerFenced,
	// ErrInvalidProducerIDMapping, ErrInvalidTxnState,
	// ErrNotCoordinator, ...).
	Err error
}

// EndTxnRequest commits or aborts the producer's transaction (Kafka's
// EndTxn). The coordinator answers once the outcome is durable, before the
// markers are written; a retry meanwhile gets
// kafka.ErrConcurrentTransactions, and the same outcome after.
type EndTxnRequest struct {
	// Version is the version of Kafka's EndTxn the request travels in
	// (see TxnClient). Version 5 and up is transaction version 2
	// (KIP-890 part 2): the coordinator bumps the producer's epoch at the
	// transaction's end and answers the new one. Versions below 2 get
	// kafka.ErrInvalidProducerEpoch for kafka.ErrProducerFenced.
	Version int16
	// TransactionalID is the producer's transactional.id.
	TransactionalID string
	// ProducerID is the producer id of the transaction.
	ProducerID int64
	// ProducerEpoch is the producer's epoch in the transaction.
	ProducerEpoch int16
	// Result is committed: TxnCommit or TxnAbort.
	Result TxnResult
}

// EndTxnResponse answers an EndTxnRequest.
type EndTxnResponse struct {
	// Err is nil once the outcome is decided, else why not
	// (kafka.ErrConcurrentTransactions: retry; ErrProducerFenced,
	// ErrInvalidProducerEpoch, ErrInvalidProducerIDMapping,
	// ErrInvalidTxnState, ErrNotCoordinator, ...).
	Err error
	// ProducerID is producer_id (version 5 and up): the producer id for
	// the producer's next transaction, which changes when its epoch ran
	// out; -1 before version 5 and with Err.
	ProducerID int64
	// ProducerEpoch is producer_epoch (version 5 and up): the epoch for
	// the producer's next transaction; -1 before version 5 and with Err.
	ProducerEpoch int16
}

// WriteTxnMarkersRequest asks partition leaders to write transactions'
// COMMIT or ABORT markers (Kafka's WriteTxnMarkers): a transaction
// coordinator sends it, once a transaction's outcome is decided, to the
// leaders of the transaction's partitions, partitions grouped by leader.
// A leader answers once each marker is written as acks=all.
type WriteTxnMarkersRequest struct {
	// Markers are the markers to write, each to its partitions.
	Markers []TxnMarker
}

// TxnMarker is one transaction's marker, for some of its partitions.
type TxnMarker struct {
	// ProducerID is the transaction's producer id.
	ProducerID int64
	// ProducerEpoch is the epoch of the transaction's outcome (under
	// transaction version 2 one more than its data's): from the marker on,
	// the partition fences the producer's writes at older epochs.
	ProducerEpoch int16
	// Result is transaction_result: TxnCommit or TxnAbort.
	Result TxnResult
	// CoordinatorEpoch is coordinator_epoch: the leader epoch of the
	// coordinator's partition of __transaction_state. A partition refuses
	// a marker whose coordinator epoch is older than one it has seen for
	// the producer (kafka.ErrTransactionCoordinatorFenced).
	CoordinatorEpoch int32
	// TransactionVersion is transaction_version (version 2 and up): the
	// transaction version the transaction ran under, 0 to 2; 0 before
	// version 2.
	TransactionVersion int8
	// Partitions are the partitions to write the marker to.
	Partitions []kafka.TopicPartition
}

// WriteTxnMarkersResponse answers a WriteTxnMarkersRequest, marker by
// marker and partition by partition.
type WriteTxnMarkersResponse struct {
	// Markers answers each marker of the request.
	Markers []TxnMarkerResult
}

// TxnMarkerResult answers one marker of a WriteTxnMarkersRequest. Kafka's
// answer names a marker by its producer id only.
type TxnMarkerResult struct {
	// ProducerID is the marker's producer id, as asked.
	ProducerID int64
	// Partitions answers each of the marker's partitions: nil once its
	// marker is written.
	Partitions []TxnPartitionResult
}

// TxnOffsetCommitRequest commits a consumer group's offsets in the
// producer's transaction (Kafka's TxnOffsetCommit, sent to the group's
// coordinator): they become the group's committed offsets only when the
// transaction commits. Since KIP-447 it carries the consumer's group
// membership, so that the coordinator fences a zombie member's commits.
type TxnOffsetCommitRequest struct {
	// Version is the version of Kafka's TxnOffsetCommit the request
	// travels in (see TxnClient). Under transaction version 2, version 5
	// and up also adds the group's partition to the transaction, with no
	// AddOffsetsToTxn. Before version 3 the request carries no group
	// membership, and before version 2 no leader epochs.
	Version int16
	// TransactionalID is the producer's transactional.id.
	TransactionalID string
	// Group is group_id: the consumer group whose offsets are committed.
	Group string
	// ProducerID is the producer id of the transaction.
	ProducerID int64
	// ProducerEpoch is the producer's epoch in the transaction.
	ProducerEpoch int16
	// GenerationID is generation_id (KIP-447, version 3 and up): the
	// consumer's generation in the group, or NoGeneration from a producer
	// that is not a member.
	GenerationID int32
	// MemberID is member_id (KIP-447): the consumer's member id, or empty.
	MemberID string
	// GroupInstanceID is group_instance_id (KIP-447): a static member's
	// group.instance.id, or empty.
	GroupInstanceID string
	// Topics holds the offsets to commit, topic by topic, as in
	// OffsetCommit.
	Topics []OffsetCommitTopic
}

// TxnOffsetCommitResponse answers a TxnOffsetCommitRequest, partition by
// partition: Err is nil when the offset is pending in the transaction, else
// kafka.ErrConcurrentTransactions, ErrProducerFenced,
// ErrInvalidProducerEpoch, ErrUnknownMemberID, ErrIllegalGeneration,
// ErrFencedInstanceID, ErrTransactionAbortable, ErrNotCoordinator, ...
type TxnOffsetCommitResponse struct {
	// Topics answers the request's topics, in the request's order.
	Topics []OffsetCommitTopicResponse
}

// DescribeTransactionsRequest asks transaction coordinators for the state
// of transactional ids (Kafka's DescribeTransactions, KIP-664).
type DescribeTransactionsRequest struct {
	// TransactionalIDs are the transactional ids to describe.
	TransactionalIDs []string
}

// DescribeTransactionsResponse describes each transactional id asked for.
type DescribeTransactionsResponse struct {
	// Transactions describes each transactional id, in the request's
	// order.
	Transactions []DescribedTransaction
}

// DescribedTransaction is what the coordinator knows of one transactional
// id.
type DescribedTransaction struct {
	// Err is nil, or why the id is not described
	// (kafka.ErrTransactionalIDNotFound, ErrNotCoordinator,
	// ErrCoordinatorLoadInProgress, ...).
	Err error
	// TransactionalID is the transactional id, as asked.
	TransactionalID string
	// State is transaction_state, as Kafka spells it: "Empty", "Ongoing",
	// "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
	// "Dead" or "PrepareEpochFence".
	State string
	// TransactionTimeout is transaction_timeout_ms: the producer's
	// transaction.timeout.ms. It travels in whole milliseconds.
	TransactionTimeout time.Duration
	// StartTimestamp is transaction_start_time_ms: when the ongoing
	// transaction began, in milliseconds since the Unix epoch, or -1.
	StartTimestamp int64
	// ProducerID is the transactional id's producer id, or -1.
	ProducerID int64
	// ProducerEpoch is the producer's epoch, or -1.
	ProducerEpoch int16
	// Partitions are the partitions in the transaction.
	Partitions []kafka.TopicPartition
}

// ListTransactionsRequest asks a coordinator for the transactional ids it
// has state for (Kafka's ListTransactions, KIP-664). The filters combine:
// an id is listed when it passes every filter set.
type ListTransactionsRequest struct {
	// StateFilters is state_filters: the states to list, as
	// DescribedTransaction.State spells them; empty lists every state.
	StateFilters []string
	// ProducerIDFilters is producer_id_filters: the producer ids to list;
	// empty lists every producer id.
	ProducerIDFilters []int64
	// MinDuration is duration_filter (KIP-994, version 1 and up): list
	// only transactions that have run longer than this. Zero or less
	// lists them all. It travels in whole milliseconds.
	MinDuration time.Duration
	// TransactionalIDPattern is transactional_id_pattern (KIP-1152,
	// version 2 and up): a regular expression (Java's) the transactional
	// ids listed match; empty lists every id.
	TransactionalIDPattern string
}

// ListTransactionsResponse lists transactional ids.
type ListTransactionsResponse struct {
	// Err is nil, or why the coordinator could not list its ids
	// (kafka.ErrCoordinatorLoadInProgress, ...).
	Err error
	// UnknownStateFilters is unknown_state_filters: the states of
	// StateFilters the coordinator does not know.
	UnknownStateFilters []string
	// Transactions are the ids listed.
	Transactions []ListedTransaction
}

// ListedTransaction is one transactional id of a ListTransactionsResponse.
type ListedTransaction struct {
	// TransactionalID is the transactional id.
	TransactionalID string
	// ProducerID is its producer id.
	ProducerID int64
	// State is its transaction's state, as DescribedTransaction.State
	// spells it.
	State string
}

// AbortedTransaction is one entry of a Fetch answer's aborted_transactions
// (FetchPartitionResponse.AbortedTransactions): a transaction that was
// aborted, whose records from FirstOffset on a read_committed consumer
// drops, up to the producer's ABORT marker.
type AbortedTransaction struct {
	// ProducerID is the aborted transaction's producer id.
	ProducerID int64
	// FirstOffset is first_offset: the offset of the transaction's first
	// record in the partition.
	FirstOffset int64
}
