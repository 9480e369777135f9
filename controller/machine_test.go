package controller_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
)

// ctlOptions: 100 ms ticks, so the 9 s session is 90 ticks; the
// imbalance check every 10 s (100 ticks).
var ctlOptions = controller.Options{LeaderImbalanceCheckInterval: 10 * time.Second}

const sessionTicks = 90

// newController starts a controller over store with nodes 0..n-1
// registered, each in broker epoch id+1.
func newController(t *testing.T, store controller.Store, n int) *controller.Machine {
	t.Helper()
	c, err := controller.NewMachine(store, ctlOptions)
	if err != nil {
		t.Fatal(err)
	}
	for id := range int32(n) {
		e, err := c.RegisterNode(id, "")
		if err != nil {
			t.Fatal(err)
		}
		if e != int64(id)+1 {
			t.Fatalf("node %d got broker epoch %d, want %d", id, e, id+1)
		}
	}
	return c
}

// replayAndRestore rebuilds m twice: replayed from log, the store m
// wrote, and restored from m's snapshot, for tests that both give the
// same state.
func replayAndRestore(t *testing.T, m *controller.Machine, log controller.Store) (replayed, restored *controller.Machine) {
	t.Helper()
	replayed, err := controller.NewMachine(log, controller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	restored, err = controller.NewMachine(&controller.MemStore{}, controller.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := restored.Apply(m.Snapshot()); err != nil {
		t.Fatal(err)
	}
	return replayed, restored
}

func mustPartition(t *testing.T, c *controller.Machine, topic string, p int32) replica.LeaderAndISR {
	t.Helper()
	s, err := c.Partition(kafka.TopicPartition{Topic: topic, Partition: p})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tickBeating ticks the controller n times, heartbeating the given nodes
// in their current broker epochs before each tick.
func tickBeating(t *testing.T, c *controller.Machine, n int, beating ...int32) {
	t.Helper()
	for range n {
		for _, id := range beating {
			if err := c.Heartbeat(id, c.State().Nodes[id].BrokerEpoch); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Tick(); err != nil {
			t.Fatal(err)
		}
	}
}

func sameState(t *testing.T, got, want replica.LeaderAndISR) {
	t.Helper()
	if got.Leader != want.Leader || got.LeaderEpoch != want.LeaderEpoch || got.PartitionEpoch != want.PartitionEpoch ||
		!slices.Equal(got.Replicas, want.Replicas) || !slices.Equal(got.ISR, want.ISR) {
		t.Fatalf("state %+v, want %+v", got, want)
	}
}

// A node whose heartbeats stop is fenced after exactly the session
// timeout; the partitions it led elect the next ISR member in assignment
// order with the leader epoch bumped, it leaves every ISR, and the other
// replicas are told.
func TestMachineFencesSilentNode(t *testing.T) {
	c := newController(t, &controller.MemStore{}, 3)
	if err := c.CreateTopic("t", 1, 3, controller.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	s := mustPartition(t, c, "t", 0)
	sameState(t, s, replica.LeaderAndISR{Leader: 0, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1, 2}})
	if u := c.Updates(); len(u) != 3 {
		t.Fatalf("creation updates %+v, want one per node", u)
	}
	tickBeating(t, c, sessionTicks-1, 1, 2)
	if c.State().Nodes[0].Fenced {
		t.Fatalf("node 0 fenced after %d ticks, before the session timeout", sessionTicks-1)
	}
	if u := c.Updates(); len(u) != 0 {
		t.Fatalf("updates %+v while nothing changed", u)
	}
	tickBeating(t, c, 1, 1, 2)
	if !c.State().Nodes[0].Fenced {
		t.Fatal("node 0 not fenced after the session timeout")
	}
	want := replica.LeaderAndISR{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{0, 1, 2}, ISR: []int32{1, 2}}
	sameState(t, mustPartition(t, c, "t", 0), want)
	u := c.Updates()
	if len(u) != 2 || u[0].Node != 1 || u[1].Node != 2 {
		t.Fatalf("updates %+v, want the new state for nodes 1 and 2", u)
	}
	for _, x := range u {
		sameState(t, x.State, want)
	}

	// A fenced node's heartbeat in its epoch unfences it and sends it
	// its partitions; it stays out of the ISR until the leader adds it.
	if err := c.Heartbeat(0, 1); err != nil {
		t.Fatal(err)
	}
	if c.State().Nodes[0].Fenced {
		t.Fatal("node 0 still fenced after a heartbeat")
	}
	u = c.Updates()
	if len(u) != 1 || u[0].Node != 0 {
		t.Fatalf("updates %+v, want node 0's partition", u)
	}
	sameState(t, u[0].State, want)
	if err := c.Heartbeat(0, 7); !errors.Is(err, kafka.ErrStaleBrokerEpoch) {
		t.Fatalf("heartbeat in a wrong epoch: %v", err)
	}
	if err := c.Heartbeat(9, 1); !errors.Is(err, kafka.ErrBrokerIDNotRegistered) {
		t.Fatalf("heartbeat of an unknown node: %v", err)
	}
}

// A re-registration (a restart) fences the old incarnation first: a
// leader that restarts fast still loses its leadership and ISR place.
func TestMachineReregistrationFencesOldIncarnation(t *testing.T) {
	c := newController(t, &controller.MemStore{}, 3)
	if err := c.CreateTopic("t", 1, 3, controller.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	e, err := c.RegisterNode(0, "")
	if err != nil {
		t.Fatal(err)
	}
	if e != 4 {
		t.Fatalf("broker epoch %d, want 4", e)
	}
	sameState(t, mustPartition(t, c, "t", 0),
		replica.LeaderAndISR{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{0, 1, 2}, ISR: []int32{1, 2}})
	if st := c.State().Nodes[0]; st.Fenced || st.BrokerEpoch != 4 {
		t.Fatalf("node 0 %+v", st)
	}
}

// shrinkTo commits an ISR change to isr proposed by the current leader.
func shrinkTo(t *testing.T, c *controller.Machine, tp kafka.TopicPartition, isr ...int32) replica.LeaderAndISR {
	t.Helper()
	s, _ := c.Partition(tp)
	epochs := make([]int64, len(isr))
	for i, id := range isr {
		epochs[i] = c.State().Nodes[id].BrokerEpoch
	}
	ns, err := c.AlterPartition(s.Leader, tp, replica.ISRChange{LeaderEpoch: s.LeaderEpoch, PartitionEpoch: s.PartitionEpoch, ISR: isr, BrokerEpochs: epochs})
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// With the ISR down to its leader, fencing the leader leaves the partition
// offline with the ISR kept (never empty); only a topic with unclean
// leader election picks a replica outside the ISR, which becomes the
// whole ISR. The offline partition comes back when its ISR member does.
func TestMachineUncleanElection(t *testing.T) {
	for _, mode := range []controller.Unclean{controller.CleanOnly, controller.AllowUnclean} {
		c := newController(t, &controller.MemStore{}, 3)
		if err := c.CreateTopic("t", 1, 3, controller.TopicConfig{Unclean: mode}); err != nil {
			t.Fatal(err)
		}
		tp := kafka.TopicPartition{Topic: "t"}
		shrinkTo(t, c, tp, 0)
		tickBeating(t, c, sessionTicks, 1, 2)
		got := mustPartition(t, c, "t", 0)
		if mode == controller.CleanOnly {
			sameState(t, got, replica.LeaderAndISR{Leader: replica.NoLeader, LeaderEpoch: 1, PartitionEpoch: 2, Replicas: []int32{0, 1, 2}, ISR: []int32{0}})
			if err := c.Heartbeat(0, 1); err != nil {
				t.Fatal(err)
			}
			sameState(t, mustPartition(t, c, "t", 0), replica.LeaderAndISR{Leader: 0, LeaderEpoch: 2, PartitionEpoch: 3, Replicas: []int32{0, 1, 2}, ISR: []int32{0}})
		} else {
			sameState(t, got, replica.LeaderAndISR{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2, Replicas: []int32{0, 1, 2}, ISR: []int32{1}})
		}
	}
}

// Turning unclean.leader.election.enable on for a topic whose partition
// has no leader elects a live replica outside the ISR at once.
func TestMachineUncleanElectionOnConfigChange(t *testing.T) {
	c := newController(t, &controller.MemStore{}, 3)
	if err := c.CreateTopic("t", 1, 3, controller.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	tp := kafka.TopicPartition{Topic: "t"}
	shrinkTo(t, c, tp, 0)
	tickBeating(t, c, sessionTicks, 1, 2)
	sameState(t, mustPartition(t, c, "t", 0), replica.LeaderAndISR{Leader: replica.NoLeader, LeaderEpoch: 1, PartitionEpoch: 2, Replicas: []int32{0, 1, 2}, ISR: []int32{0}})
	if err := c.AlterTopicConfig("t", controller.TopicConfig{Unclean: controller.AllowUnclean, Configs: map[string]string{"unclean.leader.election.enable": "true"}}); err != nil {
		t.Fatal(err)
	}
	sameState(t, mustPartition(t, c, "t", 0), replica.LeaderAndISR{Leader: 1, LeaderEpoch: 2, PartitionEpoch: 3, Replicas: []int32{0, 1, 2}, ISR: []int32{1}})
}

func TestMachineAlterPartition(t *testing.T) {
	tp := kafka.TopicPartition{Topic: "t"}
	setup := func(t *testing.T) *controller.Machine {
		c := newController(t, &controller.MemStore{}, 3)
		if err := c.CreateTopic("t", 1, 3, controller.TopicConfig{}); err != nil {
			t.Fatal(err)
		}
		shrinkTo(t, c, tp, 0, 1) // leader 0, epochs 0/1, ISR [0 1]
		c.Updates()
		return c
	}
	t.Run("shrink and expand", func(t *testing.T) {
		c := setup(t)
		s, err := c.AlterPartition(0, tp, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{2, 0, 1}, BrokerEpochs: []int64{3, 1, 2}})
		if err != nil {
			t.Fatal(err)
		}
		want := replica.LeaderAndISR{Leader: 0, LeaderEpoch: 0, PartitionEpoch: 2, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1, 2}}
		sameState(t, s, want)
		sameState(t, mustPartition(t, c, "t", 0), want)
		if u := c.Updates(); len(u) != 3 {
			t.Fatalf("updates %+v, want all three replicas", u)
		}
	})
	cases := []struct {
		name   string
		from   int32
		change replica.ISRChange
		want   error
	}{
		{"old leader epoch", 0, replica.ISRChange{LeaderEpoch: -1, PartitionEpoch: 1, ISR: []int32{0}, BrokerEpochs: []int64{1}}, kafka.ErrFencedLeaderEpoch},
		{"not the leader", 1, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{1}, BrokerEpochs: []int64{2}}, kafka.ErrNotLeaderOrFollower},
		{"old partition epoch", 0, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 0, ISR: []int32{0}, BrokerEpochs: []int64{1}}, kafka.ErrInvalidUpdateVersion},
		{"newer partition epoch", 0, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 2, ISR: []int32{0}, BrokerEpochs: []int64{1}}, kafka.ErrInvalidUpdateVersion},
		{"empty ISR", 0, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 1}, kafka.ErrInvalidRequest},
		{"ISR without the leader", 0, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{1}, BrokerEpochs: []int64{2}}, kafka.ErrInvalidRequest},
		{"not a replica", 0, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{0, 7}, BrokerEpochs: []int64{1, 1}}, kafka.ErrInvalidRequest},
		{"duplicate member", 0, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{0, 0}, BrokerEpochs: []int64{1, 1}}, kafka.ErrInvalidRequest},
		{"leader restarted", 0, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{0}, BrokerEpochs: []int64{9}}, kafka.ErrStaleBrokerEpoch},
		{"joiner in another broker epoch (KIP-903)", 0, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{0, 1, 2}, BrokerEpochs: []int64{1, 2, 2}}, kafka.ErrIneligibleReplica},
		{"joiner epoch unknown", 0, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{0, 1, 2}, BrokerEpochs: []int64{1, 2, -1}}, kafka.ErrIneligibleReplica},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := setup(t)
			before := mustPartition(t, c, "t", 0)
			_, err := c.AlterPartition(tc.from, tp, tc.change)
			if !errors.Is(err, tc.want) {
				t.Fatalf("AlterPartition: %v, want %v", err, tc.want)
			}
			sameState(t, mustPartition(t, c, "t", 0), before)
			if u := c.Updates(); len(u) != 0 {
				t.Fatalf("refused change pushed %+v", u)
			}
		})
	}
	t.Run("fenced joiner", func(t *testing.T) {
		c := setup(t)
		tickBeating(t, c, sessionTicks, 0, 1)
		_, err := c.AlterPartition(0, tp, replica.ISRChange{LeaderEpoch: 0, PartitionEpoch: 1, ISR: []int32{0, 1, 2}, BrokerEpochs: []int64{1, 2, 3}})
		if !errors.Is(err, kafka.ErrIneligibleReplica) {
			t.Fatalf("AlterPartition adding a fenced node: %v", err)
		}
	})
	t.Run("unknown partition", func(t *testing.T) {
		c := setup(t)
		_, err := c.AlterPartition(0, kafka.TopicPartition{Topic: "t", Partition: 1}, replica.ISRChange{ISR: []int32{0}, BrokerEpochs: []int64{1}})
		if !errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
			t.Fatalf("AlterPartition of an unknown partition: %v", err)
		}
	})
}

