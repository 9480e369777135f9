package controller_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
)

// Partitions added to a topic, its changed configs and a preferred-leader
// election are in the controller's state, in the updates its nodes get,
// and in the state of a controller restarted from its store.
func TestMachineAdminChangesRestart(t *testing.T) {
	for _, st := range metadataStores {
		t.Run(st.name, func(t *testing.T) {
			first, restarted := st.open(t)
			c := newController(t, first(), 3)
			if err := c.CreateTopic("orders", 2, 3, controller.TopicConfig{Configs: map[string]string{"retention.ms": "1000"}}); err != nil {
				t.Fatal(err)
			}
			c.Updates()

			if err := c.CreatePartitions("orders", 0, 2); !errors.Is(err, kafka.ErrInvalidPartitions) {
				t.Fatalf("CreatePartitions to the same count: %v, want INVALID_PARTITIONS", err)
			}
			if err := c.CreatePartitions("nope", 0, 3); !errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
				t.Fatalf("CreatePartitions of an unknown topic: %v", err)
			}
			if err := c.CreatePartitions("orders", 2, 5); err != nil {
				t.Fatal(err)
			}
			s := c.State().Topics["orders"]
			if len(s.Partitions) != 5 {
				t.Fatalf("%d partitions after CreatePartitions to 5", len(s.Partitions))
			}
			added := map[int32]int{}
			for _, u := range c.Updates() {
				if u.TopicPartition.Partition < 2 {
					t.Fatalf("update %+v for a partition that did not change", u)
				}
				added[u.TopicPartition.Partition]++
			}
			for p := int32(2); p < 5; p++ {
				ps := s.Partitions[p]
				if len(ps.Replicas) != 3 || ps.Leader != ps.Replicas[0] || !reflect.DeepEqual(ps.ISR, ps.Replicas) || added[p] != 3 {
					t.Fatalf("partition %d: %+v, %d updates; want 3 replicas, the first leading, all in the ISR, one update each", p, ps, added[p])
				}
			}

			want := map[string]string{"retention.ms": "2000", "unclean.leader.election.enable": "true"}
			if err := c.AlterTopicConfig("orders", controller.TopicConfig{Unclean: controller.AllowUnclean, Configs: want}); err != nil {
				t.Fatal(err)
			}
			if got := c.State().Topics["orders"]; !reflect.DeepEqual(got.Configs, want) || got.Unclean != controller.AllowUnclean {
				t.Fatalf("after AlterTopicConfig: configs %v unclean %v", got.Configs, got.Unclean)
			}

			tp := kafka.TopicPartition{Topic: "orders", Partition: 0}
			if err := c.ElectPreferredLeader(tp, -1); !errors.Is(err, kafka.ErrElectionNotNeeded) {
				t.Fatalf("ElectPreferredLeader of a partition its preferred replica leads: %v", err)
			}
			ps, _ := c.Partition(tp)
			if _, err := c.ElectReplica(tp, ps.Replicas[1]); err != nil {
				t.Fatal(err)
			}
			if err := c.ElectPreferredLeader(tp, -1); err != nil {
				t.Fatal(err)
			}
			if got, _ := c.Partition(tp); got.Leader != ps.Replicas[0] || got.LeaderEpoch != ps.LeaderEpoch+2 {
				t.Fatalf("after the preferred election: %+v; want leader %d in epoch %d", got, ps.Replicas[0], ps.LeaderEpoch+2)
			}
			if err := c.ElectPreferredLeader(kafka.TopicPartition{Topic: "orders", Partition: 9}, -1); !errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
				t.Fatalf("ElectPreferredLeader of a partition the topic lacks: %v", err)
			}

			before := c.State()
			r, err := controller.NewMachine(restarted(), ctlOptions)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.State(); !reflect.DeepEqual(got, before) {
				t.Fatalf("restarted with\n%+v\nwant\n%+v", got, before)
			}
		})
	}
}
