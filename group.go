package partlog

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// The Node coordinates the consumer groups of the partitions of
// __consumer_offsets it leads: on a single node, every group.
var _ transport.GroupClient = (*Node)(nil)

// groupTickInterval is how often the node expires group sessions and
// rebalance timeouts.
const groupTickInterval = 50 * time.Millisecond

// offsetsTopicSegmentBytes is Kafka's offsets.topic.segment.bytes.
const offsetsTopicSegmentBytes = 100 << 20

// groupHost runs the node's group coordinator. The coordinator starts with
// the node when __consumer_offsets exists, and otherwise on first use,
// which creates the topic (as Kafka does on the first FindCoordinator).
type groupHost struct {
	n *Node

	mu    sync.Mutex
	coord *group.Coordinator
	// cluster is the partitions of __consumer_offsets the node leads, on
	// a node in a cluster (see cluster_group.go).
	cluster *clusterGroups
}

// startGroups loads the group coordinator if __consumer_offsets exists,
// and starts its ticks.
func (n *Node) startGroups() error {
	n.groups = &groupHost{n: n}
	if n.topic(group.OffsetsTopic) != nil {
		if _, err := n.groups.coordinator(); err != nil {
			return err
		}
	}
	n.runEvery(groupTickInterval, func() {
		n.groups.mu.Lock()
		c := n.groups.coord
		n.groups.mu.Unlock()
		if c != nil {
			c.Tick()
		}
	})
	return nil
}

// stopGroups answers the group requests that wait, so that Close need not
// wait for them.
func (n *Node) stopGroups() {
	if n.groups == nil {
		return
	}
	n.groups.mu.Lock()
	defer n.groups.mu.Unlock()
	if n.groups.coord != nil {
		n.groups.coord.Close()
	}
}

// coordinator returns the group coordinator, creating __consumer_offsets
// and loading it first if need be.
func (h *groupHost) coordinator() (*group.Coordinator, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.coord != nil {
		return h.coord, nil
	}
	n := h.n
	opts := n.opts.groups
	opts.Now, opts.Logger = n.opts.now, n.logger.With("component", "group-coordinator")
	t, err := n.offsetsTopic(opts.Partitions)
	if err != nil {
		return nil, err
	}
	opts.Partitions = int32(len(t.partitions))
	c := group.New(offsetsLog{t: t, now: n.opts.now}, opts)
	for _, p := range t.online() {
		l := p.Log()
		if err := c.Load(p.ID(), func(yield func(group.Record) bool) error { return replay(l, p.HighWatermark(), yield) }); err != nil {
			return nil, fmt.Errorf("partlog: %w", err)
		}
	}
	h.coord = c
	return c, nil
}

// offsetsTopic returns __consumer_offsets, creating it with partitions
// (offsets.topic.num.partitions) if it does not exist, compacted as Kafka's
// is.
func (n *Node) offsetsTopic(partitions int32) (*topic, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if t, ok := n.topics[group.OffsetsTopic]; ok {
		return t, nil
	}
	if partitions <= 0 {
		partitions = group.DefaultOffsetsTopicPartitions
	}
	rec := topicRecord{ID: newUUID(), Partitions: partitions, ReplicationFactor: 1, Configs: map[string]string{
		ConfigCleanupPolicy: "compact",
		ConfigSegmentBytes:  strconv.Itoa(offsetsTopicSegmentBytes),
	}}
	if err := n.createTopicLocked(group.OffsetsTopic, rec); err != nil {
		return nil, err
	}
	n.logger.Info("created the offsets topic", "topic", group.OffsetsTopic, "partitions", partitions)
	return n.topics[group.OffsetsTopic], nil
}

// replay yields the records of l below end, in offset order.
func replay(l *log.Log, end int64, yield func(group.Record) bool) error {
	for off := l.LogStartOffset(); off < end; {
		data, err := l.Read(nil, off, end, 1<<20)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			return nil
		}
		for len(data) > 0 {
			h, err := record.ParseHeader(data)
			if err != nil {
				return err
			}
			b, err := record.Decode(data[:h.Size()])
			if err != nil {
				return err
			}
			if !h.Attributes.IsControl() {
				for _, r := range b.Records {
					if r.Offset >= off && !yield(group.Record{Key: r.Key, Value: r.Value}) {
						return nil
					}
				}
			}
			off = h.NextOffset()
			data = data[h.Size():]
		}
	}
	return nil
}

// offsetsLog writes the coordinator's records to __consumer_offsets, each
// call as one batch appended with acks=all.
type offsetsLog struct {
	t   *topic
	now func() time.Time // the node's clock: record timestamps roll segments
}

func (o offsetsLog) Append(p int32, recs []group.Record) error {
	part, err := o.t.partition(p)
	if err != nil {
		return err
	}
	b := record.NewBuilder(record.DefaultBatchOptions())
	now := o.now().UnixMilli()
	for _, r := range recs {
		b.Append(record.Record{Timestamp: now, Key: r.Key, Value: r.Value})
	}
	_, err = part.Append(b.Build(), kafka.AcksAll)
	return err
}

// groupCoordinator returns the coordinator for a request, which must then
// call n.end.
func (n *Node) groupCoordinator() (*group.Coordinator, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	c, err := n.groups.coordinator()
	if err != nil {
		n.end()
		return nil, err
	}
	return c, nil
}

// groupCall answers req with the coordinator's method call inside a
// request.
func groupCall[Req, Resp any](n *Node, req Req, call func(*group.Coordinator, Req) Resp) (Resp, error) {
	c, err := n.groupCoordinator()
	if err != nil {
		var zero Resp
		return zero, err
	}
	defer n.end()
	return call(c, req), nil
}

