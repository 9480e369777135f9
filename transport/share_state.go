package transport

import (
	"context"
	"fmt"

	"github.com/partlog/partlog/auth"
	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareStateClient is the optional interface of a handler that hosts a
// share coordinator (KIP-932): the durable state of share partitions, in
// __share_group_state. InitializeShareGroupState, ReadShareGroupState,
// WriteShareGroupState and DeleteShareGroupState (83-86) are Kafka's
// inter-broker calls from a share partition's leader (or the group
// coordinator) to the share partition's coordinator, the leader of its
// partition of __share_group_state, found with FindCoordinator
// (CoordinatorShare). A server asks CLUSTER_ACTION on the cluster for
// them, as Kafka does.
//
// A share partition is a group, a topic id and a partition; a request
// names one group and any of its topics' partitions, and the answer has
// an error (or the state) for each: kafka.ErrNotCoordinator for a
// partition the node does not coordinate, ErrCoordinatorLoadInProgress
// while it loads it, ErrFencedStateEpoch, ErrFencedLeaderEpoch, ...
type ShareStateClient interface {
	InitializeShareGroupState(ctx context.Context, req *InitializeShareGroupStateRequest) (*InitializeShareGroupStateResponse, error)
	ReadShareGroupState(ctx context.Context, req *ReadShareGroupStateRequest) (*ReadShareGroupStateResponse, error)
	WriteShareGroupState(ctx context.Context, req *WriteShareGroupStateRequest) (*WriteShareGroupStateResponse, error)
	DeleteShareGroupState(ctx context.Context, req *DeleteShareGroupStateRequest) (*DeleteShareGroupStateResponse, error)
}

func isShareStateClient(h Client) bool { _, ok := h.(ShareStateClient); return ok }

// firstShareFindCoordinator is the first version of FindCoordinator that
// may carry CoordinatorShare; Kafka answers an older one INVALID_REQUEST.
const firstShareFindCoordinator = 6

// shareKeyTooOld answers a share partition's key in a FindCoordinator
// older than version 6, as Kafka does.
func shareKeyTooOld(context.Context, *FindCoordinatorRequest) (*FindCoordinatorResponse, error) {
	return &FindCoordinatorResponse{Err: fmt.Errorf("%w: share partitions' coordinators are found from FindCoordinator version %d",
		kafka.ErrInvalidRequest, firstShareFindCoordinator), NodeID: -1, Port: -1}, nil
}

// InitializeShareGroupStateRequest initializes (or resets) share
// partitions' state.
type InitializeShareGroupStateRequest struct {
	// Group is the share group's id.
	Group string
	// Topics are the share partitions, by topic.
	Topics []InitializeShareGroupStateTopic
}

// InitializeShareGroupStateTopic is a topic of an
// InitializeShareGroupState.
type InitializeShareGroupStateTopic struct {
	// TopicID is the topic's id.
	TopicID [16]byte
	// Partitions are its share partitions.
	Partitions []InitializeShareGroupStatePartition
}

// InitializeShareGroupStatePartition initializes one share partition.
type InitializeShareGroupStatePartition struct {
	// Partition is the partition's index.
	Partition int32
	// StateEpoch is the state epoch the state starts over at.
	StateEpoch int32
	// StartOffset is the share-partition start offset; -1 when not known
	// yet.
	StartOffset int64
}

// InitializeShareGroupStateResponse answers an InitializeShareGroupState.
type InitializeShareGroupStateResponse struct {
	// Topics answer the request's topics.
	Topics []ShareStateTopicResult
}

// ShareStateTopicResult answers a topic of an InitializeShareGroupState,
// WriteShareGroupState or DeleteShareGroupState.
type ShareStateTopicResult struct {
	// TopicID is the topic's id.
	TopicID [16]byte
	// Partitions answer its share partitions.
	Partitions []ShareStatePartitionResult
}

// ShareStatePartitionResult answers one share partition.
type ShareStatePartitionResult struct {
	// Partition is the partition's index.
	Partition int32
	// Err is nil, or why the call failed for the share partition:
	// kafka.ErrNotCoordinator, ErrCoordinatorLoadInProgress,
	// ErrFencedStateEpoch, ErrFencedLeaderEpoch, ErrInvalidRequest, ...
	Err error
}

// ReadShareGroupStateRequest reads share partitions' state, as their
// leader does when it takes them over.
type ReadShareGroupStateRequest struct {
	// Group is the share group's id.
	Group string
	// Topics are the share partitions, by topic.
	Topics []ReadShareGroupStateTopic
}

// ReadShareGroupStateTopic is a topic of a ReadShareGroupState.
type ReadShareGroupStateTopic struct {
	// TopicID is the topic's id.
	TopicID [16]byte
	// Partitions are its share partitions.
	Partitions []ReadShareGroupStatePartition
}

// ReadShareGroupStatePartition reads one share partition.
type ReadShareGroupStatePartition struct {
	// Partition is the partition's index.
	Partition int32
	// LeaderEpoch is the reader's leader epoch, which the coordinator
	// records when it is newer (fencing older leaders); -1 reads without
	// one.
	LeaderEpoch int32
}

// ReadShareGroupStateResponse answers a ReadShareGroupState.
type ReadShareGroupStateResponse struct {
	// Topics answer the request's topics.
	Topics []ReadShareGroupStateTopicResult
}

// ReadShareGroupStateTopicResult answers a topic of a
// ReadShareGroupState.
type ReadShareGroupStateTopicResult struct {
	// TopicID is the topic's id.
	TopicID [16]byte
	// Partitions answer its share partitions.
	Partitions []ReadShareGroupStatePartitionResult
}

// ReadShareGroupStatePartitionResult is one share partition's state. The
// wire carries no leader epoch in it.
type ReadShareGroupStatePartitionResult struct {
	// Partition is the partition's index.
	Partition int32
	// Err is nil, or why the state was not read (see
	// ShareStatePartitionResult.Err); the other fields are then zero.
	Err error
	// StateEpoch is the state epoch.
	StateEpoch int32
	// StartOffset is the share-partition start offset; -1 when not known
	// yet.
	StartOffset int64
	// StateBatches are the delivery states of offsets from StartOffset
	// on, sorted and not overlapping.
	StateBatches []ShareStateBatch
}

// ShareStateBatch is the delivery state of a range of offsets of a share
// partition.
type ShareStateBatch struct {
	// FirstOffset and LastOffset are the range's first and last offsets,
	// both included.
	FirstOffset, LastOffset int64
	// DeliveryState is the records' state, as KIP-932 numbers it: 0
	// Available, 2 Acknowledged, 4 Archived (1 Acquired and 3 Archiving
	// are not persisted).
	DeliveryState int8
	// DeliveryCount is how many times the records were delivered.
	DeliveryCount int16
}

// WriteShareGroupStateRequest writes changes of share partitions' state.
type WriteShareGroupStateRequest struct {
	// Group is the share group's id.
	Group string
	// Topics are the share partitions, by topic.
	Topics []WriteShareGroupStateTopic
}

// WriteShareGroupStateTopic is a topic of a WriteShareGroupState.
type WriteShareGroupStateTopic struct {
	// TopicID is the topic's id.
	TopicID [16]byte
	// Partitions are its share partitions' writes.
	Partitions []WriteShareGroupStatePartition
}

// WriteShareGroupStatePartition is a write of one share partition.
type WriteShareGroupStatePartition struct {
	// Partition is the partition's index.
	Partition int32
	// StateEpoch is the writer's state epoch.
	StateEpoch int32
	// LeaderEpoch is the writer's leader epoch; -1 keeps the stored one.
	LeaderEpoch int32
	// StartOffset is the new share-partition start offset; -1 leaves it.
	StartOffset int64
	// StateBatches are the delivery states to record.
	StateBatches []ShareStateBatch
}

// WriteShareGroupStateResponse answers a WriteShareGroupState.
type WriteShareGroupStateResponse struct {
	// Topics answer the request's topics.
	Topics []ShareStateTopicResult
}

// DeleteShareGroupStateRequest deletes share partitions' state.
type DeleteShareGroupStateRequest struct {
	// Group is the share group's id.
	Group string
	// Topics are the share partitions, by topic.
	Topics []TopicIDPartitions
}

// DeleteShareGroupStateResponse answers a DeleteShareGroupState.
type DeleteShareGroupStateResponse struct {
	// Topics answer the request's topics.
	Topics []ShareStateTopicResult
}

// InitializeShareGroupState sends an InitializeShareGroupState request.
// Like the other share state calls it goes on the connection of the calls
// that wait for no group: it waits for the coordinator's replicated write.
func (c *TCPClient) InitializeShareGroupState(ctx context.Context, req *InitializeShareGroupStateRequest) (*InitializeShareGroupStateResponse, error) {
	return roundTrip(ctx, c, connOther, 83, req, initializeShareGroupStateToWire, initializeShareGroupStateResponseFromWire)
}

// ReadShareGroupState sends a ReadShareGroupState request.
func (c *TCPClient) ReadShareGroupState(ctx context.Context, req *ReadShareGroupStateRequest) (*ReadShareGroupStateResponse, error) {
	return roundTrip(ctx, c, connOther, 84, req, readShareGroupStateToWire, readShareGroupStateResponseFromWire)
}

// WriteShareGroupState sends a WriteShareGroupState request.
func (c *TCPClient) WriteShareGroupState(ctx context.Context, req *WriteShareGroupStateRequest) (*WriteShareGroupStateResponse, error) {
	return roundTrip(ctx, c, connOther, 85, req, writeShareGroupStateToWire, writeShareGroupStateResponseFromWire)
}

// DeleteShareGroupState sends a DeleteShareGroupState request.
func (c *TCPClient) DeleteShareGroupState(ctx context.Context, req *DeleteShareGroupStateRequest) (*DeleteShareGroupStateResponse, error) {
	return roundTrip(ctx, c, connOther, 86, req, deleteShareGroupStateToWire, deleteShareGroupStateResponseFromWire)
}

// dispatchShareState answers the share state APIs with h, or reports that
// req is none of them.
func dispatchShareState(ctx context.Context, h ShareStateClient, req kmsg.Request, version int16) (kmsg.Response, bool, error) {
	var resp kmsg.Response
	var err error
	switch req := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		resp, err = answerWith(ctx, h.InitializeShareGroupState, initializeShareGroupStateFromWire(req), initializeShareGroupStateResponseToWire, version)
	case *kmsg.ReadShareGroupStateRequest:
		resp, err = answerWith(ctx, h.ReadShareGroupState, readShareGroupStateFromWire(req), readShareGroupStateResponseToWire, version)
	case *kmsg.WriteShareGroupStateRequest:
		resp, err = answerWith(ctx, h.WriteShareGroupState, writeShareGroupStateFromWire(req), writeShareGroupStateResponseToWire, version)
	case *kmsg.DeleteShareGroupStateRequest:
		resp, err = answerWith(ctx, h.DeleteShareGroupState, deleteShareGroupStateFromWire(req), deleteShareGroupStateResponseToWire, version)
	default:
		return nil, false, nil
	}
	return resp, true, err
}

