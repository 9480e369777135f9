package group

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// memLog is a Log in memory that can be made to fail.
type memLog struct {
	parts map[int32][]Record
	fail  error
}

func (l *memLog) AppendTransactional(p int32, producerID int64, _ int16, recs []Record) error {
	return l.Append(p, recs) // the records say they are transactional
}

func (l *memLog) Append(p int32, recs []Record) error {
	if l.fail != nil {
		return l.fail
	}
	if l.parts == nil {
		l.parts = map[int32][]Record{}
	}
	l.parts[p] = append(l.parts[p], recs...)
	return nil
}

// clock is a fake clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time          { return c.now }
func (c *clock) Advance(d time.Duration) { c.now = c.now.Add(d) }

type harness struct {
	t     *testing.T
	log   *memLog
	clock *clock
	c     *Coordinator
	ids   int
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, log: &memLog{}, clock: &clock{now: time.Unix(1_700_000_000, 0)}}
	h.c = h.open()
	return h
}

func (h *harness) open() *Coordinator {
	return New(h.log, Options{Partitions: 5, Now: h.clock.Now, InitialRebalanceDelay: -1, NewMemberID: func(client string) string {
		h.ids++
		return fmt.Sprintf("%s-%d", client, h.ids)
	}})
}

// pendingJoin is a JoinGroup whose answer may come later.
type pendingJoin chan *transport.JoinGroupResponse

func (h *harness) join(group, member string, protocols ...string) pendingJoin {
	ch := make(pendingJoin, 1)
	req := &transport.JoinGroupRequest{Group: group, MemberID: member, ClientID: "c", ProtocolType: "consumer",
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 30 * time.Second}
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		req.Protocols = append(req.Protocols, transport.JoinGroupProtocol{Name: p, Metadata: []byte(member + "/" + p)})
	}
	h.c.Join(req, func(r *transport.JoinGroupResponse) { ch <- r })
	return ch
}

// answered returns the answer, failing if there is none yet.
func (p pendingJoin) answered(t *testing.T) *transport.JoinGroupResponse {
	t.Helper()
	select {
	case r := <-p:
		return r
	default:
		t.Fatal("JoinGroup not answered")
		return nil
	}
}

func (p pendingJoin) waiting(t *testing.T) {
	t.Helper()
	require.Empty(t, p, "JoinGroup answered too early")
}

type pendingSync chan *transport.SyncGroupResponse

func (h *harness) sync(group, member string, gen int32, assign map[string]string) pendingSync {
	ch := make(pendingSync, 1)
	req := &transport.SyncGroupRequest{Group: group, MemberID: member, GenerationID: gen}
	for m, a := range assign {
		req.Assignments = append(req.Assignments, transport.SyncGroupAssignment{MemberID: m, Assignment: []byte(a)})
	}
	h.c.Sync(req, func(r *transport.SyncGroupResponse) { ch <- r })
	return ch
}

func (p pendingSync) answered(t *testing.T) *transport.SyncGroupResponse {
	t.Helper()
	select {
	case r := <-p:
		return r
	default:
		t.Fatal("SyncGroup not answered")
		return nil
	}
}

func (h *harness) heartbeat(group, member string, gen int32) error {
	return h.c.Heartbeat(&transport.HeartbeatRequest{Group: group, MemberID: member, GenerationID: gen}).Err
}

func (h *harness) commit(group, member string, gen int32, topic string, part int32, off int64) error {
	resp := h.c.Commit(&transport.OffsetCommitRequest{Group: group, MemberID: member, GenerationID: gen,
		Topics: []transport.OffsetCommitTopic{{Topic: topic, Partitions: []transport.OffsetCommitPartition{{Partition: part, Offset: off, LeaderEpoch: -1, Metadata: "md"}}}}})
	return resp.Topics[0].Partitions[0].Err
}

func (h *harness) committed(group, topic string, part int32) int64 {
	resp := h.c.Fetch(&transport.OffsetFetchRequest{Group: group, Topics: []transport.OffsetFetchTopic{{Topic: topic, Partitions: []int32{part}}}})
	return resp.Topics[0].Partitions[0].Offset
}

func (h *harness) state(group string) string {
	return h.c.Describe(&transport.DescribeGroupsRequest{Groups: []string{group}}).Groups[0].State
}

