package group

import (
	"maps"
	"slices"
	"time"

	"github.com/partlog/partlog/kafka"
)

// The records of a consumer group (KIP-848): what its coordinator writes
// to __consumer_offsets so that a new coordinator rebuilds the group, as
// Kafka's group-coordinator writes them. Each type is named after Kafka's
// record and holds its key's and value's fields; one with Tombstone set
// has a null value and deletes its key (its value fields are zero).
//
//	record                                 key                value
//	consumerGroupMetadata                  group              group epoch
//	consumerGroupPartitionMetadata         group              partition counts of the subscribed topics
//	consumerGroupMemberMetadata            group, member      the member's subscription
//	consumerGroupTargetAssignmentMetadata  group              target assignment epoch
//	consumerGroupTargetAssignmentMember    group, member      the member's target assignment
//	consumerGroupCurrentMemberAssignment   group, member      the member's epochs, state and assignment
//
// The latest record of each key is the state, so the topic can be
// compacted. A member's records are deleted in the order Kafka deletes
// them: current assignment, target assignment, metadata. Encoding them
// with Kafka's schemas is left to the caller.
//
// consumerGroupPartitionMetadata is Kafka 3.x's subscription metadata
// (4.x keeps a hash of it in consumerGroupMetadata instead); keeping the
// partition counts lets a replayed group tell whether the topics changed
// while no coordinator had it.
type consumerRecord interface {
	// consumerGroupID returns the id of the group the record is of.
	consumerGroupID() string
}

// consumerGroupMetadata is Kafka's ConsumerGroupMetadata record: the
// group's epoch. Its tombstone deletes the group.
type consumerGroupMetadata struct {
	GroupID   string
	Epoch     int32
	Tombstone bool
}

// consumerGroupPartitionMetadata is Kafka's ConsumerGroupPartitionMetadata
// record: the partition count of each topic some member subscribes to
// that exists, as of the group epoch.
type consumerGroupPartitionMetadata struct {
	GroupID   string
	Topics    map[string]int32
	Tombstone bool
}

// consumerGroupMemberMetadata is Kafka's ConsumerGroupMemberMetadata
// record: a member's subscription. Its tombstone removes the member.
type consumerGroupMemberMetadata struct {
	GroupID              string
	MemberID             string
	InstanceID           string
	RackID               string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex string
	RebalanceTimeoutMs   int32
	ServerAssignor       string
	Tombstone            bool
}

// consumerGroupTargetAssignmentMetadata is Kafka's
// ConsumerGroupTargetAssignmentMetadata record: the epoch of the target
// assignment, written after the members' target assignments of that
// epoch.
type consumerGroupTargetAssignmentMetadata struct {
	GroupID         string
	AssignmentEpoch int32
	Tombstone       bool
}

// consumerGroupTargetAssignmentMember is Kafka's
// ConsumerGroupTargetAssignmentMember record: a member's target
// assignment, topic → sorted partitions.
type consumerGroupTargetAssignmentMember struct {
	GroupID         string
	MemberID        string
	TopicPartitions map[string][]int32
	Tombstone       bool
}

// consumerGroupCurrentMemberAssignment is Kafka's
// ConsumerGroupCurrentMemberAssignment record: a member's epochs, state,
// assigned partitions and partitions pending revocation.
type consumerGroupCurrentMemberAssignment struct {
	GroupID                     string
	MemberID                    string
	MemberEpoch                 int32
	PreviousMemberEpoch         int32
	State                       consumerMemberState
	AssignedPartitions          map[string][]int32
	PartitionsPendingRevocation map[string][]int32
	Tombstone                   bool
}

// consumerGroupID returns the record's group id; each record type has it.
func (r consumerGroupMetadata) consumerGroupID() string                 { return r.GroupID }
func (r consumerGroupPartitionMetadata) consumerGroupID() string        { return r.GroupID }
func (r consumerGroupMemberMetadata) consumerGroupID() string           { return r.GroupID }
func (r consumerGroupTargetAssignmentMetadata) consumerGroupID() string { return r.GroupID }
func (r consumerGroupTargetAssignmentMember) consumerGroupID() string   { return r.GroupID }
func (r consumerGroupCurrentMemberAssignment) consumerGroupID() string  { return r.GroupID }

