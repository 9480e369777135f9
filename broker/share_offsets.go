package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/sharecoord"
	"github.com/partlog/partlog/transport"
)

// The Broker administers the offsets of share groups (KIP-932) at their
// group coordinator, as Kafka's GroupCoordinatorService does: the group
// coordinator decides and records which share partitions of the group
// have state, and the share coordinators hold the state, reached through
// the sharePersister.
var _ transport.ShareGroupOffsetsClient = (*Broker)(nil)

// DescribeShareGroupOffsets answers each group's share-partition start
// offsets, read from the share coordinators. A group asked about all its
// topics is answered with the partitions its coordinator (this node, else
// NOT_COORDINATOR) records as initialized. Partitions named are read
// whatever the group, as Kafka reads them: a topic that does not exist,
// or a share partition without state (or whose state could not be read),
// has start offset -1 and no error. The leader epoch is -1: the
// persister's read does not carry the share coordinator's back. The lag
// (version 1) is the records from the start offset to the high watermark
// of this node's replica of the partition that are not Acknowledged or
// Archived; -1 when the node hosts no replica or there is no start
// offset.
func (n *Broker) DescribeShareGroupOffsets(ctx context.Context, req *transport.DescribeShareGroupOffsetsRequest) (*transport.DescribeShareGroupOffsetsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.DescribeShareGroupOffsetsResponse{}
	ids, _ := n.topicIDs()
	for _, g := range req.Groups {
		res := transport.DescribeShareGroupOffsetsGroupResult{Group: g.Group, Topics: []transport.DescribeShareGroupOffsetsTopicResult{}}
		topics := g.Topics
		if topics == nil {
			c, err := n.coordinatorOf(ctx, g.Group)
			var initialized []group.ShareTopicPartitions
			if err == nil {
				initialized, err = c.ShareInitializedPartitions(g.Group)
			}
			if err != nil {
				res.Err = err
				resp.Groups = append(resp.Groups, res)
				continue
			}
			for _, t := range initialized {
				topics = append(topics, transport.TopicPartitions{Topic: t.TopicName, Partitions: t.Partitions})
			}
		}
		for _, t := range topics {
			id, ok := ids[t.Topic]
			tr := transport.DescribeShareGroupOffsetsTopicResult{Topic: t.Topic, TopicID: id}
			for _, p := range t.Partitions {
				pr := transport.DescribeShareGroupOffsetsPartitionResult{Partition: p, StartOffset: -1, LeaderEpoch: -1, Lag: -1}
				if ok {
					st := n.shareState(ctx, sharecoord.SharePartition{Group: g.Group, TopicID: id, Partition: p})
					pr.StartOffset = st.StartOffset
					if hw, hosted := n.highWatermark(kafka.TopicPartition{Topic: t.Topic, Partition: p}); hosted && st.StartOffset >= 0 {
						pr.Lag = max(0, hw-st.StartOffset-int64(st.DeliveryCompleteCount()))
					}
				}
				tr.Partitions = append(tr.Partitions, pr)
			}
			res.Topics = append(res.Topics, tr)
		}
		resp.Groups = append(resp.Groups, res)
	}
	return resp, nil
}

// shareState reads sp's state from its share coordinator, without a
// leader epoch (nothing is fenced or written); start offset -1 when sp
// has no state or it could not be read in time.
func (n *Broker) shareState(ctx context.Context, sp sharecoord.SharePartition) sharecoord.State {
	ctx, cancel := context.WithTimeout(ctx, offsetsCommitTimeout)
	defer cancel()
	st, err := n.sharePersister().read(ctx, sp, -1)
	if err != nil {
		if !errors.Is(err, kafka.ErrInvalidRequest) { // never initialized
			n.logger.Debug("reading a share partition's state failed", "share_partition", sp.String(), "err", err)
		}
		return sharecoord.State{StartOffset: -1}
	}
	return st
}

// highWatermark returns the high watermark of the node's replica of tp,
// leader or follower, and whether it hosts one.
func (n *Broker) highWatermark(tp kafka.TopicPartition) (int64, bool) {
	h := n.member.replica(tp)
	if h == nil {
		return 0, false
	}
	return h.p.HighWatermark(), true
}

