package controller_test

import (
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/vfs"
)

// checkInvariants checks what must hold of any controller state: every
// partition's ISR is non-empty and within its replicas, a leader is an
// unfenced ISR member, and a fenced node is in no ISR unless as its last
// member.
func checkInvariants(t interface{ Fatalf(string, ...any) }, s controller.ClusterState) {
	for name, topic := range s.Topics {
		for p, ps := range topic.Partitions {
			if len(ps.ISR) == 0 {
				t.Fatalf("%s-%d: empty ISR: %+v", name, p, ps)
			}
			for _, id := range ps.ISR {
				if !slices.Contains(ps.Replicas, id) {
					t.Fatalf("%s-%d: ISR member %d not a replica: %+v", name, p, id, ps)
				}
				if s.Nodes[id].Fenced && len(ps.ISR) > 1 {
					t.Fatalf("%s-%d: fenced node %d in ISR %v", name, p, id, ps.ISR)
				}
			}
			if ps.Leader != replica.NoLeader && (!slices.Contains(ps.ISR, ps.Leader) || s.Nodes[ps.Leader].Fenced) {
				t.Fatalf("%s-%d: leader %d fenced or outside the ISR: %+v", name, p, ps.Leader, ps)
			}
		}
	}
}

// checkEpochs checks that no partition's leader or partition epoch went
// back between two states, and that the leader epoch grew whenever the
// leader changed.
func checkEpochs(t interface{ Fatalf(string, ...any) }, before, after controller.ClusterState) {
	for name, a := range after.Topics {
		b, ok := before.Topics[name]
		if !ok || len(b.Partitions) != len(a.Partitions) {
			continue
		}
		for p := range a.Partitions {
			x, y := b.Partitions[p], a.Partitions[p]
			if y.LeaderEpoch < x.LeaderEpoch || y.PartitionEpoch < x.PartitionEpoch {
				t.Fatalf("%s-%d: epochs went back: %+v then %+v", name, p, x, y)
			}
			if x.Leader != y.Leader && y.LeaderEpoch == x.LeaderEpoch {
				t.Fatalf("%s-%d: leader changed without a new leader epoch: %+v then %+v", name, p, x, y)
			}
			if !reflect.DeepEqual(x, y) && y.PartitionEpoch == x.PartitionEpoch {
				t.Fatalf("%s-%d: state changed without a new partition epoch: %+v then %+v", name, p, x, y)
			}
		}
	}
}