// twoMembers brings group g to a Stable generation 2 with members c-1
// (leader) and c-2.
func (h *harness) twoMembers(g string) {
	t := h.t
	j1 := h.join(g, "")
	r1 := j1.answered(t)
	require.NoError(t, r1.Err)
	require.Equal(t, int32(1), r1.GenerationID)
	require.Equal(t, "c-1", r1.Leader)
	require.NoError(t, h.sync(g, "c-1", 1, map[string]string{"c-1": "all"}).answered(t).Err)
	require.Equal(t, "Stable", h.state(g))

	j2 := h.join(g, "")
	j2.waiting(t)
	require.Equal(t, "PreparingRebalance", h.state(g))
	require.ErrorIs(t, h.heartbeat(g, "c-1", 1), kafka.ErrRebalanceInProgress)
	j1 = h.join(g, "c-1")
	r1, r2 := j1.answered(t), j2.answered(t)
	require.NoError(t, r1.Err)
	require.NoError(t, r2.Err)
	require.Equal(t, int32(2), r1.GenerationID)
	require.Equal(t, int32(2), r2.GenerationID)
	require.Equal(t, "c-1", r1.Leader)
	require.Len(t, r1.Members, 2, "the leader gets the members")
	require.Empty(t, r2.Members)
	require.Equal(t, "CompletingRebalance", h.state(g))

	s2 := h.sync(g, "c-2", 2, nil)
	require.Empty(t, s2, "a follower waits for the leader's assignment")
	s1 := h.sync(g, "c-1", 2, map[string]string{"c-1": "p0", "c-2": "p1"})
	require.Equal(t, "p0", string(s1.answered(t).Assignment))
	require.Equal(t, "p1", string(s2.answered(t).Assignment))
	require.Equal(t, "Stable", h.state(g))
}

func TestJoinSyncTwoMembers(t *testing.T) {
	h := newHarness(t)
	h.twoMembers("lzl")
	require.NoError(t, h.heartbeat("lzl", "c-2", 2))
	d := h.c.Describe(&transport.DescribeGroupsRequest{Groups: []string{"lzl", "nobody"}})
	require.Equal(t, "range", d.Groups[0].Protocol)
	require.Len(t, d.Groups[0].Members, 2)
	require.Equal(t, "p1", string(d.Groups[0].Members[1].Assignment))
	require.Equal(t, "Dead", d.Groups[1].State)
	require.Equal(t, []transport.ListedGroup{{Group: "lzl", ProtocolType: "consumer", State: "Stable"}}, h.c.List(&transport.ListGroupsRequest{}).Groups)
}

func TestLeaveRebalances(t *testing.T) {
	h := newHarness(t)
	h.twoMembers("g")
	resp := h.c.Leave(&transport.LeaveGroupRequest{Group: "g", Members: []transport.LeaveGroupMember{{MemberID: "c-1"}, {MemberID: "nobody"}}})
	require.NoError(t, resp.Members[0].Err)
	require.ErrorIs(t, resp.Members[1].Err, kafka.ErrUnknownMemberID)
	require.Equal(t, "PreparingRebalance", h.state("g"))
	require.ErrorIs(t, h.heartbeat("g", "c-2", 2), kafka.ErrRebalanceInProgress)
	r := h.join("g", "c-2").answered(t)
	require.NoError(t, r.Err)
	require.Equal(t, int32(3), r.GenerationID)
	require.Equal(t, "c-2", r.Leader, "a new leader replaces the one that left")
	require.NoError(t, h.sync("g", "c-2", 3, map[string]string{"c-2": "p0,p1"}).answered(t).Err)
	// The last member leaves: the group is Empty, with a new generation.
	h.c.Leave(&transport.LeaveGroupRequest{Group: "g", Members: []transport.LeaveGroupMember{{MemberID: "c-2"}}})
	require.Equal(t, "Empty", h.state("g"))
}

