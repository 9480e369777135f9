package transport

import (
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/vfs"
)

// ProduceRequest asks leaders to append record batches (Kafka's Produce).
//
// A Client borrows the Records slices until Produce returns, even when it
// returns an error or ctx ends: a node in the process rewrites each
// batch's header in place (base offset, leader epoch, and with
// LogAppendTime the timestamps and CRC) and writes it from those bytes; a
// network client copies them into its request. Neither keeps a reference
// once Produce has returned, and the caller may then reuse the slices —
// a retry re-encodes its header first.
type ProduceRequest struct {
	// TransactionalID is transactional_id: the producer's
	// transactional.id when the batches belong to its transaction, else
	// empty. A Server takes a transactional produce only for a handler
	// that is a TxnClient.
	TransactionalID string
	// Acks is Kafka's acks: how many replicas must have each batch before
	// the leader answers. kafka.AcksLeader (1) waits for the leader's log,
	// kafka.AcksAll (-1) for every in-sync replica, with at least
	// min.insync.replicas of them; with kafka.AcksNone (0) a Server sends
	// no answer at all. Any other value fails each partition with
	// kafka.ErrInvalidRequiredAcks.
	Acks kafka.Acks
	// Timeout is timeout_ms: how long an acks=all append on a replicated
	// partition may wait for the in-sync replicas before that partition is
	// answered with kafka.ErrRequestTimedOut (the batch may still be
	// committed later). Zero means 30 seconds. It travels in whole
	// milliseconds.
	Timeout time.Duration
	// Topics holds the batches to append, topic by topic.
	Topics []ProduceTopic
	// Version is the version of Kafka's Produce the request travels in,
	// which changes what a transactional request means: from version 12
	// (transaction version 2, KIP-890 part 2) a partition leader adds the
	// partition to the producer's transaction itself, asking the
	// transaction's coordinator, where before the producer must have
	// added it (AddPartitionsToTxn). A Server sets Version from the
	// request it read. A TCPClient sends the newest version both it and
	// the node speak up to Version, or up to 11 when Version is zero; a
	// caller in the same process as the node sets 12 to have its
	// partitions added.
	Version int16
}

// ProduceTopic is the part of a ProduceRequest for one topic.
type ProduceTopic struct {
	// Topic is the topic's name.
	Topic string
	// Partitions holds one batch for each partition written to.
	Partitions []ProducePartition
}

// ProducePartition carries one record batch for one partition.
type ProducePartition struct {
	// Partition is the partition's index in the topic, from 0.
	Partition int32
	// Records is the record batch (RecordBatch v2, as package record
	// builds it): Kafka's records field, which since Produce v3 holds
	// exactly one batch. The leader gives it its offsets. The Client
	// borrows it until Produce returns (see ProduceRequest).
	Records []byte
}

// ProduceResponse answers a ProduceRequest, partition by partition.
type ProduceResponse struct {
	// Topics answers the request's topics, in the request's order.
	Topics []ProduceTopicResponse
}

// ProduceTopicResponse is the part of a ProduceResponse for one topic.
type ProduceTopicResponse struct {
	// Topic is the topic's name, as asked.
	Topic string
	// Partitions answers the topic's partitions, in the request's order.
	Partitions []ProducePartitionResponse
}

// ProducePartitionResponse says where a batch landed, or why it did not.
type ProducePartitionResponse struct {
	// Partition is the partition's index, as asked.
	Partition int32
	// Err is nil when the batch was appended, else the Kafka error that
	// says why not (kafka.ErrNotLeaderOrFollower, ErrNotEnoughReplicas,
	// ErrMessageTooLarge, ErrRequestTimedOut, ...), matched with errors.Is;
	// kafka.IsRetriable says whether sending it again may succeed.
	Err error
	// BaseOffset is base_offset: the offset given to the batch's first
	// record, or -1 when Err is set. For an idempotent producer's retry of
	// a batch the log already holds, it is the original's.
	BaseOffset int64
	// LogAppendTime is log_append_time_ms: the time, in milliseconds since
	// the Unix epoch, that the log stamped on the batch when the topic's
	// message.timestamp.type is LogAppendTime; else -1.
	LogAppendTime int64
	// LogStartOffset is log_start_offset (KIP-107): the partition's first
	// offset after the append, or -1 when the node could not tell. With it
	// an idempotent producer tells an UNKNOWN_PRODUCER_ID caused by
	// retention deleting its last batches from lost data.
	LogStartOffset int64
}

