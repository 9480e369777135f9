package group

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
)

// shareHarness drives one shareGroup on a fake clock, keeps every record
// it writes, and checks after every call that a failed call changed
// nothing and that replaying the records gives the same group.
type shareHarness struct {
	t       testing.TB
	g       *shareGroup
	config  shareGroupConfig
	now     time.Time
	topics  map[string]TopicInfo
	records []shareRecord
	// autoInit confirms the initialization the answers ask for at once.
	autoInit bool
}

// testShareConfig is the harness's group configuration: sessions of 10s,
// heartbeats every second.
var testShareConfig = shareGroupConfig{SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second}

// newShareHarness returns a harness whose group is new and has topics
// (name → partitions; topic ids from the name), confirming
// initializations at once.
func newShareHarness(t testing.TB, topics map[string]int32) *shareHarness {
	t.Helper()
	h := &shareHarness{t: t, config: testShareConfig, now: time.Unix(1_700_000_000, 0), autoInit: true}
	h.g = newShareGroup("g", h.config)
	h.setTopics(topics)
	return h
}

// shareTopicID is the id the harnesses give topic name.
func shareTopicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], "id-"+name)
	return id
}

func (h *shareHarness) setTopics(topics map[string]int32) {
	h.t.Helper()
	h.topics = map[string]TopicInfo{}
	for name, n := range topics {
		h.topics[name] = TopicInfo{Name: name, ID: shareTopicID(name), Partitions: n}
	}
	h.records = append(h.records, h.g.setTopics(h.topics)...)
}

// send sends req and returns the answer and error.
func (h *shareHarness) send(req shareHeartbeat) (shareHeartbeatAnswer, error) {
	h.t.Helper()
	before := h.g.describe()
	h.records = append(h.records, h.g.setTopics(h.topics)...)
	a, recs, err := h.g.heartbeat(req, h.now)
	if err != nil {
		if len(recs) > 0 {
			h.t.Fatalf("heartbeat %+v failed (%v) but wrote %d records", req, err, len(recs))
		}
		if !reflect.DeepEqual(before, h.g.describe()) {
			h.t.Fatalf("heartbeat %+v failed (%v) but changed the group", req, err)
		}
		if a.Err != err {
			h.t.Fatalf("answer's error %v, heartbeat's %v", a.Err, err)
		}
	}
	h.records = append(h.records, recs...)
	if h.autoInit && a.Initialize != nil {
		h.records = append(h.records, h.g.markInitialized(a.Initialize)...)
	}
	return a, err
}

// ok sends req and fails the test on an error.
func (h *shareHarness) ok(req shareHeartbeat) shareHeartbeatAnswer {
	h.t.Helper()
	a, err := h.send(req)
	if err != nil {
		h.t.Fatalf("heartbeat %+v: %v", req, err)
	}
	return a
}

// advance moves the clock by d and ticks.
func (h *shareHarness) advance(d time.Duration) []shareRecord {
	h.t.Helper()
	h.now = h.now.Add(d)
	recs := h.g.tick(h.now)
	h.records = append(h.records, recs...)
	return recs
}

// replayed returns the group its records rebuild.
func (h *shareHarness) replayed() *shareGroup {
	h.t.Helper()
	g := replayShareGroup(h.config, h.records, h.now)
	if g == nil {
		h.t.Fatal("the records delete the group")
	}
	g.setTopics(h.topics)
	return g
}

func shareJoin(id string, topics ...string) shareHeartbeat {
	return shareHeartbeat{MemberID: id, MemberEpoch: 0, SubscribedTopicNames: topics, ClientID: "c-" + id, ClientHost: "/10.0.0.1"}
}

func shareBeat(id string, epoch int32) shareHeartbeat {
	return shareHeartbeat{MemberID: id, MemberEpoch: epoch}
}

