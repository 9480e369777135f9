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
	w := versioned(kmsg.NewPtrFindCoordinatorRequest(), version)
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
	return each(orEmpty(keys), func(k string) *FindCoordinatorRequest {
		return &FindCoordinatorRequest{Key: k, KeyType: CoordinatorType(w.CoordinatorType)}
	})
}

// findCoordinatorResponseToWire answers the requests of one FindCoordinator
// with the handler's responses, in the same order.
func findCoordinatorResponseToWire(reqs []*FindCoordinatorRequest, resps []*FindCoordinatorResponse, version int16) *kmsg.FindCoordinatorResponse {
	w := versioned(kmsg.NewPtrFindCoordinatorResponse(), version)
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
	w := versioned(kmsg.NewPtrJoinGroupRequest(), version)
	w.Group, w.SessionTimeoutMillis, w.RebalanceTimeoutMillis = r.Group, millis(r.SessionTimeout), millis(r.RebalanceTimeout)
	w.MemberID, w.InstanceID, w.ProtocolType = r.MemberID, nullable(r.GroupInstanceID), r.ProtocolType
	w.Protocols = each(r.Protocols, func(p JoinGroupProtocol) kmsg.JoinGroupRequestProtocol {
		return kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: p.Metadata}
	})
	w.Reason = nullable(r.Reason)
	return w
}

// joinGroupFromWire translates a JoinGroup; the server sets ClientID and
// ClientHost from the request header and the connection, as Kafka does.
func joinGroupFromWire(w *kmsg.JoinGroupRequest) *JoinGroupRequest {
	r := &JoinGroupRequest{
		Group: w.Group, SessionTimeout: fromMillis(w.SessionTimeoutMillis), RebalanceTimeout: fromMillis(w.RebalanceTimeoutMillis),
		MemberID: w.MemberID, GroupInstanceID: deref(w.InstanceID), ProtocolType: w.ProtocolType, Reason: deref(w.Reason),
		Protocols: each(w.Protocols, func(p kmsg.JoinGroupRequestProtocol) JoinGroupProtocol {
			return JoinGroupProtocol{Name: p.Name, Metadata: p.Metadata}
		}),
	}
	if w.Version < 1 { // no rebalance timeout yet: Kafka waits the session timeout
		r.RebalanceTimeout = r.SessionTimeout
	}
	return r
}

func joinGroupResponseToWire(r *JoinGroupResponse, version int16) *kmsg.JoinGroupResponse {
	w := versioned(kmsg.NewPtrJoinGroupResponse(), version)
	w.ErrorCode, w.Generation = kafka.CodeOf(r.Err), r.GenerationID
	w.ProtocolType, w.Protocol = nullable(r.ProtocolType), kmsg.StringPtr(r.ProtocolName)
	w.LeaderID, w.MemberID = r.Leader, r.MemberID
	w.Members = each(orEmpty(r.Members), func(m JoinGroupMember) kmsg.JoinGroupResponseMember {
		return kmsg.JoinGroupResponseMember{MemberID: m.MemberID, InstanceID: nullable(m.GroupInstanceID), ProtocolMetadata: m.Metadata}
	})
	return w
}

func joinGroupResponseFromWire(w *kmsg.JoinGroupResponse) *JoinGroupResponse {
	return &JoinGroupResponse{
		Err: kafka.ErrorForCode(w.ErrorCode), GenerationID: w.Generation, ProtocolType: deref(w.ProtocolType),
		ProtocolName: deref(w.Protocol), Leader: w.LeaderID, MemberID: w.MemberID,
		Members: each(w.Members, func(m kmsg.JoinGroupResponseMember) JoinGroupMember {
			return JoinGroupMember{MemberID: m.MemberID, GroupInstanceID: deref(m.InstanceID), Metadata: m.ProtocolMetadata}
		}),
	}
}

// SyncGroup.

