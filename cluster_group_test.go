package partlog_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// groupClusterOffsetsPartitions is the partitions of __consumer_offsets in
// these tests: few, so that nodes load them fast.
const groupClusterOffsetsPartitions = 3

// startGroupNode opens node id of c (again) as testCluster.start does, with
// a small __consumer_offsets and short group session timeouts.
func (c *testCluster) startGroupNode(id int32) *partlog.Node {
	c.t.Helper()
	n, err := partlog.Open(c.dirs[id], partlog.NodeID(id), partlog.JoinCluster(c.ctl, c.net),
		partlog.HeartbeatInterval(20*time.Millisecond),
		partlog.ReplicaOptions(replica.Options{TickInterval: 10 * time.Millisecond, ReplicaLagTimeMax: 500 * time.Millisecond,
			FetchWaitMax: 50 * time.Millisecond, FetchBackoff: 20 * time.Millisecond, FetchTimeout: time.Second}),
		partlog.OffsetsTopicPartitions(groupClusterOffsetsPartitions), partlog.GroupMinSessionTimeout(time.Second),
		partlog.GroupConsumerHeartbeatInterval(100*time.Millisecond))
	require.NoError(c.t, err)
	c.nodes[id] = n
	return n
}

// newGroupCluster is newTestCluster with nodes from startGroupNode.
func newGroupCluster(t *testing.T, ids ...int32) *testCluster {
	c := newTestCluster(t)
	for _, id := range ids {
		c.dirs[id] = t.TempDir()
		c.startGroupNode(id)
	}
	return c
}

// groupProgress is what the members of a group processed and committed,
// shared between their goroutines.
type groupProgress struct {
	mu        sync.Mutex
	seen      map[string]int    // value → times processed
	next      map[int32]int64   // partition → offset after the last record processed
	committed map[int32]int64   // partition → offset committed (acknowledged)
	want      map[int32]int64   // partition → offset to reach, once set
	reached   chan struct{}     // closed when committed reaches want
	errs      []error           // what went wrong in the members
	owners    map[int32][]int32 // partition → members that processed it, in turn
}

func newGroupProgress() *groupProgress {
	return &groupProgress{seen: map[string]int{}, next: map[int32]int64{}, committed: map[int32]int64{}, owners: map[int32][]int32{}}
}

// expect sets the offsets to reach and returns a channel closed once every
// partition's committed offset has reached them.
func (g *groupProgress) expect(want map[int32]int64) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.want, g.reached = want, make(chan struct{})
	g.checkLocked()
	return g.reached
}

func (g *groupProgress) checkLocked() {
	if g.want == nil {
		return
	}
	for p, off := range g.want {
		if g.committed[p] < off {
			return
		}
	}
	close(g.reached)
	g.want = nil
}

func (g *groupProgress) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.errs = append(g.errs, err)
}

// process takes one record, which must come right after the last one of
// its partition.
func (g *groupProgress) process(member int32, r *consumer.Record) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if next, ok := g.next[r.Partition]; ok && r.Offset != next {
		g.errs = append(g.errs, fmt.Errorf("member %d: partition %d: offset %d after %d", member, r.Partition, r.Offset, next))
	}
	g.seen[string(r.Value)]++
	g.next[r.Partition] = r.Offset + 1
	if o := g.owners[r.Partition]; len(o) == 0 || o[len(o)-1] != member {
		g.owners[r.Partition] = append(o, member)
	}
}

// positions returns the offsets to commit for tps, a member's
// partitions: after the last record processed. (A member commits only its
// own: a commit of another's partition could land after that member's
// later one, and take the committed offset back.)
func (g *groupProgress) positions(tps []kafka.TopicPartition) map[kafka.TopicPartition]consumer.CommittedOffset {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[kafka.TopicPartition]consumer.CommittedOffset{}
	for _, tp := range tps {
		if next, ok := g.next[tp.Partition]; ok {
			out[tp] = consumer.CommittedOffset{Offset: next, LeaderEpoch: -1}
		}
	}
	return out
}

