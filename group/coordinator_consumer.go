package group

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// TopicInfo is a topic as consumer-protocol groups see it: its name, its
// id (the wire and __consumer_offsets name topics by id) and its
// partition count.
type TopicInfo struct {
	// Name is the topic's name.
	Name string
	// ID is the topic's id.
	ID [16]byte
	// Partitions is its partition count.
	Partitions int32
}

// topicIndex is the cluster's topics by name and by id, as
// Options.Topics gave them for one call.
type topicIndex struct {
	byName map[string]TopicInfo
	byID   map[[16]byte]string
}

func (c *Coordinator) topicsLocked() topicIndex {
	ix := topicIndex{byName: map[string]TopicInfo{}, byID: map[[16]byte]string{}}
	if c.opts.Topics == nil {
		return ix
	}
	for _, t := range c.opts.Topics() {
		ix.byName[t.Name], ix.byID[t.ID] = t, t.Name
	}
	return ix
}

// counts returns the partition count of each topic.
func (ix topicIndex) counts() map[string]int32 {
	out := make(map[string]int32, len(ix.byName))
	for name, t := range ix.byName {
		out[name] = t.Partitions
	}
	return out
}

func (ix topicIndex) id(name string) [16]byte { return ix.byName[name].ID }

func (ix topicIndex) name(id [16]byte) (string, bool) {
	name, ok := ix.byID[id]
	return name, ok
}

// byIDs translates partitions by topic name to partitions by topic id,
// sorted by name; topics the index does not know are left out.
func (ix topicIndex) byIDs(ps map[string][]int32) []transport.TopicIDPartitions {
	out := []transport.TopicIDPartitions{}
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		if t, ok := ix.byName[name]; ok {
			out = append(out, transport.TopicIDPartitions{TopicID: t.ID, Partitions: ps[name]})
		}
	}
	return out
}

// byNames translates partitions by topic id to partitions by topic name;
// ids the index does not know (a deleted topic) are left out.
func (ix topicIndex) byNames(ps []transport.TopicIDPartitions) map[string][]int32 {
	if ps == nil {
		return nil
	}
	out := map[string][]int32{}
	for _, p := range ps {
		if name, ok := ix.name(p.TopicID); ok {
			out[name] = append(out[name], p.Partitions...)
		}
	}
	return out
}

// consumerConfig is the configuration of the coordinator's
// consumer-protocol groups.
func (c *Coordinator) consumerConfig() consumerGroupConfig {
	return consumerGroupConfig{SessionTimeout: c.opts.ConsumerSessionTimeout, HeartbeatInterval: c.opts.ConsumerHeartbeatInterval,
		MaxSize: c.opts.MaxSize}
}

// errNotConsumerGroup answers a consumer-protocol request about a classic
// group that has members, as Kafka answers it.
func errNotConsumerGroup(id string) error {
	return fmt.Errorf("%w: %q is a classic group", kafka.ErrGroupIDNotFound, id)
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat (KIP-848): the
// member joins, heartbeats or
// leaves, the group recomputes its target assignment when its members,
// their subscriptions or the subscribed topics changed, and the member is
// moved one step towards its target (see reconcile). The changes are
// written to the group's partition of __consumer_offsets before the
// answer. A group id that has a classic group with members is answered
// GROUP_ID_NOT_FOUND; a classic group without members (only offsets)
// becomes a consumer-protocol group.
func (c *Coordinator) ConsumerHeartbeat(req *transport.ConsumerGroupHeartbeatRequest) *transport.ConsumerGroupHeartbeatResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return &transport.ConsumerGroupHeartbeatResponse{Err: errClosed}
	}
	if req.Group == "" {
		return &transport.ConsumerGroupHeartbeatResponse{Err: fmt.Errorf("%w: empty group id", kafka.ErrInvalidGroupID)}
	}
	now := c.opts.Now()
	g := c.groups[req.Group]
	switch {
	case g == nil:
		g = newGroup(req.Group, c.PartitionFor(req.Group), now)
		g.consumer = newConsumerGroup(req.Group, c.consumerConfig())
		c.groups[req.Group] = g
	case g.consumer == nil && len(g.members) > 0:
		return &transport.ConsumerGroupHeartbeatResponse{Err: errNotConsumerGroup(g.id)}
	case g.share != nil:
		return &transport.ConsumerGroupHeartbeatResponse{Err: fmt.Errorf("%w: %q is a share group", kafka.ErrGroupIDNotFound, g.id)}
	case g.consumer == nil:
		// A classic group without members (its offsets only) becomes a
		// consumer-protocol group: its classic metadata is deleted.
		if err := c.log.Append(g.partition, []Record{{Key: GroupKey(g.id).Encode()}}); err != nil {
			return &transport.ConsumerGroupHeartbeatResponse{Err: err}
		}
		g.state, g.protocolType, g.protocol, g.leader = Empty, "", "", ""
		g.consumer = newConsumerGroup(req.Group, c.consumerConfig())
	}
	ix := c.topicsLocked()
	before := g.consumer.clone()
	recs := g.consumer.setTopics(ix.counts(), now)
	hb := consumerHeartbeat{MemberID: req.MemberID, MemberEpoch: req.MemberEpoch, InstanceID: req.InstanceID, RackID: req.RackID,
		ClientID: req.ClientID, ClientHost: req.ClientHost, SubscribedTopicNames: req.SubscribedTopicNames,
		SubscribedTopicRegex: req.SubscribedTopicRegex, ServerAssignor: req.ServerAssignor, OwnedPartitions: ix.byNames(req.Owned)}
	if req.RebalanceTimeoutMillis >= 0 {
		d := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
		hb.RebalanceTimeout = &d
	}
	ans, more, err := g.consumer.heartbeat(hb, now)
	if err := c.storeConsumerLocked(g, append(recs, more...), ix); err != nil {
		g.consumer = before // nothing of this heartbeat happened
		return &transport.ConsumerGroupHeartbeatResponse{Err: err}
	}
	if err != nil {
		return &transport.ConsumerGroupHeartbeatResponse{Err: err, MemberID: req.MemberID}
	}
	resp := &transport.ConsumerGroupHeartbeatResponse{MemberID: ans.MemberID, MemberEpoch: ans.MemberEpoch,
		HeartbeatIntervalMillis: int32(ans.HeartbeatInterval.Milliseconds())}
	if ans.Assignment != nil {
		resp.Assignment = ix.byIDs(ans.Assignment)
	}
	return resp
}

