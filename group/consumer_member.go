package group

import (
	"maps"
	"slices"
	"time"
)

// The member epochs a ConsumerGroupHeartbeat gives special meanings.
const (
	// joinEpoch joins the group, or rejoins it after being fenced.
	joinEpoch int32 = 0
	// leaveEpoch leaves the group: the member's partitions are freed.
	leaveEpoch int32 = -1
	// staticLeaveEpoch is a static member's temporary leave: it keeps its
	// instance id and its assignment until its session expires, for a new
	// member with the same instance id to take over.
	staticLeaveEpoch int32 = -2
)

// consumerMemberState is where a member is in its reconciliation towards
// its target assignment: Kafka's MemberState, with its values as the
// ConsumerGroupCurrentMemberAssignment record stores them.
//
//	          partitions to revoke
//	Stable ───────────────────────────▶ UnrevokedPartitions
//	  ▲  ▲                                        │ revoked: the owned partitions
//	  │  └──────── none held by others ───────────┤ no longer hold them
//	  │                                           ▼ some held by others
//	  └───────── all released ────────── UnreleasedPartitions
type consumerMemberState int8

// The member states.
const (
	// consumerMemberStable: the member has its target assignment, or is
	// about to get it at its next heartbeat (its epoch is older than the
	// target's).
	consumerMemberStable consumerMemberState = 0
	// consumerMemberUnrevokedPartitions: the member must give up
	// partitions (its pending revocation) before it moves to the target
	// epoch; it keeps its epoch until its heartbeat's owned partitions
	// no longer hold them.
	consumerMemberUnrevokedPartitions consumerMemberState = 1
	// consumerMemberUnreleasedPartitions: the member is at the target
	// epoch but waits for partitions of its target that other members
	// have not revoked yet.
	consumerMemberUnreleasedPartitions consumerMemberState = 2
)

// String returns the state as Kafka's MemberState spells it.
func (s consumerMemberState) String() string {
	switch s {
	case consumerMemberStable:
		return "stable"
	case consumerMemberUnrevokedPartitions:
		return "unrevoked_partitions"
	case consumerMemberUnreleasedPartitions:
		return "unreleased_partitions"
	}
	return "unknown"
}

// consumerMember is one member of a consumerGroup: Kafka's
// ConsumerGroupMember. Every field but the two deadlines is persisted
// (by a ConsumerGroupMemberMetadata record for the subscription part, a
// ConsumerGroupCurrentMemberAssignment record for the assignment part).
type consumerMember struct {
	id         string
	instanceID string // group.instance.id; empty for a dynamic member
	rackID     string
	clientID   string
	clientHost string

	// subscribedTopicNames are sorted, without duplicates.
	subscribedTopicNames []string
	// subscribedTopicRegex is a regular expression (RE2 syntax, as
	// Kafka's RE2/J) that a topic's whole name must match; empty for
	// none.
	subscribedTopicRegex string
	// serverAssignor is the assignor the member prefers; empty for the
	// group's choice.
	serverAssignor   string
	rebalanceTimeout time.Duration

	memberEpoch         int32
	previousMemberEpoch int32
	state               consumerMemberState
	// assigned are the partitions the member may consume; pending
	// revocation those it must give up. No partition is in both, nor in
	// two members' sets: that is the group's invariant.
	assigned          map[string][]int32
	pendingRevocation map[string][]int32

	// sessionDeadline is when the member is removed unless it heartbeats.
	sessionDeadline time.Time
	// rebalanceDeadline, while the member is UnrevokedPartitions, is when
	// it is fenced unless it has revoked; zero otherwise.
	rebalanceDeadline time.Time
}

// clone returns a deep copy of m.
func (m *consumerMember) clone() *consumerMember {
	c := *m
	c.subscribedTopicNames = slices.Clone(m.subscribedTopicNames)
	c.assigned = clonePartitions(m.assigned)
	c.pendingRevocation = clonePartitions(m.pendingRevocation)
	return &c
}

// sameMetadata reports whether m and o have the same subscription part,
// what a ConsumerGroupMemberMetadata record holds.
func (m *consumerMember) sameMetadata(o *consumerMember) bool {
	return m.id == o.id && m.instanceID == o.instanceID && m.rackID == o.rackID &&
		m.clientID == o.clientID && m.clientHost == o.clientHost &&
		slices.Equal(m.subscribedTopicNames, o.subscribedTopicNames) &&
		m.subscribedTopicRegex == o.subscribedTopicRegex && m.serverAssignor == o.serverAssignor &&
		m.rebalanceTimeout == o.rebalanceTimeout
}