func syncGroupToWire(r *SyncGroupRequest, version int16) *kmsg.SyncGroupRequest {
	w := versioned(kmsg.NewPtrSyncGroupRequest(), version)
	w.Group, w.Generation, w.MemberID, w.InstanceID = r.Group, r.GenerationID, r.MemberID, nullable(r.GroupInstanceID)
	w.ProtocolType, w.Protocol = nullable(r.ProtocolType), nullable(r.ProtocolName)
	w.GroupAssignment = each(orEmpty(r.Assignments), func(a SyncGroupAssignment) kmsg.SyncGroupRequestGroupAssignment {
		return kmsg.SyncGroupRequestGroupAssignment{MemberID: a.MemberID, MemberAssignment: a.Assignment}
	})
	return w
}

func syncGroupFromWire(w *kmsg.SyncGroupRequest) *SyncGroupRequest {
	return &SyncGroupRequest{
		Group: w.Group, GenerationID: w.Generation, MemberID: w.MemberID, GroupInstanceID: deref(w.InstanceID),
		ProtocolType: deref(w.ProtocolType), ProtocolName: deref(w.Protocol),
		Assignments: each(w.GroupAssignment, func(a kmsg.SyncGroupRequestGroupAssignment) SyncGroupAssignment {
			return SyncGroupAssignment{MemberID: a.MemberID, Assignment: a.MemberAssignment}
		}),
	}
}

func syncGroupResponseToWire(r *SyncGroupResponse, version int16) *kmsg.SyncGroupResponse {
	w := versioned(kmsg.NewPtrSyncGroupResponse(), version)
	w.ErrorCode = kafka.CodeOf(r.Err)
	w.ProtocolType, w.Protocol = nullable(r.ProtocolType), nullable(r.ProtocolName)
	w.MemberAssignment = orEmpty(r.Assignment)
	return w
}

func syncGroupResponseFromWire(w *kmsg.SyncGroupResponse) *SyncGroupResponse {
	return &SyncGroupResponse{
		Err: kafka.ErrorForCode(w.ErrorCode), ProtocolType: deref(w.ProtocolType), ProtocolName: deref(w.Protocol),
		Assignment: orNilBytes(w.MemberAssignment),
	}
}

// Heartbeat.

func heartbeatToWire(r *HeartbeatRequest, version int16) *kmsg.HeartbeatRequest {
	w := versioned(kmsg.NewPtrHeartbeatRequest(), version)
	w.Group, w.Generation, w.MemberID, w.InstanceID = r.Group, r.GenerationID, r.MemberID, nullable(r.GroupInstanceID)
	return w
}

func heartbeatFromWire(w *kmsg.HeartbeatRequest) *HeartbeatRequest {
	return &HeartbeatRequest{Group: w.Group, GenerationID: w.Generation, MemberID: w.MemberID, GroupInstanceID: deref(w.InstanceID)}
}

func heartbeatResponseToWire(r *HeartbeatResponse, version int16) *kmsg.HeartbeatResponse {
	w := versioned(kmsg.NewPtrHeartbeatResponse(), version)
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
	w := versioned(kmsg.NewPtrLeaveGroupRequest(), version)
	w.Group = r.Group
	if version < 3 {
		if len(r.Members) > 0 {
			w.MemberID = r.Members[0].MemberID
		}
		return w
	}
	w.Members = each(r.Members, func(m LeaveGroupMember) kmsg.LeaveGroupRequestMember {
		return kmsg.LeaveGroupRequestMember{MemberID: m.MemberID, InstanceID: nullable(m.GroupInstanceID), Reason: nullable(m.Reason)}
	})
	return w
}

// leaveGroupFits reports whether r can be sent in version: before v3 a
// LeaveGroup names one member, by member id.
func leaveGroupFits(r *LeaveGroupRequest, version int16) bool {
	return version >= 3 || len(r.Members) == 1 && r.Members[0].GroupInstanceID == ""
}

func leaveGroupFromWire(w *kmsg.LeaveGroupRequest) *LeaveGroupRequest {
	if w.Version < 3 {
		return &LeaveGroupRequest{Group: w.Group, Members: []LeaveGroupMember{{MemberID: w.MemberID}}}
	}
	return &LeaveGroupRequest{Group: w.Group, Members: each(w.Members, func(m kmsg.LeaveGroupRequestMember) LeaveGroupMember {
		return LeaveGroupMember{MemberID: m.MemberID, GroupInstanceID: deref(m.InstanceID), Reason: deref(m.Reason)}
	})}
}