// acked notes offsets the coordinator acknowledged.
func (g *groupProgress) acked(offsets map[kafka.TopicPartition]consumer.CommittedOffset) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for tp, o := range offsets {
		g.committed[tp.Partition] = max(g.committed[tp.Partition], o.Offset)
	}
	g.checkLocked()
}

// runGroupMember polls and commits what it processed of its partitions
// after each poll until stop closes; it commits what it processed of the
// partitions it gives up before it gives them up.
func runGroupMember(ctx context.Context, t *testing.T, client transport.Client, id int32, topic string, g *groupProgress, stop <-chan struct{}, settled chan<- struct{}) {
	commit := func(ctx context.Context, m *consumer.Consumer, tps []kafka.TopicPartition) error {
		offsets := g.positions(tps)
		if len(offsets) == 0 {
			return nil
		}
		err := m.CommitOffsets(ctx, offsets)
		if err == nil {
			g.acked(offsets)
		}
		return err
	}
	signal := func(context.Context, *consumer.Consumer, []kafka.TopicPartition) {
		select {
		case settled <- struct{}{}:
		default:
		}
	}
	m, err := consumer.New(client, consumer.Group("cg"), consumer.Topics(topic), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.DisableAutoCommit(), consumer.SessionTimeout(6*time.Second), consumer.HeartbeatInterval(100*time.Millisecond),
		consumer.RetryBackoff(20*time.Millisecond), consumer.RetryBackoffMax(200*time.Millisecond),
		consumer.OnPartitionsAssigned(signal),
		consumer.OnPartitionsRevoked(func(ctx context.Context, m *consumer.Consumer, tps []kafka.TopicPartition) {
			if err := commit(ctx, m, tps); err != nil {
				g.fail(fmt.Errorf("member %d: commit on revoke: %w", id, err))
			}
			signal(ctx, m, tps)
		}),
		consumer.OnPartitionsLost(func(ctx context.Context, m *consumer.Consumer, tps []kafka.TopicPartition) {
			g.fail(fmt.Errorf("member %d: lost %v", id, tps))
		}))
	require.NoError(t, err)
	defer m.Close()
	for {
		select {
		case <-stop:
			return
		default:
		}
		fs, err := m.Poll(ctx, 50*time.Millisecond)
		if err != nil {
			if ctx.Err() == nil {
				g.fail(fmt.Errorf("member %d: poll: %w", id, err))
			}
			return
		}
		fs.EachRecord(func(r *consumer.Record) { g.process(id, r) })
		// A commit the coordinator's move made fail is made again after
		// the next poll, with the offsets processed by then.
		if err := commit(ctx, m, m.Assignment()); err != nil && !kafka.IsRetriable(err) && ctx.Err() == nil {
			g.fail(fmt.Errorf("member %d: commit: %w", id, err))
		}
	}
}

// coordinatorOf asks the cluster which node coordinates a group.
func coordinatorOf(t *testing.T, client transport.GroupClient, groupID string) int32 {
	t.Helper()
	resp, err := client.FindCoordinator(context.Background(), &transport.FindCoordinatorRequest{Key: groupID, KeyType: transport.CoordinatorGroup})
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	return resp.NodeID
}

// committedOffsets returns a group's committed offsets of topic, by
// partition, through client.
func committedOffsets(t *testing.T, client transport.GroupClient, groupID, topic string) map[int32]int64 {
	t.Helper()
	resp, err := client.OffsetFetch(context.Background(), &transport.OffsetFetchRequest{Group: groupID})
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	out := map[int32]int64{}
	for _, tr := range resp.Topics {
		require.Equal(t, topic, tr.Topic)
		for _, pr := range tr.Partitions {
			require.NoError(t, pr.Err)
			out[pr.Partition] = pr.Offset
		}
	}
	return out
}

