package group

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// protocolHarness is a coordinator whose cluster has topic t of four
// partitions, for consumer-protocol groups.
type protocolHarness struct {
	*harness
	topics []TopicInfo
}

var topicT = [16]byte{0x71}

func newProtocolHarness(t *testing.T) *protocolHarness {
	h := &protocolHarness{harness: &harness{t: t, log: &memLog{}, clock: &clock{now: time.Unix(1_700_000_000, 0)}},
		topics: []TopicInfo{{Name: "t", ID: topicT, Partitions: 4}}}
	h.c = h.openConsumer()
	return h
}

func (h *protocolHarness) openConsumer() *Coordinator {
	return New(h.log, Options{Partitions: 5, Now: h.clock.Now, Topics: func() []TopicInfo { return h.topics }})
}

// reload opens a new coordinator over what the log holds.
func (h *protocolHarness) reload() {
	c := h.openConsumer()
	h.log.loadInto(h.t, c)
	h.c = c
}

// beat sends member's heartbeat at epoch with the partitions of t it owns
// (nil: not sent).
func (h *protocolHarness) beat(member string, epoch int32, owned []int32) *transport.ConsumerGroupHeartbeatResponse {
	req := &transport.ConsumerGroupHeartbeatRequest{Group: "g", MemberID: member, MemberEpoch: epoch, RebalanceTimeoutMillis: -1}
	if epoch == 0 {
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 60000, []string{"t"}
		req.Owned = []transport.TopicIDPartitions{}
	}
	if owned != nil {
		req.Owned = []transport.TopicIDPartitions{{TopicID: topicT, Partitions: owned}}
	}
	req.ClientID, req.ClientHost = "client", "/127.0.0.1"
	return h.c.ConsumerHeartbeat(req)
}

func assigned(resp *transport.ConsumerGroupHeartbeatResponse) []int32 {
	if resp.Assignment == nil {
		return nil
	}
	var ps []int32
	for _, a := range resp.Assignment {
		ps = append(ps, a.Partitions...)
	}
	return ps
}

