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
	Acks    kafka.Acks
	Timeout time.Duration
	Topics  []ProduceTopic
}

// ProduceTopic is the part of a ProduceRequest for one topic.
type ProduceTopic struct {
	Topic      string
	Partitions []ProducePartition
}

// ProducePartition carries one record batch for one partition.
type ProducePartition struct {
	Partition int32
	Records   []byte
}

// ProduceResponse answers a ProduceRequest, partition by partition.
type ProduceResponse struct {
	Topics []ProduceTopicResponse
}

// ProduceTopicResponse is the part of a ProduceResponse for one topic.
type ProduceTopicResponse struct {
	Topic      string
	Partitions []ProducePartitionResponse
}

// ProducePartitionResponse says where a batch landed, or why it did not.
type ProducePartitionResponse struct {
	Partition int32
	Err       error
	// BaseOffset is the offset given to the batch's first record.
	BaseOffset int64
	// LogAppendTime is the time the log stamped on the batch when the
	// topic uses LogAppendTime, else -1.
	LogAppendTime  int64
	LogStartOffset int64
}

// FetchRequest asks for record batches from several partitions (Kafka's
// Fetch). The node answers as soon as it has MinBytes, or after MaxWait.
type FetchRequest struct {
	// ReplicaID is the fetching follower's node id, or kafka.ConsumerReplicaID.
	ReplicaID int32
	MaxWait   time.Duration
	MinBytes  int32
	// MaxBytes bounds the whole answer; at least one batch is returned
	// even when it is larger.
	MaxBytes  int32
	Isolation kafka.IsolationLevel
	Topics    []FetchTopic
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
	Topic      string
	Partitions []FetchPartition
}

// FetchPartition says where to read one partition from.
type FetchPartition struct {
	Partition int32
	// CurrentLeaderEpoch is the leader epoch the fetcher knows, or -1.
	CurrentLeaderEpoch int32
	FetchOffset        int64
	// LastFetchedEpoch is the epoch of the last batch the follower holds,
	// or -1 (followers only).
	LastFetchedEpoch int32
	LogStartOffset   int64
	// MaxBytes bounds this partition's part of the answer.
	MaxBytes int32
}

// FetchResponse answers a FetchRequest.
type FetchResponse struct {
	Topics []FetchTopicResponse
}

// FetchTopicResponse is the part of a FetchResponse for one topic.
type FetchTopicResponse struct {
	Topic      string
	Partitions []FetchPartitionResponse
}

// FetchPartitionResponse holds one partition's batches. Records are whole
// batches as stored; the first may begin before the fetch offset. The
// caller owns them.
type FetchPartitionResponse struct {
	Partition        int32
	Err              error
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	Records          []byte
	// File, set only when the request asked for FileRecords, holds the
	// records instead of Records: a range of a segment file.
	File vfs.FileRange
}

// ListOffsetsRequest asks for offsets by time (Kafka's ListOffsets).
type ListOffsetsRequest struct {
	ReplicaID int32
	Isolation kafka.IsolationLevel
	Topics    []ListOffsetsTopic
}

// ListOffsetsTopic is the part of a ListOffsetsRequest for one topic.
type ListOffsetsTopic struct {
	Topic      string
	Partitions []ListOffsetsPartition
}

// ListOffsetsPartition asks for the first offset whose record timestamp is
// at or after Timestamp (ms), or for kafka.LatestTimestamp or kafka.EarliestTimestamp.
type ListOffsetsPartition struct {
	Partition          int32
	CurrentLeaderEpoch int32
	Timestamp          int64
}

// ListOffsetsResponse answers a ListOffsetsRequest.
type ListOffsetsResponse struct {
	Topics []ListOffsetsTopicResponse
}

// ListOffsetsTopicResponse is the part of a ListOffsetsResponse for one
// topic.
type ListOffsetsTopicResponse struct {
	Topic      string
	Partitions []ListOffsetsPartitionResponse
}

// ListOffsetsPartitionResponse gives the offset found and its record's
// timestamp. Offset is -1 when no record is at or after the timestamp.
type ListOffsetsPartitionResponse struct {
	Partition   int32
	Err         error
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32
}

// MetadataRequest asks which nodes lead which partitions (Kafka's
// Metadata). Nil Topics asks for every topic.
type MetadataRequest struct {
	Topics []string
	// AllowAutoTopicCreation asks the node to create the unknown topics
	// named, if it auto-creates topics (Kafka's
	// allow_auto_topic_creation).
	AllowAutoTopicCreation bool
}

// MetadataResponse describes the cluster and the topics asked for.
type MetadataResponse struct {
	ClusterID    string
	ControllerID int32
	Brokers      []Broker
	Topics       []TopicMetadata
}

// Broker is a node of the cluster and where to reach it.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   string
}

// TopicMetadata describes a topic, or says why it cannot (Err).
type TopicMetadata struct {
	Err        error
	Topic      string
	TopicID    [16]byte
	Internal   bool
	Partitions []PartitionMetadata
}

// PartitionMetadata describes one partition's replicas.
type PartitionMetadata struct {
	Err         error
	Partition   int32
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Offline     []int32
}
