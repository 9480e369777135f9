package partlog_test

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/group"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

func commitOffset(t *testing.T, n *partlog.Node, g, member string, gen int32, topic string, p int32, off int64) error {
	t.Helper()
	resp, err := n.Client().OffsetCommit(context.Background(), &transport.OffsetCommitRequest{Group: g, MemberID: member, GenerationID: gen,
		Topics: []transport.OffsetCommitTopic{{Topic: topic, Partitions: []transport.OffsetCommitPartition{{Partition: p, Offset: off, LeaderEpoch: -1, Metadata: "m"}}}}})
	require.NoError(t, err)
	return resp.Topics[0].Partitions[0].Err
}

func committedOffset(t *testing.T, n *partlog.Node, g, topic string, p int32) int64 {
	t.Helper()
	resp, err := n.Client().OffsetFetch(context.Background(), &transport.OffsetFetchRequest{Group: g, Topics: []transport.OffsetFetchTopic{{Topic: topic, Partitions: []int32{p}}}})
	require.NoError(t, err)
	return resp.Topics[0].Partitions[0].Offset
}

// TestNodeGroupsSurviveCrash: the node creates __consumer_offsets on first
// use, compacted, with the group in Kafka's partition; committed offsets
// and the group's generation survive a crash that keeps only synced bytes.
func TestNodeGroupsSurviveCrash(t *testing.T) {
	mem := vfs.NewMem()
	n := openNode(t, mem)
	ctx := context.Background()
	fc, err := n.Client().FindCoordinator(ctx, &transport.FindCoordinatorRequest{Key: "lzl"})
	require.NoError(t, err)
	require.Equal(t, n.NodeID(), fc.NodeID)
	d, err := n.DescribeTopics(group.OffsetsTopic)
	require.NoError(t, err)
	require.Len(t, d[0].Partitions, 50)
	require.Equal(t, "compact", d[0].Effective[partlog.ConfigCleanupPolicy])
	require.ErrorIs(t, n.DeleteTopic(ctx, group.OffsetsTopic), kafka.ErrInvalidTopic, "internal topics stay")

	join, err := n.Client().JoinGroup(ctx, &transport.JoinGroupRequest{Group: "lzl", ClientID: "c", ProtocolType: "consumer",
		SessionTimeout: 10 * time.Second, Protocols: []transport.JoinGroupProtocol{{Name: "range", Metadata: []byte("sub")}}})
	require.NoError(t, err)
	require.NoError(t, join.Err)
	sync, err := n.Client().SyncGroup(ctx, &transport.SyncGroupRequest{Group: "lzl", MemberID: join.MemberID, GenerationID: join.GenerationID,
		Assignments: []transport.SyncGroupAssignment{{MemberID: join.MemberID, Assignment: []byte("all")}}})
	require.NoError(t, err)
	require.NoError(t, sync.Err)
	require.NoError(t, commitOffset(t, n, "lzl", join.MemberID, join.GenerationID, "study", 0, 41))
	require.NoError(t, commitOffset(t, n, "lzl", join.MemberID, join.GenerationID, "study", 0, 42))
	require.ErrorIs(t, commitOffset(t, n, "lzl", join.MemberID, join.GenerationID-1, "study", 0, 1), kafka.ErrIllegalGeneration)
	d, err = n.DescribeTopics(group.OffsetsTopic)
	require.NoError(t, err)
	require.Equal(t, int64(3), d[0].Partitions[28].LogEndOffset, `"lzl" lives in partition 28, as in Kafka: one group record, two offsets`)

	crashed := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
	require.NoError(t, n.Close())
	n = openNode(t, crashed)
	defer n.Close()
	require.Equal(t, int64(42), committedOffset(t, n, "lzl", "study", 0))
	desc, err := n.Client().DescribeGroups(ctx, &transport.DescribeGroupsRequest{Groups: []string{"lzl"}})
	require.NoError(t, err)
	g := desc.Groups[0]
	require.Equal(t, "Stable", g.State)
	require.Equal(t, join.GenerationID, g.GenerationID)
	require.Equal(t, "all", string(g.Members[0].Assignment))
	require.NoError(t, commitOffset(t, n, "lzl", join.MemberID, join.GenerationID, "study", 0, 43), "the member carries on after the restart")
}

