package partlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// shareMember is a share group member speaking the wire protocol by hand
// (ShareGroupHeartbeat, ShareFetch, ShareAcknowledge) over a TCP client,
// for the broker's tests.
type shareMember struct {
	t     *testing.T
	cl    *transport.TCPClient
	group string
	id    string
	epoch int32 // member epoch
	// session is the share session's next epoch.
	session int32
}

func newShareMember(t *testing.T, addr, group, id string) *shareMember {
	cl, err := transport.Dial(context.Background(), addr, transport.DialOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return &shareMember{t: t, cl: cl, group: group, id: id}
}

// join joins the group subscribed to topic and returns its assignment.
func (m *shareMember) join(ctx context.Context, topic string) []transport.TopicIDPartitions {
	resp, err := m.cl.ShareGroupHeartbeat(ctx, &transport.ShareGroupHeartbeatRequest{Group: m.group, MemberID: m.id, SubscribedTopicNames: []string{topic}})
	require.NoError(m.t, err)
	require.NoError(m.t, resp.Err)
	m.epoch = resp.MemberEpoch
	return resp.Assignment
}

// fetched is one record a member got: its offset, value and delivery
// count.
type fetched struct {
	offset int64
	value  string
	count  int16
}

// fetch sends a ShareFetch for the topic's partition 0 with acks, and
// returns the records acquired, each in an acquired range.
func (m *shareMember) fetch(ctx context.Context, topicID [16]byte, wait time.Duration, acks ...transport.AcknowledgementBatch) ([]fetched, *transport.ShareFetchPartitionResponse) {
	resp, err := m.cl.ShareFetch(ctx, &transport.ShareFetchRequest{Group: m.group, MemberID: m.id, ShareSessionEpoch: m.session,
		MaxWait: wait, MaxBytes: 1 << 20, MaxRecords: 100,
		Topics: []transport.ShareFetchTopic{{TopicID: topicID, Partitions: []transport.ShareFetchPartition{{Partition: 0, AcknowledgementBatches: acks}}}}})
	require.NoError(m.t, err)
	require.NoError(m.t, resp.Err)
	m.session++
	require.Len(m.t, resp.Topics, 1)
	pr := resp.Topics[0].Partitions[0]
	var out []fetched
	for data := pr.Records; len(data) > 0; {
		h, err := record.ParseHeader(data)
		require.NoError(m.t, err)
		b, err := record.Decode(data[:h.Size()])
		require.NoError(m.t, err)
		for _, r := range b.Records {
			for _, a := range pr.AcquiredRecords {
				if r.Offset >= a.FirstOffset && r.Offset <= a.LastOffset {
					out = append(out, fetched{r.Offset, string(r.Value), a.DeliveryCount})
				}
			}
		}
		data = data[h.Size():]
	}
	return out, &pr
}

// acknowledge sends acks for the topic's partition 0 in a
// ShareAcknowledge, which acquires nothing, and returns the partition's
// error.
func (m *shareMember) acknowledge(ctx context.Context, topicID [16]byte, acks ...transport.AcknowledgementBatch) error {
	resp, err := m.cl.ShareAcknowledge(ctx, &transport.ShareAcknowledgeRequest{Group: m.group, MemberID: m.id, ShareSessionEpoch: m.session,
		Topics: []transport.ShareAcknowledgeTopic{{TopicID: topicID, Partitions: []transport.ShareAcknowledgePartition{{Partition: 0, AcknowledgementBatches: acks}}}}})
	require.NoError(m.t, err)
	require.NoError(m.t, resp.Err)
	m.session++
	return resp.Topics[0].Partitions[0].Err
}

// ack is an acknowledgement of offsets first..last as typ.
func ack(first, last int64, typ transport.AcknowledgeType) transport.AcknowledgementBatch {
	return transport.AcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []transport.AcknowledgeType{typ}}
}

