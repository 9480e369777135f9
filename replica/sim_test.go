package replica_test

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
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
	// quorum, when not zero, runs the controller as a Raft quorum of that
	// many members, with these chances per tick of crashing one, starting
	// one that is down, cutting a link between two, healing them all, and
	// stalling or resuming one; quorumDrop is the loss rate of their
	// messages. actBeforeCommit breaks the quorum: its members acknowledge
	// changes before they commit.
	quorum                                          int
	crashController, startController                float64
	cutController, healControllers, pauseController float64
	quorumDrop                                      float64
	actBeforeCommit                                 bool
}

// runChaos drives a cluster through random faults under seed, checking as
// it goes (the cluster checks that no replica's high watermark goes back and
// that committed batches never differ), then heals everything and checks
// that every acked acks=all write is on every replica and that all logs are
// identical.
func runChaos(t testing.TB, seed int64, ticks int, ch chaos) (acked int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	var ids []int32
	for i := 1; i <= ch.replicas; i++ {
		ids = append(ids, int32(i))
	}
	opts := testOptions(ch.minISR)
	c := replicatest.NewCluster(t, replicatest.Config{Seed: seed, Replicas: ids, Options: opts,
		AlterPartitionDelay: ch.alterDelay, Trace: trace(t), Quorum: ch.quorum, QuorumActBeforeCommit: ch.actBeforeCommit,
		Controller: controller.Options{LeaderImbalanceCheckInterval: time.Duration(ch.rebalance) * opts.TickInterval}})
	if q := c.Quorum; q != nil {
		q.Drop = ch.quorumDrop
	}
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
		if q := c.Quorum; q != nil {
			voter := func() int32 { return q.Voters[rng.IntN(len(q.Voters))] }
			if rng.Float64() < ch.crashController {
				q.Crash(voter())
			}
			if rng.Float64() < ch.startController {
				q.Start(voter())
			}
			if rng.Float64() < ch.cutController {
				q.Cut(voter(), voter(), true)
			}
			if rng.Float64() < ch.healControllers {
				for _, a := range q.Voters {
					q.Pause(a, false)
					for _, b := range q.Voters {
						q.Cut(a, b, false)
					}
				}
			}
			if rng.Float64() < ch.pauseController {
				id := voter()
				q.Pause(id, rng.IntN(2) == 0)
			}
		}
		c.Tick()
		if tick%25 == 0 {
			c.Check() // every ISR member holds every acked write, at all times
		}
	}
	// Heal: no more faults, every node up and running. A quorum may take
	// a few ticks to elect an active controller that registers them.
	c.Net.ClearRules()
	c.Net.HealAll()
	if q := c.Quorum; q != nil {
		q.HealAll()
		q.Drop = 0
	}
	for _, id := range ids {
		c.Net.Resume(id)
	}
	for i := 0; ; i++ {
		down := 0
		for _, id := range ids {
			if c.Restart(id); !c.Nodes[id].Up() {
				down++
			}
		}
		if down == 0 {
			break
		}
		if i == 200 {
			c.Fatalf("%d nodes could not register 200 ticks after healing", down)
		}
		c.Tick()
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

func trace(t testing.TB) func(string, ...any) {
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

// quorumChaos is the weather of the quorum simulations: the brokers'
// faults of TestRandomSimulation, with the controllers' on top — crashes
// (their disks keeping what they synced), restarts, cut links, stalls and
// lost messages.
func quorumChaos(seed int64) chaos {
	return chaos{
		replicas: 3, minISR: 2,
		produce: 0.6, crashLeader: 0.01, crashFollower: 0.01, restart: 0.05,
		partition: 0.02, heal: 0.03, pause: 0.01, elect: 0.01,
		faults:     replicatest.Faults{Drop: 0.05, Duplicate: 0.05, MinDelay: 0, MaxDelay: 3},
		alterDelay: seed % 3,
		noWait:     1, // the quorum may have no active controller to fence a node
		quorum:     3, crashController: 0.02, startController: 0.1,
		cutController: 0.02, healControllers: 0.04, pauseController: 0.02, quorumDrop: 0.05,
	}
}

// quorumChaosHarsh is quorumChaos with controller failovers several times
// as often, among quick ISR changes and leader crashes: what a controller
// acting early gets caught by.
func quorumChaosHarsh(seed int64) chaos {
	ch := quorumChaos(seed)
	ch.crashLeader, ch.crashFollower, ch.restart = 0.03, 0.02, 0.1
	ch.crashController, ch.cutController, ch.pauseController = 0.06, 0.06, 0.04
	ch.alterDelay, ch.produce = 0, 0.8
	return ch
}

// TestQuorumControllerSimulation: three brokers replicate a partition
// under a quorum of three controllers (controller.Member, each on its own
// disk), on seeded networks, while brokers and controllers alike crash,
// restart, lose messages, are cut off and stall. Every acknowledged
// acks=all write survives on every replica, the metadata the brokers apply
// never goes back (a newer version never holds older epochs), at most one
// controller is active in any term, and after healing the logs are
// identical. A failure names its seed (-replica.seed replays it).
func TestQuorumControllerSimulation(t *testing.T) {
	total := 0
	for _, seed := range seeds() {
		total += runChaos(t, seed*10+3, *simTicks, quorumChaos(seed))
		total += runChaos(t, seed*10+4, *simTicks, quorumChaosHarsh(seed))
	}
	if total == 0 {
		t.Fatalf("no write was acked: the simulation proved nothing")
	}
	t.Logf("acked acks=all produces checked: %d", total)
}

// failureRecorder is a testing.TB for a run that is meant to fail: Fatalf
// records the failure and ends the run's goroutine.
type failureRecorder struct {
	testing.TB
	failure string
}

func (r *failureRecorder) Helper()                        {}
func (r *failureRecorder) Logf(string, ...any)            {}
func (r *failureRecorder) Fatalf(format string, a ...any) { r.fail(fmt.Sprintf(format, a...)) }
func (r *failureRecorder) Errorf(format string, a ...any) { r.fail(fmt.Sprintf(format, a...)) }
func (r *failureRecorder) Fatal(a ...any)                 { r.fail(fmt.Sprint(a...)) }
func (r *failureRecorder) FailNow()                       { r.fail("FailNow") }
func (r *failureRecorder) Failed() bool                   { return r.failure != "" }

func (r *failureRecorder) fail(msg string) {
	r.failure = msg
	runtime.Goexit()
}

// runExpectingFailure runs fn with a failureRecorder on a goroutine of its
// own and returns the failure, or "" when the run passed.
func runExpectingFailure(t *testing.T, fn func(testing.TB)) string {
	r := &failureRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r.failure
}

// TestQuorumControllerSimulationActingEarly is the negative control of
// TestQuorumControllerSimulation: controllers that acknowledge a change
// before the quorum commits it — an ISR change a leader then acts on, a
// registration — must make some seeds fail the same checks.
func TestQuorumControllerSimulationActingEarly(t *testing.T) {
	failed := 0
	runs := 0
	// Acting early loses an acked write only when a failover falls between
	// an ISR change's proposal and its commit, around a leader's crash: a
	// few seeds in a hundred. Two hundred long runs make a pass of a broken
	// quorum (no seed failing) a chance below one in ten thousand.
	for seed := int64(1); seed <= 200; seed++ {
		runs++
		ch := quorumChaosHarsh(seed)
		ch.actBeforeCommit = true
		if msg := runExpectingFailure(t, func(tb testing.TB) { runChaos(tb, seed*10+4, 800, ch) }); msg != "" {
			failed++
			t.Logf("seed %d failed, as it must: %s", seed, msg)
			break // one is the proof; the rest would take time
		}
	}
	if failed == 0 {
		t.Fatalf("none of %d seeds failed: the simulation does not catch a controller acting before commit", runs)
	}
}
