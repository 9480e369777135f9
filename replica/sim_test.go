package replica_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/replica/replicatest"
)

var (
	simSeeds = flag.Int("replica.seeds", 24, "seeds the random replication simulation runs")
	simSeed  = flag.Int64("replica.seed", 0, "run the random replication simulation with this seed only")
	simTicks = flag.Int("replica.ticks", 400, "ticks per simulation run")
)

// chaos says what a randomized run does each tick, as probabilities.
type chaos struct {
	replicas       int
	minISR         int
	produce        float64 // an acks=all produce at the leader
	crashLeader    float64
	crashFollower  float64
	restart        float64 // a down node comes back
	partition      float64 // cut a random pair, both ways or one
	heal           float64
	pause          float64
	elect          float64 // a controlled leader change within the ISR
	wipe           float64 // a follower's disk is replaced by an empty one
	faults         replicatest.Faults
	keepUnsyncedOK bool  // crashes may keep unsynced bytes too
	alterDelay     int64 // ticks the controller takes to commit an ISR change
	// noWait is the share of crashes that do not wait for the controller's
	// session timeout to fence the node (Kill rather than Crash).
	noWait float64
	// restartController is the chance per tick of a controller failover.
	restartController float64
	// rebalance, when not zero, is the controller's
	// leader.imbalance.check.interval in ticks: it moves leadership back
	// to the preferred replica on its own.
	rebalance int64
}

// runChaos drives a cluster through random faults under seed, checking as
// it goes (the cluster checks that no replica's high watermark goes back and
// that committed batches never differ), then heals everything and checks
// that every acked acks=all write is on every replica and that all logs are
// identical.
func runChaos(t *testing.T, seed int64, ticks int, ch chaos) (acked int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	var ids []int32
	for i := 1; i <= ch.replicas; i++ {
		ids = append(ids, int32(i))
	}
	opts := testOptions(ch.minISR)
	c := replicatest.NewCluster(t, replicatest.Config{Seed: seed, Replicas: ids, Options: opts,
		AlterPartitionDelay: ch.alterDelay, Trace: trace(t),
		Controller: controller.Options{LeaderImbalanceCheckInterval: time.Duration(ch.rebalance) * opts.TickInterval}})
	c.Net.AddRule(replicatest.Rule{From: replicatest.Any, To: replicatest.Any, Faults: ch.faults})
	c.Stabilize()
	pick := func(ok func(*replicatest.Broker) bool) (int32, bool) {
		var cand []int32
		for _, id := range ids {
			if ok(c.Nodes[id]) {
				cand = append(cand, id)
			}
		}
		if len(cand) == 0 {
			return 0, false
		}
		return cand[rng.IntN(len(cand))], true
	}
	crash := func(id int32, keepUnsynced bool) {
		if rng.Float64() < ch.noWait {
			c.Kill(id, keepUnsynced)
		} else {
			c.Crash(id, keepUnsynced)
		}
	}
	for tick := range ticks {
		leader := c.Leader()
		if rng.Float64() < ch.produce && leader != replica.NoLeader && !c.Net.Paused(leader) {
			n := 1 + rng.IntN(5)
			c.Produce(leader, kafka.AcksAll, vals(fmt.Sprintf("s%d-t%d-", seed, tick), n)...) // errors are expected
		}
		if rng.Float64() < ch.crashLeader && leader != replica.NoLeader {
			crash(leader, ch.keepUnsyncedOK && rng.IntN(2) == 0)
		}
		if rng.Float64() < ch.crashFollower {
			if id, ok := pick(func(n *replicatest.Broker) bool { return n.Up() && n.ID != c.Leader() }); ok {
				crash(id, ch.keepUnsyncedOK && rng.IntN(2) == 0)
			}
		}
		if rng.Float64() < ch.wipe {
			// Never the last ISR member: without eligible leader replicas
			// (KIP-966) its records would be lost with its disk.
			if id, ok := pick(func(n *replicatest.Broker) bool {
				return n.Up() && n.ID != c.Leader() && (len(c.State.ISR) > 1 || !slices.Contains(c.State.ISR, n.ID))
			}); ok {
				c.Wipe(id)
			}
		}
		if rng.Float64() < ch.restart {
			if id, ok := pick(func(n *replicatest.Broker) bool { return !n.Up() }); ok {
				c.Restart(id)
			}
		}
		if rng.Float64() < ch.partition {
			a, b := ids[rng.IntN(len(ids))], ids[rng.IntN(len(ids))]
			if a != b {
				c.Net.Cut(a, b)
				if rng.IntN(2) == 0 {
					c.Net.Cut(b, a)
				}
			}
		}
		if rng.Float64() < ch.heal {
			c.Net.HealAll()
		}
		if rng.Float64() < ch.pause {
			id := ids[rng.IntN(len(ids))]
			if c.Net.Paused(id) {
				c.Net.Resume(id)
			} else {
				c.Net.Pause(id)
			}
		}
		if rng.Float64() < ch.elect {
			if id, ok := pick(func(n *replicatest.Broker) bool { return n.Up() && slices.Contains(c.State.ISR, n.ID) }); ok {
				c.ElectPreferring(id)
			}
		}
		if rng.Float64() < ch.restartController {
			c.RestartController()
		}
		c.Tick()
		if tick%25 == 0 {
			c.Check() // every ISR member holds every acked write, at all times
		}
	}
	// Heal: no more faults, every node up and running.
	c.Net.ClearRules()
	c.Net.HealAll()
	for _, id := range ids {
		c.Net.Resume(id)
		c.Restart(id)
	}
	if c.Leader() == replica.NoLeader {
		c.Fatalf("no leader with every node up: the controller elects one as an ISR member registers; controller %+v", c.State)
	}
	for i := 0; len(c.State.ISR) < len(ids) || c.PendingAlters() > 0; i++ {
		if i == 1000 {
			c.Fatalf("ISR %v after healing, leader %d: followers never caught up", c.State.ISR, c.Leader())
		}
		c.Tick()
	}
	// A last write proves the partition works; then wait until every
	// replica has everything and the ISR is whole.
	last := produce(t, c, kafka.AcksAll, fmt.Sprintf("s%d-final", seed))
	settled := func() bool {
		if !last.Acked() || len(c.State.ISR) < len(ids) || c.PendingAlters() > 0 {
			return false
		}
		for _, id := range ids {
			r := c.Nodes[id].Replica
			if r.HighWatermark() != last.BaseOffset+1 || c.Nodes[id].Log.LogEndOffset() != last.BaseOffset+1 {
				return false
			}
		}
		return true
	}
	for i := 0; !settled(); i++ {
		if last.Done && errors.Is(last.Err, kafka.ErrNotLeaderOrFollower) {
			// The controller moved leadership back to the preferred
			// replica: retry there, as a producer does.
			last = produce(t, c, kafka.AcksAll, fmt.Sprintf("s%d-final-retry%d", seed, i))
		}
		if i == 1000 {
			for _, id := range ids {
				t.Logf("node %d: %+v", id, c.Nodes[id].Replica.Status())
			}
			c.Fatalf("not settled 1000 ticks after healing: final produce %+v, controller %+v", last, c.State)
		}
		c.Tick()
	}
	c.Check()
	want := crcs(t, c, ids[0])
	for _, id := range ids[1:] {
		if got := crcs(t, c, id); !slices.Equal(got, want) {
			c.Fatalf("logs differ after healing:\nnode %d %v\nnode %d %v", ids[0], want, id, got)
		}
	}
	for _, id := range ids {
		checkEpochCache(t, c, c.Nodes[id].Log.EpochEntries())
	}
	for _, p := range c.Produced {
		if p.Acked() {
			acked++
		}
	}
	return acked
}

