package group

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// drawShareSpec draws a share group: up to 9 members, subscribing all to
// the same topics (homogeneous) or each to its own, with a current target
// that may name partitions that are not assignable.
func drawShareSpec(t *rapid.T) (spec shareAssignmentSpec, homogeneous bool) {
	names := []string{"a", "b", "c", "d"}[:rapid.IntRange(1, 4).Draw(t, "topics")]
	spec.Partitions = map[string][]int32{}
	for _, n := range names {
		var ps []int32
		for p := range int32(rapid.IntRange(0, 6).Draw(t, "partitions of "+n)) {
			if rapid.IntRange(0, 4).Draw(t, "initialized") > 0 {
				ps = append(ps, p)
			}
		}
		if len(ps) > 0 {
			spec.Partitions[n] = ps
		}
	}
	same := rapid.Bool().Draw(t, "same subscriptions")
	all := rapid.SliceOfNDistinct(rapid.SampledFrom(append(names, "missing")), 1, 5, rapid.ID[string]).Draw(t, "subscription")
	for i := range rapid.IntRange(0, 9).Draw(t, "members") {
		topics := all
		if !same {
			topics = rapid.SliceOfNDistinct(rapid.SampledFrom(append(names, "missing")), 1, 5, rapid.ID[string]).Draw(t, "topics")
		}
		current := map[string][]int32{}
		for range rapid.IntRange(0, 5).Draw(t, "current") {
			n := rapid.SampledFrom(names).Draw(t, "topic")
			current[n] = append(current[n], int32(rapid.IntRange(0, 7).Draw(t, "partition")))
		}
		spec.Members = append(spec.Members, AssignmentMember{MemberID: fmt.Sprintf("m%d", i),
			Topics: slices.Sorted(slices.Values(topics)), Assignment: normalizePartitions(current)})
	}
	// Homogeneous as Kafka's SubscriptionType: every member the same
	// topics (which random subscriptions may also give).
	homogeneous = true
	for _, m := range spec.Members {
		homogeneous = homogeneous && slices.Equal(m.Topics, spec.Members[0].Topics)
	}
	return spec, homogeneous
}

// TestSimpleAssignorProperties: the simple assignor gives every member an
// entry; only assignable partitions of a member's topics; every
// assignable partition of a subscribed topic to at least one member, and
// to ceil(members/partitions) of them; counts that differ by at most one
// (over all topics when subscriptions are the same, topic by topic
// otherwise); the same answer twice; and, fed its own answer, the same
// answer again (stable).
func TestSimpleAssignorProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		spec, homogeneous := drawShareSpec(t)
		out := simpleAssign(spec)
		require.Len(t, out, len(spec.Members))
		subscribers := map[string][]string{}
		for _, m := range spec.Members {
			require.Contains(t, out, m.MemberID)
			for tp, ps := range out[m.MemberID] {
				require.Contains(t, m.Topics, tp)
				require.True(t, slices.IsSorted(ps))
				for _, p := range ps {
					require.True(t, hasPartition(spec.Partitions, tp, p), "%s-%d is not assignable", tp, p)
				}
			}
			for _, tp := range m.Topics {
				if len(spec.Partitions[tp]) > 0 {
					subscribers[tp] = append(subscribers[tp], m.MemberID)
				}
			}
		}
		// Sharing: each partition has ceil(S/P) members.
		for tp, subs := range subscribers {
			n := len(spec.Partitions[tp])
			want := (len(subs) + n - 1) / n
			if homogeneous {
				all := 0
				for _, x := range spec.Members[0].Topics {
					all += len(spec.Partitions[x])
				}
				want = (len(spec.Members) + all - 1) / all
			}
			for _, p := range spec.Partitions[tp] {
				sharers := 0
				for _, a := range out {
					if hasPartition(a, tp, p) {
						sharers++
					}
				}
				require.Equal(t, want, sharers, "%s-%d", tp, p)
			}
			if !homogeneous {
				lo, hi := 1<<30, -1
				for _, id := range subs {
					lo, hi = min(lo, len(out[id][tp])), max(hi, len(out[id][tp]))
				}
				require.LessOrEqual(t, hi-lo, 1, "topic %s unbalanced", tp)
			}
		}
		if homogeneous && len(spec.Members) > 0 {
			lo, hi := 1<<30, -1
			for _, a := range out {
				lo, hi = min(lo, countPartitions(a)), max(hi, countPartitions(a))
			}
			require.LessOrEqual(t, hi-lo, 1, "unbalanced")
		}
		require.True(t, reflect.DeepEqual(out, simpleAssign(spec)), "not deterministic")
		again := spec
		again.Members = slices.Clone(spec.Members)
		for i := range again.Members {
			again.Members[i].Assignment = out[again.Members[i].MemberID]
		}
		require.Equal(t, out, simpleAssign(again), "not stable")
	})
}

// TestSimpleAssignorExamples: members outnumbering partitions share them;
// partitions outnumbering members are split; a member that joins takes
// its share and the others keep theirs.
func TestSimpleAssignorExamples(t *testing.T) {
	member := func(id string, current map[string][]int32) AssignmentMember {
		return AssignmentMember{MemberID: id, Topics: []string{"t"}, Assignment: current}
	}
	two := map[string][]int32{"t": {0, 1}}
	out := simpleAssign(shareAssignmentSpec{Partitions: two, Members: []AssignmentMember{
		member("a", nil), member("b", nil), member("c", nil), member("d", nil), member("e", nil)}})
	// Five members, two partitions: each partition to three, one member
	// gets both.
	counts := map[int]int{}
	for _, a := range out {
		counts[len(a["t"])]++
	}
	require.Equal(t, map[int]int{2: 1, 1: 4}, counts)

	six := map[string][]int32{"t": {0, 1, 2, 3, 4, 5}}
	out = simpleAssign(shareAssignmentSpec{Partitions: six, Members: []AssignmentMember{member("a", six)}})
	require.Equal(t, GroupAssignment{"a": six}, out)
	out = simpleAssign(shareAssignmentSpec{Partitions: six, Members: []AssignmentMember{member("a", six), member("b", nil)}})
	require.Equal(t, GroupAssignment{"a": {"t": {0, 1, 2}}, "b": {"t": {3, 4, 5}}}, out)
}