// TestShareGroupJoinAssignsAfterInitialization: the first member's join
// asks for every partition's state and gets nothing; once initialized, its
// next heartbeat bumps the epoch and gives it everything.
func TestShareGroupJoinAssignsAfterInitialization(t *testing.T) {
	h := newShareHarness(t, map[string]int32{"t": 3})
	h.autoInit = false
	a := h.ok(shareJoin("a", "t"))
	require.Equal(t, int32(1), a.MemberEpoch)
	require.Equal(t, map[string][]int32{}, a.Assignment)
	require.Equal(t, map[string][]int32{"t": {0, 1, 2}}, a.Initialize)
	require.Equal(t, int32(1), a.StateEpoch)
	require.Equal(t, map[string][]int32{"t": {0, 1, 2}}, h.g.describe().Initializing)

	// Asked once: the next heartbeat does not ask again within the retry
	// interval, and asks again after it.
	a = h.ok(shareBeat("a", 1))
	require.Nil(t, a.Initialize)
	require.Nil(t, a.Assignment)
	h.now = h.now.Add(31 * time.Second)
	a = h.ok(shareBeat("a", 1))
	require.Equal(t, map[string][]int32{"t": {0, 1, 2}}, a.Initialize)

	h.records = append(h.records, h.g.markInitialized(map[string][]int32{"t": {0, 2}})...)
	a = h.ok(shareBeat("a", 1))
	require.Equal(t, int32(2), a.MemberEpoch, "newly initialized partitions bump the epoch")
	require.Equal(t, map[string][]int32{"t": {0, 2}}, a.Assignment)
	h.records = append(h.records, h.g.markInitialized(map[string][]int32{"t": {1}})...)
	a = h.ok(shareBeat("a", 2))
	require.Equal(t, map[string][]int32{"t": {0, 1, 2}}, a.Assignment)
	d := h.g.describe()
	require.Equal(t, map[string][]int32{"t": {0, 1, 2}}, d.Initialized)
	require.Nil(t, d.Initializing)
	require.Equal(t, d, h.replayed().describe())

	// A failed initialization is asked for again at once.
	h.setTopics(map[string]int32{"t": 4})
	a = h.ok(shareBeat("a", 3))
	require.Equal(t, map[string][]int32{"t": {3}}, a.Initialize)
	h.records = append(h.records, h.g.markUninitialized(map[string][]int32{"t": {3}})...)
	a = h.ok(shareBeat("a", a.MemberEpoch))
	require.Equal(t, map[string][]int32{"t": {3}}, a.Initialize)
}

// TestShareGroupSharesPartitions: members that outnumber the partitions
// share them; each gets its target at once, with no revocation step.
func TestShareGroupSharesPartitions(t *testing.T) {
	h := newShareHarness(t, map[string]int32{"t": 2})
	h.ok(shareJoin("a", "t"))
	a := h.ok(shareBeat("a", 1))
	require.Equal(t, map[string][]int32{"t": {0, 1}}, a.Assignment)
	epoch := a.MemberEpoch
	b := h.ok(shareJoin("b", "t"))
	require.Equal(t, epoch+1, b.MemberEpoch)
	require.Len(t, b.Assignment["t"], 1)
	c := h.ok(shareJoin("c", "t"))
	require.Len(t, c.Assignment["t"], 1)
	a = h.ok(shareBeat("a", epoch))
	require.Equal(t, c.MemberEpoch, a.MemberEpoch, "a moves to the target epoch at once")
	b = h.ok(shareBeat("b", b.MemberEpoch))
	// Three members, two partitions: each partition has two members.
	sharers := map[int32]int{}
	for _, m := range h.g.describe().Members {
		for _, p := range m.Assignment["t"] {
			sharers[p]++
		}
		require.Equal(t, m.TargetAssignment, m.Assignment)
	}
	require.Equal(t, map[int32]int{0: 2, 1: 2}, sharers)
	require.Equal(t, shareGroupStable, h.g.state())
	require.Equal(t, h.g.describe(), h.replayed().describe())
}

