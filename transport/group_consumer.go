package transport

import (
	"context"

	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupClient is the optional interface of a handler that hosts
// groups of Kafka's consumer group protocol (KIP-848), whose coordinator
// assigns the partitions: ConsumerGroupHeartbeat and ConsumerGroupDescribe
// (68, 69). Topics are named by their ids on the wire, as Kafka names
// them; the handler knows which topic an id is.
type ConsumerGroupClient interface {
	ConsumerGroupHeartbeat(ctx context.Context, req *ConsumerGroupHeartbeatRequest) (*ConsumerGroupHeartbeatResponse, error)
	ConsumerGroupDescribe(ctx context.Context, req *ConsumerGroupDescribeRequest) (*ConsumerGroupDescribeResponse, error)
}

func isConsumerGroupClient(h Client) bool { _, ok := h.(ConsumerGroupClient); return ok }

// TopicIDPartitions are partitions of a topic named by its id.
type TopicIDPartitions struct {
	// TopicID is the topic's id.
	TopicID [16]byte
	// Partitions are the partitions' indexes.
	Partitions []int32
}

// ConsumerGroupHeartbeatRequest is a member's heartbeat: it joins (epoch
// 0), stays (its epoch) or leaves (-1, or -2 for a static member that
// will come back). A field that did not change since the last heartbeat
// is left out: nil.
type ConsumerGroupHeartbeatRequest struct {
	// Group is the group id.
	Group string
	// MemberID is the member's id, chosen by the client (KIP-1082).
	MemberID string
	// MemberEpoch is the member's epoch: 0 to join, -1 to leave, -2 for
	// a static member's temporary leave.
	MemberEpoch int32
	// InstanceID is a static member's group.instance.id; nil unchanged.
	InstanceID *string
	// RackID is the member's rack; nil unchanged.
	RackID *string
	// RebalanceTimeout bounds how long the member may take to revoke
	// partitions, in milliseconds; -1 unchanged.
	RebalanceTimeoutMillis int32
	// SubscribedTopicNames are the topics the member subscribes to; nil
	// unchanged.
	SubscribedTopicNames []string
	// SubscribedTopicRegex subscribes to the topics it matches (RE2,
	// version 1 on); nil unchanged.
	SubscribedTopicRegex *string
	// ServerAssignor is the server assignor the member asks for ("uniform",
	// "range"); nil unchanged.
	ServerAssignor *string
	// Owned are the partitions the member owns; nil unchanged.
	Owned []TopicIDPartitions
	// ClientID and ClientHost are the request header's client id and the
	// address the client connects from: the server fills them.
	ClientID, ClientHost string
}

// ConsumerGroupHeartbeatResponse answers a heartbeat.
type ConsumerGroupHeartbeatResponse struct {
	// Err is nil, or why the heartbeat failed: kafka.ErrFencedMemberEpoch,
	// ErrUnknownMemberID, ErrUnsupportedAssignor, ErrNotCoordinator, ...
	Err error
	// MemberID and MemberEpoch are the member's id and its epoch now.
	MemberID    string
	MemberEpoch int32
	// HeartbeatIntervalMillis is how often the member heartbeats.
	HeartbeatIntervalMillis int32
	// Assignment is the member's assignment when it changed; nil
	// otherwise.
	Assignment []TopicIDPartitions
}

// ConsumerGroupDescribeRequest asks about groups of the consumer protocol.
type ConsumerGroupDescribeRequest struct {
	// Groups are the group ids.
	Groups []string
}

// ConsumerGroupDescribeResponse describes each group asked about.
type ConsumerGroupDescribeResponse struct {
	// Groups are one per group of the request.
	Groups []ConsumerGroupDescription
}

// ConsumerGroupDescription is one group of the consumer protocol.
type ConsumerGroupDescription struct {
	// Group is the group id.
	Group string
	// Err is nil, or why the group is not described:
	// kafka.ErrGroupIDNotFound, ErrNotCoordinator, ...
	Err error
	// State is the group's state: Empty, Assigning, Reconciling, Stable.
	State string
	// Epoch is the group epoch; AssignmentEpoch the target assignment's.
	Epoch, AssignmentEpoch int32
	// AssignorName is the server assignor the group uses.
	AssignorName string
	// Members are the group's members.
	Members []ConsumerGroupMemberDescription
}

// ConsumerGroupMemberDescription is one member of a consumer-protocol
// group.
type ConsumerGroupMemberDescription struct {
	// MemberID, InstanceID and RackID identify the member.
	MemberID, InstanceID, RackID string
	// MemberEpoch is the member's epoch.
	MemberEpoch int32
	// ClientID and ClientHost say where it connects from.
	ClientID, ClientHost string
	// SubscribedTopicNames and SubscribedTopicRegex are its subscription.
	SubscribedTopicNames []string
	SubscribedTopicRegex string
	// Assignment is what it owns; TargetAssignment what it is moving to.
	Assignment, TargetAssignment []TopicIDPartitions
}

// ConsumerGroupHeartbeat sends a ConsumerGroupHeartbeat request.
func (c *TCPClient) ConsumerGroupHeartbeat(ctx context.Context, req *ConsumerGroupHeartbeatRequest) (*ConsumerGroupHeartbeatResponse, error) {
	return roundTrip(ctx, c, connOther, 68, req, consumerGroupHeartbeatToWire, consumerGroupHeartbeatResponseFromWire)
}

// ConsumerGroupDescribe sends a ConsumerGroupDescribe request.
func (c *TCPClient) ConsumerGroupDescribe(ctx context.Context, req *ConsumerGroupDescribeRequest) (*ConsumerGroupDescribeResponse, error) {
	return roundTrip(ctx, c, connOther, 69, req, consumerGroupDescribeToWire, consumerGroupDescribeResponseFromWire)
}

// dispatchConsumerGroup answers ConsumerGroupHeartbeat and
// ConsumerGroupDescribe with h, or reports that req is neither.
func dispatchConsumerGroup(ctx context.Context, h ConsumerGroupClient, req kmsg.Request, version int16, clientID, clientHost string) (kmsg.Response, bool, error) {
	var resp kmsg.Response
	var err error
	switch req := req.(type) {
	case *kmsg.ConsumerGroupHeartbeatRequest:
		r := consumerGroupHeartbeatFromWire(req)
		r.ClientID, r.ClientHost = clientID, clientHost
		resp, err = answerWith(ctx, h.ConsumerGroupHeartbeat, r, consumerGroupHeartbeatResponseToWire, version)
	case *kmsg.ConsumerGroupDescribeRequest:
		resp, err = answerWith(ctx, h.ConsumerGroupDescribe, &ConsumerGroupDescribeRequest{Groups: req.Groups}, consumerGroupDescribeResponseToWire, version)
	default:
		return nil, false, nil
	}
	return resp, true, err
}

func consumerGroupHeartbeatToWire(r *ConsumerGroupHeartbeatRequest, version int16) *kmsg.ConsumerGroupHeartbeatRequest {
	w := versioned(kmsg.NewPtrConsumerGroupHeartbeatRequest(), version)
	w.Group, w.MemberID, w.MemberEpoch = r.Group, r.MemberID, r.MemberEpoch
	w.InstanceID, w.RackID, w.RebalanceTimeoutMillis = r.InstanceID, r.RackID, r.RebalanceTimeoutMillis
	w.SubscribedTopicNames, w.SubscribedTopicRegex, w.ServerAssignor = r.SubscribedTopicNames, r.SubscribedTopicRegex, r.ServerAssignor
	w.Topics = each(r.Owned, func(p TopicIDPartitions) kmsg.ConsumerGroupHeartbeatRequestTopic {
		return kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: p.TopicID, Partitions: p.Partitions}
	})
	return w
}

