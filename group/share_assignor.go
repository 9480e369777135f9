package group

import (
	"cmp"
	"maps"
	"slices"
)

// shareAssignmentSpec is what the simple assignor assigns: Kafka's
// GroupSpec and SubscribedTopicDescriber for a share group.
type shareAssignmentSpec struct {
	// Members are the group's members, sorted by member id; a member's
	// Assignment is its current target assignment.
	Members []AssignmentMember
	// Partitions are the assignable partitions of each topic, sorted:
	// those of the subscribed topics whose share-group state is
	// initialized. A topic that is not here has nothing to assign.
	Partitions map[string][]int32
}

// sharePartition is one partition of a topic.
type sharePartition struct {
	topic     string
	partition int32
}

func compareSharePartitions(a, b sharePartition) int {
	return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
}

// simpleAssign is Kafka's SimpleAssignor ("simple"), the share group
// assignor, as a pure function of spec: every member appears in the
// result. Unlike a consumer group assignor, it may give a partition to
// several members, for a share group's members share the records of a
// partition.
//
// When every member subscribes to the same topics (Kafka's
// SimpleHomogeneousAssignmentBuilder), all the assignable partitions, P
// of them, are spread over the M members: each partition goes to
// ceil(M/P) members — one when the partitions are at least as many as
// the members, several when the members outnumber them — and each member
// gets as many partitions as the others, give or take one. When
// subscriptions differ (SimpleHeterogeneousAssignmentBuilder), the same
// is done topic by topic over the members that subscribe to the topic, so
// balance holds within each topic.
//
// It is sticky, balance first as Kafka's: a member keeps what it has, as
// long as the partition is still assignable to it and neither it nor the
// partition is over its share. The rest goes to the members short of
// their share, those with the most left to fill first. When the only
// members short of their share already have a partition that still needs
// a member, one that has its share gives that partition's place up for
// another partition; so, unlike Kafka's builders, which tolerate a slight
// imbalance then, every share is filled exactly. It is deterministic:
// ties go by member id, topic and partition.
func simpleAssign(spec shareAssignmentSpec) GroupAssignment {
	out := make(GroupAssignment, len(spec.Members))
	for _, m := range spec.Members {
		out[m.MemberID] = map[string][]int32{}
	}
	if len(spec.Members) == 0 {
		return out
	}
	homogeneous := true
	for _, m := range spec.Members[1:] {
		if !slices.Equal(m.Topics, spec.Members[0].Topics) {
			homogeneous = false
			break
		}
	}
	add := func(i int, ps []sharePartition) {
		id := spec.Members[i].MemberID
		for _, p := range ps {
			out[id][p.topic] = append(out[id][p.topic], p.partition)
		}
	}
	if homogeneous {
		all := make([]int, len(spec.Members))
		for i := range all {
			all[i] = i
		}
		for i, ps := range shareAssignTopics(spec, all, spec.Members[0].Topics) {
			add(all[i], ps)
		}
	} else {
		subscribers := map[string][]int{}
		for i, m := range spec.Members {
			for _, t := range m.Topics {
				if len(spec.Partitions[t]) > 0 && !slices.Contains(subscribers[t], i) {
					subscribers[t] = append(subscribers[t], i)
				}
			}
		}
		for _, t := range slices.Sorted(maps.Keys(subscribers)) {
			for k, ps := range shareAssignTopics(spec, subscribers[t], []string{t}) {
				add(subscribers[t][k], ps)
			}
		}
	}
	for _, a := range out {
		for t := range a {
			slices.Sort(a[t])
		}
	}
	return out
}

// shareAssignTopics spreads the assignable partitions of topics over the
// members of spec at the indexes given (in member id order), as
// simpleAssign describes, and returns each one's partitions, sorted.
func shareAssignTopics(spec shareAssignmentSpec, members []int, topics []string) [][]sharePartition {
	var targets []sharePartition
	for _, t := range slices.Compact(slices.Sorted(slices.Values(topics))) {
		for _, p := range spec.Partitions[t] {
			targets = append(targets, sharePartition{t, p})
		}
	}
	n := len(members)
	held := make([]map[sharePartition]bool, n)
	for k := range held {
		held[k] = map[sharePartition]bool{}
	}
	if len(targets) == 0 {
		return make([][]sharePartition, n)
	}
	isTarget := map[sharePartition]bool{}
	for _, p := range targets {
		isTarget[p] = true
	}

	// Each partition goes to sharing members, and the sharing*P
	// assignments are split evenly: the members that can keep the most
	// get the bigger quotas.
	sharing := (n + len(targets) - 1) / len(targets)
	total := sharing * len(targets)
	current := make([][]sharePartition, n)
	for k, i := range members {
		a := spec.Members[i].Assignment
		for _, t := range slices.Sorted(maps.Keys(a)) {
			for _, p := range a[t] {
				if tp := (sharePartition{t, p}); isTarget[tp] && !slices.Contains(current[k], tp) {
					current[k] = append(current[k], tp)
				}
			}
		}
	}
	order := make([]int, n)
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(current[b]), len(current[a])) })
	quota := make([]int, n)
	for rank, k := range order {
		quota[k] = total / n
		if rank < total%n {
			quota[k]++
		}
	}

	// Keep what may be kept.
	sharers := map[sharePartition]int{}
	count := make([]int, n)
	for _, k := range order {
		for _, tp := range current[k] {
			if count[k] < quota[k] && sharers[tp] < sharing {
				held[k][tp] = true
				count[k]++
				sharers[tp]++
			}
		}
	}

	// Fill: each partition short of sharers goes to the member short of
	// its quota with the most left to fill that does not have it; if
	// every such member has it, a member at its quota that lacks it
	// trades a partition the short member lacks for it.
	for _, tp := range targets {
		for sharers[tp] < sharing {
			best := -1
			for k := range n {
				if count[k] < quota[k] && !held[k][tp] && (best < 0 || quota[k]-count[k] > quota[best]-count[best]) {
					best = k
				}
			}
			if best >= 0 {
				held[best][tp] = true
				count[best]++
				sharers[tp]++
				continue
			}
			if !shareTrade(held, count, quota, sharers, targets, tp) {
				break // cannot happen: see shareTrade
			}
		}
	}

	out := make([][]sharePartition, n)
	for k := range n {
		for _, tp := range targets {
			if held[k][tp] {
				out[k] = append(out[k], tp)
			}
		}
	}
	return out
}

// shareTrade makes room for partition tp when every member short of its
// quota already has it: a member a short of its quota takes a partition
// y it lacks from a member b that lacks tp, and b takes tp. a's count
// grows by one, b's stays, tp gains a sharer and y keeps its count. Such
// a b exists: the members that lack tp are all at their quota, which is
// at least a's count; were each one's partitions all a's too, it would
// have fewer than a (a has tp, it does not).
func shareTrade(held []map[sharePartition]bool, count, quota []int, sharers map[sharePartition]int, targets []sharePartition, tp sharePartition) bool {
	for a := range held {
		if count[a] >= quota[a] {
			continue
		}
		for b := range held {
			if held[b][tp] {
				continue
			}
			for _, y := range targets {
				if held[b][y] && !held[a][y] {
					delete(held[b], y)
					held[a][y] = true
					held[b][tp] = true
					count[a]++
					sharers[tp]++
					return true
				}
			}
		}
	}
	return false
}
