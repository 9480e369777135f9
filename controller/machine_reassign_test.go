package controller_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
)

// TestMachineReassignPartition: a partition on nodes 0, 1, 2 led by 0
// moves to 3, 4, 5: the replicas are the six (new first) with the new
// ones adding and the old ones removing, and nothing else changes while the
// new ones catch up; the ISR change that brings the last of them in
// completes it — the partition keeps 3, 4, 5, its ISR those, and a new
// leader among them in a new leader epoch — and the state survives a
// replay.
func TestMachineReassignPartition(t *testing.T) {
	store := &controller.MemStore{}
	c := newController(t, store, 6)
	tp := kafka.TopicPartition{Topic: "t"}
	if err := c.CreateTopic("t", 1, 3, controller.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	before := mustPartition(t, c, "t", 0)
	if !slices.Equal(before.Replicas, []int32{0, 1, 2}) || before.Leader != 0 {
		t.Fatalf("placement %+v, the test expects 0, 1, 2 led by 0", before)
	}
	if err := c.ReassignPartition(tp, []int32{3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	moving := mustPartition(t, c, "t", 0)
	want := replica.LeaderAndISR{Leader: 0, LeaderEpoch: before.LeaderEpoch, PartitionEpoch: before.PartitionEpoch + 1,
		Replicas: []int32{3, 4, 5, 0, 1, 2}, ISR: []int32{0, 1, 2}}
	sameState(t, moving, want)
	if !slices.Equal(moving.AddingReplicas, []int32{3, 4, 5}) || !slices.Equal(moving.RemovingReplicas, []int32{0, 1, 2}) {
		t.Fatalf("adding %v removing %v", moving.AddingReplicas, moving.RemovingReplicas)
	}
	// The same target again (a retried request) changes nothing.
	c.Updates()
	if err := c.ReassignPartition(tp, []int32{3, 4, 5}); err != nil {
		t.Fatal(err)
	}
	if u := c.Updates(); len(u) != 0 {
		t.Fatalf("the target in progress asked for again pushed %d updates, want none", len(u))
	}
	if again := mustPartition(t, c, "t", 0); !slices.Equal(again.AddingReplicas, moving.AddingReplicas) || again.PartitionEpoch != moving.PartitionEpoch {
		t.Fatalf("the target in progress asked for again: %+v, want %+v", again, moving)
	}

	// The new replicas join the ISR one by one; the last completes.
	epochs := func(isr []int32) []int64 {
		var out []int64
		for _, id := range isr {
			out = append(out, c.State().Nodes[id].BrokerEpoch)
		}
		return out
	}
	for i, isr := range [][]int32{{3, 0, 1, 2}, {3, 4, 0, 1, 2}, {3, 4, 5, 0, 1, 2}} {
		cur := mustPartition(t, c, "t", 0)
		s, err := c.AlterPartition(cur.Leader, tp, replica.ISRChange{LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch,
			ISR: isr, BrokerEpochs: epochs(isr)})
		if err != nil {
			t.Fatalf("ISR %v: %v", isr, err)
		}
		if i < 2 && (s.AddingReplicas == nil || s.Leader != 0) {
			t.Fatalf("ISR %v completed the reassignment early: %+v", isr, s)
		}
	}
	done := mustPartition(t, c, "t", 0)
	sameState(t, done, replica.LeaderAndISR{Leader: 3, LeaderEpoch: before.LeaderEpoch + 1, PartitionEpoch: before.PartitionEpoch + 4,
		Replicas: []int32{3, 4, 5}, ISR: []int32{3, 4, 5}})
	if done.AddingReplicas != nil || done.RemovingReplicas != nil {
		t.Fatalf("a completed reassignment left %+v", done)
	}

	again, err := controller.NewMachine(store, ctlOptions)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, mustPartition(t, again, "t", 0), done)
}

// TestMachineReassignCancelAndErrors: a reassignment in progress is
// cancelled back to the replicas before it; a target naming an unknown
// node, a node twice, or none is refused; cancelling nothing is
// NO_REASSIGNMENT_IN_PROGRESS; a shrink to replicas in the ISR completes
// at once.
func TestMachineReassignCancelAndErrors(t *testing.T) {
	c := newController(t, &controller.MemStore{}, 4)
	tp := kafka.TopicPartition{Topic: "t"}
	if err := c.CreateTopic("t", 1, 3, controller.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	before := mustPartition(t, c, "t", 0)
	for _, target := range [][]int32{{9}, {3, 3}, {}} {
		if err := c.ReassignPartition(tp, target); !errors.Is(err, kafka.ErrInvalidReplicaAssignment) {
			t.Fatalf("target %v: %v", target, err)
		}
	}
	if err := c.ReassignPartition(tp, nil); !errors.Is(err, kafka.ErrNoReassignmentInProgress) {
		t.Fatalf("cancelling nothing: %v", err)
	}
	if err := c.ReassignPartition(tp, []int32{3, 0, 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.ReassignPartition(tp, nil); err != nil {
		t.Fatal(err)
	}
	back := mustPartition(t, c, "t", 0)
	if !slices.Equal(back.Replicas, before.Replicas) || !slices.Equal(back.ISR, before.ISR) || back.AddingReplicas != nil || back.Leader != before.Leader {
		t.Fatalf("cancelled to %+v, want the replicas of %+v", back, before)
	}

	if err := c.ReassignPartition(tp, []int32{before.Replicas[1]}); err != nil {
		t.Fatal(err)
	}
	shrunk := mustPartition(t, c, "t", 0)
	if !slices.Equal(shrunk.Replicas, []int32{before.Replicas[1]}) || shrunk.Leader != before.Replicas[1] || shrunk.RemovingReplicas != nil {
		t.Fatalf("shrink to one in the ISR: %+v", shrunk)
	}
}

// TestMachineUnregisterNode: a live node unregistered is fenced first —
// its leaderships move — and then forgotten; an unknown node is
// BROKER_ID_NOT_REGISTERED.
func TestMachineUnregisterNode(t *testing.T) {
	c := newController(t, &controller.MemStore{}, 3)
	tickBeating(t, c, 1, 0, 1, 2)
	if err := c.CreateTopic("t", 3, 3, controller.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := c.UnregisterNode(1); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.State().Nodes[1]; ok {
		t.Fatal("node 1 still registered")
	}
	for p := range int32(3) {
		if s := mustPartition(t, c, "t", p); s.Leader == 1 || slices.Contains(s.ISR, 1) {
			t.Fatalf("partition %d still has node 1 in %+v", p, s)
		}
	}
	if err := c.UnregisterNode(1); !errors.Is(err, kafka.ErrBrokerIDNotRegistered) {
		t.Fatalf("unregistering again: %v", err)
	}
}
