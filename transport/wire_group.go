package transport

// wire_group.go translates the group requests to and from Kafka's wire
// protocol, and dispatches them on a server whose handler is a
// GroupClient.

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupAPIs are the keys of the GroupClient's APIs.
var groupAPIs = map[int16]bool{8: true, 9: true, 10: true, 11: true, 12: true, 13: true, 14: true, 15: true, 16: true, 42: true}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func strOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func msOf(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// dispatchGroup calls a GroupClient handler for one decoded request;
// handled is false for a request that is not a group request.
// A coordinator named without an address is given the server's
// (advertised).
func dispatchGroup(ctx context.Context, h GroupClient, req kmsg.Request, version int16, advertised string) (_ kmsg.Response, handled bool, _ error) {
	switch req := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		resp, err := h.FindCoordinator(ctx, &FindCoordinatorRequest{Key: req.CoordinatorKey, KeyType: CoordinatorType(req.CoordinatorType)})
		if err != nil {
			return nil, true, err
		}
		w := kmsg.NewPtrFindCoordinatorResponse()
		w.Version, w.ErrorCode, w.ErrorMessage = version, CodeOf(resp.Err), errorMessage(resp.Err)
		w.NodeID, w.Host, w.Port = resp.NodeID, resp.Host, resp.Port
		if resp.Err == nil && resp.Host == "" {
			if host, port, err := net.SplitHostPort(advertised); err == nil {
				if p, err := strconv.Atoi(port); err == nil {
					w.Host, w.Port = host, int32(p)
				}
			}
		}
		return w, true, nil
	case *kmsg.JoinGroupRequest:
		r := &JoinGroupRequest{Group: req.Group, SessionTimeout: msOf(req.SessionTimeoutMillis), RebalanceTimeout: msOf(req.RebalanceTimeoutMillis),
			MemberID: req.MemberID, GroupInstanceID: strOf(req.InstanceID), ProtocolType: req.ProtocolType, Reason: strOf(req.Reason)}
		if version == 0 {
			r.RebalanceTimeout = r.SessionTimeout
		}
		for _, p := range req.Protocols {
			r.Protocols = append(r.Protocols, JoinGroupProtocol{Name: p.Name, Metadata: p.Metadata})
		}
		resp, err := h.JoinGroup(ctx, r)
		if err != nil {
			return nil, true, err
		}
		w := kmsg.NewPtrJoinGroupResponse()
		w.Version, w.ErrorCode = version, CodeOf(resp.Err)
		w.Generation, w.ProtocolType, w.Protocol = resp.GenerationID, strPtr(resp.ProtocolType), strPtr(resp.ProtocolName)
		w.LeaderID, w.MemberID = resp.Leader, resp.MemberID
		for _, m := range resp.Members {
			wm := kmsg.NewJoinGroupResponseMember()
			wm.MemberID, wm.InstanceID, wm.ProtocolMetadata = m.MemberID, strPtr(m.GroupInstanceID), m.Metadata
			w.Members = append(w.Members, wm)
		}
		return w, true, nil
	case *kmsg.SyncGroupRequest:
		r := &SyncGroupRequest{Group: req.Group, GenerationID: req.Generation, MemberID: req.MemberID, GroupInstanceID: strOf(req.InstanceID),
			ProtocolType: strOf(req.ProtocolType), ProtocolName: strOf(req.Protocol)}
		for _, a := range req.GroupAssignment {
			r.Assignments = append(r.Assignments, SyncGroupAssignment{MemberID: a.MemberID, Assignment: a.MemberAssignment})
		}
		resp, err := h.SyncGroup(ctx, r)
		if err != nil {
			return nil, true, err
		}
		w := kmsg.NewPtrSyncGroupResponse()
		w.Version, w.ErrorCode = version, CodeOf(resp.Err)
		w.ProtocolType, w.Protocol, w.MemberAssignment = strPtr(resp.ProtocolType), strPtr(resp.ProtocolName), resp.Assignment
		return w, true, nil
	case *kmsg.HeartbeatRequest:
		resp, err := h.Heartbeat(ctx, &HeartbeatRequest{Group: req.Group, GenerationID: req.Generation, MemberID: req.MemberID, GroupInstanceID: strOf(req.InstanceID)})
		if err != nil {
			return nil, true, err
		}
		w := kmsg.NewPtrHeartbeatResponse()
		w.Version, w.ErrorCode = version, CodeOf(resp.Err)
		return w, true, nil
	case *kmsg.LeaveGroupRequest:
		r := &LeaveGroupRequest{Group: req.Group}
		if version < 3 {
			r.Members = []LeaveGroupMember{{MemberID: req.MemberID}}
		}
		for _, m := range req.Members {
			r.Members = append(r.Members, LeaveGroupMember{MemberID: m.MemberID, GroupInstanceID: strOf(m.InstanceID), Reason: strOf(m.Reason)})
		}
		resp, err := h.LeaveGroup(ctx, r)
		if err != nil {
			return nil, true, err
		}
		w := kmsg.NewPtrLeaveGroupResponse()
		w.Version, w.ErrorCode = version, CodeOf(resp.Err)
		for _, m := range resp.Members {
			if version < 3 && w.ErrorCode == 0 {
				w.ErrorCode = CodeOf(m.Err)
			}
			wm := kmsg.NewLeaveGroupResponseMember()
			wm.MemberID, wm.InstanceID, wm.ErrorCode = m.MemberID, strPtr(m.GroupInstanceID), CodeOf(m.Err)
			w.Members = append(w.Members, wm)
		}
		return w, true, nil
	case *kmsg.OffsetCommitRequest:
		r := &OffsetCommitRequest{Group: req.Group, GenerationID: req.Generation, MemberID: req.MemberID, GroupInstanceID: strOf(req.InstanceID)}
		for _, t := range req.Topics {
			rt := OffsetCommitTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				epoch := p.LeaderEpoch
				if version < 6 {
					epoch = -1
				}
				rt.Partitions = append(rt.Partitions, OffsetCommitPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: epoch, Metadata: strOf(p.Metadata)})
			}
			r.Topics = append(r.Topics, rt)
		}
		resp, err := h.OffsetCommit(ctx, r)
		if err != nil {
			return nil, true, err
		}
		w := kmsg.NewPtrOffsetCommitResponse()
		w.Version = version
		for _, t := range resp.Topics {
			wt := kmsg.NewOffsetCommitResponseTopic()
			wt.Topic = t.Topic
			for _, p := range t.Partitions {
				wp := kmsg.NewOffsetCommitResponseTopicPartition()
				wp.Partition, wp.ErrorCode = p.Partition, CodeOf(p.Err)
				wt.Partitions = append(wt.Partitions, wp)
			}
			w.Topics = append(w.Topics, wt)
		}
		return w, true, nil
	case *kmsg.OffsetFetchRequest:
		r := &OffsetFetchRequest{Group: req.Group}
		if req.Topics != nil {
			r.Topics = []OffsetFetchTopic{}
		}
		for _, t := range req.Topics {
			r.Topics = append(r.Topics, OffsetFetchTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		resp, err := h.OffsetFetch(ctx, r)
		if err != nil {
			return nil, true, err
		}
		w := kmsg.NewPtrOffsetFetchResponse()
		w.Version, w.ErrorCode = version, CodeOf(resp.Err)
		for _, t := range resp.Topics {
			wt := kmsg.NewOffsetFetchResponseTopic()
			wt.Topic = t.Topic
			for _, p := range t.Partitions {
				wp := kmsg.NewOffsetFetchResponseTopicPartition()
				wp.Partition, wp.Offset, wp.LeaderEpoch, wp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, CodeOf(p.Err)
				wp.Metadata = &p.Metadata
				wt.Partitions = append(wt.Partitions, wp)
			}
			w.Topics = append(w.Topics, wt)
		}
		return w, true, nil
	case *kmsg.DescribeGroupsRequest:
		resp, err := h.DescribeGroups(ctx, &DescribeGroupsRequest{Groups: req.Groups})
		if err != nil {
			return nil, true, err
		}
		w := kmsg.NewPtrDescribeGroupsResponse()
		w.Version = version
		for _, g := range resp.Groups {
			wg := kmsg.NewDescribeGroupsResponseGroup()
			wg.ErrorCode, wg.ErrorMessage, wg.Group, wg.State = CodeOf(g.Err), errorMessage(g.Err), g.Group, g.State
			wg.ProtocolType, wg.Protocol = g.ProtocolType, g.Protocol
			for _, m := range g.Members {
				wm := kmsg.NewDescribeGroupsResponseGroupMember()
				wm.MemberID, wm.InstanceID, wm.ClientID, wm.ClientHost = m.MemberID, strPtr(m.GroupInstanceID), m.ClientID, m.ClientHost
				wm.ProtocolMetadata, wm.MemberAssignment = m.Metadata, m.Assignment
				wg.Members = append(wg.Members, wm)
			}
			w.Groups = append(w.Groups, wg)
		}
		return w, true, nil
	case *kmsg.ListGroupsRequest:
		resp, err := h.ListGroups(ctx, &ListGroupsRequest{StatesFilter: req.StatesFilter})
		if err != nil {
			return nil, true, err
		}
		w := kmsg.NewPtrListGroupsResponse()
		w.Version, w.ErrorCode = version, CodeOf(resp.Err)
		for _, g := range resp.Groups {
			wg := kmsg.NewListGroupsResponseGroup()
			wg.Group, wg.ProtocolType, wg.GroupState = g.Group, g.ProtocolType, g.State
			w.Groups = append(w.Groups, wg)
		}
		return w, true, nil
	case *kmsg.DeleteGroupsRequest:
		resp, err := h.DeleteGroups(ctx, &DeleteGroupsRequest{Groups: req.Groups})
		if err != nil {
			return nil, true, err
		}
		w := kmsg.NewPtrDeleteGroupsResponse()
		w.Version = version
		for _, g := range resp.Results {
			wg := kmsg.NewDeleteGroupsResponseGroup()
			wg.Group, wg.ErrorCode, wg.ErrorMessage = g.Group, CodeOf(g.Err), errorMessage(g.Err)
			w.Groups = append(w.Groups, wg)
		}
		return w, true, nil
	}
	return nil, false, nil
}
