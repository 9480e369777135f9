package replica_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/replica/replicatest"
	"github.com/partlog/partlog/vfs"
)

// An acks=all append completes once every ISR member has it, and the high
// watermark and every follower's log then hold it.
func TestAcksAllWaitsForISR(t *testing.T) {
	c := newCluster(t, 1, 3, testOptions(2))
	p := produce(t, c, kafka.AcksAll, "a", "b")
	if p.Done {
		t.Fatalf("acks=all completed before any follower fetched")
	}
	c.Stabilize()
	if !p.Acked() || p.BaseOffset != 0 {
		t.Fatalf("produce = %+v, want acked at 0", p)
	}
	for id := int32(1); id <= 3; id++ {
		if got := values(t, c, id); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("node %d holds %v", id, got)
		}
	}
	if hw := c.Nodes[1].Replica.HighWatermark(); hw != 2 {
		t.Fatalf("leader high watermark %d, want 2", hw)
	}
	// Followers learn the high watermark with their next fetch answer.
	c.RunTicks(1)
	for id := int32(2); id <= 3; id++ {
		if hw := c.Nodes[id].Replica.HighWatermark(); hw != 2 {
			t.Fatalf("follower %d high watermark %d, want 2", id, hw)
		}
	}
	c.Check()
}

// With the ISR below min.insync.replicas, acks=all fails with
// NOT_ENOUGH_REPLICAS and the high watermark does not move even for acks=1.
func TestStrictMinISR(t *testing.T) {
	c := newCluster(t, 2, 3, testOptions(2))
	produce(t, c, kafka.AcksAll, "a")
	c.Stabilize()
	c.Crash(2, false)
	c.Crash(3, false)
	if isr := c.State.ISR; !slices.Equal(isr, []int32{1}) {
		t.Fatalf("ISR %v after fencing both followers", isr)
	}
	_, err := c.Produce(1, kafka.AcksAll, "b")
	if !errors.Is(err, kafka.ErrNotEnoughReplicas) {
		t.Fatalf("acks=all with ISR {1} and min ISR 2: err %v", err)
	}
	p := produce(t, c, kafka.AcksLeader, "c")
	c.RunTicks(3)
	if !p.Acked() {
		t.Fatalf("acks=1 produce not acked: %+v", p)
	}
	if hw := c.Nodes[1].Replica.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d moved below min ISR; want 1", hw)
	}
	c.Restart(2)
	c.RunTicks(5)
	if isr := c.State.ISR; !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR %v after node 2 caught up, want [1 2]", isr)
	}
	if hw := c.Nodes[1].Replica.HighWatermark(); hw != 2 {
		t.Fatalf("high watermark %d after the ISR reached min ISR; want 2", hw)
	}
	c.Check()
}

// A replica that does not lead refuses appends with NOT_LEADER_OR_FOLLOWER;
// a fetch in an old leader epoch is fenced, and one from an old broker
// epoch refused.
func TestNotLeaderAndFencedEpoch(t *testing.T) {
	c := newCluster(t, 3, 3, testOptions(1))
	if _, err := c.Produce(2, kafka.AcksAll, "x"); !errors.Is(err, kafka.ErrNotLeaderOrFollower) {
		t.Fatalf("produce at follower: %v", err)
	}
	r := c.Nodes[1].Replica
	epoch2 := c.Nodes[2].BrokerEpoch()
	if err := r.Step(replica.Message{Type: replica.MsgFetch, From: 2, To: 1, Seq: 99, Fetch: &kafka.ReplicaFetchPartition{
		CurrentLeaderEpoch: kafka.UndefinedEpoch, FetchOffset: 0, LastFetchedEpoch: -1, ReplicaEpoch: epoch2}}); err != nil {
		t.Fatal(err)
	}
	rd := r.Ready()
	if len(rd.Messages) != 0 {
		t.Fatalf("fetch with CurrentLeaderEpoch -1 skips the check and parks; got %v", rd.Messages)
	}
	if err := r.Advance(); err != nil {
		t.Fatal(err)
	}
	c.ElectPreferring(1) // epoch 1
	c.Stabilize()
	if err := r.Step(replica.Message{Type: replica.MsgFetch, From: 2, To: 1, Seq: 100, Fetch: &kafka.ReplicaFetchPartition{
		CurrentLeaderEpoch: 0, FetchOffset: 0, LastFetchedEpoch: -1, ReplicaEpoch: epoch2}}); err != nil {
		t.Fatal(err)
	}
	rd = r.Ready()
	if len(rd.Messages) != 1 || !errors.Is(rd.Messages[0].FetchResponse.Err, kafka.ErrFencedLeaderEpoch) {
		t.Fatalf("fetch in epoch 0 from leader in epoch 1: %v", rd.Messages)
	}
	if err := r.Advance(); err != nil {
		t.Fatal(err)
	}
	// A fetch from an earlier incarnation of node 2 (its broker epoch is
	// epoch2 now) is refused: its offset says nothing about the log it has.
	if err := r.Step(replica.Message{Type: replica.MsgFetch, From: 2, To: 1, Seq: 101, Fetch: &kafka.ReplicaFetchPartition{
		CurrentLeaderEpoch: 1, FetchOffset: 50, LastFetchedEpoch: -1, ReplicaEpoch: epoch2 - 1}}); err != nil {
		t.Fatal(err)
	}
	rd = r.Ready()
	if len(rd.Messages) != 1 || !errors.Is(rd.Messages[0].FetchResponse.Err, kafka.ErrStaleBrokerEpoch) {
		t.Fatalf("fetch from an old incarnation: %v", rd.Messages)
	}
	if err := r.Advance(); err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(replica.LeaderAndISR{Leader: 1, LeaderEpoch: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1}}); !errors.Is(err, replica.ErrStaleLeaderEpoch) {
		t.Fatalf("apply of epoch 0 at epoch 1: %v", err)
	}
	if err := r.Apply(replica.LeaderAndISR{Leader: 1, LeaderEpoch: 9, Replicas: []int32{2, 3}}); !errors.Is(err, replica.ErrNotAssigned) {
		t.Fatalf("apply without this replica: %v", err)
	}
}

