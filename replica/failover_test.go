package replica_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/replica/replicatest"
)

// Test 14a (shouldSurviveFastLeaderChange): five times over, produce,
// bounce the follower, then at once bounce the leader. Every replica ends
// with exactly the records written.
func TestKIP279FastLeaderChange(t *testing.T) {
	c := newCluster(t, 141, 2, testOptions(1))
	written := 0
	for i := range 5 {
		p := produce(t, c, kafka.AcksAll, vals(fmt.Sprintf("r%d-", i), i+1)...)
		c.Stabilize()
		if !p.Acked() {
			c.Fatalf("round %d: produce not acked: %+v", i, p)
		}
		written += i + 1
		leader := c.Leader()
		follower := int32(3) - leader
		c.Crash(follower, false)
		c.Restart(follower)
		c.Crash(leader, false)
		c.Restart(leader)
		c.RunTicks(5)
		if c.Leader() == replica.NoLeader {
			c.Fatalf("round %d: no leader", i)
		}
	}
	for id := int32(1); id <= 2; id++ {
		if leo := c.Nodes[id].Log.LogEndOffset(); leo != int64(written) {
			c.Fatalf("node %d log end offset %d, want %d", id, leo, written)
		}
	}
	if a, b := crcs(t, c, 1), crcs(t, c, 2); !slices.Equal(a, b) {
		c.Fatalf("logs differ:\n%v\n%v", a, b)
	}
	c.Check()
}

// Test 14b (logsShouldNotDivergeOnUncleanLeaderElections): with unclean
// election enabled, min ISR 1 and acks=1, alternate which of two replicas
// is alive, writing batches of different sizes under each leader; once
// both are up, their batch CRC sequences are identical and each leader
// epoch cache is monotonic. The truncate-to-HW protocol leaves them
// diverged.
func TestKIP279UncleanAlternationConverges(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			diverged := 0
			for seed := int64(1); seed <= 5; seed++ {
				if !uncleanAlternation(t, seed, p.wrap) {
					diverged++
				}
			}
			if p.wrap == nil && diverged > 0 {
				t.Fatalf("%d of 5 runs diverged", diverged)
			}
			if p.wrap != nil && diverged == 0 {
				t.Fatalf("truncate-to-HW protocol never diverged; the scenario must show it")
			}
		})
	}
}

// uncleanAlternation runs test 14b once and reports whether the two logs
// ended identical.
func uncleanAlternation(t *testing.T, seed int64, wrap func(replica.Options) replica.Options) bool {
	c := replicatest.NewCluster(t, replicatest.Config{Seed: seed, Replicas: []int32{1, 2}, Options: testOptions(1),
		Unclean: controller.AllowUnclean, TruncateToHighWatermark: wrap})
	c.Stabilize()
	alive := int32(1)
	c.Crash(2, false)
	for round := range 6 {
		for b := range round%3 + 1 {
			produce(t, c, kafka.AcksLeader, vals(fmt.Sprintf("s%d-r%d-b%d-", seed, round, b), b+round+1)...)
		}
		c.Stabilize()
		// Stop the live one and start the other, which is elected
		// uncleanly with a log that lacks what was just written.
		other := 3 - alive
		c.Crash(alive, false)
		c.Restart(other)
		c.Stabilize()
		if c.Leader() != other {
			c.Fatalf("round %d: leader %d, want %d elected uncleanly", round, c.Leader(), other)
		}
		alive = other
	}
	c.Restart(3 - alive)
	c.RunTicks(10)
	if c.UncleanElections == 0 {
		c.Fatalf("no unclean election happened")
	}
	for id := int32(1); id <= 2; id++ {
		checkEpochCache(t, c, c.Nodes[id].Log.EpochEntries())
	}
	return slices.Equal(crcs(t, c, 1), crcs(t, c, 2))
}

func checkEpochCache(t testing.TB, c *replicatest.Cluster, es []log.EpochEntry) {
	t.Helper()
	for i := 1; i < len(es); i++ {
		if es[i].Epoch <= es[i-1].Epoch || es[i].StartOffset <= es[i-1].StartOffset {
			c.Fatalf("epoch cache not monotonic: %v", es)
		}
	}
}

