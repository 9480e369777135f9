package group

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// specMember is a terse AssignmentMember for tables.
func specMember(id string, topics []string, current map[string][]int32) AssignmentMember {
	return AssignmentMember{MemberID: id, Topics: topics, Assignment: current}
}

// TestUniformAssignor checks the uniform assignor's choices on small groups.
func TestUniformAssignor(t *testing.T) {
	ab := []string{"a", "b"}
	for _, tc := range []struct {
		name   string
		spec   AssignmentSpec
		expect GroupAssignment
	}{
		{
			name:   "no members",
			spec:   AssignmentSpec{Topics: map[string]int32{"a": 3}},
			expect: GroupAssignment{},
		},
		{
			name: "one member gets everything",
			spec: AssignmentSpec{
				Members: []AssignmentMember{specMember("m1", ab, nil)},
				Topics:  map[string]int32{"a": 3, "b": 2},
			},
			expect: GroupAssignment{"m1": {"a": {0, 1, 2}, "b": {0, 1}}},
		},
		{
			name: "round robin over three members",
			spec: AssignmentSpec{
				Members: []AssignmentMember{specMember("m1", ab, nil), specMember("m2", ab, nil), specMember("m3", ab, nil)},
				Topics:  map[string]int32{"a": 7},
			},
			expect: GroupAssignment{"m1": {"a": {0, 3, 6}}, "m2": {"a": {1, 4}}, "m3": {"a": {2, 5}}},
		},
		{
			name: "a joining member takes half from the one that had all",
			spec: AssignmentSpec{
				Members: []AssignmentMember{
					specMember("m1", ab, map[string][]int32{"a": {0, 1, 2, 3}}),
					specMember("m2", ab, nil),
				},
				Topics: map[string]int32{"a": 4},
			},
			expect: GroupAssignment{"m1": {"a": {0, 1}}, "m2": {"a": {2, 3}}},
		},
		{
			name: "a leaving member's partitions spread without moving others",
			spec: AssignmentSpec{
				Members: []AssignmentMember{
					specMember("m1", ab, map[string][]int32{"a": {0, 3}}),
					specMember("m3", ab, map[string][]int32{"a": {2, 5}}),
				},
				Topics: map[string]int32{"a": 6},
			},
			expect: GroupAssignment{"m1": {"a": {0, 1, 3}}, "m3": {"a": {2, 4, 5}}},
		},
		{
			name: "heterogeneous: the constrained topic first, then balance",
			spec: AssignmentSpec{
				Members: []AssignmentMember{specMember("m1", []string{"a"}, nil), specMember("m2", ab, nil)},
				Topics:  map[string]int32{"a": 4, "b": 2},
			},
			expect: GroupAssignment{"m1": {"a": {0, 1, 2}}, "m2": {"a": {3}, "b": {0, 1}}},
		},
		{
			name: "invalid current partitions are ignored",
			spec: AssignmentSpec{
				Members: []AssignmentMember{
					specMember("m1", []string{"a"}, map[string][]int32{"a": {1, 9, -1}, "b": {0}}),
					specMember("m2", []string{"a"}, map[string][]int32{"a": {1, 2}}),
				},
				Topics: map[string]int32{"a": 4, "b": 1},
			},
			expect: GroupAssignment{"m1": {"a": {0, 1}}, "m2": {"a": {2, 3}}},
		},
		{
			name: "a topic that does not exist has nothing to assign",
			spec: AssignmentSpec{
				Members: []AssignmentMember{specMember("m1", []string{"a", "x"}, nil)},
				Topics:  map[string]int32{"a": 1},
			},
			expect: GroupAssignment{"m1": {"a": {0}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := UniformAssignor{}.Assign(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.expect) {
				t.Fatalf("got %v, want %v", got, tc.expect)
			}
		})
	}
}

// TestRangeAssignor checks the range assignor's choices on small groups.
func TestRangeAssignor(t *testing.T) {
	ab := []string{"a", "b"}
	for _, tc := range []struct {
		name   string
		spec   AssignmentSpec
		expect GroupAssignment
	}{
		{
			name: "contiguous ranges, the first members one more",
			spec: AssignmentSpec{
				Members: []AssignmentMember{specMember("m1", ab, nil), specMember("m2", ab, nil), specMember("m3", ab, nil)},
				Topics:  map[string]int32{"a": 7, "b": 2},
			},
			expect: GroupAssignment{
				"m1": {"a": {0, 1, 2}, "b": {0}},
				"m2": {"a": {3, 4}, "b": {1}},
				"m3": {"a": {5, 6}},
			},
		},
		{
			name: "each topic over its own subscribers",
			spec: AssignmentSpec{
				Members: []AssignmentMember{
					specMember("m1", []string{"a"}, nil), specMember("m2", ab, nil), specMember("m3", []string{"b"}, nil),
				},
				Topics: map[string]int32{"a": 4, "b": 3},
			},
			expect: GroupAssignment{"m1": {"a": {0, 1}}, "m2": {"a": {2, 3}, "b": {0, 1}}, "m3": {"b": {2}}},
		},
		{
			name: "sticky: members keep their share when one joins",
			spec: AssignmentSpec{
				Members: []AssignmentMember{
					specMember("m1", ab, map[string][]int32{"a": {0, 1, 2}}),
					specMember("m2", ab, map[string][]int32{"a": {3, 4, 5}}),
					specMember("m3", ab, nil),
				},
				Topics: map[string]int32{"a": 6},
			},
			expect: GroupAssignment{"m1": {"a": {0, 1}}, "m2": {"a": {3, 4}}, "m3": {"a": {2, 5}}},
		},
		{
			name: "sticky: a member with more keeps the extra one",
			spec: AssignmentSpec{
				Members: []AssignmentMember{
					specMember("m1", ab, nil),
					specMember("m2", ab, map[string][]int32{"a": {0, 1, 2, 3}}),
				},
				Topics: map[string]int32{"a": 5},
			},
			expect: GroupAssignment{"m1": {"a": {3, 4}}, "m2": {"a": {0, 1, 2}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RangeAssignor{}.Assign(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.expect) {
				t.Fatalf("got %v, want %v", got, tc.expect)
			}
		})
	}
}

// TestUniformAssignorProperties checks the uniform assignor's validity,
// balance and stickiness on random groups.
func TestUniformAssignorProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkAssignorProperties(t, UniformAssignor{}) })
}

