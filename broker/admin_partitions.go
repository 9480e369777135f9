package broker

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partition"
	"github.com/partlog/partlog/transport"
)

// This file answers the admin calls about partitions: DeleteRecords,
// DescribeLogDirs, ElectLeaders, DescribeProducers, and consumers'
// OffsetForLeaderEpoch.

// The Broker answers OffsetForLeaderEpoch for consumers too.
var _ transport.EpochClient = (*Broker)(nil)

// DeleteRecords moves each partition's log start offset up to the offset
// asked (-1: the high watermark), as Kafka's DeleteRecords: the records
// below it are no longer read, and the segments wholly below it are
// removed. Only a partition's leader answers; on a cluster its followers
// raise their log start offsets as they next fetch. An offset above the
// high watermark is refused with OFFSET_OUT_OF_RANGE. The new log start
// offsets are checkpointed before the answer, so that a restart keeps
// them.
func (n *Broker) DeleteRecords(ctx context.Context, req *transport.DeleteRecordsRequest) (*transport.DeleteRecordsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.DeleteRecordsResponse{}
	deleted := false
	for _, dp := range req.Partitions {
		res := transport.DeleteRecordsResult{TopicPartition: dp.TopicPartition, LowWatermark: -1}
		p, err := n.readablePartition(dp.Topic, dp.Partition)
		if err == nil {
			res.LowWatermark, err = p.DeleteRecordsBefore(dp.Offset)
			deleted = deleted || err == nil
		}
		res.Err = err
		resp.Partitions = append(resp.Partitions, res)
	}
	if deleted {
		if err := n.logs.Checkpoint(); err != nil {
			// The start offsets moved, but a restart may bring them back:
			// the caller must not take the deletions as done.
			err = fmt.Errorf("%w: checkpointing the new log start offsets: %w", kafka.ErrKafkaStorage, err)
			for i := range resp.Partitions {
				if resp.Partitions[i].Err == nil {
					resp.Partitions[i].Err = err
				}
			}
		}
	}
	return resp, nil
}

// DescribeLogDirs answers with the node's one log directory and the
// partitions it holds (those asked, or all), with their sizes and, for a
// follower, how far its log end offset is behind the high watermark.
func (n *Broker) DescribeLogDirs(ctx context.Context, req *transport.DescribeLogDirsRequest) (*transport.DescribeLogDirsResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	dir := transport.LogDir{Path: n.dir, TotalBytes: -1, UsableBytes: -1}
	var st unix.Statfs_t
	if err := unix.Statfs(n.dir, &st); err == nil {
		dir.TotalBytes, dir.UsableBytes = int64(st.Blocks)*st.Bsize, int64(st.Bavail)*st.Bsize
	}
	var asked map[kafka.TopicPartition]bool
	if req.Partitions != nil {
		asked = map[kafka.TopicPartition]bool{}
		for _, tp := range req.Partitions {
			asked[tp] = true
		}
	}
	for _, p := range n.hostedPartitions() {
		tp := kafka.TopicPartition{Topic: p.Topic(), Partition: p.ID()}
		if asked != nil && !asked[tp] {
			continue
		}
		lag := max(p.HighWatermark()-p.LogEndOffset(), 0)
		dir.Partitions = append(dir.Partitions, transport.LogDirPartition{TopicPartition: tp, Size: p.Log().Size(), OffsetLag: lag})
	}
	return &transport.DescribeLogDirsResponse{Dirs: []transport.LogDir{dir}}, nil
}

// hostedPartitions returns every partition replica the node has open: its
// replicas.
func (n *Broker) hostedPartitions() []*partition.Partition {
	return n.member.partitions()
}

// ElectLeaders elects each partition's preferred replica (the first of its
// assignment) as its leader, as Kafka's ElectLeaders with the PREFERRED
// type; nil Partitions means every partition. A partition its preferred
// replica leads already (every partition of a node on its own) answers
// ELECTION_NOT_NEEDED. Unclean
// elections are asked for with a topic's unclean.leader.election.enable;
// the UNCLEAN type is refused with INVALID_REQUEST.
func (n *Broker) ElectLeaders(ctx context.Context, req *transport.ElectLeadersRequest) (*transport.ElectLeadersResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	n.end()
	tps := req.Partitions
	if tps == nil {
		tps = n.allPartitions()
	}
	resp := &transport.ElectLeadersResponse{}
	for _, tp := range tps {
		res := transport.ElectionResult{TopicPartition: tp}
		switch {
		case req.Type != transport.PreferredElection:
			res.Err = fmt.Errorf("%w: partlog elects preferred leaders only; allow unclean elections with a topic's unclean.leader.election.enable", kafka.ErrInvalidRequest)
		default:
			res.Err = n.awaitChange(ctx)(n.member.ctl.ElectPreferredLeader(ctx, tp, n.seenLeaderEpoch(tp)))
		}
		resp.Partitions = append(resp.Partitions, res)
	}
	return resp, nil
}