// leaveGroupResponseToWire translates a LeaveGroup answer. Before v3 it
// has one error: the request's, else the one member's.
func leaveGroupResponseToWire(r *LeaveGroupResponse, version int16) *kmsg.LeaveGroupResponse {
	w := versioned(kmsg.NewPtrLeaveGroupResponse(), version)
	w.ErrorCode = kafka.CodeOf(r.Err)
	if version < 3 {
		if r.Err == nil && len(r.Members) > 0 {
			w.ErrorCode = kafka.CodeOf(r.Members[0].Err)
		}
		return w
	}
	w.Members = each(r.Members, func(m LeaveGroupMemberResponse) kmsg.LeaveGroupResponseMember {
		return kmsg.LeaveGroupResponseMember{MemberID: m.MemberID, InstanceID: nullable(m.GroupInstanceID), ErrorCode: kafka.CodeOf(m.Err)}
	})
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
	r.Members = each(w.Members, func(m kmsg.LeaveGroupResponseMember) LeaveGroupMemberResponse {
		return LeaveGroupMemberResponse{MemberID: m.MemberID, GroupInstanceID: deref(m.InstanceID), Err: kafka.ErrorForCode(m.ErrorCode)}
	})
	return r
}

// OffsetCommit.

func offsetCommitToWire(r *OffsetCommitRequest, version int16) *kmsg.OffsetCommitRequest {
	w := versioned(kmsg.NewPtrOffsetCommitRequest(), version)
	w.Group, w.Generation, w.MemberID, w.InstanceID = r.Group, r.GenerationID, r.MemberID, nullable(r.GroupInstanceID)
	w.RetentionTimeMillis = -1 // the broker's offsets.retention.minutes
	w.Topics = topicsToWire(r.Topics, func(p OffsetCommitPartition) kmsg.OffsetCommitRequestTopicPartition {
		wp := kmsg.NewOffsetCommitRequestTopicPartition()
		wp.Partition, wp.Offset, wp.LeaderEpoch, wp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, kmsg.StringPtr(p.Metadata)
		return wp
	}, func(topic string, wps []kmsg.OffsetCommitRequestTopicPartition) kmsg.OffsetCommitRequestTopic {
		return kmsg.OffsetCommitRequestTopic{Topic: topic, Partitions: wps}
	})
	return w
}

func offsetCommitFromWire(w *kmsg.OffsetCommitRequest) *OffsetCommitRequest {
	return &OffsetCommitRequest{Group: w.Group, GenerationID: w.Generation, MemberID: w.MemberID, GroupInstanceID: deref(w.InstanceID),
		Topics: topicsFromWire[OffsetCommitTopic](w.Topics,
			func(wt kmsg.OffsetCommitRequestTopic) (string, []kmsg.OffsetCommitRequestTopicPartition) {
				return wt.Topic, wt.Partitions
			},
			func(wp kmsg.OffsetCommitRequestTopicPartition) OffsetCommitPartition {
				p := OffsetCommitPartition{Partition: wp.Partition, Offset: wp.Offset, LeaderEpoch: wp.LeaderEpoch, Metadata: deref(wp.Metadata)}
				if w.Version < 6 {
					p.LeaderEpoch = -1
				}
				return p
			})}
}

func offsetCommitResponseToWire(r *OffsetCommitResponse, version int16) *kmsg.OffsetCommitResponse {
	w := versioned(kmsg.NewPtrOffsetCommitResponse(), version)
	w.Topics = topicsToWire(r.Topics, func(p OffsetCommitPartitionResponse) kmsg.OffsetCommitResponseTopicPartition {
		return kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: kafka.CodeOf(p.Err)}
	}, func(topic string, wps []kmsg.OffsetCommitResponseTopicPartition) kmsg.OffsetCommitResponseTopic {
		return kmsg.OffsetCommitResponseTopic{Topic: topic, Partitions: wps}
	})
	return w
}