func TestSessionTimeoutRemovesMember(t *testing.T) {
	h := newHarness(t)
	h.twoMembers("g")
	for range 3 {
		h.clock.Advance(4 * time.Second)
		require.NoError(t, h.heartbeat("g", "c-1", 2)) // c-2 has crashed
		h.c.Tick()
	}
	require.Equal(t, "PreparingRebalance", h.state("g"), "c-2 expired after 10s without a heartbeat")
	r := h.join("g", "c-1").answered(t)
	require.Equal(t, int32(3), r.GenerationID)
	require.Len(t, r.Members, 1)
	require.ErrorIs(t, h.heartbeat("g", "c-2", 2), kafka.ErrUnknownMemberID)
}

func TestRebalanceTimeoutDropsMembersThatDoNotRejoin(t *testing.T) {
	h := newHarness(t)
	h.twoMembers("g")
	j3 := h.join("g", "")
	// c-1 rejoins; c-2 keeps heartbeating (a consumer stuck in processing)
	// but never rejoins.
	j1 := h.join("g", "c-1")
	for range 10 {
		h.clock.Advance(4 * time.Second)
		h.heartbeat("g", "c-2", 2)
		h.c.Tick()
	}
	r1, r3 := j1.answered(t), j3.answered(t)
	require.Equal(t, int32(3), r1.GenerationID)
	require.Equal(t, int32(3), r3.GenerationID)
	require.Len(t, r1.Members, 2)
	require.ErrorIs(t, h.heartbeat("g", "c-2", 2), kafka.ErrUnknownMemberID)
}

func TestCommitsFencedByGeneration(t *testing.T) {
	h := newHarness(t)
	h.twoMembers("g")
	require.NoError(t, h.commit("g", "c-2", 2, "t", 1, 10))
	// c-1 was in generation 1; that generation is gone.
	require.ErrorIs(t, h.commit("g", "c-1", 1, "t", 1, 3), kafka.ErrIllegalGeneration)
	require.ErrorIs(t, h.commit("g", "zombie", 2, "t", 1, 3), kafka.ErrUnknownMemberID)
	require.ErrorIs(t, h.commit("g", "", transport.NoGeneration, "t", 1, 3), kafka.ErrUnknownMemberID, "no simple commits to a group with members")
	require.Equal(t, int64(10), h.committed("g", "t", 1))

	// While the group prepares a rebalance, the current generation may
	// still commit (commit on revoke) ...
	j3 := h.join("g", "")
	require.NoError(t, h.commit("g", "c-2", 2, "t", 1, 11))
	// ... but not while it waits for the leader's assignment.
	h.join("g", "c-1")
	h.join("g", "c-2")
	j3.answered(t)
	require.ErrorIs(t, h.commit("g", "c-2", 3, "t", 1, 12), kafka.ErrRebalanceInProgress)
	require.ErrorIs(t, h.commit("g", "c-2", 2, "t", 1, 12), kafka.ErrRebalanceInProgress)
	require.NoError(t, h.sync("g", "c-1", 3, nil).answered(t).Err)
	// Stable again: the old generation is fenced, the new one commits.
	require.ErrorIs(t, h.commit("g", "c-2", 2, "t", 1, 12), kafka.ErrIllegalGeneration)
	require.Equal(t, int64(11), h.committed("g", "t", 1))
	require.NoError(t, h.commit("g", "c-2", 3, "t", 1, 12))
	require.Equal(t, int64(12), h.committed("g", "t", 1))

	// Simple commits to a group nobody is in.
	require.NoError(t, h.commit("simple", "", transport.NoGeneration, "t", 0, 5))
	require.Equal(t, int64(5), h.committed("simple", "t", 0))
	require.ErrorIs(t, h.commit("unknown", "m", 4, "t", 0, 5), kafka.ErrIllegalGeneration)
	require.Equal(t, int64(-1), h.committed("unknown", "t", 0))
}

func TestCommitFailsWhenTheLogFails(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.commit("g", "", -1, "t", 0, 5))
	h.log.fail = fmt.Errorf("disk full")
	require.ErrorIs(t, h.commit("g", "", -1, "t", 0, 6), kafka.ErrCoordinatorNotAvailable)
	require.Equal(t, int64(5), h.committed("g", "t", 0), "a commit not written is not taken")
}

