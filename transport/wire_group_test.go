package transport

import (
	"fmt"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// viaWire encodes a request in its version and decodes it again, as the
// server gets it.
func viaWire[T kmsg.Request](t *testing.T, w T) T {
	t.Helper()
	r := kmsg.RequestForKey(w.Key())
	r.SetVersion(w.GetVersion())
	require.NoError(t, r.ReadFrom(w.AppendTo(nil)))
	return r.(T)
}

// respViaWire encodes a response in its version and decodes it again, as
// the client gets it.
func respViaWire[T kmsg.Response](t *testing.T, w T) T {
	t.Helper()
	r := kmsg.ResponseForKey(w.Key())
	r.SetVersion(w.GetVersion())
	require.NoError(t, r.ReadFrom(w.AppendTo(nil)))
	return r.(T)
}

// eachVersion runs fn for every version partlog speaks of the API key.
func eachVersion(t *testing.T, key int16, fn func(t *testing.T, v int16)) {
	rng, ok := findRange(supportedAPIs, key)
	require.True(t, ok)
	for v := rng.min; v <= rng.max; v++ {
		t.Run(fmt.Sprintf("%s/v%d", kmsg.NameForKey(key), v), func(t *testing.T) { fn(t, v) })
	}
}

// The tests below take every request and answer of the group and producer
// id APIs through the wire in every version partlog speaks: what comes out
// is what went in, less exactly the fields the version does not carry.

func TestWireFindCoordinatorVersions(t *testing.T) {
	moved := fmt.Errorf("%w: moved", kafka.ErrNotCoordinator)
	eachVersion(t, 10, func(t *testing.T, v int16) {
		req := &FindCoordinatorRequest{Key: "tx", KeyType: CoordinatorTransaction}
		want := *req
		if v < 1 {
			want.KeyType = CoordinatorGroup
		}
		got := findCoordinatorFromWire(viaWire(t, findCoordinatorToWire(req, v)))
		require.Equal(t, []*FindCoordinatorRequest{&want}, got)
		for _, resp := range []*FindCoordinatorResponse{{NodeID: 3, Host: "h", Port: 9092}, {Err: moved, NodeID: -1, Port: -1}} {
			w := respViaWire(t, findCoordinatorResponseToWire(got, []*FindCoordinatorResponse{resp}, v))
			wantResp := *resp
			if resp.Err != nil {
				wantResp.Err = kafka.ErrNotCoordinator
				if v >= 1 {
					wantResp.Err = withMessage(kafka.ErrNotCoordinator, moved)
				}
			}
			require.Equal(t, &wantResp, findCoordinatorResponseFromWire(w, "tx"))
		}
	})
}

// TestWireFindCoordinatorBatched: a v4+ request names many keys, and the
// server answers each.
func TestWireFindCoordinatorBatched(t *testing.T) {
	w := kmsg.NewPtrFindCoordinatorRequest()
	w.Version = 4
	w.CoordinatorKeys = []string{"a", "b"}
	reqs := findCoordinatorFromWire(viaWire(t, w))
	require.Equal(t, []*FindCoordinatorRequest{{Key: "a"}, {Key: "b"}}, reqs)
	resp := respViaWire(t, findCoordinatorResponseToWire(reqs, []*FindCoordinatorResponse{{NodeID: 1, Host: "x", Port: 1}, {Err: kafka.ErrCoordinatorNotAvailable, NodeID: -1, Port: -1}}, 4))
	require.Equal(t, &FindCoordinatorResponse{NodeID: 1, Host: "x", Port: 1}, findCoordinatorResponseFromWire(resp, "a"))
	require.ErrorIs(t, findCoordinatorResponseFromWire(resp, "b").Err, kafka.ErrCoordinatorNotAvailable)
	require.ErrorIs(t, findCoordinatorResponseFromWire(resp, "c").Err, kafka.ErrCoordinatorNotAvailable, "a key not answered")
}

func TestWireJoinGroupVersions(t *testing.T) {
	eachVersion(t, 11, func(t *testing.T, v int16) {
		req := &JoinGroupRequest{Group: "g", SessionTimeout: 10 * time.Second, RebalanceTimeout: time.Minute, MemberID: "m",
			GroupInstanceID: "i", ProtocolType: "consumer", Protocols: []JoinGroupProtocol{{Name: "range", Metadata: []byte("r")}, {Name: "sticky", Metadata: []byte("s")}},
			Reason: "why"}
		want := *req
		if v < 1 {
			want.RebalanceTimeout = want.SessionTimeout
		}
		if v < 5 {
			want.GroupInstanceID = ""
		}
		if v < 8 {
			want.Reason = ""
		}
		require.Equal(t, &want, joinGroupFromWire(viaWire(t, joinGroupToWire(req, v))))

		resp := &JoinGroupResponse{Err: kafka.ErrMemberIDRequired, GenerationID: 4, ProtocolType: "consumer", ProtocolName: "range", Leader: "m1", MemberID: "m2",
			Members: []JoinGroupMember{{MemberID: "m1", GroupInstanceID: "i1", Metadata: []byte("s1")}, {MemberID: "m2", Metadata: []byte("s2")}}}
		wantResp := *resp
		wantResp.Members = append([]JoinGroupMember(nil), resp.Members...)
		if v < 7 {
			wantResp.ProtocolType = ""
		}
		if v < 5 {
			wantResp.Members[0].GroupInstanceID = ""
		}
		require.Equal(t, &wantResp, joinGroupResponseFromWire(respViaWire(t, joinGroupResponseToWire(resp, v))))
		require.Equal(t, &JoinGroupResponse{}, joinGroupResponseFromWire(respViaWire(t, joinGroupResponseToWire(&JoinGroupResponse{}, v))))
	})
}

func TestWireSyncGroupVersions(t *testing.T) {
	eachVersion(t, 14, func(t *testing.T, v int16) {
		req := &SyncGroupRequest{Group: "g", GenerationID: 4, MemberID: "m", GroupInstanceID: "i", ProtocolType: "consumer", ProtocolName: "range",
			Assignments: []SyncGroupAssignment{{MemberID: "m", Assignment: []byte("a")}, {MemberID: "n", Assignment: []byte("b")}}}
		want := *req
		if v < 3 {
			want.GroupInstanceID = ""
		}
		if v < 5 {
			want.ProtocolType, want.ProtocolName = "", ""
		}
		require.Equal(t, &want, syncGroupFromWire(viaWire(t, syncGroupToWire(req, v))))
		follower := &SyncGroupRequest{Group: "g", GenerationID: 4, MemberID: "n"}
		require.Equal(t, follower, syncGroupFromWire(viaWire(t, syncGroupToWire(follower, v))), "a follower sends no assignments")

		resp := &SyncGroupResponse{Err: kafka.ErrRebalanceInProgress, ProtocolType: "consumer", ProtocolName: "range", Assignment: []byte("a")}
		wantResp := *resp
		if v < 5 {
			wantResp.ProtocolType, wantResp.ProtocolName = "", ""
		}
		require.Equal(t, &wantResp, syncGroupResponseFromWire(respViaWire(t, syncGroupResponseToWire(resp, v))))
	})
}

func TestWireHeartbeatVersions(t *testing.T) {
	eachVersion(t, 12, func(t *testing.T, v int16) {
		req := &HeartbeatRequest{Group: "g", GenerationID: 4, MemberID: "m", GroupInstanceID: "i"}
		want := *req
		if v < 3 {
			want.GroupInstanceID = ""
		}
		require.Equal(t, &want, heartbeatFromWire(viaWire(t, heartbeatToWire(req, v))))
		for _, resp := range []*HeartbeatResponse{{}, {Err: kafka.ErrRebalanceInProgress}, {Err: kafka.ErrFencedInstanceID}} {
			require.Equal(t, resp, heartbeatResponseFromWire(respViaWire(t, heartbeatResponseToWire(resp, v))))
		}
	})
}

func TestWireLeaveGroupVersions(t *testing.T) {
	eachVersion(t, 13, func(t *testing.T, v int16) {
		one := &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: "m"}}}
		require.True(t, leaveGroupFits(one, v))
		require.Equal(t, one, leaveGroupFromWire(viaWire(t, leaveGroupToWire(one, v))))
		oneResp := &LeaveGroupResponse{Members: []LeaveGroupMemberResponse{{MemberID: "m", Err: kafka.ErrUnknownMemberID}}}
		got := leaveGroupResponseFromWire(one, respViaWire(t, leaveGroupResponseToWire(oneResp, v)))
		if v < 3 { // one error, the request's and its member's
			require.Equal(t, &LeaveGroupResponse{Err: kafka.ErrUnknownMemberID, Members: []LeaveGroupMemberResponse{{MemberID: "m", Err: kafka.ErrUnknownMemberID}}}, got)
		} else {
			require.Equal(t, oneResp, got)
		}

		many := &LeaveGroupRequest{Group: "g", Members: []LeaveGroupMember{{MemberID: "m", Reason: "closing"}, {GroupInstanceID: "i"}}}
		if v < 3 {
			require.False(t, leaveGroupFits(many, v))
			return
		}
		want := *many
		if v < 5 {
			want.Members = []LeaveGroupMember{{MemberID: "m"}, {GroupInstanceID: "i"}}
		}
		require.Equal(t, &want, leaveGroupFromWire(viaWire(t, leaveGroupToWire(many, v))))
		resp := &LeaveGroupResponse{Members: []LeaveGroupMemberResponse{{MemberID: "m"}, {GroupInstanceID: "i", Err: kafka.ErrUnknownMemberID}}}
		require.Equal(t, resp, leaveGroupResponseFromWire(many, respViaWire(t, leaveGroupResponseToWire(resp, v))))
	})
}

