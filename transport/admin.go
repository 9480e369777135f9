package transport

import (
	"context"
	"fmt"
	"time"

	"github.com/partlog/partlog/kafka"
)

// AdminClient is what Kafka's admin tools need of a node beyond Client:
// topics (create, delete, add partitions), configs (describe, alter),
// records (delete before an offset), the cluster and its log dirs,
// preferred-leader elections and producers' state. A *partlog.Node
// implements it, and so does a TCPClient connected to one. Callers find it
// by type assertion on a Client.
type AdminClient interface {
	CreateTopics(ctx context.Context, req *CreateTopicsRequest) (*CreateTopicsResponse, error)
	DeleteTopics(ctx context.Context, req *DeleteTopicsRequest) (*DeleteTopicsResponse, error)
	CreatePartitions(ctx context.Context, req *CreatePartitionsRequest) (*CreatePartitionsResponse, error)
	DescribeConfigs(ctx context.Context, req *DescribeConfigsRequest) (*DescribeConfigsResponse, error)
	AlterConfigs(ctx context.Context, req *AlterConfigsRequest) (*AlterConfigsResponse, error)
	DeleteRecords(ctx context.Context, req *DeleteRecordsRequest) (*DeleteRecordsResponse, error)
	DescribeLogDirs(ctx context.Context, req *DescribeLogDirsRequest) (*DescribeLogDirsResponse, error)
	ElectLeaders(ctx context.Context, req *ElectLeadersRequest) (*ElectLeadersResponse, error)
	DescribeProducers(ctx context.Context, req *DescribeProducersRequest) (*DescribeProducersResponse, error)
}

// EpochClient answers Kafka's OffsetForLeaderEpoch for consumers
// (KIP-320): where a leader epoch ended in a partition's log, so that a
// consumer that fetched from an old leader finds whether its position is
// still in the log. A *partlog.Node implements it.
type EpochClient interface {
	OffsetsForLeaderEpoch(ctx context.Context, req *kafka.OffsetsForLeaderEpochRequest) (*kafka.OffsetsForLeaderEpochResponse, error)
}

// CreateTopicsRequest asks to create topics (Kafka's CreateTopics).
type CreateTopicsRequest struct {
	// Topics are the topics to create.
	Topics []CreatableTopic
	// Timeout is timeout_ms: how long Kafka's controller may take over
	// the change before it answers REQUEST_TIMED_OUT (the change may still
	// complete). It travels in whole milliseconds; a partlog node does not
	// read it.
	Timeout time.Duration
	// ValidateOnly checks the topics without creating them.
	ValidateOnly bool
}

// CreatableTopic is one topic to create.
type CreatableTopic struct {
	// Name is the topic's name: at most 249 characters of ASCII letters,
	// digits, '.', '_' and '-', as Kafka allows.
	Name string
	// Partitions is the number of partitions; -1 means the default, 1.
	// Zero is refused with kafka.ErrInvalidPartitions, as Kafka refuses it.
	Partitions int32
	// ReplicationFactor is the number of replicas; -1 means the default,
	// 1. Zero is refused with kafka.ErrInvalidReplicationFactor, as in Kafka.
	ReplicationFactor int16
	// Configs overrides topic configs, by Kafka's names.
	Configs map[string]string
}

// CreateTopicsResponse says, topic by topic, whether it was created.
type CreateTopicsResponse struct {
	// Topics answers each topic asked for, in the request's order.
	Topics []TopicResult
}

// TopicResult is the outcome for one topic of an admin request.
type TopicResult struct {
	// Name is the topic's name, as asked.
	Name string
	// Err is nil when the topic was changed, else why not
	// (kafka.ErrTopicAlreadyExists, ErrUnknownTopicOrPartition,
	// ErrInvalidPartitions, ...).
	Err error
}

// DeleteTopicsRequest asks to delete topics by name (Kafka's
// DeleteTopics).
type DeleteTopicsRequest struct {
	// Topics names the topics to delete.
	Topics []string
	// Timeout is timeout_ms: how long Kafka's controller may take over
	// the change before it answers REQUEST_TIMED_OUT (the change may still
	// complete). It travels in whole milliseconds; a partlog node does not
	// read it.
	Timeout time.Duration
}