// After a failover, leadership goes back to the preferred replica on the
// imbalance check once it is back in the ISR, and not before.
func TestMachinePreferredLeaderElection(t *testing.T) {
	c := newController(t, &controller.MemStore{}, 3)
	if err := c.CreateTopic("t", 1, 3, controller.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	tp := kafka.TopicPartition{Topic: "t"}
	tickBeating(t, c, sessionTicks, 1, 2) // node 0 fenced at tick 90
	if err := c.Heartbeat(0, 1); err != nil {
		t.Fatal(err)
	}
	tickBeating(t, c, 10, 0, 1, 2) // tick 100: node 0 is not in the ISR
	s := mustPartition(t, c, "t", 0)
	if s.Leader != 1 {
		t.Fatalf("leader %d moved to a replica outside the ISR", s.Leader)
	}
	shrinkTo(t, c, tp, 0, 1, 2) // leader 1 adds node 0 back
	tickBeating(t, c, 99, 0, 1, 2)
	if s := mustPartition(t, c, "t", 0); s.Leader != 1 {
		t.Fatalf("leader moved to %d before the imbalance check", s.Leader)
	}
	c.Updates()
	tickBeating(t, c, 1, 0, 1, 2) // tick 200
	want := replica.LeaderAndISR{Leader: 0, LeaderEpoch: 2, PartitionEpoch: 3, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1, 2}}
	sameState(t, mustPartition(t, c, "t", 0), want)
	if u := c.Updates(); len(u) != 3 {
		t.Fatalf("updates %+v, want all three replicas", u)
	}
}