// Random operations, with the controller restarted from its metadata at
// random points: each restarted controller holds exactly the state the
// running one had when its store held that many records, and keeps going
// from there. States satisfy the invariants throughout.
func TestMachineReplayProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		store := &controller.MemStore{}
		c, err := controller.NewMachine(store, ctlOptions)
		if err != nil {
			rt.Fatal(err)
		}
		type checkpoint struct {
			records int
			state   controller.ClusterState
		}
		checkpoints := []checkpoint{{0, c.State()}}
		topics := []string{"a", "b", "c"}
		node := rapid.Int32Range(0, 4)
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for range steps {
			before := c.State()
			switch op := rapid.IntRange(0, 10).Draw(rt, "op"); op {
			case 0:
				_, err = c.RegisterNode(node.Draw(rt, "register"), "")
			case 1:
				id := node.Draw(rt, "heartbeat")
				if n, ok := before.Nodes[id]; ok {
					err = c.Heartbeat(id, n.BrokerEpoch)
				}
			case 2:
				beating := rapid.SliceOfDistinct(node, func(id int32) int32 { return id }).Draw(rt, "beating")
				for range rapid.IntRange(1, 120).Draw(rt, "ticks") {
					for _, id := range beating {
						if n, ok := c.State().Nodes[id]; ok {
							if err := c.Heartbeat(id, n.BrokerEpoch); err != nil {
								rt.Fatal(err)
							}
						}
					}
					if err := c.Tick(); err != nil {
						rt.Fatal(err)
					}
				}
			case 3:
				cfg := controller.TopicConfig{
					Unclean: controller.Unclean(rapid.Bool().Draw(rt, "unclean")),
					ID:      rapid.SampledFrom([]string{"", "id-1", "id-2"}).Draw(rt, "id"),
					Configs: rapid.MapOf(rapid.SampledFrom([]string{"retention.ms", "min.insync.replicas", "cleanup.policy"}),
						rapid.StringN(0, 8, -1)).Draw(rt, "configs"),
				}
				_ = c.CreateTopic(rapid.SampledFrom(topics).Draw(rt, "create"), rapid.IntRange(1, 4).Draw(rt, "partitions"),
					rapid.IntRange(1, 3).Draw(rt, "rf"), cfg)
			case 4:
				_ = c.DeleteTopic(rapid.SampledFrom(topics).Draw(rt, "delete"), "")
			case 5, 6:
				// The leader proposes an ISR of itself and any replicas,
				// with current or stale epochs: accepted or refused, the
				// invariants hold.
				name := rapid.SampledFrom(topics).Draw(rt, "alter")
				topic, ok := before.Topics[name]
				if !ok {
					continue
				}
				p := rapid.IntRange(0, len(topic.Partitions)-1).Draw(rt, "partition")
				s := topic.Partitions[p]
				isr := []int32{s.Leader}
				var epochs []int64
				for _, id := range s.Replicas {
					if id != s.Leader && rapid.Bool().Draw(rt, "member") {
						isr = append(isr, id)
					}
				}
				for _, id := range isr {
					epochs = append(epochs, before.Nodes[id].BrokerEpoch-int64(rapid.IntRange(0, 1).Draw(rt, "stale")))
				}
				_, _ = c.AlterPartition(s.Leader, kafka.TopicPartition{Topic: name, Partition: int32(p)}, replica.ISRChange{
					LeaderEpoch: s.LeaderEpoch, PartitionEpoch: s.PartitionEpoch - int32(rapid.IntRange(0, 1).Draw(rt, "stale partition epoch")),
					ISR: isr, BrokerEpochs: epochs})
			case 7:
				err = c.ElectPreferredLeaders()
			case 9:
				// A reassignment to any nodes, or a cancel: accepted or
				// refused, the invariants hold.
				name := rapid.SampledFrom(topics).Draw(rt, "reassign")
				topic, ok := before.Topics[name]
				if !ok {
					continue
				}
				p := rapid.IntRange(0, len(topic.Partitions)-1).Draw(rt, "partition")
				var target []int32
				if !rapid.Bool().Draw(rt, "cancel") {
					target = rapid.SliceOfNDistinct(node, 1, 3, func(id int32) int32 { return id }).Draw(rt, "target")
				}
				_ = c.ReassignPartition(kafka.TopicPartition{Topic: name, Partition: int32(p)}, target)
			case 10:
				_ = c.UnregisterNode(node.Draw(rt, "unregister"))
			case 8:
				cp := checkpoints[rapid.IntRange(0, len(checkpoints)-1).Draw(rt, "restart at")]
				truncated := store.Truncated(cp.records)
				r, err := controller.NewMachine(truncated, ctlOptions)
				if err != nil {
					rt.Fatal(err)
				}
				if got := r.State(); !reflect.DeepEqual(got, cp.state) {
					rt.Fatalf("restarted after %d records with\n%+v\nwant\n%+v", cp.records, got, cp.state)
				}
				// Go on with the controller restarted from the whole store.
				c, err = controller.NewMachine(store, ctlOptions)
				if err != nil {
					rt.Fatal(err)
				}
				if got := c.State(); !reflect.DeepEqual(got, before) {
					rt.Fatalf("restarted with\n%+v\nwant\n%+v", got, before)
				}
			}
			if err != nil {
				rt.Fatal(err)
			}
			after := c.State()
			checkInvariants(rt, after)
			checkEpochs(rt, before, after)
			checkpoints = append(checkpoints, checkpoint{store.Len(), after})
		}
	})
}

// The metadata log on a real log.Log: a controller crashed (its disk keeping
// only what was synced) and restarted on it resumes the same state, and
// its broker epochs keep growing.
func TestMachineLogStoreRestart(t *testing.T) {
	fs := vfs.NewMem()
	open := func() (*log.Log, *controller.Machine) {
		l, err := log.Open("/meta/__cluster_metadata-0", log.Options{FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		c, err := controller.NewMachine(controller.NewLogStore(l), ctlOptions)
		if err != nil {
			t.Fatal(err)
		}
		return l, c
	}
	l, c := open()
	for id := range int32(3) {
		if _, err := c.RegisterNode(id, ""); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"orders", "payments"} {
		if err := c.CreateTopic(name, 3, 2+i, controller.TopicConfig{Unclean: controller.Unclean(i == 1)}); err != nil {
			t.Fatal(err)
		}
	}
	tickBeating(t, c, sessionTicks, 0, 2) // node 1 fenced
	shrinkTo(t, c, kafka.TopicPartition{Topic: "payments", Partition: 1}, mustPartition(t, c, "payments", 1).Leader)
	want := c.State()
	fs = fs.CrashClone(vfs.CrashOptions{Seed: 1, KeepUnsynced: vfs.KeepNone})
	l.Close()

	l, c = open()
	defer l.Close()
	if got := c.State(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart:\n%+v\nwant\n%+v", got, want)
	}
	e, err := c.RegisterNode(1, "")
	if err != nil {
		t.Fatal(err)
	}
	if e != 4 {
		t.Fatalf("broker epoch after restart %d, want 4", e)
	}
}
