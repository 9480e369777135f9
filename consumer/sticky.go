package consumer

import (
	"slices"

	"github.com/partlog/partlog/kafka"
)

// CooperativeSticky returns Kafka's CooperativeStickyAssignor
// ("cooperative-sticky") in spirit: a balanced assignment — no member has
// two partitions more than another that could take one — that keeps every
// partition with its owner unless balance requires moving it, used with
// the cooperative protocol. A partition that moves is withheld from its
// new owner for one rebalance: its old owner revokes it and rejoins, and
// the second rebalance hands it over, so that no partition ever has two
// owners at once (KIP-429).
//
// Its balancing is its own (a greedy pass and moves from the most loaded
// members), not Kafka's algorithm step by step: it moves the fewest
// partitions when members subscribe to the same topics, as Kafka's does.
func CooperativeSticky() Assignor { return stickyAssignor{} }

type stickyAssignor struct{}

func (stickyAssignor) Name() string                { return "cooperative-sticky" }
func (stickyAssignor) Protocol() RebalanceProtocol { return Cooperative }

func (stickyAssignor) Assign(members []GroupMember, partitions map[string]int32) map[string][]kafka.TopicPartition {
	members = slices.Clone(members)
	sortMembers(members)
	out := emptyAssignment(members)
	if len(members) == 0 {
		return out
	}
	subscribed := func(m *GroupMember, t string) bool { return slices.Contains(m.Subscription.Topics, t) }

	// Keep what each member owns and may still have; where two members
	// claim a partition, the one of the later generation keeps it.
	owner := map[kafka.TopicPartition]int{}
	for i := range members {
		m := &members[i]
		for _, tp := range m.Subscription.Owned {
			n, ok := partitions[tp.Topic]
			if !ok || tp.Partition < 0 || tp.Partition >= n || !subscribed(m, tp.Topic) {
				continue
			}
			if j, taken := owner[tp]; taken && members[j].Subscription.Generation >= m.Subscription.Generation {
				continue
			}
			owner[tp] = i
		}
	}
	prev := make(map[kafka.TopicPartition]int, len(owner))
	for tp, i := range owner {
		prev[tp] = i
	}
	count := make([]int, len(members))
	for _, i := range owner {
		count[i]++
	}
	// Give each unowned partition to the least loaded member that may
	// have it.
	for _, t := range subscribedTopics(members, partitions) {
		for p := range partitions[t] {
			tp := kafka.TopicPartition{Topic: t, Partition: p}
			if _, ok := owner[tp]; ok {
				continue
			}
			best := -1
			for i := range members {
				if subscribed(&members[i], t) && (best < 0 || count[i] < count[best]) {
					best = i
				}
			}
			owner[tp] = best
			count[best]++
		}
	}
	// Move partitions from the most loaded members to members with two
	// fewer that may take them, until none can.
	byMember := func(i int) []kafka.TopicPartition {
		var tps []kafka.TopicPartition
		for tp, j := range owner {
			if j == i {
				tps = append(tps, tp)
			}
		}
		slices.SortFunc(tps, compareTP)
		return tps
	}
	for moved := true; moved; {
		moved = false
		order := make([]int, len(members))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return count[b] - count[a] })
		for _, from := range order {
			to := -1
			var give kafka.TopicPartition
			tps := byMember(from)
			// Give away the partition that was not previously this
			// member's first, then the highest.
			slices.SortStableFunc(tps, func(a, b kafka.TopicPartition) int {
				ap, bp := prev[a] == from, prev[b] == from
				if ap != bp {
					if ap {
						return 1
					}
					return -1
				}
				return compareTP(b, a)
			})
			for _, tp := range tps {
				for i := range members {
					if i != from && count[i] < count[from]-1 && subscribed(&members[i], tp.Topic) && (to < 0 || count[i] < count[to]) {
						to, give = i, tp
					}
				}
				if to >= 0 {
					break
				}
			}
			if to >= 0 {
				owner[give] = to
				count[from]--
				count[to]++
				moved = true
				break
			}
		}
	}
	// A partition moving from a member that still owns it is withheld
	// until that member has revoked it.
	for tp, i := range owner {
		if was, ok := prev[tp]; ok && was != i {
			continue
		}
		id := members[i].MemberID
		out[id] = append(out[id], tp)
	}
	for id := range out {
		slices.SortFunc(out[id], compareTP)
	}
	return out
}
