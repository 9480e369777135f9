package group

import "github.com/partlog/partlog/kafka"

// OffsetsTopic is the internal topic that holds committed offsets and group
// metadata.
const OffsetsTopic = kafka.OffsetsTopic

// DefaultOffsetsTopicPartitions is Kafka's offsets.topic.num.partitions.
const DefaultOffsetsTopicPartitions = kafka.DefaultCoordinatorPartitions

// PartitionFor returns the partition of __consumer_offsets, out of n, that
// holds a group, as Kafka places it (kafka.CoordinatorPartition).
func PartitionFor(group string, n int32) int32 { return kafka.CoordinatorPartition(group, n) }
