package partlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/transport"
)

// TestConsumerGroupProtocol runs franz-go's KIP-848 consumers
// (kgo.ServerSideBalancer) against a served node: the coordinator assigns
// the partitions. One member reads everything; a second joins and the
// partitions are shared, every record read by the group, each once per
// member that owned its partition at the time; commits go through with
// member epochs, and a new member of the group after both left starts at
// the committed offsets, reading nothing twice.
func TestConsumerGroupProtocol(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := partlog.Open(t.TempDir(), partlog.GroupConsumerHeartbeatInterval(100*time.Millisecond))
	require.NoError(t, err)
	defer n.Close()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 4}))
	addr := serveWith(t, n.Client(), transport.ServerOptions{})

	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("jobs"))
	require.NoError(t, err)
	defer producer.Close()
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "job-%d", i)}).FirstErr())
		}
	}
	member := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("workers"), kgo.ConsumeTopics("jobs"),
			kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
		require.NoError(t, err)
		return cl
	}
	seen := map[string]int{}
	read := func(cl *kgo.Client, want int) {
		for got := 0; got < want; {
			fs := cl.PollFetches(ctx)
			require.NoError(t, fs.Err0())
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; got++ })
		}
	}

	produce(0, 100)
	a := member()
	read(a, 100)
	require.NoError(t, a.CommitUncommittedOffsets(ctx))

	b := member()
	produce(100, 200)
	// Both poll until the group has read the new records; each partition is
	// the one member's at a time.
	deadline := time.Now().Add(time.Minute)
	for len(seen) < 200 && time.Now().Before(deadline) {
		for _, cl := range []*kgo.Client{a, b} {
			pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
			fs := cl.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		}
	}
	require.Len(t, seen, 200, "the group read every record")
	memberB, epochB := b.GroupMetadata()
	require.NotEmpty(t, memberB, "b joined")
	require.Positive(t, epochB)
	// The coordinator moves two partitions from a to b once a revoked
	// them: ConsumerGroupDescribe shows them shared, the group Stable.
	shared := func() bool {
		d, err := n.Client().ConsumerGroupDescribe(ctx, &transport.ConsumerGroupDescribeRequest{Groups: []string{"workers"}})
		require.NoError(t, err)
		require.NoError(t, d.Groups[0].Err)
		if d.Groups[0].State != "Stable" || len(d.Groups[0].Members) != 2 {
			return false
		}
		for _, m := range d.Groups[0].Members {
			if len(m.Assignment) != 1 || len(m.Assignment[0].Partitions) != 2 {
				return false
			}
		}
		return true
	}
	for !shared() {
		for _, cl := range []*kgo.Client{a, b} {
			pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
			cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
			pcancel()
		}
		require.NoError(t, ctx.Err(), "the partitions were never shared")
	}
	require.NoError(t, a.CommitUncommittedOffsets(ctx))
	require.NoError(t, b.CommitUncommittedOffsets(ctx))
	a.Close()
	b.Close()

	produce(200, 210)
	c := member()
	defer c.Close()
	before := len(seen)
	read(c, 10)
	require.Equal(t, before+10, len(seen), "the new member starts at the committed offsets")
	for v, count := range seen {
		require.Equal(t, 1, count, "%s read %d times", v, count)
	}
}