// endOffsets returns how many records each partition of acked holds.
func endOffsets(acked map[int32][]string, partitions int32) map[int32]int64 {
	out := map[int32]int64{}
	for p := range partitions {
		out[p] = int64(len(acked[p]))
	}
	return out
}

// groupFailover is how testClusterGroupFailover takes the coordinator
// down: crash (Halt) rather than Close, and whether a third member joins
// the group meanwhile, which makes it rebalance at the new coordinator.
type groupFailover struct {
	crash, join bool
}

// testClusterGroupFailover runs a group of two consumers over the
// cluster's client on a topic of three replicas, with commits after every
// poll and on revoke; takes the group's coordinator down half way as f
// says; and checks that the group goes on with a new coordinator from the
// committed offsets, processing every record exactly once, and that the
// committed offsets are the log end offsets.
func testClusterGroupFailover(t *testing.T, f groupFailover) {
	c := newGroupCluster(t, 1, 2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic, parts = "events", 4
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: topic, Partitions: parts, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}}))
	client, err := c.net.Client(ctx)
	require.NoError(t, err)
	defer client.Close()

	g := newGroupProgress()
	stop := make(chan struct{})
	settled := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for id := range int32(2) {
		wg.Go(func() { runGroupMember(ctx, t, client, id, topic, g, stop, settled) })
	}
	var stopOnce sync.Once
	stopMembers := func() {
		stopOnce.Do(func() { close(stop) })
		wg.Wait()
	}
	defer stopMembers()

	// __consumer_offsets was made through the controller on the first
	// FindCoordinator, replicated as the cluster allows.
	c.waitFor("__consumer_offsets", func(s controller.ClusterState) bool {
		_, ok := s.Topics[group.OffsetsTopic]
		return ok
	})
	offs := c.ctl.State().Topics[group.OffsetsTopic]
	require.Len(t, offs.Partitions, groupClusterOffsetsPartitions)
	for _, p := range offs.Partitions {
		require.Len(t, p.Replicas, 3)
	}
	old := coordinatorOf(t, client, "cg")
	p := group.PartitionFor("cg", groupClusterOffsetsPartitions)
	require.Equal(t, c.leader(group.OffsetsTopic, p), old, "the coordinator is the leader of the group's partition")

	// Both members own partitions before anything is produced.
	awaitStableGroup(ctx, t, client, "cg", 2, settled)

	acked := produceValues(t, client, topic, clusterValues(0, 300))
	select {
	case <-g.expect(endOffsets(acked, parts)):
	case <-ctx.Done():
		t.Fatalf("the first records were never committed: %v", g.errs)
	}
	require.Equal(t, endOffsets(acked, parts), committedOffsets(t, client, "cg", topic))

	// The coordinator goes down; the group finds the next one.
	var down time.Time
	if f.crash {
		// A clean election needs another replica in the ISR: on a loaded
		// machine a follower may have fallen out of it for a while.
		c.waitFor("the full ISR of the group's partition", func(s controller.ClusterState) bool {
			return len(s.Topics[group.OffsetsTopic].Partitions[p].ISR) == 3
		})
		down = time.Now()
		require.NoError(t, partlogtest.Halt(c.nodes[old]))
		delete(c.nodes, old)
	} else {
		down = time.Now()
		c.stop(old)
	}
	if f.join {
		wg.Go(func() { runGroupMember(ctx, t, client, 2, topic, g, stop, settled) })
	}
	c.waitFor("a new leader of the group's partition", func(s controller.ClusterState) bool {
		l := s.Topics[group.OffsetsTopic].Partitions[p].Leader
		return l != old && l != replica.NoLeader
	})
	// The new coordinator loaded the group's commits from its replica.
	require.Equal(t, endOffsets(acked, parts), fetchCommittedRetrying(ctx, t, client, "cg", topic))
	t.Logf("coordinator %d down to commits answered by the next: %v", old, time.Since(down))
	if f.join {
		awaitGroupAssigned(ctx, t, client, "cg", 3, settled)
	}
	more := produceValues(t, client, topic, clusterValues(300, 600))
	for p, vs := range more {
		acked[p] = append(acked[p], vs...)
	}
	select {
	case <-g.expect(endOffsets(acked, parts)):
	case <-ctx.Done():
		t.Fatalf("the records after the failover were never committed: %v", g.errs)
	}

	now := coordinatorOf(t, client, "cg")
	require.NotEqual(t, old, now)
	require.Equal(t, c.leader(group.OffsetsTopic, p), now)
	require.Equal(t, endOffsets(acked, parts), committedOffsets(t, client, "cg", topic),
		"the new coordinator has every acknowledged commit")

	stopMembers()
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Empty(t, g.errs)
	require.Len(t, g.seen, 600)
	for v, n := range g.seen {
		require.Equal(t, 1, n, "record %s processed once", v)
	}
	owners := slices2set(maps.Values(g.owners))
	if !f.join {
		for p, o := range g.owners {
			require.Len(t, o, 1, "partition %d had one owner: the group did not rebalance", p)
		}
		require.Len(t, owners, 2, "both members took part")
	} else {
		require.Len(t, owners, 3, "the member that joined during the failover took partitions over")
	}

	// A new member of the group starts where the group committed: it
	// gets only what is produced now.
	m, err := consumer.New(client, consumer.Group("cg"), consumer.Topics(topic), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.SessionTimeout(6*time.Second), consumer.HeartbeatInterval(100*time.Millisecond), consumer.RetryBackoff(20*time.Millisecond))
	require.NoError(t, err)
	defer m.Close()
	last := produceValues(t, client, topic, clusterValues(600, 610))
	got := map[int32][]string{}
	n := 0
	for r, err := range m.Records(ctx) {
		require.NoError(t, err)
		got[r.Partition] = append(got[r.Partition], string(r.Value))
		if n++; n == 10 {
			break
		}
	}
	require.Equal(t, last, got)
}