// While an ISR expansion waits for the controller, the high watermark waits
// for the joining replica too (Kafka's maximal ISR): once the controller
// commits it, the replica is in the ISR and must hold everything committed.
func TestPendingExpansionHoldsHighWatermark(t *testing.T) {
	c := replicatest.NewCluster(t, replicatest.Config{Seed: 5, Replicas: []int32{1, 2, 3}, Options: testOptions(1),
		AlterPartitionDelay: 20})
	c.Stabilize()
	c.Net.Pause(3)
	for i := range lagTicks + 25 { // past the lag limit, and the controller's delay
		produce(t, c, kafka.AcksLeader, "p"+itoa(i))
		c.Tick()
	}
	if !slices.Equal(c.State.ISR, []int32{1, 2}) {
		t.Fatalf("ISR %v, want node 3 out", c.State.ISR)
	}
	c.Net.Resume(3)
	c.Tick() // node 3 catches up; the leader proposes it back
	st := c.Nodes[1].Replica.Status()
	if st.PendingISR == nil || !slices.Equal(st.PendingISR.ISR, []int32{1, 2, 3}) {
		t.Fatalf("pending ISR change %+v, want [1 2 3]", st.PendingISR)
	}
	// A refusal of an older proposal leaves this one pending (the
	// simulation found a run where dropping it lost a committed batch).
	older := *st.PendingISR
	older.PartitionEpoch--
	c.Nodes[1].Replica.RejectISRChange(older)
	if c.Nodes[1].Replica.Status().PendingISR == nil {
		t.Fatalf("rejecting an older proposal dropped the pending one")
	}
	c.Net.Pause(3)
	p := produce(t, c, kafka.AcksAll, "needs-3")
	c.RunTicks(5)
	if p.Done {
		t.Fatalf("acks=all completed without the replica joining the ISR: %+v", p)
	}
	if hw := c.Nodes[1].Replica.HighWatermark(); hw != p.BaseOffset {
		t.Fatalf("high watermark %d passed the joining replica's log end %d", hw, p.BaseOffset)
	}
	c.Net.Resume(3)
	c.RunTicks(2)
	if !p.Acked() {
		t.Fatalf("acks=all not acked once node 3 fetched: %+v", p)
	}
	c.Check()
}

// A leader answers OffsetsForLeaderEpoch from its epoch cache, counting its
// own epoch from where it began; a replica that does not lead refuses.
func TestOffsetsForLeaderEpoch(t *testing.T) {
	c := newCluster(t, 6, 2, testOptions(1))
	produce(t, c, kafka.AcksAll, "a", "b", "c")
	c.Stabilize()
	c.ElectPreferring(2) // epoch 1 begins at 3 on node 2, which has written nothing in it
	c.Stabilize()
	ask := func(id int32, current, epoch int32) *kafka.OffsetForLeaderEpochPartitionResponse {
		t.Helper()
		r := c.Nodes[id].Replica
		if err := r.Step(replica.Message{Type: replica.MsgOffsetsForLeaderEpoch, From: 9, To: id, Seq: 1,
			EpochRequest: &kafka.OffsetForLeaderEpochPartition{CurrentLeaderEpoch: current, LeaderEpoch: epoch}}); err != nil {
			t.Fatal(err)
		}
		rd := r.Ready()
		defer r.Advance()
		for _, m := range rd.Messages {
			if m.Type == replica.MsgOffsetsForLeaderEpochResponse && m.To == 9 {
				return m.EpochResponse
			}
		}
		t.Fatalf("no answer in %v", rd.Messages)
		return nil
	}
	if got := ask(2, 1, 0); got.Err != nil || got.LeaderEpoch != 0 || got.EndOffset != 3 {
		t.Fatalf("epoch 0 at the new leader: %+v, want 0@3", got)
	}
	if got := ask(2, 1, 1); got.Err != nil || got.LeaderEpoch != 1 || got.EndOffset != 3 {
		t.Fatalf("epoch 1 at the new leader: %+v, want 1@3", got)
	}
	if got := ask(2, 2, 1); !errors.Is(got.Err, kafka.ErrUnknownLeaderEpoch) {
		t.Fatalf("asking in a future epoch: %+v", got)
	}
	if got := ask(1, -1, 0); !errors.Is(got.Err, kafka.ErrNotLeaderOrFollower) {
		t.Fatalf("asking a follower: %+v", got)
	}
}

