package transport

import (
	"context"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareGroupOffsetsClient is the optional interface of a handler that
// administers the offsets of share groups (KIP-932):
// DescribeShareGroupOffsets, AlterShareGroupOffsets and
// DeleteShareGroupOffsets (90-92), sent to the group's coordinator, which
// reads, initializes or deletes the share partitions' state at their
// share coordinators. It is apart from ShareGroupClient: these are an
// administrator's calls, not a member's. Topics are named by name on the
// wire; answers carry their ids.
//
// Version 0 of each is served, as Kafka 4.1 serves them; version 1 of
// DescribeShareGroupOffsets (KIP-1226's lag) is not.
type ShareGroupOffsetsClient interface {
	DescribeShareGroupOffsets(ctx context.Context, req *DescribeShareGroupOffsetsRequest) (*DescribeShareGroupOffsetsResponse, error)
	AlterShareGroupOffsets(ctx context.Context, req *AlterShareGroupOffsetsRequest) (*AlterShareGroupOffsetsResponse, error)
	DeleteShareGroupOffsets(ctx context.Context, req *DeleteShareGroupOffsetsRequest) (*DeleteShareGroupOffsetsResponse, error)
}

var _ ShareGroupOffsetsClient = (*TCPClient)(nil)

func isShareGroupOffsetsClient(h Client) bool { _, ok := h.(ShareGroupOffsetsClient); return ok }

// TopicPartitions are partitions of a topic named by its name.
type TopicPartitions struct {
	// Topic is the topic's name.
	Topic string
	// Partitions are the partitions' indexes.
	Partitions []int32
}

// DescribeShareGroupOffsetsRequest asks for the share-partition start
// offsets of share groups.
type DescribeShareGroupOffsetsRequest struct {
	// Groups are the groups asked about.
	Groups []DescribeShareGroupOffsetsGroup
}

// DescribeShareGroupOffsetsGroup is one group of a
// DescribeShareGroupOffsets.
type DescribeShareGroupOffsetsGroup struct {
	// Group is the group id.
	Group string
	// Topics are the partitions asked about; nil asks about every
	// partition whose share state the group has initialized.
	Topics []TopicPartitions
}

// DescribeShareGroupOffsetsResponse answers a DescribeShareGroupOffsets.
type DescribeShareGroupOffsetsResponse struct {
	// Groups answer the request's groups.
	Groups []DescribeShareGroupOffsetsGroupResult
}

// DescribeShareGroupOffsetsGroupResult answers one group.
type DescribeShareGroupOffsetsGroupResult struct {
	// Group is the group id.
	Group string
	// Err is nil, or why the group is not described:
	// kafka.ErrGroupAuthorizationFailed, ErrNotCoordinator, ...
	Err error
	// Topics answer its topics.
	Topics []DescribeShareGroupOffsetsTopicResult
}

// DescribeShareGroupOffsetsTopicResult answers one topic.
type DescribeShareGroupOffsetsTopicResult struct {
	// Topic is the topic's name.
	Topic string
	// TopicID is its id; zero for a topic that does not exist.
	TopicID [16]byte
	// Partitions answer its partitions.
	Partitions []DescribeShareGroupOffsetsPartitionResult
}

// DescribeShareGroupOffsetsPartitionResult is one share partition's
// start offset.
type DescribeShareGroupOffsetsPartitionResult struct {
	// Partition is the partition's index.
	Partition int32
	// StartOffset is the share-partition start offset; -1 when the
	// share partition has none (no state, or not known yet).
	StartOffset int64
	// LeaderEpoch is the leader epoch of the partition as the share
	// coordinator knows it; -1 when not known.
	LeaderEpoch int32
	// Lag is how many records from StartOffset to the partition's high
	// watermark the group has not finished with (KIP-1226, version 1 on;
	// not Acknowledged or Archived); -1 when not known.
	Lag int64
	// Err is nil, or why the partition is not described:
	// kafka.ErrTopicAuthorizationFailed, ...
	Err error
}

// AlterShareGroupOffsetsRequest sets the share-partition start offsets
// of an empty share group, which is created when it does not exist.
type AlterShareGroupOffsetsRequest struct {
	// Group is the group id.
	Group string
	// Topics are the partitions and the start offsets they are to have.
	Topics []AlterShareGroupOffsetsTopic
}

// AlterShareGroupOffsetsTopic is a topic of an AlterShareGroupOffsets.
type AlterShareGroupOffsetsTopic struct {
	// Topic is the topic's name.
	Topic string
	// Partitions are its partitions and their start offsets.
	Partitions []AlterShareGroupOffsetsPartition
}

// AlterShareGroupOffsetsPartition is one partition's new start offset.
type AlterShareGroupOffsetsPartition struct {
	// Partition is the partition's index.
	Partition int32
	// StartOffset is the share-partition start offset it is to have.
	StartOffset int64
}

// AlterShareGroupOffsetsResponse answers an AlterShareGroupOffsets.
type AlterShareGroupOffsetsResponse struct {
	// Err is nil, or why nothing was altered: kafka.ErrNonEmptyGroup,
	// ErrGroupIDNotFound, ErrGroupAuthorizationFailed, ErrNotCoordinator, ...
	Err error
	// Topics answer the request's topics.
	Topics []AlterShareGroupOffsetsTopicResult
}

// AlterShareGroupOffsetsTopicResult answers one topic.
type AlterShareGroupOffsetsTopicResult struct {
	// Topic is the topic's name.
	Topic string
	// TopicID is its id; zero for a topic that does not exist.
	TopicID [16]byte
	// Partitions answer its partitions.
	Partitions []ShareOffsetsPartitionResult
}

// ShareOffsetsPartitionResult answers one partition of an
// AlterShareGroupOffsets.
type ShareOffsetsPartitionResult struct {
	// Partition is the partition's index.
	Partition int32
	// Err is nil, or why the partition was not altered:
	// kafka.ErrUnknownTopicOrPartition, ErrTopicAuthorizationFailed, the
	// share coordinator's error, ...
	Err error
}

// DeleteShareGroupOffsetsRequest deletes the share state of whole topics
// of an empty share group.
type DeleteShareGroupOffsetsRequest struct {
	// Group is the group id.
	Group string
	// Topics are the topics' names.
	Topics []string
}

// DeleteShareGroupOffsetsResponse answers a DeleteShareGroupOffsets.
type DeleteShareGroupOffsetsResponse struct {
	// Err is nil, or why nothing was deleted: kafka.ErrNonEmptyGroup,
	// ErrGroupIDNotFound, ErrGroupAuthorizationFailed, ErrNotCoordinator, ...
	Err error
	// Topics answer the request's topics.
	Topics []DeleteShareGroupOffsetsTopicResult
}

// DeleteShareGroupOffsetsTopicResult answers one topic.
type DeleteShareGroupOffsetsTopicResult struct {
	// Topic is the topic's name.
	Topic string
	// TopicID is its id; zero when not known.
	TopicID [16]byte
	// Err is nil, or why the topic's share state was not deleted:
	// kafka.ErrUnknownTopicOrPartition (no such topic, or no state),
	// ErrTopicAuthorizationFailed, the share coordinator's error, ...
	Err error
}

// DescribeShareGroupOffsets sends a DescribeShareGroupOffsets request.
func (c *TCPClient) DescribeShareGroupOffsets(ctx context.Context, req *DescribeShareGroupOffsetsRequest) (*DescribeShareGroupOffsetsResponse, error) {
	return roundTrip(ctx, c, connOther, 90, req, describeShareGroupOffsetsToWire, describeShareGroupOffsetsResponseFromWire)
}

// AlterShareGroupOffsets sends an AlterShareGroupOffsets request.
func (c *TCPClient) AlterShareGroupOffsets(ctx context.Context, req *AlterShareGroupOffsetsRequest) (*AlterShareGroupOffsetsResponse, error) {
	return roundTrip(ctx, c, connOther, 91, req, alterShareGroupOffsetsToWire, alterShareGroupOffsetsResponseFromWire)
}

// DeleteShareGroupOffsets sends a DeleteShareGroupOffsets request.
func (c *TCPClient) DeleteShareGroupOffsets(ctx context.Context, req *DeleteShareGroupOffsetsRequest) (*DeleteShareGroupOffsetsResponse, error) {
	return roundTrip(ctx, c, connOther, 92, req, deleteShareGroupOffsetsToWire, deleteShareGroupOffsetsResponseFromWire)
}

// dispatchShareGroupOffsets answers the share group offsets APIs with h,
// or reports that req is none of them.
func dispatchShareGroupOffsets(ctx context.Context, h ShareGroupOffsetsClient, req kmsg.Request, version int16) (kmsg.Response, bool, error) {
	var resp kmsg.Response
	var err error
	switch req := req.(type) {
	case *kmsg.DescribeShareGroupOffsetsRequest:
		resp, err = answerWith(ctx, h.DescribeShareGroupOffsets, describeShareGroupOffsetsFromWire(req), describeShareGroupOffsetsResponseToWire, version)
	case *kmsg.AlterShareGroupOffsetsRequest:
		resp, err = answerWith(ctx, h.AlterShareGroupOffsets, alterShareGroupOffsetsFromWire(req), alterShareGroupOffsetsResponseToWire, version)
	case *kmsg.DeleteShareGroupOffsetsRequest:
		resp, err = answerWith(ctx, h.DeleteShareGroupOffsets, deleteShareGroupOffsetsFromWire(req), deleteShareGroupOffsetsResponseToWire, version)
	default:
		return nil, false, nil
	}
	return resp, true, err
}

// Authorization, as Kafka's KafkaApis checks the share group offsets
// APIs.

// authorizeShareGroupOffsets checks a share group offsets request:
//
//   - DescribeShareGroupOffsets: DESCRIBE on each group, else the group is
//     GROUP_AUTHORIZATION_FAILED; DESCRIBE on each topic named, else its
//     partitions are TOPIC_AUTHORIZATION_FAILED with start offset -1 (in a
//     group the handler did not fail); a group asked about all its topics
//     is answered without the topics the principal may not describe.
//   - AlterShareGroupOffsets: READ on the group, else the whole request is
//     GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions
//     are TOPIC_AUTHORIZATION_FAILED.
//   - DeleteShareGroupOffsets: DELETE on the group, else the whole request
//     is GROUP_AUTHORIZATION_FAILED; READ on each topic, else the topic is
//     TOPIC_AUTHORIZATION_FAILED.
//
// Refused topics are not added to an answer whose top-level error is set,
// as Kafka answers such a request with the error alone.
func authorizeShareGroupOffsets(g guard, req kmsg.Request, version int16) authorization {
	switch req := req.(type) {
	case *kmsg.DescribeShareGroupOffsetsRequest:
		return authorizeDescribeShareGroupOffsets(g, req, version)
	case *kmsg.AlterShareGroupOffsetsRequest:
		if !g.may(auth.ReadOperation, auth.GroupResource, req.GroupID) {
			return refusedWhole(req, version, kafka.ErrGroupAuthorizationFailed)
		}
		read := g.mayTopic(auth.ReadOperation)
		kept, refused := splitBy(req.Topics, func(t kmsg.AlterShareGroupOffsetsRequestTopic) bool { return read(t.Topic) })
		if len(refused) == 0 {
			return authorization{}
		}
		req.Topics = kept
		// The handler is asked even with no topic left: the group is
		// checked (and made) all the same, as Kafka's coordinator does.
		return authorization{merge: func(r kmsg.Response) {
			resp := r.(*kmsg.AlterShareGroupOffsetsResponse)
			if resp.ErrorCode != 0 {
				return
			}
			for _, t := range refused {
				rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, kafka.ErrTopicAuthorizationFailed.Code, errorMessage(kafka.ErrTopicAuthorizationFailed)
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}}
	case *kmsg.DeleteShareGroupOffsetsRequest:
		if !g.may(auth.DeleteOperation, auth.GroupResource, req.GroupID) {
			return refusedWhole(req, version, kafka.ErrGroupAuthorizationFailed)
		}
		read := g.mayTopic(auth.ReadOperation)
		kept, refused := splitBy(req.Topics, func(t kmsg.DeleteShareGroupOffsetsRequestTopic) bool { return read(t.Topic) })
		if len(refused) == 0 {
			return authorization{}
		}
		req.Topics = kept
		return authorization{merge: func(r kmsg.Response) {
			resp := r.(*kmsg.DeleteShareGroupOffsetsResponse)
			if resp.ErrorCode != 0 {
				return
			}
			for _, t := range refused {
				rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
				rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, kafka.ErrTopicAuthorizationFailed.Code, errorMessage(kafka.ErrTopicAuthorizationFailed)
				resp.Topics = append(resp.Topics, rt)
			}
		}}
	}
	return authorization{}
}

// authorizeDescribeShareGroupOffsets checks a DescribeShareGroupOffsets;
// see authorizeShareGroupOffsets.
func authorizeDescribeShareGroupOffsets(g guard, req *kmsg.DescribeShareGroupOffsetsRequest, version int16) authorization {
	kept, refusedGroups := splitBy(req.Groups, func(rg kmsg.DescribeShareGroupOffsetsRequestGroup) bool {
		return g.may(auth.DescribeOperation, auth.GroupResource, rg.GroupID)
	})
	describe := g.mayTopic(auth.DescribeOperation)
	refusedTopics := map[string][]kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}
	all := map[string]bool{}
	for i := range kept {
		rg := &kept[i]
		if rg.Topics == nil {
			all[rg.GroupID] = true
			continue
		}
		var refused []kmsg.DescribeShareGroupOffsetsRequestGroupTopic
		rg.Topics, refused = splitBy(rg.Topics, func(t kmsg.DescribeShareGroupOffsetsRequestGroupTopic) bool { return describe(t.Topic) })
		if rg.Topics == nil {
			rg.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{} // not "all"
		}
		refusedTopics[rg.GroupID] = append(refusedTopics[rg.GroupID], refused...)
	}
	req.Groups = kept
	return partly(req, version, len(kept), func(r kmsg.Response) {
		resp := r.(*kmsg.DescribeShareGroupOffsetsResponse)
		for i := range resp.Groups {
			wg := &resp.Groups[i]
			if wg.ErrorCode != 0 {
				continue
			}
			if all[wg.GroupID] {
				wg.Topics, _ = splitBy(wg.Topics, func(t kmsg.DescribeShareGroupOffsetsResponseGroupTopic) bool { return describe(t.Topic) })
				continue
			}
			for _, t := range refusedTopics[wg.GroupID] {
				wt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
				wt.Topic = t.Topic
				for _, p := range t.Partitions {
					wp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
					wp.Partition, wp.StartOffset = p, -1
					wp.ErrorCode, wp.ErrorMessage = kafka.ErrTopicAuthorizationFailed.Code, errorMessage(kafka.ErrTopicAuthorizationFailed)
					wt.Partitions = append(wt.Partitions, wp)
				}
				wg.Topics = append(wg.Topics, wt)
			}
		}
		for _, rg := range refusedGroups {
			wg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			wg.GroupID, wg.ErrorCode = rg.GroupID, kafka.ErrGroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, wg)
		}
	})
}