// FetchRequest asks for record batches from several partitions (Kafka's
// Fetch). The node answers as soon as it has MinBytes, or after MaxWait.
type FetchRequest struct {
	// ReplicaID is the fetching follower's node id, or kafka.ConsumerReplicaID.
	ReplicaID int32
	// MaxWait is max_wait_ms, the consumer's fetch.max.wait.ms: how long
	// the node holds a fetch that finds fewer than MinBytes before it
	// answers with what it has. Zero or less answers at once. It travels
	// in whole milliseconds.
	MaxWait time.Duration
	// MinBytes is min_bytes, the consumer's fetch.min.bytes: how many
	// record bytes the node waits for, up to MaxWait, before it answers.
	// Below one counts as one.
	MinBytes int32
	// MaxBytes bounds the whole answer; at least one batch is returned
	// even when it is larger. It is max_bytes, the consumer's
	// fetch.max.bytes; zero or less means 50 MiB.
	MaxBytes int32
	// Isolation is isolation_level: kafka.ReadCommitted reads only up to
	// the last stable offset, and the answer lists the aborted
	// transactions among the records it returns
	// (FetchPartitionResponse.AbortedTransactions). Without transactions
	// the last stable offset is the high watermark, and both levels read
	// the same.
	Isolation kafka.IsolationLevel
	// Topics names the partitions to read and where, topic by topic.
	Topics []FetchTopic
	// FileRecords lets the node answer with FetchPartitionResponse.File
	// rather than Records where it can: a network server asks so, to send
	// the records with sendfile. Whoever sets it closes the files.
	FileRecords bool
	// Buffer, in process only, is memory the node may read the records
	// into, from Buffer[:0] on and within its capacity, rather than into
	// new memory: each partition's Records then lies in Buffer's backing
	// array where it fits. The node writes to it only during the Fetch
	// call, and the caller owns it again (with the Records in it) when
	// Fetch returns. One Fetch writes a Buffer at a time: a client that
	// sends parts of a request to several nodes at once gives each a
	// disjoint part. It is not sent over the wire; nil means new memory.
	Buffer []byte
}

// FetchTopic is the part of a FetchRequest for one topic.
type FetchTopic struct {
	// Topic is the topic's name.
	Topic string
	// Partitions names the topic's partitions to read.
	Partitions []FetchPartition
}

// FetchPartition says where to read one partition from.
type FetchPartition struct {
	// Partition is the partition's index in the topic.
	Partition int32
	// CurrentLeaderEpoch is the leader epoch the fetcher knows, or -1.
	// It is current_leader_epoch (KIP-320), with which a Kafka leader
	// fences a fetcher that follows an older leader; a partlog node does
	// not check it on Fetch.
	CurrentLeaderEpoch int32
	// FetchOffset is fetch_offset: the offset of the first record wanted.
	// The answer starts with the batch that holds it, which may begin
	// earlier. An offset below the log start offset or above the log end
	// offset is answered with kafka.ErrOffsetOutOfRange; one at or past
	// the high watermark gets no records.
	FetchOffset int64
	// LastFetchedEpoch is the epoch of the last batch the follower holds,
	// or -1 (followers only).
	LastFetchedEpoch int32
	// LogStartOffset is log_start_offset (KIP-107): a follower's own log
	// start offset, or -1 from a consumer.
	LogStartOffset int64
	// MaxBytes bounds this partition's part of the answer: Kafka's
	// partition_max_bytes, the consumer's max.partition.fetch.bytes. At
	// least one batch is returned even when it is larger; zero or less
	// means 1 MiB.
	MaxBytes int32
}

// FetchResponse answers a FetchRequest.
type FetchResponse struct {
	// Topics answers the request's topics, in the request's order.
	Topics []FetchTopicResponse
}

// FetchTopicResponse is the part of a FetchResponse for one topic.
type FetchTopicResponse struct {
	// Topic is the topic's name, as asked.
	Topic string
	// Partitions answers the topic's partitions, in the request's order.
	Partitions []FetchPartitionResponse
}