// groupWait starts req with the coordinator's method call inside a
// request, and waits for its answer, or until ctx ends.
func groupWait[Req, Resp any](ctx context.Context, n *Node, req Req, call func(*group.Coordinator, Req, func(Resp))) (Resp, error) {
	c, err := n.groupCoordinator()
	if err != nil {
		var zero Resp
		return zero, err
	}
	return startAndWait(ctx, n, c, req, call)
}

// startAndWait starts req with the coordinator's method call, ends the
// node request it runs in (n.end: the coordinator answers later, and Close
// must not wait for that), and waits for the answer or for ctx to end.
func startAndWait[Req, Resp any](ctx context.Context, n *Node, c *group.Coordinator, req Req, call func(*group.Coordinator, Req, func(Resp))) (Resp, error) {
	ch := make(chan Resp, 1)
	call(c, req, func(r Resp) { ch <- r })
	n.end()
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		var zero Resp
		return zero, ctx.Err()
	}
}

// errNoTransactions answers FindCoordinator for a transactional id until
// transactions exist: not retriable, so that a client fails at once with
// the reason rather than retrying COORDINATOR_NOT_AVAILABLE for a minute.
var errNoTransactions = fmt.Errorf("%w: partlog does not support transactions yet (FindCoordinator for a transactional id)", kafka.ErrUnsupportedVersion)

// FindCoordinator names this node as the coordinator of every group; in a
// cluster, the leader of the group's partition of __consumer_offsets.
func (n *Node) FindCoordinator(ctx context.Context, req *transport.FindCoordinatorRequest) (*transport.FindCoordinatorResponse, error) {
	if n.cluster != nil {
		return n.clusterFindCoordinator(ctx, req)
	}
	return groupCall(n, req, func(_ *group.Coordinator, req *transport.FindCoordinatorRequest) *transport.FindCoordinatorResponse {
		resp := &transport.FindCoordinatorResponse{NodeID: -1, Port: -1}
		if req.KeyType != transport.CoordinatorGroup {
			resp.Err = errNoTransactions
			return resp
		}
		resp.NodeID = n.meta.NodeID
		return resp
	})
}

// JoinGroup joins a group, and waits until the rebalance it starts or
// takes part in has every member, or ctx ends.
func (n *Node) JoinGroup(ctx context.Context, req *transport.JoinGroupRequest) (*transport.JoinGroupResponse, error) {
	if n.cluster != nil {
		return n.clusterJoinGroup(ctx, req)
	}
	return groupWait(ctx, n, req, (*group.Coordinator).Join)
}

// SyncGroup sends the leader's assignment, or waits for it, and answers
// the member's own.
func (n *Node) SyncGroup(ctx context.Context, req *transport.SyncGroupRequest) (*transport.SyncGroupResponse, error) {
	if n.cluster != nil {
		return n.clusterSyncGroup(ctx, req)
	}
	return groupWait(ctx, n, req, (*group.Coordinator).Sync)
}

// Heartbeat keeps a member's session alive.
func (n *Node) Heartbeat(ctx context.Context, req *transport.HeartbeatRequest) (*transport.HeartbeatResponse, error) {
	if n.cluster != nil {
		return n.clusterHeartbeat(req)
	}
	return groupCall(n, req, (*group.Coordinator).Heartbeat)
}

// LeaveGroup takes members out of a group.
func (n *Node) LeaveGroup(ctx context.Context, req *transport.LeaveGroupRequest) (*transport.LeaveGroupResponse, error) {
	if n.cluster != nil {
		return n.clusterLeaveGroup(req)
	}
	return groupCall(n, req, (*group.Coordinator).Leave)
}

// OffsetCommit commits a group's offsets to __consumer_offsets.
func (n *Node) OffsetCommit(ctx context.Context, req *transport.OffsetCommitRequest) (*transport.OffsetCommitResponse, error) {
	if n.cluster != nil {
		return n.clusterOffsetCommit(req)
	}
	return groupCall(n, req, (*group.Coordinator).Commit)
}

// OffsetFetch answers a group's committed offsets.
func (n *Node) OffsetFetch(ctx context.Context, req *transport.OffsetFetchRequest) (*transport.OffsetFetchResponse, error) {
	if n.cluster != nil {
		return n.clusterOffsetFetch(req)
	}
	return groupCall(n, req, (*group.Coordinator).Fetch)
}

// DescribeGroups describes groups: state, protocol, members, assignments.
func (n *Node) DescribeGroups(ctx context.Context, req *transport.DescribeGroupsRequest) (*transport.DescribeGroupsResponse, error) {
	if n.cluster != nil {
		return n.clusterDescribeGroups(req)
	}
	return groupCall(n, req, (*group.Coordinator).Describe)
}

// DeleteGroups deletes groups without members, with their offsets.
func (n *Node) DeleteGroups(ctx context.Context, req *transport.DeleteGroupsRequest) (*transport.DeleteGroupsResponse, error) {
	if n.cluster != nil {
		return n.clusterDeleteGroups(req)
	}
	return groupCall(n, req, (*group.Coordinator).Delete)
}

// ListGroups lists the groups the node coordinates.
func (n *Node) ListGroups(ctx context.Context, req *transport.ListGroupsRequest) (*transport.ListGroupsResponse, error) {
	if n.cluster != nil {
		return n.clusterListGroups(req)
	}
	return groupCall(n, req, (*group.Coordinator).List)
}