// authorizeShareState checks a share state request as Kafka's KafkaApis
// does: CLUSTER_ACTION on the cluster, else every share partition of the
// request is answered CLUSTER_AUTHORIZATION_FAILED (the responses'
// toGlobalErrorResponse).
func authorizeShareState(g guard, req kmsg.Request, version int16) authorization {
	if g.mayCluster(auth.ClusterActionOperation) {
		return authorization{}
	}
	failed := kafka.ErrClusterAuthorizationFailed
	code, msg := failed.Code, errorMessage(failed)
	resp := emptyResponse(req, version)
	switch req := req.(type) {
	case *kmsg.InitializeShareGroupStateRequest:
		w := resp.(*kmsg.InitializeShareGroupStateResponse)
		w.Topics = each(req.Topics, func(t kmsg.InitializeShareGroupStateRequestTopic) kmsg.InitializeShareGroupStateResponseTopic {
			return kmsg.InitializeShareGroupStateResponseTopic{TopicID: t.TopicID,
				Partitions: each(t.Partitions, func(p kmsg.InitializeShareGroupStateRequestTopicPartition) kmsg.InitializeShareGroupStateResponseTopicPartition {
					return kmsg.InitializeShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code, ErrorMessage: msg}
				})}
		})
	case *kmsg.ReadShareGroupStateRequest:
		w := resp.(*kmsg.ReadShareGroupStateResponse)
		w.Topics = each(req.Topics, func(t kmsg.ReadShareGroupStateRequestTopic) kmsg.ReadShareGroupStateResponseTopic {
			return kmsg.ReadShareGroupStateResponseTopic{TopicID: t.TopicID,
				Partitions: each(t.Partitions, func(p kmsg.ReadShareGroupStateRequestTopicPartition) kmsg.ReadShareGroupStateResponseTopicPartition {
					wp := kmsg.NewReadShareGroupStateResponseTopicPartition()
					wp.Partition, wp.ErrorCode, wp.ErrorMessage, wp.StateBatches = p.Partition, code, msg, []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{}
					return wp
				})}
		})
	case *kmsg.WriteShareGroupStateRequest:
		w := resp.(*kmsg.WriteShareGroupStateResponse)
		w.Topics = each(req.Topics, func(t kmsg.WriteShareGroupStateRequestTopic) kmsg.WriteShareGroupStateResponseTopic {
			return kmsg.WriteShareGroupStateResponseTopic{TopicID: t.TopicID,
				Partitions: each(t.Partitions, func(p kmsg.WriteShareGroupStateRequestTopicPartition) kmsg.WriteShareGroupStateResponseTopicPartition {
					return kmsg.WriteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code, ErrorMessage: msg}
				})}
		})
	case *kmsg.DeleteShareGroupStateRequest:
		w := resp.(*kmsg.DeleteShareGroupStateResponse)
		w.Topics = each(req.Topics, func(t kmsg.DeleteShareGroupStateRequestTopic) kmsg.DeleteShareGroupStateResponseTopic {
			return kmsg.DeleteShareGroupStateResponseTopic{TopicID: t.TopicID,
				Partitions: each(t.Partitions, func(p kmsg.DeleteShareGroupStateRequestTopicPartition) kmsg.DeleteShareGroupStateResponseTopicPartition {
					return kmsg.DeleteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code, ErrorMessage: msg}
				})}
		})
	}
	return authorization{answer: resp}
}

