package replica_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/replica/replicatest"
)

// sessionTicks is newCtlCluster's session timeout in ticks.
const sessionTicks = 90

// newCtlCluster starts replicatest's cluster of nodes 0..n-1 under a
// controller.Machine with Kafka's 9 s session timeout (sessionTicks) and
// an imbalance check every 10 s (100 ticks).
func newCtlCluster(t *testing.T, n int) *replicatest.Cluster {
	t.Helper()
	var ids []int32
	for id := range int32(n) {
		ids = append(ids, id)
	}
	c := replicatest.NewCluster(t, replicatest.Config{Seed: 1, Replicas: ids, Options: testOptions(2),
		Controller: controller.Options{SessionTimeout: 9 * time.Second, LeaderImbalanceCheckInterval: 10 * time.Second}})
	c.Stabilize()
	return c
}

// committed returns the values node id holds below its high watermark.
func committed(c *replicatest.Cluster, id int32) []string {
	c.T.Helper()
	n := c.Nodes[id]
	batches, err := replicatest.ReadBatches(n.Log, 0, n.Replica.HighWatermark())
	if err != nil {
		c.Fatalf("read node %d: %v", id, err)
	}
	var out []string
	for _, b := range batches {
		out = append(out, b.Values...)
	}
	return out
}

// The controller drives three replicas through a leader kill: acks=all
// writes acknowledged before the kill survive it, the controller fences the
// dead leader after its session and elects the next ISR member with a new
// leader epoch, writes go on there, the old leader restarts in a new
// broker epoch, is added back to the ISR (KIP-903 checks pass with its new
// epoch), and gets its leadership back on the imbalance check. Every node
// ends up with every acknowledged record exactly once, in order.
func TestControllerDrivesReplicasThroughLeaderKill(t *testing.T) {
	c := newCtlCluster(t, 3)
	if l := c.Leader(); l != 0 {
		t.Fatalf("first leader %d, want 0", l)
	}
	var acked []*replicatest.Produced
	for i := range 5 {
		acked = append(acked, produce(t, c, kafka.AcksAll, fmt.Sprintf("a%d", i)))
		c.RunTicks(2)
	}
	inflight := produce(t, c, kafka.AcksAll, "unacked") // its fate is not known when the leader dies
	for _, p := range acked {
		if !p.Acked() {
			t.Fatalf("produce %v before the kill: done=%v err=%v", p.Values, p.Done, p.Err)
		}
	}

	c.Kill(0, false)
	// Its last heartbeat came at the last tick: the session ends
	// sessionTicks ticks from now.
	c.RunTicks(sessionTicks - 1)
	if s := c.State; s.Leader != 0 {
		t.Fatalf("leader moved to %d before the session timeout", s.Leader)
	}
	c.RunTicks(1)
	s := c.State
	if s.Leader != 1 || s.LeaderEpoch != 1 || !slices.Equal(s.ISR, []int32{1, 2}) {
		t.Fatalf("after the leader's session expired: %+v, want leader 1 in epoch 1 with ISR [1 2]", s)
	}
	for i := range 5 {
		acked = append(acked, produce(t, c, kafka.AcksAll, fmt.Sprintf("b%d", i)))
		c.RunTicks(2)
	}

	c.Restart(0)
	c.RunTicks(20)
	s = c.State
	if !slices.Equal(s.ISR, []int32{0, 1, 2}) {
		t.Fatalf("restarted node not back in the ISR: %+v", s)
	}
	c.RunTicks(100 - int(c.Controller.Now()%100)) // to the next imbalance check
	s = c.State
	if s.Leader != 0 || s.LeaderEpoch != 2 {
		t.Fatalf("preferred leader not restored: %+v", s)
	}
	for i := range 3 {
		acked = append(acked, produce(t, c, kafka.AcksAll, fmt.Sprintf("c%d", i)))
		c.RunTicks(2)
	}

	var want []string
	for _, p := range acked {
		if !p.Acked() {
			t.Fatalf("produce %v: done=%v err=%v", p.Values, p.Done, p.Err)
		}
		want = append(want, p.Values...)
	}
	for _, id := range c.Cfg.Replicas {
		got := committed(c, id)
		n := len(got)
		got = slices.DeleteFunc(got, func(v string) bool { return v == "unacked" })
		if n-len(got) > 1 {
			t.Fatalf("node %d holds the in-flight write %d times: %v", id, n-len(got), committed(c, id))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("node %d holds %v, want %v", id, got, want)
		}
	}
	if inflight.Acked() {
		t.Fatal("a write in flight on a crashed leader was acknowledged")
	}
	if inflight.Done && !errors.Is(inflight.Err, kafka.ErrNotLeaderOrFollower) {
		t.Fatalf("in-flight write failed with %v", inflight.Err)
	}
	c.Check()
}

// The leader, cut off from its followers, shrinks the ISR to itself through
// the controller's AlterPartition, then dies: with unclean election off the
// controller leaves the partition offline rather than elect a follower
// that lacks committed records, and when the leader's node comes back it
// leads again in a new epoch, the followers rejoin, and every acknowledged
// record is on every node.
func TestControllerKeepsPartitionOfflineWithoutISR(t *testing.T) {
	c := newCtlCluster(t, 3)
	var acked []*replicatest.Produced
	for i := range 3 {
		acked = append(acked, produce(t, c, kafka.AcksAll, fmt.Sprintf("a%d", i)))
		c.RunTicks(2)
	}
	c.Net.Isolate(0, 1, 2)
	// Written by the lone leader, never committed: the followers do not
	// get it, and min.insync.replicas is 2.
	lone := produce(t, c, kafka.AcksAll, "lone")
	c.RunTicks(40) // past replica.lag.time.max.ms (30 ticks)
	s := c.State
	if s.Leader != 0 || !slices.Equal(s.ISR, []int32{0}) {
		t.Fatalf("isolated leader did not shrink the ISR to itself: %+v", s)
	}
	if lone.Acked() {
		t.Fatal("acks=all write acknowledged with an ISR of one")
	}

	c.Kill(0, false)
	c.Net.HealAll()
	c.RunTicks(sessionTicks)
	s = c.State
	if s.Leader != replica.NoLeader || !slices.Equal(s.ISR, []int32{0}) {
		t.Fatalf("after the only ISR member died: %+v, want offline with ISR [0]", s)
	}
	for _, id := range []int32{1, 2} {
		if r := c.Nodes[id].Replica.Role(); r != replica.RoleNone {
			t.Fatalf("node %d is %s while the partition is offline", id, r)
		}
	}

	c.Restart(0)
	c.RunTicks(20)
	s = c.State
	if s.Leader != 0 || s.LeaderEpoch != 2 || !slices.Equal(s.ISR, []int32{0, 1, 2}) {
		t.Fatalf("after node 0 returned: %+v, want leader 0 in epoch 2 with the full ISR", s)
	}
	var want []string
	for _, p := range acked {
		if !p.Acked() {
			t.Fatalf("produce %v: done=%v err=%v", p.Values, p.Done, p.Err)
		}
		want = append(want, p.Values...)
	}
	for _, id := range c.Cfg.Replicas {
		got := slices.DeleteFunc(committed(c, id), func(v string) bool { return v == "lone" })
		if !slices.Equal(got, want) {
			t.Fatalf("node %d holds %v, want %v", id, got, want)
		}
	}
	c.Check()
}