// sameAssignment reports whether m and o have the same assignment part,
// what a ConsumerGroupCurrentMemberAssignment record holds.
func (m *consumerMember) sameAssignment(o *consumerMember) bool {
	return m.memberEpoch == o.memberEpoch && m.previousMemberEpoch == o.previousMemberEpoch &&
		m.state == o.state && equalPartitions(m.assigned, o.assigned) &&
		equalPartitions(m.pendingRevocation, o.pendingRevocation)
}

// isReconciledTo reports whether the member has the target assignment of
// epoch: Kafka's ConsumerGroupMember.isReconciledTo.
func (m *consumerMember) isReconciledTo(epoch int32) bool {
	return m.state == consumerMemberStable && m.memberEpoch == epoch
}

// The helpers below work on partition sets as topic → sorted partitions.
// A topic with no partitions is left out, so that two sets are equal when
// they hold the same partitions, and nil is the empty set. None of them
// modifies its arguments.

// clonePartitions returns a deep copy of ps, leaving out empty topics.
func clonePartitions(ps map[string][]int32) map[string][]int32 {
	if len(ps) == 0 {
		return nil
	}
	out := make(map[string][]int32, len(ps))
	for t, p := range ps {
		if len(p) > 0 {
			out[t] = slices.Clone(p)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// normalizePartitions returns ps with each topic's partitions sorted and
// deduplicated and empty topics left out.
func normalizePartitions(ps map[string][]int32) map[string][]int32 {
	out := clonePartitions(ps)
	for t, p := range out {
		slices.Sort(p)
		out[t] = slices.Compact(p)
	}
	return out
}

// equalPartitions reports whether a and b hold the same partitions.
func equalPartitions(a, b map[string][]int32) bool {
	return maps.EqualFunc(clonePartitions(a), clonePartitions(b), func(x, y []int32) bool { return slices.Equal(x, y) })
}

// partitionsWhere returns the partitions of a for which keep is true.
func partitionsWhere(a map[string][]int32, keep func(t string, p int32) bool) map[string][]int32 {
	var out map[string][]int32
	for t, ps := range a {
		for _, p := range ps {
			if keep(t, p) {
				if out == nil {
					out = map[string][]int32{}
				}
				out[t] = append(out[t], p)
			}
		}
	}
	return out
}

// hasPartition reports whether ps holds partition p of topic t.
func hasPartition(ps map[string][]int32, t string, p int32) bool {
	_, ok := slices.BinarySearch(ps[t], p)
	return ok
}

// intersectPartitions returns a ∩ b.
func intersectPartitions(a, b map[string][]int32) map[string][]int32 {
	return partitionsWhere(a, func(t string, p int32) bool { return hasPartition(b, t, p) })
}

// subtractPartitions returns a − b.
func subtractPartitions(a, b map[string][]int32) map[string][]int32 {
	return partitionsWhere(a, func(t string, p int32) bool { return !hasPartition(b, t, p) })
}

// unionPartitions returns a ∪ b.
func unionPartitions(a, b map[string][]int32) map[string][]int32 {
	out := clonePartitions(a)
	for t, ps := range b {
		for _, p := range ps {
			if !hasPartition(out, t, p) {
				if out == nil {
					out = map[string][]int32{}
				}
				out[t] = append(out[t], p)
				slices.Sort(out[t])
			}
		}
	}
	return out
}

// overlapsPartitions reports whether a and b share a partition.
func overlapsPartitions(a, b map[string][]int32) bool {
	for t, ps := range a {
		for _, p := range ps {
			if hasPartition(b, t, p) {
				return true
			}
		}
	}
	return false
}

// subsetPartitions reports whether every partition of a is in b.
func subsetPartitions(a, b map[string][]int32) bool {
	return len(subtractPartitions(a, b)) == 0
}

// countPartitions returns how many partitions ps holds.
func countPartitions(ps map[string][]int32) int {
	n := 0
	for _, p := range ps {
		n += len(p)
	}
	return n
}
