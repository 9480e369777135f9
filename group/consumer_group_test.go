package group

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/partlog/partlog/kafka"
)

// consumerHarness drives one consumerGroup on a fake clock, keeps every
// record it writes, and checks the group's invariant after every call.
type consumerHarness struct {
	t       testing.TB
	g       *consumerGroup
	config  consumerGroupConfig
	now     time.Time
	topics  map[string]int32
	records []consumerRecord
}

// testConsumerConfig is the harness's group configuration: sessions of
// 10s, heartbeats every second.
var testConsumerConfig = consumerGroupConfig{SessionTimeout: 10 * time.Second, HeartbeatInterval: time.Second}

// newConsumerHarness returns a harness whose group is new and has topics.
func newConsumerHarness(t testing.TB, topics map[string]int32) *consumerHarness {
	t.Helper()
	h := &consumerHarness{t: t, config: testConsumerConfig, now: time.Unix(1_700_000_000, 0)}
	h.g = newConsumerGroup("g", h.config)
	h.setTopics(topics)
	return h
}

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// joinReq is a full join of member id subscribing to topics by name.
func joinReq(id string, topics ...string) consumerHeartbeat {
	return consumerHeartbeat{
		MemberID: id, MemberEpoch: 0, RebalanceTimeout: ptr(5 * time.Second),
		SubscribedTopicNames: append([]string{}, topics...), OwnedPartitions: map[string][]int32{},
	}
}

// hbReq is a heartbeat of member id at epoch, owning owned.
func hbReq(id string, epoch int32, owned map[string][]int32) consumerHeartbeat {
	if owned == nil {
		owned = map[string][]int32{}
	}
	return consumerHeartbeat{MemberID: id, MemberEpoch: epoch, OwnedPartitions: owned}
}

// send sends req and returns the answer and error.
func (h *consumerHarness) send(req consumerHeartbeat) (consumerHeartbeatAnswer, error) {
	h.t.Helper()
	before := h.g.describe()
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
	checkConsumerInvariant(h.t, h.g)
	return a, err
}

// ok sends req and fails the test on an error.
func (h *consumerHarness) ok(req consumerHeartbeat) consumerHeartbeatAnswer {
	h.t.Helper()
	a, err := h.send(req)
	if err != nil {
		h.t.Fatalf("heartbeat %+v: %v", req, err)
	}
	return a
}

// setTopics gives the group topics.
func (h *consumerHarness) setTopics(topics map[string]int32) []consumerRecord {
	h.t.Helper()
	h.topics = maps.Clone(topics)
	recs := h.g.setTopics(topics, h.now)
	h.records = append(h.records, recs...)
	checkConsumerInvariant(h.t, h.g)
	return recs
}

// advance moves the clock by d and ticks.
func (h *consumerHarness) advance(d time.Duration) []consumerRecord {
	h.t.Helper()
	h.now = h.now.Add(d)
	recs := h.g.tick(h.now)
	h.records = append(h.records, recs...)
	checkConsumerInvariant(h.t, h.g)
	return recs
}

// member returns the group's member id, failing if there is none.
func (h *consumerHarness) member(id string) *consumerMember {
	h.t.Helper()
	m := h.g.members[id]
	if m == nil {
		h.t.Fatalf("no member %s", id)
	}
	return m
}

// checkReplay replays the records so far and checks that the replayed
// group is described as the live one.
func (h *consumerHarness) checkReplay() *consumerGroup {
	h.t.Helper()
	r := replayConsumerGroup(h.config, h.records, h.now)
	if len(h.records) == 0 {
		// Nothing written: the group is as a new one.
		if r != nil || !reflect.DeepEqual(h.g.describe(), newConsumerGroup(h.g.id, h.config).describe()) {
			h.t.Fatal("a group that wrote nothing is not a new group")
		}
		return newConsumerGroup(h.g.id, h.config)
	}
	if r == nil {
		h.t.Fatal("replay gave no group")
	}
	if recs := r.setTopics(h.topics, h.now); len(recs) > 0 {
		h.t.Fatalf("the replayed group's topics changed: %+v", recs)
	}
	if got, want := r.describe(), h.g.describe(); !reflect.DeepEqual(got, want) {
		h.t.Fatalf("replayed group:\n%+v\nlive group:\n%+v", got, want)
	}
	checkConsumerInvariant(h.t, r)
	return r
}