func consumerGroupHeartbeatFromWire(w *kmsg.ConsumerGroupHeartbeatRequest) *ConsumerGroupHeartbeatRequest {
	return &ConsumerGroupHeartbeatRequest{
		Group: w.Group, MemberID: w.MemberID, MemberEpoch: w.MemberEpoch, InstanceID: w.InstanceID, RackID: w.RackID,
		RebalanceTimeoutMillis: w.RebalanceTimeoutMillis, SubscribedTopicNames: w.SubscribedTopicNames,
		SubscribedTopicRegex: w.SubscribedTopicRegex, ServerAssignor: w.ServerAssignor,
		Owned: each(w.Topics, func(t kmsg.ConsumerGroupHeartbeatRequestTopic) TopicIDPartitions {
			return TopicIDPartitions{TopicID: t.TopicID, Partitions: orEmpty(t.Partitions)}
		}),
	}
}

func consumerGroupHeartbeatResponseToWire(r *ConsumerGroupHeartbeatResponse, version int16) *kmsg.ConsumerGroupHeartbeatResponse {
	w := versioned(kmsg.NewPtrConsumerGroupHeartbeatResponse(), version)
	w.ErrorCode, w.ErrorMessage = kafka.CodeOf(r.Err), errorMessage(r.Err)
	w.MemberID, w.MemberEpoch, w.HeartbeatIntervalMillis = nullable(r.MemberID), r.MemberEpoch, r.HeartbeatIntervalMillis
	if r.Assignment != nil {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		a.Topics = each(r.Assignment, func(p TopicIDPartitions) kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic {
			return kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: p.TopicID, Partitions: orEmpty(p.Partitions)}
		})
		w.Assignment = &a
	}
	return w
}

