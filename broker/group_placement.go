package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/topicconfig"
	"github.com/partlog/partlog/transport"
)

// In a cluster, consumer groups follow Kafka's design: __consumer_offsets
// is a replicated topic, created through the controller on the first
// FindCoordinator, and the coordinator of a group is the leader of the
// group's partition of it (group.PartitionFor). A node that becomes leader
// of such a partition replays the partition's log, up to its log end
// offset, into its group.Coordinator in the background (answering
// COORDINATOR_LOAD_IN_PROGRESS meanwhile); one that stops leading it
// unloads its groups. A node answers the group requests of the groups
// whose partition it leads and has loaded, and NOT_COORDINATOR for the
// others. The coordinator's writes go through the partition's replica as
// a leader append with acks=all, so that a commit is answered once the
// in-sync replicas have it.

// offsetsCommitTimeout bounds a coordinator's replicated write (Kafka's
// offsets.commit.timeout.ms).
const offsetsCommitTimeout = 5 * time.Second

// offsetsTopicReplicationFactor is Kafka's
// offsets.topic.replication.factor; a cluster with fewer live nodes
// creates the topic with as many replicas as it has nodes.
const offsetsTopicReplicationFactor = 3

// clusterGroups is the group coordinator's state on a node in a cluster:
// the partitions of __consumer_offsets it leads.
type clusterGroups struct {
	n *Broker
	// createMu makes the node create __consumer_offsets once at a time.
	createMu sync.Mutex
	// loadMu orders the loads and unloads of partitions, which run in
	// the background.
	loadMu sync.Mutex

	mu  sync.Mutex
	led map[int32]*offsetsLoad // the partitions the node leads
}

// offsetsLoad is one leadership of a partition of __consumer_offsets:
// its leader epoch, and whether its groups are loaded.
type offsetsLoad struct {
	epoch  int32
	loaded bool
	// done is closed when the load ends: loaded, failed, or superseded.
	done chan struct{}
}

// clusterGroups returns the node's cluster group state, made on first
// use.
func (h *groupHost) clusterGroups() *clusterGroups {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cluster == nil {
		h.cluster = &clusterGroups{n: h.n, led: map[int32]*offsetsLoad{}}
	}
	return h.cluster
}

// clusterCoordinator returns the node's group coordinator for a topic of
// partitions partitions, made on first use; it writes through the
// replicas.
func (h *groupHost) clusterCoordinator(partitions int32) *group.Coordinator {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.coord == nil {
		n := h.n
		opts := n.opts.Groups
		opts.Now, opts.Logger = n.opts.Now, n.logger.With("component", "group-coordinator")
		opts.Partitions = partitions
		h.coord = group.New(replicatedOffsetsLog{n: n}, opts)
	}
	return h.coord
}

// loadedCoordinator returns the coordinator once made, or nil.
func (h *groupHost) loadedCoordinator() *group.Coordinator {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.coord
}

// offsetsLeadership follows the leadership of a replica of
// __consumer_offsets after the controller's state s was applied to it:
// it loads the partition's groups when the node became its leader, and
// unloads them when it stopped leading it.
func (m *clusterMember) offsetsLeadership(h *replicaHost, s replica.LeaderAndISR) {
	if h.tp.Topic != group.OffsetsTopic {
		return
	}
	cg := m.n.groups.clusterGroups()
	p := h.tp.Partition
	cg.mu.Lock()
	cur := cg.led[p]
	if s.Leader == m.n.meta.NodeID {
		if cur != nil && cur.epoch == s.LeaderEpoch {
			cg.mu.Unlock()
			return
		}
		st := &offsetsLoad{epoch: s.LeaderEpoch, done: make(chan struct{})}
		cg.led[p] = st
		cg.mu.Unlock()
		md, _ := m.metadata()
		partitions := int32(len(md.Topics[group.OffsetsTopic].Partitions))
		m.goUnlessLeaving(func() { cg.load(h, st, partitions) })
		return
	}
	if cur == nil {
		cg.mu.Unlock()
		return
	}
	delete(cg.led, p)
	cg.mu.Unlock()
	m.goUnlessLeaving(func() { cg.unload(p) })
}

