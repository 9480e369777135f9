package transport

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzServerRequest feeds arbitrary request frames to the server's
// parsing: it returns an error or a request, never panics, and a request it
// takes translates into partlog's types.
func FuzzServerRequest(f *testing.F) {
	fmt := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	seeds := []kmsg.Request{
		produceToWire(&ProduceRequest{Acks: AcksAll, Topics: []ProduceTopic{{Topic: "t", Partitions: []ProducePartition{{Partition: 1, Records: []byte("batch")}}}}}, 9),
		fetchToWire(&FetchRequest{MaxBytes: 100, Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{FetchOffset: 4}}}}}, 12),
		listOffsetsToWire(&ListOffsetsRequest{Topics: []ListOffsetsTopic{{Topic: "t", Partitions: []ListOffsetsPartition{{Timestamp: -1}}}}}, 7),
		metadataToWire(&MetadataRequest{Topics: []string{"a", "b"}}, 12),
		produceToWire(&ProduceRequest{Acks: AcksLeader}, 3),
		fetchToWire(&FetchRequest{}, 4),
	}
	// The group requests.
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType, join.SessionTimeoutMillis = 9, "g", "consumer", 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID = 5, "g", "m"
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "m", MemberAssignment: []byte{0, 0}}}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group = 8, "g"
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version, fetch.Group = 7, "g"
	fetch.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 5, "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorKey = 3, "g"
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID = 4, "g", "m"
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Version, describe.Groups = 5, []string{"g"}
	list := kmsg.NewPtrListGroupsRequest()
	list.Version = 4
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version, del.Groups = 2, []string{"g"}
	seeds = append(seeds, join, sync, commit, fetch, leave, find, hb, describe, list, del)
	for _, req := range seeds {
		f.Add(fmt.AppendRequest(nil, req, 7)[4:])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, req, body, err := parseRequestHeader(frame)
		if err != nil {
			return
		}
		rng, ok := findRange(supportedAPIs, h.apiKey)
		if !ok || h.apiVersion < rng.min || h.apiVersion > rng.max {
			return
		}
		if err := req.ReadFrom(body); err != nil {
			return
		}
		switch req := req.(type) {
		case *kmsg.ProduceRequest:
			produceFromWire(req)
		case *kmsg.FetchRequest:
			fetchFromWire(req)
		case *kmsg.ListOffsetsRequest:
			listOffsetsFromWire(req)
		case *kmsg.MetadataRequest:
			metadataFromWire(req)
		default:
			if _, _, err := dispatchGroup(context.Background(), stubGroups{}, req, h.apiVersion, "127.0.0.1:9092"); err != nil {
				t.Fatalf("a group request failed: %v", err)
			}
		}
	})
}

// stubGroups answers every group request at once, echoing what it can.
type stubGroups struct{}

func (stubGroups) FindCoordinator(_ context.Context, r *FindCoordinatorRequest) (*FindCoordinatorResponse, error) {
	return &FindCoordinatorResponse{NodeID: 1}, nil
}
func (stubGroups) JoinGroup(_ context.Context, r *JoinGroupRequest) (*JoinGroupResponse, error) {
	resp := &JoinGroupResponse{MemberID: r.MemberID, Leader: r.MemberID, ProtocolType: r.ProtocolType}
	for _, p := range r.Protocols {
		resp.Members = append(resp.Members, JoinGroupMember{MemberID: r.MemberID, GroupInstanceID: r.GroupInstanceID, Metadata: p.Metadata})
	}
	return resp, nil
}
func (stubGroups) SyncGroup(_ context.Context, r *SyncGroupRequest) (*SyncGroupResponse, error) {
	resp := &SyncGroupResponse{ProtocolType: r.ProtocolType, ProtocolName: r.ProtocolName}
	if len(r.Assignments) > 0 {
		resp.Assignment = r.Assignments[0].Assignment
	}
	return resp, nil
}
func (stubGroups) Heartbeat(context.Context, *HeartbeatRequest) (*HeartbeatResponse, error) {
	return &HeartbeatResponse{Err: ErrRebalanceInProgress}, nil
}
func (stubGroups) LeaveGroup(_ context.Context, r *LeaveGroupRequest) (*LeaveGroupResponse, error) {
	resp := &LeaveGroupResponse{}
	for _, m := range r.Members {
		resp.Members = append(resp.Members, LeaveGroupMemberResponse{MemberID: m.MemberID, GroupInstanceID: m.GroupInstanceID})
	}
	return resp, nil
}
func (stubGroups) OffsetCommit(_ context.Context, r *OffsetCommitRequest) (*OffsetCommitResponse, error) {
	resp := &OffsetCommitResponse{}
	for _, t := range r.Topics {
		rt := OffsetCommitTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, OffsetCommitPartitionResponse{Partition: p.Partition, Err: ErrIllegalGeneration})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
func (stubGroups) OffsetFetch(_ context.Context, r *OffsetFetchRequest) (*OffsetFetchResponse, error) {
	resp := &OffsetFetchResponse{}
	for _, t := range r.Topics {
		rt := OffsetFetchTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, OffsetFetchPartitionResponse{Partition: p, Offset: -1, LeaderEpoch: -1})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
func (stubGroups) DescribeGroups(_ context.Context, r *DescribeGroupsRequest) (*DescribeGroupsResponse, error) {
	resp := &DescribeGroupsResponse{}
	for _, g := range r.Groups {
		resp.Groups = append(resp.Groups, DescribedGroup{Group: g, State: "Dead", Members: []DescribedMember{{MemberID: g}}})
	}
	return resp, nil
}
func (stubGroups) ListGroups(context.Context, *ListGroupsRequest) (*ListGroupsResponse, error) {
	return &ListGroupsResponse{Groups: []ListedGroup{{Group: "g", State: "Empty"}}}, nil
}
func (stubGroups) DeleteGroups(_ context.Context, r *DeleteGroupsRequest) (*DeleteGroupsResponse, error) {
	resp := &DeleteGroupsResponse{}
	for _, g := range r.Groups {
		resp.Results = append(resp.Results, DeletedGroup{Group: g, Err: ErrGroupIDNotFound})
	}
	return resp, nil
}