// TestRangeAssignorProperties checks the range assignor's validity,
// balance and stickiness on random groups.
func TestRangeAssignorProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkAssignorProperties(t, RangeAssignor{}) })
}

// drawSpec draws a group: topics with 0 to 9 partitions, members that
// subscribe to the same topics (homogeneous) or to any (not), each with a
// current assignment that may be anything, valid or not.
func drawSpec(t *rapid.T) (spec AssignmentSpec, homogeneous bool) {
	topicNames := []string{"a", "b", "c", "d"}[:rapid.IntRange(1, 4).Draw(t, "topics")]
	spec.Topics = map[string]int32{}
	for _, tn := range topicNames {
		spec.Topics[tn] = int32(rapid.IntRange(0, 9).Draw(t, "partitions-"+tn))
	}
	homogeneous = rapid.Bool().Draw(t, "homogeneous")
	var shared []string
	if homogeneous {
		shared = drawTopics(t, topicNames, "shared")
	}
	n := rapid.IntRange(0, 7).Draw(t, "members")
	for i := range n {
		id := fmt.Sprintf("m%d", i)
		topics := shared
		if !homogeneous {
			topics = drawTopics(t, append(topicNames, "missing"), "topics-"+id)
		}
		current := map[string][]int32{}
		for range rapid.IntRange(0, 8).Draw(t, "owned-"+id) {
			tn := rapid.SampledFrom(append(topicNames, "missing")).Draw(t, "owned-topic")
			current[tn] = append(current[tn], int32(rapid.IntRange(-1, 10).Draw(t, "owned-partition")))
		}
		spec.Members = append(spec.Members, specMember(id, topics, current))
	}
	return spec, homogeneous
}

// drawTopics draws a sorted subset of names.
func drawTopics(t *rapid.T, names []string, label string) []string {
	var out []string
	for _, n := range names {
		if rapid.Bool().Draw(t, label+"-"+n) {
			out = append(out, n)
		}
	}
	return out
}