// A follower whose log ends below the leader's log start offset (the
// leader deleted records it never fetched) empties its log and starts it
// at the leader's log start offset.
func TestFollowerBelowLeaderLogStart(t *testing.T) {
	c := newCluster(t, 7, 2, testOptions(1))
	c.Crash(2, false)
	for i := range 5 {
		produce(t, c, kafka.AcksAll, vals("d"+itoa(i)+"-", 2)...)
	}
	c.Stabilize()
	if err := c.Nodes[1].Log.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	c.Restart(2)
	c.RunTicks(3)
	l := c.Nodes[2].Log
	if l.LogStartOffset() != 6 || l.LogEndOffset() != 10 {
		t.Fatalf("follower log [%d, %d), want [6, 10)", l.LogStartOffset(), l.LogEndOffset())
	}
	if !slices.Equal(c.State.ISR, []int32{1, 2}) {
		t.Fatalf("ISR %v, want the follower back", c.State.ISR)
	}
	if got := values(t, c, 2); !slices.Equal(got, []string{"d3-0", "d3-1", "d4-0", "d4-1"}) {
		t.Fatalf("follower holds %v", got)
	}
}

// An answer to a fetch sent before a restart is not taken for the answer
// to the restarted replica's fetch, though it arrives after it: the broker
// epoch sets fetches of different incarnations apart. (Found by the
// simulation: a late diverging-epoch answer truncated below the high
// watermark.)
func TestFetchAnswerFromBeforeRestartIgnored(t *testing.T) {
	l, err := log.Open("/p-0", log.Options{FS: vfs.NewMem(), MaxIndexBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := record.NewBuilder(record.DefaultBatchOptions())
	b.Append(record.Record{Value: []byte("kept")})
	batch := b.Build()
	record.SetPartitionLeaderEpoch(batch, 0)
	if _, err := l.AppendAsFollower(batch); err != nil {
		t.Fatal(err)
	}
	state := replica.LeaderAndISR{Leader: 2, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
	start := func(brokerEpoch uint32) (*replica.Replica, replica.Message) {
		r, err := replica.New(1, kafka.TopicPartition{Topic: "p"}, l, replica.Options{BrokerEpoch: brokerEpoch})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Apply(state); err != nil {
			t.Fatal(err)
		}
		rd := r.Ready()
		if err := r.Advance(); err != nil {
			t.Fatal(err)
		}
		return r, rd.Messages[0]
	}
	_, before := start(1)
	r, after := start(2)
	if before.Seq == after.Seq {
		t.Fatalf("fetches of two incarnations share Seq %d", before.Seq)
	}
	stale := replica.Message{Type: replica.MsgFetchResponse, From: 2, To: 1, Seq: before.Seq,
		FetchResponse: &kafka.ReplicaFetchPartitionResponse{LeaderEpoch: 1, HighWatermark: 0, LogEndOffset: 0,
			DivergingEpoch: &kafka.EpochEndOffset{LeaderEpoch: 0, EndOffset: 0}}}
	if err := r.Step(stale); err != nil {
		t.Fatal(err)
	}
	if r.HasReady() {
		t.Fatalf("the restarted replica acted on an answer to its predecessor's fetch: %+v", r.Ready())
	}
}

// countingPool is a BufferPool that counts the buffers it lends.
type countingPool struct{ gets int }

func (p *countingPool) Get(n int) []byte { p.gets++; return make([]byte, n) }

// With Options.AnswerBuffers, a leader reads its answers to followers'
// fetches into the buffers it lends (the replicas here run on one
// goroutine, so the count needs no lock), and the followers end up with
// what was produced.
func TestAnswerBuffers(t *testing.T) {
	pool := &countingPool{}
	opts := testOptions(2)
	opts.AnswerBuffers = pool
	c := newCluster(t, 1, 3, opts)
	before := pool.gets
	p := produce(t, c, kafka.AcksAll, "a", "b")
	c.Stabilize()
	if !p.Acked() {
		t.Fatalf("produce = %+v, want acked", p)
	}
	if pool.gets == before {
		t.Fatalf("no fetch answer was read into a buffer from AnswerBuffers")
	}
	for id := int32(2); id <= 3; id++ {
		if got := values(t, c, id); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("node %d holds %v", id, got)
		}
	}
	c.Check()
}
