package consumer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/partlog/partlog/kafka"
	"github.com/stretchr/testify/require"
)

func tps(s ...string) []kafka.TopicPartition {
	var out []kafka.TopicPartition
	for _, x := range s {
		var t string
		var p int32
		i := len(x) - 1
		for x[i] >= '0' && x[i] <= '9' {
			i--
		}
		t = x[:i]
		fmt.Sscan(x[i+1:], &p)
		out = append(out, kafka.TopicPartition{Topic: t, Partition: p})
	}
	return out
}

func member(id string, topics ...string) GroupMember {
	return GroupMember{MemberID: id, Subscription: Subscription{Topics: topics, Generation: -1}}
}

// The classic example of Kafka's javadocs: two consumers subscribed to two
// topics of three partitions each.
func TestRangeKafkaExample(t *testing.T) {
	got := Range().Assign([]GroupMember{member("C1", "t0", "t1"), member("C0", "t0", "t1")}, map[string]int32{"t0": 3, "t1": 3})
	require.Equal(t, map[string][]kafka.TopicPartition{
		"C0": tps("t0p0", "t0p1", "t1p0", "t1p1"),
		"C1": tps("t0p2", "t1p2"),
	}, got)
}

func TestRoundRobinKafkaExamples(t *testing.T) {
	got := RoundRobin().Assign([]GroupMember{member("C0", "t0", "t1"), member("C1", "t0", "t1")}, map[string]int32{"t0": 3, "t1": 3})
	require.Equal(t, map[string][]kafka.TopicPartition{
		"C0": tps("t0p0", "t0p2", "t1p1"),
		"C1": tps("t0p1", "t1p0", "t1p2"),
	}, got)
	// The javadoc's unequal subscriptions: C0 to t0; C1 to t0, t1; C2 to
	// t0, t1, t2; with 1, 2 and 3 partitions.
	got = RoundRobin().Assign([]GroupMember{member("C0", "t0"), member("C1", "t0", "t1"), member("C2", "t0", "t1", "t2")},
		map[string]int32{"t0": 1, "t1": 2, "t2": 3})
	require.Equal(t, map[string][]kafka.TopicPartition{
		"C0": tps("t0p0"),
		"C1": tps("t1p0"),
		"C2": tps("t1p1", "t2p0", "t2p1", "t2p2"),
	}, got)
}

func TestRangeUnevenAndMissing(t *testing.T) {
	// 3 consumers, a topic of 7 partitions: 3, 2, 2. A topic that does not
	// exist assigns nothing; a member subscribed to nothing that exists
	// gets an empty assignment.
	got := Range().Assign([]GroupMember{member("a", "x", "gone"), member("b", "x"), member("c", "x"), member("d", "gone")}, map[string]int32{"x": 7})
	require.Equal(t, map[string][]kafka.TopicPartition{
		"a": tps("x-0", "x-1", "x-2"), "b": tps("x-3", "x-4"), "c": tps("x-5", "x-6"), "d": nil,
	}, got)
}

// checkComplete requires that every partition of partitions has exactly one
// owner in a, subscribed to its topic.
func checkComplete(t *testing.T, members []GroupMember, partitions map[string]int32, a map[string][]kafka.TopicPartition) {
	t.Helper()
	seen := map[kafka.TopicPartition]string{}
	for _, m := range members {
		for _, tp := range a[m.MemberID] {
			require.Contains(t, m.Subscription.Topics, tp.Topic)
			prev, dup := seen[tp]
			require.False(t, dup, "%v assigned to %s and %s", tp, prev, m.MemberID)
			seen[tp] = m.MemberID
		}
	}
	total := 0
	for _, n := range partitions {
		total += int(n)
	}
	require.Len(t, seen, total)
}