func offsetCommitResponseFromWire(w *kmsg.OffsetCommitResponse) *OffsetCommitResponse {
	return &OffsetCommitResponse{Topics: topicsFromWire[OffsetCommitTopicResponse](w.Topics,
		func(wt kmsg.OffsetCommitResponseTopic) (string, []kmsg.OffsetCommitResponseTopicPartition) {
			return wt.Topic, wt.Partitions
		},
		func(wp kmsg.OffsetCommitResponseTopicPartition) OffsetCommitPartitionResponse {
			return OffsetCommitPartitionResponse{Partition: wp.Partition, Err: kafka.ErrorForCode(wp.ErrorCode)}
		})}
}

// OffsetFetch.

func offsetFetchToWire(r *OffsetFetchRequest, version int16) *kmsg.OffsetFetchRequest {
	w := versioned(kmsg.NewPtrOffsetFetchRequest(), version)
	w.RequireStable = r.RequireStable
	if version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = r.Group
		g.Topics = each(r.Topics, func(t OffsetFetchTopic) kmsg.OffsetFetchRequestGroupTopic {
			return kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: orEmpty(t.Partitions)}
		})
		w.Groups = []kmsg.OffsetFetchRequestGroup{g}
		return w
	}
	w.Group = r.Group
	w.Topics = each(r.Topics, func(t OffsetFetchTopic) kmsg.OffsetFetchRequestTopic {
		return kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: orEmpty(t.Partitions)}
	})
	return w
}

// offsetFetchFromWire returns one request for each group asked about;
// from version 8 on, RequireStable holds for every group.
func offsetFetchFromWire(w *kmsg.OffsetFetchRequest) []*OffsetFetchRequest {
	if w.Version < 8 {
		return []*OffsetFetchRequest{{Group: w.Group, RequireStable: w.RequireStable,
			Topics: each(w.Topics, func(wt kmsg.OffsetFetchRequestTopic) OffsetFetchTopic {
				return OffsetFetchTopic{Topic: wt.Topic, Partitions: wt.Partitions}
			})}}
	}
	return each(orEmpty(w.Groups), func(g kmsg.OffsetFetchRequestGroup) *OffsetFetchRequest {
		return &OffsetFetchRequest{Group: g.Group, RequireStable: w.RequireStable,
			Topics: each(g.Topics, func(wt kmsg.OffsetFetchRequestGroupTopic) OffsetFetchTopic {
				return OffsetFetchTopic{Topic: wt.Topic, Partitions: wt.Partitions}
			})}
	})
}

// offsetFetchResponseToWire answers the groups of one OffsetFetch with the
// handler's responses, in the same order.
func offsetFetchResponseToWire(reqs []*OffsetFetchRequest, resps []*OffsetFetchResponse, version int16) *kmsg.OffsetFetchResponse {
	w := versioned(kmsg.NewPtrOffsetFetchResponse(), version)
	if version < 8 {
		r := resps[0]
		w.ErrorCode = kafka.CodeOf(r.Err)
		w.Topics = each(orEmpty(r.Topics), func(t OffsetFetchTopicResponse) kmsg.OffsetFetchResponseTopic {
			return kmsg.OffsetFetchResponseTopic{Topic: t.Topic,
				Partitions: each(t.Partitions, func(p OffsetFetchPartitionResponse) kmsg.OffsetFetchResponseTopicPartition {
					wp := kmsg.NewOffsetFetchResponseTopicPartition()
					wp.Partition, wp.Offset, wp.LeaderEpoch, wp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, kmsg.StringPtr(p.Metadata)
					wp.ErrorCode = kafka.CodeOf(p.Err)
					if wp.ErrorCode == 0 && version < 2 { // no request-wide error yet
						wp.ErrorCode = w.ErrorCode
					}
					return wp
				})}
		})
		return w
	}
	for i, r := range resps {
		g := kmsg.NewOffsetFetchResponseGroup()
		g.Group, g.ErrorCode = reqs[i].Group, kafka.CodeOf(r.Err)
		g.Topics = each(orEmpty(r.Topics), func(t OffsetFetchTopicResponse) kmsg.OffsetFetchResponseGroupTopic {
			return kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic,
				Partitions: each(t.Partitions, func(p OffsetFetchPartitionResponse) kmsg.OffsetFetchResponseGroupTopicPartition {
					wp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					wp.Partition, wp.Offset, wp.LeaderEpoch, wp.Metadata = p.Partition, p.Offset, p.LeaderEpoch, kmsg.StringPtr(p.Metadata)
					wp.ErrorCode = kafka.CodeOf(p.Err)
					return wp
				})}
		})
		w.Groups = append(w.Groups, g)
	}
	return w
}