// FetchPartitionResponse holds one partition's batches. Records are whole
// batches as stored; the first may begin before the fetch offset. The
// caller owns them.
type FetchPartitionResponse struct {
	// Partition is the partition's index, as asked.
	Partition int32
	// Err is nil, or why the partition was not read:
	// kafka.ErrOffsetOutOfRange, ErrNotLeaderOrFollower,
	// ErrUnknownTopicOrPartition, ErrKafkaStorage, ...
	Err error
	// HighWatermark is high_watermark: the offset below which records are
	// on every in-sync replica, and so readable by consumers; -1 when the
	// node could not reach the partition (not its leader, unknown, ...).
	HighWatermark int64
	// LastStableOffset is last_stable_offset: the offset below which
	// every transaction is decided, at or below HighWatermark, or -1 when
	// HighWatermark is; the high watermark when no transaction is open.
	LastStableOffset int64
	// LogStartOffset is log_start_offset (KIP-107): the first offset the
	// partition holds, or -1 when HighWatermark is.
	LogStartOffset int64
	// AbortedTransactions is aborted_transactions: for a read_committed
	// fetch, the aborted transactions whose records may be among Records,
	// which the consumer drops; nil (null on the wire) for a
	// read_uncommitted one.
	AbortedTransactions []AbortedTransaction
	// Records holds whole record batches, as the log stores them (see
	// above); empty when there are none to read, and unset when File
	// holds them.
	Records []byte
	// File, set only when the request asked for FileRecords, holds the
	// records instead of Records: a range of a segment file.
	File vfs.FileRange
}

// ListOffsetsRequest asks for offsets by time (Kafka's ListOffsets).
type ListOffsetsRequest struct {
	// ReplicaID is replica_id: kafka.ConsumerReplicaID (-1) from a client,
	// else the asking broker's id. A partlog node answers all alike.
	ReplicaID int32
	// Isolation is isolation_level: with kafka.ReadCommitted,
	// kafka.LatestTimestamp names the last stable offset rather than the
	// high watermark (the same while no transaction is open).
	Isolation kafka.IsolationLevel
	// Topics names the partitions asked about, topic by topic.
	Topics []ListOffsetsTopic
}

// ListOffsetsTopic is the part of a ListOffsetsRequest for one topic.
type ListOffsetsTopic struct {
	// Topic is the topic's name.
	Topic string
	// Partitions names the topic's partitions asked about.
	Partitions []ListOffsetsPartition
}

// ListOffsetsPartition asks for the first offset whose record timestamp is
// at or after Timestamp (ms), or for kafka.LatestTimestamp or kafka.EarliestTimestamp.
type ListOffsetsPartition struct {
	// Partition is the partition's index in the topic.
	Partition int32
	// CurrentLeaderEpoch is current_leader_epoch (KIP-320): the leader
	// epoch the client knows, or -1. A Kafka leader fences a client that
	// follows an older leader with it; a partlog node does not check it.
	CurrentLeaderEpoch int32
	// Timestamp is what to look up, in milliseconds since the Unix epoch,
	// or kafka.LatestTimestamp (-1) or kafka.EarliestTimestamp (-2). Other
	// negative values are answered with kafka.ErrInvalidRequest.
	Timestamp int64
}

// ListOffsetsResponse answers a ListOffsetsRequest.
type ListOffsetsResponse struct {
	// Topics answers the request's topics, in the request's order.
	Topics []ListOffsetsTopicResponse
}

// ListOffsetsTopicResponse is the part of a ListOffsetsResponse for one
// topic.
type ListOffsetsTopicResponse struct {
	// Topic is the topic's name, as asked.
	Topic string
	// Partitions answers the topic's partitions, in the request's order.
	Partitions []ListOffsetsPartitionResponse
}