// TestShareGroupHeartbeatErrors: each malformed or out-of-turn request is
// answered as Kafka answers it, and changes nothing.
func TestShareGroupHeartbeatErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		req  shareHeartbeat
		err  *kafka.Error
	}{
		{"empty member id", shareHeartbeat{MemberEpoch: 0, SubscribedTopicNames: []string{"t"}}, kafka.ErrInvalidRequest},
		{"empty rack", shareHeartbeat{MemberID: "x", MemberEpoch: 0, RackID: ptr(""), SubscribedTopicNames: []string{"t"}}, kafka.ErrInvalidRequest},
		{"join without topics", shareHeartbeat{MemberID: "x", MemberEpoch: 0}, kafka.ErrInvalidRequest},
		{"join with no topics", shareHeartbeat{MemberID: "x", MemberEpoch: 0, SubscribedTopicNames: []string{}}, kafka.ErrInvalidRequest},
		{"epoch -2", shareHeartbeat{MemberID: "a", MemberEpoch: -2}, kafka.ErrInvalidRequest},
		{"unknown member", shareBeat("x", 3), kafka.ErrUnknownMemberID},
		{"unknown member leaves", shareBeat("x", -1), kafka.ErrUnknownMemberID},
		{"epoch ahead", shareBeat("a", 9), kafka.ErrFencedMemberEpoch},
		{"epoch behind, not the previous", shareBeat("a", 1), kafka.ErrFencedMemberEpoch},
		{"rejoin of a member with a later epoch", shareJoin("a", "t"), kafka.ErrFencedMemberEpoch},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newShareHarness(t, map[string]int32{"t": 2})
			h.ok(shareJoin("a", "t"))
			h.ok(shareBeat("a", 1))
			h.ok(shareJoin("b", "t"))
			require.Equal(t, int32(3), h.ok(shareBeat("a", 2)).MemberEpoch) // previous epoch 2
			_, err := h.send(c.req)
			require.ErrorIs(t, err, c.err)
		})
	}

	// A join whose answer was lost is sent again: accepted (0 is the
	// member's previous epoch), and so is a heartbeat at the previous
	// epoch.
	h := newShareHarness(t, map[string]int32{"t": 2})
	h.autoInit = false
	first := h.ok(shareJoin("a", "t"))
	again := h.ok(shareJoin("a", "t"))
	require.Equal(t, first.MemberEpoch, again.MemberEpoch)
	h.records = append(h.records, h.g.markInitialized(map[string][]int32{"t": {0, 1}})...)
	require.Equal(t, map[string][]int32{"t": {0, 1}}, h.ok(shareBeat("a", first.MemberEpoch)).Assignment)

	// A full group refuses a new member, not its own.
	h = newShareHarness(t, map[string]int32{"t": 2})
	h.g.config.MaxSize = 1
	h.ok(shareJoin("a", "t"))
	_, err := h.send(shareJoin("b", "t"))
	require.ErrorIs(t, err, kafka.ErrGroupMaxSizeReached)
	h.ok(shareBeat("a", 1))
}

// TestShareGroupHeartbeatAnswers: what an answer carries — the assignment
// on a join, a full request or a change, never else — and what bumps the
// epoch.
func TestShareGroupHeartbeatAnswers(t *testing.T) {
	h := newShareHarness(t, map[string]int32{"t": 2, "u": 2})
	h.ok(shareJoin("a", "t"))
	a := h.ok(shareBeat("a", 1))
	require.Equal(t, int32(2), a.MemberEpoch)
	require.Equal(t, map[string][]int32{"t": {0, 1}}, a.Assignment)
	a = h.ok(shareBeat("a", 2))
	require.Nil(t, a.Assignment, "nothing changed")
	require.Equal(t, time.Second, a.HeartbeatInterval)

	// A rack or client change is persisted without a bump.
	n := len(h.records)
	a = h.ok(shareHeartbeat{MemberID: "a", MemberEpoch: 2, RackID: ptr("r1")})
	require.Equal(t, int32(2), a.MemberEpoch)
	require.Len(t, h.records[n:], 1)
	require.Equal(t, "r1", h.records[n].(shareGroupMemberMetadata).RackID)

	// The same subscription sent again: a full request, answered with
	// the assignment, no bump.
	a = h.ok(shareHeartbeat{MemberID: "a", MemberEpoch: 2, SubscribedTopicNames: []string{"t"}})
	require.Equal(t, int32(2), a.MemberEpoch)
	require.Equal(t, map[string][]int32{"t": {0, 1}}, a.Assignment)

	// A new subscription bumps the epoch and gives u's partitions, once
	// initialized (the harness initializes at once: one more beat).
	a = h.ok(shareHeartbeat{MemberID: "a", MemberEpoch: 2, SubscribedTopicNames: []string{"u", "t", "u"}})
	require.Equal(t, int32(3), a.MemberEpoch)
	require.Equal(t, map[string][]int32{"t": {0, 1}}, a.Assignment)
	a = h.ok(shareBeat("a", 3))
	require.Equal(t, int32(4), a.MemberEpoch)
	require.Equal(t, map[string][]int32{"t": {0, 1}, "u": {0, 1}}, a.Assignment)
	require.Equal(t, []string{"t", "u"}, h.g.describe().Members[0].SubscribedTopicNames)

	// A topic growing bumps the epoch at the next heartbeat (the hash).
	h.setTopics(map[string]int32{"t": 3, "u": 2})
	a = h.ok(shareBeat("a", 4))
	require.Equal(t, int32(5), a.MemberEpoch)
	a = h.ok(shareBeat("a", 5))
	require.Equal(t, map[string][]int32{"t": {0, 1, 2}, "u": {0, 1}}, a.Assignment)

	// Leaving bumps the epoch; the group is Empty.
	a = h.ok(shareBeat("a", a.MemberEpoch))
	epoch := h.g.groupEpoch
	a = h.ok(shareBeat("a", -1))
	require.Equal(t, int32(-1), a.MemberEpoch)
	require.Equal(t, epoch+1, h.g.groupEpoch)
	require.Equal(t, shareGroupEmpty, h.g.state())
	require.Equal(t, h.g.describe(), h.replayed().describe())
}