// To and from the wire.

func describeShareGroupOffsetsToWire(r *DescribeShareGroupOffsetsRequest, version int16) *kmsg.DescribeShareGroupOffsetsRequest {
	w := versioned(kmsg.NewPtrDescribeShareGroupOffsetsRequest(), version)
	w.Groups = each(orEmpty(r.Groups), func(g DescribeShareGroupOffsetsGroup) kmsg.DescribeShareGroupOffsetsRequestGroup {
		return kmsg.DescribeShareGroupOffsetsRequestGroup{GroupID: g.Group,
			Topics: each(g.Topics, func(t TopicPartitions) kmsg.DescribeShareGroupOffsetsRequestGroupTopic {
				return kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: t.Topic, Partitions: orEmpty(t.Partitions)}
			})}
	})
	return w
}

func describeShareGroupOffsetsFromWire(w *kmsg.DescribeShareGroupOffsetsRequest) *DescribeShareGroupOffsetsRequest {
	return &DescribeShareGroupOffsetsRequest{Groups: each(orEmpty(w.Groups), func(g kmsg.DescribeShareGroupOffsetsRequestGroup) DescribeShareGroupOffsetsGroup {
		return DescribeShareGroupOffsetsGroup{Group: g.GroupID,
			Topics: each(g.Topics, func(t kmsg.DescribeShareGroupOffsetsRequestGroupTopic) TopicPartitions {
				return TopicPartitions{Topic: t.Topic, Partitions: orEmpty(t.Partitions)}
			})}
	})}
}

