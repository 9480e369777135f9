package replica_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/replica/replicatest"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// ctlNode is one node of ctlCluster: a disk that survives crashes and,
// while up, the partition's log and replica.
type ctlNode struct {
	id      int32
	fs      *vfs.MemFS
	log     *log.Log
	rep     *replica.Replica
	epoch   int64
	hw      int64 // replication-offset-checkpoint
	pending map[uint64]*ctlProduce
}

type ctlProduce struct {
	values []string
	done   bool
	err    error
}

// ctlCluster drives Replicas of one partition with a LocalController as
// their controller: nodes register and heartbeat, leaders' ISR changes go
// through AlterPartition, and the controller's Updates are applied.
type ctlCluster struct {
	t        *testing.T
	ctl      *replica.LocalController
	net      *replicatest.Network
	tp       log.TopicPartition
	nodes    map[int32]*ctlNode
	ids      []int32
	produced []*ctlProduce
	rejected int // AlterPartition refusals
}

func newCtlCluster(t *testing.T, n int) *ctlCluster {
	ctl, err := replica.NewController(&replica.MemStore{}, ctlOptions)
	if err != nil {
		t.Fatal(err)
	}
	c := &ctlCluster{t: t, ctl: ctl, net: replicatest.NewNetwork(1), tp: log.TopicPartition{Topic: "t"}, nodes: map[int32]*ctlNode{}}
	for id := range int32(n) {
		c.ids = append(c.ids, id)
		c.nodes[id] = &ctlNode{id: id, fs: vfs.NewMem()}
		c.start(id)
	}
	if err := ctl.CreateTopic("t", 1, n, replica.TopicConfig{}); err != nil {
		t.Fatal(err)
	}
	c.stabilize()
	return c
}

// start registers node id and opens its log and replica in the broker
// epoch the controller gave it.
func (c *ctlCluster) start(id int32) {
	n := c.nodes[id]
	epoch, err := c.ctl.RegisterNode(id)
	if err != nil {
		c.t.Fatal(err)
	}
	l, err := log.Open("/data/t-0", log.Options{FS: n.fs, SegmentBytes: 16 << 10, MaxIndexBytes: 4096})
	if err != nil {
		c.t.Fatal(err)
	}
	opts := testOptions(2)
	opts.BrokerEpoch = uint32(epoch)
	opts.HighWatermark = n.hw
	r, err := replica.New(id, c.tp, l, opts)
	if err != nil {
		c.t.Fatal(err)
	}
	n.log, n.rep, n.epoch, n.pending = l, r, epoch, map[uint64]*ctlProduce{}
}

// crash stops node id; its disk keeps what was synced.
func (c *ctlCluster) crash(id int32) {
	n := c.nodes[id]
	n.fs = n.fs.CrashClone(vfs.CrashOptions{Seed: int64(id), KeepUnsynced: vfs.KeepNone})
	n.log.Close()
	n.log, n.rep, n.pending = nil, nil, nil
}

func (c *ctlCluster) up(id int32) bool { return c.nodes[id].rep != nil }

// applyUpdates carries out the controller's commands.
func (c *ctlCluster) applyUpdates() bool {
	us := c.ctl.Updates()
	for _, u := range us {
		n := c.nodes[u.Node]
		if u.TopicPartition != c.tp || u.Deleted {
			c.t.Fatalf("unexpected update %+v", u)
		}
		if n.rep == nil {
			continue
		}
		if err := n.rep.Apply(u.State); err != nil {
			c.t.Fatalf("node %d apply %+v: %v", u.Node, u.State, err)
		}
	}
	return len(us) > 0
}