func TestStateRebuiltFromLog(t *testing.T) {
	h := newHarness(t)
	h.twoMembers("g")
	require.NoError(t, h.commit("g", "c-1", 2, "t", 0, 7))
	require.NoError(t, h.commit("g", "c-2", 2, "t", 1, 9))
	require.NoError(t, h.commit("g", "c-2", 2, "t", 1, 12))
	require.NoError(t, h.commit("other", "", -1, "t", 0, 1))
	require.Len(t, h.log.parts, 2, "two groups, spread by PartitionFor")
	require.Len(t, h.log.parts[PartitionFor("g", 5)], 2+3, "two group records, three offsets")

	c2 := h.open()
	for p, recs := range h.log.parts {
		require.NoError(t, c2.Load(p, func(yield func(Record) bool) error {
			for _, r := range recs {
				if !yield(r) {
					break
				}
			}
			return nil
		}))
	}
	h.c = c2
	require.Equal(t, int64(7), h.committed("g", "t", 0))
	require.Equal(t, int64(12), h.committed("g", "t", 1))
	require.Equal(t, int64(1), h.committed("other", "t", 0))
	d := c2.Describe(&transport.DescribeGroupsRequest{Groups: []string{"g"}}).Groups[0]
	require.Equal(t, "Stable", d.State)
	require.Equal(t, int32(2), d.GenerationID)
	require.Equal(t, "c-1", d.Leader)
	require.Len(t, d.Members, 2)
	require.Equal(t, "p1", string(d.Members[1].Assignment))
	// The members carry on in their generation, and a stale one is still
	// fenced.
	require.NoError(t, h.heartbeat("g", "c-2", 2))
	require.NoError(t, h.commit("g", "c-2", 2, "t", 1, 13))
	require.ErrorIs(t, h.commit("g", "c-2", 1, "t", 1, 1), kafka.ErrIllegalGeneration)
	// Members that never come back expire, and the group is Empty.
	h.clock.Advance(11 * time.Second)
	c2.Tick()
	require.Equal(t, "Empty", h.state("g"))
	require.Equal(t, int64(13), h.committed("g", "t", 1))
}

func TestJoinValidation(t *testing.T) {
	h := newHarness(t)
	ch := make(chan *transport.JoinGroupResponse, 1)
	h.c.Join(&transport.JoinGroupRequest{Group: "g", ProtocolType: "consumer", SessionTimeout: time.Second,
		Protocols: []transport.JoinGroupProtocol{{Name: "range"}}}, func(r *transport.JoinGroupResponse) { ch <- r })
	require.ErrorIs(t, (<-ch).Err, kafka.ErrInvalidSessionTimeout)
	require.ErrorIs(t, h.join("g", "ghost").answered(t).Err, kafka.ErrUnknownMemberID)
	require.NoError(t, h.join("g", "", "roundrobin").answered(t).Err)
	require.ErrorIs(t, h.join("g", "", "range").answered(t).Err, kafka.ErrInconsistentGroupProtocol)
	// A member supporting both can join; the group keeps roundrobin.
	j := h.join("g", "", "range", "roundrobin")
	r := h.join("g", "c-1", "roundrobin").answered(t)
	require.Equal(t, "roundrobin", r.ProtocolName)
	require.Equal(t, "roundrobin", j.answered(t).ProtocolName)
}

func TestCloseAnswersWaiters(t *testing.T) {
	h := newHarness(t)
	h.twoMembers("g")
	j := h.join("g", "")
	h.c.Close()
	require.ErrorIs(t, j.answered(t).Err, kafka.ErrNotCoordinator)
	require.ErrorIs(t, h.heartbeat("g", "c-1", 2), kafka.ErrNotCoordinator)
}