// checkConsumerInvariant checks that no partition is held (assigned or
// pending revocation) by two members, that the index of holders is what
// the members hold, and that no member has a partition both assigned and
// pending revocation.
func checkConsumerInvariant(t testing.TB, g *consumerGroup) {
	t.Helper()
	held := map[kafka.TopicPartition]string{}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		if overlapsPartitions(m.assigned, m.pendingRevocation) {
			t.Fatalf("member %s has partitions both assigned and pending revocation: %v, %v", id, m.assigned, m.pendingRevocation)
		}
		for _, ps := range []map[string][]int32{m.assigned, m.pendingRevocation} {
			for tn, parts := range ps {
				for _, p := range parts {
					tp := kafka.TopicPartition{Topic: tn, Partition: p}
					if other, ok := held[tp]; ok {
						t.Fatalf("INVARIANT: %s held by %s and %s", tp, other, id)
					}
					held[tp] = id
				}
			}
		}
	}
	if !maps.Equal(held, g.holders) {
		t.Fatalf("index of holders %v, members hold %v", g.holders, held)
	}
}

// TestConsumerJoinGetsAssignment checks a first member's join: its answer,
// the group it makes and the records it writes.
func TestConsumerJoinGetsAssignment(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 3, "b": 1})
	a := h.ok(joinReq("m1", "a", "b"))
	want := consumerHeartbeatAnswer{
		MemberID: "m1", MemberEpoch: 1, HeartbeatInterval: time.Second,
		Assignment: map[string][]int32{"a": {0, 1, 2}, "b": {0}},
	}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("got %+v, want %+v", a, want)
	}
	d := h.g.describe()
	if d.State != consumerGroupStable || d.GroupEpoch != 1 || d.AssignmentEpoch != 1 || d.AssignorName != "uniform" {
		t.Fatalf("description %+v", d)
	}
	// The next heartbeat, with nothing changed, has no assignment.
	if a := h.ok(hbReq("m1", 1, want.Assignment)); a.Assignment != nil || a.MemberEpoch != 1 {
		t.Fatalf("got %+v", a)
	}
	// The records of a join, in Kafka's order.
	var kinds []string
	for _, r := range h.records {
		kinds = append(kinds, fmt.Sprintf("%T", r))
	}
	wantKinds := []string{
		"group.consumerGroupMemberMetadata", "group.consumerGroupPartitionMetadata", "group.consumerGroupMetadata",
		"group.consumerGroupTargetAssignmentMember", "group.consumerGroupTargetAssignmentMetadata",
		"group.consumerGroupCurrentMemberAssignment",
	}
	if !slices.Equal(kinds, wantKinds) {
		t.Fatalf("records %v, want %v", kinds, wantKinds)
	}
	h.checkReplay()
}

// TestConsumerRevocationThenAssignment moves partitions from one member
// to another: the first revokes them, then the second gets them.
func TestConsumerRevocationThenAssignment(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 4})
	all := map[string][]int32{"a": {0, 1, 2, 3}}
	h.ok(joinReq("m1", "a"))

	// m2 joins: the group epoch moves to 2, and m2's target is a-2 and
	// a-3, which m1 still holds: m2 is at epoch 2 with nothing.
	a := h.ok(joinReq("m2", "a"))
	if a.MemberEpoch != 2 || !reflect.DeepEqual(a.Assignment, map[string][]int32{}) {
		t.Fatalf("m2 joined with %+v", a)
	}
	if s := h.member("m2").state; s != consumerMemberUnreleasedPartitions {
		t.Fatalf("m2 is %v", s)
	}
	if s := h.g.state(); s != consumerGroupReconciling {
		t.Fatalf("group is %v", s)
	}

	// m1 is told to keep only a-0 and a-1, at its epoch.
	a = h.ok(hbReq("m1", 1, all))
	if a.MemberEpoch != 1 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"a": {0, 1}}) {
		t.Fatalf("m1 got %+v", a)
	}
	m1 := h.member("m1")
	if m1.state != consumerMemberUnrevokedPartitions || !reflect.DeepEqual(m1.pendingRevocation, map[string][]int32{"a": {2, 3}}) {
		t.Fatalf("m1 is %v, pending %v", m1.state, m1.pendingRevocation)
	}
	// Until m1 says it revoked them, nothing moves.
	if a := h.ok(hbReq("m1", 1, all)); a.Assignment != nil || a.MemberEpoch != 1 {
		t.Fatalf("m1 got %+v", a)
	}
	if a := h.ok(consumerHeartbeat{MemberID: "m1", MemberEpoch: 1}); a.Assignment != nil || a.MemberEpoch != 1 {
		t.Fatalf("m1 without owned partitions got %+v", a)
	}
	if a := h.ok(hbReq("m2", 2, nil)); a.Assignment != nil || a.MemberEpoch != 2 {
		t.Fatalf("m2 got %+v", a)
	}

	// m1 revoked: it moves to epoch 2, and m2 gets a-2 and a-3.
	if a := h.ok(hbReq("m1", 1, map[string][]int32{"a": {0, 1}})); a.MemberEpoch != 2 || a.Assignment != nil {
		t.Fatalf("m1 got %+v", a)
	}
	// The answer moving m1 to epoch 2 may be lost: its previous epoch
	// is accepted with partitions it has.
	if a := h.ok(hbReq("m1", 1, map[string][]int32{"a": {0, 1}})); a.MemberEpoch != 2 {
		t.Fatalf("m1 got %+v", a)
	}
	a = h.ok(hbReq("m2", 2, nil))
	if a.MemberEpoch != 2 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"a": {2, 3}}) {
		t.Fatalf("m2 got %+v", a)
	}
	if s := h.g.state(); s != consumerGroupStable {
		t.Fatalf("group is %v", s)
	}
	h.checkReplay()
}

