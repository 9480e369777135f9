package group

import (
	"cmp"
	"maps"
	"slices"
)

// ServerAssignor computes the target assignment of a consumer group that
// speaks the consumer protocol (KIP-848): the coordinator, not a member,
// decides which member gets which partition. Kafka's are "uniform" (the
// default) and "range"; a member may name the one it prefers in its
// heartbeat, and the group uses the one most of its members prefer.
//
// An assignor is a pure function of its spec: it keeps nothing between
// calls, reads spec without modifying it or keeping a reference to it, and
// may be called from one goroutine at a time per group.
type ServerAssignor interface {
	// Name is what members choose the assignor by (the ServerAssignor
	// field of ConsumerGroupHeartbeat), such as "uniform".
	Name() string
	// Assign returns the target assignment of spec's members: every
	// member of the spec appears in it (with no partitions, if it gets
	// none), each partition of a topic in spec.Topics that a member
	// subscribes to goes to exactly one member that subscribes to it, and
	// no other partition is assigned.
	Assign(spec AssignmentSpec) (GroupAssignment, error)
}

// AssignmentSpec is what a ServerAssignor assigns: Kafka's GroupSpec and
// SubscribedTopicDescriber in one.
type AssignmentSpec struct {
	// Members are the group's members, sorted by member id.
	Members []AssignmentMember
	// Topics gives the partition count of every topic a member subscribes
	// to that exists. A topic a member subscribes to that is not here
	// does not exist (yet): it has no partitions to assign.
	Topics map[string]int32
}

// AssignmentMember is one member of an AssignmentSpec.
type AssignmentMember struct {
	// MemberID is the member's id.
	MemberID string
	// InstanceID is its group.instance.id; empty for a dynamic member.
	InstanceID string
	// RackID is the rack of its client (client.rack); empty when unknown.
	RackID string
	// Topics are the names of the topics it subscribes to, sorted: those
	// it named and those its regular expression matches.
	Topics []string
	// Assignment is its current target assignment, topic → sorted
	// partitions: what the assignor gave it last time, from which a
	// sticky assignor moves as little as it can.
	Assignment map[string][]int32
}

// GroupAssignment is a target assignment: member id → topic → the sorted
// partitions of the topic the member gets.
type GroupAssignment map[string]map[string][]int32

// The names of the server assignors.
const (
	uniformAssignorName = "uniform"
	rangeAssignorName   = "range"
)

// defaultServerAssignors returns Kafka's group.consumer.assignors default:
// uniform, then range. The first is the group's default.
func defaultServerAssignors() []ServerAssignor {
	return []ServerAssignor{UniformAssignor{}, RangeAssignor{}}
}

// UniformAssignor is Kafka's UniformAssignor ("uniform"), the default
// server assignor: it spreads the partitions of all the topics over the
// members so that each has as many as the others, give or take one, and
// keeps each partition with its current owner unless balance requires it
// to move.
//
// When every member subscribes to the same topics, the partition counts
// of the members differ by at most one, and a member keeps
// min(what it had, the smaller share) of the partitions it had. When
// subscriptions differ, balance is best effort: no member has two
// partitions more than another member that subscribes to the topic of one
// of them.
//
// It works in three passes: each member keeps the partitions it has that
// still exist and that it still subscribes to; the other partitions go,
// topics with the fewest subscribers first, to the least loaded member
// that subscribes to them; then partitions move, one at a time, from the
// most loaded members to members with two fewer that may take them,
// preferring a partition its holder did not have before. Kafka's
// algorithms (OptimizedUniformAssignmentBuilder,
// UniformHeterogeneousAssignmentBuilder) differ in the details, not in
// what they guarantee.
type UniformAssignor struct{}

// Name returns "uniform".
func (UniformAssignor) Name() string { return uniformAssignorName }