// TestClusterConsumerGroupProtocolFailover: a KIP-848 group of two
// franz-go members on a three-node cluster, its coordinator SIGKILLed
// (halted): the node that takes over the group's partition of
// __consumer_offsets loads the group from its replica — the same members,
// epochs and assignments — the members go on at it without a rebalance,
// and every record is read, the committed offsets kept.
func TestClusterConsumerGroupProtocolFailover(t *testing.T) {
	c, ctx, seeds, produce := newFailoverCluster(t)
	client, err := transport.DialCluster(ctx, seeds, transport.DialOptions{})
	require.NoError(t, err)
	defer client.Close()
	var members []*kgo.Client
	for range 2 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("workers"), kgo.ConsumeTopics("jobs"),
			kgo.ServerSideBalancer(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
		require.NoError(t, err)
		defer cl.Close()
		members = append(members, cl)
	}
	seen := map[string]int{}
	pollUntil := func(what string, done func() bool) {
		t.Helper()
		for !done() {
			for _, cl := range members {
				pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
				cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
				pcancel()
				require.NoError(t, cl.CommitUncommittedOffsets(ctx))
			}
			require.NoError(t, ctx.Err(), "never: %s", what)
		}
	}
	// describe asks the group's coordinator, wherever it is now.
	describe := func() transport.ConsumerGroupDescription {
		fc, err := client.FindCoordinator(ctx, &transport.FindCoordinatorRequest{Key: "workers", KeyType: transport.CoordinatorGroup})
		if err == nil {
			err = fc.Err
		}
		if err != nil {
			return transport.ConsumerGroupDescription{Err: err}
		}
		node, err := transport.Dial(ctx, c.addrs[fc.NodeID], transport.DialOptions{})
		if err != nil {
			return transport.ConsumerGroupDescription{Err: err}
		}
		defer node.Close()
		resp, err := node.ConsumerGroupDescribe(ctx, &transport.ConsumerGroupDescribeRequest{Groups: []string{"workers"}})
		if err != nil {
			return transport.ConsumerGroupDescription{Err: err}
		}
		return resp.Groups[0]
	}
	shared := func() bool {
		d := describe()
		if d.Err != nil || d.State != "Stable" || len(d.Members) != 2 {
			return false
		}
		for _, m := range d.Members {
			if len(m.Assignment) != 1 || len(m.Assignment[0].Partitions) != 2 {
				return false
			}
		}
		return true
	}

	coordinatorFailover(t, c, client, produce, pollUntil, describe, shared, seen)
}

// newFailoverCluster starts three nodes hosting groups, with topic "jobs"
// of four partitions (RF 3, min.insync.replicas 2), and returns them, a
// context for the test, the nodes' addresses, and produce, which writes
// records "job-<from>" to "job-<to-1>" with franz-go, acks=all.
func newFailoverCluster(t *testing.T) (c *tcpCluster, ctx context.Context, seeds []string, produce func(from, to int)) {
	t.Helper()
	c = newTCPCluster(t)
	for _, id := range []int32{1, 2, 3} {
		c.dirs[id] = t.TempDir()
		c.startGroupNode(id, "127.0.0.1:0")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: 4, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}}))
	seeds = []string{c.addrs[1], c.addrs[2], c.addrs[3]}
	producer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("jobs"))
	require.NoError(t, err)
	t.Cleanup(producer.Close)
	produce = func(from, to int) {
		for i := from; i < to; i++ {
			require.NoError(t, producer.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "job-%d", i)}).FirstErr())
		}
	}
	return c, ctx, seeds, produce
}

// coordinatorFailover runs the failover both KIP-848 cluster tests share:
// 200 records read with the partitions shared, the group's coordinator
// halted, the new one describing the same epoch, members and assignments,
// then 100 more records, and every record read exactly once. pollUntil
// polls the members (counting records in seen) until its condition holds.
func coordinatorFailover(t *testing.T, c *tcpCluster, client transport.GroupClient, produce func(from, to int),
	pollUntil func(what string, done func() bool), describe func() transport.ConsumerGroupDescription, shared func() bool, seen map[string]int) {
	t.Helper()
	produce(0, 200)
	pollUntil("200 records read, the partitions shared", func() bool { return len(seen) == 200 && shared() })
	before := describe()

	old := coordinatorOf(t, client, "workers")
	c.haltCoordinator(old, group.PartitionFor("workers", groupClusterOffsetsPartitions))
	var after transport.ConsumerGroupDescription
	pollUntil("the new coordinator describes the group", func() bool {
		after = describe()
		return after.Err == nil
	})
	require.NotEqual(t, old, coordinatorOf(t, client, "workers"))
	require.Equal(t, before.Epoch, after.Epoch, "the group epoch survives the failover")
	require.ElementsMatch(t, memberAssignments(before), memberAssignments(after), "the same members with the same partitions")

	produce(200, 300)
	pollUntil("every record read after the failover", func() bool { return len(seen) == 300 })
	for v, n := range seen {
		require.Equal(t, 1, n, "%s read %d times", v, n)
	}
}

// memberAssignments lists a group's members with their epochs and
// partitions, for comparing two descriptions.
func memberAssignments(d transport.ConsumerGroupDescription) []string {
	var out []string
	for _, m := range d.Members {
		out = append(out, fmt.Sprintf("%s@%d:%v", m.MemberID, m.MemberEpoch, m.Assignment))
	}
	return out
}
