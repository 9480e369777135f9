package compat

import "context"

// driver is one Kafka client as the checks use it. Each client's file
// implements it with that client's own calls and settings; the checks
// (checks_test.go, admin_test.go) are written once against it. A method
// returns a naError (na(...)) where the client has no such call: its cell
// is then N/A. Every method returns when ctx is done.
type driver interface {
	// name is the client's short name, for -compat.clients and the
	// result lines: "kcat", "confluent", "sarama", "kgo", "kafkajs".
	name() string
	// label is the client and its version, for the table's header.
	label() string
	// transactionVersion is the transaction protocol the client speaks
	// with a node that finalizes transaction.version at 2: 2 for one that
	// implements KIP-890 part 2 (its EndTxn moves the producer to the
	// next epoch, so each marker carries the epoch after its
	// transaction's), 0 for the others.
	transactionVersion() int16

	// produce sends spec.Records, each to its Partition, and returns
	// where each landed as the client's acknowledgement says: a
	// partition and offset per record, in order, with offset -1 where the
	// client does not tell (acks=0, or a client that reports no offsets).
	// It returns once every record is acknowledged, or with an error if
	// any failed.
	produce(ctx context.Context, tg *target, spec produceSpec) ([]rec, error)

	// consume reads spec.Count records of one partition, from spec.From,
	// and returns them as the client read them.
	consume(ctx context.Context, tg *target, spec consumeSpec) ([]rec, error)

	// consumeToEnd reads a partition from its beginning until the client
	// says it has reached the partition's end — librdkafka's
	// end-of-partition event, or the high watermark a client returns with
	// fetched records — and returns the records and the end offset the
	// client gave.
	consumeToEnd(ctx context.Context, tg *target, topic string, partition int32) ([]rec, int64, error)

	// join starts a member of group subscribed to topic. The member
	// reports its assignments and the records it consumes on Events,
	// commits the offsets of what it consumed (at the latest before it
	// gives up a partition or leaves), and leaves the group on Leave.
	join(ctx context.Context, tg *target, group, topic string) (member, error)

	// produceStream starts producing numbered records to topic at
	// acks=all, with idempotence, until stopped: record i has key
	// "key-<i%30>" and value "<i>", and goes to the partition of its key.
	produceStream(ctx context.Context, tg *target, topic string) (stream, error)

	// transact runs spec.Transactions in order as one transactional
	// producer (transactional.id spec.TransactionalID): each begins a
	// transaction, sends its records to their partitions, waits until
	// every one is acknowledged (so that an aborted transaction's records
	// are in the log too), and commits or aborts. It returns where each
	// record of each transaction landed, in order, as produce does.
	transact(ctx context.Context, tg *target, spec txnSpec) ([]rec, error)

	// transform consumes spec.Input in group spec.Group and, in
	// transactions of a producer with transactional.id
	// spec.TransactionalID, produces transformed(r) of each record r to
	// spec.Output and sends the consumed offsets to the transaction
	// (sendOffsetsToTransaction), never committing them otherwise. It
	// returns once transactions holding spec.Count records have
	// committed; with spec.Abort, once its first transaction, offsets
	// sent, is aborted. Either way it then closes without committing,
	// and returns how many records those transactions held.
	transform(ctx context.Context, tg *target, spec transformSpec) (int, error)

	// admin returns the client's admin calls.
	admin() admin
}

// produceSpec is what produce sends, and how.
type produceSpec struct {
	Topic   string `json:"topic"`
	Records []rec  `json:"records"`
	// Acks is 0, 1 or -1 (all).
	Acks int `json:"acks"`
	// Compression is "none", "gzip", "snappy", "lz4" or "zstd".
	Compression string `json:"compression"`
	// Idempotent turns on the idempotent producer (enable.idempotence).
	Idempotent bool `json:"idempotent"`
}

// consumeSpec is what consume reads.
type consumeSpec struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      start  `json:"from"`
	Count     int    `json:"count"`
	// Isolation is the consumer's isolation.level: "read_committed",
	// "read_uncommitted", or "" for the client's default.
	Isolation string `json:"isolation,omitempty"`
}

// txnSpec is what transact sends.
type txnSpec struct {
	Topic           string `json:"topic"`
	TransactionalID string `json:"transactional_id"`
	// Transactions are run one after the other.
	Transactions []txn `json:"transactions"`
}

// txn is one transaction of a txnSpec.
type txn struct {
	// Records go each to its Partition.
	Records []rec `json:"records"`
	// Commit commits the transaction; false aborts it.
	Commit bool `json:"commit"`
}

// transformSpec is what transform reads, writes and commits.
type transformSpec struct {
	Input           string `json:"input"`
	Output          string `json:"output"`
	Group           string `json:"group"`
	TransactionalID string `json:"transactional_id"`
	// Count is how many records to carry over in committed transactions.
	Count int `json:"count"`
	// Abort makes the first transaction the last, aborted.
	Abort bool `json:"abort"`
}

// start is where a consumer starts reading a partition.
type start struct {
	// Kind is "beginning", "offset", "timestamp" or "end".
	Kind string `json:"kind"`
	// At is the offset, or the timestamp in ms, of "offset" and
	// "timestamp": the first record at or after it.
	At int64 `json:"at"`
}