// TestConsumerHeartbeatErrors checks the errors of the heartbeat paths,
// each on a group of a static member s1 and a dynamic one m1.
func TestConsumerHeartbeatErrors(t *testing.T) {
	setup := func(t *testing.T) *consumerHarness {
		h := newConsumerHarness(t, map[string]int32{"a": 2})
		h.g.config.MaxSize = 3
		static := joinReq("s1", "a")
		static.InstanceID = ptr("i1")
		h.ok(static)
		h.ok(joinReq("m1", "a"))
		// s1 revokes a-1 and moves to epoch 2 (previous 1); m1 gets
		// a-1 at epoch 2 (previous 0).
		h.ok(hbReq("s1", 1, map[string][]int32{"a": {0, 1}}))
		h.ok(hbReq("s1", 1, map[string][]int32{"a": {0}}))
		h.ok(hbReq("m1", 2, nil))
		return h
	}
	for _, tc := range []struct {
		name string
		req  func() consumerHeartbeat
		want error
	}{
		{"empty member id", func() consumerHeartbeat { return joinReq("", "a") }, kafka.ErrInvalidRequest},
		{"join without rebalance timeout", func() consumerHeartbeat {
			r := joinReq("m2", "a")
			r.RebalanceTimeout = nil
			return r
		}, kafka.ErrInvalidRequest},
		{"join with owned partitions", func() consumerHeartbeat {
			r := joinReq("m2", "a")
			r.OwnedPartitions = map[string][]int32{"a": {0}}
			return r
		}, kafka.ErrInvalidRequest},
		{"join without owned partitions", func() consumerHeartbeat {
			r := joinReq("m2", "a")
			r.OwnedPartitions = nil
			return r
		}, kafka.ErrInvalidRequest},
		{"join without subscription", func() consumerHeartbeat {
			r := joinReq("m2")
			r.SubscribedTopicNames = nil
			return r
		}, kafka.ErrInvalidRequest},
		{"empty instance id", func() consumerHeartbeat {
			r := joinReq("m2", "a")
			r.InstanceID = ptr("")
			return r
		}, kafka.ErrInvalidRequest},
		{"epoch below -2", func() consumerHeartbeat { return hbReq("m1", -3, nil) }, kafka.ErrInvalidRequest},
		{"static leave without instance id", func() consumerHeartbeat { return hbReq("s1", -2, nil) }, kafka.ErrInvalidRequest},
		{"unknown member", func() consumerHeartbeat { return hbReq("m9", 1, nil) }, kafka.ErrUnknownMemberID},
		{"unknown member leaving", func() consumerHeartbeat { return hbReq("m9", -1, nil) }, kafka.ErrUnknownMemberID},
		{"epoch ahead", func() consumerHeartbeat { return hbReq("m1", 3, nil) }, kafka.ErrFencedMemberEpoch},
		{"epoch behind, not the previous", func() consumerHeartbeat { return hbReq("m1", 1, nil) }, kafka.ErrFencedMemberEpoch},
		{"previous epoch without owned partitions", func() consumerHeartbeat {
			return consumerHeartbeat{MemberID: "s1", MemberEpoch: 1}
		}, kafka.ErrFencedMemberEpoch},
		{"previous epoch owning more than assigned", func() consumerHeartbeat {
			return hbReq("s1", 1, map[string][]int32{"a": {0, 1}})
		}, kafka.ErrFencedMemberEpoch},
		{"another member's instance id", func() consumerHeartbeat {
			r := hbReq("m1", 2, nil)
			r.InstanceID = ptr("i1")
			return r
		}, kafka.ErrFencedInstanceID},
		{"another member's instance id, leaving", func() consumerHeartbeat {
			r := hbReq("m1", -2, nil)
			r.InstanceID = ptr("i1")
			return r
		}, kafka.ErrFencedInstanceID},
		{"instance id not released", func() consumerHeartbeat {
			r := joinReq("s2", "a")
			r.InstanceID = ptr("i1")
			return r
		}, kafka.ErrUnreleasedInstanceID},
		{"unsupported assignor", func() consumerHeartbeat {
			r := joinReq("m2", "a")
			r.ServerAssignor = ptr("sticky")
			return r
		}, kafka.ErrUnsupportedAssignor},
		{"invalid regex", func() consumerHeartbeat {
			r := joinReq("m2")
			r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, ptr("a(")
			return r
		}, kafka.ErrInvalidRegularExpression},
		{"group full", func() consumerHeartbeat {
			return consumerHeartbeat{MemberID: "m3", RebalanceTimeout: ptr(time.Second), SubscribedTopicNames: []string{}, OwnedPartitions: map[string][]int32{}}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := setup(t)
			if tc.want == nil { // the group takes a third member, not a fourth
				h.ok(tc.req())
				_, err := h.send(joinReq("m4", "a"))
				if !errors.Is(err, kafka.ErrGroupMaxSizeReached) {
					t.Fatalf("fourth member: %v", err)
				}
				return
			}
			a, err := h.send(tc.req())
			if !errors.Is(err, tc.want) || !errors.Is(a.Err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// TestConsumerFencedEpochs checks which epochs a member at epoch 3, with
// previous epoch 2 and a-0 assigned, may heartbeat with.
func TestConsumerFencedEpochs(t *testing.T) {
	for _, tc := range []struct {
		epoch int32
		owned map[string][]int32
		ok    bool
	}{
		{0, map[string][]int32{}, true},
		{3, nil, true},
		{3, map[string][]int32{"a": {0, 1}}, true},
		{2, map[string][]int32{"a": {0}}, true},
		{2, map[string][]int32{}, true},
		{2, map[string][]int32{"a": {0, 1}}, false},
		{2, nil, false},
		{1, map[string][]int32{}, false},
		{4, map[string][]int32{}, false},
	} {
		t.Run(fmt.Sprintf("epoch %d owning %v", tc.epoch, tc.owned), func(t *testing.T) {
			m := &consumerMember{memberEpoch: 3, previousMemberEpoch: 2, assigned: map[string][]int32{"a": {0}}}
			err := checkEpoch(m, tc.epoch, normalizePartitions(tc.owned), tc.owned != nil)
			if (err == nil) != tc.ok || err != nil && !errors.Is(err, kafka.ErrFencedMemberEpoch) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// TestConsumerLeave checks that a member that leaves is removed and its
// partitions go to the others.
func TestConsumerLeave(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 2})
	h.ok(joinReq("m1", "a"))
	h.ok(joinReq("m2", "a"))
	h.ok(hbReq("m1", 1, map[string][]int32{"a": {0, 1}}))
	h.ok(hbReq("m1", 1, map[string][]int32{"a": {0}}))
	h.ok(hbReq("m2", 2, nil))
	if s := h.g.state(); s != consumerGroupStable {
		t.Fatalf("group is %v", s)
	}

	a := h.ok(hbReq("m2", leaveEpoch, nil))
	if a.MemberEpoch != leaveEpoch || a.MemberID != "m2" {
		t.Fatalf("leave answered %+v", a)
	}
	if _, ok := h.g.members["m2"]; ok {
		t.Fatal("m2 is still a member")
	}
	if d := h.g.describe(); d.GroupEpoch != 3 || d.State != consumerGroupAssigning {
		t.Fatalf("after the leave: %+v", d)
	}
	// m1's next heartbeat computes the target without m2.
	a = h.ok(hbReq("m1", 2, map[string][]int32{"a": {0}}))
	if a.MemberEpoch != 3 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"a": {0, 1}}) {
		t.Fatalf("m1 got %+v", a)
	}
	if _, err := h.send(hbReq("m2", 2, nil)); !errors.Is(err, kafka.ErrUnknownMemberID) {
		t.Fatalf("m2 after leaving: %v", err)
	}
	h.checkReplay()

	// The last member leaves: the group is Empty.
	h.ok(hbReq("m1", leaveEpoch, nil))
	if d := h.g.describe(); d.State != consumerGroupEmpty || d.GroupEpoch != 4 || len(d.Members) != 0 {
		t.Fatalf("after the last leave: %+v", d)
	}
	h.checkReplay()
}

// TestConsumerStaticLeaveAndRejoin checks a static member's temporary
// leave and a new member taking over its instance id.
func TestConsumerStaticLeaveAndRejoin(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 4})
	join := func(id string) consumerHeartbeatAnswer {
		r := joinReq(id, "a")
		r.InstanceID = ptr("i1")
		return h.ok(r)
	}
	join("s1")
	h.ok(joinReq("m1", "a"))
	h.ok(hbReq("s1", 1, map[string][]int32{"a": {0, 1, 2, 3}}))
	h.ok(hbReq("s1", 1, map[string][]int32{"a": {0, 1}}))
	h.ok(hbReq("m1", 2, nil))
	if s := h.g.state(); s != consumerGroupStable {
		t.Fatalf("group is %v", s)
	}

	leave := hbReq("s1", staticLeaveEpoch, nil)
	leave.InstanceID = ptr("i1")
	if a := h.ok(leave); a.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("static leave answered %+v", a)
	}
	d := h.g.describe()
	if d.GroupEpoch != 2 || d.State != consumerGroupReconciling || d.Members[1].MemberEpoch != staticLeaveEpoch ||
		!reflect.DeepEqual(d.Members[1].Assignment, map[string][]int32{"a": {0, 1}}) {
		t.Fatalf("after the static leave: %+v", d)
	}
	// The other member does not get its partitions.
	if a := h.ok(hbReq("m1", 2, map[string][]int32{"a": {2, 3}})); a.Assignment != nil || a.MemberEpoch != 2 {
		t.Fatalf("m1 got %+v", a)
	}
	h.checkReplay()

	// A new member with the instance id takes over its epoch and
	// assignment, without a new group epoch.
	a := join("s2")
	if a.MemberEpoch != 2 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"a": {0, 1}}) {
		t.Fatalf("s2 joined with %+v", a)
	}
	d = h.g.describe()
	if d.GroupEpoch != 2 || d.State != consumerGroupStable || len(d.Members) != 2 || d.Members[1].MemberID != "s2" {
		t.Fatalf("after the rejoin: %+v", d)
	}
	if _, err := h.send(hbReq("s1", 2, nil)); !errors.Is(err, kafka.ErrUnknownMemberID) {
		t.Fatalf("s1 after s2 took over: %v", err)
	}
	h.checkReplay()

	// A static member that left and rejoins with its own member id.
	leave = hbReq("s2", staticLeaveEpoch, nil)
	leave.InstanceID = ptr("i1")
	h.ok(leave)
	if a := join("s2"); a.MemberEpoch != 2 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"a": {0, 1}}) {
		t.Fatalf("s2 rejoined with %+v", a)
	}
	h.checkReplay()
}