// stickyRound runs the two-phase cooperative protocol: the leader
// assigns, members revoke what they lost, and if any did the leader
// assigns again. It returns the final assignment and how many partitions
// changed owner.
func stickyRound(t *testing.T, members []GroupMember, partitions map[string]int32, gen int32) (map[string][]kafka.TopicPartition, int) {
	t.Helper()
	before := map[kafka.TopicPartition]string{}
	for _, m := range members {
		for _, tp := range m.Subscription.Owned {
			before[tp] = m.MemberID
		}
	}
	a := CooperativeSticky().Assign(members, partitions)
	revoked := false
	for i := range members {
		m := &members[i]
		for _, tp := range m.Subscription.Owned {
			if !slices.Contains(a[m.MemberID], tp) {
				revoked = true
			}
		}
		// No partition is given to a member while another still owns it.
		for _, tp := range a[m.MemberID] {
			if was, ok := before[tp]; ok {
				require.Equal(t, m.MemberID, was, "%v handed over before its owner revoked it", tp)
			}
		}
		m.Subscription.Owned, m.Subscription.Generation = a[m.MemberID], gen
	}
	if revoked {
		a = CooperativeSticky().Assign(members, partitions)
		for i := range members {
			members[i].Subscription.Owned, members[i].Subscription.Generation = a[members[i].MemberID], gen+1
		}
	}
	checkComplete(t, members, partitions, a)
	moved := 0
	for tp, was := range before {
		if !slices.Contains(a[was], tp) {
			moved++
		}
	}
	return a, moved
}

func counts(a map[string][]kafka.TopicPartition) []int {
	var out []int
	for _, tps := range a {
		out = append(out, len(tps))
	}
	slices.Sort(out)
	return out
}

func TestCooperativeStickyMovesOnlyWhatMust(t *testing.T) {
	parts := map[string]int32{"t0": 3, "t1": 3}
	ms := []GroupMember{member("a", "t0", "t1"), member("b", "t0", "t1"), member("c", "t0", "t1")}
	a, moved := stickyRound(t, ms, parts, 1)
	require.Equal(t, []int{2, 2, 2}, counts(a))
	require.Zero(t, moved)

	// A fourth member joins: only one partition moves (to 2, 2, 1, 1).
	ms = append(ms, member("d", "t0", "t1"))
	a, moved = stickyRound(t, ms, parts, 2)
	require.Equal(t, []int{1, 1, 2, 2}, counts(a))
	require.Equal(t, 1, moved)

	// A member leaves: only its partitions move.
	var gone []kafka.TopicPartition
	for i, m := range ms {
		if m.MemberID == "b" {
			gone = m.Subscription.Owned
			ms = slices.Delete(ms, i, i+1)
			break
		}
	}
	before := map[string][]kafka.TopicPartition{}
	for _, m := range ms {
		before[m.MemberID] = m.Subscription.Owned
	}
	a, moved = stickyRound(t, ms, parts, 4)
	require.Equal(t, []int{2, 2, 2}, counts(a))
	require.Zero(t, moved, "nobody remaining lost a partition")
	for id, had := range before {
		for _, tp := range had {
			require.Contains(t, a[id], tp, "%s kept what it had", id)
		}
	}
	for _, tp := range gone {
		found := false
		for _, tps := range a {
			found = found || slices.Contains(tps, tp)
		}
		require.True(t, found)
	}
}

// TestCooperativeStickyRandom: random joins and leaves, random topic sizes:
// the assignment is always complete, balanced within one partition, and a
// member never loses a partition unless balance needs it.
func TestCooperativeStickyRandom(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		parts := map[string]int32{"a": int32(1 + r.IntN(10)), "b": int32(1 + r.IntN(10))}
		var ms []GroupMember
		next := 0
		for step := range 12 {
			if len(ms) < 2 || r.IntN(3) > 0 {
				ms = append(ms, member(fmt.Sprintf("m%02d", next), "a", "b"))
				next++
			} else {
				i := r.IntN(len(ms))
				ms = slices.Delete(ms, i, i+1)
			}
			a, _ := stickyRound(t, ms, parts, int32(step*2+1))
			c := counts(a)
			require.LessOrEqual(t, c[len(c)-1]-c[0], 1, "seed %d step %d: %v", seed, step, a)
		}
	}
}