// storeConsumerLocked writes a consumer-protocol group's records to its
// partition of __consumer_offsets, topics named by their ids.
func (c *Coordinator) storeConsumerLocked(g *group, recs []consumerRecord, ix topicIndex) error {
	if len(recs) == 0 {
		return nil
	}
	out := make([]Record, 0, len(recs))
	for _, r := range recs {
		key, value := encodeConsumerRecord(g.id, r, ix.id)
		out = append(out, Record{Key: key, Value: value})
	}
	if err := c.log.Append(g.partition, out); err != nil {
		c.logger(g).Warn("writing the group's state failed", "err", err)
		return err
	}
	return nil
}

// ConsumerDescribe handles a ConsumerGroupDescribe: each group's epochs,
// state, assignor and members with their assignments. A group the
// coordinator does not have, or a classic one, is GROUP_ID_NOT_FOUND.
func (c *Coordinator) ConsumerDescribe(req *transport.ConsumerGroupDescribeRequest) *transport.ConsumerGroupDescribeResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &transport.ConsumerGroupDescribeResponse{}
	ix := c.topicsLocked()
	for _, id := range req.Groups {
		d := transport.ConsumerGroupDescription{Group: id}
		g := c.groups[id]
		switch {
		case c.closed:
			d.Err = errClosed
		case g == nil || g.consumer == nil:
			d.Err = fmt.Errorf("%w: no consumer group %q", kafka.ErrGroupIDNotFound, id)
		default:
			desc := g.consumer.describe()
			d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName = desc.State.String(), desc.GroupEpoch, desc.AssignmentEpoch, desc.AssignorName
			for _, m := range desc.Members {
				d.Members = append(d.Members, transport.ConsumerGroupMemberDescription{
					MemberID: m.MemberID, InstanceID: m.InstanceID, RackID: m.RackID, MemberEpoch: m.MemberEpoch,
					ClientID: m.ClientID, ClientHost: m.ClientHost, SubscribedTopicNames: m.SubscribedTopicNames,
					SubscribedTopicRegex: m.SubscribedTopicRegex,
					Assignment:           ix.byIDs(m.Assignment), TargetAssignment: ix.byIDs(m.TargetAssignment),
				})
			}
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

// tickConsumerLocked expires the sessions and rebalance timeouts of a
// consumer-protocol group and writes what changed.
func (c *Coordinator) tickConsumerLocked(g *group, now time.Time) {
	if next := g.consumer.nextDeadline(); next.IsZero() || now.Before(next) {
		return // nothing expires: no clone, no work
	}
	before := g.consumer.clone()
	if recs := g.consumer.tick(now); len(recs) > 0 {
		if c.storeConsumerLocked(g, recs, c.topicsLocked()) != nil {
			g.consumer = before // expired again at the next tick
		}
	}
}

// checkConsumerCommit says whether a member of a consumer-protocol group
// may commit with epoch (an OffsetCommit's generation is the member
// epoch): a member of the group at that epoch; a commit from outside
// membership (epoch -1, no member id) only while the group is empty.
// Kafka answers an epoch behind the member's STALE_MEMBER_EPOCH, one
// ahead of it FENCED_MEMBER_EPOCH.
func (g *group) checkConsumerCommit(memberID string, epoch int32) error {
	if memberID == "" && epoch < 0 {
		if len(g.consumer.members) > 0 {
			return fmt.Errorf("%w: group %q has members", kafka.ErrUnknownMemberID, g.id)
		}
		return nil
	}
	m := g.consumer.members[memberID]
	switch {
	case m == nil:
		return fmt.Errorf("%w: %q", kafka.ErrUnknownMemberID, memberID)
	case epoch < m.memberEpoch:
		return fmt.Errorf("%w: epoch %d, the member is at %d", kafka.ErrStaleMemberEpoch, epoch, m.memberEpoch)
	case epoch > m.memberEpoch:
		return fmt.Errorf("%w: epoch %d, the member is at %d", kafka.ErrFencedMemberEpoch, epoch, m.memberEpoch)
	}
	return nil
}