func TestStaticMemberRejoinsWithoutRebalance(t *testing.T) {
	h := newHarness(t)
	join := func(member, instance string) pendingJoin {
		ch := make(pendingJoin, 1)
		h.c.Join(&transport.JoinGroupRequest{Group: "g", MemberID: member, GroupInstanceID: instance, ClientID: "c", ProtocolType: "consumer",
			SessionTimeout: 10 * time.Second, Protocols: []transport.JoinGroupProtocol{{Name: "range", Metadata: []byte("sub")}}},
			func(r *transport.JoinGroupResponse) { ch <- r })
		return ch
	}
	j1 := join("", "a")
	r1 := j1.answered(t)
	j2 := join("", "b")
	join(r1.MemberID, "a").answered(t)
	r2 := j2.answered(t)
	require.Equal(t, int32(2), r2.GenerationID)
	h.sync("g", r1.MemberID, 2, map[string]string{r1.MemberID: "p0", r2.MemberID: "p1"})
	h.sync("g", r2.MemberID, 2, nil)
	require.Equal(t, "Stable", h.state("g"))

	// Instance b restarts: same place, new member id, no rebalance.
	r3 := join("", "b").answered(t)
	require.NoError(t, r3.Err)
	require.Equal(t, int32(2), r3.GenerationID)
	require.NotEqual(t, r2.MemberID, r3.MemberID)
	require.Equal(t, "Stable", h.state("g"))
	require.Equal(t, "p1", string(h.sync("g", r3.MemberID, 2, nil).answered(t).Assignment))
	// The old instance is fenced.
	require.ErrorIs(t, h.heartbeat("g", r2.MemberID, 2), kafka.ErrUnknownMemberID)
	require.NoError(t, h.heartbeat("g", r3.MemberID, 2))
}

func TestDeleteGroupWritesTombstones(t *testing.T) {
	h := newHarness(t)
	h.twoMembers("busy")
	require.NoError(t, h.commit("idle", "", -1, "t", 0, 5))
	require.NoError(t, h.commit("idle", "", -1, "t", 1, 6))
	resp := h.c.Delete(&transport.DeleteGroupsRequest{Groups: []string{"idle", "busy", "nobody"}})
	require.NoError(t, resp.Results[0].Err)
	require.ErrorIs(t, resp.Results[1].Err, kafka.ErrNonEmptyGroup)
	require.ErrorIs(t, resp.Results[2].Err, kafka.ErrGroupIDNotFound)
	require.Equal(t, int64(-1), h.committed("idle", "t", 0))
	require.Equal(t, "Dead", h.state("idle"))

	// After a reload the group stays deleted.
	recs := h.log.parts[PartitionFor("idle", 5)]
	require.Nil(t, recs[len(recs)-1].Value, "a tombstone")
	c2 := h.open()
	for p, recs := range h.log.parts {
		require.NoError(t, c2.Load(p, func(yield func(Record) bool) error {
			for _, r := range recs {
				if !yield(r) {
					break
				}
			}
			return nil
		}))
	}
	h.c = c2
	require.Equal(t, int64(-1), h.committed("idle", "t", 1))
	require.Equal(t, "Dead", h.state("idle"))
	require.Equal(t, "Stable", h.state("busy"))
}

// TestMemberThatNeverSyncsExpires: a member that got its JoinGroup answer
// and never sends SyncGroup or a heartbeat is dropped at its session
// timeout, and the group rebalances without it.
func TestMemberThatNeverSyncsExpires(t *testing.T) {
	h := newHarness(t)
	j1 := h.join("g", "")
	j1.answered(t)
	h.sync("g", "c-1", 1, map[string]string{"c-1": "all"}).answered(t)
	j2 := h.join("g", "")
	r1 := h.join("g", "c-1").answered(t)
	j2.answered(t) // c-2 joined generation 2 and went silent
	s1 := h.sync("g", "c-1", r1.GenerationID, map[string]string{"c-1": "a", "c-2": "b"})
	require.Equal(t, "a", string(s1.answered(t).Assignment))
	for range 3 {
		h.clock.Advance(4 * time.Second)
		require.NoError(t, h.heartbeat("g", "c-1", 2))
		h.c.Tick()
	}
	require.Equal(t, "PreparingRebalance", h.state("g"))
	r := h.join("g", "c-1").answered(t)
	require.Equal(t, int32(3), r.GenerationID)
	require.Len(t, r.Members, 1)
}