func (c *ctlCluster) handleReady(n *ctlNode) {
	rd := n.rep.Ready()
	if err := rd.Persist(n.log); err != nil {
		c.t.Fatalf("node %d persist: %v", n.id, err)
	}
	for _, m := range rd.Messages {
		c.net.Send(m)
	}
	if rd.HighWatermark >= 0 {
		n.hw = rd.HighWatermark
	}
	if a := rd.AlterPartition; a != nil {
		if _, err := c.ctl.AlterPartition(n.id, c.tp, *a); err != nil {
			c.rejected++
			n.rep.RejectISRChange(*a)
		}
	}
	for _, comp := range rd.Completed {
		p := n.pending[comp.ID]
		delete(n.pending, comp.ID)
		p.done, p.err = true, comp.Err
	}
	if err := n.rep.Advance(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *ctlCluster) stabilize() {
	for round := 0; ; round++ {
		if round == 10000 {
			c.t.Fatal("no quiescence")
		}
		busy := c.applyUpdates()
		for _, id := range c.ids {
			for n := c.nodes[id]; n.rep != nil && n.rep.HasReady(); {
				busy = true
				c.handleReady(n)
			}
		}
		for _, m := range c.net.Deliver() {
			busy = true
			if n := c.nodes[m.To]; n != nil && n.rep != nil {
				if err := n.rep.Step(m); err != nil {
					c.t.Fatalf("node %d step %v: %v", m.To, m, err)
				}
			}
		}
		if !busy {
			return
		}
	}
}

// tick passes one tick: live nodes heartbeat, the controller and the
// replicas tick.
func (c *ctlCluster) tick() {
	c.net.Tick()
	for _, id := range c.ids {
		if n := c.nodes[id]; n.rep != nil {
			if err := c.ctl.Heartbeat(id, n.epoch); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	if err := c.ctl.Tick(); err != nil {
		c.t.Fatal(err)
	}
	c.applyUpdates()
	for _, id := range c.ids {
		if n := c.nodes[id]; n.rep != nil {
			n.rep.Tick()
		}
	}
	c.stabilize()
}

func (c *ctlCluster) ticks(k int) {
	for range k {
		c.tick()
	}
}

func (c *ctlCluster) leader() int32 { return mustPartition(c.t, c.ctl, "t", 0).Leader }

// produce appends values with acks=all at the controller's leader.
func (c *ctlCluster) produce(values ...string) *ctlProduce {
	n := c.nodes[c.leader()]
	b := record.NewBuilder(record.DefaultBatchOptions())
	for _, v := range values {
		b.Append(record.Record{Value: []byte(v)})
	}
	prop, err := n.rep.Propose(b.Build(), transport.AcksAll)
	if err != nil {
		c.t.Fatalf("produce at node %d: %v", n.id, err)
	}
	p := &ctlProduce{values: values}
	n.pending[prop.ID] = p
	c.produced = append(c.produced, p)
	return p
}

// committed returns the values node id holds below its high watermark.
func (c *ctlCluster) committed(id int32) []string {
	n := c.nodes[id]
	batches, err := replicatest.ReadBatches(n.log, 0, n.rep.HighWatermark())
	if err != nil {
		c.t.Fatal(err)
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
	if l := c.leader(); l != 0 {
		t.Fatalf("first leader %d, want 0", l)
	}
	var acked []*ctlProduce
	for i := range 5 {
		acked = append(acked, c.produce(fmt.Sprintf("a%d", i)))
		c.ticks(2)
	}
	inflight := c.produce("unacked") // its fate is not known when the leader dies
	for _, p := range acked {
		if !p.done || p.err != nil {
			t.Fatalf("produce %v before the kill: done=%v err=%v", p.values, p.done, p.err)
		}
	}

	c.crash(0)
	// Its last heartbeat came just before the last tick: the session ends
	// sessionTicks-1 ticks from now.
	c.ticks(sessionTicks - 2)
	if s := mustPartition(t, c.ctl, "t", 0); s.Leader != 0 {
		t.Fatalf("leader moved to %d before the session timeout", s.Leader)
	}
	c.ticks(1)
	s := mustPartition(t, c.ctl, "t", 0)
	if s.Leader != 1 || s.LeaderEpoch != 1 || !slices.Equal(s.ISR, []int32{1, 2}) {
		t.Fatalf("after the leader's session expired: %+v, want leader 1 in epoch 1 with ISR [1 2]", s)
	}
	for i := range 5 {
		acked = append(acked, c.produce(fmt.Sprintf("b%d", i)))
		c.ticks(2)
	}

	c.start(0)
	c.ticks(20)
	s = mustPartition(t, c.ctl, "t", 0)
	if !slices.Equal(s.ISR, []int32{0, 1, 2}) {
		t.Fatalf("restarted node not back in the ISR: %+v (%d refusals)", s, c.rejected)
	}
	c.ticks(100 - int(c.ctl.Now()%100)) // to the next imbalance check
	s = mustPartition(t, c.ctl, "t", 0)
	if s.Leader != 0 || s.LeaderEpoch != 2 {
		t.Fatalf("preferred leader not restored: %+v", s)
	}
	for i := range 3 {
		acked = append(acked, c.produce(fmt.Sprintf("c%d", i)))
		c.ticks(2)
	}

	var want []string
	for _, p := range acked {
		if !p.done || p.err != nil {
			t.Fatalf("produce %v: done=%v err=%v", p.values, p.done, p.err)
		}
		want = append(want, p.values...)
	}
	for _, id := range c.ids {
		got := c.committed(id)
		n := len(got)
		got = slices.DeleteFunc(got, func(v string) bool { return v == "unacked" })
		if n-len(got) > 1 {
			t.Fatalf("node %d holds the in-flight write %d times: %v", id, n-len(got), c.committed(id))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("node %d holds %v, want %v", id, got, want)
		}
	}
	if inflight.done && inflight.err == nil {
		t.Fatal("a write in flight on a crashed leader was acknowledged")
	}
	if inflight.done && !errors.Is(inflight.err, transport.ErrNotLeaderOrFollower) {
		t.Fatalf("in-flight write failed with %v", inflight.err)
	}
}

// The leader, cut off from its followers, shrinks the ISR to itself through
// the controller's AlterPartition, then dies: with unclean election off the
// controller leaves the partition offline rather than elect a follower
// that lacks committed records, and when the leader's node comes back it
// leads again in a new epoch, the followers rejoin, and every acknowledged
// record is on every node.
func TestControllerKeepsPartitionOfflineWithoutISR(t *testing.T) {
	c := newCtlCluster(t, 3)
	var acked []*ctlProduce
	for i := range 3 {
		acked = append(acked, c.produce(fmt.Sprintf("a%d", i)))
		c.ticks(2)
	}
	c.net.Isolate(0, 1, 2)
	// Written by the lone leader, never committed: the followers do not
	// get it, and min.insync.replicas is 2.
	lone := c.produce("lone")
	c.ticks(40) // past replica.lag.time.max.ms (30 ticks)
	s := mustPartition(t, c.ctl, "t", 0)
	if s.Leader != 0 || !slices.Equal(s.ISR, []int32{0}) {
		t.Fatalf("isolated leader did not shrink the ISR to itself: %+v", s)
	}
	if lone.done && lone.err == nil {
		t.Fatal("acks=all write acknowledged with an ISR of one")
	}

	c.crash(0)
	c.net.HealAll()
	c.ticks(sessionTicks)
	s = mustPartition(t, c.ctl, "t", 0)
	if s.Leader != replica.NoLeader || !slices.Equal(s.ISR, []int32{0}) {
		t.Fatalf("after the only ISR member died: %+v, want offline with ISR [0]", s)
	}
	for _, id := range []int32{1, 2} {
		if r := c.nodes[id].rep.Role(); r != replica.RoleNone {
			t.Fatalf("node %d is %s while the partition is offline", id, r)
		}
	}

	c.start(0)
	c.ticks(20)
	s = mustPartition(t, c.ctl, "t", 0)
	if s.Leader != 0 || s.LeaderEpoch != 2 || !slices.Equal(s.ISR, []int32{0, 1, 2}) {
		t.Fatalf("after node 0 returned: %+v, want leader 0 in epoch 2 with the full ISR", s)
	}
	var want []string
	for _, p := range acked {
		if !p.done || p.err != nil {
			t.Fatalf("produce %v: done=%v err=%v", p.values, p.done, p.err)
		}
		want = append(want, p.values...)
	}
	for _, id := range c.ids {
		got := slices.DeleteFunc(c.committed(id), func(v string) bool { return v == "lone" })
		if !slices.Equal(got, want) {
			t.Fatalf("node %d holds %v, want %v", id, got, want)
		}
	}
}
