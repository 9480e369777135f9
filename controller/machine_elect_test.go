package controller_test

import (
	"errors"
	"testing"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
)

// ElectReplica moves leadership to a live ISR member in a new leader and
// partition epoch (even when it already leads), tells every replica, and
// survives a replay; it refuses a node outside the ISR, a fenced node and
// an unknown partition, changing nothing.
func TestMachineElectReplica(t *testing.T) {
	store := &controller.MemStore{}
	c := newController(t, store, 3)
	if err := c.CreateTopic("t", 1, 3, controller.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	tp := kafka.TopicPartition{Topic: "t"}
	c.Updates()
	s, err := c.ElectReplica(tp, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := replica.LeaderAndISR{Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1, 2}}
	sameState(t, s, want)
	sameState(t, mustPartition(t, c, "t", 0), want)
	if u := c.Updates(); len(u) != 3 {
		t.Fatalf("updates %+v, want all three replicas", u)
	}
	s, err = c.ElectReplica(tp, 2)
	if err != nil {
		t.Fatal(err)
	}
	want.LeaderEpoch, want.PartitionEpoch = 2, 2
	sameState(t, s, want)

	shrinkTo(t, c, tp, 1, 2) // node 0 leaves the ISR
	want.ISR, want.PartitionEpoch = []int32{1, 2}, 3
	if _, err := c.ElectReplica(tp, 0); !errors.Is(err, kafka.ErrIneligibleReplica) {
		t.Fatalf("electing node 0 outside the ISR: %v", err)
	}
	tickBeating(t, c, sessionTicks, 0, 2) // node 1 fenced, leaves the ISR
	want.ISR, want.PartitionEpoch = []int32{2}, 4
	if _, err := c.ElectReplica(tp, 1); !errors.Is(err, kafka.ErrIneligibleReplica) {
		t.Fatalf("electing fenced node 1: %v", err)
	}
	if _, err := c.ElectReplica(kafka.TopicPartition{Topic: "t", Partition: 1}, 2); !errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
		t.Fatalf("electing in an unknown partition: %v", err)
	}
	sameState(t, mustPartition(t, c, "t", 0), want)

	r, err := controller.NewMachine(store, ctlOptions)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, mustPartition(t, r, "t", 0), want)
}