func consumerGroupHeartbeatResponseFromWire(w *kmsg.ConsumerGroupHeartbeatResponse) *ConsumerGroupHeartbeatResponse {
	r := &ConsumerGroupHeartbeatResponse{Err: wireError(w.ErrorCode, w.ErrorMessage), MemberID: deref(w.MemberID),
		MemberEpoch: w.MemberEpoch, HeartbeatIntervalMillis: w.HeartbeatIntervalMillis}
	if w.Assignment != nil {
		r.Assignment = each(orEmpty(w.Assignment.Topics), func(t kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic) TopicIDPartitions {
			return TopicIDPartitions{TopicID: t.TopicID, Partitions: orEmpty(t.Partitions)}
		})
	}
	return r
}

func consumerGroupDescribeToWire(r *ConsumerGroupDescribeRequest, version int16) *kmsg.ConsumerGroupDescribeRequest {
	w := versioned(kmsg.NewPtrConsumerGroupDescribeRequest(), version)
	w.Groups = r.Groups
	return w
}

func assignmentToWire(ps []TopicIDPartitions) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = each(orEmpty(ps), func(p TopicIDPartitions) kmsg.AssignmentTopicPartition {
		t := kmsg.NewAssignmentTopicPartition()
		t.TopicID, t.Partitions = p.TopicID, orEmpty(p.Partitions)
		return t
	})
	return a
}

func assignmentFromWire(a kmsg.Assignment) []TopicIDPartitions {
	return each(orEmpty(a.TopicPartitions), func(t kmsg.AssignmentTopicPartition) TopicIDPartitions {
		return TopicIDPartitions{TopicID: t.TopicID, Partitions: orEmpty(t.Partitions)}
	})
}

func consumerGroupDescribeResponseToWire(r *ConsumerGroupDescribeResponse, version int16) *kmsg.ConsumerGroupDescribeResponse {
	w := versioned(kmsg.NewPtrConsumerGroupDescribeResponse(), version)
	w.Groups = each(r.Groups, func(g ConsumerGroupDescription) kmsg.ConsumerGroupDescribeResponseGroup {
		wg := kmsg.NewConsumerGroupDescribeResponseGroup()
		wg.Group, wg.ErrorCode, wg.ErrorMessage = g.Group, kafka.CodeOf(g.Err), errorMessage(g.Err)
		wg.State, wg.Epoch, wg.AssignmentEpoch, wg.AssignorName = g.State, g.Epoch, g.AssignmentEpoch, g.AssignorName
		wg.Members = each(g.Members, func(m ConsumerGroupMemberDescription) kmsg.ConsumerGroupDescribeResponseGroupMember {
			wm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			wm.MemberID, wm.InstanceID, wm.RackID, wm.MemberEpoch = m.MemberID, nullable(m.InstanceID), nullable(m.RackID), m.MemberEpoch
			wm.ClientID, wm.ClientHost = m.ClientID, m.ClientHost
			wm.SubscribedTopics, wm.SubscribedTopicRegex = orEmpty(m.SubscribedTopicNames), nullable(m.SubscribedTopicRegex)
			wm.Assignment, wm.TargetAssignment = assignmentToWire(m.Assignment), assignmentToWire(m.TargetAssignment)
			return wm
		})
		return wg
	})
	return w
}

func consumerGroupDescribeResponseFromWire(w *kmsg.ConsumerGroupDescribeResponse) *ConsumerGroupDescribeResponse {
	return &ConsumerGroupDescribeResponse{Groups: each(orEmpty(w.Groups), func(wg kmsg.ConsumerGroupDescribeResponseGroup) ConsumerGroupDescription {
		return ConsumerGroupDescription{
			Group: wg.Group, Err: wireError(wg.ErrorCode, wg.ErrorMessage), State: wg.State, Epoch: wg.Epoch,
			AssignmentEpoch: wg.AssignmentEpoch, AssignorName: wg.AssignorName,
			Members: each(orEmpty(wg.Members), func(wm kmsg.ConsumerGroupDescribeResponseGroupMember) ConsumerGroupMemberDescription {
				return ConsumerGroupMemberDescription{
					MemberID: wm.MemberID, InstanceID: deref(wm.InstanceID), RackID: deref(wm.RackID), MemberEpoch: wm.MemberEpoch,
					ClientID: wm.ClientID, ClientHost: wm.ClientHost, SubscribedTopicNames: wm.SubscribedTopics,
					SubscribedTopicRegex: deref(wm.SubscribedTopicRegex),
					Assignment:           assignmentFromWire(wm.Assignment), TargetAssignment: assignmentFromWire(wm.TargetAssignment),
				}
			}),
		}
	})}
}