func slices2set(seq func(func([]int32) bool)) map[int32]bool {
	out := map[int32]bool{}
	for o := range seq {
		for _, m := range o {
			out[m] = true
		}
	}
	return out
}

// TestClusterGroupCoordinatorShutdown: the coordinator's node closes with
// a controlled shutdown, which moves its leaderships at once.
func TestClusterGroupCoordinatorShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		testClusterGroupFailover(t, groupFailover{})
	})
}

// TestClusterGroupCoordinatorCrash: the coordinator's node crashes; the
// controller fences it after its session timeout and elects new leaders.
func TestClusterGroupCoordinatorCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		testClusterGroupFailover(t, groupFailover{crash: true})
	})
}

// TestClusterGroupRebalanceDuringFailover: a member joins while the
// coordinator crashes; the group rebalances at the new coordinator, and
// the partitions that move are committed on revoke and taken up from
// those commits, so that every record is still processed exactly once.
func TestClusterGroupRebalanceDuringFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		testClusterGroupFailover(t, groupFailover{crash: true, join: true})
	})
}

// TestClusterGroupNotCoordinator checks the answers of the nodes that are
// not a group's coordinator, and the admin calls through the cluster
// client: ListGroups merges every node's, DescribeGroups and DeleteGroups
// go to the coordinator.
func TestClusterGroupNotCoordinator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newGroupCluster(t, 1, 2, 3)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client, err := c.net.Client(ctx)
		require.NoError(t, err)
		defer client.Close()

		// Commits outside membership for groups spread over the partitions.
		groups := []string{"a", "b", "c", "d", "e", "f"}
		for i, id := range groups {
			commitRetrying(ctx, t, client, id, "t", 0, int64(i+10))
		}
		md, err := client.Metadata(ctx, &transport.MetadataRequest{Topics: []string{group.OffsetsTopic}})
		require.NoError(t, err)
		require.True(t, md.Topics[0].Internal)
		require.Len(t, md.Topics[0].Partitions, groupClusterOffsetsPartitions)
		for _, pm := range md.Topics[0].Partitions {
			require.Len(t, pm.Replicas, 3, "replicated on min(3, live nodes)")
		}
		for _, id := range groups {
			coord := coordinatorOf(t, client, id)
			for nid, n := range c.nodes {
				resp, err := n.Client().OffsetFetch(ctx, &transport.OffsetFetchRequest{Group: id})
				require.NoError(t, err)
				if nid == coord {
					require.NoError(t, resp.Err)
					continue
				}
				require.ErrorIs(t, resp.Err, kafka.ErrNotCoordinator, "node %d for group %s led by %d", nid, id, coord)
			}
		}
		lg, err := client.ListGroups(ctx, &transport.ListGroupsRequest{})
		require.NoError(t, err)
		require.NoError(t, lg.Err)
		var listed []string
		for _, g := range lg.Groups {
			listed = append(listed, g.Group)
		}
		require.Equal(t, groups, listed)

		dg, err := client.DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{"a", "zz"}})
		require.NoError(t, err)
		require.Equal(t, "Empty", dg.Groups[0].State)
		require.NoError(t, dg.Groups[0].Err)
		require.Equal(t, "Dead", dg.Groups[1].State)

		del, err := client.DeleteGroups(ctx, &transport.DeleteGroupsRequest{Groups: []string{"a", "zz"}})
		require.NoError(t, err)
		require.NoError(t, del.Results[0].Err)
		require.ErrorIs(t, del.Results[1].Err, kafka.ErrGroupIDNotFound)
		lg, err = client.ListGroups(ctx, &transport.ListGroupsRequest{})
		require.NoError(t, err)
		require.Len(t, lg.Groups, len(groups)-1)
		require.Equal(t, map[int32]int64{0: 11}, committedOffsets(t, client, "b", "t"))
	})
}

