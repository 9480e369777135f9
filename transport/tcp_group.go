package transport

// tcp_group.go: the TCPClient's group requests. JoinGroup and SyncGroup
// wait for the rest of the group and go on a connection of their own; a
// node answers a connection's requests in order, so the members of a group
// each need a TCPClient of their own, as Kafka's consumers each have their
// own connections.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var _ GroupClient = (*TCPClient)(nil)

// groupCall sends a group request of API key in the negotiated version,
// built by build, on a connection of kind.
func (c *TCPClient) groupCall(ctx context.Context, key int16, kind int, build func(version int16) kmsg.Request) (kmsg.Response, error) {
	v, err := c.version(key)
	if err != nil {
		return nil, err
	}
	return c.send(ctx, kind, build(v))
}

// FindCoordinator sends a FindCoordinator request.
func (c *TCPClient) FindCoordinator(ctx context.Context, req *FindCoordinatorRequest) (*FindCoordinatorResponse, error) {
	resp, err := c.groupCall(ctx, 10, connGroup, func(v int16) kmsg.Request {
		w := kmsg.NewPtrFindCoordinatorRequest()
		w.Version, w.CoordinatorKey, w.CoordinatorType = v, req.Key, int8(req.KeyType)
		return w
	})
	if err != nil {
		return nil, err
	}
	w := resp.(*kmsg.FindCoordinatorResponse)
	return &FindCoordinatorResponse{Err: wireError(w.ErrorCode, w.ErrorMessage), NodeID: w.NodeID, Host: w.Host, Port: w.Port}, nil
}

// JoinGroup sends a JoinGroup request and waits for the rebalance.
func (c *TCPClient) JoinGroup(ctx context.Context, req *JoinGroupRequest) (*JoinGroupResponse, error) {
	resp, err := c.groupCall(ctx, 11, connJoin, func(v int16) kmsg.Request {
		w := kmsg.NewPtrJoinGroupRequest()
		w.Version, w.Group, w.MemberID, w.ProtocolType = v, req.Group, req.MemberID, req.ProtocolType
		w.SessionTimeoutMillis, w.RebalanceTimeoutMillis = millis(req.SessionTimeout), millis(req.RebalanceTimeout)
		w.InstanceID, w.Reason = strPtr(req.GroupInstanceID), strPtr(req.Reason)
		for _, p := range req.Protocols {
			wp := kmsg.NewJoinGroupRequestProtocol()
			wp.Name, wp.Metadata = p.Name, p.Metadata
			w.Protocols = append(w.Protocols, wp)
		}
		return w
	})
	if err != nil {
		return nil, err
	}
	w := resp.(*kmsg.JoinGroupResponse)
	r := &JoinGroupResponse{Err: ErrorForCode(w.ErrorCode), GenerationID: w.Generation, ProtocolType: strOf(w.ProtocolType),
		ProtocolName: strOf(w.Protocol), Leader: w.LeaderID, MemberID: w.MemberID}
	for _, m := range w.Members {
		r.Members = append(r.Members, JoinGroupMember{MemberID: m.MemberID, GroupInstanceID: strOf(m.InstanceID), Metadata: m.ProtocolMetadata})
	}
	return r, nil
}

// SyncGroup sends a SyncGroup request and waits for the assignment.
func (c *TCPClient) SyncGroup(ctx context.Context, req *SyncGroupRequest) (*SyncGroupResponse, error) {
	resp, err := c.groupCall(ctx, 14, connJoin, func(v int16) kmsg.Request {
		w := kmsg.NewPtrSyncGroupRequest()
		w.Version, w.Group, w.Generation, w.MemberID = v, req.Group, req.GenerationID, req.MemberID
		w.InstanceID, w.ProtocolType, w.Protocol = strPtr(req.GroupInstanceID), strPtr(req.ProtocolType), strPtr(req.ProtocolName)
		for _, a := range req.Assignments {
			wa := kmsg.NewSyncGroupRequestGroupAssignment()
			wa.MemberID, wa.MemberAssignment = a.MemberID, a.Assignment
			w.GroupAssignment = append(w.GroupAssignment, wa)
		}
		return w
	})
	if err != nil {
		return nil, err
	}
	w := resp.(*kmsg.SyncGroupResponse)
	return &SyncGroupResponse{Err: ErrorForCode(w.ErrorCode), ProtocolType: strOf(w.ProtocolType), ProtocolName: strOf(w.Protocol), Assignment: w.MemberAssignment}, nil
}

