// Package kafka is Kafka's vocabulary, apart from the wire: its protocol
// errors as values (with their codes, names and retriability), acks,
// isolation levels, the ids, timestamps and epochs with special meanings,
// and the messages replicas send each other (replication.go). The storage engine (partition, replica) speaks it without
// importing the TCP stack or the wire codec (transport), as franz-go keeps
// kerr apart from kgo.
package kafka

import (
	"fmt"
	"strconv"
)

// Acks is how many replicas must have a produced batch before the leader
// answers (Kafka's acks).
type Acks int16

// The acks settings.
const (
	// AcksNone: the producer does not wait for an answer.
	AcksNone Acks = 0
	// AcksLeader: the leader has written the batch to its log.
	AcksLeader Acks = 1
	// AcksAll: every in-sync replica has the batch, and there are at least
	// min.insync.replicas of them.
	AcksAll Acks = -1
)

// Check returns ErrInvalidRequiredAcks for acks other than -1 (all), 0 and
// 1: a produce request is refused before anything is written.
func (a Acks) Check() error {
	if a != AcksAll && a != AcksLeader && a != AcksNone {
		return fmt.Errorf("%w: %d", ErrInvalidRequiredAcks, a)
	}
	return nil
}

// CheckInSync refuses an acks=all append to tp with ErrNotEnoughReplicas
// while its ISR (isr, the in-sync replicas' ids) is smaller than
// min.insync.replicas (minInsync); other acks are never refused.
func CheckInSync(tp TopicPartition, acks Acks, isr []int32, minInsync int) error {
	if acks == AcksAll && len(isr) < minInsync {
		return fmt.Errorf("%w: %s has ISR %v, min.insync.replicas is %d", ErrNotEnoughReplicas, tp, isr, minInsync)
	}
	return nil
}

// IsolationLevel says which records a fetch may return.
type IsolationLevel int8

// The isolation levels.
const (
	// ReadUncommitted returns every record below the high watermark.
	ReadUncommitted IsolationLevel = 0
	// ReadCommitted stops at the last stable offset and leaves out
	// aborted transactions.
	ReadCommitted IsolationLevel = 1
)

// ConsumerReplicaID is the replica id of a fetch or list offsets request
// sent by a consumer rather than a follower.
const ConsumerReplicaID int32 = -1

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	// Topic is the topic's name.
	Topic string
	// Partition is the partition's index in the topic, from 0.
	Partition int32
}

// String returns the partition as Kafka names its directory: "topic-0".
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// Special timestamps of a ListOffsetsPartition.
const (
	// LatestTimestamp asks for the offset the next record will get (the
	// high watermark for consumers).
	LatestTimestamp int64 = -1
	// EarliestTimestamp asks for the log start offset.
	EarliestTimestamp int64 = -2
)

// UndefinedEpoch is a leader epoch that names no epoch (Kafka's -1): the
// LastFetchedEpoch of a follower whose log holds no batch, or the answer for
// an epoch a log does not know.
const UndefinedEpoch int32 = -1

// EpochEndOffset names where a leader epoch ended in a log: the offset of
// the first record of the next epoch, or the log end offset for the latest.
// It is the answer of OffsetsForLeaderEpoch and the diverging epoch of a
// fetch answer.
type EpochEndOffset struct {
	// LeaderEpoch is the largest epoch at or below the one asked about
	// that the log knows, or UndefinedEpoch.
	LeaderEpoch int32
	// EndOffset is where LeaderEpoch ended, or -1 with UndefinedEpoch.
	EndOffset int64
}