// AlterShareGroupOffsets sets the share-partition start offsets of an
// empty share group (made if there is none): the group coordinator
// records the partitions as initializing, each partition's state is
// initialized at its share coordinator at the start offset asked for,
// and the partitions initialized are recorded so. Each is initialized at
// a state epoch above its stored one, so that a leader still holding the
// old state is fenced at its next write and loads the new one; this
// node's own cached share partitions of the group are dropped at once.
func (n *Broker) AlterShareGroupOffsets(ctx context.Context, req *transport.AlterShareGroupOffsetsRequest) (*transport.AlterShareGroupOffsetsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	c, err := n.coordinatorOf(ctx, req.Group)
	if err != nil {
		return &transport.AlterShareGroupOffsetsResponse{Err: err}, nil
	}
	topics := make([]group.ShareOffsetsTopic, 0, len(req.Topics))
	for _, t := range req.Topics {
		gt := group.ShareOffsetsTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			gt.Partitions = append(gt.Partitions, group.ShareStartOffset{Partition: p.Partition, StartOffset: p.StartOffset})
		}
		topics = append(topics, gt)
	}
	plan, err := c.AlterShareOffsets(req.Group, topics)
	if err != nil {
		return &transport.AlterShareGroupOffsetsResponse{Err: err}, nil
	}
	pers := n.sharePersister()
	resp := &transport.AlterShareGroupOffsetsResponse{}
	var done, failed []transport.TopicIDPartitions
	for _, t := range plan.Topics {
		tr := transport.AlterShareGroupOffsetsTopicResult{Topic: t.Topic, TopicID: t.TopicID}
		var ok, bad []int32
		for _, p := range t.Partitions {
			err := p.Err
			if err == nil {
				sp := sharecoord.SharePartition{Group: req.Group, TopicID: t.TopicID, Partition: p.Partition}
				if err = n.initializeShareStartOffset(ctx, pers, sp, plan.StateEpoch, p.StartOffset); err == nil {
					ok = append(ok, p.Partition)
					n.shares.forget(req.Group, kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition})
				} else {
					bad = append(bad, p.Partition)
				}
			}
			tr.Partitions = append(tr.Partitions, transport.ShareOffsetsPartitionResult{Partition: p.Partition, Err: err})
		}
		if len(ok) > 0 {
			done = append(done, transport.TopicIDPartitions{TopicID: t.TopicID, Partitions: ok})
		}
		if len(bad) > 0 {
			failed = append(failed, transport.TopicIDPartitions{TopicID: t.TopicID, Partitions: bad})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	if len(failed) > 0 {
		if err := c.ShareStateInitializeFailed(req.Group, failed); err != nil {
			n.logger.Warn("recording share state not initialized failed", "group", req.Group, "err", err)
		}
	}
	if len(done) > 0 {
		if err := c.ShareStateInitialized(req.Group, done); err != nil {
			return &transport.AlterShareGroupOffsetsResponse{Err: fmt.Errorf("%w: recording the initialized share state: %v",
				kafka.ErrCoordinatorNotAvailable, err)}, nil
		}
	}
	return resp, nil
}

// initializeShareStartOffset initializes sp's state at startOffset, at
// state epoch epoch or one above the stored one, whichever is greater.
func (n *Broker) initializeShareStartOffset(ctx context.Context, pers sharePersister, sp sharecoord.SharePartition, epoch int32, startOffset int64) error {
	st, err := pers.read(ctx, sp, -1)
	switch {
	case err == nil:
		epoch = max(epoch, st.StateEpoch+1)
	case !errors.Is(err, kafka.ErrInvalidRequest): // not "never initialized"
		return err
	}
	return pers.initialize(ctx, sp, epoch, startOffset)
}

// DeleteShareGroupOffsets deletes the share state of whole topics of an
// empty share group: the group coordinator moves them from initialized
// to deleting, their share partitions' state is deleted at the share
// coordinators, and the topics deleted leave deleting. A topic whose
// state could not all be deleted is answered with the first error and
// stays deleting, to be deleted again by the next request.
func (n *Broker) DeleteShareGroupOffsets(ctx context.Context, req *transport.DeleteShareGroupOffsetsRequest) (*transport.DeleteShareGroupOffsetsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	c, err := n.coordinatorOf(ctx, req.Group)
	if err != nil {
		return &transport.DeleteShareGroupOffsetsResponse{Err: err}, nil
	}
	plan, err := c.BeginDeleteShareOffsets(req.Group, req.Topics)
	if err != nil {
		return &transport.DeleteShareGroupOffsetsResponse{Err: err}, nil
	}
	pers := n.sharePersister()
	resp := &transport.DeleteShareGroupOffsetsResponse{Topics: []transport.DeleteShareGroupOffsetsTopicResult{}}
	var failed []transport.DeleteShareGroupOffsetsTopicResult
	var deleted []string
	for _, t := range plan.Delete {
		var terr error
		for _, p := range t.Partitions {
			sp := sharecoord.SharePartition{Group: req.Group, TopicID: t.TopicID, Partition: p}
			if err := pers.delete(ctx, sp); err != nil && terr == nil {
				terr = err
			}
			n.shares.forget(req.Group, kafka.TopicPartition{Topic: t.TopicName, Partition: p})
		}
		if terr != nil {
			failed = append(failed, transport.DeleteShareGroupOffsetsTopicResult{Topic: t.TopicName, TopicID: t.TopicID, Err: terr})
			continue
		}
		deleted = append(deleted, t.TopicName)
		resp.Topics = append(resp.Topics, transport.DeleteShareGroupOffsetsTopicResult{Topic: t.TopicName, TopicID: t.TopicID})
	}
	if len(deleted) > 0 {
		if err := c.CompleteDeleteShareOffsets(req.Group, deleted); err != nil {
			return &transport.DeleteShareGroupOffsetsResponse{Err: err}, nil
		}
	}
	resp.Topics = append(resp.Topics, failed...)
	for _, e := range plan.Errors {
		resp.Topics = append(resp.Topics, transport.DeleteShareGroupOffsetsTopicResult{Topic: e.Topic, TopicID: e.TopicID, Err: e.Err})
	}
	return resp, nil
}

// forget drops the node's share partition of group on tp, if it keeps
// one, so that its next use loads the state from the share coordinator:
// the group's offsets were altered or deleted.
func (h *shareHost) forget(group string, tp kafka.TopicPartition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.parts, sharePartitionKey{group, tp})
}