// To and from the wire.

func shareStateBatchesToWire[W any](bs []ShareStateBatch, batch func(first, last int64, state int8, count int16) W) []W {
	return each(orEmpty(bs), func(b ShareStateBatch) W { return batch(b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount) })
}

func initializeShareGroupStateToWire(r *InitializeShareGroupStateRequest, version int16) *kmsg.InitializeShareGroupStateRequest {
	w := versioned(kmsg.NewPtrInitializeShareGroupStateRequest(), version)
	w.GroupID = r.Group
	w.Topics = each(orEmpty(r.Topics), func(t InitializeShareGroupStateTopic) kmsg.InitializeShareGroupStateRequestTopic {
		return kmsg.InitializeShareGroupStateRequestTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p InitializeShareGroupStatePartition) kmsg.InitializeShareGroupStateRequestTopicPartition {
				return kmsg.InitializeShareGroupStateRequestTopicPartition{Partition: p.Partition, StateEpoch: p.StateEpoch, StartOffset: p.StartOffset}
			})}
	})
	return w
}

func initializeShareGroupStateFromWire(w *kmsg.InitializeShareGroupStateRequest) *InitializeShareGroupStateRequest {
	return &InitializeShareGroupStateRequest{Group: w.GroupID,
		Topics: each(orEmpty(w.Topics), func(t kmsg.InitializeShareGroupStateRequestTopic) InitializeShareGroupStateTopic {
			return InitializeShareGroupStateTopic{TopicID: t.TopicID,
				Partitions: each(orEmpty(t.Partitions), func(p kmsg.InitializeShareGroupStateRequestTopicPartition) InitializeShareGroupStatePartition {
					return InitializeShareGroupStatePartition{Partition: p.Partition, StateEpoch: p.StateEpoch, StartOffset: p.StartOffset}
				})}
		})}
}

