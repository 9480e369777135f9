package broker

import (
	"context"
	"sync"
	"time"

	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/log"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// The Broker coordinates the consumer groups of the partitions of
// __consumer_offsets it leads (see cluster_group.go): on a node on its
// own, every group.
var (
	_ transport.GroupClient         = (*Broker)(nil)
	_ transport.ConsumerGroupClient = (*Broker)(nil)
)

// groupTickInterval is how often the node expires group sessions and
// rebalance timeouts.
const groupTickInterval = 50 * time.Millisecond

// offsetsTopicSegmentBytes is Kafka's offsets.topic.segment.bytes.
const offsetsTopicSegmentBytes = 100 << 20

// groupHost runs the node's group coordinator, made when the node first
// leads a partition of __consumer_offsets.
type groupHost struct {
	n *Broker

	mu    sync.Mutex
	coord *group.Coordinator
	// offsets are the partitions of __consumer_offsets the node leads.
	offsets *coordinatorPartitions
}

// startGroups starts the ticks of the group coordinator.
func (n *Broker) startGroups() {
	n.groups = &groupHost{n: n}
	n.groups.offsets = newCoordinatorPartitions(n, group.OffsetsTopic, groupState{n.groups})
	n.runEvery(groupTickInterval, func() {
		if c := n.groups.loadedCoordinator(); c != nil {
			c.Tick()
		}
	})
}

// stopGroups answers the group requests that wait, so that Close need not
// wait for them.
func (n *Broker) stopGroups() {
	if c := n.groups.loadedCoordinator(); c != nil {
		c.Close()
	}
}

// eachRecord calls fn with each record of l from its log start offset to
// end, in offset order, skipping control batches, until fn says no more
// or fails. The records' keys and values are valid only during the call.
func eachRecord(l *log.Log, end int64, fn func(r record.Record) (more bool, err error)) error {
	return eachBatchRecord(l, end, func(h *record.Header, r record.Record) (bool, error) {
		if h.Attributes.IsControl() {
			return true, nil
		}
		return fn(r)
	})
}

// eachBatchRecord is eachRecord with each record's batch header, control
// batches included.
func eachBatchRecord(l *log.Log, end int64, fn func(h *record.Header, r record.Record) (more bool, err error)) error {
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
			for _, r := range b.Records {
				if r.Offset < off {
					continue
				}
				if more, err := fn(&h, r); err != nil || !more {
					return err
				}
			}
			off = h.NextOffset()
			data = data[h.Size():]
		}
	}
	return nil
}

// replay yields the records of l below end as the group coordinator's:
// the offsets and group metadata, those of transactions with their
// producer, and the transactions' COMMIT and ABORT markers.
func replay(l *log.Log, end int64, yield func(group.Record) bool) error {
	return eachBatchRecord(l, end, func(h *record.Header, r record.Record) (bool, error) {
		if !h.Attributes.IsControl() {
			return yield(group.Record{Key: r.Key, Value: r.Value,
				Transactional: h.Attributes.IsTransactional(), ProducerID: h.ProducerID}), nil
		}
		c, err := record.ParseControlRecord(r)
		if err != nil {
			return false, err
		}
		switch c.Type {
		case record.ControlCommit:
			return yield(group.Record{ProducerID: h.ProducerID, Marker: group.CommitMarker}), nil
		case record.ControlAbort:
			return yield(group.Record{ProducerID: h.ProducerID, Marker: group.AbortMarker}), nil
		}
		return true, nil
	})
}

// startAndWait starts req with the coordinator's method call, ends the
// node request it runs in (n.end: the coordinator answers later, and Close
// must not wait for that), and waits for the answer or for ctx to end.
func startAndWait[Req, Resp any](ctx context.Context, n *Broker, c *group.Coordinator, req Req, call func(*group.Coordinator, Req, func(Resp))) (Resp, error) {
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

// FindCoordinator names the coordinator of a group: the leader of the
// group's partition of __consumer_offsets, which it creates first if need
// be (as Kafka does on the first FindCoordinator).
func (n *Broker) FindCoordinator(ctx context.Context, req *transport.FindCoordinatorRequest) (*transport.FindCoordinatorResponse, error) {
	return n.findCoordinator(ctx, req)
}

// JoinGroup joins a group, and waits until the rebalance it starts or
// takes part in has every member, or ctx ends.
func (n *Broker) JoinGroup(ctx context.Context, req *transport.JoinGroupRequest) (*transport.JoinGroupResponse, error) {
	return groupWait(ctx, n, req.Group, req, (*group.Coordinator).Join, func(err error) *transport.JoinGroupResponse {
		return &transport.JoinGroupResponse{Err: err, MemberID: req.MemberID, GenerationID: transport.NoGeneration}
	})
}

// SyncGroup sends the leader's assignment, or waits for it, and answers
// the member's own.
func (n *Broker) SyncGroup(ctx context.Context, req *transport.SyncGroupRequest) (*transport.SyncGroupResponse, error) {
	return groupWait(ctx, n, req.Group, req, (*group.Coordinator).Sync, func(err error) *transport.SyncGroupResponse {
		return &transport.SyncGroupResponse{Err: err}
	})
}

// Heartbeat keeps a member's session alive.
func (n *Broker) Heartbeat(ctx context.Context, req *transport.HeartbeatRequest) (*transport.HeartbeatResponse, error) {
	return groupCall(ctx, n, req.Group, req, (*group.Coordinator).Heartbeat, func(err error) *transport.HeartbeatResponse {
		return &transport.HeartbeatResponse{Err: err}
	})
}

// LeaveGroup takes members out of a group.
func (n *Broker) LeaveGroup(ctx context.Context, req *transport.LeaveGroupRequest) (*transport.LeaveGroupResponse, error) {
	return groupCall(ctx, n, req.Group, req, (*group.Coordinator).Leave, func(err error) *transport.LeaveGroupResponse {
		return &transport.LeaveGroupResponse{Err: err}
	})
}

// OffsetCommit commits a group's offsets to __consumer_offsets.
func (n *Broker) OffsetCommit(ctx context.Context, req *transport.OffsetCommitRequest) (*transport.OffsetCommitResponse, error) {
	return groupCall(ctx, n, req.Group, req, (*group.Coordinator).Commit, func(err error) *transport.OffsetCommitResponse {
		resp := &transport.OffsetCommitResponse{}
		for _, t := range req.Topics {
			tr := transport.OffsetCommitTopicResponse{Topic: t.Topic}
			for _, p := range t.Partitions {
				tr.Partitions = append(tr.Partitions, transport.OffsetCommitPartitionResponse{Partition: p.Partition, Err: err})
			}
			resp.Topics = append(resp.Topics, tr)
		}
		return resp
	})
}

// OffsetFetch answers a group's committed offsets.
func (n *Broker) OffsetFetch(ctx context.Context, req *transport.OffsetFetchRequest) (*transport.OffsetFetchResponse, error) {
	return groupCall(ctx, n, req.Group, req, (*group.Coordinator).Fetch, func(err error) *transport.OffsetFetchResponse {
		return &transport.OffsetFetchResponse{Err: err}
	})
}