// TestShareGroupOneNode runs a share group (KIP-932) on a served node over
// the wire: two members share a partition's records, each record held by
// one member at a time; accepted records are never delivered again,
// released and expired ones are, with their delivery count up, a
// rejected one never; the share partition's state survives a restart of
// the node (read back from __share_group_state).
func TestShareGroupOneNode(t *testing.T) {
	dir := t.TempDir()
	opts := []partlog.Option{partlog.OffsetsTopicPartitions(3), partlog.ShareStateTopicPartitions(3), partlog.ShareRecordLockDuration(2 * time.Second)}
	n, err := partlog.Open(dir, opts...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 1}))
	addr := serveWith(t, n.Client(), transport.ServerOptions{})

	a := newShareMember(t, addr, "workers", "member-a")
	assignment := a.join(ctx, "jobs")
	require.Len(t, assignment, 1)
	require.Equal(t, []int32{0}, assignment[0].Partitions)
	id := assignment[0].TopicID
	got, _ := a.fetch(ctx, id, 0)
	require.Empty(t, got, "nothing produced yet: share.auto.offset.reset=latest starts at the end")
	for i := range 10 {
		require.NoError(t, produce(t, n, "jobs", 0, fmt.Sprintf("job-%d", i)).Err)
	}
	got, _ = a.fetch(ctx, id, time.Second)
	require.Len(t, got, 10)
	for i, f := range got {
		require.Equal(t, fetched{int64(i), fmt.Sprintf("job-%d", i), 1}, f)
	}

	// a accepts 0-4, releases 5-6 (and gets them back), rejects 7, and
	// keeps 8-9 past their lock. b, a second member, gets the partition
	// too, and what a's locks let go.
	b := newShareMember(t, addr, "workers", "member-b")
	require.Len(t, b.join(ctx, "jobs"), 1, "a share group gives a partition to several members")
	d, err := n.Client().ShareGroupDescribe(ctx, &transport.ShareGroupDescribeRequest{Groups: []string{"workers"}})
	require.NoError(t, err)
	require.NoError(t, d.Groups[0].Err)
	require.Equal(t, "Stable", d.Groups[0].State)
	require.Len(t, d.Groups[0].Members, 2)
	for _, m := range d.Groups[0].Members {
		require.Equal(t, []transport.NamedTopicIDPartitions{{TopicID: id, Topic: "jobs", Partitions: []int32{0}}}, m.Assignment)
	}
	back, pr := a.fetch(ctx, id, 0, ack(0, 4, transport.AcknowledgeAccept), ack(5, 6, transport.AcknowledgeRelease), ack(7, 7, transport.AcknowledgeReject))
	require.NoError(t, pr.AcknowledgeErr)
	require.Equal(t, []fetched{{5, "job-5", 2}, {6, "job-6", 2}}, back, "a gets back what it released")
	got, _ = b.fetch(ctx, id, 0)
	require.Empty(t, got, "5-9 are a's until their locks expire")
	want := map[int64]fetched{5: {5, "job-5", 3}, 6: {6, "job-6", 3}, 8: {8, "job-8", 2}, 9: {9, "job-9", 2}}
	seen := map[int64]fetched{}
	for len(seen) < len(want) {
		got, _ = b.fetch(ctx, id, 5*time.Second)
		require.NotEmpty(t, got, "a's locks expired and b waited for them")
		for _, f := range got {
			require.Equal(t, want[f.offset], f, "only what a let go, with its delivery count up")
			seen[f.offset] = f
		}
	}
	_, pr = a.fetch(ctx, id, 0, ack(5, 5, transport.AcknowledgeAccept))
	require.ErrorIs(t, pr.AcknowledgeErr, kafka.ErrInvalidRecordState, "a's lock on 5 expired and b holds it: a's acknowledgement is refused")
	_, pr = b.fetch(ctx, id, 0, ack(5, 6, transport.AcknowledgeAccept), ack(8, 9, transport.AcknowledgeAccept))
	require.NoError(t, pr.AcknowledgeErr)

	// 10 and 11 are delivered to a, which neither acknowledges them nor
	// gives them back: the node restarts. The share partition's state
	// comes back from __share_group_state — the start offset past the
	// acknowledged records, 10 and 11 delivered once already — so a new
	// member gets exactly 10 and 11 again (delivery count 2), and 12.
	require.NoError(t, produce(t, n, "jobs", 0, "job-10", "job-11").Err)
	got, _ = a.fetch(ctx, id, time.Second)
	require.Equal(t, []fetched{{10, "job-10", 1}, {11, "job-11", 1}}, got)
	require.NoError(t, n.Close())
	n, err = partlog.Open(dir, opts...)
	require.NoError(t, err)
	defer n.Close()
	addr = serveWith(t, n.Client(), transport.ServerOptions{})
	require.NoError(t, produce(t, n, "jobs", 0, "job-12").Err)
	c := newShareMember(t, addr, "workers", "member-c")
	c.join(ctx, "jobs")
	got, _ = c.fetch(ctx, id, time.Second)
	require.Equal(t, []fetched{{10, "job-10", 2}, {11, "job-11", 2}, {12, "job-12", 1}}, got,
		"the share partition's state came back from __share_group_state")
}