// memberMetadataRecord returns m's ConsumerGroupMemberMetadata record.
func (g *consumerGroup) memberMetadataRecord(m *consumerMember) consumerGroupMemberMetadata {
	return consumerGroupMemberMetadata{
		GroupID: g.id, MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID,
		ClientID: m.clientID, ClientHost: m.clientHost,
		SubscribedTopicNames: slices.Clone(m.subscribedTopicNames), SubscribedTopicRegex: m.subscribedTopicRegex,
		RebalanceTimeoutMs: int32(m.rebalanceTimeout.Milliseconds()), ServerAssignor: m.serverAssignor,
	}
}

// currentAssignmentRecord returns m's ConsumerGroupCurrentMemberAssignment
// record.
func (g *consumerGroup) currentAssignmentRecord(m *consumerMember) consumerGroupCurrentMemberAssignment {
	return consumerGroupCurrentMemberAssignment{
		GroupID: g.id, MemberID: m.id, MemberEpoch: m.memberEpoch, PreviousMemberEpoch: m.previousMemberEpoch,
		State: m.state, AssignedPartitions: clonePartitions(m.assigned),
		PartitionsPendingRevocation: clonePartitions(m.pendingRevocation),
	}
}

// write applies r to g and appends it to out: the one way a heartbeat,
// a tick or a change of topics changes what g persists, so that
// replaying the records written rebuilds g exactly.
func (g *consumerGroup) write(out *[]consumerRecord, r consumerRecord) {
	g.replay(r)
	*out = append(*out, r)
}

// replay applies one record to g, as Kafka's GroupMetadataManager.replay
// does. It takes the records as they come: a member's assignment record
// may come before its metadata record, and a tombstone of something g
// does not have does nothing. Records that would give a partition two
// holders are applied anyway (the later holder wins in the index of
// holders); the coordinator never writes such.
func (g *consumerGroup) replay(r consumerRecord) {
	switch r := r.(type) {
	case consumerGroupMetadata:
		if r.Tombstone {
			g.deleted = true
			g.groupEpoch = 0
			return
		}
		g.deleted = false
		g.groupEpoch = r.Epoch
	case consumerGroupPartitionMetadata:
		if r.Tombstone {
			g.subscriptionMetadata = nil
			return
		}
		g.subscriptionMetadata = cloneCounts(r.Topics)
	case consumerGroupMemberMetadata:
		if r.Tombstone {
			g.removeMember(r.MemberID)
			return
		}
		m := g.memberOrCreate(r.MemberID)
		if m.instanceID != r.InstanceID {
			if m.instanceID != "" && g.staticMembers[m.instanceID] == m.id {
				delete(g.staticMembers, m.instanceID)
			}
			if r.InstanceID != "" {
				g.staticMembers[r.InstanceID] = m.id
			}
		}
		m.instanceID, m.rackID = r.InstanceID, r.RackID
		m.clientID, m.clientHost = r.ClientID, r.ClientHost
		m.subscribedTopicNames = slices.Clone(r.SubscribedTopicNames)
		m.subscribedTopicRegex = r.SubscribedTopicRegex
		m.rebalanceTimeout = time.Duration(r.RebalanceTimeoutMs) * time.Millisecond
		m.serverAssignor = r.ServerAssignor
	case consumerGroupTargetAssignmentMetadata:
		if r.Tombstone {
			g.targetEpoch = 0
			return
		}
		g.targetEpoch = r.AssignmentEpoch
	case consumerGroupTargetAssignmentMember:
		if r.Tombstone {
			delete(g.target, r.MemberID)
			return
		}
		g.target[r.MemberID] = normalizePartitions(r.TopicPartitions)
	case consumerGroupCurrentMemberAssignment:
		if r.Tombstone {
			if m := g.members[r.MemberID]; m != nil {
				g.release(m)
				m.memberEpoch, m.previousMemberEpoch, m.state = leaveEpoch, leaveEpoch, consumerMemberStable
				m.assigned, m.pendingRevocation = nil, nil
			}
			return
		}
		m := g.memberOrCreate(r.MemberID)
		g.release(m)
		m.memberEpoch, m.previousMemberEpoch, m.state = r.MemberEpoch, r.PreviousMemberEpoch, r.State
		m.assigned = normalizePartitions(r.AssignedPartitions)
		m.pendingRevocation = normalizePartitions(r.PartitionsPendingRevocation)
		g.claim(m)
	}
}

