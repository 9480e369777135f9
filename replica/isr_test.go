package replica_test

import (
	"slices"
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/replica/replicatest"
)

const lagTicks = 30 // testOptions' ReplicaLagTimeMax of 3 s in 100 ms ticks

// isrWatch records the tick at which the controller's ISR changed.
type isrWatch struct {
	changes []string
	last    []int32
}

func (w *isrWatch) see(c *replicatest.Cluster, tick int) {
	if !slices.Equal(w.last, c.State.ISR) {
		w.last = slices.Clone(c.State.ISR)
		w.changes = append(w.changes, fmtISR(tick, w.last))
	}
}

func fmtISR(tick int, isr []int32) string {
	s := ""
	for _, id := range isr {
		s += string(rune('0' + id))
	}
	return s + "@" + itoa(tick)
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

// Test 10a: a follower paused for longer than replica.lag.time.max.ms is
// removed from the ISR by time since it was last caught up — not before;
// meanwhile the high watermark advances on the rest of the ISR and acks=all
// waits only for it; once resumed, the follower rejoins when it reaches the
// high watermark.
func TestSlowFollowerPausedShrinksThenRejoins(t *testing.T) {
	c := newCluster(t, 101, 3, testOptions(2))
	w := &isrWatch{last: slices.Clone(c.State.ISR)}
	c.Net.Pause(3)
	var acked []*replicatest.Produced
	shrunkAt := -1
	for tick := 1; tick <= lagTicks+10; tick++ {
		acked = append(acked, produce(t, c, kafka.AcksAll, "v"+itoa(tick)))
		c.Tick()
		w.see(c, tick)
		if shrunkAt < 0 && !slices.Contains(c.State.ISR, 3) {
			shrunkAt = tick
		}
	}
	// Node 3 was last caught up at tick 0; it is out once more than 30
	// ticks passed, at the leader's tick 31.
	if shrunkAt != lagTicks+1 {
		t.Fatalf("ISR changes %v: node 3 left at tick %d, want %d", w.changes, shrunkAt, lagTicks+1)
	}
	for i, p := range acked {
		if !p.Acked() {
			t.Fatalf("produce %d not acked with node 3 out of the ISR: %+v", i, p)
		}
	}
	if hw, leo := c.Nodes[1].Replica.HighWatermark(), c.Nodes[1].Log.LogEndOffset(); hw != leo {
		t.Fatalf("high watermark %d, log end %d: the ISR {1,2} should have everything", hw, leo)
	}
	c.Net.Resume(3)
	c.Tick()
	if !slices.Equal(c.State.ISR, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v after node 3 resumed and caught up", c.State.ISR)
	}
	c.Check()
}

// Test 10b: a follower that keeps fetching but never catches up — each
// answer brings one batch while two are written per round — leaves the ISR
// once it has not been caught up for the lag limit, and not before.
func TestSlowFollowerAlwaysBehindShrinks(t *testing.T) {
	opts := testOptions(1)
	opts.FetchMaxBytes = 1 // one batch per answer
	c := newCluster(t, 102, 3, opts)
	// Node 3's fetch answers take 2 ticks; node 2's arrive at once, so it
	// keeps up batch by batch.
	c.Net.AddRule(replicatest.Rule{From: 1, To: 3, Type: replica.MsgFetchResponse, Faults: replicatest.Faults{MinDelay: 2, MaxDelay: 2}})
	shrunkAt := -1
	for tick := 1; tick <= lagTicks+20; tick++ {
		produce(t, c, kafka.AcksLeader, "a"+itoa(tick))
		c.Tick()
		if shrunkAt < 0 && !slices.Contains(c.State.ISR, 3) {
			shrunkAt = tick
		}
		if !slices.Contains(c.State.ISR, 2) {
			t.Fatalf("tick %d: node 2, which keeps up, left the ISR %v", tick, c.State.ISR)
		}
	}
	if shrunkAt < lagTicks || shrunkAt > lagTicks+3 {
		t.Fatalf("node 3 left the ISR at tick %d, want about %d", shrunkAt, lagTicks)
	}
	st := c.Nodes[1].Replica.Status()
	if f := st.Followers[3]; f.LogEndOffset < 0 || f.LogEndOffset >= st.LogEndOffset {
		t.Fatalf("node 3 at %d of %d: it should have been fetching, behind", f.LogEndOffset, st.LogEndOffset)
	}
}

// Test 10c: a burst that puts a follower thousands of records behind does
// not remove it while it keeps fetching and catches up within the limit.
func TestSlowFollowerBurstStaysInISR(t *testing.T) {
	opts := testOptions(2)
	opts.FetchMaxBytes = 16 << 10 // a few hundred records per answer
	c := newCluster(t, 103, 3, opts)
	c.Net.AddRule(replicatest.Rule{From: replicatest.Any, To: replicatest.Any, Faults: replicatest.Faults{MinDelay: 1, MaxDelay: 1}})
	var burst []*replicatest.Produced
	for i := range 300 {
		burst = append(burst, produce(t, c, kafka.AcksAll, vals("burst"+itoa(i)+"-", 10)...))
	}
	behind := c.Nodes[1].Replica.Status().LogEndOffset
	if behind != 3000 {
		t.Fatalf("leader log end %d after the burst, want 3000", behind)
	}
	for tick := 1; tick <= 2*lagTicks; tick++ {
		c.Tick()
		if !slices.Equal(c.State.ISR, []int32{1, 2, 3}) {
			t.Fatalf("tick %d: ISR %v; a fetching follower must stay in sync through a burst", tick, c.State.ISR)
		}
		if leo := c.Nodes[3].Replica.Status().LogEndOffset; tick == 4 && leo >= 2000 {
			t.Fatalf("follower at %d of 3000 after 4 ticks: the burst should keep it behind for a while", leo)
		}
	}
	for i, p := range burst {
		if !p.Acked() {
			t.Fatalf("burst produce %d not acked: %+v", i, p)
		}
	}
	c.Check()
}

// A follower the controller refuses to add to the ISR — it crashed and was
// fenced after its last fetch had reached the high watermark — must not
// keep a live follower out: the leader proposes the refused one again only
// after it fetches again, and the live one joins meanwhile.
func TestRefusedFollowerDoesNotBlockExpansion(t *testing.T) {
	c := newCluster(t, 7, 3, testOptions(1))
	leader := c.Leader()
	var others []int32
	for _, id := range []int32{1, 2, 3} {
		if id != leader {
			others = append(others, id)
		}
	}
	crashed, live := others[0], others[1]
	// The live follower falls out of the ISR by lag time.
	c.Net.Pause(live)
	for i := 0; slices.Contains(c.State.ISR, live); i++ {
		if i > 10*lagTicks {
			t.Fatalf("node %d never left the ISR: %v", live, c.State.ISR)
		}
		produce(t, c, kafka.AcksLeader, "v"+itoa(i))
		c.Tick()
	}
	// The other follower crashes caught up: fenced, out of the ISR; the
	// leader still sees its last fetch at the high watermark.
	c.Crash(crashed, true)
	if slices.Contains(c.State.ISR, crashed) {
		t.Fatalf("crashed node %d still in the ISR %v", crashed, c.State.ISR)
	}
	c.Net.Resume(live)
	for i := 0; !slices.Contains(c.State.ISR, live); i++ {
		if i > 10*lagTicks {
			t.Fatalf("node %d caught up but never rejoined the ISR %v: the refused node %d blocks it", live, c.State.ISR, crashed)
		}
		c.Tick()
	}
	if slices.Contains(c.State.ISR, crashed) {
		t.Fatalf("fenced node %d was added to the ISR %v", crashed, c.State.ISR)
	}
}