// TestClusterShareGroupLeaderChange: a share partition's state survives a
// change of the topic partition's leader. On a three-node cluster a
// member acquires ten records from the leader of jobs-0 and accepts five;
// the leader is halted; at the new leader another member gets exactly the
// other five, delivered once already (their delivery count is 2), never
// the accepted ones.
func TestClusterShareGroupLeaderChange(t *testing.T) {
	c := newSteadyTCPCluster(t)
	for _, id := range []int32{1, 2, 3} {
		c.dirs[id] = t.TempDir()
		c.startGroupNode(id, "127.0.0.1:0")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 1, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}}))
	var leader int32
	c.waitFor("jobs-0 fully replicated", func(s controller.ClusterState) bool {
		p := s.Topics["jobs"].Partitions[0]
		leader = p.Leader
		return len(p.ISR) == 3
	})
	md, err := c.nodes[leader].Client().Metadata(ctx, &transport.MetadataRequest{Topics: []string{"jobs"}})
	require.NoError(t, err)
	id := md.Topics[0].TopicID

	a := newShareMember(t, c.addrs[leader], "workers", "member-a")
	got, _ := a.fetch(ctx, id, 0)
	require.Empty(t, got)
	for i := range 10 {
		resp, err := c.nodes[leader].Client().Produce(ctx, &transport.ProduceRequest{Acks: -1, Topics: []transport.ProduceTopic{{Topic: "jobs",
			Partitions: []transport.ProducePartition{{Partition: 0, Records: batchOf(fmt.Sprintf("job-%d", i))}}}}})
		require.NoError(t, err)
		require.NoError(t, resp.Topics[0].Partitions[0].Err)
	}
	got, _ = a.fetch(ctx, id, time.Second)
	require.Len(t, got, 10)
	_, pr := a.fetch(ctx, id, 0, ack(0, 4, transport.AcknowledgeAccept))
	require.NoError(t, pr.AcknowledgeErr)

	c.halt(leader)
	var next int32
	c.waitFor("a new leader of jobs-0", func(s controller.ClusterState) bool {
		next = s.Topics["jobs"].Partitions[0].Leader
		return next != leader && next != replica.NoLeader
	})
	b := newShareMember(t, c.addrs[next], "workers", "member-b")
	var all []fetched
	for len(all) < 5 {
		got, _ := b.fetch(ctx, id, time.Second)
		all = append(all, got...)
		require.NoError(t, ctx.Err())
	}
	require.Equal(t, []fetched{{5, "job-5", 2}, {6, "job-6", 2}, {7, "job-7", 2}, {8, "job-8", 2}, {9, "job-9", 2}}, all)
}