// TestConsumerStaticMemberSessionExpires checks that a static member that
// left with -2 is removed when its session expires.
func TestConsumerStaticMemberSessionExpires(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 2})
	r := joinReq("s1", "a")
	r.InstanceID = ptr("i1")
	h.ok(r)
	h.ok(joinReq("m1", "a"))
	h.ok(hbReq("s1", 1, map[string][]int32{"a": {0}}))
	h.ok(hbReq("m1", 2, nil))
	leave := hbReq("s1", staticLeaveEpoch, nil)
	leave.InstanceID = ptr("i1")
	h.ok(leave)

	// m1 heartbeats; s1's session runs out after 10s.
	for range 9 {
		if recs := h.advance(time.Second); len(recs) > 0 {
			t.Fatalf("tick wrote %+v", recs)
		}
		h.ok(hbReq("m1", 2, map[string][]int32{"a": {1}}))
	}
	if recs := h.advance(time.Second); len(recs) == 0 {
		t.Fatal("s1's session did not expire")
	}
	if _, ok := h.g.members["s1"]; ok || h.g.groupEpoch != 3 {
		t.Fatalf("s1 still a member, or epoch %d", h.g.groupEpoch)
	}
	a := h.ok(hbReq("m1", 2, map[string][]int32{"a": {1}}))
	if a.MemberEpoch != 3 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"a": {0, 1}}) {
		t.Fatalf("m1 got %+v", a)
	}
	// The instance id is free: a new member takes it as a new member.
	r = joinReq("s2", "a")
	r.InstanceID = ptr("i1")
	if a := h.ok(r); a.MemberEpoch != 4 {
		t.Fatalf("s2 joined with %+v", a)
	}
	h.checkReplay()
}

