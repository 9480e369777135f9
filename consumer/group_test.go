package consumer_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
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
	tp     consumer.TopicPartition
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
	err   error
	owned sync.Map // consumer.TopicPartition -> bool, from the callbacks
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
		consumer.OnPartitionsRevoked(func(ctx context.Context, c *consumer.Consumer, tps []consumer.TopicPartition) {
			if err := c.Commit(ctx); err != nil {
				m.err = fmt.Errorf("%s: commit on revoke: %w", name, err)
			}
			for _, tp := range tps {
				m.owned.Delete(tp)
			}
			signal()
		}),
		consumer.OnPartitionsAssigned(func(ctx context.Context, c *consumer.Consumer, tps []consumer.TopicPartition) {
			for _, tp := range tps {
				m.owned.Store(tp, true)
			}
			signal()
		}),
	)
	c, err := consumer.New(n, all...)
	require.NoError(tb, err)
	m.c = c
	go func() {
		defer close(m.done)
		defer c.Close()
		ctx := context.Background()
		for !m.stop.Load() {
			fs, err := c.Poll(ctx, 20*time.Millisecond)
			if err != nil {
				m.err = fmt.Errorf("%s: poll: %w", name, err)
				return
			}
			fs.EachRecord(func(r *consumer.Record) {
				out <- got{member: name, tp: r.TopicPartition(), offset: r.Offset, value: string(r.Value)}
			})
			if !fs.Empty() {
				if err := c.Commit(ctx); err != nil {
					m.err = fmt.Errorf("%s: commit: %w", name, err)
				}
			}
		}
	}()
	tb.Cleanup(func() { m.close() })
	return m
}

// close stops the member: it leaves the group, revoking (and so
// committing) what it owns.
func (m *member) close() {
	m.stop.Store(true)
	<-m.done
}

func (m *member) partitions() []consumer.TopicPartition {
	var out []consumer.TopicPartition
	m.owned.Range(func(k, _ any) bool {
		out = append(out, k.(consumer.TopicPartition))
		return true
	})
	slices.SortFunc(out, func(a, b consumer.TopicPartition) int {
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
		produceValues(tb, n, topic, p, fmt.Sprintf("r%d-p%d", round, p))
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
	last := map[consumer.TopicPartition]int64{}
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
func waitOwners(tb testing.TB, changed <-chan struct{}, partitions int32, ms ...*member) map[string][]consumer.TopicPartition {
	tb.Helper()
	deadline := time.After(30 * time.Second)
	for {
		owners := map[consumer.TopicPartition][]string{}
		byMember := map[string][]consumer.TopicPartition{}
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

// TestGroupJoinLeaveCrash: two consumers of group lzl share topic study;
// a third joins; one leaves politely; one crashes (a member that stops
// heartbeating). After each change every partition has exactly one owner,
// and with commit on revoke every record is received exactly once.
func TestGroupJoinLeaveCrash(t *testing.T) {
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
				require.NoError(t, m.err)
			}
		})
	}
}