// offsetsRemoved unloads the groups of a replica of __consumer_offsets
// the node no longer hosts.
func (m *clusterMember) offsetsRemoved(h *replicaHost) {
	if h.tp.Topic != group.OffsetsTopic {
		return
	}
	cg := m.n.groups.clusterGroups()
	cg.mu.Lock()
	_, led := cg.led[h.tp.Partition]
	delete(cg.led, h.tp.Partition)
	cg.mu.Unlock()
	if led {
		cg.unload(h.tp.Partition)
	}
}

// load replays the log of the partition of h, up to its log end offset,
// into the coordinator, unless the leadership st has ended meanwhile.
func (cg *clusterGroups) load(h *replicaHost, st *offsetsLoad, partitions int32) {
	defer close(st.done)
	cg.loadMu.Lock()
	defer cg.loadMu.Unlock()
	p := h.tp.Partition
	if !cg.current(p, st) {
		return
	}
	c := cg.n.groups.clusterCoordinator(partitions)
	c.Unload(p) // what an earlier leadership left
	start := time.Now()
	end := h.p.LogEndOffset()
	l := h.p.Log()
	records := 0
	err := c.Load(p, func(yield func(group.Record) bool) error {
		return replay(l, end, func(r group.Record) bool { records++; return yield(r) })
	})
	cg.mu.Lock()
	current := cg.led[p] == st
	if current && err == nil {
		st.loaded = true
	}
	cg.mu.Unlock()
	switch {
	case err != nil:
		// The partition stays loading: its groups are answered
		// COORDINATOR_LOAD_IN_PROGRESS until the next leadership.
		cg.n.logger.Error("loading the groups of a partition failed", "partition", h.tp.String(), "err", err)
	case !current:
		c.Unload(p)
	default:
		cg.n.logger.Info("loaded the groups of a partition", "partition", h.tp.String(), "leader_epoch", st.epoch,
			"records", records, "log_end_offset", end, "took", time.Since(start))
	}
}

// unload forgets the groups of partition p, unless the node leads it
// again by now (its load unloads first).
func (cg *clusterGroups) unload(p int32) {
	cg.loadMu.Lock()
	defer cg.loadMu.Unlock()
	cg.mu.Lock()
	_, led := cg.led[p]
	cg.mu.Unlock()
	if c := cg.n.groups.loadedCoordinator(); c != nil && !led {
		c.Unload(p)
		cg.n.logger.Info("unloaded the groups of a partition", "partition", fmt.Sprintf("%s-%d", group.OffsetsTopic, p))
	}
}