// Assign returns a balanced, sticky assignment of spec; it never fails.
func (UniformAssignor) Assign(spec AssignmentSpec) (GroupAssignment, error) {
	n := len(spec.Members)
	out := make(GroupAssignment, n)
	for _, m := range spec.Members {
		out[m.MemberID] = map[string][]int32{}
	}
	if n == 0 {
		return out, nil
	}

	// The subscribers of each topic that exists, in member order.
	subscribers := map[string][]int{}
	subscribes := make([]map[string]bool, n)
	for i, m := range spec.Members {
		subscribes[i] = map[string]bool{}
		for _, t := range m.Topics {
			if _, ok := spec.Topics[t]; ok && !subscribes[i][t] {
				subscribes[i][t] = true
				subscribers[t] = append(subscribers[t], i)
			}
		}
	}

	// owner[topic][p] is the index of the member that holds p, -1 for
	// none; previous marks what a member held before.
	owner := map[string][]int{}
	for t := range subscribers {
		o := make([]int, spec.Topics[t])
		for p := range o {
			o[p] = -1
		}
		owner[t] = o
	}
	type topicPartition struct {
		topic     string
		partition int32
	}
	previous := make([]map[topicPartition]bool, n)
	count := make([]int, n)
	for i, m := range spec.Members {
		previous[i] = map[topicPartition]bool{}
		for _, t := range slices.Sorted(maps.Keys(m.Assignment)) {
			if !subscribes[i][t] {
				continue
			}
			for _, p := range m.Assignment[t] {
				if p < 0 || int(p) >= len(owner[t]) || owner[t][p] >= 0 {
					continue
				}
				owner[t][p] = i
				previous[i][topicPartition{t, p}] = true
				count[i]++
			}
		}
	}

	// Hand out the partitions nobody kept: the topics with the fewest
	// subscribers first, as they have the fewest choices.
	topics := slices.SortedFunc(maps.Keys(subscribers), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(subscribers[a]), len(subscribers[b])), cmp.Compare(a, b))
	})
	leastLoaded := func(t string) int {
		best := -1
		for _, i := range subscribers[t] {
			if best < 0 || count[i] < count[best] {
				best = i
			}
		}
		return best
	}
	for _, t := range topics {
		for p, o := range owner[t] {
			if o < 0 {
				i := leastLoaded(t)
				owner[t][p] = i
				count[i]++
			}
		}
	}

	// Move partitions from the most loaded members to members with at
	// least two fewer that subscribe to their topic, until no such move
	// is left. Each move lowers the sum of the squared counts, so this
	// ends; moving from a most loaded member first means a member never
	// takes a partition after it gave one away.
	held := func(i int, t string) (nonPrevious, any int32) {
		nonPrevious, any = -1, -1
		for p := len(owner[t]) - 1; p >= 0; p-- {
			if owner[t][p] != i {
				continue
			}
			if any < 0 {
				any = int32(p)
			}
			if !previous[i][topicPartition{t, int32(p)}] {
				return int32(p), any
			}
		}
		return nonPrevious, any
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	for {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(count[b], count[a]) })
		least := count[order[n-1]]
		moved := false
		for _, from := range order {
			if count[from] < least+2 {
				break // nobody has two fewer than from, nor than those after it
			}
			bestTopic, bestTo, bestPart, bestFresh := "", -1, int32(-1), false
			for _, t := range topics {
				if !subscribes[from][t] {
					continue
				}
				to := leastLoaded(t)
				if to < 0 || count[to] > count[from]-2 {
					continue
				}
				fresh, any := held(from, t)
				if any < 0 {
					continue
				}
				part, isFresh := any, false
				if fresh >= 0 {
					part, isFresh = fresh, true
				}
				// Prefer giving away what from did not have before,
				// then the least loaded receiver.
				if bestTo < 0 || isFresh && !bestFresh || isFresh == bestFresh && count[to] < count[bestTo] {
					bestTopic, bestTo, bestPart, bestFresh = t, to, part, isFresh
				}
			}
			if bestTo >= 0 {
				owner[bestTopic][bestPart] = bestTo
				count[from]--
				count[bestTo]++
				moved = true
				break
			}
		}
		if !moved {
			break
		}
	}

	for _, t := range topics {
		for p, i := range owner[t] {
			id := spec.Members[i].MemberID
			out[id][t] = append(out[id][t], int32(p))
		}
	}
	return out, nil
}

// RangeAssignor is Kafka's server-side RangeAssignor ("range"): topic by
// topic, the members that subscribe to the topic, sorted by member id,
// get contiguous ranges of its partitions, the first members one more
// than the others when the partitions do not divide evenly. Members that
// subscribe to the same topics with the same partition counts thus get
// the same partition numbers of each (co-partitioning), which is what
// range is chosen for.
//
// It is sticky, as Kafka's is: each member first keeps the partitions it
// has, up to its share of the topic (plus one, while some members may
// still get one more); the partitions left go in order to the members
// short of their share. A group that starts empty gets exactly the
// contiguous ranges; one whose membership changes keeps each member's
// partitions within its share, so its ranges may no longer be
// contiguous.
type RangeAssignor struct{}

// Name returns "range".
func (RangeAssignor) Name() string { return rangeAssignorName }

// Assign returns spec's range assignment; it never fails.
func (RangeAssignor) Assign(spec AssignmentSpec) (GroupAssignment, error) {
	out := make(GroupAssignment, len(spec.Members))
	subscribers := map[string][]int{}
	for i, m := range spec.Members {
		out[m.MemberID] = map[string][]int32{}
		for _, t := range m.Topics {
			if _, ok := spec.Topics[t]; ok && !slices.Contains(subscribers[t], i) {
				subscribers[t] = append(subscribers[t], i)
			}
		}
	}
	for _, t := range slices.Sorted(maps.Keys(subscribers)) {
		members := subscribers[t] // in member id order
		partitions := spec.Topics[t]
		quota := int(partitions) / len(members)
		extra := int(partitions) % len(members)

		taken := make([]bool, partitions)
		kept := make([][]int32, len(members))
		hasExtra := make([]bool, len(members))
		current := make([][]int32, len(members))
		for k, i := range members {
			for _, p := range spec.Members[i].Assignment[t] {
				if p >= 0 && p < partitions && !taken[p] {
					taken[p] = true // claimed; released below if not kept
					current[k] = append(current[k], p)
				}
			}
			slices.Sort(current[k])
		}
		for p := range taken {
			taken[p] = false
		}
		// Each member keeps up to its share of what it has...
		for k := range members {
			n := min(len(current[k]), quota)
			kept[k] = append(kept[k], current[k][:n]...)
			for _, p := range current[k][:n] {
				taken[p] = true
			}
		}
		// ...and one more, while some members may get one more.
		for k := range members {
			if extra > 0 && len(current[k]) > quota {
				p := current[k][quota]
				kept[k] = append(kept[k], p)
				taken[p] = true
				hasExtra[k] = true
				extra--
			}
		}
		// The partitions left go in order to the members short of their
		// share, the first of them getting the extra ones left.
		next := int32(0)
		for k := range members {
			want := quota - len(kept[k])
			if hasExtra[k] {
				want = 0
			} else if extra > 0 {
				want++
				extra--
			}
			for ; want > 0; want-- {
				for taken[next] {
					next++
				}
				taken[next] = true
				kept[k] = append(kept[k], next)
			}
		}
		for k, i := range members {
			if len(kept[k]) > 0 {
				slices.Sort(kept[k])
				out[spec.Members[i].MemberID][t] = kept[k]
			}
		}
	}
	return out, nil
}