// seenLeaderEpoch is tp's leader epoch in the node's metadata, or -1 when
// the node does not know the partition.
func (n *Broker) seenLeaderEpoch(tp kafka.TopicPartition) int32 {
	md, _ := n.member.metadata()
	if t, ok := md.Topics[tp.Topic]; ok && tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions) {
		return t.Partitions[tp.Partition].LeaderEpoch
	}
	return -1
}

// allPartitions names every partition of every topic the node knows:
// its own topics' and the cluster's.
func (n *Broker) allPartitions() []kafka.TopicPartition {
	var tps []kafka.TopicPartition
	for _, name := range n.ListTopics() {
		if d, err := n.DescribeTopics(name); err == nil && len(d) == 1 {
			for _, p := range d[0].Partitions {
				tps = append(tps, kafka.TopicPartition{Topic: name, Partition: p.Partition})
			}
		}
	}
	return tps
}

// DescribeProducers answers, for each partition this node leads, the
// idempotent producers it keeps state for (Kafka's DescribeProducers).
func (n *Broker) DescribeProducers(ctx context.Context, req *transport.DescribeProducersRequest) (*transport.DescribeProducersResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &transport.DescribeProducersResponse{}
	for _, tp := range req.Partitions {
		res := transport.PartitionProducers{TopicPartition: tp}
		p, err := n.readablePartition(tp.Topic, tp.Partition)
		var states []partition.ProducerStateEntry
		if err == nil {
			states, err = p.ProducerStates()
		}
		res.Err = err
		for _, s := range states {
			res.Producers = append(res.Producers, transport.ProducerState{ProducerID: s.ProducerID, ProducerEpoch: s.ProducerEpoch,
				LastSequence: s.LastSequence(), LastTimestamp: s.LastTimestamp, CurrentTxnStartOffset: -1})
		}
		resp.Partitions = append(resp.Partitions, res)
	}
	return resp, nil
}

// OffsetsForLeaderEpoch answers where each asked epoch ended in the
// leader's log (KIP-320: a consumer checks its position after a leader
// change). A request in another epoch than the leader's is refused with
// FENCED_LEADER_EPOCH (older) or UNKNOWN_LEADER_EPOCH (newer).
func (n *Broker) OffsetsForLeaderEpoch(ctx context.Context, req *kafka.OffsetsForLeaderEpochRequest) (*kafka.OffsetsForLeaderEpochResponse, error) {
	if err := n.begin(); err != nil {
		return nil, err
	}
	defer n.end()
	resp := &kafka.OffsetsForLeaderEpochResponse{}
	for _, rp := range req.Partitions {
		res := kafka.OffsetForLeaderEpochPartitionResponse{Topic: rp.Topic, Partition: rp.Partition,
			EpochEndOffset: kafka.EpochEndOffset{LeaderEpoch: kafka.UndefinedEpoch, EndOffset: -1}}
		p, err := n.readablePartition(rp.Topic, rp.Partition)
		if err == nil {
			switch cur := p.LeaderEpoch(); {
			case rp.CurrentLeaderEpoch >= 0 && rp.CurrentLeaderEpoch < cur:
				err = fmt.Errorf("%w: %s-%d is in leader epoch %d, not %d", kafka.ErrFencedLeaderEpoch, rp.Topic, rp.Partition, cur, rp.CurrentLeaderEpoch)
			case rp.CurrentLeaderEpoch > cur:
				err = fmt.Errorf("%w: %s-%d is in leader epoch %d, not yet %d", kafka.ErrUnknownLeaderEpoch, rp.Topic, rp.Partition, cur, rp.CurrentLeaderEpoch)
			default:
				res.LeaderEpoch, res.EndOffset = p.Log().EndOffsetForEpoch(rp.LeaderEpoch)
			}
		}
		res.Err = err
		resp.Partitions = append(resp.Partitions, res)
	}
	return resp, nil
}