func initializeShareGroupStateResponseToWire(r *InitializeShareGroupStateResponse, version int16) *kmsg.InitializeShareGroupStateResponse {
	w := versioned(kmsg.NewPtrInitializeShareGroupStateResponse(), version)
	w.Topics = each(orEmpty(r.Topics), func(t ShareStateTopicResult) kmsg.InitializeShareGroupStateResponseTopic {
		return kmsg.InitializeShareGroupStateResponseTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p ShareStatePartitionResult) kmsg.InitializeShareGroupStateResponseTopicPartition {
				return kmsg.InitializeShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: kafka.CodeOf(p.Err), ErrorMessage: errorMessage(p.Err)}
			})}
	})
	return w
}

func initializeShareGroupStateResponseFromWire(w *kmsg.InitializeShareGroupStateResponse) *InitializeShareGroupStateResponse {
	return &InitializeShareGroupStateResponse{Topics: each(orEmpty(w.Topics), func(t kmsg.InitializeShareGroupStateResponseTopic) ShareStateTopicResult {
		return ShareStateTopicResult{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p kmsg.InitializeShareGroupStateResponseTopicPartition) ShareStatePartitionResult {
				return ShareStatePartitionResult{Partition: p.Partition, Err: wireError(p.ErrorCode, p.ErrorMessage)}
			})}
	})}
}