// member is one consumer in a group, as join started it.
type member interface {
	// Events delivers the member's assignments and records in the order
	// they happen, and is closed once the member has left the group.
	Events() <-chan memberEvent
	// Leave makes the member commit, leave the group and close, and
	// waits until it has.
	Leave() error
}

// memberEvent is an assignment (Record nil: Assigned is the member's
// whole assignment from now on, empty when it has none) or a record
// consumed.
type memberEvent struct {
	Assigned []int32 `json:"assigned"`
	Record   *rec    `json:"record"`
	// Err reports a failure of the member; it is the last event.
	Err string `json:"error"`
}

// stream is a producer started by produceStream.
type stream interface {
	// Acks delivers each record's outcome as the client learns it, and is
	// closed once Stop has returned.
	Acks() <-chan streamAck
	// Stop stops sending new records, waits until every record sent has
	// its outcome, and closes the producer.
	Stop() error
}

// streamAck is the outcome of record Seq of a stream: where it landed, or
// why it failed.
type streamAck struct {
	Seq       int    `json:"seq"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Err       string `json:"error"`
}

// admin is a client's admin calls, one method per step of Kafka's admin
// workflow. Each returns a naError when the client has no such call.
type admin interface {
	// createTopic creates a topic (CreateTopics).
	createTopic(ctx context.Context, tg *target, topic string, partitions int32, rf int16, configs map[string]string) error
	// partitions returns how many partitions the client's metadata says
	// topic has.
	partitions(ctx context.Context, tg *target, topic string) (int, error)
	// deleteTopic deletes a topic (DeleteTopics).
	deleteTopic(ctx context.Context, tg *target, topic string) error
	// createPartitions grows topic to total partitions (CreatePartitions).
	createPartitions(ctx context.Context, tg *target, topic string, total int32) error
	// incrementalAlterTopicConfig sets configs of topic and leaves the
	// others alone (IncrementalAlterConfigs, SET).
	incrementalAlterTopicConfig(ctx context.Context, tg *target, topic string, set map[string]string) error
	// alterTopicConfig replaces topic's configs with configs (the legacy
	// AlterConfigs: what is not named returns to its default).
	alterTopicConfig(ctx context.Context, tg *target, topic string, configs map[string]string) error
	// describeTopicConfig returns topic's configs (DescribeConfigs).
	describeTopicConfig(ctx context.Context, tg *target, topic string) (map[string]configValue, error)
	// describeBrokerConfig returns a broker's configs (DescribeConfigs of
	// a BROKER resource).
	describeBrokerConfig(ctx context.Context, tg *target, broker int32) (map[string]configValue, error)
	// deleteRecords deletes partition's records before offset
	// (DeleteRecords) and returns the low watermark the answer gives, -1
	// where the client does not return it.
	deleteRecords(ctx context.Context, tg *target, topic string, partition int32, before int64) (int64, error)
	// earliestOffset returns partition's log start offset (ListOffsets,
	// earliest).
	earliestOffset(ctx context.Context, tg *target, topic string, partition int32) (int64, error)
	// describeCluster describes the cluster (DescribeCluster, or Metadata
	// where that is what the client's call sends).
	describeCluster(ctx context.Context, tg *target) (clusterInfo, error)
	// describeLogDirs returns, per broker, the size of each partition of
	// topic it holds (DescribeLogDirs).
	describeLogDirs(ctx context.Context, tg *target, topic string) (map[int32]map[int32]int64, error)
	// electPreferredLeaders asks for the preferred replica of each of
	// topic's partitions to lead (ElectLeaders, PREFERRED) and returns
	// each partition's error name, "" for none.
	electPreferredLeaders(ctx context.Context, tg *target, topic string, partitions []int32) (map[int32]string, error)
	// reassign moves partition's replicas to replicas
	// (AlterPartitionReassignments).
	reassign(ctx context.Context, tg *target, topic string, partition int32, replicas []int32) error
	// reassigning returns the adding replicas of each of topic's partitions
	// being reassigned (ListPartitionReassignments).
	reassigning(ctx context.Context, tg *target, topic string) (map[int32][]int32, error)
	// describeProducers returns the idempotent producers active on a
	// partition (DescribeProducers).
	describeProducers(ctx context.Context, tg *target, topic string, partition int32) ([]producerState, error)
	// offsetForLeaderEpoch returns the end offset of leaderEpoch in a
	// partition, and the epoch it belongs to (OffsetForLeaderEpoch).
	offsetForLeaderEpoch(ctx context.Context, tg *target, topic string, partition, leaderEpoch int32) (endOffset int64, epoch int32, err error)
}

// configValue is a config as DescribeConfigs gives it.
type configValue struct {
	Value *string `json:"value"`
	// IsDefault says that no override sets it (its source is a default).
	IsDefault bool `json:"is_default"`
}

// clusterInfo is what describeCluster returns.
type clusterInfo struct {
	// ClusterID is nil where the client's call does not give one.
	ClusterID    *string `json:"cluster_id"`
	ControllerID int32   `json:"controller_id"`
	Brokers      []int32 `json:"brokers"`
}

// producerState is one idempotent producer of a partition, as
// DescribeProducers gives it.
type producerState struct {
	ProducerID    int64 `json:"producer_id"`
	ProducerEpoch int32 `json:"producer_epoch"`
	LastSequence  int32 `json:"last_sequence"`
}