// Replicas spread over the nodes: each node leads the same number of
// partitions and holds the same number of replicas, no partition has a
// node twice, and successive topics start on different nodes.
func TestMachinePlacementSpread(t *testing.T) {
	c := newController(t, &controller.MemStore{}, 4)
	for _, name := range []string{"a", "b"} {
		if err := c.CreateTopic(name, 8, 3, controller.TopicConfig{}); err != nil {
			t.Fatal(err)
		}
		leaders, replicas := map[int32]int{}, map[int32]int{}
		followerPairs := map[[2]int32]int{}
		for p := range int32(8) {
			s := mustPartition(t, c, name, p)
			if len(s.Replicas) != 3 || s.Leader != s.Replicas[0] {
				t.Fatalf("%s-%d: %+v", name, p, s)
			}
			leaders[s.Leader]++
			for i, id := range s.Replicas {
				if slices.Index(s.Replicas, id) != i {
					t.Fatalf("%s-%d: node %d twice in %v", name, p, id, s.Replicas)
				}
				replicas[id]++
			}
			followerPairs[[2]int32{s.Replicas[0], s.Replicas[1]}]++
		}
		for id := range int32(4) {
			if leaders[id] != 2 || replicas[id] != 6 {
				t.Fatalf("%s: node %d leads %d and holds %d replicas, want 2 and 6 (%v %v)", name, id, leaders[id], replicas[id], leaders, replicas)
			}
		}
		if len(followerPairs) != 8 {
			t.Fatalf("%s: leader/first-follower pairs repeat: %v", name, followerPairs)
		}
	}
	if a, b := mustPartition(t, c, "a", 0).Leader, mustPartition(t, c, "b", 0).Leader; a == b {
		t.Fatalf("both topics start on node %d", a)
	}
	for _, tc := range []struct {
		name       string
		partitions int
		rf         int
		want       error
	}{
		{"a", 1, 1, kafka.ErrTopicAlreadyExists},
		{"bad/name", 1, 1, kafka.ErrInvalidTopic},
		{"c", 0, 1, kafka.ErrInvalidPartitions},
		{"c", 1, 5, kafka.ErrInvalidReplicationFactor},
	} {
		if err := c.CreateTopic(tc.name, tc.partitions, tc.rf, controller.TopicConfig{}); !errors.Is(err, tc.want) {
			t.Fatalf("CreateTopic(%q, %d, %d): %v, want %v", tc.name, tc.partitions, tc.rf, err, tc.want)
		}
	}
	c.Updates()
	if err := c.DeleteTopic("a", ""); err != nil {
		t.Fatal(err)
	}
	u := c.Updates()
	if len(u) != 24 || !u[0].Deleted {
		t.Fatalf("delete pushed %d updates (%+v), want 24 deletions", len(u), u[:min(len(u), 2)])
	}
	if _, err := c.Partition(kafka.TopicPartition{Topic: "a"}); !errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
		t.Fatalf("deleted topic: %v", err)
	}
	if err := c.DeleteTopic("a", ""); !errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
		t.Fatalf("deleting twice: %v", err)
	}
}