func describeShareGroupOffsetsResponseToWire(r *DescribeShareGroupOffsetsResponse, version int16) *kmsg.DescribeShareGroupOffsetsResponse {
	w := versioned(kmsg.NewPtrDescribeShareGroupOffsetsResponse(), version)
	w.Groups = each(orEmpty(r.Groups), func(g DescribeShareGroupOffsetsGroupResult) kmsg.DescribeShareGroupOffsetsResponseGroup {
		return kmsg.DescribeShareGroupOffsetsResponseGroup{GroupID: g.Group, ErrorCode: kafka.CodeOf(g.Err), ErrorMessage: errorMessage(g.Err),
			Topics: each(orEmpty(g.Topics), func(t DescribeShareGroupOffsetsTopicResult) kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
				return kmsg.DescribeShareGroupOffsetsResponseGroupTopic{Topic: t.Topic, TopicID: t.TopicID,
					Partitions: each(orEmpty(t.Partitions), func(p DescribeShareGroupOffsetsPartitionResult) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
						wp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
						wp.Partition, wp.StartOffset, wp.LeaderEpoch, wp.Lag = p.Partition, p.StartOffset, p.LeaderEpoch, p.Lag
						wp.ErrorCode, wp.ErrorMessage = kafka.CodeOf(p.Err), errorMessage(p.Err)
						return wp
					})}
			})}
	})
	return w
}