// offsetFetchResponseFromWire reads the answer about group.
func offsetFetchResponseFromWire(w *kmsg.OffsetFetchResponse, group string) *OffsetFetchResponse {
	if w.Version < 8 {
		r := &OffsetFetchResponse{Err: kafka.ErrorForCode(w.ErrorCode)}
		r.Topics = each(w.Topics, func(wt kmsg.OffsetFetchResponseTopic) OffsetFetchTopicResponse {
			return OffsetFetchTopicResponse{Topic: wt.Topic,
				Partitions: each(wt.Partitions, func(wp kmsg.OffsetFetchResponseTopicPartition) OffsetFetchPartitionResponse {
					p := OffsetFetchPartitionResponse{Partition: wp.Partition, Offset: wp.Offset, LeaderEpoch: wp.LeaderEpoch,
						Metadata: deref(wp.Metadata), Err: kafka.ErrorForCode(wp.ErrorCode)}
					if w.Version < 5 {
						p.LeaderEpoch = -1
					}
					return p
				})}
		})
		return r
	}
	for _, g := range w.Groups {
		if g.Group != group {
			continue
		}
		r := &OffsetFetchResponse{Err: kafka.ErrorForCode(g.ErrorCode)}
		r.Topics = each(g.Topics, func(wt kmsg.OffsetFetchResponseGroupTopic) OffsetFetchTopicResponse {
			return OffsetFetchTopicResponse{Topic: wt.Topic,
				Partitions: each(wt.Partitions, func(wp kmsg.OffsetFetchResponseGroupTopicPartition) OffsetFetchPartitionResponse {
					return OffsetFetchPartitionResponse{Partition: wp.Partition, Offset: wp.Offset, LeaderEpoch: wp.LeaderEpoch,
						Metadata: deref(wp.Metadata), Err: kafka.ErrorForCode(wp.ErrorCode)}
				})}
		})
		return r
	}
	return &OffsetFetchResponse{Err: kafka.ErrGroupIDNotFound}
}

// DescribeGroups.

func describeGroupsToWire(r *DescribeGroupsRequest, version int16) *kmsg.DescribeGroupsRequest {
	w := versioned(kmsg.NewPtrDescribeGroupsRequest(), version)
	w.Groups = orEmpty(r.Groups)
	return w
}

func describeGroupsFromWire(w *kmsg.DescribeGroupsRequest) *DescribeGroupsRequest {
	return &DescribeGroupsRequest{Groups: w.Groups}
}

// describeGroupsResponseToWire translates a DescribeGroups answer. Kafka's
// has no generation or leader: those stay behind.
func describeGroupsResponseToWire(r *DescribeGroupsResponse, version int16) *kmsg.DescribeGroupsResponse {
	w := versioned(kmsg.NewPtrDescribeGroupsResponse(), version)
	w.Groups = each(orEmpty(r.Groups), func(g DescribedGroup) kmsg.DescribeGroupsResponseGroup {
		wg := kmsg.NewDescribeGroupsResponseGroup()
		wg.ErrorCode, wg.ErrorMessage = kafka.CodeOf(g.Err), errorMessage(g.Err)
		wg.Group, wg.State, wg.ProtocolType, wg.Protocol = g.Group, g.State, g.ProtocolType, g.Protocol
		wg.AuthorizedOperations = math.MinInt32 // not asked for, or not known
		wg.Members = each(orEmpty(g.Members), func(m DescribedMember) kmsg.DescribeGroupsResponseGroupMember {
			return kmsg.DescribeGroupsResponseGroupMember{MemberID: m.MemberID, InstanceID: nullable(m.GroupInstanceID), ClientID: m.ClientID,
				ClientHost: m.ClientHost, ProtocolMetadata: orEmpty(m.Metadata), MemberAssignment: orEmpty(m.Assignment)}
		})
		return wg
	})
	return w
}

