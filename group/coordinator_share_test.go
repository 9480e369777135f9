package group

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// shareBeatC sends member's ShareGroupHeartbeat for group g of topic t at
// epoch (a join subscribes to t).
func (h *protocolHarness) shareBeat(group, member string, epoch int32) *ShareGroupHeartbeatResponse {
	req := &ShareGroupHeartbeatRequest{Group: group, MemberID: member, MemberEpoch: epoch, ClientID: "client", ClientHost: "/127.0.0.1"}
	if epoch == 0 {
		req.SubscribedTopicNames = []string{"t"}
	}
	resp := h.c.ShareHeartbeat(req)
	if resp.InitializeState != nil { // the broker initializes the share state at once
		require.NoError(h.t, h.c.ShareStateInitialized(group, resp.InitializeState))
	}
	return resp
}

func sharePartitions(ps []transport.TopicIDPartitions) []int32 {
	var out []int32
	for _, p := range ps {
		out = append(out, p.Partitions...)
	}
	return out
}

// TestShareGroupCoordinator runs a share group through the coordinator:
// a member joins and is asked to initialize the partitions' state, and
// gets them once initialized; five members share four partitions; the
// group is described and listed; a coordinator loading the partition
// describes the same group; a member not heard from is removed; the
// group, once empty, is deleted and stays deleted.
func TestShareGroupCoordinator(t *testing.T) {
	h := newProtocolHarness(t)
	a := h.c.ShareHeartbeat(&ShareGroupHeartbeatRequest{Group: "s", MemberID: "a", SubscribedTopicNames: []string{"t"}})
	require.NoError(t, a.Err)
	require.Equal(t, int32(1), a.MemberEpoch)
	require.Equal(t, int32(5000), a.HeartbeatIntervalMillis)
	require.Empty(t, sharePartitions(a.Assignment))
	require.Equal(t, []transport.TopicIDPartitions{{TopicID: topicT, Partitions: []int32{0, 1, 2, 3}}}, a.InitializeState)
	require.NoError(t, h.c.ShareStateInitialized("s", a.InitializeState))
	a = h.shareBeat("s", "a", 1)
	require.NoError(t, a.Err)
	require.Equal(t, int32(2), a.MemberEpoch)
	require.Equal(t, []int32{0, 1, 2, 3}, sharePartitions(a.Assignment))

	epochs := map[string]int32{"a": 2}
	for _, m := range []string{"b", "c", "d", "e"} {
		r := h.shareBeat("s", m, 0)
		require.NoError(t, r.Err)
		epochs[m] = r.MemberEpoch
	}
	for m, e := range epochs { // each takes the last target
		r := h.shareBeat("s", m, e)
		require.NoError(t, r.Err)
		require.Equal(t, int32(6), r.MemberEpoch)
	}
	d := h.c.ShareDescribe(&ShareGroupDescribeRequest{Groups: []string{"s", "none"}})
	require.NoError(t, d.Groups[0].Err)
	require.ErrorIs(t, d.Groups[1].Err, kafka.ErrGroupIDNotFound)
	desc := d.Groups[0]
	require.Equal(t, "Stable", desc.State)
	require.Equal(t, "simple", desc.AssignorName)
	require.Equal(t, int32(6), desc.Epoch)
	require.Len(t, desc.Members, 5)
	sharers := map[int32]int{}
	for _, m := range desc.Members {
		for _, tp := range m.Assignment {
			require.Equal(t, "t", tp.TopicName)
			for _, p := range tp.Partitions {
				sharers[p]++
			}
		}
	}
	require.Equal(t, map[int32]int{0: 2, 1: 2, 2: 2, 3: 2}, sharers, "five members, four partitions: two each")

	require.Equal(t, []transport.ListedGroup{{Group: "s", ProtocolType: "share", State: "Stable"}},
		h.c.List(&transport.ListGroupsRequest{}).Groups)

	// Reloaded from __consumer_offsets: the same description, and the
	// members carry on at their epochs.
	h.reload()
	require.Equal(t, d.Groups[0], h.c.ShareDescribe(&ShareGroupDescribeRequest{Groups: []string{"s"}}).Groups[0])
	for _, m := range desc.Members {
		r := h.shareBeat("s", m.MemberID, m.MemberEpoch)
		require.NoError(t, r.Err)
		require.Equal(t, m.MemberEpoch, r.MemberEpoch)
	}

	// Only a answers: after the session timeout the others are gone.
	h.clock.Advance(30 * time.Second)
	require.NoError(t, h.shareBeat("s", "a", 6).Err)
	h.clock.Advance(16 * time.Second)
	h.c.Tick()
	a = h.shareBeat("s", "a", 6)
	require.NoError(t, a.Err)
	a = h.shareBeat("s", "a", a.MemberEpoch)
	require.Equal(t, []int32{0, 1, 2, 3}, h.c.ShareDescribe(&ShareGroupDescribeRequest{Groups: []string{"s"}}).Groups[0].Members[0].Assignment[0].Partitions)
	require.ErrorIs(t, h.shareBeat("s", "b", 6).Err, kafka.ErrUnknownMemberID)

	// Not deleted with a member; deleted once empty, for good.
	require.ErrorIs(t, h.c.Delete(&transport.DeleteGroupsRequest{Groups: []string{"s"}}).Results[0].Err, kafka.ErrNonEmptyGroup)
	require.NoError(t, h.shareBeat("s", "a", -1).Err)
	require.Equal(t, "Empty", h.c.List(&transport.ListGroupsRequest{}).Groups[0].State)
	require.NoError(t, h.c.Delete(&transport.DeleteGroupsRequest{Groups: []string{"s"}}).Results[0].Err)
	h.reload()
	require.Empty(t, h.c.List(&transport.ListGroupsRequest{}).Groups)
	require.ErrorIs(t, h.shareBeat("s", "a", 1).Err, kafka.ErrGroupIDNotFound, "a heartbeat of a group that is not")
}