func TestWireOffsetCommitVersions(t *testing.T) {
	eachVersion(t, 8, func(t *testing.T, v int16) {
		req := &OffsetCommitRequest{Group: "g", GenerationID: 4, MemberID: "m", GroupInstanceID: "i", Topics: []OffsetCommitTopic{
			{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "meta"}, {Partition: 2, Offset: 0, LeaderEpoch: -1}}},
			{Topic: "u", Partitions: []OffsetCommitPartition{{Partition: 1, Offset: 7, LeaderEpoch: 0}}}}}
		want := &OffsetCommitRequest{Group: "g", GenerationID: 4, MemberID: "m", GroupInstanceID: "i", Topics: []OffsetCommitTopic{
			{Topic: "t", Partitions: []OffsetCommitPartition{{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "meta"}, {Partition: 2, Offset: 0, LeaderEpoch: -1}}},
			{Topic: "u", Partitions: []OffsetCommitPartition{{Partition: 1, Offset: 7, LeaderEpoch: 0}}}}}
		if v < 7 {
			want.GroupInstanceID = ""
		}
		if v < 6 {
			want.Topics[0].Partitions[0].LeaderEpoch, want.Topics[1].Partitions[0].LeaderEpoch = -1, -1
		}
		require.Equal(t, want, offsetCommitFromWire(viaWire(t, offsetCommitToWire(req, v))))
		resp := &OffsetCommitResponse{Topics: []OffsetCommitTopicResponse{{Topic: "t", Partitions: []OffsetCommitPartitionResponse{{Partition: 0}, {Partition: 2, Err: kafka.ErrIllegalGeneration}}}}}
		require.Equal(t, resp, offsetCommitResponseFromWire(respViaWire(t, offsetCommitResponseToWire(resp, v))))
	})
}