// TestShareGroupReadCommitted: a share group whose share.isolation.level
// is read_committed (a group config) is never delivered the records of an
// aborted transaction, nor those of one still open, and gets a committed
// transaction's records once it commits; share.auto.offset.reset=earliest
// starts it at the log start. The same records go to a read_uncommitted
// group, aborted ones included (the negative control).
func TestShareGroupReadCommitted(t *testing.T) {
	n, err := partlog.Open(t.TempDir(), partlog.OffsetsTopicPartitions(3), partlog.ShareStateTopicPartitions(3))
	require.NoError(t, err)
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 1}))
	addr := serveWith(t, n.Client(), transport.ServerOptions{})
	for group, level := range map[string]string{"committed": "read_committed", "uncommitted": "read_uncommitted"} {
		resp, err := n.Client().AlterConfigs(ctx, &transport.AlterConfigsRequest{Resources: []transport.ConfigAlteration{{
			ConfigResource: transport.ConfigResource{Type: transport.ConfigGroup, Name: group},
			Changes: []transport.ConfigChange{{Name: controller.GroupShareIsolationLevel, Value: level},
				{Name: controller.GroupShareAutoOffsetReset, Value: "earliest"}}}}})
		require.NoError(t, err)
		require.NoError(t, resp.Resources[0].Err)
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("jobs"))
	require.NoError(t, err)
	defer txn.Close()
	transaction := func(commit kgo.TransactionEndTry, values ...string) {
		require.NoError(t, txn.BeginTransaction())
		for _, v := range values {
			require.NoError(t, txn.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr())
		}
		require.NoError(t, txn.EndTransaction(ctx, commit))
	}
	require.NoError(t, produce(t, n, "jobs", 0, "plain-1").Err)
	transaction(kgo.TryAbort, "aborted-1", "aborted-2")
	transaction(kgo.TryCommit, "committed-1")
	require.NoError(t, produce(t, n, "jobs", 0, "plain-2").Err)
	require.NoError(t, txn.BeginTransaction())
	require.NoError(t, txn.ProduceSync(ctx, kgo.StringRecord("open-1")).FirstErr()) // still open

	read := func(group string) []string {
		m := newShareMember(t, addr, group, "m-"+group)
		id := m.join(ctx, "jobs")[0].TopicID
		var values []string
		for range 3 {
			got, _ := m.fetch(ctx, id, 200*time.Millisecond)
			for _, f := range got {
				values = append(values, f.value)
			}
		}
		return values
	}
	require.Equal(t, []string{"plain-1", "committed-1", "plain-2"}, read("committed"),
		"no aborted record, and nothing past the open transaction")
	require.Equal(t, []string{"plain-1", "aborted-1", "aborted-2", "committed-1", "plain-2", "open-1"}, read("uncommitted"))
}