// TestConsumerSessionTimeout checks that a member that stops heartbeating
// is removed after its session timeout.
func TestConsumerSessionTimeout(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 2})
	h.ok(joinReq("m1", "a"))
	h.ok(joinReq("m2", "a"))
	h.ok(hbReq("m1", 1, map[string][]int32{"a": {0}}))
	h.ok(hbReq("m2", 2, nil))
	if next := h.g.nextDeadline(); !next.Equal(h.now.Add(10 * time.Second)) {
		t.Fatalf("next deadline %v", next)
	}
	// m2 crashes; m1 keeps heartbeating.
	for range 9 {
		h.advance(time.Second)
		h.ok(hbReq("m1", 2, map[string][]int32{"a": {0}}))
	}
	if recs := h.advance(time.Second); len(recs) != 4 { // three tombstones and the epoch
		t.Fatalf("tick wrote %+v", recs)
	}
	if _, ok := h.g.members["m2"]; ok {
		t.Fatal("m2 is still a member")
	}
	if a := h.ok(hbReq("m1", 2, map[string][]int32{"a": {0}})); a.MemberEpoch != 3 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"a": {0, 1}}) {
		t.Fatalf("m1 got %+v", a)
	}
	// The crashed member comes back: it is unknown, and joins again.
	if _, err := h.send(hbReq("m2", 2, map[string][]int32{"a": {1}})); !errors.Is(err, kafka.ErrUnknownMemberID) {
		t.Fatalf("m2 after expiring: %v", err)
	}
	if a := h.ok(joinReq("m2", "a")); a.MemberEpoch != 4 {
		t.Fatalf("m2 rejoined with %+v", a)
	}
	h.checkReplay()
}

