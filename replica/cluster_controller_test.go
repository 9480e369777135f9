package replica_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/replica/replicatest"
)

// clusterSessionTicks is the session timeout replicatest gives its controller.
const clusterSessionTicks = 3

// tickUntil ticks c until cond holds, failing after limit ticks, and
// returns how many ticks it took.
func tickUntil(c *replicatest.Cluster, limit int, what string, cond func() bool) int {
	c.T.Helper()
	for i := 0; ; i++ {
		if cond() {
			return i
		}
		if i == limit {
			c.Fatalf("%s: not after %d ticks; controller %+v", what, limit, c.State)
		}
		c.Tick()
	}
}

// A killed leader stays the controller's leader for exactly one session
// timeout: appends at it fail meanwhile, and its followers stay in its
// epoch. Then the controller fences it and elects the next ISR member in a
// new leader epoch, which has every acked record; the old leader restarts
// in a new broker epoch and rejoins the ISR, and every node holds the same
// records exactly once.
func TestKilledLeaderLeadsUntilSessionTimeout(t *testing.T) {
	c := newCluster(t, 201, 3, testOptions(2))
	a := produce(t, c, kafka.AcksAll, "a")
	b := produce(t, c, kafka.AcksAll, "b")
	c.Tick()
	if !a.Acked() || !b.Acked() {
		t.Fatalf("not acked: %+v %+v", a, b)
	}
	oldEpoch := c.Nodes[1].BrokerEpoch()
	c.Kill(1, false)
	took := tickUntil(c, 10, "fence the killed leader", func() bool {
		if c.Leader() == 1 {
			if _, err := c.Produce(1, kafka.AcksAll, "lost"); !errors.Is(err, kafka.ErrNotLeaderOrFollower) {
				c.Fatalf("produce at the dead leader: %v", err)
			}
			for _, id := range []int32{2, 3} {
				if st := c.Nodes[id].Replica.Status(); st.Role != replica.RoleFollower || st.State.LeaderEpoch != 0 {
					c.Fatalf("node %d before the fence: %+v", id, st)
				}
			}
		}
		return c.Leader() != 1
	})
	if took != clusterSessionTicks {
		c.Fatalf("leader fenced after %d ticks, want the session timeout, %d", took, clusterSessionTicks)
	}
	if s := c.State; s.Leader != 2 || s.LeaderEpoch != 1 || !slices.Equal(s.ISR, []int32{2, 3}) {
		c.Fatalf("controller after the fence: %+v", s)
	}
	p := produce(t, c, kafka.AcksAll, "c")
	c.Restart(1)
	if c.Nodes[1].BrokerEpoch() <= oldEpoch {
		c.Fatalf("broker epoch %d after restart, was %d", c.Nodes[1].BrokerEpoch(), oldEpoch)
	}
	tickUntil(c, 50, "node 1 rejoins the ISR", func() bool { return len(c.State.ISR) == 3 })
	if !p.Acked() {
		c.Fatalf("produce at the new leader not acked: %+v", p)
	}
	for _, id := range []int32{1, 2, 3} {
		if got := values(t, c, id); !slices.Equal(got, []string{"a", "b", "c"}) {
			c.Fatalf("node %d holds %v", id, got)
		}
	}
	c.Check()
}

