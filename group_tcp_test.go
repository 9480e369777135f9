package partlog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// TestTCPConsumerGroup runs two of partlog's group consumers, each with a
// TCP client of its own, in front of a node: they share the partitions,
// commit over the wire, and a third consumer after them goes on from the
// committed offsets.
func TestTCPConsumerGroup(t *testing.T) {
	n := openNode(t, vfs.NewMem(), partlog.GroupMinSessionTimeout(10*time.Millisecond), partlog.OffsetsTopicPartitions(3))
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 4}))
	addr := serveNode(t, n)
	for p := range int32(4) {
		require.NoError(t, produce(t, n, "study", p, "a", "b", "c").Err)
	}
	dial := func() *transport.TCPClient {
		c, err := transport.Dial(ctx, addr, transport.DialOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	opts := []consumer.Option{consumer.Group("lzl"), consumer.Topics("study"), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.HeartbeatInterval(10 * time.Millisecond), consumer.SessionTimeout(2 * time.Second), consumer.FetchMaxWait(20 * time.Millisecond)}
	var mu sync.Mutex
	got := map[string]string{}
	var dups []string
	progress := make(chan struct{}, 1)
	signal := func() {
		select {
		case progress <- struct{}{}:
		default:
		}
	}
	var wg sync.WaitGroup
	members := make([]*consumer.Consumer, 2)
	for i := range members {
		c, err := consumer.New(dial(), append(opts, consumer.OnPartitionsAssigned(func(context.Context, *consumer.Consumer, []kafka.TopicPartition) { signal() }))...)
		require.NoError(t, err)
		members[i] = c
	}
	done := make(chan struct{})
	for i, c := range members {
		wg.Go(func() {
			for {
				select {
				case <-done:
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
					if got[key] != "" {
						dups = append(dups, key)
					}
					got[key] = fmt.Sprint("m", i)
					mu.Unlock()
					signal()
				})
				if !fs.Empty() {
					c.Commit(ctx)
				}
			}
		})
	}
	// Wait until both have partitions and everything is consumed.
	for {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k == 12 && len(members[0].Assignment()) == 2 && len(members[1].Assignment()) == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("got %d records; assignments %v %v", k, members[0].Assignment(), members[1].Assignment())
		case <-progress: // a record or an assignment came
		}
	}
	close(done)
	wg.Wait()
	require.Empty(t, dups, "records received twice")
	for _, c := range members {
		require.NoError(t, c.Commit(ctx))
		require.NoError(t, c.Close())
	}

	gc := dial()
	desc, err := gc.DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{"lzl"}})
	require.NoError(t, err)
	require.Equal(t, "Empty", desc.Groups[0].State)
	for p := range int32(4) {
		require.NoError(t, produce(t, n, "study", p, "d").Err)
	}
	last := newTCPGroupConsumer(t, dial(), opts...)
	var rest []string
	for len(rest) < 4 {
		fs, err := last.Poll(ctx, 5*time.Second)
		require.NoError(t, err)
		require.False(t, fs.Empty())
		fs.EachRecord(func(r *consumer.Record) {
			require.Equal(t, int64(3), r.Offset, "the group goes on from its commits")
			rest = append(rest, string(r.Value))
		})
	}
	require.Equal(t, []string{"d", "d", "d", "d"}, rest)
}

func newTCPGroupConsumer(t *testing.T, c transport.Client, opts ...consumer.Option) *consumer.Consumer {
	t.Helper()
	cons, err := consumer.New(c, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { cons.Close() })
	return cons
}

// TestTCPKafkaConsumerGroup has franz-go's kgo, a Kafka client that knows
// nothing of partlog, consume in a consumer group from a node over TCP:
// it finds the coordinator, joins, syncs, heartbeats and commits, and its
// commits are the group's offsets.
func TestTCPKafkaConsumerGroup(t *testing.T) {
	n := openNode(t, vfs.NewMem(), partlog.OffsetsTopicPartitions(3))
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 2}))
	addr := serveNode(t, n)
	for p := range int32(2) {
		require.NoError(t, produce(t, n, "study", p, "a", "b", "c", "d", "e").Err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("lzl"), kgo.ConsumeTopics("study"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	require.NoError(t, err)
	got := 0
	for got < 10 {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		for _, e := range fs.Errors() {
			t.Fatalf("fetch error: %v", e.Err)
		}
		got += fs.NumRecords()
	}
	require.Equal(t, 10, got)
	require.NoError(t, cl.CommitUncommittedOffsets(ctx))
	cl.Close() // leaves the group

	resp, err := n.Client().OffsetFetch(ctx, &transport.OffsetFetchRequest{Group: "lzl", Topics: []transport.OffsetFetchTopic{{Topic: "study", Partitions: []int32{0, 1}}}})
	require.NoError(t, err)
	require.Equal(t, int64(5), resp.Topics[0].Partitions[0].Offset)
	require.Equal(t, int64(5), resp.Topics[0].Partitions[1].Offset)
	d, err := n.Client().DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{"lzl"}})
	require.NoError(t, err)
	require.Equal(t, "Empty", d.Groups[0].State)
}