// TestConsumerProtocolCoordinator runs a consumer-protocol group through
// the coordinator: a member joins and gets every partition; a second
// joins and gets half only once the first has revoked them (never both
// at once); commits are fenced by member epoch; ConsumerGroupDescribe
// shows it; a classic JoinGroup of the same id is refused; everything is
// written to __consumer_offsets, and a coordinator loading the partition
// answers the same; a member not heard from for its session leaves, and
// the other gets its partitions.
func TestConsumerProtocolCoordinator(t *testing.T) {
	h := newProtocolHarness(t)
	a := h.beat("a", 0, nil)
	require.NoError(t, a.Err)
	require.Equal(t, int32(1), a.MemberEpoch)
	require.Equal(t, []int32{0, 1, 2, 3}, assigned(a))

	b := h.beat("b", 0, nil)
	require.NoError(t, b.Err)
	require.Equal(t, []int32{}, nonNil(assigned(b)), "b gets nothing while a holds them all")
	a = h.beat("a", 1, nil)
	require.Len(t, assigned(a), 2, "a is told to keep two")
	kept := assigned(a)
	b = h.beat("b", b.MemberEpoch, []int32{})
	require.Empty(t, assigned(b), "b gets nothing while a has not revoked")
	a = h.beat("a", a.MemberEpoch, kept)
	require.NoError(t, a.Err)
	require.Equal(t, int32(2), a.MemberEpoch)
	b = h.beat("b", b.MemberEpoch, []int32{})
	require.Equal(t, int32(2), b.MemberEpoch)
	require.Len(t, assigned(b), 2)
	require.ElementsMatch(t, []int32{0, 1, 2, 3}, append(append([]int32{}, kept...), assigned(b)...))

	commit := func(member string, epoch int32) error {
		resp := h.c.Commit(&transport.OffsetCommitRequest{Group: "g", MemberID: member, GenerationID: epoch,
			Topics: []transport.OffsetCommitTopic{{Topic: "t", Partitions: []transport.OffsetCommitPartition{{Partition: kept[0], Offset: 42}}}}})
		return resp.Topics[0].Partitions[0].Err
	}
	require.NoError(t, commit("a", 2))
	require.ErrorIs(t, commit("a", 1), kafka.ErrStaleMemberEpoch)
	require.ErrorIs(t, commit("a", 3), kafka.ErrFencedMemberEpoch)
	require.ErrorIs(t, commit("z", 2), kafka.ErrUnknownMemberID)

	var joined *transport.JoinGroupResponse
	h.c.Join(&transport.JoinGroupRequest{Group: "g", SessionTimeout: 10 * time.Second, ProtocolType: "consumer",
		Protocols: []transport.JoinGroupProtocol{{Name: "range"}}}, func(r *transport.JoinGroupResponse) { joined = r })
	require.ErrorIs(t, joined.Err, kafka.ErrInconsistentGroupProtocol)

	d := h.c.ConsumerDescribe(&transport.ConsumerGroupDescribeRequest{Groups: []string{"g", "none"}})
	require.NoError(t, d.Groups[0].Err)
	require.Equal(t, "Stable", d.Groups[0].State)
	require.Equal(t, int32(2), d.Groups[0].Epoch)
	require.Len(t, d.Groups[0].Members, 2)
	require.ErrorIs(t, d.Groups[1].Err, kafka.ErrGroupIDNotFound)

	// Reloaded from __consumer_offsets: the same group, members, offsets.
	h.reload()
	require.Equal(t, d.Groups[0], h.c.ConsumerDescribe(&transport.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0])
	require.Equal(t, int64(42), h.committed("g", "t", kept[0]))
	a = h.beat("a", 2, nil)
	require.NoError(t, a.Err)
	require.Equal(t, int32(2), a.MemberEpoch)

	// b goes silent: after its session it is gone, and a gets it all.
	h.clock.Advance(30 * time.Second)
	a = h.beat("a", a.MemberEpoch, kept)
	require.NoError(t, a.Err)
	h.clock.Advance(16 * time.Second)
	h.c.Tick()
	a = h.beat("a", a.MemberEpoch, kept)
	require.NoError(t, a.Err)
	require.Equal(t, []int32{0, 1, 2, 3}, assigned(a))
	b = h.beat("b", 2, nil)
	require.ErrorIs(t, b.Err, kafka.ErrUnknownMemberID)

	// Listed as a consumer-protocol group; not deleted while it has a
	// member; once a leaves, deleted with its offsets, and it stays
	// deleted after a reload.
	listed := h.c.List(&transport.ListGroupsRequest{})
	require.Equal(t, []transport.ListedGroup{{Group: "g", ProtocolType: "consumer", State: "Stable"}}, listed.Groups)
	deleted := h.c.Delete(&transport.DeleteGroupsRequest{Groups: []string{"g"}})
	require.ErrorIs(t, deleted.Results[0].Err, kafka.ErrNonEmptyGroup)
	a = h.beat("a", -1, nil)
	require.NoError(t, a.Err)
	deleted = h.c.Delete(&transport.DeleteGroupsRequest{Groups: []string{"g"}})
	require.NoError(t, deleted.Results[0].Err)
	h.reload()
	require.Empty(t, h.c.List(&transport.ListGroupsRequest{}).Groups)
	require.Equal(t, int64(-1), h.committed("g", "t", kept[0]))
}

func nonNil(ps []int32) []int32 {
	if ps == nil {
		return []int32{}
	}
	return ps
}

// TestConsumerProtocolFailedWrite: a heartbeat whose records cannot be
// written changes nothing — the member did not join, the group epoch did
// not move — so that the group in memory never runs ahead of its log;
// the same heartbeat later joins as if the failed one never happened, and
// a coordinator loading the log answers the same. A session expiry whose
// write fails happens at a later tick.
func TestConsumerProtocolFailedWrite(t *testing.T) {
	h := newProtocolHarness(t)
	require.NoError(t, h.beat("a", 0, nil).Err)
	h.log.fail = errors.New("disk full")
	require.Error(t, h.beat("b", 0, nil).Err)
	d := h.c.ConsumerDescribe(&transport.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0]
	require.Len(t, d.Members, 1, "b joined in memory though its records were not written")
	require.Equal(t, int32(1), d.Epoch)

	h.log.fail = nil
	b := h.beat("b", 0, nil)
	require.NoError(t, b.Err)
	require.Equal(t, int32(2), b.MemberEpoch, "the group epoch moved once, for the join that was written")
	before := h.c.ConsumerDescribe(&transport.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0]
	h.reload()
	require.Equal(t, before, h.c.ConsumerDescribe(&transport.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0])

	// b's session expires, but the write of its removal fails: b stays
	// until a tick can write it.
	h.clock.Advance(time.Hour)
	require.NoError(t, h.beat("a", 1, []int32{0, 1, 2, 3}).Err)
	h.log.fail = errors.New("disk full")
	h.c.Tick()
	require.Len(t, h.c.ConsumerDescribe(&transport.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0].Members, 2)
	h.log.fail = nil
	h.c.Tick()
	require.Len(t, h.c.ConsumerDescribe(&transport.ConsumerGroupDescribeRequest{Groups: []string{"g"}}).Groups[0].Members, 1)
}
