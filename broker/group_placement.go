package broker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/topicconfig"
	"github.com/partlog/partlog/transport"
)

// Consumer groups live on the partitions of __consumer_offsets the node
// leads (coordinator_partitions.go): groupState loads a partition's groups
// into the node's group.Coordinator, whose writes go through the
// partition's replica as acks=all appends.

// offsetsCommitTimeout bounds a coordinator's replicated write (Kafka's
// offsets.commit.timeout.ms).
const offsetsCommitTimeout = 5 * time.Second

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
		opts.Topics = n.groupTopics
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

// groupState is the group coordinator's part in hosting the partitions
// of __consumer_offsets.
type groupState struct{ h *groupHost }

func (g groupState) load(h *replicaHost, _ int32, end int64, partitions int32) (int, error) {
	c := g.h.clusterCoordinator(partitions)
	l := h.p.Log()
	records := 0
	err := c.Load(h.tp.Partition, func(yield func(group.Record) bool) error {
		return replay(l, end, func(r group.Record) bool { records++; return yield(r) })
	})
	return records, err
}

func (g groupState) unload(p int32) {
	if c := g.h.loadedCoordinator(); c != nil {
		c.Unload(p)
	}
}

// offsetsTopicConfigs returns the partition count and configs of
// __consumer_offsets when the node creates it.
func (n *Broker) offsetsTopicConfigs() (int32, map[string]string) {
	return n.offsetsTopicPartitions(), map[string]string{topicconfig.CleanupPolicy: "compact", topicconfig.SegmentBytes: strconv.Itoa(offsetsTopicSegmentBytes)}
}

// offsetsTopicPartitions is offsets.topic.num.partitions.
func (n *Broker) offsetsTopicPartitions() int32 {
	if p := n.opts.Groups.Partitions; p > 0 {
		return p
	}
	return group.DefaultOffsetsTopicPartitions
}

// coordinatorOf returns the coordinator for a request about groupID: the
// node's, if it leads the group's partition and has loaded it, or else
// ErrNotCoordinator (ErrCoordinatorLoadInProgress while it loads). When
// __consumer_offsets does not exist yet, it is created first, and the
// node waits for the groups of the partitions it leads to load, so that
// the first group request to a node on its own is answered.
func (n *Broker) coordinatorOf(ctx context.Context, groupID string) (*group.Coordinator, error) {
	partitions, configs := n.offsetsTopicConfigs()
	if _, err := n.groups.offsets.partitionOf(ctx, groupID, partitions, configs); err != nil {
		return nil, err
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
	return o.append(p, record.DefaultBatchOptions(), recs)
}

// AppendTransactional writes recs as a transactional batch of the
// producer's, with no sequence: the coordinator writes it, as Kafka's
// does, and the producer's own sequence numbers stay its data batches'.
func (o replicatedOffsetsLog) AppendTransactional(p int32, producerID int64, producerEpoch int16, recs []group.Record) error {
	opts := record.DefaultBatchOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = producerID, producerEpoch, record.NoSequence, true
	return o.append(p, opts, recs)
}

// append writes recs to partition p as one batch of opts, acks=all.
func (o replicatedOffsetsLog) append(p int32, opts record.BatchOptions, recs []group.Record) error {
	n := o.n
	tp := kafka.TopicPartition{Topic: group.OffsetsTopic, Partition: p}
	h := n.member.replica(tp)
	if h == nil || !h.leads(n.meta.NodeID) {
		return fmt.Errorf("%w: node %d does not lead %s", kafka.ErrNotLeaderOrFollower, n.meta.NodeID, tp)
	}
	b := record.NewBuilder(opts)
	now := n.opts.Now().UnixMilli()
	for _, r := range recs {
		b.Append(record.Record{Timestamp: now, Key: r.Key, Value: r.Value})
	}
	_, _, err := n.appendReplicated(context.Background(), h, b.Build(), kafka.AcksAll, offsetsCommitTimeout)
	return err
}

// findCoordinator answers FindCoordinator: the leader of the group's
// partition of __consumer_offsets, which it creates first if need be.
func (n *Broker) findCoordinator(ctx context.Context, req *transport.FindCoordinatorRequest) (*transport.FindCoordinatorResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.FindCoordinatorResponse{NodeID: -1, Port: -1}
	if req.KeyType == transport.CoordinatorTransaction {
		return n.findTxnCoordinator(ctx, req.Key), nil
	}
	if req.KeyType == transport.CoordinatorShare {
		return n.findShareCoordinator(ctx, req.Key), nil
	}
	if req.KeyType != transport.CoordinatorGroup {
		resp.Err = fmt.Errorf("%w: coordinator key type %d", kafka.ErrInvalidRequest, req.KeyType)
		return resp, nil
	}
	partitions, configs := n.offsetsTopicConfigs()
	id, host, port, err := n.groups.offsets.coordinatorNode(ctx, req.Key, partitions, configs)
	if err != nil {
		resp.Err = err
		return resp, nil
	}
	resp.NodeID, resp.Host, resp.Port = id, host, port
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

// ConsumerGroupHeartbeat handles a heartbeat of the consumer group
// protocol (KIP-848) at the group's coordinator.
func (n *Broker) ConsumerGroupHeartbeat(ctx context.Context, req *transport.ConsumerGroupHeartbeatRequest) (*transport.ConsumerGroupHeartbeatResponse, error) {
	return groupCall(ctx, n, req.Group, req, (*group.Coordinator).ConsumerHeartbeat, func(err error) *transport.ConsumerGroupHeartbeatResponse {
		return &transport.ConsumerGroupHeartbeatResponse{Err: err, MemberID: req.MemberID}
	})
}

// ConsumerGroupDescribe describes consumer-protocol groups the node
// coordinates; the others are answered NOT_COORDINATOR.
func (n *Broker) ConsumerGroupDescribe(ctx context.Context, req *transport.ConsumerGroupDescribeRequest) (*transport.ConsumerGroupDescribeResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.ConsumerGroupDescribeResponse{}
	for _, id := range req.Groups {
		c, err := n.coordinatorOf(ctx, id)
		if err != nil {
			resp.Groups = append(resp.Groups, transport.ConsumerGroupDescription{Group: id, Err: err})
			continue
		}
		resp.Groups = append(resp.Groups, c.ConsumerDescribe(&transport.ConsumerGroupDescribeRequest{Groups: []string{id}}).Groups...)
	}
	return resp, nil
}

// groupTopics are the cluster's topics as the consumer-protocol groups
// assign them: the metadata's, the internal ones too (a regex may match
// them, as on Kafka).
func (n *Broker) groupTopics() []group.TopicInfo {
	md, _ := n.member.metadata()
	out := make([]group.TopicInfo, 0, len(md.Topics))
	for name, t := range md.Topics {
		out = append(out, group.TopicInfo{Name: name, ID: controller.TopicIDBytes(t.ID), Partitions: int32(len(t.Partitions))})
	}
	return out
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
	loaded := n.groups.offsets.loaded()
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