// DeleteTopicsResponse says, topic by topic, whether it was deleted.
type DeleteTopicsResponse struct {
	// Topics answers each topic asked for, in the request's order.
	Topics []TopicResult
}

// ConfigResourceType is the kind of thing a config belongs to, as Kafka
// numbers it.
type ConfigResourceType int8

// The config resources partlog has.
const (
	// ConfigTopic names a topic.
	ConfigTopic ConfigResourceType = 2
	// ConfigBroker names a node by its id ("" for the node asked).
	ConfigBroker ConfigResourceType = 4
	// ConfigGroup names a group by its id (KIP-848, KIP-932): the group
	// configs, such as share.auto.offset.reset, which a group that does
	// not exist yet may have too.
	ConfigGroup ConfigResourceType = 32
)

// String returns Kafka's name of the resource type.
func (t ConfigResourceType) String() string {
	switch t {
	case ConfigTopic:
		return "TOPIC"
	case ConfigBroker:
		return "BROKER"
	case ConfigGroup:
		return "GROUP"
	}
	return fmt.Sprintf("RESOURCE_TYPE_%d", int8(t))
}

// ConfigResource names what a config belongs to: a topic by its name, a
// node by its id in decimal, a group by its id.
type ConfigResource struct {
	// Type is resource_type: what kind of thing Name names.
	Type ConfigResourceType
	// Name is resource_name: the topic's name, the node's id in decimal
	// ("" for the node asked), or the group's id.
	Name string
}

// DescribeConfigsRequest asks for the configs in force of topics, nodes
// and groups (Kafka's DescribeConfigs).
type DescribeConfigsRequest struct {
	// Resources names the topics, nodes and groups whose configs are
	// wanted.
	Resources []ConfigResource
}

// DescribeConfigsResponse holds each resource's configs, or why not, in
// the order asked.
type DescribeConfigsResponse struct {
	// Resources answers each resource asked for, in the request's order.
	Resources []ResourceConfigs
}

// ResourceConfigs is the configs in force for one resource.
type ResourceConfigs struct {
	ConfigResource
	// Err is nil, or why the resource is not described
	// (kafka.ErrUnknownTopicOrPartition, ...).
	Err error
	// Configs are the resource's configs in force, defaults included.
	Configs []ConfigEntry
}

// ConfigEntry is one config in force: its value, and whether it is the
// default or the resource's own.
type ConfigEntry struct {
	// Name is the config's Kafka key, such as retention.ms.
	Name string
	// Value is the value in force, as Kafka writes it ("604800000").
	Value string
	// IsDefault says the value is the default: the resource has no value
	// of its own for it (Kafka's config source DEFAULT_CONFIG; a value of
	// its own is DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG or
	// STATIC_BROKER_CONFIG, or GROUP_CONFIG for a group).
	IsDefault bool
	// ReadOnly is set for a config that AlterConfigs cannot change (a
	// node's static settings).
	ReadOnly bool
}

// ConfigOp is how IncrementalAlterConfigs changes one config, as Kafka
// numbers it.
type ConfigOp int8

// The config operations.
const (
	// ConfigSet sets the config to Value.
	ConfigSet ConfigOp = 0
	// ConfigDelete removes the resource's own value: the default applies.
	ConfigDelete ConfigOp = 1
	// ConfigAppend adds Value to a list config.
	ConfigAppend ConfigOp = 2
	// ConfigSubtract removes Value from a list config.
	ConfigSubtract ConfigOp = 3
)

// ConfigChange is one change to one config.
type ConfigChange struct {
	// Name is the config's Kafka key, such as retention.ms.
	Name string
	// Op is config_operation: how to change it.
	Op ConfigOp
	// Value is the value to set, append or subtract; ignored by
	// ConfigDelete.
	Value string
}

