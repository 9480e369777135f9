package consumer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// groupNode opens a node that accepts the short session timeouts the group
// tests use.
func groupNode(tb testing.TB, opts ...partlog.Option) *partlog.Node {
	return openNode(tb, append([]partlog.Option{partlog.GroupMinSessionTimeout(10 * time.Millisecond), partlog.OffsetsTopicPartitions(5)}, opts...)...)
}

// fastGroup makes group members notice rebalances quickly.
func fastGroup(group string, topics ...string) []consumer.Option {
	return []consumer.Option{
		consumer.Group(group), consumer.Topics(topics...), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.HeartbeatInterval(10 * time.Millisecond), consumer.SessionTimeout(2 * time.Second),
		consumer.FetchMaxWait(50 * time.Millisecond),
	}
}

// got is a record a member received.
type got struct {
	member string
	tp     kafka.TopicPartition
	offset int64
	value  string
}

// member runs a consumer in a goroutine of its own, as an application
// does: Poll, hand the records on, Commit (when manual), and on stop,
// Close from that goroutine, between polls.
type member struct {
	name  string
	c     *consumer.Consumer
	stop  atomic.Bool
	done  chan struct{}
	mu    sync.Mutex
	err   error
	owned sync.Map // kafka.TopicPartition -> bool, from the callbacks
}

// startMember starts a member whose commits are manual: after each poll,
// and in OnPartitionsRevoked (commit on revoke).
func startMember(tb testing.TB, n *partlog.Node, name string, out chan<- got, changed chan struct{}, opts ...consumer.Option) *member {
	tb.Helper()
	m := &member{name: name, done: make(chan struct{})}
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	all := append(slices.Clone(opts),
		consumer.ClientID(name),
		consumer.OnPartitionsRevoked(func(ctx context.Context, c *consumer.Consumer, tps []kafka.TopicPartition) {
			if err := c.Commit(ctx); err != nil {
				m.fail(fmt.Errorf("%s: commit on revoke: %w", name, err))
			}
			for _, tp := range tps {
				m.owned.Delete(tp)
			}
			signal()
		}),
		consumer.OnPartitionsAssigned(func(ctx context.Context, c *consumer.Consumer, tps []kafka.TopicPartition) {
			for _, tp := range tps {
				m.owned.Store(tp, true)
			}
			signal()
		}),
	)
	c, err := consumer.New(n.Client(), all...)
	require.NoError(tb, err)
	m.c = c
	go func() {
		defer close(m.done)
		defer c.Close()
		ctx := context.Background()
		for !m.stop.Load() {
			fs, err := c.Poll(ctx, 20*time.Millisecond)
			if err != nil {
				m.fail(fmt.Errorf("%s: poll: %w", name, err))
				return
			}
			fs.EachRecord(func(r *consumer.Record) {
				out <- got{member: name, tp: r.TopicPartition(), offset: r.Offset, value: string(r.Value)}
			})
			if !fs.Empty() {
				if err := c.Commit(ctx); err != nil {
					m.fail(fmt.Errorf("%s: commit: %w", name, err))
				}
			}
		}
	}()
	tb.Cleanup(func() { m.close() })
	return m
}

// fail records the member's first error.
func (m *member) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err == nil {
		m.err = err
	}
}

// error returns the member's first error.
func (m *member) error() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// close stops the member: it leaves the group, revoking (and so
// committing) what it owns.
func (m *member) close() {
	m.stop.Store(true)
	<-m.done
}