func TestWireOffsetFetchVersions(t *testing.T) {
	eachVersion(t, 9, func(t *testing.T, v int16) {
		req := &OffsetFetchRequest{Group: "g", Topics: []OffsetFetchTopic{{Topic: "t", Partitions: []int32{0, 1}}, {Topic: "u", Partitions: []int32{2}}}}
		reqs := offsetFetchFromWire(viaWire(t, offsetFetchToWire(req, v)))
		require.Equal(t, []*OffsetFetchRequest{req}, reqs)
		if v >= 2 {
			all := &OffsetFetchRequest{Group: "g"}
			require.Equal(t, []*OffsetFetchRequest{all}, offsetFetchFromWire(viaWire(t, offsetFetchToWire(all, v))), "nil topics: all of them")
		}

		resp := &OffsetFetchResponse{Topics: []OffsetFetchTopicResponse{{Topic: "t", Partitions: []OffsetFetchPartitionResponse{
			{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "meta"}, {Partition: 1, Offset: -1, LeaderEpoch: -1, Err: kafka.ErrUnstableOffsetCommit}}}}}
		want := &OffsetFetchResponse{Topics: []OffsetFetchTopicResponse{{Topic: "t", Partitions: []OffsetFetchPartitionResponse{
			{Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "meta"}, {Partition: 1, Offset: -1, LeaderEpoch: -1, Err: kafka.ErrUnstableOffsetCommit}}}}}
		if v < 5 {
			want.Topics[0].Partitions[0].LeaderEpoch = -1
		}
		require.Equal(t, want, offsetFetchResponseFromWire(respViaWire(t, offsetFetchResponseToWire(reqs, []*OffsetFetchResponse{resp}, v)), "g"))
		if v >= 2 {
			failed := &OffsetFetchResponse{Err: kafka.ErrCoordinatorLoadInProgress}
			require.Equal(t, failed, offsetFetchResponseFromWire(respViaWire(t, offsetFetchResponseToWire(reqs, []*OffsetFetchResponse{failed}, v)), "g"))
		}
	})
}