// ListOffsetsPartitionResponse gives the offset found and its record's
// timestamp. Offset is -1 when no record is at or after the timestamp.
type ListOffsetsPartitionResponse struct {
	// Partition is the partition's index, as asked.
	Partition int32
	// Err is nil, or why the partition was not looked up
	// (kafka.ErrNotLeaderOrFollower, ErrUnknownTopicOrPartition,
	// ErrInvalidRequest for a bad timestamp, ...).
	Err error
	// Timestamp is the found record's timestamp in milliseconds; -1 for
	// kafka.EarliestTimestamp and kafka.LatestTimestamp, and when no
	// record was found.
	Timestamp int64
	// Offset is the offset found: the first record at or after the
	// timestamp asked for, below the high watermark; the log start
	// offset for kafka.EarliestTimestamp; the high watermark for
	// kafka.LatestTimestamp. It is -1 when there is none.
	Offset int64
	// LeaderEpoch is leader_epoch, which a consumer keeps with its
	// position to detect truncation (KIP-320). Kafka gives the epoch of
	// the batch at Offset; a partlog node gives the partition's current
	// leader epoch. -1 when unknown.
	LeaderEpoch int32
}

// MetadataRequest asks which nodes lead which partitions (Kafka's
// Metadata). Nil Topics asks for every topic.
type MetadataRequest struct {
	// Topics names the topics to describe. Nil asks for every topic; an
	// empty, non-nil slice for none (only the brokers and controller).
	Topics []string
	// AllowAutoTopicCreation asks the node to create the unknown topics
	// named, if it auto-creates topics (Kafka's
	// allow_auto_topic_creation).
	AllowAutoTopicCreation bool
	// MayCreate, when set, says which of the unknown topics the caller
	// may have created: a server with an Authorizer sets it to CREATE on
	// the cluster or on the topic, and answers the others
	// TOPIC_AUTHORIZATION_FAILED. Nil allows every one.
	MayCreate func(topic string) bool
}

// MetadataResponse describes the cluster and the topics asked for.
type MetadataResponse struct {
	// ClusterID is cluster_id (KIP-78): the id the cluster was formed
	// with, the same from every node.
	ClusterID string
	// ControllerID is controller_id: the node admin clients send the
	// requests that need the controller to. As KRaft brokers name a live
	// broker that forwards them (KIP-590), a partlog node names itself.
	ControllerID int32
	// Brokers are the live (unfenced) nodes and where to reach them.
	Brokers []Broker
	// Topics describes the topics asked for, in the order they were
	// named.
	Topics []TopicMetadata
}

// Broker is a node of the cluster and where to reach it.
type Broker struct {
	// NodeID is the node's id (node.id).
	NodeID int32
	// Host is the host name or IP address of the node's advertised
	// listener, where clients connect. A Server fills Host and Port in
	// for a handler that leaves them empty (see ServerOptions.Advertised).
	Host string
	// Port is the advertised listener's TCP port.
	Port int32
	// Rack is the node's broker.rack, for rack-aware assignment; empty
	// when not set (partlog sets none).
	Rack string
}

// TopicMetadata describes a topic, or says why it cannot (Err).
type TopicMetadata struct {
	// Err is nil, or why the topic is not described
	// (kafka.ErrUnknownTopicOrPartition, ...).
	Err error
	// Topic is the topic's name.
	Topic string
	// TopicID is topic_id (KIP-516): the UUID given to the topic when it
	// was created, which a topic re-created under the same name does not
	// share. All zeros when unknown.
	TopicID [16]byte
	// Internal is is_internal: the topic is the cluster's own, such as
	// __consumer_offsets (partlog marks every topic whose name starts
	// with "__").
	Internal bool
	// Partitions describes each partition of the topic.
	Partitions []PartitionMetadata
}

// PartitionMetadata describes one partition's replicas.
type PartitionMetadata struct {
	// Err is nil, or what is wrong with the partition
	// (kafka.ErrLeaderNotAvailable, ErrKafkaStorage for one on a failed
	// log directory, ...).
	Err error
	// Partition is the partition's index in the topic.
	Partition int32
	// Leader is leader_id: the node id of the partition's leader, to which
	// produce and fetch requests go; -1 when it has none.
	Leader int32
	// LeaderEpoch is leader_epoch (KIP-320): the epoch of the current
	// leadership, raised at each leader change; -1 when unknown.
	LeaderEpoch int32
	// Replicas is replica_nodes: the node ids assigned a replica, the
	// preferred leader first.
	Replicas []int32
	// ISR is isr_nodes: the replicas in sync with the leader, which an
	// acks=all produce waits for.
	ISR []int32
	// Offline is offline_replicas (KIP-112): the replicas that cannot
	// serve, on a node that is fenced or gone or on a failed log
	// directory.
	Offline []int32
}
