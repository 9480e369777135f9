package replica

import (
	"fmt"

	"github.com/partlog/partlog/kafka"
)

// MessageType says which of a Message's payloads it carries.
type MessageType uint8

// The message types.
const (
	// MsgFetch is a follower's fetch: Message.Fetch.
	MsgFetch MessageType = iota + 1
	// MsgFetchResponse is a leader's answer to MsgFetch:
	// Message.FetchResponse.
	MsgFetchResponse
	// MsgOffsetsForLeaderEpoch asks a leader where an epoch ended:
	// Message.EpochRequest.
	MsgOffsetsForLeaderEpoch
	// MsgOffsetsForLeaderEpochResponse answers it: Message.EpochResponse.
	MsgOffsetsForLeaderEpochResponse
)

// String returns the type's name, such as "MsgFetch".
func (t MessageType) String() string {
	switch t {
	case MsgFetch:
		return "MsgFetch"
	case MsgFetchResponse:
		return "MsgFetchResponse"
	case MsgOffsetsForLeaderEpoch:
		return "MsgOffsetsForLeaderEpoch"
	case MsgOffsetsForLeaderEpochResponse:
		return "MsgOffsetsForLeaderEpochResponse"
	}
	return fmt.Sprintf("MessageType(%d)", t)
}

// Message is what replicas of one partition say to each other: one
// partition's part of a transport request or answer, addressed by node id.
// A driver may gather the messages of many partitions bound for one node
// into one kafka.ReplicaFetchRequest, as Kafka's fetcher threads do.
//
// Exactly the payload that Type names is set.
type Message struct {
	// Type says which of the payloads below is set.
	Type MessageType
	// From and To are the sending and receiving nodes' ids.
	From, To int32
	// Seq pairs an answer with its request: an answer carries the Seq of
	// the request it answers, and a follower ignores answers to fetches it
	// no longer waits for (duplicated, delayed or reordered ones, or ones
	// sent before it restarted: see Options.BrokerEpoch).
	Seq uint64

	// Fetch is a follower's fetch of one partition (MsgFetch).
	Fetch *kafka.ReplicaFetchPartition
	// FetchResponse is the leader's answer to a Fetch (MsgFetchResponse).
	FetchResponse *kafka.ReplicaFetchPartitionResponse
	// EpochRequest asks where the leader's log ends for an epoch
	// (OffsetForLeaderEpoch), before a follower truncates.
	EpochRequest *kafka.OffsetForLeaderEpochPartition
	// EpochResponse answers an EpochRequest.
	EpochResponse *kafka.OffsetForLeaderEpochPartitionResponse
}

// String describes m briefly, for logs and failing tests.
func (m Message) String() string {
	s := fmt.Sprintf("%s %d->%d seq=%d", m.Type, m.From, m.To, m.Seq)
	switch {
	case m.Fetch != nil:
		f := m.Fetch
		s += fmt.Sprintf(" epoch=%d offset=%d last-epoch=%d", f.CurrentLeaderEpoch, f.FetchOffset, f.LastFetchedEpoch)
	case m.FetchResponse != nil:
		r := m.FetchResponse
		s += fmt.Sprintf(" epoch=%d hw=%d leo=%d bytes=%d", r.LeaderEpoch, r.HighWatermark, r.LogEndOffset, len(r.Records))
		if r.DivergingEpoch != nil {
			s += fmt.Sprintf(" diverging=%d@%d", r.DivergingEpoch.LeaderEpoch, r.DivergingEpoch.EndOffset)
		}
		if r.Err != nil {
			s += " err=" + r.Err.Error()
		}
	}
	return s
}