// Heartbeat sends a Heartbeat request.
func (c *TCPClient) Heartbeat(ctx context.Context, req *HeartbeatRequest) (*HeartbeatResponse, error) {
	resp, err := c.groupCall(ctx, 12, connGroup, func(v int16) kmsg.Request {
		w := kmsg.NewPtrHeartbeatRequest()
		w.Version, w.Group, w.Generation, w.MemberID, w.InstanceID = v, req.Group, req.GenerationID, req.MemberID, strPtr(req.GroupInstanceID)
		return w
	})
	if err != nil {
		return nil, err
	}
	return &HeartbeatResponse{Err: ErrorForCode(resp.(*kmsg.HeartbeatResponse).ErrorCode)}, nil
}

// LeaveGroup sends a LeaveGroup request. Before version 3 one member
// leaves per request.
func (c *TCPClient) LeaveGroup(ctx context.Context, req *LeaveGroupRequest) (*LeaveGroupResponse, error) {
	resp, err := c.groupCall(ctx, 13, connGroup, func(v int16) kmsg.Request {
		w := kmsg.NewPtrLeaveGroupRequest()
		w.Version, w.Group = v, req.Group
		if v < 3 && len(req.Members) > 0 {
			w.MemberID = req.Members[0].MemberID
		}
		if v >= 3 {
			for _, m := range req.Members {
				wm := kmsg.NewLeaveGroupRequestMember()
				wm.MemberID, wm.InstanceID, wm.Reason = m.MemberID, strPtr(m.GroupInstanceID), strPtr(m.Reason)
				w.Members = append(w.Members, wm)
			}
		}
		return w
	})
	if err != nil {
		return nil, err
	}
	w := resp.(*kmsg.LeaveGroupResponse)
	r := &LeaveGroupResponse{Err: ErrorForCode(w.ErrorCode)}
	for _, m := range w.Members {
		r.Members = append(r.Members, LeaveGroupMemberResponse{MemberID: m.MemberID, GroupInstanceID: strOf(m.InstanceID), Err: ErrorForCode(m.ErrorCode)})
	}
	return r, nil
}

// OffsetCommit sends an OffsetCommit request.
func (c *TCPClient) OffsetCommit(ctx context.Context, req *OffsetCommitRequest) (*OffsetCommitResponse, error) {
	resp, err := c.groupCall(ctx, 8, connGroup, func(v int16) kmsg.Request {
		w := kmsg.NewPtrOffsetCommitRequest()
		w.Version, w.Group, w.Generation, w.MemberID, w.InstanceID = v, req.Group, req.GenerationID, req.MemberID, strPtr(req.GroupInstanceID)
		w.RetentionTimeMillis = -1
		for _, t := range req.Topics {
			wt := kmsg.NewOffsetCommitRequestTopic()
			wt.Topic = t.Topic
			for _, p := range t.Partitions {
				wp := kmsg.NewOffsetCommitRequestTopicPartition()
				md := p.Metadata
				wp.Partition, wp.Offset, wp.LeaderEpoch, wp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, &md
				wt.Partitions = append(wt.Partitions, wp)
			}
			w.Topics = append(w.Topics, wt)
		}
		return w
	})
	if err != nil {
		return nil, err
	}
	w := resp.(*kmsg.OffsetCommitResponse)
	r := &OffsetCommitResponse{}
	for _, t := range w.Topics {
		rt := OffsetCommitTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, OffsetCommitPartitionResponse{Partition: p.Partition, Err: ErrorForCode(p.ErrorCode)})
		}
		r.Topics = append(r.Topics, rt)
	}
	return r, nil
}