// TestShareGroupIDNamespace: a group id is one group's, whatever its
// kind, as in Kafka: a share heartbeat for a classic or consumer group is
// GROUP_ID_NOT_FOUND; a consumer heartbeat or an offset commit for a
// share group is GROUP_ID_NOT_FOUND; a classic JoinGroup for it is
// INCONSISTENT_GROUP_PROTOCOL.
func TestShareGroupIDNamespace(t *testing.T) {
	h := newProtocolHarness(t)
	require.NoError(t, h.beat("a", 0, nil).Err) // consumer group "g"
	require.ErrorIs(t, h.shareBeat("g", "x", 0).Err, kafka.ErrGroupIDNotFound)
	require.NoError(t, h.c.Commit(&transport.OffsetCommitRequest{Group: "offsets-only", GenerationID: -1,
		Topics: []transport.OffsetCommitTopic{{Topic: "t", Partitions: []transport.OffsetCommitPartition{{Partition: 0, Offset: 1}}}}}).Topics[0].Partitions[0].Err)
	require.ErrorIs(t, h.shareBeat("offsets-only", "x", 0).Err, kafka.ErrGroupIDNotFound, "an empty classic group too")

	require.NoError(t, h.shareBeat("s", "x", 0).Err)
	resp := h.c.ConsumerHeartbeat(&transport.ConsumerGroupHeartbeatRequest{Group: "s", MemberID: "y", RebalanceTimeoutMillis: 60000,
		SubscribedTopicNames: []string{"t"}, Owned: []transport.TopicIDPartitions{}})
	require.ErrorIs(t, resp.Err, kafka.ErrGroupIDNotFound)
	var joined *transport.JoinGroupResponse
	h.c.Join(&transport.JoinGroupRequest{Group: "s", SessionTimeout: 10 * time.Second, ProtocolType: "consumer",
		Protocols: []transport.JoinGroupProtocol{{Name: "range"}}}, func(r *transport.JoinGroupResponse) { joined = r })
	require.ErrorIs(t, joined.Err, kafka.ErrInconsistentGroupProtocol)
	commit := h.c.Commit(&transport.OffsetCommitRequest{Group: "s", GenerationID: -1,
		Topics: []transport.OffsetCommitTopic{{Topic: "t", Partitions: []transport.OffsetCommitPartition{{Partition: 0, Offset: 1}}}}})
	require.ErrorIs(t, commit.Topics[0].Partitions[0].Err, kafka.ErrGroupIDNotFound)
	require.ErrorIs(t, h.c.ShareDescribe(&ShareGroupDescribeRequest{Groups: []string{"g"}}).Groups[0].Err, kafka.ErrGroupIDNotFound)

	// Malformed requests.
	require.ErrorIs(t, h.c.ShareHeartbeat(&ShareGroupHeartbeatRequest{MemberID: "x", SubscribedTopicNames: []string{"t"}}).Err, kafka.ErrInvalidRequest)
	require.ErrorIs(t, h.c.ShareHeartbeat(&ShareGroupHeartbeatRequest{Group: "s2", SubscribedTopicNames: []string{"t"}}).Err, kafka.ErrInvalidRequest)
	require.ErrorIs(t, h.c.ShareHeartbeat(&ShareGroupHeartbeatRequest{Group: "s2", MemberID: "x", MemberEpoch: 3}).Err, kafka.ErrGroupIDNotFound)
	require.ErrorIs(t, h.c.ShareStateInitialized("g", nil), kafka.ErrGroupIDNotFound)
}

// TestShareGroupFailedWrite: a share-group change whose records cannot be
// written is undone in memory — a join, an initialization, an expiry —
// so that the group never runs ahead of its log: described the same
// after a reload, its epoch moved once per change written.
func TestShareGroupFailedWrite(t *testing.T) {
	h := newProtocolHarness(t)
	a := h.shareBeat("s", "a", 0)
	require.NoError(t, a.Err)
	a = h.shareBeat("s", "a", a.MemberEpoch)
	require.NoError(t, a.Err)
	describe := func() ShareGroupDescription {
		return h.c.ShareDescribe(&ShareGroupDescribeRequest{Groups: []string{"s"}}).Groups[0]
	}
	written := describe()

	h.log.fail = errors.New("disk full")
	require.Error(t, h.c.ShareHeartbeat(&ShareGroupHeartbeatRequest{Group: "s", MemberID: "b", SubscribedTopicNames: []string{"t"}}).Err)
	require.Equal(t, written, describe(), "b joined in memory though its records were not written")

	h.log.fail = nil
	b := h.shareBeat("s", "b", 0)
	require.NoError(t, b.Err)
	require.Equal(t, written.Epoch+1, b.MemberEpoch, "the group epoch moved once, for the join that was written")
	before := describe()
	h.reload()
	require.Equal(t, before, describe())

	// b's session expires, but the write of its removal fails: b stays
	// until a tick can write it.
	h.clock.Advance(time.Hour)
	require.NoError(t, h.shareBeat("s", "a", a.MemberEpoch).Err)
	h.log.fail = errors.New("disk full")
	h.c.Tick()
	require.Len(t, describe().Members, 2)
	h.log.fail = nil
	h.c.Tick()
	require.Len(t, describe().Members, 1)
}
