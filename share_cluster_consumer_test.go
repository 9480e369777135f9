package partlog_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// shareCrew runs share consumers of one group, each over a ClusterClient
// of its own and polling in a goroutine, and keeps a ledger of what they
// did with the records of the topic, "partition/offset" keyed.
type shareCrew struct {
	t       *testing.T
	members map[string]*consumer.ShareConsumer
	stopped chan struct{}
	wg      sync.WaitGroup

	mu sync.Mutex
	// produced are the records acknowledged by the producer, with their
	// values.
	produced map[string]string
	// delivered lists the members each record was delivered to;
	// confirmed counts the acceptances the nodes confirmed.
	delivered map[string][]string
	confirmed map[string]int
	// afterAccept are records delivered after their acceptance was
	// confirmed; wrong those read back with another value.
	afterAccept, wrong []string
	// more has a value when an acceptance is confirmed.
	more chan struct{}
}

// newShareCrew starts members names of group over ClusterClients of
// seeds, subscribed to topic.
func newShareCrew(t *testing.T, ctx context.Context, seeds []string, group, topic string, names ...string) *shareCrew {
	c := &shareCrew{t: t, members: map[string]*consumer.ShareConsumer{}, stopped: make(chan struct{}),
		produced: map[string]string{}, delivered: map[string][]string{}, confirmed: map[string]int{}, more: make(chan struct{}, 1)}
	for _, name := range names {
		cl, err := transport.DialCluster(ctx, seeds, transport.DialOptions{ClientID: name})
		require.NoError(t, err)
		t.Cleanup(func() { cl.Close() })
		m, err := consumer.NewShare(cl, consumer.ShareGroup(group), consumer.Topics(topic),
			consumer.FetchMaxWait(50*time.Millisecond), consumer.MaxPollRecords(25), consumer.RetryBackoff(20*time.Millisecond),
			consumer.OnShareAcknowledged(func(_ string, partition int32, offsets []int64, err error) {
				if err != nil {
					return // its records come back; they are checked to be accepted at last
				}
				c.mu.Lock()
				defer c.mu.Unlock()
				for _, o := range offsets {
					c.confirmed[fmt.Sprintf("%d/%d", partition, o)]++
				}
				select {
				case c.more <- struct{}{}:
				default:
				}
			}))
		require.NoError(t, err)
		c.members[name] = m
		c.wg.Add(1)
		go c.poll(ctx, name, m)
	}
	return c
}

// poll polls until stop, noting each delivery.
func (c *shareCrew) poll(ctx context.Context, name string, m *consumer.ShareConsumer) {
	defer c.wg.Done()
	for {
		select {
		case <-c.stopped:
			return
		default:
		}
		recs, err := m.Poll(ctx, 50*time.Millisecond)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			continue // a leader or coordinator moving: Poll reports it, and goes on
		}
		c.mu.Lock()
		for _, r := range recs {
			k := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
			c.delivered[k] = append(c.delivered[k], name)
			if c.confirmed[k] > 0 {
				c.afterAccept = append(c.afterAccept, k)
			}
			if v, ok := c.produced[k]; ok && v != string(r.Value) {
				c.wrong = append(c.wrong, k)
			}
		}
		c.mu.Unlock()
	}
}

// produce produces values i from to to (excluded) to topic, round
// robin over partitions, with acks=all, and notes the records
// acknowledged.
func (c *shareCrew) produce(ctx context.Context, p *producer.Producer, topic string, partitions, from, to int) error {
	var recs []*producer.Record
	for i := from; i < to; i++ {
		recs = append(recs, &producer.Record{Topic: topic, Partition: int32(i % partitions), Value: fmt.Appendf(nil, "job-%d", i)})
	}
	results := p.ProduceSync(ctx, recs...)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range results {
		if r.Err == nil {
			c.produced[fmt.Sprintf("%d/%d", r.Record.Partition, r.Record.Offset)] = string(r.Record.Value)
		}
	}
	return results.FirstErr()
}

// waitAccepted waits until every record produced had its acceptance
// confirmed.
func (c *shareCrew) waitAccepted(ctx context.Context, what string) {
	c.t.Helper()
	for {
		c.mu.Lock()
		var missing []string
		for k := range c.produced {
			if c.confirmed[k] == 0 {
				missing = append(missing, k)
			}
		}
		c.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			slices.Sort(missing)
			c.t.Fatalf("%s: %d records never accepted: %v", what, len(missing), missing[:min(len(missing), 20)])
		case <-c.more:
		}
	}
}

