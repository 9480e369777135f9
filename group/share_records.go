package group

import (
	"maps"
	"slices"
	"time"
)

// The records of a share group (KIP-932): what its coordinator writes to
// __consumer_offsets so that a new coordinator rebuilds the group, as
// Kafka 4.1's group-coordinator writes them. Each type is named after
// Kafka's record and holds its key's and value's fields; one with
// Tombstone set has a null value and deletes its key (its value fields
// are zero).
//
//	record                               key            value
//	shareGroupMemberMetadata             group, member  the member's rack, client and subscription
//	shareGroupMetadata                   group          group epoch, metadata hash
//	shareGroupTargetAssignmentMetadata   group          target assignment epoch
//	shareGroupTargetAssignmentMember     group, member  the member's target assignment
//	shareGroupCurrentMemberAssignment    group, member  the member's epochs and assignment
//	shareGroupStatePartitionMetadata     group          partitions whose share state is
//	                                                    initializing, initialized; topics deleting
//
// The latest record of each key is the state, so the topic can be
// compacted. A member's records are deleted in Kafka's order: current
// assignment, target assignment, metadata.
type shareRecord interface {
	// shareGroupID returns the id of the group the record is of.
	shareGroupID() string
}

// shareGroupMetadata is Kafka's ShareGroupMetadata record: the group
// epoch and the hash of the subscribed topics at that epoch. Its
// tombstone deletes the group.
type shareGroupMetadata struct {
	GroupID      string
	Epoch        int32
	MetadataHash int64
	Tombstone    bool
}

// shareGroupMemberMetadata is Kafka's ShareGroupMemberMetadata record: a
// member's rack, client and subscription. Its tombstone removes the
// member.
type shareGroupMemberMetadata struct {
	GroupID              string
	MemberID             string
	RackID               string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	Tombstone            bool
}

// shareGroupTargetAssignmentMetadata is Kafka's
// ShareGroupTargetAssignmentMetadata record: the epoch of the target
// assignment, written after the members' target assignments of that
// epoch.
type shareGroupTargetAssignmentMetadata struct {
	GroupID         string
	AssignmentEpoch int32
	Tombstone       bool
}

// shareGroupTargetAssignmentMember is Kafka's
// ShareGroupTargetAssignmentMember record: a member's target assignment,
// topic → sorted partitions.
type shareGroupTargetAssignmentMember struct {
	GroupID         string
	MemberID        string
	TopicPartitions map[string][]int32
	Tombstone       bool
}

// shareGroupCurrentMemberAssignment is Kafka's
// ShareGroupCurrentMemberAssignment record: a member's epochs, state
// (always 0, Stable, for a share member) and assigned partitions.
type shareGroupCurrentMemberAssignment struct {
	GroupID             string
	MemberID            string
	MemberEpoch         int32
	PreviousMemberEpoch int32
	State               int8
	AssignedPartitions  map[string][]int32
	Tombstone           bool
}

// shareGroupStatePartitionMetadata is Kafka's
// ShareGroupStatePartitionMetadata record: the partitions whose
// share-group state the share coordinator is initializing and has
// initialized, topic → sorted partitions, and the topics whose state it
// is deleting, sorted.
type shareGroupStatePartitionMetadata struct {
	GroupID            string
	InitializingTopics map[string][]int32
	InitializedTopics  map[string][]int32
	DeletingTopics     []string
	Tombstone          bool
}

// shareGroupID returns the record's group id; each record type has it.
func (r shareGroupMetadata) shareGroupID() string                 { return r.GroupID }
func (r shareGroupMemberMetadata) shareGroupID() string           { return r.GroupID }
func (r shareGroupTargetAssignmentMetadata) shareGroupID() string { return r.GroupID }
func (r shareGroupTargetAssignmentMember) shareGroupID() string   { return r.GroupID }
func (r shareGroupCurrentMemberAssignment) shareGroupID() string  { return r.GroupID }
func (r shareGroupStatePartitionMetadata) shareGroupID() string   { return r.GroupID }

// memberMetadataRecord returns m's ShareGroupMemberMetadata record.
func (g *shareGroup) memberMetadataRecord(m *shareMember) shareGroupMemberMetadata {
	return shareGroupMemberMetadata{GroupID: g.id, MemberID: m.id, RackID: m.rackID, ClientID: m.clientID,
		ClientHost: m.clientHost, SubscribedTopicNames: slices.Clone(m.subscribedTopicNames)}
}

// currentAssignmentRecord returns m's ShareGroupCurrentMemberAssignment
// record.
func (g *shareGroup) currentAssignmentRecord(m *shareMember) shareGroupCurrentMemberAssignment {
	return shareGroupCurrentMemberAssignment{GroupID: g.id, MemberID: m.id, MemberEpoch: m.memberEpoch,
		PreviousMemberEpoch: m.previousMemberEpoch, AssignedPartitions: clonePartitions(m.assigned)}
}

// write applies r to g and appends it to out: the one way a heartbeat,
// a tick or a change of topics changes what g persists, so that
// replaying the records written rebuilds g exactly.
func (g *shareGroup) write(out *[]shareRecord, r shareRecord) {
	g.replay(r)
	*out = append(*out, r)
}

