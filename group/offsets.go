package group

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/partlog/partlog/internal/xsync"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// Commit handles an OffsetCommit. A member commits in its generation; a
// client outside group membership commits with transport.NoGeneration and
// no member id, which only a group without members accepts. Each offset
// is written to the group's partition before the answer.
func (c *Coordinator) Commit(req *transport.OffsetCommitRequest) *transport.OffsetCommitResponse {
	c.mu.Lock()
	lock := c.commitLocks[req.Group]
	if lock == nil {
		lock = new(xsync.Mutex)
		c.commitLocks[req.Group] = lock
	}
	c.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()

	c.mu.Lock()
	err := c.checkCommitLocked(req)
	now := c.opts.Now()
	resp := &transport.OffsetCommitResponse{Topics: make([]transport.OffsetCommitTopicResponse, len(req.Topics))}
	var recs []Record
	var values []OffsetValue
	var keys []kafka.TopicPartition
	for i, t := range req.Topics {
		tr := &resp.Topics[i]
		tr.Topic = t.Topic
		tr.Partitions = make([]transport.OffsetCommitPartitionResponse, len(t.Partitions))
		for j, p := range t.Partitions {
			pr := &tr.Partitions[j]
			pr.Partition = p.Partition
			switch {
			case err != nil:
				pr.Err = err
			case len(p.Metadata) > c.opts.MaxMetadataBytes:
				pr.Err = fmt.Errorf("%w: %d bytes, the most is %d", kafka.ErrOffsetMetadataTooLarge, len(p.Metadata), c.opts.MaxMetadataBytes)
			default:
				v := OffsetValue{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, CommitTimestamp: now.UnixMilli(), ExpireTimestamp: -1}
				recs = append(recs, Record{Key: OffsetKey(req.Group, t.Topic, p.Partition).Encode(), Value: v.Encode()})
				values = append(values, v)
				keys = append(keys, kafka.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			}
		}
	}
	if len(recs) == 0 {
		c.mu.Unlock()
		return resp
	}
	if m := c.groups[req.Group].memberOrNil(req.MemberID); m != nil {
		m.lastHeartbeat = now
	}
	partition := c.PartitionFor(req.Group)
	c.mu.Unlock()

	// Written without the coordinator's lock; the group's commit lock
	// keeps its commits in order in the log and in the cache.
	if werr := c.log.Append(partition, recs); werr != nil {
		werr = fmt.Errorf("%w: writing offsets failed: %v", kafka.ErrCoordinatorNotAvailable, werr)
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if pr := &resp.Topics[i].Partitions[j]; pr.Err == nil {
					pr.Err = werr
				}
			}
		}
		return resp
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[req.Group]
	if g == nil {
		g = newGroup(req.Group, partition, now)
		c.groups[req.Group] = g
	}
	for i, k := range keys {
		g.offsets[k] = values[i]
	}
	return resp
}

// checkCommitLocked says whether a commit may go ahead, as Kafka's
// handleCommitOffsets does.
func (c *Coordinator) checkCommitLocked(req *transport.OffsetCommitRequest) error {
	if c.closed {
		return errClosed
	}
	if req.Group == "" {
		return fmt.Errorf("%w: empty group id", kafka.ErrInvalidGroupID)
	}
	g := c.groups[req.Group]
	if g != nil && g.consumer != nil {
		return g.checkConsumerCommit(req.MemberID, req.GenerationID)
	}
	if g != nil && g.share != nil {
		return fmt.Errorf("%w: %q is a share group", kafka.ErrGroupIDNotFound, g.id)
	}
	simple := req.GenerationID < 0 && req.MemberID == ""
	switch {
	case g == nil || g.state == Empty && len(g.members) == 0:
		if simple {
			return nil
		}
		if g == nil {
			return fmt.Errorf("%w: group %q has no generation %d", kafka.ErrIllegalGeneration, req.Group, req.GenerationID)
		}
		return fmt.Errorf("%w: group %q has no members", kafka.ErrUnknownMemberID, req.Group)
	case g.state == CompletingRebalance:
		return fmt.Errorf("%w: group %q", kafka.ErrRebalanceInProgress, req.Group)
	}
	return g.checkMember(req.MemberID, req.GroupInstanceID, req.GenerationID)
}

// checkMember says whether a member may commit in generation: it must be
// a member, with its static instance id, in the group's generation.
func (g *group) checkMember(memberID, instanceID string, generation int32) error {
	m := g.member(memberID)
	switch {
	case m == nil:
		return fmt.Errorf("%w: %q", kafka.ErrUnknownMemberID, memberID)
	case instanceID != "" && m.instanceID != instanceID:
		return fmt.Errorf("%w: member %q has instance id %q", kafka.ErrFencedInstanceID, m.id, m.instanceID)
	case generation != g.generation:
		return fmt.Errorf("%w: generation %d, the group is at %d", kafka.ErrIllegalGeneration, generation, g.generation)
	}
	return nil
}

// Fetch handles an OffsetFetch: the committed offsets of the partitions
// asked for (-1 where there is none), or of every partition with one.
func (c *Coordinator) Fetch(req *transport.OffsetFetchRequest) *transport.OffsetFetchResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return &transport.OffsetFetchResponse{Err: errClosed}
	}
	g := c.groups[req.Group]
	resp := &transport.OffsetFetchResponse{}
	if req.Topics == nil {
		if g == nil {
			return resp
		}
		for _, tp := range g.sortedPartitions() {
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != tp.Topic {
				resp.Topics = append(resp.Topics, transport.OffsetFetchTopicResponse{Topic: tp.Topic})
			}
			t := &resp.Topics[len(resp.Topics)-1]
			t.Partitions = append(t.Partitions, offsetFetched(tp.Partition, g.offsets[tp]))
		}
		return resp
	}
	for _, t := range req.Topics {
		tr := transport.OffsetFetchTopicResponse{Topic: t.Topic}
		for _, p := range t.Partitions {
			v, ok := OffsetValue{}, false
			if g != nil {
				v, ok = g.offsets[kafka.TopicPartition{Topic: t.Topic, Partition: p}]
			}
			if req.RequireStable && c.unstableLocked(req.Group, kafka.TopicPartition{Topic: t.Topic, Partition: p}) {
				tr.Partitions = append(tr.Partitions, transport.OffsetFetchPartitionResponse{Partition: p, Offset: -1, LeaderEpoch: -1,
					Err: fmt.Errorf("%w: group %q has offsets of an open transaction for %s-%d", kafka.ErrUnstableOffsetCommit, req.Group, t.Topic, p)})
				continue
			}
			if !ok {
				tr.Partitions = append(tr.Partitions, transport.OffsetFetchPartitionResponse{Partition: p, Offset: -1, LeaderEpoch: -1})
				continue
			}
			tr.Partitions = append(tr.Partitions, offsetFetched(p, v))
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp
}

func offsetFetched(p int32, v OffsetValue) transport.OffsetFetchPartitionResponse {
	return transport.OffsetFetchPartitionResponse{Partition: p, Offset: v.Offset, LeaderEpoch: v.LeaderEpoch, Metadata: v.Metadata}
}

func compareTP(a, b kafka.TopicPartition) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}