// AlterConfigsRequest changes the configs of resources: Kafka's
// IncrementalAlterConfigs, and its older AlterConfigs, which replaces a
// resource's whole set (Replace).
type AlterConfigsRequest struct {
	// Resources holds each resource's changes.
	Resources []ConfigAlteration
	// ValidateOnly checks the changes without making them.
	ValidateOnly bool
}

// ConfigAlteration is the changes to one resource's configs.
type ConfigAlteration struct {
	ConfigResource
	// Changes are the changes to make, all or none.
	Changes []ConfigChange
	// Replace makes the changes the resource's whole set of own configs:
	// those not named return to their defaults (Kafka's AlterConfigs).
	Replace bool
}

// AlterConfigsResponse says, resource by resource, whether the changes
// were made.
type AlterConfigsResponse struct {
	// Resources answers each resource, in the request's order.
	Resources []ConfigResult
}

// ConfigResult is the outcome for one resource.
type ConfigResult struct {
	ConfigResource
	// Err is nil when the changes were made, else why none was
	// (kafka.ErrInvalidConfig, ErrUnknownTopicOrPartition, ...).
	Err error
}

// CreatePartitionsRequest asks to raise topics' partition counts (Kafka's
// CreatePartitions). A count is never lowered.
type CreatePartitionsRequest struct {
	// Topics gives each topic's new partition count.
	Topics []PartitionCount
	// Timeout is timeout_ms: how long Kafka's controller may take over
	// the change before it answers REQUEST_TIMED_OUT (the change may still
	// complete). It travels in whole milliseconds; a partlog node does not
	// read it.
	Timeout time.Duration
	// ValidateOnly checks the request without adding partitions.
	ValidateOnly bool
}

// PartitionCount is the number of partitions a topic should have.
type PartitionCount struct {
	// Topic is the topic's name.
	Topic string
	// Count is the topic's new total number of partitions, not the number
	// to add; one not above the current count is refused with
	// kafka.ErrInvalidPartitions.
	Count int32
}

// CreatePartitionsResponse says, topic by topic, whether partitions were
// added.
type CreatePartitionsResponse struct {
	// Topics answers each topic asked for.
	Topics []TopicResult
}

// DeleteRecordsRequest asks to delete the records of partitions below
// offsets (Kafka's DeleteRecords): their log start offsets move up.
type DeleteRecordsRequest struct {
	// Partitions names each partition and the offset to delete below.
	Partitions []DeleteRecordsPartition
	// Timeout is timeout_ms: how long a Kafka leader waits for its
	// followers to move their log start offsets before it answers
	// REQUEST_TIMED_OUT (the deletion may still complete). It travels in
	// whole milliseconds; a partlog node does not read it.
	Timeout time.Duration
}

// DeleteRecordsPartition deletes one partition's records below Offset;
// -1 means below the high watermark.
type DeleteRecordsPartition struct {
	kafka.TopicPartition
	// Offset is the partition's new log start offset: records below it
	// are deleted. -1 means the high watermark; above the high watermark
	// is refused with kafka.ErrOffsetOutOfRange.
	Offset int64
}

// DeleteRecordsResponse gives each partition's new log start offset.
type DeleteRecordsResponse struct {
	// Partitions answers each partition asked for.
	Partitions []DeleteRecordsResult
}

// DeleteRecordsResult is the outcome for one partition.
type DeleteRecordsResult struct {
	kafka.TopicPartition
	// LowWatermark is the partition's log start offset after the call.
	LowWatermark int64
	// Err is nil or one of kafka.ErrUnknownTopicOrPartition,
	// kafka.ErrNotLeaderOrFollower, kafka.ErrOffsetOutOfRange (above the high
	// watermark), kafka.ErrRequestTimedOut.
	Err error
}

// DescribeLogDirsRequest asks where the node keeps partitions and how big
// they are (Kafka's DescribeLogDirs). Nil Partitions means all of them.
type DescribeLogDirsRequest struct {
	// Partitions names the partitions to describe; nil means all.
	Partitions []kafka.TopicPartition
}