// TestWireOffsetFetchBatched: a v8+ request names many groups, and the
// server answers each.
func TestWireOffsetFetchBatched(t *testing.T) {
	w := kmsg.NewPtrOffsetFetchRequest()
	w.Version = 8
	a, b := kmsg.NewOffsetFetchRequestGroup(), kmsg.NewOffsetFetchRequestGroup()
	a.Group, b.Group = "a", "b"
	a.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}
	w.Groups = []kmsg.OffsetFetchRequestGroup{a, b}
	reqs := offsetFetchFromWire(viaWire(t, w))
	require.Equal(t, []*OffsetFetchRequest{{Group: "a", Topics: []OffsetFetchTopic{{Topic: "t", Partitions: []int32{0}}}}, {Group: "b"}}, reqs)
	ra := &OffsetFetchResponse{Topics: []OffsetFetchTopicResponse{{Topic: "t", Partitions: []OffsetFetchPartitionResponse{{Partition: 0, Offset: 5, LeaderEpoch: -1}}}}}
	rb := &OffsetFetchResponse{Err: kafka.ErrGroupIDNotFound}
	resp := respViaWire(t, offsetFetchResponseToWire(reqs, []*OffsetFetchResponse{ra, rb}, 8))
	require.Equal(t, ra, offsetFetchResponseFromWire(resp, "a"))
	require.Equal(t, rb, offsetFetchResponseFromWire(resp, "b"))
}

func TestWireDescribeGroupsVersions(t *testing.T) {
	gone := fmt.Errorf("%w: no group", kafka.ErrGroupIDNotFound)
	eachVersion(t, 15, func(t *testing.T, v int16) {
		req := &DescribeGroupsRequest{Groups: []string{"g", "gone"}}
		require.Equal(t, req, describeGroupsFromWire(viaWire(t, describeGroupsToWire(req, v))))
		resp := &DescribeGroupsResponse{Groups: []DescribedGroup{
			{Group: "g", State: "Stable", ProtocolType: "consumer", Protocol: "range", GenerationID: 4, Leader: "m", Members: []DescribedMember{
				{MemberID: "m", GroupInstanceID: "i", ClientID: "c", ClientHost: "h", Metadata: []byte("s"), Assignment: []byte("a")},
				{MemberID: "n", ClientID: "c", ClientHost: "h"}}},
			{Err: gone, Group: "gone", State: "Dead"}}}
		want := &DescribeGroupsResponse{Groups: []DescribedGroup{
			{Group: "g", State: "Stable", ProtocolType: "consumer", Protocol: "range", GenerationID: NoGeneration, Members: []DescribedMember{
				{MemberID: "m", GroupInstanceID: "i", ClientID: "c", ClientHost: "h", Metadata: []byte("s"), Assignment: []byte("a")},
				{MemberID: "n", ClientID: "c", ClientHost: "h"}}},
			{Err: kafka.ErrGroupIDNotFound, Group: "gone", State: "Dead", GenerationID: NoGeneration}}}
		if v < 4 {
			want.Groups[0].Members[0].GroupInstanceID = ""
		}
		if v >= 6 {
			want.Groups[1].Err = withMessage(kafka.ErrGroupIDNotFound, gone)
		}
		require.Equal(t, want, describeGroupsResponseFromWire(respViaWire(t, describeGroupsResponseToWire(resp, v))))
	})
}