// Test 15: unclean election is off by default. With every ISR member dead
// and only an out-of-ISR replica alive the partition has no leader and
// appends fail with a typed error; when an ISR member returns it leads with
// every acked record. With the per-topic opt-in the stale replica is
// elected and the loss is visible.
func TestNoUncleanElectionByDefault(t *testing.T) {
	for _, mode := range []controller.Unclean{controller.CleanOnly, controller.AllowUnclean} {
		t.Run(map[controller.Unclean]string{controller.CleanOnly: "clean-only", controller.AllowUnclean: "allow-unclean"}[mode], func(t *testing.T) {
			c := replicatest.NewCluster(t, replicatest.Config{Seed: 15, Replicas: []int32{1, 2, 3}, Options: testOptions(1), Unclean: mode})
			c.Stabilize()
			produce(t, c, kafka.AcksAll, "before")
			c.Stabilize()
			// Node 3 stops while writes go on, and falls out of the ISR
			// (an idle partition would keep it: its log would still end
			// where the leader's does).
			c.Net.Pause(3)
			for i := range lagTicks + 2 {
				produce(t, c, kafka.AcksLeader, fmt.Sprint("lag", i))
				c.Tick()
			}
			if !slices.Equal(c.State.ISR, []int32{1, 2}) {
				c.Fatalf("ISR %v, want node 3 out", c.State.ISR)
			}
			var acked []*replicatest.Produced
			for i := range 3 {
				acked = append(acked, produce(t, c, kafka.AcksAll, fmt.Sprint("after", i)))
			}
			c.Stabilize()
			c.Crash(1, false)
			c.Crash(2, false)
			c.Net.Resume(3)
			c.RunTicks(3)
			if mode == controller.CleanOnly {
				if c.Leader() != replica.NoLeader {
					c.Fatalf("leader %d elected from outside the ISR %v", c.Leader(), c.State.ISR)
				}
				if _, err := c.Produce(3, kafka.AcksAll, "x"); !errors.Is(err, kafka.ErrNotLeaderOrFollower) {
					c.Fatalf("produce to the out-of-ISR replica: %v, want NOT_LEADER_OR_FOLLOWER", err)
				}
				c.Restart(2)
				c.RunTicks(5)
				if c.Leader() != 2 {
					c.Fatalf("leader %d after ISR member 2 returned, want 2", c.Leader())
				}
				for _, p := range acked {
					if !p.Acked() {
						c.Fatalf("produce %+v not acked", p)
					}
				}
				c.Check()
				if got := values(t, c, 3); len(got) != lagTicks+6 || !slices.Equal(got[len(got)-3:], []string{"after0", "after1", "after2"}) {
					c.Fatalf("node 3 after rejoining holds %v", got)
				}
				return
			}
			if c.Leader() != 3 || c.UncleanElections != 1 {
				c.Fatalf("leader %d, unclean elections %d; want the stale node 3 elected", c.Leader(), c.UncleanElections)
			}
			lost := 0
			have := values(t, c, 3)
			for _, p := range acked {
				if p.Acked() && !slices.Contains(have, p.Values[0]) {
					lost++
				}
			}
			if lost != 3 {
				c.Fatalf("unclean election lost %d acked records, want all 3 counted", lost)
			}
		})
	}
}

// Test 9 (Jepsen 2013): both followers are cut off until the ISR shrinks to
// the leader alone, writes go on, then the leader dies and the followers
// heal. With min ISR 2 the writes during the shrink fail with
// NOT_ENOUGH_REPLICAS; with min ISR 1 they are acked, the partition stays
// offline rather than elect a stale follower, and nothing acked is lost once
// the old leader returns.
func TestShrinkToLeaderThenIsolate(t *testing.T) {
	for _, minISR := range []int{2, 1} {
		t.Run(fmt.Sprint("min-isr-", minISR), func(t *testing.T) {
			c := replicatest.NewCluster(t, replicatest.Config{Seed: 9, Replicas: []int32{1, 2, 3}, Options: testOptions(minISR)})
			c.Stabilize()
			before := produce(t, c, kafka.AcksAll, "before")
			c.Stabilize()
			c.Net.Isolate(1, 2, 3)
			var during []*replicatest.Produced
			var refused int
			for i := range lagTicks + 5 {
				p, err := c.Produce(1, kafka.AcksAll, fmt.Sprint("during", i))
				switch {
				case errors.Is(err, kafka.ErrNotEnoughReplicas):
					refused++
				case err != nil:
					c.Fatalf("produce: %v", err)
				default:
					during = append(during, p)
				}
				c.Tick()
			}
			if !slices.Equal(c.State.ISR, []int32{1}) {
				c.Fatalf("ISR %v, want the leader alone", c.State.ISR)
			}
			c.Crash(1, false)
			c.Net.HealAll()
			c.RunTicks(3)
			if c.Leader() != replica.NoLeader {
				c.Fatalf("leader %d elected outside the ISR", c.Leader())
			}
			c.Restart(1)
			c.RunTicks(5)
			if c.Leader() != 1 {
				c.Fatalf("leader %d after the old leader returned, want 1", c.Leader())
			}
			acked := 0
			for _, p := range during {
				if p.Acked() {
					acked++
				}
			}
			switch minISR {
			case 2:
				if refused == 0 {
					c.Fatalf("no write refused with NOT_ENOUGH_REPLICAS while the ISR shrank")
				}
				if acked != 0 {
					c.Fatalf("%d writes acked with min ISR 2 and the followers cut off", acked)
				}
			case 1:
				if acked == 0 {
					c.Fatalf("no write acked with min ISR 1 after the shrink")
				}
			}
			if !before.Acked() {
				c.Fatalf("first write not acked")
			}
			c.Check()
		})
	}
}
