package broker

import (
	"context"

	"github.com/partlog/partlog/sharecoord"
	"github.com/partlog/partlog/transport"
)

// The Broker answers Kafka's share state calls (83-86) for the share
// partitions whose partition of __share_group_state it leads and has
// loaded, and NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while it
// loads) for the others: the calls a share partition's leader on another
// node sends through its sharePersister.
var _ transport.ShareStateClient = (*Broker)(nil)

// InitializeShareGroupState initializes (or resets) share partitions'
// state at the share coordinator.
func (n *Broker) InitializeShareGroupState(ctx context.Context, req *transport.InitializeShareGroupStateRequest) (*transport.InitializeShareGroupStateResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.InitializeShareGroupStateResponse{}
	if !shareStateAsked(req.Group, req.Topics, func(t transport.InitializeShareGroupStateTopic) int { return len(t.Partitions) }) {
		return resp, nil
	}
	for _, t := range req.Topics {
		tr := transport.ShareStateTopicResult{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			sp := sharecoord.SharePartition{Group: req.Group, TopicID: t.TopicID, Partition: p.Partition}
			err := n.onShareCoordinator(ctx, sp, func(c *sharecoord.Coordinator) error { return c.Initialize(sp, p.StateEpoch, p.StartOffset) })
			tr.Partitions = append(tr.Partitions, transport.ShareStatePartitionResult{Partition: p.Partition, Err: err})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// ReadShareGroupState reads share partitions' state at the share
// coordinator, recording the reader's leader epoch when it is newer.
func (n *Broker) ReadShareGroupState(ctx context.Context, req *transport.ReadShareGroupStateRequest) (*transport.ReadShareGroupStateResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.ReadShareGroupStateResponse{}
	if !shareStateAsked(req.Group, req.Topics, func(t transport.ReadShareGroupStateTopic) int { return len(t.Partitions) }) {
		return resp, nil
	}
	for _, t := range req.Topics {
		tr := transport.ReadShareGroupStateTopicResult{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			sp := sharecoord.SharePartition{Group: req.Group, TopicID: t.TopicID, Partition: p.Partition}
			var st sharecoord.State
			err := n.onShareCoordinator(ctx, sp, func(c *sharecoord.Coordinator) (err error) {
				st, err = c.Read(sp, p.LeaderEpoch)
				return err
			})
			pr := transport.ReadShareGroupStatePartitionResult{Partition: p.Partition, Err: err, StateBatches: []transport.ShareStateBatch{}}
			if err == nil {
				pr.StateEpoch, pr.StartOffset, pr.StateBatches = st.StateEpoch, st.StartOffset, stateBatchesToWire(st.Batches)
			}
			tr.Partitions = append(tr.Partitions, pr)
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// WriteShareGroupState writes changes of share partitions' state at the
// share coordinator.
func (n *Broker) WriteShareGroupState(ctx context.Context, req *transport.WriteShareGroupStateRequest) (*transport.WriteShareGroupStateResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.WriteShareGroupStateResponse{}
	if !shareStateAsked(req.Group, req.Topics, func(t transport.WriteShareGroupStateTopic) int { return len(t.Partitions) }) {
		return resp, nil
	}
	for _, t := range req.Topics {
		tr := transport.ShareStateTopicResult{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			sp := sharecoord.SharePartition{Group: req.Group, TopicID: t.TopicID, Partition: p.Partition}
			w := sharecoord.Write{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset, Batches: stateBatchesFromWire(p.StateBatches)}
			err := n.onShareCoordinator(ctx, sp, func(c *sharecoord.Coordinator) error { return c.Write(sp, w) })
			tr.Partitions = append(tr.Partitions, transport.ShareStatePartitionResult{Partition: p.Partition, Err: err})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// DeleteShareGroupState deletes share partitions' state at the share
// coordinator.
func (n *Broker) DeleteShareGroupState(ctx context.Context, req *transport.DeleteShareGroupStateRequest) (*transport.DeleteShareGroupStateResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.DeleteShareGroupStateResponse{}
	if !shareStateAsked(req.Group, req.Topics, func(t transport.TopicIDPartitions) int { return len(t.Partitions) }) {
		return resp, nil
	}
	for _, t := range req.Topics {
		tr := transport.ShareStateTopicResult{TopicID: t.TopicID}
		for _, p := range t.Partitions {
			sp := sharecoord.SharePartition{Group: req.Group, TopicID: t.TopicID, Partition: p}
			err := n.onShareCoordinator(ctx, sp, func(c *sharecoord.Coordinator) error { return c.Delete(sp) })
			tr.Partitions = append(tr.Partitions, transport.ShareStatePartitionResult{Partition: p, Err: err})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

// shareStateAsked reports whether a share state request names a group
// and share partitions: Kafka's ShareCoordinatorService answers one with
// an empty group id, no topic or a topic without partitions with an empty
// response.
func shareStateAsked[T any](group string, topics []T, partitions func(T) int) bool {
	if group == "" || len(topics) == 0 {
		return false
	}
	for _, t := range topics {
		if partitions(t) == 0 {
			return false
		}
	}
	return true
}

// onShareCoordinator calls f with the node's share coordinator if it
// coordinates sp, and returns f's error, or why it does not
// (kafka.ErrNotCoordinator, ErrCoordinatorLoadInProgress, ...).
func (n *Broker) onShareCoordinator(ctx context.Context, sp sharecoord.SharePartition, f func(*sharecoord.Coordinator) error) error {
	c, err := n.shareCoordinatorOf(ctx, sp)
	if err != nil {
		return err
	}
	return f(c)
}

// stateBatchesToWire and stateBatchesFromWire convert state batches; the
// results are new slices.
func stateBatchesToWire(bs []sharecoord.StateBatch) []transport.ShareStateBatch {
	out := make([]transport.ShareStateBatch, len(bs))
	for i, b := range bs {
		out[i] = transport.ShareStateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: int8(b.DeliveryState), DeliveryCount: b.DeliveryCount}
	}
	return out
}

func stateBatchesFromWire(bs []transport.ShareStateBatch) []sharecoord.StateBatch {
	if len(bs) == 0 {
		return nil
	}
	out := make([]sharecoord.StateBatch, len(bs))
	for i, b := range bs {
		out[i] = sharecoord.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: sharecoord.DeliveryState(b.DeliveryState), DeliveryCount: b.DeliveryCount}
	}
	return out
}