// commitRetrying commits an offset outside group membership, retrying a
// retriable answer after a backoff as a client does (the coordinator may
// be loading the group's partition, or not known yet).
func commitRetrying(ctx context.Context, t *testing.T, client transport.GroupClient, groupID, topic string, p int32, off int64) {
	t.Helper()
	for {
		resp, err := client.OffsetCommit(ctx, &transport.OffsetCommitRequest{Group: groupID, GenerationID: transport.NoGeneration,
			Topics: []transport.OffsetCommitTopic{{Topic: topic, Partitions: []transport.OffsetCommitPartition{{Partition: p, Offset: off, LeaderEpoch: -1}}}}})
		if err == nil {
			if err = resp.Topics[0].Partitions[0].Err; err == nil {
				return
			}
		}
		require.True(t, kafka.IsRetriable(err), "commit %s: %v", groupID, err)
		select {
		case <-time.After(20 * time.Millisecond): // the client's retry backoff
		case <-ctx.Done():
			t.Fatalf("commit %s never succeeded: %v", groupID, err)
		}
	}
}

// fetchCommittedRetrying is committedOffsets, retrying a retriable answer
// after a backoff as a client does.
func fetchCommittedRetrying(ctx context.Context, t *testing.T, client transport.GroupClient, groupID, topic string) map[int32]int64 {
	t.Helper()
	for {
		resp, err := client.OffsetFetch(ctx, &transport.OffsetFetchRequest{Group: groupID})
		if err == nil && resp.Err == nil {
			return committedOffsets(t, client, groupID, topic)
		}
		if err == nil {
			err = resp.Err
		}
		require.True(t, kafka.IsRetriable(err), "offset fetch %s: %v", groupID, err)
		select {
		case <-time.After(20 * time.Millisecond): // the client's retry backoff
		case <-ctx.Done():
			t.Fatalf("offset fetch %s never succeeded: %v", groupID, err)
		}
	}
}

