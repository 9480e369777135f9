package consumer

import (
	"cmp"
	"slices"

	"github.com/partlog/partlog/kafka"
)

// RebalanceProtocol is how a consumer gives partitions up in a rebalance.
type RebalanceProtocol int8

// The rebalance protocols.
const (
	// Eager: every member revokes every partition before it rejoins, and
	// the leader assigns them all afresh (Kafka's classic protocol).
	Eager RebalanceProtocol = iota
	// Cooperative: members keep their partitions through a rebalance; the
	// leader takes away only those that must move, which their owners
	// revoke before a second rebalance gives them to their new owners
	// (KIP-429).
	Cooperative
)

// GroupMember is one member of a group, as the leader's assignor sees it.
type GroupMember struct {
	// MemberID is the id the coordinator gave the member; Assign keys its
	// answer by it.
	MemberID string
	// InstanceID is the member's group.instance.id, or empty.
	InstanceID string
	// Subscription is the member's subscription, decoded from its
	// JoinGroup metadata for the group's protocol.
	Subscription Subscription
}

// Assignor assigns a group's partitions to its members; the group leader
// runs it, as in Kafka, and every member must support the one the group
// chooses. Range, RoundRobin and CooperativeSticky are Kafka's; a user's
// own is set with the Assignors option.
type Assignor interface {
	// Name is the protocol name members agree on ("range",
	// "roundrobin", "cooperative-sticky").
	Name() string
	// Protocol is the rebalance protocol the assignor supports.
	Protocol() RebalanceProtocol
	// Assign returns each member's partitions, keyed by member id.
	// partitions holds the partition count of every topic a member
	// subscribes to that exists. Members are sorted as Kafka sorts them:
	// by instance id where both have one, else by member id.
	Assign(members []GroupMember, partitions map[string]int32) map[string][]kafka.TopicPartition
}

// sortMembers sorts members as Kafka's MemberInfo compares them.
func sortMembers(members []GroupMember) {
	slices.SortStableFunc(members, func(a, b GroupMember) int {
		if a.InstanceID != "" && b.InstanceID != "" {
			return cmp.Compare(a.InstanceID, b.InstanceID)
		}
		if a.InstanceID != "" {
			return -1
		}
		if b.InstanceID != "" {
			return 1
		}
		return cmp.Compare(a.MemberID, b.MemberID)
	})
}

func compareTP(a, b kafka.TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// Range returns Kafka's RangeAssignor ("range"): for each topic, the
// members subscribed to it, sorted, get consecutive ranges of its
// partitions, the first ones one more when the partitions do not divide
// evenly. With 2 members and 2 topics of 3 partitions, C0 gets t0p0, t0p1,
// t1p0, t1p1 and C1 gets t0p2, t1p2.
func Range() Assignor { return rangeAssignor{} }

type rangeAssignor struct{}

func (rangeAssignor) Name() string                { return "range" }
func (rangeAssignor) Protocol() RebalanceProtocol { return Eager }

func (rangeAssignor) Assign(members []GroupMember, partitions map[string]int32) map[string][]kafka.TopicPartition {
	members = slices.Clone(members)
	sortMembers(members)
	out := emptyAssignment(members)
	topics := subscribedTopics(members, partitions)
	for _, t := range topics {
		var subs []string
		for _, m := range members {
			if slices.Contains(m.Subscription.Topics, t) {
				subs = append(subs, m.MemberID)
			}
		}
		n := int(partitions[t])
		per, extra := n/len(subs), n%len(subs)
		for i, id := range subs {
			start := i*per + min(i, extra)
			length := per
			if i < extra {
				length++
			}
			for p := start; p < start+length; p++ {
				out[id] = append(out[id], kafka.TopicPartition{Topic: t, Partition: int32(p)})
			}
		}
	}
	return out
}

// RoundRobin returns Kafka's RoundRobinAssignor ("roundrobin"): every
// partition of every subscribed topic, sorted, goes to the next member in
// a circle of the sorted members, skipping members not subscribed to its
// topic. With 2 members and 2 topics of 3 partitions, C0 gets t0p0, t0p2,
// t1p1 and C1 gets t0p1, t1p0, t1p2.
func RoundRobin() Assignor { return roundRobinAssignor{} }

type roundRobinAssignor struct{}

func (roundRobinAssignor) Name() string                { return "roundrobin" }
func (roundRobinAssignor) Protocol() RebalanceProtocol { return Eager }

func (roundRobinAssignor) Assign(members []GroupMember, partitions map[string]int32) map[string][]kafka.TopicPartition {
	members = slices.Clone(members)
	sortMembers(members)
	out := emptyAssignment(members)
	if len(members) == 0 {
		return out
	}
	next := 0
	for _, t := range subscribedTopics(members, partitions) {
		for p := range partitions[t] {
			for !slices.Contains(members[next].Subscription.Topics, t) {
				next = (next + 1) % len(members)
			}
			id := members[next].MemberID
			out[id] = append(out[id], kafka.TopicPartition{Topic: t, Partition: p})
			next = (next + 1) % len(members)
		}
	}
	return out
}

func emptyAssignment(members []GroupMember) map[string][]kafka.TopicPartition {
	out := make(map[string][]kafka.TopicPartition, len(members))
	for _, m := range members {
		out[m.MemberID] = nil
	}
	return out
}

// subscribedTopics returns the topics some member subscribes to that
// exist, sorted.
func subscribedTopics(members []GroupMember, partitions map[string]int32) []string {
	var out []string
	for _, m := range members {
		for _, t := range m.Subscription.Topics {
			if _, ok := partitions[t]; ok && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

func sortTPs(tps []kafka.TopicPartition) { slices.SortFunc(tps, compareTP) }