// A node that restarts before its session times out registers in a new
// broker epoch, and the controller fences its old incarnation at once: a
// follower leaves the ISR until it catches up again, and a leader hands
// leadership to the next ISR member in a new leader epoch, without waiting
// for the session timeout.
func TestRestartBeforeSessionTimeoutFencesOldIncarnation(t *testing.T) {
	c := newCluster(t, 202, 3, testOptions(2))
	produce(t, c, kafka.AcksAll, "a")
	c.Tick()
	c.Kill(3, false)
	c.Restart(3)
	if s := c.State; s.Leader != 1 || s.LeaderEpoch != 0 || !slices.Equal(s.ISR, []int32{1, 2}) {
		c.Fatalf("controller after follower 3 re-registered: %+v", s)
	}
	tickUntil(c, 20, "node 3 rejoins the ISR", func() bool { return len(c.State.ISR) == 3 })

	b := produce(t, c, kafka.AcksAll, "b")
	c.Tick()
	c.Kill(1, false)
	c.Restart(1)
	if s := c.State; s.Leader != 2 || s.LeaderEpoch != 1 || !slices.Equal(s.ISR, []int32{2, 3}) {
		c.Fatalf("controller after leader 1 re-registered: %+v", s)
	}
	if st := c.Nodes[1].Replica.Status(); st.Role != replica.RoleFollower || st.State.LeaderEpoch != 1 {
		c.Fatalf("restarted node 1: %+v", st)
	}
	d := produce(t, c, kafka.AcksAll, "d")
	tickUntil(c, 20, "node 1 rejoins the ISR", func() bool { return len(c.State.ISR) == 3 && d.Acked() })
	if !b.Acked() {
		c.Fatalf("b not acked: %+v", b)
	}
	for _, id := range []int32{1, 2, 3} {
		if got := values(t, c, id); !slices.Equal(got, []string{"a", "b", "d"}) {
			c.Fatalf("node %d holds %v", id, got)
		}
	}
	c.Check()
}

// A controller failover loses nothing: a new controller replays the
// metadata store into the same partition state, commits an ISR change the
// leader sent before the failover, gives every node a full session from the
// failover, and then fences a dead leader as the old one would have.
func TestControllerFailoverKeepsPartitionState(t *testing.T) {
	c := replicatest.NewCluster(t, replicatest.Config{Seed: 203, Replicas: []int32{1, 2, 3}, Options: testOptions(2),
		AlterPartitionDelay: 5})
	c.Stabilize()
	c.Net.Pause(3)
	var acked []*replicatest.Produced
	for range lagTicks + 2 {
		acked = append(acked, produce(t, c, kafka.AcksAll, "v"+itoa(len(acked))))
		c.Tick()
	}
	if c.PendingAlters() != 1 || !slices.Equal(c.State.ISR, []int32{1, 2, 3}) {
		c.Fatalf("want the shrink in flight: %d pending, ISR %v", c.PendingAlters(), c.State.ISR)
	}
	before := c.State
	c.RestartController()
	if s, err := c.Controller.Partition(c.TP); err != nil || !equalState(s, before) {
		c.Fatalf("replayed state %+v (%v), want %+v", s, err, before)
	}
	tickUntil(c, 10, "the shrink commits at the new controller", func() bool { return c.PendingAlters() == 0 })
	if s := c.State; !slices.Equal(s.ISR, []int32{1, 2}) || s.PartitionEpoch != before.PartitionEpoch+1 {
		c.Fatalf("controller after the shrink: %+v", s)
	}
	c.Net.Resume(3)
	tickUntil(c, 30, "node 3 rejoins", func() bool { return len(c.State.ISR) == 3 && c.PendingAlters() == 0 })
	c.RestartController()
	c.Kill(1, false)
	took := tickUntil(c, 10, "the new controller fences the dead leader", func() bool { return c.Leader() != 1 })
	if took != clusterSessionTicks {
		c.Fatalf("fenced after %d ticks, want %d", took, clusterSessionTicks)
	}
	last := produce(t, c, kafka.AcksAll, "last")
	tickUntil(c, 20, "the last write is acked", last.Acked)
	want := []string{}
	for _, p := range append(acked, last) {
		if !p.Acked() {
			c.Fatalf("produce %+v not acked", p)
		}
		want = append(want, p.Values...)
	}
	for _, id := range []int32{2, 3} {
		if got := values(t, c, id); !slices.Equal(got, want) {
			c.Fatalf("node %d holds %v, want %v", id, got, want)
		}
	}
	c.Check()
}

func equalState(a, b replica.LeaderAndISR) bool {
	return a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch &&
		slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR)
}