// replay applies one record to g, as Kafka's GroupMetadataManager.replay
// does. It takes the records as they come: a member's assignment record
// may come before its metadata record, and a tombstone of something g
// does not have does nothing.
func (g *shareGroup) replay(r shareRecord) {
	switch r := r.(type) {
	case shareGroupMetadata:
		if r.Tombstone {
			g.deleted, g.groupEpoch, g.metadataHash = true, 0, 0
			return
		}
		g.deleted, g.groupEpoch, g.metadataHash = false, r.Epoch, r.MetadataHash
	case shareGroupMemberMetadata:
		if r.Tombstone {
			delete(g.members, r.MemberID)
			return
		}
		m := g.memberOrCreate(r.MemberID)
		m.rackID, m.clientID, m.clientHost = r.RackID, r.ClientID, r.ClientHost
		m.subscribedTopicNames = slices.Clone(r.SubscribedTopicNames)
	case shareGroupTargetAssignmentMetadata:
		if r.Tombstone {
			g.targetEpoch = 0
			return
		}
		g.targetEpoch = r.AssignmentEpoch
	case shareGroupTargetAssignmentMember:
		if r.Tombstone {
			delete(g.target, r.MemberID)
			return
		}
		g.target[r.MemberID] = normalizePartitions(r.TopicPartitions)
	case shareGroupCurrentMemberAssignment:
		if r.Tombstone {
			if m := g.members[r.MemberID]; m != nil {
				m.memberEpoch, m.previousMemberEpoch, m.assigned = leaveEpoch, leaveEpoch, nil
			}
			return
		}
		m := g.memberOrCreate(r.MemberID)
		m.memberEpoch, m.previousMemberEpoch = r.MemberEpoch, r.PreviousMemberEpoch
		m.assigned = normalizePartitions(r.AssignedPartitions)
	case shareGroupStatePartitionMetadata:
		if r.Tombstone {
			g.initializing, g.initialized, g.deleting, g.hasState = nil, nil, nil, false
			clear(g.initializingSince)
			return
		}
		g.initializing = normalizePartitions(r.InitializingTopics)
		g.initialized = normalizePartitions(r.InitializedTopics)
		g.deleting = slices.Clone(r.DeletingTopics)
		g.hasState = true
		for t := range g.initializingSince {
			if _, ok := g.initializing[t]; !ok {
				delete(g.initializingSince, t)
			}
		}
	}
}

// memberOrCreate returns the member with id, adding it (with epoch 0 and
// nothing assigned) if g has none.
func (g *shareGroup) memberOrCreate(id string) *shareMember {
	m := g.members[id]
	if m == nil {
		m = &shareMember{id: id}
		g.members[id] = m
	}
	return m
}

// replayShareGroup rebuilds a share group from its records, in the order
// they were written, as a coordinator does when it loads a partition of
// __consumer_offsets: the records of one group id (those of other groups
// are skipped), config being the coordinator's. It returns nil when there
// are no records or the last ones deleted the group.
//
// The records hold no time: as Kafka's coordinator does on load, every
// member's session starts at now, and so does the retry interval of the
// partitions being initialized. The records hold a hash of the
// subscribed topics, not the topics: the caller gives the group the
// topics that exist with setTopics before its next heartbeat, which bumps
// the epoch if they changed. Replaying what a group wrote gives a group
// with the same description that answers the same heartbeats the same
// way.
func replayShareGroup(config shareGroupConfig, records []shareRecord, now time.Time) *shareGroup {
	if len(records) == 0 {
		return nil
	}
	g := newShareGroup(records[0].shareGroupID(), config)
	for _, r := range records {
		if r.shareGroupID() == g.id {
			g.replay(r)
		}
	}
	if g.deleted {
		return nil
	}
	for _, m := range g.members {
		m.sessionDeadline = now.Add(g.config.SessionTimeout)
	}
	for t := range g.initializing {
		g.initializingSince[t] = now
	}
	return g
}

// tombstones returns the records that delete g, in the order Kafka's
// ShareGroup.createGroupTombstoneRecords writes them: every member's
// current assignment, every member's target assignment, the target
// epoch, every member's metadata, the share state, the group. The
// coordinator deletes an empty group this way (DeleteGroups); g is left
// as replaying them makes it, deleted.
func (g *shareGroup) tombstones() []shareRecord {
	var out []shareRecord
	ids := slices.Sorted(maps.Keys(g.members))
	for _, id := range ids {
		g.write(&out, shareGroupCurrentMemberAssignment{GroupID: g.id, MemberID: id, Tombstone: true})
	}
	for _, id := range ids {
		g.write(&out, shareGroupTargetAssignmentMember{GroupID: g.id, MemberID: id, Tombstone: true})
	}
	g.write(&out, shareGroupTargetAssignmentMetadata{GroupID: g.id, Tombstone: true})
	for _, id := range ids {
		g.write(&out, shareGroupMemberMetadata{GroupID: g.id, MemberID: id, Tombstone: true})
	}
	g.write(&out, shareGroupStatePartitionMetadata{GroupID: g.id, Tombstone: true})
	g.write(&out, shareGroupMetadata{GroupID: g.id, Tombstone: true})
	return out
}

// writeRemoveMember writes the tombstones of member id's records, in
// Kafka's order.
func (g *shareGroup) writeRemoveMember(out *[]shareRecord, id string) {
	g.write(out, shareGroupCurrentMemberAssignment{GroupID: g.id, MemberID: id, Tombstone: true})
	g.write(out, shareGroupTargetAssignmentMember{GroupID: g.id, MemberID: id, Tombstone: true})
	g.write(out, shareGroupMemberMetadata{GroupID: g.id, MemberID: id, Tombstone: true})
}