func readShareGroupStateToWire(r *ReadShareGroupStateRequest, version int16) *kmsg.ReadShareGroupStateRequest {
	w := versioned(kmsg.NewPtrReadShareGroupStateRequest(), version)
	w.GroupID = r.Group
	w.Topics = each(orEmpty(r.Topics), func(t ReadShareGroupStateTopic) kmsg.ReadShareGroupStateRequestTopic {
		return kmsg.ReadShareGroupStateRequestTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p ReadShareGroupStatePartition) kmsg.ReadShareGroupStateRequestTopicPartition {
				return kmsg.ReadShareGroupStateRequestTopicPartition{Partition: p.Partition, LeaderEpoch: p.LeaderEpoch}
			})}
	})
	return w
}

func readShareGroupStateFromWire(w *kmsg.ReadShareGroupStateRequest) *ReadShareGroupStateRequest {
	return &ReadShareGroupStateRequest{Group: w.GroupID,
		Topics: each(orEmpty(w.Topics), func(t kmsg.ReadShareGroupStateRequestTopic) ReadShareGroupStateTopic {
			return ReadShareGroupStateTopic{TopicID: t.TopicID,
				Partitions: each(orEmpty(t.Partitions), func(p kmsg.ReadShareGroupStateRequestTopicPartition) ReadShareGroupStatePartition {
					return ReadShareGroupStatePartition{Partition: p.Partition, LeaderEpoch: p.LeaderEpoch}
				})}
		})}
}

func readShareGroupStateResponseToWire(r *ReadShareGroupStateResponse, version int16) *kmsg.ReadShareGroupStateResponse {
	w := versioned(kmsg.NewPtrReadShareGroupStateResponse(), version)
	w.Topics = each(orEmpty(r.Topics), func(t ReadShareGroupStateTopicResult) kmsg.ReadShareGroupStateResponseTopic {
		return kmsg.ReadShareGroupStateResponseTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p ReadShareGroupStatePartitionResult) kmsg.ReadShareGroupStateResponseTopicPartition {
				wp := kmsg.NewReadShareGroupStateResponseTopicPartition()
				wp.Partition, wp.ErrorCode, wp.ErrorMessage = p.Partition, kafka.CodeOf(p.Err), errorMessage(p.Err)
				wp.StateEpoch, wp.StartOffset = p.StateEpoch, p.StartOffset
				wp.StateBatches = shareStateBatchesToWire(p.StateBatches, func(first, last int64, state int8, count int16) kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch {
					return kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: count}
				})
				return wp
			})}
	})
	return w
}

func readShareGroupStateResponseFromWire(w *kmsg.ReadShareGroupStateResponse) *ReadShareGroupStateResponse {
	return &ReadShareGroupStateResponse{Topics: each(orEmpty(w.Topics), func(t kmsg.ReadShareGroupStateResponseTopic) ReadShareGroupStateTopicResult {
		return ReadShareGroupStateTopicResult{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p kmsg.ReadShareGroupStateResponseTopicPartition) ReadShareGroupStatePartitionResult {
				return ReadShareGroupStatePartitionResult{Partition: p.Partition, Err: wireError(p.ErrorCode, p.ErrorMessage),
					StateEpoch: p.StateEpoch, StartOffset: p.StartOffset,
					StateBatches: each(orEmpty(p.StateBatches), func(b kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch) ShareStateBatch {
						return ShareStateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount}
					})}
			})}
	})}
}

func writeShareGroupStateToWire(r *WriteShareGroupStateRequest, version int16) *kmsg.WriteShareGroupStateRequest {
	w := versioned(kmsg.NewPtrWriteShareGroupStateRequest(), version)
	w.GroupID = r.Group
	w.Topics = each(orEmpty(r.Topics), func(t WriteShareGroupStateTopic) kmsg.WriteShareGroupStateRequestTopic {
		return kmsg.WriteShareGroupStateRequestTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p WriteShareGroupStatePartition) kmsg.WriteShareGroupStateRequestTopicPartition {
				wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
				wp.Partition, wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset = p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset
				wp.StateBatches = shareStateBatchesToWire(p.StateBatches, func(first, last int64, state int8, count int16) kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch {
					return kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: count}
				})
				return wp
			})}
	})
	return w
}