// startGroupNode opens node id of c at addr as tcpCluster.start does, with
// a small __consumer_offsets, short group session timeouts and frequent
// consumer-protocol heartbeats.
func (c *tcpCluster) startGroupNode(id int32, addr string) {
	c.t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(c.t, err)
	n, err := partlog.Open(c.dirs[id], partlog.NodeID(id), partlog.ControllerAddress(c.ctlAddr),
		partlog.AdvertisedAddress(ln.Addr().String()), partlog.HeartbeatInterval(20*time.Millisecond),
		partlog.ReplicaOptions(replica.Options{TickInterval: 10 * time.Millisecond, ReplicaLagTimeMax: 500 * time.Millisecond,
			FetchWaitMax: 50 * time.Millisecond, FetchBackoff: 20 * time.Millisecond, FetchTimeout: time.Second}),
		partlog.OffsetsTopicPartitions(groupClusterOffsetsPartitions), partlog.GroupMinSessionTimeout(time.Second),
		partlog.GroupConsumerHeartbeatInterval(100*time.Millisecond))
	require.NoError(c.t, err)
	s := transport.NewServer(n.Client(), transport.ServerOptions{})
	go s.Serve(ln)
	c.nodes[id], c.servers[id], c.addrs[id] = n, s, ln.Addr().String()
}

// TestClusterGroupOverTCP runs the group of testClusterGroupFailover over
// TCP (transport.DialCluster): the coordinator crashes, the group goes on
// at the new coordinator with its commits, and the crashed node restarts
// at its address with its replica of __consumer_offsets kept (not
// deleted as a stray internal topic) and rejoins the partition's ISR.
func TestClusterGroupOverTCP(t *testing.T) {
	c := newTCPCluster(t)
	for _, id := range []int32{1, 2, 3} {
		c.dirs[id] = t.TempDir()
		c.startGroupNode(id, "127.0.0.1:0")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic, parts = "events", 3
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: topic, Partitions: parts, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "2"}}))
	client, err := transport.DialCluster(ctx, []string{c.addrs[1], c.addrs[2], c.addrs[3]}, transport.DialOptions{})
	require.NoError(t, err)
	defer client.Close()

	g := newGroupProgress()
	stop := make(chan struct{})
	settled := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for id := range int32(2) {
		wg.Go(func() { runGroupMember(ctx, t, client, id, topic, g, stop, settled) })
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	awaitStableGroup(ctx, t, client, "cg", 2, settled)
	acked := produceValues(t, client, topic, clusterValues(0, 200))
	select {
	case <-g.expect(endOffsets(acked, parts)):
	case <-ctx.Done():
		t.Fatalf("the first records were never committed: %v", g.errs)
	}

	old := coordinatorOf(t, client, "cg")
	p := group.PartitionFor("cg", groupClusterOffsetsPartitions)
	l, err := partlogtest.Log(c.nodes[old], group.OffsetsTopic, p)
	require.NoError(t, err)
	end := l.LogEndOffset()
	require.Positive(t, end)
	oldAddr := c.addrs[old]
	c.haltCoordinator(old, p)
	require.Equal(t, endOffsets(acked, parts), fetchCommittedRetrying(ctx, t, client, "cg", topic))
	more := produceValues(t, client, topic, clusterValues(200, 400))
	for p, vs := range more {
		acked[p] = append(acked[p], vs...)
	}
	select {
	case <-g.expect(endOffsets(acked, parts)):
	case <-ctx.Done():
		t.Fatalf("the records after the crash were never committed: %v", g.errs)
	}
	require.NotEqual(t, old, coordinatorOf(t, client, "cg"))

	// The crashed node comes back with its replica, and catches up.
	c.startGroupNode(old, oldAddr)
	l, err = partlogtest.Log(c.nodes[old], group.OffsetsTopic, p)
	require.NoError(t, err)
	require.GreaterOrEqual(t, l.LogEndOffset(), end, "the restarted node kept its replica of %s-%d", group.OffsetsTopic, p)
	c.waitFor("the old coordinator back in the ISR", func(s controller.ClusterState) bool {
		return slices.Contains(s.Topics[group.OffsetsTopic].Partitions[p].ISR, old)
	})

	g.mu.Lock()
	defer g.mu.Unlock()
	require.Empty(t, g.errs)
	require.Len(t, g.seen, 400)
	for v, n := range g.seen {
		require.Equal(t, 1, n, "record %s processed once", v)
	}
}