func describeShareGroupOffsetsResponseFromWire(w *kmsg.DescribeShareGroupOffsetsResponse) *DescribeShareGroupOffsetsResponse {
	return &DescribeShareGroupOffsetsResponse{Groups: each(orEmpty(w.Groups), func(g kmsg.DescribeShareGroupOffsetsResponseGroup) DescribeShareGroupOffsetsGroupResult {
		return DescribeShareGroupOffsetsGroupResult{Group: g.GroupID, Err: wireError(g.ErrorCode, g.ErrorMessage),
			Topics: each(orEmpty(g.Topics), func(t kmsg.DescribeShareGroupOffsetsResponseGroupTopic) DescribeShareGroupOffsetsTopicResult {
				return DescribeShareGroupOffsetsTopicResult{Topic: t.Topic, TopicID: t.TopicID,
					Partitions: each(orEmpty(t.Partitions), func(p kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition) DescribeShareGroupOffsetsPartitionResult {
						return DescribeShareGroupOffsetsPartitionResult{Partition: p.Partition, StartOffset: p.StartOffset, LeaderEpoch: p.LeaderEpoch,
							Lag: p.Lag, Err: wireError(p.ErrorCode, p.ErrorMessage)}
					})}
			})}
	})}
}

func alterShareGroupOffsetsToWire(r *AlterShareGroupOffsetsRequest, version int16) *kmsg.AlterShareGroupOffsetsRequest {
	w := versioned(kmsg.NewPtrAlterShareGroupOffsetsRequest(), version)
	w.GroupID = r.Group
	w.Topics = each(orEmpty(r.Topics), func(t AlterShareGroupOffsetsTopic) kmsg.AlterShareGroupOffsetsRequestTopic {
		return kmsg.AlterShareGroupOffsetsRequestTopic{Topic: t.Topic,
			Partitions: each(orEmpty(t.Partitions), func(p AlterShareGroupOffsetsPartition) kmsg.AlterShareGroupOffsetsRequestTopicPartition {
				return kmsg.AlterShareGroupOffsetsRequestTopicPartition{Partition: p.Partition, StartOffset: p.StartOffset}
			})}
	})
	return w
}

