package transport

// wire_group.go translates the group coordinator's requests (GroupClient)
// to and from Kafka's wire protocol.
//
// Two requests changed shape across versions: FindCoordinator asks for
// many keys from v4 and OffsetFetch for many groups from v8. partlog's
// types name one key and one group, so the client sends one, and the
// server asks its handler once for each key or group a Kafka client sends.

import (
	"math"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// nullable returns nil for an empty string, else a pointer to s: Kafka's
// null for "not set".
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// deref returns *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// FindCoordinator.

func findCoordinatorToWire(r *FindCoordinatorRequest, version int16) *kmsg.FindCoordinatorRequest {
	w := kmsg.NewPtrFindCoordinatorRequest()
	w.Version = version
	w.CoordinatorType = int8(r.KeyType)
	if version >= 4 {
		w.CoordinatorKeys = []string{r.Key}
	} else {
		w.CoordinatorKey = r.Key
	}
	return w
}

// findCoordinatorFromWire returns one request for each key asked about.
func findCoordinatorFromWire(w *kmsg.FindCoordinatorRequest) []*FindCoordinatorRequest {
	keys := w.CoordinatorKeys
	if w.Version < 4 {
		keys = []string{w.CoordinatorKey}
	}
	rs := make([]*FindCoordinatorRequest, len(keys))
	for i, k := range keys {
		rs[i] = &FindCoordinatorRequest{Key: k, KeyType: CoordinatorType(w.CoordinatorType)}
	}
	return rs
}

// findCoordinatorResponseToWire answers the requests of one FindCoordinator
// with the handler's responses, in the same order.
func findCoordinatorResponseToWire(reqs []*FindCoordinatorRequest, resps []*FindCoordinatorResponse, version int16) *kmsg.FindCoordinatorResponse {
	w := kmsg.NewPtrFindCoordinatorResponse()
	w.Version = version
	if version < 4 {
		r := resps[0]
		w.ErrorCode, w.ErrorMessage = kafka.CodeOf(r.Err), errorMessage(r.Err)
		w.NodeID, w.Host, w.Port = r.NodeID, r.Host, r.Port
		return w
	}
	for i, r := range resps {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = reqs[i].Key
		c.ErrorCode, c.ErrorMessage = kafka.CodeOf(r.Err), errorMessage(r.Err)
		c.NodeID, c.Host, c.Port = r.NodeID, r.Host, r.Port
		w.Coordinators = append(w.Coordinators, c)
	}
	return w
}

// findCoordinatorResponseFromWire reads the answer about key.
func findCoordinatorResponseFromWire(w *kmsg.FindCoordinatorResponse, key string) *FindCoordinatorResponse {
	if w.Version < 4 {
		return &FindCoordinatorResponse{Err: wireError(w.ErrorCode, w.ErrorMessage), NodeID: w.NodeID, Host: w.Host, Port: w.Port}
	}
	for _, c := range w.Coordinators {
		if c.Key == key {
			return &FindCoordinatorResponse{Err: wireError(c.ErrorCode, c.ErrorMessage), NodeID: c.NodeID, Host: c.Host, Port: c.Port}
		}
	}
	return &FindCoordinatorResponse{Err: kafka.ErrCoordinatorNotAvailable, NodeID: -1, Port: -1}
}

// JoinGroup.

func joinGroupToWire(r *JoinGroupRequest, version int16) *kmsg.JoinGroupRequest {
	w := kmsg.NewPtrJoinGroupRequest()
	w.Version = version
	w.Group = r.Group
	w.SessionTimeoutMillis = millis(r.SessionTimeout)
	w.RebalanceTimeoutMillis = millis(r.RebalanceTimeout)
	w.MemberID = r.MemberID
	w.InstanceID = nullable(r.GroupInstanceID)
	w.ProtocolType = r.ProtocolType
	for _, p := range r.Protocols {
		wp := kmsg.NewJoinGroupRequestProtocol()
		wp.Name, wp.Metadata = p.Name, p.Metadata
		w.Protocols = append(w.Protocols, wp)
	}
	w.Reason = nullable(r.Reason)
	return w
}

// joinGroupFromWire translates a JoinGroup; the server sets ClientID and
// ClientHost from the request header and the connection, as Kafka does.
func joinGroupFromWire(w *kmsg.JoinGroupRequest) *JoinGroupRequest {
	r := &JoinGroupRequest{
		Group: w.Group, SessionTimeout: time.Duration(w.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout: time.Duration(w.RebalanceTimeoutMillis) * time.Millisecond,
		MemberID:         w.MemberID, GroupInstanceID: deref(w.InstanceID), ProtocolType: w.ProtocolType,
		Reason: deref(w.Reason),
	}
	if w.Version < 1 { // no rebalance timeout yet: Kafka waits the session timeout
		r.RebalanceTimeout = r.SessionTimeout
	}
	for _, p := range w.Protocols {
		r.Protocols = append(r.Protocols, JoinGroupProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	return r
}

func joinGroupResponseToWire(r *JoinGroupResponse, version int16) *kmsg.JoinGroupResponse {
	w := kmsg.NewPtrJoinGroupResponse()
	w.Version = version
	w.ErrorCode = kafka.CodeOf(r.Err)
	w.Generation = r.GenerationID
	w.ProtocolType = nullable(r.ProtocolType)
	w.Protocol = kmsg.StringPtr(r.ProtocolName)
	w.LeaderID = r.Leader
	w.MemberID = r.MemberID
	w.Members = []kmsg.JoinGroupResponseMember{}
	for _, m := range r.Members {
		wm := kmsg.NewJoinGroupResponseMember()
		wm.MemberID, wm.InstanceID, wm.ProtocolMetadata = m.MemberID, nullable(m.GroupInstanceID), m.Metadata
		w.Members = append(w.Members, wm)
	}
	return w
}

func joinGroupResponseFromWire(w *kmsg.JoinGroupResponse) *JoinGroupResponse {
	r := &JoinGroupResponse{
		Err: kafka.ErrorForCode(w.ErrorCode), GenerationID: w.Generation, ProtocolType: deref(w.ProtocolType),
		ProtocolName: deref(w.Protocol), Leader: w.LeaderID, MemberID: w.MemberID,
	}
	for _, m := range w.Members {
		r.Members = append(r.Members, JoinGroupMember{MemberID: m.MemberID, GroupInstanceID: deref(m.InstanceID), Metadata: m.ProtocolMetadata})
	}
	return r
}

// SyncGroup.

func syncGroupToWire(r *SyncGroupRequest, version int16) *kmsg.SyncGroupRequest {
	w := kmsg.NewPtrSyncGroupRequest()
	w.Version = version
	w.Group, w.Generation, w.MemberID = r.Group, r.GenerationID, r.MemberID
	w.InstanceID = nullable(r.GroupInstanceID)
	w.ProtocolType, w.Protocol = nullable(r.ProtocolType), nullable(r.ProtocolName)
	w.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{}
	for _, a := range r.Assignments {
		wa := kmsg.NewSyncGroupRequestGroupAssignment()
		wa.MemberID, wa.MemberAssignment = a.MemberID, a.Assignment
		w.GroupAssignment = append(w.GroupAssignment, wa)
	}
	return w
}

func syncGroupFromWire(w *kmsg.SyncGroupRequest) *SyncGroupRequest {
	r := &SyncGroupRequest{
		Group: w.Group, GenerationID: w.Generation, MemberID: w.MemberID, GroupInstanceID: deref(w.InstanceID),
		ProtocolType: deref(w.ProtocolType), ProtocolName: deref(w.Protocol),
	}
	for _, a := range w.GroupAssignment {
		r.Assignments = append(r.Assignments, SyncGroupAssignment{MemberID: a.MemberID, Assignment: a.MemberAssignment})
	}
	return r
}

func syncGroupResponseToWire(r *SyncGroupResponse, version int16) *kmsg.SyncGroupResponse {
	w := kmsg.NewPtrSyncGroupResponse()
	w.Version = version
	w.ErrorCode = kafka.CodeOf(r.Err)
	w.ProtocolType, w.Protocol = nullable(r.ProtocolType), nullable(r.ProtocolName)
	w.MemberAssignment = r.Assignment
	if w.MemberAssignment == nil {
		w.MemberAssignment = []byte{}
	}
	return w
}

func syncGroupResponseFromWire(w *kmsg.SyncGroupResponse) *SyncGroupResponse {
	r := &SyncGroupResponse{
		Err: kafka.ErrorForCode(w.ErrorCode), ProtocolType: deref(w.ProtocolType), ProtocolName: deref(w.Protocol),
		Assignment: w.MemberAssignment,
	}
	if len(r.Assignment) == 0 {
		r.Assignment = nil
	}
	return r
}

// Heartbeat.

func heartbeatToWire(r *HeartbeatRequest, version int16) *kmsg.HeartbeatRequest {
	w := kmsg.NewPtrHeartbeatRequest()
	w.Version = version
	w.Group, w.Generation, w.MemberID, w.InstanceID = r.Group, r.GenerationID, r.MemberID, nullable(r.GroupInstanceID)
	return w
}

func heartbeatFromWire(w *kmsg.HeartbeatRequest) *HeartbeatRequest {
	return &HeartbeatRequest{Group: w.Group, GenerationID: w.Generation, MemberID: w.MemberID, GroupInstanceID: deref(w.InstanceID)}
}

func heartbeatResponseToWire(r *HeartbeatResponse, version int16) *kmsg.HeartbeatResponse {
	w := kmsg.NewPtrHeartbeatResponse()
	w.Version = version
	w.ErrorCode = kafka.CodeOf(r.Err)
	return w
}

func heartbeatResponseFromWire(w *kmsg.HeartbeatResponse) *HeartbeatResponse {
	return &HeartbeatResponse{Err: kafka.ErrorForCode(w.ErrorCode)}
}

// LeaveGroup.

// leaveGroupToWire translates a LeaveGroup. Before v3 a request names
// one member by its member id only; the caller checks that it fits.
func leaveGroupToWire(r *LeaveGroupRequest, version int16) *kmsg.LeaveGroupRequest {
	w := kmsg.NewPtrLeaveGroupRequest()
	w.Version = version
	w.Group = r.Group
	if version < 3 {
		if len(r.Members) > 0 {
			w.MemberID = r.Members[0].MemberID
		}
		return w
	}
	for _, m := range r.Members {
		wm := kmsg.NewLeaveGroupRequestMember()
		wm.MemberID, wm.InstanceID, wm.Reason = m.MemberID, nullable(m.GroupInstanceID), nullable(m.Reason)
		w.Members = append(w.Members, wm)
	}
	return w
}

// leaveGroupFits reports whether r can be sent in version: before v3 a
// LeaveGroup names one member, by member id.
func leaveGroupFits(r *LeaveGroupRequest, version int16) bool {
	return version >= 3 || len(r.Members) == 1 && r.Members[0].GroupInstanceID == ""
}

func leaveGroupFromWire(w *kmsg.LeaveGroupRequest) *LeaveGroupRequest {
	r := &LeaveGroupRequest{Group: w.Group}
	if w.Version < 3 {
		r.Members = []LeaveGroupMember{{MemberID: w.MemberID}}
		return r
	}
	for _, m := range w.Members {
		r.Members = append(r.Members, LeaveGroupMember{MemberID: m.MemberID, GroupInstanceID: deref(m.InstanceID), Reason: deref(m.Reason)})
	}
	return r
}

// leaveGroupResponseToWire translates a LeaveGroup answer. Before v3 it
// has one error: the request's, else the one member's.
func leaveGroupResponseToWire(r *LeaveGroupResponse, version int16) *kmsg.LeaveGroupResponse {
	w := kmsg.NewPtrLeaveGroupResponse()
	w.Version = version
	w.ErrorCode = kafka.CodeOf(r.Err)
	if version < 3 {
		if r.Err == nil && len(r.Members) > 0 {
			w.ErrorCode = kafka.CodeOf(r.Members[0].Err)
		}
		return w
	}
	for _, m := range r.Members {
		wm := kmsg.NewLeaveGroupResponseMember()
		wm.MemberID, wm.InstanceID, wm.ErrorCode = m.MemberID, nullable(m.GroupInstanceID), kafka.CodeOf(m.Err)
		w.Members = append(w.Members, wm)
	}
	return w
}

// leaveGroupResponseFromWire translates a LeaveGroup answer to req. Before
// v3 the one error is the request's and its member's.
func leaveGroupResponseFromWire(req *LeaveGroupRequest, w *kmsg.LeaveGroupResponse) *LeaveGroupResponse {
	r := &LeaveGroupResponse{Err: kafka.ErrorForCode(w.ErrorCode)}
	if w.Version < 3 {
		for _, m := range req.Members {
			r.Members = append(r.Members, LeaveGroupMemberResponse{MemberID: m.MemberID, Err: r.Err})
		}
		return r
	}
	for _, m := range w.Members {
		r.Members = append(r.Members, LeaveGroupMemberResponse{MemberID: m.MemberID, GroupInstanceID: deref(m.InstanceID), Err: kafka.ErrorForCode(m.ErrorCode)})
	}
	return r
}

// OffsetCommit.

func offsetCommitToWire(r *OffsetCommitRequest, version int16) *kmsg.OffsetCommitRequest {
	w := kmsg.NewPtrOffsetCommitRequest()
	w.Version = version
	w.Group, w.Generation, w.MemberID, w.InstanceID = r.Group, r.GenerationID, r.MemberID, nullable(r.GroupInstanceID)
	w.RetentionTimeMillis = -1 // the broker's offsets.retention.minutes
	for _, t := range r.Topics {
		wt := kmsg.NewOffsetCommitRequestTopic()
		wt.Topic = t.Topic
		for _, p := range t.Partitions {
			wp := kmsg.NewOffsetCommitRequestTopicPartition()
			wp.Partition, wp.Offset, wp.LeaderEpoch, wp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, kmsg.StringPtr(p.Metadata)
			wt.Partitions = append(wt.Partitions, wp)
		}
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func offsetCommitFromWire(w *kmsg.OffsetCommitRequest) *OffsetCommitRequest {
	r := &OffsetCommitRequest{Group: w.Group, GenerationID: w.Generation, MemberID: w.MemberID, GroupInstanceID: deref(w.InstanceID)}
	for _, wt := range w.Topics {
		t := OffsetCommitTopic{Topic: wt.Topic}
		for _, wp := range wt.Partitions {
			p := OffsetCommitPartition{Partition: wp.Partition, Offset: wp.Offset, LeaderEpoch: wp.LeaderEpoch, Metadata: deref(wp.Metadata)}
			if w.Version < 6 {
				p.LeaderEpoch = -1
			}
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

func offsetCommitResponseToWire(r *OffsetCommitResponse, version int16) *kmsg.OffsetCommitResponse {
	w := kmsg.NewPtrOffsetCommitResponse()
	w.Version = version
	for _, t := range r.Topics {
		wt := kmsg.NewOffsetCommitResponseTopic()
		wt.Topic = t.Topic
		for _, p := range t.Partitions {
			wp := kmsg.NewOffsetCommitResponseTopicPartition()
			wp.Partition, wp.ErrorCode = p.Partition, kafka.CodeOf(p.Err)
			wt.Partitions = append(wt.Partitions, wp)
		}
		w.Topics = append(w.Topics, wt)
	}
	return w
}

func offsetCommitResponseFromWire(w *kmsg.OffsetCommitResponse) *OffsetCommitResponse {
	r := &OffsetCommitResponse{}
	for _, wt := range w.Topics {
		t := OffsetCommitTopicResponse{Topic: wt.Topic}
		for _, wp := range wt.Partitions {
			t.Partitions = append(t.Partitions, OffsetCommitPartitionResponse{Partition: wp.Partition, Err: kafka.ErrorForCode(wp.ErrorCode)})
		}
		r.Topics = append(r.Topics, t)
	}
	return r
}

// OffsetFetch.

func offsetFetchToWire(r *OffsetFetchRequest, version int16) *kmsg.OffsetFetchRequest {
	w := kmsg.NewPtrOffsetFetchRequest()
	w.Version = version
	if version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = r.Group
		if r.Topics != nil {
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range r.Topics {
				wt := kmsg.NewOffsetFetchRequestGroupTopic()
				wt.Topic, wt.Partitions = t.Topic, orEmpty(t.Partitions)
				g.Topics = append(g.Topics, wt)
			}
		}
		w.Groups = []kmsg.OffsetFetchRequestGroup{g}
		return w
	}
	w.Group = r.Group
	if r.Topics != nil {
		w.Topics = []kmsg.OffsetFetchRequestTopic{}
		for _, t := range r.Topics {
			wt := kmsg.NewOffsetFetchRequestTopic()
			wt.Topic, wt.Partitions = t.Topic, orEmpty(t.Partitions)
			w.Topics = append(w.Topics, wt)
		}
	}
	return w
}

// offsetFetchFromWire returns one request for each group asked about.
func offsetFetchFromWire(w *kmsg.OffsetFetchRequest) []*OffsetFetchRequest {
	if w.Version < 8 {
		r := &OffsetFetchRequest{Group: w.Group}
		if w.Topics != nil {
			r.Topics = []OffsetFetchTopic{}
			for _, wt := range w.Topics {
				r.Topics = append(r.Topics, OffsetFetchTopic{Topic: wt.Topic, Partitions: wt.Partitions})
			}
		}
		return []*OffsetFetchRequest{r}
	}
	rs := make([]*OffsetFetchRequest, len(w.Groups))
	for i, g := range w.Groups {
		r := &OffsetFetchRequest{Group: g.Group}
		if g.Topics != nil {
			r.Topics = []OffsetFetchTopic{}
			for _, wt := range g.Topics {
				r.Topics = append(r.Topics, OffsetFetchTopic{Topic: wt.Topic, Partitions: wt.Partitions})
			}
		}
		rs[i] = r
	}
	return rs
}

// offsetFetchResponseToWire answers the groups of one OffsetFetch with the
// handler's responses, in the same order.
func offsetFetchResponseToWire(reqs []*OffsetFetchRequest, resps []*OffsetFetchResponse, version int16) *kmsg.OffsetFetchResponse {
	w := kmsg.NewPtrOffsetFetchResponse()
	w.Version = version
	if version < 8 {
		r := resps[0]
		w.ErrorCode = kafka.CodeOf(r.Err)
		w.Topics = []kmsg.OffsetFetchResponseTopic{}
		for _, t := range r.Topics {
			wt := kmsg.NewOffsetFetchResponseTopic()
			wt.Topic = t.Topic
			for _, p := range t.Partitions {
				wp := kmsg.NewOffsetFetchResponseTopicPartition()
				wp.Partition, wp.Offset, wp.LeaderEpoch, wp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, kmsg.StringPtr(p.Metadata)
				wp.ErrorCode = kafka.CodeOf(p.Err)
				if wp.ErrorCode == 0 && version < 2 { // no request-wide error yet
					wp.ErrorCode = w.ErrorCode
				}
				wt.Partitions = append(wt.Partitions, wp)
			}
			w.Topics = append(w.Topics, wt)
		}
		return w
	}
	for i, r := range resps {
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group = reqs[i].Group
		g.ErrorCode = kafka.CodeOf(r.Err)
		g.Topics = []kmsg.OffsetFetchResponseGroupTopic{}
		for _, t := range r.Topics {
			wt := kmsg.NewOffsetFetchResponseGroupTopic()
			wt.Topic = t.Topic
			for _, p := range t.Partitions {
				wp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				wp.Partition, wp.Offset, wp.LeaderEpoch, wp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, kmsg.StringPtr(p.Metadata)
				wp.ErrorCode = kafka.CodeOf(p.Err)
				wt.Partitions = append(wt.Partitions, wp)
			}
			g.Topics = append(g.Topics, wt)
		}
		w.Groups = append(w.Groups, g)
	}
	return w
}

// offsetFetchResponseFromWire reads the answer about group.
func offsetFetchResponseFromWire(w *kmsg.OffsetFetchResponse, group string) *OffsetFetchResponse {
	r := &OffsetFetchResponse{}
	if w.Version < 8 {
		r.Err = kafka.ErrorForCode(w.ErrorCode)
		for _, wt := range w.Topics {
			t := OffsetFetchTopicResponse{Topic: wt.Topic}
			for _, wp := range wt.Partitions {
				p := OffsetFetchPartitionResponse{Partition: wp.Partition, Offset: wp.Offset, LeaderEpoch: wp.LeaderEpoch, Metadata: deref(wp.Metadata), Err: kafka.ErrorForCode(wp.ErrorCode)}
				if w.Version < 5 {
					p.LeaderEpoch = -1
				}
				t.Partitions = append(t.Partitions, p)
			}
			r.Topics = append(r.Topics, t)
		}
		return r
	}
	for _, g := range w.Groups {
		if g.Group != group {
			continue
		}
		r.Err = kafka.ErrorForCode(g.ErrorCode)
		for _, wt := range g.Topics {
			t := OffsetFetchTopicResponse{Topic: wt.Topic}
			for _, wp := range wt.Partitions {
				t.Partitions = append(t.Partitions, OffsetFetchPartitionResponse{
					Partition: wp.Partition, Offset: wp.Offset, LeaderEpoch: wp.LeaderEpoch, Metadata: deref(wp.Metadata), Err: kafka.ErrorForCode(wp.ErrorCode),
				})
			}
			r.Topics = append(r.Topics, t)
		}
		return r
	}
	r.Err = kafka.ErrGroupIDNotFound
	return r
}

// DescribeGroups.

func describeGroupsToWire(r *DescribeGroupsRequest, version int16) *kmsg.DescribeGroupsRequest {
	w := kmsg.NewPtrDescribeGroupsRequest()
	w.Version = version
	w.Groups = orEmpty(r.Groups)
	return w
}

func describeGroupsFromWire(w *kmsg.DescribeGroupsRequest) *DescribeGroupsRequest {
	return &DescribeGroupsRequest{Groups: w.Groups}
}

// describeGroupsResponseToWire translates a DescribeGroups answer. Kafka's
// has no generation or leader: those stay behind.
func describeGroupsResponseToWire(r *DescribeGroupsResponse, version int16) *kmsg.DescribeGroupsResponse {
	w := kmsg.NewPtrDescribeGroupsResponse()
	w.Version = version
	w.Groups = []kmsg.DescribeGroupsResponseGroup{}
	for _, g := range r.Groups {
		wg := kmsg.NewDescribeGroupsResponseGroup()
		wg.ErrorCode, wg.ErrorMessage = kafka.CodeOf(g.Err), errorMessage(g.Err)
		wg.Group, wg.State, wg.ProtocolType, wg.Protocol = g.Group, g.State, g.ProtocolType, g.Protocol
		wg.AuthorizedOperations = math.MinInt32 // not asked for, or not known
		wg.Members = []kmsg.DescribeGroupsResponseGroupMember{}
		for _, m := range g.Members {
			wm := kmsg.NewDescribeGroupsResponseGroupMember()
			wm.MemberID, wm.InstanceID, wm.ClientID, wm.ClientHost = m.MemberID, nullable(m.GroupInstanceID), m.ClientID, m.ClientHost
			wm.ProtocolMetadata, wm.MemberAssignment = orEmpty(m.Metadata), orEmpty(m.Assignment)
			wg.Members = append(wg.Members, wm)
		}
		w.Groups = append(w.Groups, wg)
	}
	return w
}

// describeGroupsResponseFromWire translates a DescribeGroups answer; Kafka's
// carries no generation or leader, so GenerationID is NoGeneration and
// Leader empty.
func describeGroupsResponseFromWire(w *kmsg.DescribeGroupsResponse) *DescribeGroupsResponse {
	r := &DescribeGroupsResponse{}
	for _, wg := range w.Groups {
		g := DescribedGroup{
			Err: wireError(wg.ErrorCode, wg.ErrorMessage), Group: wg.Group, State: wg.State,
			ProtocolType: wg.ProtocolType, Protocol: wg.Protocol, GenerationID: NoGeneration,
		}
		for _, wm := range wg.Members {
			g.Members = append(g.Members, DescribedMember{
				MemberID: wm.MemberID, GroupInstanceID: deref(wm.InstanceID), ClientID: wm.ClientID, ClientHost: wm.ClientHost,
				Metadata: orNilBytes(wm.ProtocolMetadata), Assignment: orNilBytes(wm.MemberAssignment),
			})
		}
		r.Groups = append(r.Groups, g)
	}
	return r
}

// ListGroups.

func listGroupsToWire(r *ListGroupsRequest, version int16) *kmsg.ListGroupsRequest {
	w := kmsg.NewPtrListGroupsRequest()
	w.Version = version
	w.StatesFilter = r.StatesFilter
	return w
}

func listGroupsFromWire(w *kmsg.ListGroupsRequest) *ListGroupsRequest {
	r := &ListGroupsRequest{}
	if len(w.StatesFilter) > 0 {
		r.StatesFilter = w.StatesFilter
	}
	return r
}

func listGroupsResponseToWire(r *ListGroupsResponse, version int16) *kmsg.ListGroupsResponse {
	w := kmsg.NewPtrListGroupsResponse()
	w.Version = version
	w.ErrorCode = kafka.CodeOf(r.Err)
	w.Groups = []kmsg.ListGroupsResponseGroup{}
	for _, g := range r.Groups {
		wg := kmsg.NewListGroupsResponseGroup()
		wg.Group, wg.ProtocolType, wg.GroupState = g.Group, g.ProtocolType, g.State
		w.Groups = append(w.Groups, wg)
	}
	return w
}

func listGroupsResponseFromWire(w *kmsg.ListGroupsResponse) *ListGroupsResponse {
	r := &ListGroupsResponse{Err: kafka.ErrorForCode(w.ErrorCode)}
	for _, wg := range w.Groups {
		r.Groups = append(r.Groups, ListedGroup{Group: wg.Group, ProtocolType: wg.ProtocolType, State: wg.GroupState})
	}
	return r
}

// DeleteGroups.

func deleteGroupsToWire(r *DeleteGroupsRequest, version int16) *kmsg.DeleteGroupsRequest {
	w := kmsg.NewPtrDeleteGroupsRequest()
	w.Version = version
	w.Groups = orEmpty(r.Groups)
	return w
}

func deleteGroupsFromWire(w *kmsg.DeleteGroupsRequest) *DeleteGroupsRequest {
	return &DeleteGroupsRequest{Groups: w.Groups}
}

func deleteGroupsResponseToWire(r *DeleteGroupsResponse, version int16) *kmsg.DeleteGroupsResponse {
	w := kmsg.NewPtrDeleteGroupsResponse()
	w.Version = version
	w.Groups = []kmsg.DeleteGroupsResponseGroup{}
	for _, g := range r.Results {
		wg := kmsg.NewDeleteGroupsResponseGroup()
		wg.Group, wg.ErrorCode, wg.ErrorMessage = g.Group, kafka.CodeOf(g.Err), errorMessage(g.Err)
		w.Groups = append(w.Groups, wg)
	}
	return w
}

func deleteGroupsResponseFromWire(w *kmsg.DeleteGroupsResponse) *DeleteGroupsResponse {
	r := &DeleteGroupsResponse{}
	for _, wg := range w.Groups {
		r.Results = append(r.Results, DeletedGroup{Group: wg.Group, Err: wireError(wg.ErrorCode, wg.ErrorMessage)})
	}
	return r
}

// orNilBytes returns b, or nil for an empty b.
func orNilBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
