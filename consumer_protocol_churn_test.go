package partlog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// TestConsumerProtocolChurn runs partlog's own consumers on the consumer
// group protocol (KIP-848), each over a TCP client of its own, while
// members join and leave and records keep coming: a partition is never
// held by two members at once (a member is given it only after its last
// owner revoked it), every record is read exactly once (commits on
// revocation, polite leaves), each byte for byte, and the group ends
// Stable with every partition assigned.
func TestConsumerProtocolChurn(t *testing.T) {
	const partitions = 6
	n := openNode(t, vfs.NewMem(), partlog.GroupConsumerHeartbeatInterval(50*time.Millisecond), partlog.OffsetsTopicPartitions(3))
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "jobs", Partitions: partitions}))
	addr := serveNode(t, n)

	var mu sync.Mutex
	owner := map[kafka.TopicPartition]string{} // who holds each partition now
	var overlaps []string
	want := map[string]string{} // "p/offset" -> value produced
	got := map[string]int{}
	read := map[string]string{} // "p/offset" -> value read
	produced := 0
	produceSome := func(count int) {
		for range count {
			p := int32(produced % partitions)
			v := fmt.Sprintf("job-%d", produced)
			r := produce(t, n, "jobs", p, v)
			require.NoError(t, r.Err)
			mu.Lock()
			want[fmt.Sprintf("%d/%d", p, r.BaseOffset)] = v
			mu.Unlock()
			produced++
		}
	}

	type member struct {
		name string
		c    *consumer.Consumer
		stop chan struct{}
		done chan struct{}
	}
	start := func(name string) *member {
		cl, err := transport.Dial(ctx, addr, transport.DialOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { cl.Close() })
		give := func(_ context.Context, _ *consumer.Consumer, tps []kafka.TopicPartition) {
			mu.Lock()
			defer mu.Unlock()
			for _, tp := range tps {
				if owner[tp] != name {
					overlaps = append(overlaps, fmt.Sprintf("%s gives up %v, held by %q", name, tp, owner[tp]))
				}
				delete(owner, tp)
			}
		}
		c, err := consumer.New(cl, consumer.Group("workers"), consumer.Topics("jobs"), consumer.GroupProtocol(consumer.ConsumerProtocol),
			consumer.AutoOffsetReset(consumer.Earliest), consumer.FetchMaxWait(20*time.Millisecond), consumer.ClientID(name),
			consumer.OnPartitionsAssigned(func(_ context.Context, _ *consumer.Consumer, tps []kafka.TopicPartition) {
				mu.Lock()
				defer mu.Unlock()
				for _, tp := range tps {
					if h := owner[tp]; h != "" {
						overlaps = append(overlaps, fmt.Sprintf("%s given %v while %s holds it", name, tp, h))
					}
					owner[tp] = name
				}
			}),
			consumer.OnPartitionsRevoked(give), consumer.OnPartitionsLost(give))
		require.NoError(t, err)
		m := &member{name: name, c: c, stop: make(chan struct{}), done: make(chan struct{})}
		go func() {
			defer close(m.done)
			for {
				select {
				case <-m.stop:
					return
				default:
				}
				fs, err := c.Poll(ctx, 20*time.Millisecond)
				if err != nil {
					return
				}
				fs.EachRecord(func(r *consumer.Record) {
					mu.Lock()
					key := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
					got[key]++
					read[key] = string(r.Value)
					mu.Unlock()
				})
			}
		}()
		return m
	}
	leave := func(m *member) {
		close(m.stop)
		<-m.done
		gm := m.c.GroupMetadata()
		t.Logf("%s leaves at epoch %d after %d reconciliations", m.name, gm.Generation, gm.Rebalances)
		require.NoError(t, m.c.Close())
	}
	// consumed waits until the group read every record produced so far.
	consumed := func() {
		t.Helper()
		for {
			mu.Lock()
			n, total := len(got), len(want)
			mu.Unlock()
			if n == total {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the group read %d of %d records", n, total)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}

	// Records keep coming while members join and leave: each step
	// produces while the members consume, then changes the membership
	// without waiting for them to catch up.
	produceSome(120)
	a, b := start("a"), start("b")
	produceSome(300)
	c := start("c")
	produceSome(300)
	leave(a)
	d := start("d")
	produceSome(300)
	leave(b)
	produceSome(300)
	consumed()

	// The group settles: c and d share the six partitions, three each.
	for {
		desc, err := n.Client().ConsumerGroupDescribe(ctx, &transport.ConsumerGroupDescribeRequest{Groups: []string{"workers"}})
		require.NoError(t, err)
		g := desc.Groups[0]
		require.NoError(t, g.Err)
		if g.State == "Stable" && len(g.Members) == 2 && len(c.c.Assignment()) == 3 && len(d.c.Assignment()) == 3 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("never settled: %+v; c %v, d %v", g, c.c.Assignment(), d.c.Assignment())
		case <-time.After(20 * time.Millisecond):
		}
	}
	leave(c)
	leave(d)

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, overlaps, "a partition held by two members at once")
	require.Equal(t, want, read, "records read back altered")
	require.Len(t, got, len(want))
	for key, count := range got {
		require.Equal(t, 1, count, "record %s read %d times", key, count)
	}
	require.Empty(t, owner, "partitions still held after every member left")
}

// TestClusterConsumerProtocolFailover: two of partlog's consumers on the
// consumer group protocol, each over a transport.ClusterClient, on a
// three-node cluster; the group's coordinator halted: the ClusterClient
// finds the node that took the group's partition of __consumer_offsets
// over, which describes the same group (ConsumerGroupDescribe through the
// ClusterClient), and the members read every record exactly once.
func TestClusterConsumerProtocolFailover(t *testing.T) {
	c, ctx, seeds, produce := newFailoverCluster(t)
	dial := func() *transport.ClusterClient {
		cl, err := transport.DialCluster(ctx, seeds, transport.DialOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	admin := dial()
	var members []*consumer.Consumer
	for range 2 {
		m, err := consumer.New(dial(), consumer.Group("workers"), consumer.Topics("jobs"), consumer.GroupProtocol(consumer.ConsumerProtocol),
			consumer.AutoOffsetReset(consumer.Earliest), consumer.FetchMaxWait(50*time.Millisecond), consumer.DisableAutoCommit())
		require.NoError(t, err)
		defer m.Close()
		members = append(members, m)
	}
	seen := map[string]int{}
	pollUntil := func(what string, done func() bool) {
		t.Helper()
		for !done() {
			for _, m := range members {
				fs, err := m.Poll(ctx, 50*time.Millisecond)
				require.NoError(t, err)
				fs.EachRecord(func(r *consumer.Record) { seen[string(r.Value)]++ })
				if err := m.Commit(ctx); err != nil {
					require.ErrorIs(t, err, consumer.ErrCommitFailed) // refused while the coordinator moves: read again
				}
			}
			require.NoError(t, ctx.Err(), "never: %s", what)
		}
	}
	describe := func() transport.ConsumerGroupDescription {
		resp, err := admin.ConsumerGroupDescribe(ctx, &transport.ConsumerGroupDescribeRequest{Groups: []string{"workers"}})
		if err != nil {
			return transport.ConsumerGroupDescription{Err: err}
		}
		return resp.Groups[0]
	}
	shared := func() bool {
		d := describe()
		return d.Err == nil && d.State == "Stable" && len(d.Members) == 2 &&
			len(members[0].Assignment()) == 2 && len(members[1].Assignment()) == 2
	}

	coordinatorFailover(t, c, admin, produce, pollUntil, describe, shared, seen)
}