// haltCoordinator halts node old, the coordinator of a group in
// partition p of __consumer_offsets, once p's ISR is full, and waits until
// another node leads p.
func (c *tcpCluster) haltCoordinator(old, p int32) {
	c.t.Helper()
	c.waitFor("the full ISR of the group's partition", func(s controller.ClusterState) bool {
		return len(s.Topics[group.OffsetsTopic].Partitions[p].ISR) == 3
	})
	c.halt(old)
	c.waitFor("a new leader of the group's partition", func(s controller.ClusterState) bool {
		l := s.Topics[group.OffsetsTopic].Partitions[p].Leader
		return l != old && l != replica.NoLeader
	})
}

// awaitGroupAssigned waits until group is Stable with members members,
// each with partitions assigned; settled signals assignment changes.
func awaitGroupAssigned(ctx context.Context, t *testing.T, client transport.GroupClient, groupID string, members int, settled <-chan struct{}) {
	t.Helper()
	for {
		d, err := client.DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{groupID}})
		require.NoError(t, err)
		gd := d.Groups[0]
		if gd.Err != nil {
			// The coordinator is moving or loading: ask again after the
			// client's retry backoff.
			require.True(t, kafka.IsRetriable(gd.Err), "describe %s: %v", groupID, gd.Err)
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
				t.Fatalf("describe %s never succeeded: %v", groupID, gd.Err)
			}
			continue
		}
		assigned := 0
		for _, m := range gd.Members {
			if a, err := consumer.DecodeAssignment(m.Assignment); err == nil && len(a.Partitions) > 0 {
				assigned++
			}
		}
		if gd.State == "Stable" && len(gd.Members) == members && assigned == members {
			return
		}
		select {
		case <-settled:
		case <-ctx.Done():
			t.Fatalf("group %s never had %d members with partitions: %+v", groupID, members, gd)
		}
	}
}

// TestClusterClientGroupsOnOneNode: a ClusterClient over a node on its
// own (which names no address in FindCoordinator) sends the group calls
// to that node, known from Metadata.
func TestClusterClientGroupsOnOneNode(t *testing.T) {
	n := openNode(t, vfs.NewMem(), partlog.OffsetsTopicPartitions(2))
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := transport.DialCluster(ctx, []string{serveNode(t, n)}, transport.DialOptions{})
	require.NoError(t, err)
	defer client.Close()
	commitRetrying(ctx, t, client, "g", "t", 1, 42)
	require.Equal(t, map[int32]int64{1: 42}, committedOffsets(t, client, "g", "t"))
	lg, err := client.ListGroups(ctx, &transport.ListGroupsRequest{})
	require.NoError(t, err)
	require.Equal(t, []transport.ListedGroup{{Group: "g", State: "Empty"}}, lg.Groups)
}

// awaitStableGroup waits until group is Stable with members members;
// settled signals membership changes.
func awaitStableGroup(ctx context.Context, t *testing.T, client transport.GroupClient, groupID string, members int, settled <-chan struct{}) {
	t.Helper()
	for {
		d, err := client.DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{groupID}})
		require.NoError(t, err)
		if gd := d.Groups[0]; gd.Err == nil && gd.State == "Stable" && len(gd.Members) == members {
			return
		}
		select {
		case <-settled:
		case <-ctx.Done():
			t.Fatalf("group %s never settled with %d members", groupID, members)
		}
	}
}