// TestConsumerRebalanceTimeout checks that a member that does not revoke
// within its rebalance timeout is fenced.
func TestConsumerRebalanceTimeout(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 2})
	h.ok(joinReq("m1", "a"))
	h.ok(joinReq("m2", "a"))
	// m1 is told to revoke a-1 at this time, and has 5s to.
	h.ok(hbReq("m1", 1, map[string][]int32{"a": {0, 1}}))
	for range 4 {
		h.advance(time.Second)
		h.ok(hbReq("m1", 1, map[string][]int32{"a": {0, 1}}))
		h.ok(hbReq("m2", 2, nil))
	}
	if recs := h.advance(time.Second); len(recs) == 0 {
		t.Fatal("m1 was not fenced")
	}
	if _, ok := h.g.members["m1"]; ok {
		t.Fatal("m1 is still a member")
	}
	if _, err := h.send(hbReq("m1", 1, map[string][]int32{"a": {0, 1}})); !errors.Is(err, kafka.ErrUnknownMemberID) {
		t.Fatalf("m1 after being fenced: %v", err)
	}
	if a := h.ok(hbReq("m2", 2, nil)); a.MemberEpoch != 3 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"a": {0, 1}}) {
		t.Fatalf("m2 got %+v", a)
	}
	h.checkReplay()
}

// TestConsumerRegexPicksUpNewTopic checks a regex subscription as topics
// are created, grow and are deleted. (A regex matches internal topics
// too, as on Kafka: TestConsumerRegexMatchesInternal.)
func TestConsumerRegexPicksUpNewTopic(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"orders-us": 1, "payments": 1, kafka.OffsetsTopic: 3})
	r := joinReq("m1")
	r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, ptr("orders-.*")
	a := h.ok(r)
	if !reflect.DeepEqual(a.Assignment, map[string][]int32{"orders-us": {0}}) {
		t.Fatalf("m1 joined with %+v", a)
	}
	// A topic that does not match changes nothing.
	if recs := h.setTopics(map[string]int32{"orders-us": 1, "payments": 3, kafka.OffsetsTopic: 3}); len(recs) > 0 {
		t.Fatalf("setTopics wrote %+v", recs)
	}
	// A new matching topic bumps the group epoch; the next heartbeat
	// gets its partitions.
	if recs := h.setTopics(map[string]int32{"orders-us": 1, "orders-eu": 2, "payments": 3, kafka.OffsetsTopic: 3}); len(recs) != 2 {
		t.Fatalf("setTopics wrote %+v", recs)
	}
	if s := h.g.state(); s != consumerGroupAssigning {
		t.Fatalf("group is %v", s)
	}
	a = h.ok(hbReq("m1", 1, map[string][]int32{"orders-us": {0}}))
	if a.MemberEpoch != 2 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"orders-eu": {0, 1}, "orders-us": {0}}) {
		t.Fatalf("m1 got %+v", a)
	}
	h.checkReplay()

	// A topic that grows.
	h.setTopics(map[string]int32{"orders-us": 2, "orders-eu": 2})
	a = h.ok(hbReq("m1", 2, a.Assignment))
	if a.MemberEpoch != 3 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"orders-eu": {0, 1}, "orders-us": {0, 1}}) {
		t.Fatalf("m1 got %+v", a)
	}
	// A topic deleted: its partitions are revoked (nobody else holds
	// them, so the member moves on at once when it says so).
	h.setTopics(map[string]int32{"orders-us": 2})
	a = h.ok(hbReq("m1", 3, a.Assignment))
	if a.MemberEpoch != 3 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"orders-us": {0, 1}}) {
		t.Fatalf("m1 got %+v", a)
	}
	if a = h.ok(hbReq("m1", 3, a.Assignment)); a.MemberEpoch != 4 {
		t.Fatalf("m1 got %+v", a)
	}
	h.checkReplay()
}

