package transport

import (
	"context"
	"time"
)

// AdminClient is what the topic tools need of a node beyond Client:
// Kafka's CreateTopics, DeleteTopics and DescribeConfigs. A *partlog.Node
// implements it, and so does a TCPClient connected to one. Callers find it
// by type assertion on a Client.
type AdminClient interface {
	CreateTopics(ctx context.Context, req *CreateTopicsRequest) (*CreateTopicsResponse, error)
	DeleteTopics(ctx context.Context, req *DeleteTopicsRequest) (*DeleteTopicsResponse, error)
	DescribeConfigs(ctx context.Context, req *DescribeConfigsRequest) (*DescribeConfigsResponse, error)
}

// CreateTopicsRequest asks to create topics (Kafka's CreateTopics).
type CreateTopicsRequest struct {
	Topics  []CreatableTopic
	Timeout time.Duration
	// ValidateOnly checks the topics without creating them.
	ValidateOnly bool
}

// CreatableTopic is one topic to create.
type CreatableTopic struct {
	Name string
	// Partitions is the number of partitions; -1 means the default, 1.
	// Zero is refused with ErrInvalidPartitions, as Kafka refuses it.
	Partitions int32
	// ReplicationFactor is the number of replicas; -1 means the default,
	// 1. Zero is refused with ErrInvalidReplicationFactor, as in Kafka.
	ReplicationFactor int16
	// Configs overrides topic configs, by Kafka's names.
	Configs map[string]string
}

// CreateTopicsResponse says, topic by topic, whether it was created.
type CreateTopicsResponse struct {
	Topics []TopicResult
}

// TopicResult is the outcome for one topic of an admin request.
type TopicResult struct {
	Name string
	Err  error
}

// DeleteTopicsRequest asks to delete topics by name (Kafka's
// DeleteTopics).
type DeleteTopicsRequest struct {
	Topics  []string
	Timeout time.Duration
}

// DeleteTopicsResponse says, topic by topic, whether it was deleted.
type DeleteTopicsResponse struct {
	Topics []TopicResult
}

// DescribeConfigsRequest asks for the configs of topics (Kafka's
// DescribeConfigs for TOPIC resources).
type DescribeConfigsRequest struct {
	Topics []string
}

// DescribeConfigsResponse holds each topic's configs, or why not.
type DescribeConfigsResponse struct {
	Topics []TopicConfigs
}

// TopicConfigs is the configs in force for one topic.
type TopicConfigs struct {
	Name    string
	Err     error
	Configs []ConfigEntry
}

// ConfigEntry is one config in force: its value, and whether it is the
// default or the topic's own.
type ConfigEntry struct {
	Name      string
	Value     string
	IsDefault bool
}