// TestOffsetsRetention: a group Empty for offsets.retention.minutes, with
// no commit meanwhile, is deleted with its offsets; a group with members
// keeps them however old they are.
func TestOffsetsRetention(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.commit("idle", "", -1, "t", 0, 5))
	h.twoMembers("busy")
	require.NoError(t, h.commit("busy", "c-1", 2, "t", 0, 9))
	h.clock.Advance(6 * 24 * time.Hour)
	require.NoError(t, h.commit("idle", "", -1, "t", 1, 6)) // activity: the clock restarts
	keepAlive := func(d time.Duration) {
		for step := time.Duration(0); step < d; step += 5 * time.Second {
			h.clock.Advance(5 * time.Second)
			h.heartbeat("busy", "c-1", 2)
			h.heartbeat("busy", "c-2", 2)
			h.c.Tick()
		}
	}
	h.clock.Advance(6 * 24 * time.Hour)
	keepAlive(time.Minute)
	require.Equal(t, int64(6), h.committed("idle", "t", 1), "not yet: 6 days since the last commit")
	h.clock.Advance(24 * time.Hour)
	keepAlive(time.Minute)
	require.Equal(t, int64(-1), h.committed("idle", "t", 0))
	require.Equal(t, int64(-1), h.committed("idle", "t", 1))
	require.Equal(t, "Dead", h.state("idle"))
	require.Equal(t, int64(9), h.committed("busy", "t", 0), "a group with members keeps its offsets")
	recs := h.log.parts[PartitionFor("idle", 5)]
	require.Nil(t, recs[len(recs)-1].Value)
}

// TestLeaveIsNoError: a member leaving as it closes is normal operation;
// the rebalance it starts is logged with its reason in words, not as
// UNKNOWN_MEMBER_ID, which read as an error in a node's log.
func TestLeaveIsNoError(t *testing.T) {
	var logged bytes.Buffer
	h := newHarness(t)
	h.c = New(h.log, Options{Partitions: 5, Now: h.clock.Now, InitialRebalanceDelay: -1, Logger: slog.New(slog.NewTextHandler(&logged, nil)),
		NewMemberID: func(client string) string {
			h.ids++
			return fmt.Sprintf("%s-%d", client, h.ids)
		}})
	h.twoMembers("g")
	h.c.Leave(&transport.LeaveGroupRequest{Group: "g", Members: []transport.LeaveGroupMember{{MemberID: "c-1", Reason: "the consumer is being closed"}}})
	require.Contains(t, logged.String(), `reason="member c-1 left the group: the consumer is being closed"`)
	require.NotContains(t, logged.String(), "UNKNOWN_MEMBER_ID")
	require.NotContains(t, logged.String(), "level=ERROR")
}

// TestInitialRebalanceDelay: the first rebalance of an Empty group waits
// group.initial.rebalance.delay.ms for the members that start together,
// each join moving it later (never past the rebalance timeout), so that
// the first generation has them all; without it the first member's join
// completed at once and it took every partition (with two consumers
// started together, one read all 100,000 records). Later rebalances do
// not wait.
func TestInitialRebalanceDelay(t *testing.T) {
	h := newHarness(t)
	h.c = New(h.log, Options{Partitions: 5, Now: h.clock.Now, InitialRebalanceDelay: 3 * time.Second,
		NewMemberID: func(client string) string {
			h.ids++
			return fmt.Sprintf("%s-%d", client, h.ids)
		}})
	j1 := h.join("g", "")
	h.clock.Advance(2 * time.Second)
	h.c.Tick()
	j1.waiting(t)
	j2 := h.join("g", "") // moves the wait to 3s from now
	h.clock.Advance(2 * time.Second)
	h.c.Tick()
	j1.waiting(t)
	j2.waiting(t)
	h.clock.Advance(time.Second)
	h.c.Tick()
	r1, r2 := j1.answered(t), j2.answered(t)
	require.NoError(t, r1.Err)
	require.Equal(t, int32(1), r1.GenerationID)
	require.Len(t, r1.Members, 2, "the first generation has both members")
	require.Equal(t, int32(1), r2.GenerationID)

	// A later rebalance (a member leaving) completes as soon as the rest
	// have rejoined.
	require.NoError(t, h.sync("g", r1.MemberID, 1, map[string]string{r1.MemberID: "p0", r2.MemberID: "p1"}).answered(t).Err)
	h.c.Leave(&transport.LeaveGroupRequest{Group: "g", Members: []transport.LeaveGroupMember{{MemberID: r2.MemberID}}})
	r := h.join("g", r1.MemberID).answered(t)
	require.NoError(t, r.Err)
	require.Equal(t, int32(2), r.GenerationID)
}