// TestConsumerSubscriptionChange checks a member moving from one topic to
// another.
func TestConsumerSubscriptionChange(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 1, "b": 1})
	h.ok(joinReq("m1", "a"))
	req := hbReq("m1", 1, map[string][]int32{"a": {0}})
	req.SubscribedTopicNames = []string{"b"}
	a := h.ok(req)
	// a-0 must be revoked first, though its owned partitions say it has
	// it; b-0 comes after.
	if a.MemberEpoch != 1 || !reflect.DeepEqual(a.Assignment, map[string][]int32{}) {
		t.Fatalf("m1 got %+v", a)
	}
	a = h.ok(hbReq("m1", 1, nil))
	if a.MemberEpoch != 2 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"b": {0}}) {
		t.Fatalf("m1 got %+v", a)
	}
	// Heartbeating the same subscription again changes nothing.
	req = hbReq("m1", 2, map[string][]int32{"b": {0}})
	req.SubscribedTopicNames = []string{"b"}
	before := len(h.records)
	if a := h.ok(req); a.MemberEpoch != 2 || a.Assignment != nil || len(h.records) != before {
		t.Fatalf("m1 got %+v, and %d records", a, len(h.records)-before)
	}
	h.checkReplay()
}

// TestConsumerServerAssignorChoice checks that the group uses the assignor
// its members prefer.
func TestConsumerServerAssignorChoice(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 3, "b": 3})
	r := joinReq("m1", "a", "b")
	r.ServerAssignor = ptr("range")
	h.ok(r)
	h.ok(joinReq("m2", "a", "b"))
	d := h.g.describe()
	if d.AssignorName != "range" {
		t.Fatalf("assignor %s", d.AssignorName)
	}
	// Range co-partitions: m1 gets partitions 0 and 1 of both topics.
	want := map[string][]int32{"a": {0, 1}, "b": {0, 1}}
	if got := d.Members[0].TargetAssignment; !reflect.DeepEqual(got, want) {
		t.Fatalf("m1's target %v, want %v", got, want)
	}
	// m1 goes back to the default: the group epoch moves on.
	r = hbReq("m1", 1, map[string][]int32{"a": {0, 1, 2}, "b": {0, 1, 2}})
	r.ServerAssignor = ptr("")
	h.ok(r)
	if d := h.g.describe(); d.AssignorName != "uniform" || d.GroupEpoch != 3 || d.AssignmentEpoch != 3 {
		t.Fatalf("after m1's change: %+v", d)
	}
	h.checkReplay()
}

// TestConsumerDescribe checks a group's description.
func TestConsumerDescribe(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 2})
	if d := h.g.describe(); d.State != consumerGroupEmpty || len(d.Members) != 0 || d.AssignorName != "uniform" {
		t.Fatalf("new group: %+v", d)
	}
	r := joinReq("m1", "a")
	r.InstanceID, r.RackID, r.ClientID, r.ClientHost = ptr("i1"), ptr("rack-1"), "client-1", "10.0.0.1"
	h.ok(r)
	want := consumerGroupDescription{
		GroupID: "g", State: consumerGroupStable, GroupEpoch: 1, AssignmentEpoch: 1, AssignorName: "uniform",
		Members: []consumerMemberDescription{{
			MemberID: "m1", InstanceID: "i1", RackID: "rack-1", ClientID: "client-1", ClientHost: "10.0.0.1",
			MemberEpoch: 1, SubscribedTopicNames: []string{"a"},
			Assignment: map[string][]int32{"a": {0, 1}}, TargetAssignment: map[string][]int32{"a": {0, 1}},
		}},
	}
	if d := h.g.describe(); !reflect.DeepEqual(d, want) {
		t.Fatalf("got %+v, want %+v", d, want)
	}
	h.setTopics(map[string]int32{"a": 3})
	if d := h.g.describe(); d.State != consumerGroupAssigning || d.GroupEpoch != 2 {
		t.Fatalf("after a topic grew: %+v", d)
	}
	h.checkReplay()
}