// stop stops the members and checks the ledger: every record produced
// read back as produced and accepted exactly once, none delivered after
// its acceptance, and every member given records.
func (c *shareCrew) stop() {
	c.t.Helper()
	close(c.stopped)
	c.wg.Wait()
	for _, m := range c.members {
		m.Close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Empty(c.t, c.wrong, "records read back with another value")
	require.Empty(c.t, c.afterAccept, "records delivered again after their acceptance was confirmed")
	for k := range c.produced {
		require.Equal(c.t, 1, c.confirmed[k], "record %s: acceptances confirmed (delivered to %v)", k, c.delivered[k])
	}
	got := map[string]bool{}
	for _, ms := range c.delivered {
		for _, m := range ms {
			got[m] = true
		}
	}
	require.Len(c.t, got, len(c.members), "every member got records")
}

// startShareCluster starts a three-node cluster with topic jobs of
// partitions partitions (replication factor 3, min.insync.replicas 2),
// share group "workers" starting at the log start, and a producer over a
// ClusterClient; it returns the cluster, the leader of each partition,
// the nodes' addresses and the producer.
func startShareCluster(t *testing.T, ctx context.Context, partitions int32) (*tcpCluster, map[int32]int32, []string, *producer.Producer) {
	c := newSteadyTCPCluster(t)
	for _, id := range []int32{1, 2, 3} {
		c.dirs[id] = t.TempDir()
		c.startGroupNode(id, "127.0.0.1:0")
	}
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: partitions, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}}))
	leaders := map[int32]int32{}
	c.waitFor("jobs fully replicated", func(s controller.ClusterState) bool {
		for p, ps := range s.Topics["jobs"].Partitions {
			leaders[int32(p)] = ps.Leader
			if len(ps.ISR) != 3 {
				return false
			}
		}
		return len(s.Topics["jobs"].Partitions) == int(partitions)
	})
	resp, err := c.nodes[1].Client().AlterConfigs(ctx, &transport.AlterConfigsRequest{Resources: []transport.ConfigAlteration{{
		ConfigResource: transport.ConfigResource{Type: transport.ConfigGroup, Name: "workers"},
		Changes:        []transport.ConfigChange{{Name: controller.GroupShareAutoOffsetReset, Value: "earliest"}}}}})
	require.NoError(t, err)
	require.NoError(t, resp.Resources[0].Err)
	seeds := []string{c.addrs[1], c.addrs[2], c.addrs[3]}
	pc, err := transport.DialCluster(ctx, seeds, transport.DialOptions{ClientID: "producer"})
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	p, err := producer.New(pc, producer.Linger(time.Millisecond), producer.RetryBackoff(20*time.Millisecond),
		producer.RequestTimeout(5*time.Second), producer.DeliveryTimeout(time.Minute))
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return c, leaders, seeds, p
}

// TestClusterShareConsumers runs two of partlog's share consumers, each
// over a ClusterClient of its own, on a topic of three partitions whose
// leaders are three different nodes: each consumer keeps a share session
// with every leader. Every record produced is delivered and its
// acceptance confirmed exactly once, byte for byte; then the leader of
// one partition is halted mid-stream, the partition moves to a new leader
// and the consumers follow it there: the records produced after (acks=all)
// are delivered too, and no record whose acceptance was confirmed is ever
// delivered again.
func TestClusterShareConsumers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, leaders, seeds, p := startShareCluster(t, ctx, 3)
	require.ElementsMatch(t, []int32{1, 2, 3}, []int32{leaders[0], leaders[1], leaders[2]}, "each partition led by another node")
	crew := newShareCrew(t, ctx, seeds, "workers", "jobs", "a", "b")
	require.NoError(t, crew.produce(ctx, p, "jobs", 3, 0, 150))
	crew.waitAccepted(ctx, "before the leader change")

	// The leader of partition 0 is halted while records are produced.
	producedAll := make(chan error, 1)
	go func() { producedAll <- crew.produce(ctx, p, "jobs", 3, 150, 300) }()
	old := leaders[0]
	c.halt(old)
	c.waitFor("a new leader of jobs-0", func(s controller.ClusterState) bool {
		l := s.Topics["jobs"].Partitions[0].Leader
		return l != old && l != replica.NoLeader
	})
	require.NoError(t, <-producedAll, "acks=all through the leader change")
	crew.mu.Lock()
	require.Len(t, crew.produced, 300)
	crew.mu.Unlock()
	crew.waitAccepted(ctx, "after the leader change")
	crew.stop()
}

// TestClusterShareCoordinatorFailover halts the coordinator of a share
// group whose two members (partlog's share consumers over ClusterClients)
// are reading: the new coordinator describes the group as the old one did
// — its epochs, members, member epochs and assignments — the members go
// on without rejoining, and every record is accepted exactly once, none
// delivered again after its acceptance.
func TestClusterShareCoordinatorFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, _, seeds, p := startShareCluster(t, ctx, 2)
	crew := newShareCrew(t, ctx, seeds, "workers", "jobs", "a", "b")
	require.NoError(t, crew.produce(ctx, p, "jobs", 2, 0, 100))
	crew.waitAccepted(ctx, "before the failover")

	admin, err := transport.DialCluster(ctx, seeds, transport.DialOptions{ClientID: "admin"})
	require.NoError(t, err)
	defer admin.Close()
	describe := func() transport.ShareGroupDescription {
		t.Helper()
		for {
			d, err := admin.ShareGroupDescribe(ctx, &transport.ShareGroupDescribeRequest{Groups: []string{"workers"}})
			if err == nil && d.Groups[0].Err == nil && len(d.Groups[0].Members) == 2 {
				g := d.Groups[0]
				for i := range g.Members {
					g.Members[i].ClientHost = "" // the address the member's connection comes from
				}
				slices.SortFunc(g.Members, func(a, b transport.ShareGroupMemberDescription) int {
					return strings.Compare(a.MemberID, b.MemberID)
				})
				return g
			}
			require.NoError(t, ctx.Err(), "the group was never described with its two members: %v %+v", err, d)
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond): // the new coordinator loads the group
			}
		}
	}
	before := describe()
	require.Equal(t, "Stable", before.State)
	fc, err := admin.FindCoordinator(ctx, &transport.FindCoordinatorRequest{Key: "workers", KeyType: transport.CoordinatorGroup})
	require.NoError(t, err)
	require.NoError(t, fc.Err)
	coordinator := fc.NodeID
	c.halt(coordinator)
	c.waitFor("the group coordinator's partition led elsewhere", func(s controller.ClusterState) bool {
		for _, ps := range s.Topics["__consumer_offsets"].Partitions {
			if ps.Leader == coordinator {
				return false
			}
		}
		return true
	})
	require.NoError(t, crew.produce(ctx, p, "jobs", 2, 100, 200))
	crew.waitAccepted(ctx, "after the failover")
	after := describe()
	require.Equal(t, before, after, "the group as the new coordinator describes it")
	crew.stop()
}
