package transport

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/partlog/partlog/kafka"
)

// ClusterAdminClient answers Kafka's requests that change a cluster's
// membership and replica placement: AlterPartitionReassignments (45),
// ListPartitionReassignments (46) and UnregisterBroker (64). A server
// advertises them when its handler implements it; a cluster member (a
// *partlog.Node) does, and forwards them to the active controller.
type ClusterAdminClient interface {
	AlterPartitionReassignments(ctx context.Context, req *AlterPartitionReassignmentsRequest) (*AlterPartitionReassignmentsResponse, error)
	ListPartitionReassignments(ctx context.Context, req *ListPartitionReassignmentsRequest) (*ListPartitionReassignmentsResponse, error)
	UnregisterBroker(ctx context.Context, req *UnregisterBrokerRequest) (*UnregisterBrokerResponse, error)
}

func isClusterAdminClient(h Client) bool { _, ok := h.(ClusterAdminClient); return ok }

// AlterPartitionReassignmentsRequest moves partitions' replicas to other
// nodes (Kafka's AlterPartitionReassignments, KIP-455).
type AlterPartitionReassignmentsRequest struct {
	// Timeout is timeout_ms; a partlog node answers once the controller
	// has recorded the reassignments, which then go on.
	Timeout time.Duration
	// Partitions are the reassignments.
	Partitions []PartitionReassignment
}

// PartitionReassignment is one partition's new replicas.
type PartitionReassignment struct {
	kafka.TopicPartition
	// Replicas are the target replicas, the preferred leader first; nil
	// cancels the partition's reassignment in progress.
	Replicas []int32
}

// AlterPartitionReassignmentsResponse says, partition by partition,
// whether its reassignment was accepted.
type AlterPartitionReassignmentsResponse struct {
	// Partitions hold each partition's outcome.
	Partitions []ReassignmentResult
}

// ReassignmentResult is one partition's outcome: nil, or
// kafka.ErrInvalidReplicaAssignment, kafka.ErrNoReassignmentInProgress,
// kafka.ErrUnknownTopicOrPartition and the like.
type ReassignmentResult struct {
	kafka.TopicPartition
	Err error
}

// ListPartitionReassignmentsRequest asks which partitions are being
// reassigned (Kafka's ListPartitionReassignments).
type ListPartitionReassignmentsRequest struct {
	// Timeout is timeout_ms; a partlog node does not read it.
	Timeout time.Duration
	// Partitions are those asked about; nil means every partition.
	Partitions []kafka.TopicPartition
}

// ListPartitionReassignmentsResponse lists the reassignments in progress.
type ListPartitionReassignmentsResponse struct {
	// Reassignments are the partitions being reassigned.
	Reassignments []OngoingReassignment
}