// A negative duration is refused, by the machine and by the service alike,
// with an error naming the field.
func TestOptionsValidation(t *testing.T) {
	for field, opts := range map[string]controller.Options{
		"TickInterval":                 {TickInterval: -time.Second},
		"SessionTimeout":               {SessionTimeout: -time.Second},
		"LeaderImbalanceCheckInterval": {LeaderImbalanceCheckInterval: -time.Second},
	} {
		if _, err := controller.NewMachine(&controller.MemStore{}, opts); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("NewMachine with a negative %s: %v", field, err)
		}
		if _, err := controller.Open(t.TempDir(), opts); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Open with a negative %s: %v", field, err)
		}
	}
	// A store whose records do not apply fails the restart.
	store := &controller.MemStore{}
	if err := store.Append([]controller.Record{{Type: controller.RecordFenceNode, Node: 1, BrokerEpoch: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := controller.NewMachine(store, controller.Options{}); !errors.Is(err, controller.ErrMetadataReplay) {
		t.Fatalf("replaying a fence of an unknown node: %v", err)
	}
}

// A create that names the id of the topic it finds is the retry of the
// create whose answer was lost, and succeeds with nothing written; any
// other create of that name finds TOPIC_ALREADY_EXISTS. (compat's cluster
// target saw a harness create refused so when a node's controller client
// tried again after a slow first attempt.)
func TestMachineCreateTopicRetried(t *testing.T) {
	store := &controller.MemStore{}
	c := newController(t, store, 3)
	cfg := controller.TopicConfig{ID: "AAAAAAAAAAAAAAAAAAAAAQ"}
	if err := c.CreateTopic("t", 3, 2, cfg); err != nil {
		t.Fatal(err)
	}
	before := mustPartition(t, c, "t", 1)
	c.Updates()
	if err := c.CreateTopic("t", 3, 2, cfg); err != nil {
		t.Fatalf("the same create again: %v", err)
	}
	if u := c.Updates(); len(u) != 0 {
		t.Fatalf("the retried create pushed %d updates, want none", len(u))
	}
	sameState(t, mustPartition(t, c, "t", 1), before)
	for _, other := range []controller.TopicConfig{{}, {ID: "AAAAAAAAAAAAAAAAAAAAAg"}} {
		if err := c.CreateTopic("t", 3, 2, other); !errors.Is(err, kafka.ErrTopicAlreadyExists) {
			t.Fatalf("create of an existing name with id %q: %v, want TOPIC_ALREADY_EXISTS", other.ID, err)
		}
	}
	_, restored := replayAndRestore(t, c, store)
	if got := mustPartition(t, restored, "t", 1); got.Leader != before.Leader {
		t.Fatalf("replayed leader %d, want %d", got.Leader, before.Leader)
	}
}

// A delete that names the id of a topic no longer there is the retry of
// the delete whose answer was lost, and succeeds with nothing written; a
// delete naming another id leaves the topic of that name alone
// (UNKNOWN_TOPIC_ID); one without an id finds UNKNOWN_TOPIC_OR_PARTITION,
// as before.
func TestMachineDeleteTopicRetried(t *testing.T) {
	store := &controller.MemStore{}
	c := newController(t, store, 3)
	first := controller.TopicConfig{ID: "AAAAAAAAAAAAAAAAAAAAAQ"}
	if err := c.CreateTopic("t", 1, 2, first); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic("t", "AAAAAAAAAAAAAAAAAAAAAg"); !errors.Is(err, kafka.ErrUnknownTopicID) {
		t.Fatalf("delete naming another id: %v, want UNKNOWN_TOPIC_ID", err)
	}
	if _, ok := c.State().Topics["t"]; !ok {
		t.Fatal("a delete naming another id deleted the topic")
	}
	if err := c.DeleteTopic("t", first.ID); err != nil {
		t.Fatal(err)
	}
	c.Updates()
	if err := c.DeleteTopic("t", first.ID); err != nil {
		t.Fatalf("the same delete again: %v", err)
	}
	if u := c.Updates(); len(u) != 0 {
		t.Fatalf("the retried delete pushed %d updates, want none", len(u))
	}
	if err := c.DeleteTopic("t", ""); !errors.Is(err, kafka.ErrUnknownTopicOrPartition) {
		t.Fatalf("delete of a gone topic without an id: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
	// The name made again is another topic: the old delete's retry
	// leaves it.
	if err := c.CreateTopic("t", 1, 2, controller.TopicConfig{ID: "AAAAAAAAAAAAAAAAAAAAAw"}); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTopic("t", first.ID); !errors.Is(err, kafka.ErrUnknownTopicID) {
		t.Fatalf("the old delete again after the name was made anew: %v, want UNKNOWN_TOPIC_ID", err)
	}
	_, restored := replayAndRestore(t, c, store)
	if got := restored.State().Topics["t"].ID; got != "AAAAAAAAAAAAAAAAAAAAAw" {
		t.Fatalf("replayed topic t has id %q, want the new topic's", got)
	}
}

// A CreatePartitions whose topic already has the count asked for, where
// the caller saw fewer, is the retry of the request that grew it, and
// succeeds with nothing written; asking for the count the caller saw is
// INVALID_PARTITIONS, as Kafka answers it.
func TestMachineCreatePartitionsRetried(t *testing.T) {
	c := newController(t, &controller.MemStore{}, 3)
	if err := c.CreateTopic("t", 2, 2, controller.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreatePartitions("t", 2, 4); err != nil {
		t.Fatal(err)
	}
	before := mustPartition(t, c, "t", 3)
	c.Updates()
	if err := c.CreatePartitions("t", 2, 4); err != nil {
		t.Fatalf("the same request again: %v", err)
	}
	if u := c.Updates(); len(u) != 0 {
		t.Fatalf("the retried request pushed %d updates, want none", len(u))
	}
	sameState(t, mustPartition(t, c, "t", 3), before)
	for _, from := range []int{0, 4} {
		if err := c.CreatePartitions("t", from, 4); !errors.Is(err, kafka.ErrInvalidPartitions) {
			t.Fatalf("growing to 4 from a seen count of %d: %v, want INVALID_PARTITIONS", from, err)
		}
	}
	if err := c.CreatePartitions("t", 2, 3); !errors.Is(err, kafka.ErrInvalidPartitions) {
		t.Fatalf("shrinking to 3: %v, want INVALID_PARTITIONS", err)
	}
}

// A preferred election whose partition its preferred replica leads in a
// later epoch than the caller saw is the retry of the election that moved
// it, and succeeds with nothing written; one made in the epoch the
// preferred replica leads finds ELECTION_NOT_NEEDED.
func TestMachineElectPreferredLeaderRetried(t *testing.T) {
	c := newController(t, &controller.MemStore{}, 3)
	if err := c.CreateTopic("t", 1, 3, controller.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	tp := kafka.TopicPartition{Topic: "t", Partition: 0}
	ps := mustPartition(t, c, "t", 0)
	if _, err := c.ElectReplica(tp, ps.Replicas[1]); err != nil {
		t.Fatal(err)
	}
	seen := mustPartition(t, c, "t", 0).LeaderEpoch
	if err := c.ElectPreferredLeader(tp, seen); err != nil {
		t.Fatal(err)
	}
	elected := mustPartition(t, c, "t", 0)
	c.Updates()
	if err := c.ElectPreferredLeader(tp, seen); err != nil {
		t.Fatalf("the same election again: %v", err)
	}
	if u := c.Updates(); len(u) != 0 {
		t.Fatalf("the retried election pushed %d updates, want none", len(u))
	}
	sameState(t, mustPartition(t, c, "t", 0), elected)
	for _, epoch := range []int32{elected.LeaderEpoch, -1} {
		if err := c.ElectPreferredLeader(tp, epoch); !errors.Is(err, kafka.ErrElectionNotNeeded) {
			t.Fatalf("an election seen in epoch %d: %v, want ELECTION_NOT_NEEDED", epoch, err)
		}
	}
}
