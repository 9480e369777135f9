package kafka

// This file holds the requests replicas send each other: the Fetch a
// follower sends its leader (Kafka's Fetch with a replica id, version 12 and
// later, where the answer can carry a diverging epoch: KIP-595's reuse of
// KIP-279's truncation) and OffsetsForLeaderEpoch (KIP-101, KIP-279).

// ReplicaFetchRequest is the Fetch a follower sends the leader of its
// partitions: one entry per partition the follower fetches from that node.
type ReplicaFetchRequest struct {
	// ReplicaID is the follower's node id.
	ReplicaID int32
	// MaxBytes bounds the whole answer; at least one batch is returned even
	// when it is larger.
	MaxBytes int32
	// Partitions are the partitions fetched, with where to read each.
	Partitions []ReplicaFetchPartition
}

// ReplicaFetchPartition asks for one partition's batches from FetchOffset
// (the follower's log end offset, which is also how the leader learns it).
type ReplicaFetchPartition struct {
	// Topic is the partition's topic.
	Topic string
	// Partition is the partition's index in the topic.
	Partition int32
	// CurrentLeaderEpoch is the leader epoch the follower follows. A leader
	// in another epoch answers ErrFencedLeaderEpoch (older) or
	// ErrUnknownLeaderEpoch (newer).
	CurrentLeaderEpoch int32
	// FetchOffset is the follower's log end offset: everything below it is
	// in the follower's log.
	FetchOffset int64
	// LastFetchedEpoch is the leader epoch of the follower's last batch, or
	// UndefinedEpoch. The leader checks it against its own epochs and
	// answers with DivergingEpoch when the logs part.
	LastFetchedEpoch int32
	// LogStartOffset is the follower's log start offset.
	LogStartOffset int64
	// MaxBytes bounds this partition's part of the answer.
	MaxBytes int32
	// ReplicaEpoch is the fetching node's broker epoch (Kafka's
	// ReplicaState.ReplicaEpoch, KIP-903): a leader proposing the follower
	// for the ISR names it, so that the controller refuses the proposal
	// if the node restarted since — perhaps with an empty disk.
	ReplicaEpoch int64
}

// ReplicaFetchResponse answers a ReplicaFetchRequest.
type ReplicaFetchResponse struct {
	// Partitions answers each partition of the request.
	Partitions []ReplicaFetchPartitionResponse
}

// ReplicaFetchPartitionResponse holds one partition's batches for a
// follower, or says how its log diverges from the leader's.
type ReplicaFetchPartitionResponse struct {
	// Topic is the partition's topic, as asked.
	Topic string
	// Partition is the partition's index, as asked.
	Partition int32
	// Err is nil or one of ErrNotLeaderOrFollower, ErrFencedLeaderEpoch,
	// ErrUnknownLeaderEpoch, ErrOffsetOutOfRange (the fetch offset is
	// outside [LogStartOffset, LogEndOffset]).
	Err error
	// LeaderEpoch is the epoch of the answering leader.
	LeaderEpoch int32
	// HighWatermark, LogStartOffset and LogEndOffset are the leader's.
	//
	// HighWatermark is the offset below which records are on every
	// in-sync replica; the follower raises its own to it, capped at its
	// log end offset.
	HighWatermark int64
	// LogStartOffset is the leader's first offset: the follower moves
	// its own log start up to it, and a follower whose log ends below it
	// (ErrOffsetOutOfRange) starts its log over there.
	LogStartOffset int64
	// LogEndOffset is the offset the leader's next record will get; with
	// ErrOffsetOutOfRange, a follower whose log is longer truncates to it.
	LogEndOffset int64
	// DivergingEpoch, when not nil, says the follower's log parts from the
	// leader's: the follower truncates to the smaller of EndOffset and its
	// own end offset for LeaderEpoch, and fetches again. Records is then
	// empty.
	DivergingEpoch *EpochEndOffset
	// Records are whole batches from the leader's log, as stored; the first
	// starts at or before FetchOffset. The receiver owns them.
	Records []byte
}

// OffsetsForLeaderEpochRequest asks a leader where epochs ended in its log
// (Kafka's OffsetsForLeaderEpoch).
type OffsetsForLeaderEpochRequest struct {
	// ReplicaID is the asking follower's node id, or ConsumerReplicaID.
	ReplicaID int32
	// Partitions names each partition and the epoch asked about.
	Partitions []OffsetForLeaderEpochPartition
}

// OffsetForLeaderEpochPartition asks about one epoch of one partition.
type OffsetForLeaderEpochPartition struct {
	// Topic is the partition's topic.
	Topic string
	// Partition is the partition's index in the topic.
	Partition int32
	// CurrentLeaderEpoch is the epoch the asker follows, or -1 to skip the
	// check.
	CurrentLeaderEpoch int32
	// LeaderEpoch is the epoch asked about.
	LeaderEpoch int32
}

// OffsetsForLeaderEpochResponse answers an OffsetsForLeaderEpochRequest.
type OffsetsForLeaderEpochResponse struct {
	// Partitions answers each partition of the request.
	Partitions []OffsetForLeaderEpochPartitionResponse
}

// OffsetForLeaderEpochPartitionResponse says where the epoch asked about
// ended in the leader's log: the largest epoch at or below it that the
// leader knows, and the start of the epoch after that (KIP-279).
type OffsetForLeaderEpochPartitionResponse struct {
	// Topic is the partition's topic, as asked.
	Topic string
	// Partition is the partition's index, as asked.
	Partition int32
	// Err is nil or one of ErrNotLeaderOrFollower, ErrFencedLeaderEpoch,
	// ErrUnknownLeaderEpoch.
	Err error
	EpochEndOffset
}