// checkAssignorProperties checks a on a drawn spec: the assignment is
// valid and balanced, and after one member joins or leaves, the members
// that stay keep their fair share of what they had.
func checkAssignorProperties(t *rapid.T, a ServerAssignor) {
	spec, homogeneous := drawSpec(t)
	first := assignChecked(t, a, spec, homogeneous)

	// One member more or one less, from the first assignment.
	next := AssignmentSpec{Topics: spec.Topics}
	leaving := -1
	if len(spec.Members) > 0 && rapid.Bool().Draw(t, "leave") {
		leaving = rapid.IntRange(0, len(spec.Members)-1).Draw(t, "leaving")
	}
	for i, m := range spec.Members {
		if i != leaving {
			next.Members = append(next.Members, specMember(m.MemberID, m.Topics, first[m.MemberID]))
		}
	}
	if leaving < 0 {
		topics := drawTopics(t, slices.Sorted(maps.Keys(spec.Topics)), "joiner")
		if homogeneous && len(spec.Members) > 0 {
			topics = spec.Members[0].Topics
		}
		next.Members = append(next.Members, specMember("z-joiner", topics, nil))
	}
	second := assignChecked(t, a, next, homogeneous)

	for _, m := range next.Members {
		before, after := first[m.MemberID], second[m.MemberID]
		if before == nil {
			continue
		}
		switch a.(type) {
		case RangeAssignor:
			for tn, ps := range before {
				subscribers := 0
				for _, o := range next.Members {
					if slices.Contains(o.Topics, tn) {
						subscribers++
					}
				}
				share := int(next.Topics[tn]) / subscribers
				if kept := countPartitions(intersectPartitions(map[string][]int32{tn: ps}, after)); kept < min(len(ps), share) {
					t.Fatalf("%s kept %d of its %d partitions of %s, its share is %d: %v then %v", m.MemberID, kept, len(ps), tn, share, first, second)
				}
			}
		default:
			if !homogeneous {
				continue
			}
			total := 0
			for _, tn := range m.Topics {
				total += int(next.Topics[tn])
			}
			share := total / len(next.Members)
			if kept := countPartitions(intersectPartitions(before, after)); kept < min(countPartitions(before), share) {
				t.Fatalf("%s kept %d of its %d partitions, its share is %d: %v then %v", m.MemberID, kept, countPartitions(before), share, first, second)
			}
		}
	}
}

// assignChecked runs a on spec and checks that every partition of a topic
// some member subscribes to goes to exactly one member that subscribes to
// it, and that the assignment is balanced.
func assignChecked(t *rapid.T, a ServerAssignor, spec AssignmentSpec, homogeneous bool) GroupAssignment {
	got, err := a.Assign(spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(spec.Members) {
		t.Fatalf("assignment of %d members for %d: %v", len(got), len(spec.Members), got)
	}
	owner := map[string]string{}
	for _, m := range spec.Members {
		ps, ok := got[m.MemberID]
		if !ok {
			t.Fatalf("no assignment for %s", m.MemberID)
		}
		for tn, parts := range ps {
			if !slices.Contains(m.Topics, tn) {
				t.Fatalf("%s got %s, which it does not subscribe to", m.MemberID, tn)
			}
			if !slices.IsSorted(parts) {
				t.Fatalf("%s's partitions of %s are not sorted: %v", m.MemberID, tn, parts)
			}
			for _, p := range parts {
				if p < 0 || p >= spec.Topics[tn] {
					t.Fatalf("%s got %s-%d, which does not exist", m.MemberID, tn, p)
				}
				key := fmt.Sprintf("%s-%d", tn, p)
				if o, dup := owner[key]; dup {
					t.Fatalf("%s given to %s and %s", key, o, m.MemberID)
				}
				owner[key] = m.MemberID
			}
		}
	}
	for tn, n := range spec.Topics {
		subscribed := slices.ContainsFunc(spec.Members, func(m AssignmentMember) bool { return slices.Contains(m.Topics, tn) })
		for p := range n {
			if _, ok := owner[fmt.Sprintf("%s-%d", tn, p)]; subscribed && !ok {
				t.Fatalf("%s-%d is subscribed but not assigned: %v", tn, p, got)
			}
		}
	}

	switch a.(type) {
	case RangeAssignor:
		for tn := range spec.Topics {
			lo, hi := -1, -1
			for _, m := range spec.Members {
				if !slices.Contains(m.Topics, tn) {
					continue
				}
				c := len(got[m.MemberID][tn])
				if lo < 0 || c < lo {
					lo = c
				}
				hi = max(hi, c)
			}
			if hi-lo > 1 {
				t.Fatalf("%s unbalanced: %d to %d partitions: %v", tn, lo, hi, got)
			}
		}
	default:
		count := map[string]int{}
		for _, m := range spec.Members {
			count[m.MemberID] = countPartitions(got[m.MemberID])
		}
		for _, m := range spec.Members {
			for _, o := range spec.Members {
				if count[m.MemberID] < count[o.MemberID]+2 {
					continue
				}
				if homogeneous {
					t.Fatalf("%s has %d partitions, %s %d: %v", m.MemberID, count[m.MemberID], o.MemberID, count[o.MemberID], got)
				}
				for tn := range got[m.MemberID] {
					if slices.Contains(o.Topics, tn) {
						t.Fatalf("%s has %d partitions, %s %d and could take one of %s: %v",
							m.MemberID, count[m.MemberID], o.MemberID, count[o.MemberID], tn, got)
					}
				}
			}
		}
	}
	return got
}