// DescribeLogDirsResponse holds the node's log directories.
type DescribeLogDirsResponse struct {
	// Dirs are the node's log directories (log.dirs).
	Dirs []LogDir
}

// LogDir is one log directory and the partitions in it.
type LogDir struct {
	// Path is the directory's path on the node.
	Path string
	// Err is nil or kafka.ErrKafkaStorage for a directory that failed.
	Err error
	// Partitions are the replicas asked for that the directory holds.
	Partitions []LogDirPartition
	// TotalBytes and UsableBytes are the filesystem's size and free space,
	// or -1 when unknown.
	TotalBytes, UsableBytes int64
}

// LogDirPartition is one partition's replica in a log directory.
type LogDirPartition struct {
	kafka.TopicPartition
	// Size is the bytes of its segments.
	Size int64
	// OffsetLag is how far its log end offset is behind the high
	// watermark (0 on a leader).
	OffsetLag int64
}

// ElectionType is the kind of leader election ElectLeaders asks for.
type ElectionType int8

// The election types, as Kafka numbers them.
const (
	// PreferredElection moves leadership to the first replica of the
	// assignment when it is in the ISR.
	PreferredElection ElectionType = 0
	// UncleanElection elects a live replica outside the ISR when the
	// partition has no leader: it may lose acknowledged records.
	UncleanElection ElectionType = 1
)

// ElectLeadersRequest asks the controller to elect leaders (Kafka's
// ElectLeaders). Nil Partitions means every partition.
type ElectLeadersRequest struct {
	// Type is election_type: PreferredElection or UncleanElection. A
	// partlog node elects preferred leaders only, and answers an unclean
	// election with kafka.ErrInvalidRequest.
	Type ElectionType
	// Partitions names the partitions; nil means every partition.
	Partitions []kafka.TopicPartition
	// Timeout is timeout_ms: how long Kafka's controller may take over
	// the change before it answers REQUEST_TIMED_OUT (the change may still
	// complete). It travels in whole milliseconds; a partlog node does not
	// read it.
	Timeout time.Duration
}

// ElectLeadersResponse says, partition by partition, what happened.
type ElectLeadersResponse struct {
	// Partitions answers each partition.
	Partitions []ElectionResult
}

// ElectionResult is the outcome for one partition: nil, or
// kafka.ErrElectionNotNeeded, kafka.ErrPreferredLeaderNotAvailable,
// kafka.ErrEligibleLeadersNotAvailable, kafka.ErrUnknownTopicOrPartition.
type ElectionResult struct {
	kafka.TopicPartition
	// Err is nil when the election took place, else one of the errors
	// above.
	Err error
}

// DescribeProducersRequest asks a leader for the idempotent producers it
// keeps state for (Kafka's DescribeProducers).
type DescribeProducersRequest struct {
	// Partitions names the partitions to describe.
	Partitions []kafka.TopicPartition
}

// DescribeProducersResponse holds each partition's producers.
type DescribeProducersResponse struct {
	// Partitions answers each partition asked for, in the request's
	// order.
	Partitions []PartitionProducers
}

// PartitionProducers is the producers' state of one partition.
type PartitionProducers struct {
	kafka.TopicPartition
	// Err is nil or kafka.ErrUnknownTopicOrPartition, kafka.ErrNotLeaderOrFollower.
	Err error
	// Producers are the idempotent producers with state in the partition.
	Producers []ProducerState
}

// ProducerState is what a partition remembers of one producer.
type ProducerState struct {
	// ProducerID is the producer's id, from InitProducerId.
	ProducerID int64
	// ProducerEpoch is the producer's latest epoch in the partition.
	ProducerEpoch int16
	// LastSequence is the sequence of the producer's last record, or -1.
	LastSequence int32
	// LastTimestamp is the max timestamp of its last batch, in
	// milliseconds.
	LastTimestamp int64
	// CurrentTxnStartOffset is the first offset of its open transaction,
	// or -1 (always, until transactions exist).
	CurrentTxnStartOffset int64
}