func TestWireListGroupsVersions(t *testing.T) {
	eachVersion(t, 16, func(t *testing.T, v int16) {
		req := &ListGroupsRequest{StatesFilter: []string{"Stable"}}
		want := *req
		if v < 4 {
			want.StatesFilter = nil
		}
		require.Equal(t, &want, listGroupsFromWire(viaWire(t, listGroupsToWire(req, v))))
		require.Equal(t, &ListGroupsRequest{}, listGroupsFromWire(viaWire(t, listGroupsToWire(&ListGroupsRequest{}, v))))
		resp := &ListGroupsResponse{Groups: []ListedGroup{{Group: "g", ProtocolType: "consumer", State: "Stable"}, {Group: "h", State: "Empty"}}}
		wantResp := &ListGroupsResponse{Groups: []ListedGroup{{Group: "g", ProtocolType: "consumer", State: "Stable"}, {Group: "h", State: "Empty"}}}
		if v < 4 {
			wantResp.Groups[0].State, wantResp.Groups[1].State = "", ""
		}
		require.Equal(t, wantResp, listGroupsResponseFromWire(respViaWire(t, listGroupsResponseToWire(resp, v))))
		failed := &ListGroupsResponse{Err: kafka.ErrCoordinatorNotAvailable}
		require.Equal(t, failed, listGroupsResponseFromWire(respViaWire(t, listGroupsResponseToWire(failed, v))))
	})
}

func TestWireDeleteGroupsVersions(t *testing.T) {
	nonEmpty := fmt.Errorf("%w: 2 members", kafka.ErrNonEmptyGroup)
	eachVersion(t, 42, func(t *testing.T, v int16) {
		req := &DeleteGroupsRequest{Groups: []string{"g", "h"}}
		require.Equal(t, req, deleteGroupsFromWire(viaWire(t, deleteGroupsToWire(req, v))))
		resp := &DeleteGroupsResponse{Results: []DeletedGroup{{Group: "g", Err: nonEmpty}, {Group: "h"}}}
		want := &DeleteGroupsResponse{Results: []DeletedGroup{{Group: "g", Err: kafka.ErrNonEmptyGroup}, {Group: "h"}}}
		if v >= 3 {
			want.Results[0].Err = withMessage(kafka.ErrNonEmptyGroup, nonEmpty)
		}
		require.Equal(t, want, deleteGroupsResponseFromWire(respViaWire(t, deleteGroupsResponseToWire(resp, v))))
	})
}

func TestWireInitProducerIDVersions(t *testing.T) {
	eachVersion(t, 22, func(t *testing.T, v int16) {
		for _, req := range []*InitProducerIDRequest{
			{ProducerID: -1, ProducerEpoch: -1},
			{TransactionalID: "tx", TransactionTimeout: time.Minute, ProducerID: 12, ProducerEpoch: 3},
		} {
			want := *req
			want.Version = v
			if v < 3 {
				want.ProducerID, want.ProducerEpoch = -1, -1
			}
			require.Equal(t, &want, initProducerIDFromWire(viaWire(t, initProducerIDToWire(req, v))))
		}
		for _, resp := range []*InitProducerIDResponse{{ProducerID: 9000, ProducerEpoch: 2}, {Err: kafka.ErrInvalidRequest, ProducerID: -1, ProducerEpoch: -1}} {
			require.Equal(t, resp, initProducerIDResponseFromWire(respViaWire(t, initProducerIDResponseToWire(resp, v))))
		}
	})
}