func writeShareGroupStateFromWire(w *kmsg.WriteShareGroupStateRequest) *WriteShareGroupStateRequest {
	return &WriteShareGroupStateRequest{Group: w.GroupID,
		Topics: each(orEmpty(w.Topics), func(t kmsg.WriteShareGroupStateRequestTopic) WriteShareGroupStateTopic {
			return WriteShareGroupStateTopic{TopicID: t.TopicID,
				Partitions: each(orEmpty(t.Partitions), func(p kmsg.WriteShareGroupStateRequestTopicPartition) WriteShareGroupStatePartition {
					return WriteShareGroupStatePartition{Partition: p.Partition, StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset,
						StateBatches: each(orEmpty(p.StateBatches), func(b kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch) ShareStateBatch {
							return ShareStateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount}
						})}
				})}
		})}
}

func writeShareGroupStateResponseToWire(r *WriteShareGroupStateResponse, version int16) *kmsg.WriteShareGroupStateResponse {
	w := versioned(kmsg.NewPtrWriteShareGroupStateResponse(), version)
	w.Topics = each(orEmpty(r.Topics), func(t ShareStateTopicResult) kmsg.WriteShareGroupStateResponseTopic {
		return kmsg.WriteShareGroupStateResponseTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p ShareStatePartitionResult) kmsg.WriteShareGroupStateResponseTopicPartition {
				return kmsg.WriteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: kafka.CodeOf(p.Err), ErrorMessage: errorMessage(p.Err)}
			})}
	})
	return w
}

func writeShareGroupStateResponseFromWire(w *kmsg.WriteShareGroupStateResponse) *WriteShareGroupStateResponse {
	return &WriteShareGroupStateResponse{Topics: each(orEmpty(w.Topics), func(t kmsg.WriteShareGroupStateResponseTopic) ShareStateTopicResult {
		return ShareStateTopicResult{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p kmsg.WriteShareGroupStateResponseTopicPartition) ShareStatePartitionResult {
				return ShareStatePartitionResult{Partition: p.Partition, Err: wireError(p.ErrorCode, p.ErrorMessage)}
			})}
	})}
}

func deleteShareGroupStateToWire(r *DeleteShareGroupStateRequest, version int16) *kmsg.DeleteShareGroupStateRequest {
	w := versioned(kmsg.NewPtrDeleteShareGroupStateRequest(), version)
	w.GroupID = r.Group
	w.Topics = each(orEmpty(r.Topics), func(t TopicIDPartitions) kmsg.DeleteShareGroupStateRequestTopic {
		return kmsg.DeleteShareGroupStateRequestTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p int32) kmsg.DeleteShareGroupStateRequestTopicPartition {
				return kmsg.DeleteShareGroupStateRequestTopicPartition{Partition: p}
			})}
	})
	return w
}

func deleteShareGroupStateFromWire(w *kmsg.DeleteShareGroupStateRequest) *DeleteShareGroupStateRequest {
	return &DeleteShareGroupStateRequest{Group: w.GroupID,
		Topics: each(orEmpty(w.Topics), func(t kmsg.DeleteShareGroupStateRequestTopic) TopicIDPartitions {
			return TopicIDPartitions{TopicID: t.TopicID,
				Partitions: each(orEmpty(t.Partitions), func(p kmsg.DeleteShareGroupStateRequestTopicPartition) int32 { return p.Partition })}
		})}
}

func deleteShareGroupStateResponseToWire(r *DeleteShareGroupStateResponse, version int16) *kmsg.DeleteShareGroupStateResponse {
	w := versioned(kmsg.NewPtrDeleteShareGroupStateResponse(), version)
	w.Topics = each(orEmpty(r.Topics), func(t ShareStateTopicResult) kmsg.DeleteShareGroupStateResponseTopic {
		return kmsg.DeleteShareGroupStateResponseTopic{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p ShareStatePartitionResult) kmsg.DeleteShareGroupStateResponseTopicPartition {
				return kmsg.DeleteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: kafka.CodeOf(p.Err), ErrorMessage: errorMessage(p.Err)}
			})}
	})
	return w
}

func deleteShareGroupStateResponseFromWire(w *kmsg.DeleteShareGroupStateResponse) *DeleteShareGroupStateResponse {
	return &DeleteShareGroupStateResponse{Topics: each(orEmpty(w.Topics), func(t kmsg.DeleteShareGroupStateResponseTopic) ShareStateTopicResult {
		return ShareStateTopicResult{TopicID: t.TopicID,
			Partitions: each(orEmpty(t.Partitions), func(p kmsg.DeleteShareGroupStateResponseTopicPartition) ShareStatePartitionResult {
				return ShareStatePartitionResult{Partition: p.Partition, Err: wireError(p.ErrorCode, p.ErrorMessage)}
			})}
	})}
}