func alterShareGroupOffsetsFromWire(w *kmsg.AlterShareGroupOffsetsRequest) *AlterShareGroupOffsetsRequest {
	return &AlterShareGroupOffsetsRequest{Group: w.GroupID,
		Topics: each(orEmpty(w.Topics), func(t kmsg.AlterShareGroupOffsetsRequestTopic) AlterShareGroupOffsetsTopic {
			return AlterShareGroupOffsetsTopic{Topic: t.Topic,
				Partitions: each(orEmpty(t.Partitions), func(p kmsg.AlterShareGroupOffsetsRequestTopicPartition) AlterShareGroupOffsetsPartition {
					return AlterShareGroupOffsetsPartition{Partition: p.Partition, StartOffset: p.StartOffset}
				})}
		})}
}

func alterShareGroupOffsetsResponseToWire(r *AlterShareGroupOffsetsResponse, version int16) *kmsg.AlterShareGroupOffsetsResponse {
	w := versioned(kmsg.NewPtrAlterShareGroupOffsetsResponse(), version)
	w.ErrorCode, w.ErrorMessage = kafka.CodeOf(r.Err), errorMessage(r.Err)
	w.Topics = each(orEmpty(r.Topics), func(t AlterShareGroupOffsetsTopicResult) kmsg.AlterShareGroupOffsetsResponseTopic {
		return kmsg.AlterShareGroupOffsetsResponseTopic{Topic: t.Topic, TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p ShareOffsetsPartitionResult) kmsg.AlterShareGroupOffsetsResponseTopicPartition {
				return kmsg.AlterShareGroupOffsetsResponseTopicPartition{Partition: p.Partition, ErrorCode: kafka.CodeOf(p.Err), ErrorMessage: errorMessage(p.Err)}
			})}
	})
	return w
}