// OffsetFetch sends an OffsetFetch request.
func (c *TCPClient) OffsetFetch(ctx context.Context, req *OffsetFetchRequest) (*OffsetFetchResponse, error) {
	resp, err := c.groupCall(ctx, 9, connGroup, func(v int16) kmsg.Request {
		w := kmsg.NewPtrOffsetFetchRequest()
		w.Version, w.Group = v, req.Group
		if req.Topics != nil {
			w.Topics = []kmsg.OffsetFetchRequestTopic{}
		}
		for _, t := range req.Topics {
			wt := kmsg.NewOffsetFetchRequestTopic()
			wt.Topic, wt.Partitions = t.Topic, t.Partitions
			w.Topics = append(w.Topics, wt)
		}
		return w
	})
	if err != nil {
		return nil, err
	}
	w := resp.(*kmsg.OffsetFetchResponse)
	r := &OffsetFetchResponse{Err: ErrorForCode(w.ErrorCode)}
	for _, t := range w.Topics {
		rt := OffsetFetchTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, OffsetFetchPartitionResponse{Partition: p.Partition, Offset: p.Offset,
				LeaderEpoch: p.LeaderEpoch, Metadata: strOf(p.Metadata), Err: ErrorForCode(p.ErrorCode)})
		}
		r.Topics = append(r.Topics, rt)
	}
	return r, nil
}

// DescribeGroups sends a DescribeGroups request.
func (c *TCPClient) DescribeGroups(ctx context.Context, req *DescribeGroupsRequest) (*DescribeGroupsResponse, error) {
	resp, err := c.groupCall(ctx, 15, connGroup, func(v int16) kmsg.Request {
		w := kmsg.NewPtrDescribeGroupsRequest()
		w.Version, w.Groups = v, req.Groups
		return w
	})
	if err != nil {
		return nil, err
	}
	w := resp.(*kmsg.DescribeGroupsResponse)
	r := &DescribeGroupsResponse{}
	for _, g := range w.Groups {
		d := DescribedGroup{Err: wireError(g.ErrorCode, g.ErrorMessage), Group: g.Group, State: g.State, ProtocolType: g.ProtocolType,
			Protocol: g.Protocol, GenerationID: NoGeneration}
		for _, m := range g.Members {
			d.Members = append(d.Members, DescribedMember{MemberID: m.MemberID, GroupInstanceID: strOf(m.InstanceID), ClientID: m.ClientID,
				ClientHost: m.ClientHost, Metadata: m.ProtocolMetadata, Assignment: m.MemberAssignment})
		}
		r.Groups = append(r.Groups, d)
	}
	return r, nil
}

// ListGroups sends a ListGroups request.
func (c *TCPClient) ListGroups(ctx context.Context, req *ListGroupsRequest) (*ListGroupsResponse, error) {
	resp, err := c.groupCall(ctx, 16, connGroup, func(v int16) kmsg.Request {
		w := kmsg.NewPtrListGroupsRequest()
		w.Version = v
		if v >= 4 {
			w.StatesFilter = req.StatesFilter
		}
		return w
	})
	if err != nil {
		return nil, err
	}
	w := resp.(*kmsg.ListGroupsResponse)
	r := &ListGroupsResponse{Err: ErrorForCode(w.ErrorCode)}
	for _, g := range w.Groups {
		r.Groups = append(r.Groups, ListedGroup{Group: g.Group, ProtocolType: g.ProtocolType, State: g.GroupState})
	}
	return r, nil
}

// DeleteGroups sends a DeleteGroups request.
func (c *TCPClient) DeleteGroups(ctx context.Context, req *DeleteGroupsRequest) (*DeleteGroupsResponse, error) {
	resp, err := c.groupCall(ctx, 42, connGroup, func(v int16) kmsg.Request {
		w := kmsg.NewPtrDeleteGroupsRequest()
		w.Version, w.Groups = v, req.Groups
		return w
	})
	if err != nil {
		return nil, err
	}
	w := resp.(*kmsg.DeleteGroupsResponse)
	r := &DeleteGroupsResponse{}
	for _, g := range w.Groups {
		r.Results = append(r.Results, DeletedGroup{Group: g.Group, Err: wireError(g.ErrorCode, g.ErrorMessage)})
	}
	return r, nil
}
