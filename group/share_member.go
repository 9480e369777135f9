package group

import (
	"slices"
	"time"
)

// shareMember is one member of a shareGroup: Kafka's ShareGroupMember.
// Every field but the deadline is persisted, the subscription part by a
// ShareGroupMemberMetadata record and the assignment part by a
// ShareGroupCurrentMemberAssignment record.
//
// A share member has no partitions to revoke: it moves to its target
// assignment, and the target epoch, at the heartbeat after the target
// changes, so its state (Kafka's MemberState) is always Stable (0).
type shareMember struct {
	id         string
	rackID     string
	clientID   string
	clientHost string
	// subscribedTopicNames are sorted, without duplicates.
	subscribedTopicNames []string

	memberEpoch         int32
	previousMemberEpoch int32
	// assigned are the partitions the member may fetch from, topic →
	// sorted partitions; other members may have the same ones.
	assigned map[string][]int32

	// sessionDeadline is when the member is removed unless it heartbeats.
	sessionDeadline time.Time
}

// clone returns a deep copy of m.
func (m *shareMember) clone() *shareMember {
	c := *m
	c.subscribedTopicNames = slices.Clone(m.subscribedTopicNames)
	c.assigned = clonePartitions(m.assigned)
	return &c
}

// sameMetadata reports whether m and o have the same subscription part,
// what a ShareGroupMemberMetadata record holds.
func (m *shareMember) sameMetadata(o *shareMember) bool {
	return m.id == o.id && m.rackID == o.rackID && m.clientID == o.clientID && m.clientHost == o.clientHost &&
		slices.Equal(m.subscribedTopicNames, o.subscribedTopicNames)
}

// sameAssignment reports whether m and o have the same assignment part,
// what a ShareGroupCurrentMemberAssignment record holds.
func (m *shareMember) sameAssignment(o *shareMember) bool {
	return m.memberEpoch == o.memberEpoch && m.previousMemberEpoch == o.previousMemberEpoch &&
		equalPartitions(m.assigned, o.assigned)
}

// subscribes reports whether m subscribes to topic t.
func (m *shareMember) subscribes(t string) bool {
	_, ok := slices.BinarySearch(m.subscribedTopicNames, t)
	return ok
}