func alterShareGroupOffsetsResponseFromWire(w *kmsg.AlterShareGroupOffsetsResponse) *AlterShareGroupOffsetsResponse {
	return &AlterShareGroupOffsetsResponse{Err: wireError(w.ErrorCode, w.ErrorMessage),
		Topics: each(orEmpty(w.Topics), func(t kmsg.AlterShareGroupOffsetsResponseTopic) AlterShareGroupOffsetsTopicResult {
			return AlterShareGroupOffsetsTopicResult{Topic: t.Topic, TopicID: t.TopicID,
				Partitions: each(orEmpty(t.Partitions), func(p kmsg.AlterShareGroupOffsetsResponseTopicPartition) ShareOffsetsPartitionResult {
					return ShareOffsetsPartitionResult{Partition: p.Partition, Err: wireError(p.ErrorCode, p.ErrorMessage)}
				})}
		})}
}

func deleteShareGroupOffsetsToWire(r *DeleteShareGroupOffsetsRequest, version int16) *kmsg.DeleteShareGroupOffsetsRequest {
	w := versioned(kmsg.NewPtrDeleteShareGroupOffsetsRequest(), version)
	w.GroupID = r.Group
	w.Topics = each(orEmpty(r.Topics), func(t string) kmsg.DeleteShareGroupOffsetsRequestTopic {
		return kmsg.DeleteShareGroupOffsetsRequestTopic{Topic: t}
	})
	return w
}

func deleteShareGroupOffsetsFromWire(w *kmsg.DeleteShareGroupOffsetsRequest) *DeleteShareGroupOffsetsRequest {
	return &DeleteShareGroupOffsetsRequest{Group: w.GroupID,
		Topics: each(orEmpty(w.Topics), func(t kmsg.DeleteShareGroupOffsetsRequestTopic) string { return t.Topic })}
}

func deleteShareGroupOffsetsResponseToWire(r *DeleteShareGroupOffsetsResponse, version int16) *kmsg.DeleteShareGroupOffsetsResponse {
	w := versioned(kmsg.NewPtrDeleteShareGroupOffsetsResponse(), version)
	w.ErrorCode, w.ErrorMessage = kafka.CodeOf(r.Err), errorMessage(r.Err)
	w.Topics = each(orEmpty(r.Topics), func(t DeleteShareGroupOffsetsTopicResult) kmsg.DeleteShareGroupOffsetsResponseTopic {
		return kmsg.DeleteShareGroupOffsetsResponseTopic{Topic: t.Topic, TopicID: t.TopicID, ErrorCode: kafka.CodeOf(t.Err), ErrorMessage: errorMessage(t.Err)}
	})
	return w
}

func deleteShareGroupOffsetsResponseFromWire(w *kmsg.DeleteShareGroupOffsetsResponse) *DeleteShareGroupOffsetsResponse {
	return &DeleteShareGroupOffsetsResponse{Err: wireError(w.ErrorCode, w.ErrorMessage),
		Topics: each(orEmpty(w.Topics), func(t kmsg.DeleteShareGroupOffsetsResponseTopic) DeleteShareGroupOffsetsTopicResult {
			return DeleteShareGroupOffsetsTopicResult{Topic: t.Topic, TopicID: t.TopicID, Err: wireError(t.ErrorCode, t.ErrorMessage)}
		})}
}