// TestShareGroupSessionTimeout: a member not heard from for the session
// timeout is removed and the epoch bumped; the others get its share.
func TestShareGroupSessionTimeout(t *testing.T) {
	h := newShareHarness(t, map[string]int32{"t": 4})
	h.ok(shareJoin("a", "t"))
	h.ok(shareBeat("a", 1))
	h.ok(shareJoin("b", "t"))
	a := h.ok(shareBeat("a", 2))
	require.Len(t, a.Assignment["t"], 2)
	h.now = h.now.Add(9 * time.Second)
	a = h.ok(shareBeat("a", a.MemberEpoch))
	require.Empty(t, h.advance(time.Second-time.Millisecond), "b's session is not over yet")
	require.NotEmpty(t, h.advance(time.Millisecond))
	require.Len(t, h.g.members, 1, "b expired at 10s")
	a = h.ok(shareBeat("a", a.MemberEpoch))
	require.Equal(t, map[string][]int32{"t": {0, 1, 2, 3}}, a.Assignment)
	_, err := h.send(shareBeat("b", 3))
	require.ErrorIs(t, err, kafka.ErrUnknownMemberID)
	require.Equal(t, h.g.describe(), h.replayed().describe())
}

// TestShareGroupTopicRecreated: a topic deleted and created again under
// its name (another id) has no share state: it is asked for again, and
// nothing of it is assigned until then.
func TestShareGroupTopicRecreated(t *testing.T) {
	h := newShareHarness(t, map[string]int32{"t": 2})
	h.ok(shareJoin("a", "t"))
	a := h.ok(shareBeat("a", 1))
	require.Equal(t, map[string][]int32{"t": {0, 1}}, a.Assignment)
	h.autoInit = false
	h.topics["t"] = TopicInfo{Name: "t", ID: [16]byte{9}, Partitions: 2}
	a = h.ok(shareBeat("a", a.MemberEpoch))
	require.Equal(t, map[string][]int32{"t": {0, 1}}, a.Initialize)
	require.Equal(t, map[string][]int32{}, a.Assignment, "the old topic's partitions are taken away")
	a = h.ok(shareBeat("a", a.MemberEpoch))
	require.Nil(t, a.Assignment)
	require.Nil(t, a.Initialize)
}

// TestShareGroupTombstones: deleting a group writes Kafka's tombstones in
// its order, and replaying them deletes the group.
func TestShareGroupTombstones(t *testing.T) {
	h := newShareHarness(t, map[string]int32{"t": 2})
	h.ok(shareJoin("a", "t"))
	recs := h.g.tombstones()
	var names []string
	for _, r := range recs {
		names = append(names, fmt.Sprintf("%T", r))
	}
	require.Equal(t, []string{
		"group.shareGroupCurrentMemberAssignment", "group.shareGroupTargetAssignmentMember",
		"group.shareGroupTargetAssignmentMetadata", "group.shareGroupMemberMetadata",
		"group.shareGroupStatePartitionMetadata", "group.shareGroupMetadata",
	}, names)
	require.Nil(t, replayShareGroup(h.config, append(h.records, recs...), h.now))
}