// memberOrCreate returns the member with id, adding it (with epoch 0 and
// nothing assigned) if g has none.
func (g *consumerGroup) memberOrCreate(id string) *consumerMember {
	m := g.members[id]
	if m == nil {
		m = &consumerMember{id: id}
		g.members[id] = m
	}
	return m
}

// removeMember removes the member with id and frees what it holds.
func (g *consumerGroup) removeMember(id string) {
	m := g.members[id]
	if m == nil {
		return
	}
	g.release(m)
	if m.instanceID != "" && g.staticMembers[m.instanceID] == id {
		delete(g.staticMembers, m.instanceID)
	}
	delete(g.members, id)
}

// release removes m's partitions (assigned and pending revocation) from
// the index of holders.
func (g *consumerGroup) release(m *consumerMember) {
	for _, ps := range []map[string][]int32{m.assigned, m.pendingRevocation} {
		for t, parts := range ps {
			for _, p := range parts {
				tp := kafka.TopicPartition{Topic: t, Partition: p}
				if g.holders[tp] == m.id {
					delete(g.holders, tp)
				}
			}
		}
	}
}

// claim adds m's partitions to the index of holders.
func (g *consumerGroup) claim(m *consumerMember) {
	for _, ps := range []map[string][]int32{m.assigned, m.pendingRevocation} {
		for t, parts := range ps {
			for _, p := range parts {
				g.holders[kafka.TopicPartition{Topic: t, Partition: p}] = m.id
			}
		}
	}
}

// replayConsumerGroup rebuilds a consumer group from its records, in the
// order they were written, as a coordinator does when it loads a
// partition of __consumer_offsets: the records of one group id (those of
// other groups are skipped), config being the coordinator's. It returns
// nil when there are no records or the last ones deleted the group.
//
// The records hold no time: as Kafka's coordinator does on load, every
// member's session starts at now, and so does the rebalance timeout of a
// member that has partitions to revoke. The records hold the partition
// counts of the topics the members subscribe to, not the others; the
// caller gives the group the topics that exist with setTopics, as after
// any change of topics (and, if they are the same, no record results).
// Replaying what a group wrote gives a group with the same description
// that answers the same heartbeats the same way.
func replayConsumerGroup(config consumerGroupConfig, records []consumerRecord, now time.Time) *consumerGroup {
	if len(records) == 0 {
		return nil
	}
	g := newConsumerGroup(records[0].consumerGroupID(), config)
	for _, r := range records {
		if r.consumerGroupID() == g.id {
			g.replay(r)
		}
	}
	if g.deleted {
		return nil
	}
	g.topics = cloneCounts(g.subscriptionMetadata)
	for _, m := range g.members {
		m.sessionDeadline = now.Add(g.config.SessionTimeout)
		if m.state == consumerMemberUnrevokedPartitions && len(m.pendingRevocation) > 0 {
			m.rebalanceDeadline = now.Add(m.rebalanceTimeout)
		}
	}
	return g
}

// tombstones returns the records that delete g: a tombstone for each of
// its members' records, then for the group's, in Kafka's order. The
// coordinator deletes an empty group this way, when its offsets have
// expired or it is deleted (DeleteGroups); g is left as replaying them
// makes it, deleted.
func (g *consumerGroup) tombstones() []consumerRecord {
	var out []consumerRecord
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		g.writeRemoveMember(&out, id)
	}
	g.write(&out, consumerGroupTargetAssignmentMetadata{GroupID: g.id, Tombstone: true})
	g.write(&out, consumerGroupPartitionMetadata{GroupID: g.id, Tombstone: true})
	g.write(&out, consumerGroupMetadata{GroupID: g.id, Tombstone: true})
	return out
}

// writeRemoveMember writes the tombstones of member id's records, in
// Kafka's order.
func (g *consumerGroup) writeRemoveMember(out *[]consumerRecord, id string) {
	g.write(out, consumerGroupCurrentMemberAssignment{GroupID: g.id, MemberID: id, Tombstone: true})
	g.write(out, consumerGroupTargetAssignmentMember{GroupID: g.id, MemberID: id, Tombstone: true})
	g.write(out, consumerGroupMemberMetadata{GroupID: g.id, MemberID: id, Tombstone: true})
}

// cloneCounts returns a copy of a topic → partition count map, nil when
// it is empty.
func cloneCounts(m map[string]int32) map[string]int32 {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