// TestNodeCloseAnswersWaitingJoin: a JoinGroup that waits for the other
// members does not hold Close up.
func TestNodeCloseAnswersWaitingJoin(t *testing.T) {
	rebalancing := make(chan struct{}, 10)
	n := openNode(t, vfs.NewMem(), partlog.Logger(slog.New(signalHandler{msg: "preparing to rebalance", ch: rebalancing})))
	ctx := context.Background()
	req := &transport.JoinGroupRequest{Group: "g", ClientID: "c", ProtocolType: "consumer",
		SessionTimeout: 10 * time.Second, Protocols: []transport.JoinGroupProtocol{{Name: "range"}}}
	first, err := n.Client().JoinGroup(ctx, req)
	require.NoError(t, err)
	require.NoError(t, first.Err)
	done := make(chan *transport.JoinGroupResponse, 1)
	go func() {
		r, err := n.Client().JoinGroup(ctx, req) // waits for the first member to rejoin
		if err != nil {
			r = &transport.JoinGroupResponse{Err: err}
		}
		done <- r
	}()
	<-rebalancing // the first join's
	<-rebalancing // the second's: it waits now
	require.NoError(t, n.Close())
	r := <-done
	require.ErrorIs(t, r.Err, kafka.ErrNotCoordinator)
}

// signalHandler is a slog.Handler that signals ch when a message is
// logged.
type signalHandler struct {
	msg string
	ch  chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h signalHandler) WithGroup(string) slog.Handler            { return h }

func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.ch <- struct{}{}
	}
	return nil
}

// TestNodeOffsetsReloadEqualAcked is the failover half of reliability
// tests 24 and 26: random commits and group deletions, then a crash that
// keeps only synced bytes at a random point; the offsets a restarted node
// reloads from __consumer_offsets are exactly the last acknowledged
// commits, and deleted groups stay deleted.
func TestNodeOffsetsReloadEqualAcked(t *testing.T) {
	for seed := range uint64(5) {
		r := rand.New(rand.NewPCG(seed, 26))
		mem := vfs.NewMem()
		n := openNode(t, mem, partlog.OffsetsTopicPartitions(3))
		ctx := context.Background()
		type key struct {
			group string
			p     int32
		}
		want := map[key]int64{}
		groups := []string{"a", "b", "c", "d", "e"}
		steps := 50 + r.IntN(150)
		for range steps {
			g := groups[r.IntN(len(groups))]
			if r.IntN(20) == 0 {
				resp, err := n.Client().DeleteGroups(ctx, &transport.DeleteGroupsRequest{Groups: []string{g}})
				require.NoError(t, err)
				if resp.Results[0].Err == nil {
					for k := range want {
						if k.group == g {
							delete(want, k)
						}
					}
				}
				continue
			}
			k := key{g, int32(r.IntN(4))}
			off := r.Int64N(1000)
			require.NoError(t, commitOffset(t, n, g, "", -1, "study", k.p, off))
			want[k] = off
		}
		crashed := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
		require.NoError(t, n.Close())
		n = openNode(t, crashed, partlog.OffsetsTopicPartitions(3))
		for _, g := range groups {
			for p := range int32(4) {
				off, ok := want[key{g, p}]
				if !ok {
					off = -1
				}
				require.Equal(t, off, committedOffset(t, n, g, "study", p), "seed %d group %s partition %d", seed, g, p)
			}
		}
		require.NoError(t, n.Close())
	}
}

// TestConsumersStartedTogetherShareTheFirstGeneration: two consumers of a
// new group started together both get partitions in the group's first
// generation, as Kafka's group.initial.rebalance.delay.ms arranges; the
// first member used to complete its join alone, take every partition and
// read everything before the second joined.
func TestConsumersStartedTogetherShareTheFirstGeneration(t *testing.T) {
	n := openNode(t, vfs.NewMem(), partlog.GroupInitialRebalanceDelay(300*time.Millisecond))
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 4}))
	for p := range int32(4) {
		require.NoError(t, produce(t, n, "t", p, "a", "b").Err)
	}
	var members [2]*consumer.Consumer
	var generations [2]int32
	var wg sync.WaitGroup
	for i := range members {
		c, err := consumer.New(n.Client(), consumer.Group("together"), consumer.Topics("t"), consumer.AutoOffsetReset(consumer.Earliest))
		require.NoError(t, err)
		defer c.Close()
		members[i] = c
	}
	for i, c := range members {
		wg.Go(func() {
			for len(c.Assignment()) == 0 && ctx.Err() == nil {
				c.Poll(ctx, 50*time.Millisecond)
			}
			generations[i] = c.GroupMetadata().Generation
		})
	}
	wg.Wait()
	for i, c := range members {
		require.Len(t, c.Assignment(), 2, "member %d", i)
		require.EqualValues(t, 1, generations[i], "member %d got its partitions in the first generation", i)
	}
}