// describeGroupsResponseFromWire translates a DescribeGroups answer; Kafka's
// carries no generation or leader, so GenerationID is NoGeneration and
// Leader empty.
func describeGroupsResponseFromWire(w *kmsg.DescribeGroupsResponse) *DescribeGroupsResponse {
	return &DescribeGroupsResponse{Groups: each(w.Groups, func(wg kmsg.DescribeGroupsResponseGroup) DescribedGroup {
		return DescribedGroup{
			Err: wireError(wg.ErrorCode, wg.ErrorMessage), Group: wg.Group, State: wg.State,
			ProtocolType: wg.ProtocolType, Protocol: wg.Protocol, GenerationID: NoGeneration,
			Members: each(wg.Members, func(wm kmsg.DescribeGroupsResponseGroupMember) DescribedMember {
				return DescribedMember{MemberID: wm.MemberID, GroupInstanceID: deref(wm.InstanceID), ClientID: wm.ClientID, ClientHost: wm.ClientHost,
					Metadata: orNilBytes(wm.ProtocolMetadata), Assignment: orNilBytes(wm.MemberAssignment)}
			}),
		}
	})}
}

// ListGroups.

func listGroupsToWire(r *ListGroupsRequest, version int16) *kmsg.ListGroupsRequest {
	w := versioned(kmsg.NewPtrListGroupsRequest(), version)
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
	w := versioned(kmsg.NewPtrListGroupsResponse(), version)
	w.ErrorCode = kafka.CodeOf(r.Err)
	w.Groups = each(orEmpty(r.Groups), func(g ListedGroup) kmsg.ListGroupsResponseGroup {
		return kmsg.ListGroupsResponseGroup{Group: g.Group, ProtocolType: g.ProtocolType, GroupState: g.State}
	})
	return w
}

func listGroupsResponseFromWire(w *kmsg.ListGroupsResponse) *ListGroupsResponse {
	return &ListGroupsResponse{Err: kafka.ErrorForCode(w.ErrorCode), Groups: each(w.Groups, func(wg kmsg.ListGroupsResponseGroup) ListedGroup {
		return ListedGroup{Group: wg.Group, ProtocolType: wg.ProtocolType, State: wg.GroupState}
	})}
}

// DeleteGroups.

func deleteGroupsToWire(r *DeleteGroupsRequest, version int16) *kmsg.DeleteGroupsRequest {
	w := versioned(kmsg.NewPtrDeleteGroupsRequest(), version)
	w.Groups = orEmpty(r.Groups)
	return w
}

func deleteGroupsFromWire(w *kmsg.DeleteGroupsRequest) *DeleteGroupsRequest {
	return &DeleteGroupsRequest{Groups: w.Groups}
}

func deleteGroupsResponseToWire(r *DeleteGroupsResponse, version int16) *kmsg.DeleteGroupsResponse {
	w := versioned(kmsg.NewPtrDeleteGroupsResponse(), version)
	w.Groups = each(orEmpty(r.Results), func(g DeletedGroup) kmsg.DeleteGroupsResponseGroup {
		return kmsg.DeleteGroupsResponseGroup{Group: g.Group, ErrorCode: kafka.CodeOf(g.Err), ErrorMessage: errorMessage(g.Err)}
	})
	return w
}

func deleteGroupsResponseFromWire(w *kmsg.DeleteGroupsResponse) *DeleteGroupsResponse {
	return &DeleteGroupsResponse{Results: each(w.Groups, func(wg kmsg.DeleteGroupsResponseGroup) DeletedGroup {
		return DeletedGroup{Group: wg.Group, Err: wireError(wg.ErrorCode, wg.ErrorMessage)}
	})}
}

// orNilBytes returns b, or nil for an empty b.
func orNilBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