func (m *member) partitions() []kafka.TopicPartition {
	var out []kafka.TopicPartition
	m.owned.Range(func(k, _ any) bool {
		out = append(out, k.(kafka.TopicPartition))
		return true
	})
	slices.SortFunc(out, func(a, b kafka.TopicPartition) int {
		if a.Topic != b.Topic {
			return map[bool]int{true: -1, false: 1}[a.Topic < b.Topic]
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// produceRound produces one record to each partition of topic, with
// values round-partition.
func produceRound(tb testing.TB, n *partlog.Node, topic string, partitions int32, round int) {
	for p := range partitions {
		produceValues(tb, n.Client(), topic, p, fmt.Sprintf("r%d-p%d", round, p))
	}
}

// collect receives n records from out, failing after a generous bound.
func collect(tb testing.TB, out <-chan got, n int) []got {
	tb.Helper()
	var recs []got
	timeout := time.After(30 * time.Second)
	for len(recs) < n {
		select {
		case r := <-out:
			recs = append(recs, r)
		case <-timeout:
			tb.Fatalf("only %d of %d records arrived", len(recs), n)
		}
	}
	return recs
}

// requireExactlyOnce requires that recs hold each of the want values once,
// per partition in offset order.
func requireExactlyOnce(tb testing.TB, recs []got, want int) {
	tb.Helper()
	seen := map[string]got{}
	last := map[kafka.TopicPartition]int64{}
	for _, r := range recs {
		if prev, dup := seen[r.value]; dup {
			tb.Fatalf("%s received twice: by %s at %v@%d and by %s at %v@%d", r.value, prev.member, prev.tp, prev.offset, r.member, r.tp, r.offset)
		}
		seen[r.value] = r
		if l, ok := last[r.tp]; ok && r.offset != l+1 {
			tb.Fatalf("%v: offset %d after %d (received by %s)", r.tp, r.offset, l, r.member)
		}
		last[r.tp] = r.offset
	}
	require.Len(tb, seen, want)
}

// waitOwners waits until the members own every partition of topic between
// them, each exactly once, balanced (a member owns parts/members, rounded
// down or up), and returns who owns what.
func waitOwners(tb testing.TB, changed <-chan struct{}, partitions int32, ms ...*member) map[string][]kafka.TopicPartition {
	tb.Helper()
	deadline := time.After(30 * time.Second)
	for {
		owners := map[kafka.TopicPartition][]string{}
		byMember := map[string][]kafka.TopicPartition{}
		for _, m := range ms {
			for _, tp := range m.partitions() {
				owners[tp] = append(owners[tp], m.name)
				byMember[m.name] = append(byMember[m.name], tp)
			}
		}
		ok := len(owners) == int(partitions)
		for _, o := range owners {
			ok = ok && len(o) == 1
		}
		for _, m := range ms {
			k := len(byMember[m.name])
			ok = ok && k >= int(partitions)/len(ms) && k <= (int(partitions)+len(ms)-1)/len(ms)
		}
		if ok {
			return byMember
		}
		select {
		case <-changed: // a callback moved a partition
		case <-deadline:
			tb.Fatalf("partitions never had one owner each: %v", owners)
		}
	}
}

// TestGroupJoinLeave: two consumers of group lzl share topic study;
// a third joins; one leaves politely. After each change every partition
// has exactly one owner, and with commit on revoke every record is
// received exactly once. (A crash is TestGroupCrashedMemberSessionTimeout.)
func TestGroupJoinLeave(t *testing.T) {
	for _, a := range []consumer.Assignor{consumer.Range(), consumer.RoundRobin(), consumer.CooperativeSticky()} {
		t.Run(a.Name(), func(t *testing.T) {
			n := groupNode(t)
			const parts = 6
			createTopic(t, n, "study", parts, nil)
			out := make(chan got, 1000)
			changed := make(chan struct{}, 1)
			opts := append(fastGroup("lzl", "study"), consumer.Assignors(a), consumer.DisableAutoCommit())
			round := 0
			produced := 0
			produce := func(rounds int) {
				for range rounds {
					produceRound(t, n, "study", parts, round)
					round++
					produced += parts
				}
			}
			var recs []got
			sync := func() {
				recs = append(recs, collect(t, out, produced-len(recs))...)
			}

			c1 := startMember(t, n, "c1", out, changed, opts...)
			c2 := startMember(t, n, "c2", out, changed, opts...)
			owners := waitOwners(t, changed, parts, c1, c2)
			require.Len(t, owners["c1"], 3, "%v", owners)
			require.Len(t, owners["c2"], 3, "%v", owners)
			produce(5)
			sync()

			c3 := startMember(t, n, "c3", out, changed, opts...)
			produce(5)
			owners = waitOwners(t, changed, parts, c1, c2, c3)
			for _, m := range []string{"c1", "c2", "c3"} {
				require.Len(t, owners[m], 2, "%v", owners)
			}
			produce(5)
			sync()

			c1.close()
			produce(5)
			owners = waitOwners(t, changed, parts, c2, c3)
			require.Len(t, owners["c2"], 3, "%v", owners)
			produce(5)
			sync()
			requireExactlyOnce(t, recs, produced)
			for _, m := range []*member{c1, c2, c3} {
				require.NoError(t, m.error())
			}
		})
	}
}

// TestGroupCrashedMemberSessionTimeout: a member that stops heartbeating
// (crashed: a raw protocol client that joined, synced, committed and went
// silent) is dropped at its session timeout; the survivor takes its
// partitions over from its last commit, and nothing is lost.
func TestGroupCrashedMemberSessionTimeout(t *testing.T) {
	n := groupNode(t)
	const parts = 4
	createTopic(t, n, "study", parts, nil)
	out := make(chan got, 1000)
	changed := make(chan struct{}, 1)
	for r := range 4 {
		produceRound(t, n, "study", parts, r)
	}
	c1 := startMember(t, n, "c1", out, changed, append(fastGroup("lzl", "study"), consumer.DisableAutoCommit())...)
	waitOwners(t, changed, parts, c1)
	recs := collect(t, out, 16)

	// The crashing member joins; c1 rejoins and, as leader, gives it half.
	ctx := context.Background()
	join, err := n.Client().JoinGroup(ctx, &transport.JoinGroupRequest{Group: "lzl", ClientID: "crasher", ProtocolType: consumer.ProtocolType,
		SessionTimeout: 200 * time.Millisecond, RebalanceTimeout: time.Minute,
		Protocols: []transport.JoinGroupProtocol{{Name: "range", Metadata: consumer.Subscription{Topics: []string{"study"}, Generation: -1}.Encode()}}})
	require.NoError(t, err)
	require.NoError(t, join.Err)
	sync, err := n.Client().SyncGroup(ctx, &transport.SyncGroupRequest{Group: "lzl", MemberID: join.MemberID, GenerationID: join.GenerationID})
	require.NoError(t, err)
	require.NoError(t, sync.Err)
	a, err := consumer.DecodeAssignment(sync.Assignment)
	require.NoError(t, err)
	require.Len(t, a.Partitions, 2)
	waitOwners(t, changed, 2, c1)
	// c1 committed its old partitions on revoke: the crasher starts them
	// at 4. It processes two more records of each, commits, and dies.
	for r := 4; r < 9; r++ {
		produceRound(t, n, "study", parts, r)
	}
	commit := &transport.OffsetCommitRequest{Group: "lzl", MemberID: join.MemberID, GenerationID: join.GenerationID}
	for _, tp := range a.Partitions {
		commit.Topics = append(commit.Topics, transport.OffsetCommitTopic{Topic: tp.Topic, Partitions: []transport.OffsetCommitPartition{{Partition: tp.Partition, Offset: 6, LeaderEpoch: -1}}})
		for r := 4; r < 6; r++ {
			v := fmt.Sprintf("r%d-p%d", r, tp.Partition)
			recs = append(recs, got{member: "crasher", tp: tp, offset: int64(r), value: v})
		}
	}
	cr, err := n.Client().OffsetCommit(ctx, commit)
	require.NoError(t, err)
	for _, tt := range cr.Topics {
		require.NoError(t, tt.Partitions[0].Err)
	}

	// 200ms later the coordinator drops it; c1 gets everything back.
	waitOwners(t, changed, parts, c1)
	recs = append(recs, collect(t, out, 2*5+2*3)...)
	// The crasher's records are in recs: a record it processed and
	// committed that c1 received again would show twice.
	requireExactlyOnce(t, recs, 4*9)
	hb, err := n.Client().Heartbeat(ctx, &transport.HeartbeatRequest{Group: "lzl", MemberID: join.MemberID, GenerationID: join.GenerationID})
	require.NoError(t, err)
	require.ErrorIs(t, hb.Err, kafka.ErrUnknownMemberID)
	require.NoError(t, c1.error())
}

// TestGroupMaxPollInterval: a consumer that stops polling leaves the group
// after max.poll.interval.ms, so the others take its partitions; its
// partitions are lost (not revoked), its commits are refused, and its next
// Poll rejoins.
func TestGroupMaxPollInterval(t *testing.T) {
	n := groupNode(t)
	const parts = 4
	createTopic(t, n, "study", parts, nil)
	out := make(chan got, 1000)
	changed := make(chan struct{}, 1)
	var lost []kafka.TopicPartition
	slow, err := consumer.New(n.Client(), append(fastGroup("lzl", "study"), consumer.ClientID("slow"), consumer.MaxPollInterval(300*time.Millisecond),
		consumer.OnPartitionsLost(func(_ context.Context, _ *consumer.Consumer, tps []kafka.TopicPartition) { lost = tps }))...)
	require.NoError(t, err)
	defer slow.Close()
	ctx := context.Background()
	_, err = slow.Poll(ctx, 0)
	require.NoError(t, err)
	require.Len(t, slow.Assignment(), parts)
	gen := slow.GroupMetadata().Generation

	c2 := startMember(t, n, "c2", out, changed, fastGroup("lzl", "study")...)
	waitOwners(t, changed, parts, c2)
	require.Equal(t, transport.NoGeneration, slow.GroupMetadata().Generation, "it left the group")
	require.ErrorIs(t, slow.Commit(ctx), consumer.ErrCommitFailed)

	// The slow consumer comes back: its partitions were lost, and it
	// rejoins.
	_, err = slow.Poll(ctx, 0)
	require.NoError(t, err)
	require.Len(t, lost, parts)
	require.Len(t, slow.Assignment(), parts/2)
	require.Greater(t, slow.GroupMetadata().Generation, gen)
	require.NoError(t, c2.error())
}

// TestGroupOffsetsSurviveRestart: offsets committed through the group
// survive a crash of the node; a new consumer of the group goes on from
// them.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	mem := vfs.NewMem()
	opts := []partlog.Option{partlog.Filesystem(mem), partlog.GroupMinSessionTimeout(10 * time.Millisecond), partlog.OffsetsTopicPartitions(5), partlog.GroupInitialRebalanceDelay(0),
		partlog.TopicDefaults(map[string]string{"segment.index.bytes": "65536"})}
	n, err := partlog.Open("/data", opts...)
	require.NoError(t, err)
	createTopic(t, n, "study", 2, nil)
	produceValues(t, n.Client(), "study", 0, seq("a", 10)...)
	produceValues(t, n.Client(), "study", 1, seq("b", 10)...)
	c, err := consumer.New(n.Client(), append(fastGroup("lzl", "study"), consumer.MaxPollRecords(3), consumer.DisableAutoCommit())...)
	require.NoError(t, err)
	ctx := context.Background()
	recs := pollN(t, c, 3)
	require.NoError(t, c.Commit(ctx))
	committed, err := c.Committed(ctx)
	require.NoError(t, err)
	first, other := recs[0].Partition, 1-recs[0].Partition
	require.Equal(t, map[kafka.TopicPartition]consumer.CommittedOffset{
		tp("study", first): {Offset: 3, LeaderEpoch: -1},
		tp("study", other): {Offset: 0, LeaderEpoch: -1}, // positioned, nothing consumed
	}, committed)
	require.Equal(t, int64(7), c.Lag()[tp("study", first)])
	require.NoError(t, c.Close())

	crashed := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
	require.NoError(t, n.Close())
	opts[0] = partlog.Filesystem(crashed)
	n, err = partlog.Open("/data", opts...)
	require.NoError(t, err)
	defer n.Close()
	c = newConsumer(t, n.Client(), append(fastGroup("lzl", "study"), consumer.MaxPollRecords(100))...)
	got := pollN(t, c, 7+10)
	var rest []string
	for _, r := range got {
		if r.Partition == first {
			rest = append(rest, string(r.Value))
		}
	}
	prefix := string(recs[0].Value[:1])
	require.Equal(t, seq(prefix, 10)[3:], rest, "the partition goes on from the committed offset")
}

// hidden hides a client's GroupClient, as a client without a coordinator.
type hidden struct{ transport.Client }

// TestMemoryOffsetsAssigned: an assigned consumer with a group and an
// OffsetStore of its own commits and resumes without a coordinator, and
// auto-commits on Close.
func TestMemoryOffsetsAssigned(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	produceValues(t, n.Client(), "t", 0, seq("v", 10)...)
	store := consumer.NewMemoryOffsets()
	c, err := consumer.New(hidden{n.Client()}, consumer.Group("g"), consumer.Offsets(store), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest), consumer.MaxPollRecords(4))
	require.NoError(t, err)
	pollN(t, c, 4)
	require.NoError(t, c.Close(), "Close commits: auto-commit is on by default")
	offs, err := store.FetchOffsets(context.Background(), "g", nil)
	require.NoError(t, err)
	require.Equal(t, int64(4), offs[tp("t", 0)].Offset)

	_, err = consumer.New(hidden{n.Client()}, consumer.Group("g"), consumer.Topics("t"))
	require.ErrorContains(t, err, "GroupClient")
}

// TestGroupExactlyOnceUnderChurn is reliability test 24's polite half:
// members join and leave at random while records are produced and
// consumed, with manual commits after each poll and on revoke; every
// record is received exactly once, in order per partition, for each
// assignor.
func TestGroupExactlyOnceUnderChurn(t *testing.T) {
	for _, a := range []consumer.Assignor{consumer.Range(), consumer.RoundRobin(), consumer.CooperativeSticky()} {
		t.Run(a.Name(), func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			r := rand.New(rand.NewPCG(seed, 24))
			t.Logf("seed %d", seed)
			n := groupNode(t)
			const parts = 6
			createTopic(t, n, "study", parts, nil)
			out := make(chan got, 10000)
			changed := make(chan struct{}, 1)
			opts := append(fastGroup("lzl", "study"), consumer.Assignors(a), consumer.DisableAutoCommit())
			var live, all []*member
			start := func() {
				m := startMember(t, n, fmt.Sprintf("m%d", len(all)), out, changed, opts...)
				live, all = append(live, m), append(all, m)
			}
			for range 3 {
				start()
			}
			const rounds = 120
			for round := range rounds {
				produceRound(t, n, "study", parts, round)
				if round%10 != 9 {
					continue
				}
				switch {
				case len(live) < 5 && (len(live) < 2 || r.IntN(2) == 0):
					start()
				default:
					i := r.IntN(len(live))
					live[i].close()
					live = slices.Delete(live, i, i+1)
				}
			}
			recs := collect(t, out, rounds*parts)
			requireExactlyOnce(t, recs, rounds*parts)
			waitOwners(t, changed, parts, live...)
			for _, m := range all {
				require.NoError(t, m.error())
			}
		})
	}
}

// TestGroupStaticMemberRestart: a static member (group.instance.id) that
// closes and comes back within its session timeout takes its partitions
// back without a rebalance; the records in between are not lost.
func TestGroupStaticMemberRestart(t *testing.T) {
	n := groupNode(t)
	const parts = 4
	createTopic(t, n, "study", parts, nil)
	out := make(chan got, 1000)
	changed := make(chan struct{}, 1)
	opts := append(fastGroup("lzl", "study"), consumer.DisableAutoCommit())
	a := startMember(t, n, "a", out, changed, append(opts, consumer.GroupInstanceID("a"))...)
	waitOwners(t, changed, parts, a) // a leads; a static leader's return rebalances
	b := startMember(t, n, "b", out, changed, append(opts, consumer.GroupInstanceID("b"))...)
	owners := waitOwners(t, changed, parts, a, b)
	gen := a.c.GroupMetadata().Generation
	rebalances := a.c.GroupMetadata().Rebalances
	produceRound(t, n, "study", parts, 0)
	recs := collect(t, out, parts)

	b.close() // a static member does not leave
	produceRound(t, n, "study", parts, 1)
	recs = append(recs, collect(t, out, parts/2)...) // a's half
	b = startMember(t, n, "b", out, changed, append(opts, consumer.GroupInstanceID("b"))...)
	again := waitOwners(t, changed, parts, a, b)
	require.Equal(t, owners, again, "b has its partitions back")
	recs = append(recs, collect(t, out, parts/2)...) // b's half of round 1
	requireExactlyOnce(t, recs, 2*parts)
	require.Equal(t, gen, b.c.GroupMetadata().Generation, "no rebalance")
	require.Equal(t, rebalances, a.c.GroupMetadata().Rebalances, "a never rebalanced")
	require.NoError(t, a.error())
	require.NoError(t, b.error())
}

// TestGroupLeaderNoticesNewTopic: the group's leader reads the subscribed
// topics' metadata every MetadataMaxAge and rebalances when one appears, so
// that its partitions are consumed too.
func TestGroupLeaderNoticesNewTopic(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "a", 1, nil)
	c := newConsumer(t, n.Client(), append(fastGroup("lzl", "a", "b"), consumer.MetadataMaxAge(20*time.Millisecond))...)
	ctx := context.Background()
	produceValues(t, n.Client(), "a", 0, "a0")
	require.Equal(t, []string{"a0"}, values(pollN(t, c, 1)))
	require.Equal(t, []kafka.TopicPartition{tp("a", 0)}, c.Assignment())
	gen := c.GroupMetadata().Generation

	createTopic(t, n, "b", 2, nil)
	produceValues(t, n.Client(), "b", 1, "b0")
	var got []string
	for len(got) == 0 {
		fs, err := c.Poll(ctx, pollTimeout)
		require.NoError(t, err)
		require.False(t, fs.Empty(), "b's record never came")
		fs.EachRecord(func(r *consumer.Record) { got = append(got, string(r.Value)) })
	}
	require.Equal(t, []string{"b0"}, got)
	require.Equal(t, []kafka.TopicPartition{tp("a", 0), tp("b", 0), tp("b", 1)}, c.Assignment())
	require.Greater(t, c.GroupMetadata().Generation, gen)
}