func TestProtocolRoundTrip(t *testing.T) {
	s := Subscription{Topics: []string{"a", "b"}, UserData: []byte{1}, Owned: tps("a0", "a2", "b1"), Generation: 7, Rack: "r1"}
	got, err := DecodeSubscription(s.Encode())
	require.NoError(t, err)
	require.Equal(t, s, got)
	// Version 0, as a Kafka 2.3 client writes it: topics and null user data.
	v0 := []byte{0, 0, 0, 0, 0, 1, 0, 5, 's', 't', 'u', 'd', 'y', 0xff, 0xff, 0xff, 0xff}
	got, err = DecodeSubscription(v0)
	require.NoError(t, err)
	require.Equal(t, Subscription{Topics: []string{"study"}, Generation: -1}, got)

	a := Assignment{Partitions: tps("a0", "a1", "b3")}
	ga, err := DecodeAssignment(a.Encode())
	require.NoError(t, err)
	require.Equal(t, a, ga)
	_, err = DecodeAssignment([]byte{0, 0, 0, 0, 0, 9})
	require.ErrorIs(t, err, ErrBadProtocol)
}

func FuzzDecodeSubscription(f *testing.F) {
	f.Add(Subscription{Topics: []string{"a"}, Owned: tps("a0"), Generation: 1}.Encode())
	f.Add([]byte{0, 0, 0, 0, 0, 1, 0, 1, 'x', 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSubscription(b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadProtocol)
			return
		}
		again, err := DecodeSubscription(s.Encode())
		require.NoError(t, err)
		require.Equal(t, len(s.Topics), len(again.Topics))
		require.Equal(t, s.Generation, again.Generation)
		require.ElementsMatch(t, s.Owned, again.Owned)
	})
}

func FuzzDecodeAssignment(f *testing.F) {
	f.Add(Assignment{Partitions: tps("a0", "b1")}.Encode())
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAssignment(b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadProtocol)
			return
		}
		again, err := DecodeAssignment(a.Encode())
		require.NoError(t, err)
		require.ElementsMatch(t, a.Partitions, again.Partitions)
	})
}

// TestAssignorsUnequalSubscriptions: with members subscribed to different
// topics, every assignor gives each partition of a subscribed topic to
// exactly one member subscribed to it, and cooperative-sticky keeps a
// partition with its owner when the owner stays and may still have it.
func TestAssignorsUnequalSubscriptions(t *testing.T) {
	topics := []string{"a", "b", "c"}
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 7))
		parts := map[string]int32{}
		for _, tn := range topics {
			parts[tn] = int32(1 + r.IntN(6))
		}
		var ms []GroupMember
		for i := range 1 + r.IntN(5) {
			var subs []string
			for _, tn := range topics {
				if r.IntN(2) == 0 {
					subs = append(subs, tn)
				}
			}
			if len(subs) == 0 {
				subs = []string{topics[r.IntN(3)]}
			}
			ms = append(ms, member(fmt.Sprintf("m%d", i), subs...))
		}
		subscribed := map[string]int32{}
		for _, m := range ms {
			for _, tn := range m.Subscription.Topics {
				subscribed[tn] = parts[tn]
			}
		}
		for _, a := range []Assignor{Range(), RoundRobin(), CooperativeSticky()} {
			got := a.Assign(ms, parts)
			checkComplete(t, ms, subscribed, got)
		}
		// Sticky: owners keep what they may keep, through two phases.
		first, _ := stickyRound(t, ms, subscribed, 1)
		for i := range ms {
			ms[i].Subscription.Owned = first[ms[i].MemberID]
		}
		second := CooperativeSticky().Assign(ms, subscribed)
		for _, m := range ms {
			for _, tp := range m.Subscription.Owned {
				require.Contains(t, second[m.MemberID], tp, "seed %d: nothing changed, nothing moves", seed)
			}
		}
	}
}