// OngoingReassignment is a partition being reassigned.
type OngoingReassignment struct {
	kafka.TopicPartition
	// Replicas are all the partition's replicas now: the target ones and
	// those being removed.
	Replicas []int32
	// AddingReplicas are the target replicas the partition did not have;
	// RemovingReplicas those it will not keep.
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// UnregisterBrokerRequest removes a node from the cluster (Kafka's
// UnregisterBroker, kafka-cluster.sh unregister).
type UnregisterBrokerRequest struct {
	// BrokerID is the node's id.
	BrokerID int32
}

// UnregisterBrokerResponse answers UnregisterBroker.
type UnregisterBrokerResponse struct {
	// Err is nil, or kafka.ErrBrokerIDNotRegistered for an unknown node.
	Err error
}

// AlterPartitionReassignments sends an AlterPartitionReassignments request.
func (c *TCPClient) AlterPartitionReassignments(ctx context.Context, req *AlterPartitionReassignmentsRequest) (*AlterPartitionReassignmentsResponse, error) {
	return roundTrip(ctx, c, connOther, 45, req, alterReassignmentsToWire, alterReassignmentsResponseFromWire)
}

// ListPartitionReassignments sends a ListPartitionReassignments request.
func (c *TCPClient) ListPartitionReassignments(ctx context.Context, req *ListPartitionReassignmentsRequest) (*ListPartitionReassignmentsResponse, error) {
	return roundTrip(ctx, c, connOther, 46, req, listReassignmentsToWire, listReassignmentsResponseFromWire)
}

// UnregisterBroker sends an UnregisterBroker request.
func (c *TCPClient) UnregisterBroker(ctx context.Context, req *UnregisterBrokerRequest) (*UnregisterBrokerResponse, error) {
	return roundTrip(ctx, c, connOther, 64, req, unregisterBrokerToWire, unregisterBrokerResponseFromWire)
}

// dispatchClusterAdmin calls a ClusterAdminClient handler for one decoded
// request, or reports that req is not one of its.
func dispatchClusterAdmin(ctx context.Context, h ClusterAdminClient, req kmsg.Request, version int16) (kmsg.Response, bool, error) {
	var resp kmsg.Response
	var err error
	switch req := req.(type) {
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp, err = answerWith(ctx, h.AlterPartitionReassignments, alterReassignmentsFromWire(req), alterReassignmentsResponseToWire, version)
	case *kmsg.ListPartitionReassignmentsRequest:
		resp, err = answerWith(ctx, h.ListPartitionReassignments, listReassignmentsFromWire(req), listReassignmentsResponseToWire, version)
	case *kmsg.UnregisterBrokerRequest:
		resp, err = answerWith(ctx, h.UnregisterBroker, &UnregisterBrokerRequest{BrokerID: req.BrokerID}, unregisterBrokerResponseToWire, version)
	default:
		return nil, false, nil
	}
	return resp, true, err
}

func alterReassignmentsToWire(r *AlterPartitionReassignmentsRequest, version int16) *kmsg.AlterPartitionAssignmentsRequest {
	w := versioned(kmsg.NewPtrAlterPartitionAssignmentsRequest(), version)
	w.TimeoutMillis = millis(r.Timeout)
	w.Topics = groupTopics(r.Partitions,
		func(p PartitionReassignment) (string, kmsg.AlterPartitionAssignmentsRequestTopicPartition) {
			wp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			wp.Partition, wp.Replicas = p.Partition, p.Replicas
			return p.Topic, wp
		},
		func(topic string, wps []kmsg.AlterPartitionAssignmentsRequestTopicPartition) kmsg.AlterPartitionAssignmentsRequestTopic {
			return kmsg.AlterPartitionAssignmentsRequestTopic{Topic: topic, Partitions: wps}
		})
	return w
}

func alterReassignmentsFromWire(w *kmsg.AlterPartitionAssignmentsRequest) *AlterPartitionReassignmentsRequest {
	return &AlterPartitionReassignmentsRequest{Timeout: fromMillis(w.TimeoutMillis), Partitions: flattenTopics(w.Topics,
		func(wt kmsg.AlterPartitionAssignmentsRequestTopic) (string, []kmsg.AlterPartitionAssignmentsRequestTopicPartition) {
			return wt.Topic, wt.Partitions
		},
		func(topic string, wp kmsg.AlterPartitionAssignmentsRequestTopicPartition) PartitionReassignment {
			return PartitionReassignment{kafka.TopicPartition{Topic: topic, Partition: wp.Partition}, wp.Replicas}
		})}
}

func alterReassignmentsResponseToWire(r *AlterPartitionReassignmentsResponse, version int16) *kmsg.AlterPartitionAssignmentsResponse {
	w := versioned(kmsg.NewPtrAlterPartitionAssignmentsResponse(), version)
	w.Topics = groupTopics(r.Partitions,
		func(p ReassignmentResult) (string, kmsg.AlterPartitionAssignmentsResponseTopicPartition) {
			wp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			wp.Partition, wp.ErrorCode, wp.ErrorMessage = p.Partition, kafka.CodeOf(p.Err), errorMessage(p.Err)
			return p.Topic, wp
		},
		func(topic string, wps []kmsg.AlterPartitionAssignmentsResponseTopicPartition) kmsg.AlterPartitionAssignmentsResponseTopic {
			return kmsg.AlterPartitionAssignmentsResponseTopic{Topic: topic, Partitions: wps}
		})
	return w
}

func alterReassignmentsResponseFromWire(w *kmsg.AlterPartitionAssignmentsResponse) *AlterPartitionReassignmentsResponse {
	top := wireError(w.ErrorCode, w.ErrorMessage)
	return &AlterPartitionReassignmentsResponse{Partitions: flattenTopics(w.Topics,
		func(wt kmsg.AlterPartitionAssignmentsResponseTopic) (string, []kmsg.AlterPartitionAssignmentsResponseTopicPartition) {
			return wt.Topic, wt.Partitions
		},
		func(topic string, wp kmsg.AlterPartitionAssignmentsResponseTopicPartition) ReassignmentResult {
			err := wireError(wp.ErrorCode, wp.ErrorMessage)
			if err == nil {
				err = top
			}
			return ReassignmentResult{kafka.TopicPartition{Topic: topic, Partition: wp.Partition}, err}
		})}
}

func listReassignmentsToWire(r *ListPartitionReassignmentsRequest, version int16) *kmsg.ListPartitionReassignmentsRequest {
	w := versioned(kmsg.NewPtrListPartitionReassignmentsRequest(), version)
	w.TimeoutMillis = millis(r.Timeout)
	if r.Partitions != nil {
		w.Topics = topicPartitionsToWire(r.Partitions, func(topic string, ids []int32) kmsg.ListPartitionReassignmentsRequestTopic {
			return kmsg.ListPartitionReassignmentsRequestTopic{Topic: topic, Partitions: ids}
		})
	}
	return w
}

func listReassignmentsFromWire(w *kmsg.ListPartitionReassignmentsRequest) *ListPartitionReassignmentsRequest {
	r := &ListPartitionReassignmentsRequest{Timeout: fromMillis(w.TimeoutMillis)}
	if w.Topics != nil {
		r.Partitions = topicPartitionsFromWire(w.Topics, func(wt kmsg.ListPartitionReassignmentsRequestTopic) (string, []int32) {
			return wt.Topic, wt.Partitions
		})
	}
	return r
}

func listReassignmentsResponseToWire(r *ListPartitionReassignmentsResponse, version int16) *kmsg.ListPartitionReassignmentsResponse {
	w := versioned(kmsg.NewPtrListPartitionReassignmentsResponse(), version)
	w.Topics = groupTopics(r.Reassignments,
		func(p OngoingReassignment) (string, kmsg.ListPartitionReassignmentsResponseTopicPartition) {
			wp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			wp.Partition, wp.Replicas, wp.AddingReplicas, wp.RemovingReplicas = p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas
			return p.Topic, wp
		},
		func(topic string, wps []kmsg.ListPartitionReassignmentsResponseTopicPartition) kmsg.ListPartitionReassignmentsResponseTopic {
			return kmsg.ListPartitionReassignmentsResponseTopic{Topic: topic, Partitions: wps}
		})
	return w
}

func listReassignmentsResponseFromWire(w *kmsg.ListPartitionReassignmentsResponse) *ListPartitionReassignmentsResponse {
	return &ListPartitionReassignmentsResponse{Reassignments: flattenTopics(w.Topics,
		func(wt kmsg.ListPartitionReassignmentsResponseTopic) (string, []kmsg.ListPartitionReassignmentsResponseTopicPartition) {
			return wt.Topic, wt.Partitions
		},
		func(topic string, wp kmsg.ListPartitionReassignmentsResponseTopicPartition) OngoingReassignment {
			return OngoingReassignment{kafka.TopicPartition{Topic: topic, Partition: wp.Partition}, wp.Replicas, wp.AddingReplicas, wp.RemovingReplicas}
		})}
}

func unregisterBrokerToWire(r *UnregisterBrokerRequest, version int16) *kmsg.UnregisterBrokerRequest {
	w := versioned(kmsg.NewPtrUnregisterBrokerRequest(), version)
	w.BrokerID = r.BrokerID
	return w
}

func unregisterBrokerResponseToWire(r *UnregisterBrokerResponse, version int16) *kmsg.UnregisterBrokerResponse {
	w := versioned(kmsg.NewPtrUnregisterBrokerResponse(), version)
	w.ErrorCode, w.ErrorMessage = kafka.CodeOf(r.Err), errorMessage(r.Err)
	return w
}

func unregisterBrokerResponseFromWire(w *kmsg.UnregisterBrokerResponse) *UnregisterBrokerResponse {
	return &UnregisterBrokerResponse{Err: wireError(w.ErrorCode, w.ErrorMessage)}
}