var simTrace = flag.Bool("replica.trace", false, "log every step of the simulation")

func trace(t *testing.T) func(string, ...any) {
	if !*simTrace {
		return nil
	}
	return t.Logf
}

func seeds() []int64 {
	if *simSeed != 0 {
		return []int64{*simSeed}
	}
	var s []int64
	for i := 1; i <= *simSeeds; i++ {
		s = append(s, int64(i))
	}
	return s
}

// Test 8: acked acks=all writes survive repeated leader kills on disks
// that lose what was not synced, with follower kills mixed in (RF=3,
// min ISR 2, unclean election off).
func TestAckedWritesSurviveLeaderKills(t *testing.T) {
	total := 0
	for _, seed := range seeds()[:min(8, len(seeds()))] {
		total += runChaos(t, seed, 300, chaos{
			replicas: 3, minISR: 2,
			produce: 0.6, crashLeader: 0.03, crashFollower: 0.02, restart: 0.1,
			faults: replicatest.Faults{MinDelay: 0, MaxDelay: 1},
		})
	}
	if total == 0 {
		t.Fatalf("no write was acked: the test proved nothing")
	}
	t.Logf("acked acks=all produces checked: %d", total)
}

// The randomized simulation (rafttest style): lossy, duplicating,
// reordering links, partitions one- and two-way, paused nodes, crashes of
// leaders and followers (some fenced at once by the session timeout, some
// left leading until it expires), wiped disks, controlled leader changes,
// automatic preferred-leader elections, controller failovers, delayed ISR
// decisions; every run is checked
// as runChaos says, and a failure names its seed (-replica.seed replays
// it).
func TestRandomSimulation(t *testing.T) {
	total := 0
	for _, seed := range seeds() {
		for _, rf := range []int{2, 3} {
			total += runChaos(t, seed*10+int64(rf), *simTicks, chaos{
				replicas: rf, minISR: max(1, rf-1-int(seed%2)),
				produce: 0.5, crashLeader: 0.01, crashFollower: 0.01, restart: 0.05,
				partition: 0.02, heal: 0.03, pause: 0.01, elect: 0.01, wipe: 0.005,
				faults:     replicatest.Faults{Drop: 0.05, Duplicate: 0.05, MinDelay: 0, MaxDelay: 3},
				alterDelay: seed % 4,
				noWait:     0.5, restartController: 0.005, rebalance: 40,
			})
		}
	}
	if total == 0 {
		t.Fatalf("no write was acked: the simulation proved nothing")
	}
	t.Logf("acked acks=all produces checked: %d", total)
}

// The simulation again under harsher weather: 15% of messages lost,
// long delays, slow ISR decisions, frequent crashes and leader changes.
func TestRandomSimulationHarsh(t *testing.T) {
	total := 0
	for _, seed := range seeds() {
		total += runChaos(t, seed*10+7, *simTicks, chaos{
			replicas: 3, minISR: 2,
			produce: 0.7, crashLeader: 0.015, crashFollower: 0.015, restart: 0.15,
			partition: 0.03, heal: 0.03, pause: 0.02, elect: 0.03, wipe: 0.01,
			faults:     replicatest.Faults{Drop: 0.15, Duplicate: 0.1, MinDelay: 0, MaxDelay: 6},
			alterDelay: 1 + seed%8,
			noWait:     0.5, restartController: 0.01, rebalance: 25,
		})
	}
	if total == 0 {
		t.Fatalf("no write was acked: the simulation proved nothing")
	}
	t.Logf("acked acks=all produces checked: %d", total)
}