// TestConsumerGroupTombstones checks that a group's tombstones delete it.
func TestConsumerGroupTombstones(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 2})
	h.ok(joinReq("m1", "a"))
	h.ok(hbReq("m1", leaveEpoch, nil))
	h.records = append(h.records, h.g.tombstones()...)
	if g := replayConsumerGroup(h.config, h.records, h.now); g != nil {
		t.Fatalf("replaying a deleted group gave %+v", g.describe())
	}
	if g := replayConsumerGroup(h.config, nil, h.now); g != nil {
		t.Fatal("replaying nothing gave a group")
	}
}

// TestConsumerFencedMemberRejoins checks that a member that gave up its
// partitions rejoins with epoch 0 and its member id while the group
// still has it: what it had to revoke counts as revoked.
func TestConsumerFencedMemberRejoins(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 2})
	h.ok(joinReq("m1", "a"))
	h.ok(joinReq("m2", "a"))
	h.ok(hbReq("m1", 1, map[string][]int32{"a": {0, 1}}))
	if s := h.member("m1").state; s != consumerMemberUnrevokedPartitions {
		t.Fatalf("m1 is %v", s)
	}
	a := h.ok(joinReq("m1", "a"))
	if a.MemberEpoch != 2 || !reflect.DeepEqual(a.Assignment, map[string][]int32{"a": {0}}) {
		t.Fatalf("m1 rejoined with %+v", a)
	}
	if d := h.g.describe(); d.GroupEpoch != 2 {
		t.Fatalf("the rejoin bumped the group epoch: %+v", d)
	}
	if a := h.ok(hbReq("m2", 2, nil)); !reflect.DeepEqual(a.Assignment, map[string][]int32{"a": {1}}) {
		t.Fatalf("m2 got %+v", a)
	}
	h.checkReplay()
}

// TestConsumerStaticLeaveWhileRevoking checks that a static member that
// leaves with -2 while it has partitions to revoke frees them, and is not
// fenced for its rebalance timeout.
func TestConsumerStaticLeaveWhileRevoking(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"a": 2})
	r := joinReq("s1", "a")
	r.InstanceID = ptr("i1")
	h.ok(r)
	h.ok(joinReq("m1", "a"))
	h.ok(hbReq("s1", 1, map[string][]int32{"a": {0, 1}}))
	leave := hbReq("s1", staticLeaveEpoch, nil)
	leave.InstanceID = ptr("i1")
	h.ok(leave)
	if m := h.member("s1"); m.pendingRevocation != nil || !reflect.DeepEqual(m.assigned, map[string][]int32{"a": {0}}) {
		t.Fatalf("s1 has %v, pending %v", m.assigned, m.pendingRevocation)
	}
	if a := h.ok(hbReq("m1", 2, nil)); !reflect.DeepEqual(a.Assignment, map[string][]int32{"a": {1}}) {
		t.Fatalf("m1 got %+v", a)
	}
	h.checkReplay()
	for range 6 {
		if recs := h.advance(time.Second); len(recs) > 0 {
			t.Fatalf("tick wrote %+v", recs)
		}
		h.ok(hbReq("m1", 2, map[string][]int32{"a": {1}}))
	}
}

// TestConsumerRegexMatchesInternal: Kafka's coordinator matches a regex
// against every topic, __consumer_offsets too (franz-go's
// Test848RegexBrokerResolves expects it), so a client that wants internal
// topics left out writes its regex so.
func TestConsumerRegexMatchesInternal(t *testing.T) {
	h := newConsumerHarness(t, map[string]int32{"orders-us": 1, kafka.OffsetsTopic: 2})
	r := joinReq("m1")
	r.SubscribedTopicNames, r.SubscribedTopicRegex = nil, ptr("orders-.*|__consumer_offsets")
	if a := h.ok(r); !reflect.DeepEqual(a.Assignment, map[string][]int32{"orders-us": {0}, kafka.OffsetsTopic: {0, 1}}) {
		t.Fatalf("m1 joined with %+v", a)
	}
}