// awaitLoads waits until the loads of the partitions the node leads now
// have ended, or ctx ends.
func (cg *clusterGroups) awaitLoads(ctx context.Context) error {
	cg.mu.Lock()
	var pending []chan struct{}
	for _, st := range cg.led {
		if !st.loaded {
			pending = append(pending, st.done)
		}
	}
	cg.mu.Unlock()
	for _, done := range pending {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// current reports whether st is the node's leadership of partition p.
func (cg *clusterGroups) current(p int32, st *offsetsLoad) bool {
	cg.mu.Lock()
	defer cg.mu.Unlock()
	return cg.led[p] == st
}

// coordinatorOf returns the coordinator for a request about groupID: the
// node's, if it leads the group's partition and has loaded it, or else
// ErrNotCoordinator (ErrCoordinatorLoadInProgress while it loads). When
// __consumer_offsets does not exist yet, it is created first, and the
// node waits for the groups of the partitions it leads to load, so that
// the first group request to a node on its own is answered.
func (n *Broker) coordinatorOf(ctx context.Context, groupID string) (*group.Coordinator, error) {
	md, _ := n.member.metadata()
	if _, ok := md.Topics[group.OffsetsTopic]; !ok {
		if err := n.ensureOffsetsTopic(ctx); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", kafka.ErrCoordinatorNotAvailable, group.OffsetsTopic, err)
		}
		md, _ = n.member.metadata()
	}
	t, ok := md.Topics[group.OffsetsTopic]
	if !ok || len(t.Partitions) == 0 {
		return nil, fmt.Errorf("%w: %s does not exist yet", kafka.ErrNotCoordinator, group.OffsetsTopic)
	}
	p := group.PartitionFor(groupID, int32(len(t.Partitions)))
	cg := n.groups.clusterGroups()
	cg.mu.Lock()
	st := cg.led[p]
	loaded := st != nil && st.loaded
	cg.mu.Unlock()
	switch {
	case st == nil:
		return nil, fmt.Errorf("%w: node %d does not lead %s-%d (leader %d)", kafka.ErrNotCoordinator, n.meta.NodeID,
			group.OffsetsTopic, p, t.Partitions[p].Leader)
	case !loaded:
		return nil, fmt.Errorf("%w: node %d is loading %s-%d", kafka.ErrCoordinatorLoadInProgress, n.meta.NodeID, group.OffsetsTopic, p)
	}
	c := n.groups.loadedCoordinator()
	if c == nil {
		return nil, fmt.Errorf("%w: node %d has no coordinator", kafka.ErrCoordinatorNotAvailable, n.meta.NodeID)
	}
	return c, nil
}

// replicatedOffsetsLog writes the coordinator's records to the replicas
// of __consumer_offsets the node leads, each call as one batch appended
// with acks=all.
type replicatedOffsetsLog struct{ n *Broker }

func (o replicatedOffsetsLog) Append(p int32, recs []group.Record) error {
	n := o.n
	tp := kafka.TopicPartition{Topic: group.OffsetsTopic, Partition: p}
	h := n.member.replica(tp)
	if h == nil || !h.leads(n.meta.NodeID) {
		return fmt.Errorf("%w: node %d does not lead %s", kafka.ErrNotLeaderOrFollower, n.meta.NodeID, tp)
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	now := n.opts.Now().UnixMilli()
	for _, r := range recs {
		b.Append(record.Record{Timestamp: now, Key: r.Key, Value: r.Value})
	}
	_, _, err := n.appendReplicated(context.Background(), h, b.Build(), kafka.AcksAll, offsetsCommitTimeout)
	return err
}

// createOffsetsTopic creates __consumer_offsets through the controller,
// unless the node's metadata has it, and waits until the metadata does.
func (n *Broker) createOffsetsTopic(ctx context.Context) error {
	m := n.member
	cg := n.groups.clusterGroups()
	cg.createMu.Lock()
	defer cg.createMu.Unlock()
	// The latest metadata: the topic may exist by now, and the live
	// nodes decide the replication factor.
	if err := m.heartbeat(ctx); err != nil {
		return err
	}
	md, _ := m.metadata()
	if _, ok := md.Topics[group.OffsetsTopic]; ok {
		return nil
	}
	live := 0
	for _, nd := range md.Nodes {
		if !nd.Fenced {
			live++
		}
	}
	partitions := n.opts.Groups.Partitions
	if partitions <= 0 {
		partitions = group.DefaultOffsetsTopicPartitions
	}
	nt := NewTopic{Name: group.OffsetsTopic, Partitions: partitions, ReplicationFactor: int16(max(1, min(offsetsTopicReplicationFactor, live))),
		Configs: map[string]string{topicconfig.CleanupPolicy: "compact", topicconfig.SegmentBytes: strconv.Itoa(offsetsTopicSegmentBytes)}}
	err := n.createReplicatedTopic(ctx, nt)
	if errors.Is(err, kafka.ErrTopicAlreadyExists) {
		return m.heartbeat(ctx) // another node created it: learn of it now
	}
	if err == nil {
		n.logger.Info("created the offsets topic", "topic", group.OffsetsTopic, "partitions", partitions, "replication_factor", nt.ReplicationFactor)
	}
	return err
}

// ensureOffsetsTopic creates __consumer_offsets, and waits until the node
// has loaded the groups of the partitions of it that it leads. It is
// bounded, and cut short when the node leaves: Close waits for the
// requests in flight.
func (n *Broker) ensureOffsetsTopic(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	defer context.AfterFunc(n.member.ctx, cancel)()
	if err := n.createOffsetsTopic(ctx); err != nil {
		return err
	}
	return n.groups.clusterGroups().awaitLoads(ctx)
}

// findCoordinator answers FindCoordinator: the leader of the group's
// partition of __consumer_offsets, which it creates first if need be.
func (n *Broker) findCoordinator(ctx context.Context, req *transport.FindCoordinatorRequest) (*transport.FindCoordinatorResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.FindCoordinatorResponse{NodeID: -1, Port: -1}
	if req.KeyType != transport.CoordinatorGroup {
		resp.Err = errNoTransactions
		return resp, nil
	}
	m := n.member
	md, _ := m.metadata()
	if _, ok := md.Topics[group.OffsetsTopic]; !ok {
		if err := n.ensureOffsetsTopic(ctx); err != nil {
			resp.Err = fmt.Errorf("%w: creating %s: %v", kafka.ErrCoordinatorNotAvailable, group.OffsetsTopic, err)
			return resp, nil
		}
		md, _ = m.metadata()
	}
	t, ok := md.Topics[group.OffsetsTopic]
	if !ok || len(t.Partitions) == 0 {
		resp.Err = fmt.Errorf("%w: %s is being created", kafka.ErrCoordinatorNotAvailable, group.OffsetsTopic)
		return resp, nil
	}
	p := group.PartitionFor(req.Key, int32(len(t.Partitions)))
	leader := t.Partitions[p].Leader
	node, known := md.Nodes[leader]
	// A node on its own registers no address: a TCP server fills in its
	// own, as it does in Metadata answers.
	host, port, addrOK := "", int32(-1), true
	if node.Address != "" {
		host, port, addrOK = controller.HostPort(node.Address)
	}
	if leader == replica.NoLeader || !known || node.Fenced || !addrOK {
		resp.Err = fmt.Errorf("%w: %s-%d has no leader", kafka.ErrCoordinatorNotAvailable, group.OffsetsTopic, p)
		return resp, nil
	}
	resp.NodeID, resp.Host, resp.Port = leader, host, port
	return resp, nil
}

// groupCall answers a request about groupID with the coordinator's
// method call, or with failed and the reason the node is not the group's
// coordinator.
func groupCall[Req, Resp any](ctx context.Context, n *Broker, groupID string, req Req, call func(*group.Coordinator, Req) Resp, failed func(error) Resp) (Resp, error) {
	if err := n.begin(); err != nil {
		var zero Resp
		return zero, err
	}
	defer n.end()
	c, err := n.coordinatorOf(ctx, groupID)
	if err != nil {
		return failed(err), nil
	}
	return call(c, req), nil
}

// groupWait is groupCall for a request that may wait.
func groupWait[Req, Resp any](ctx context.Context, n *Broker, groupID string, req Req, call func(*group.Coordinator, Req, func(Resp)), failed func(error) Resp) (Resp, error) {
	var zero Resp
	if err := n.begin(); err != nil {
		return zero, err
	}
	c, err := n.coordinatorOf(ctx, groupID)
	if err != nil {
		n.end()
		return failed(err), nil
	}
	return startAndWait(ctx, n, c, req, call)
}

// DescribeGroups describes the groups the node coordinates — state,
// protocol, members, assignments — and answers the error for each other
// one.
func (n *Broker) DescribeGroups(ctx context.Context, req *transport.DescribeGroupsRequest) (*transport.DescribeGroupsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.DescribeGroupsResponse{}
	for _, id := range req.Groups {
		c, err := n.coordinatorOf(ctx, id)
		if err != nil {
			resp.Groups = append(resp.Groups, transport.DescribedGroup{Group: id, Err: err, State: group.Dead.String(), GenerationID: transport.NoGeneration})
			continue
		}
		resp.Groups = append(resp.Groups, c.Describe(&transport.DescribeGroupsRequest{Groups: []string{id}}).Groups...)
	}
	return resp, nil
}

// DeleteGroups deletes the groups without members the node coordinates,
// with their offsets, and answers the error for each other one.
func (n *Broker) DeleteGroups(ctx context.Context, req *transport.DeleteGroupsRequest) (*transport.DeleteGroupsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.DeleteGroupsResponse{}
	for _, id := range req.Groups {
		c, err := n.coordinatorOf(ctx, id)
		if err != nil {
			resp.Results = append(resp.Results, transport.DeletedGroup{Group: id, Err: err})
			continue
		}
		resp.Results = append(resp.Results, c.Delete(&transport.DeleteGroupsRequest{Groups: []string{id}}).Results...)
	}
	return resp, nil
}

// ListGroups lists the groups of the partitions of __consumer_offsets the
// node leads and has loaded.
func (n *Broker) ListGroups(ctx context.Context, req *transport.ListGroupsRequest) (*transport.ListGroupsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	c := n.groups.loadedCoordinator()
	if c == nil {
		return &transport.ListGroupsResponse{}, nil
	}
	cg := n.groups.clusterGroups()
	cg.mu.Lock()
	loaded := map[int32]bool{}
	for p, st := range cg.led {
		loaded[p] = st.loaded
	}
	cg.mu.Unlock()
	resp := c.List(req)
	var mine []transport.ListedGroup
	for _, g := range resp.Groups {
		if loaded[c.PartitionFor(g.Group)] {
			mine = append(mine, g)
		}
	}
	resp.Groups = mine
	return resp, nil
}