// TestClusterShareOffsetsAlteredElsewhere: AlterShareGroupOffsets runs at
// the group's coordinator, and the partition's leader — another node —
// holds the share partition with everything delivered and nothing in
// flight: a member opening a share session there afterwards gets the
// records from the new start offset, the leader having read the state
// again rather than serve its own.
func TestClusterShareOffsetsAlteredElsewhere(t *testing.T) {
	c := newSteadyTCPCluster(t)
	for _, id := range []int32{1, 2, 3} {
		c.dirs[id] = t.TempDir()
		c.startGroupNode(id, "127.0.0.1:0")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 1, ReplicationFactor: 3}))
	var leader int32
	c.waitFor("jobs-0 fully replicated", func(s controller.ClusterState) bool {
		p := s.Topics["jobs"].Partitions[0]
		leader = p.Leader
		return len(p.ISR) == 3
	})
	// A group whose coordinator is not the partition's leader.
	group, coordinator := "", int32(-1)
	for i := 0; coordinator < 0 || coordinator == leader; i++ {
		group = fmt.Sprintf("workers-%d", i)
		fc, err := c.nodes[leader].Client().FindCoordinator(ctx, &transport.FindCoordinatorRequest{Key: group, KeyType: transport.CoordinatorGroup})
		require.NoError(t, err)
		require.NoError(t, fc.Err)
		coordinator = fc.NodeID
	}
	md, err := c.nodes[leader].Client().Metadata(ctx, &transport.MetadataRequest{Topics: []string{"jobs"}})
	require.NoError(t, err)
	id := md.Topics[0].TopicID

	a := newShareMember(t, c.addrs[leader], group, "member-a")
	got, _ := a.fetch(ctx, id, 0)
	require.Empty(t, got)
	for i := range 10 {
		resp, err := c.nodes[leader].Client().Produce(ctx, &transport.ProduceRequest{Acks: -1, Topics: []transport.ProduceTopic{{Topic: "jobs",
			Partitions: []transport.ProducePartition{{Partition: 0, Records: batchOf(fmt.Sprintf("job-%d", i))}}}}})
		require.NoError(t, err)
		require.NoError(t, resp.Topics[0].Partitions[0].Err)
	}
	got, _ = a.fetch(ctx, id, time.Second)
	require.Len(t, got, 10)
	_, pr := a.fetch(ctx, id, 0, ack(0, 9, transport.AcknowledgeAccept))
	require.NoError(t, pr.AcknowledgeErr)

	alter, err := c.nodes[coordinator].Client().AlterShareGroupOffsets(ctx, &transport.AlterShareGroupOffsetsRequest{Group: group,
		Topics: []transport.AlterShareGroupOffsetsTopic{{Topic: "jobs", Partitions: []transport.AlterShareGroupOffsetsPartition{{Partition: 0, StartOffset: 7}}}}})
	require.NoError(t, err)
	require.NoError(t, alter.Err)
	require.NoError(t, alter.Topics[0].Partitions[0].Err)

	b := newShareMember(t, c.addrs[leader], group, "member-b")
	got, _ = b.fetch(ctx, id, time.Second)
	require.Equal(t, []fetched{{7, "job-7", 1}, {8, "job-8", 1}, {9, "job-9", 1}}, got, "the leader serves the start offset set at the coordinator")
}

// TestShareFetchWakesForFreedRecords: a member long-polling for records
// is answered when another member's records become available again — their
// lock expiring (3 s here), or the other member releasing them — not at
// the end of its MaxWait (10 s), nor, for a release, when the lock would
// have expired.
func TestShareFetchWakesForFreedRecords(t *testing.T) {
	n, err := partlog.Open(t.TempDir(), partlog.OffsetsTopicPartitions(3), partlog.ShareStateTopicPartitions(3),
		partlog.ShareRecordLockDuration(3*time.Second))
	require.NoError(t, err)
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 1}))
	addr := serveWith(t, n.Client(), transport.ServerOptions{})
	a, b := newShareMember(t, addr, "workers", "member-a"), newShareMember(t, addr, "workers", "member-b")
	id := a.join(ctx, "jobs")[0].TopicID
	a.fetch(ctx, id, 0)
	b.fetch(ctx, id, 0)
	require.NoError(t, produce(t, n, "jobs", 0, "x", "y").Err)

	waitFor := func(what string) []fetched {
		t.Helper()
		began := time.Now()
		got, _ := b.fetch(ctx, id, 10*time.Second)
		require.Less(t, time.Since(began), 7*time.Second, "b waited out its MaxWait: %s did not wake it", what)
		return got
	}
	got, _ := a.fetch(ctx, id, time.Second)
	require.Len(t, got, 2)
	require.Equal(t, []fetched{{0, "x", 2}, {1, "y", 2}}, waitFor("a's locks expiring"))

	// b now holds them; b gives them back while a waits.
	done := make(chan []fetched, 1)
	go func() {
		began := time.Now()
		got, _ := a.fetch(ctx, id, 10*time.Second)
		if time.Since(began) >= 2*time.Second {
			got = nil // woken by b's lock expiring, not by its release
		}
		done <- got
	}()
	time.Sleep(50 * time.Millisecond) // a is waiting (the release below would otherwise simply come first)
	require.NoError(t, b.acknowledge(ctx, id, ack(0, 1, transport.AcknowledgeRelease)))
	require.Equal(t, []fetched{{0, "x", 3}, {1, "y", 3}}, <-done, "b's release woke a")
}
