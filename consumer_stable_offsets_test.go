package partlog_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/vfs"
)

// pollUntilAssigned polls c until the group gives it partitions.
func pollUntilAssigned(t *testing.T, ctx context.Context, c *consumer.Consumer) {
	t.Helper()
	for len(c.Assignment()) == 0 {
		_, err := c.Poll(ctx, 50*time.Millisecond)
		require.NoError(t, err)
	}
}

// TestCommittedAfterCommitTransaction: right after CommitTransaction
// returns, the COMMIT marker may not yet have reached the group's offsets
// partition; the consumer asks with require_stable, as Kafka's does, and
// waits out UNSTABLE_OFFSET_COMMIT, so it never reads the offset from
// before the transaction. Before the consumer set require_stable, 20 of
// 20 rounds read the previous offset.
func TestCommittedAfterCommitTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t, vfs.NewMem())
		defer n.Close()
		ctx := context.Background()
		require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "in"}))
		in := kafka.TopicPartition{Topic: "in", Partition: 0}
		c, err := consumer.New(n.Client(), consumer.Group("g"), consumer.Topics("in"), consumer.DisableAutoCommit(),
			consumer.Isolation(consumer.ReadCommitted))
		require.NoError(t, err)
		defer c.Close()
		pollUntilAssigned(t, ctx, c)
		m := c.GroupMetadata()
		gm := producer.GroupMetadata{Group: "g", GenerationID: m.Generation, MemberID: m.MemberID}
		p, err := producer.New(n.Client(), producer.TransactionalID("t"))
		require.NoError(t, err)
		defer p.Close()
		for off := int64(1); off <= 20; off++ {
			require.NoError(t, p.BeginTransaction())
			require.NoError(t, p.SendOffsetsToTransaction(ctx, map[kafka.TopicPartition]int64{in: off}, gm))
			require.NoError(t, p.CommitTransaction(ctx))
			co, err := c.Committed(ctx, in)
			require.NoError(t, err)
			require.Equal(t, off, co[in].Offset, "committed in a transaction just now")
		}
	})
}

// unstableFor answers FetchOffsets with UNSTABLE_OFFSET_COMMIT for d from
// its first call, as a coordinator answers a require_stable fetch while a
// transaction holding the group's offsets is open.
type unstableFor struct {
	consumer.OffsetStore
	d     time.Duration
	until atomic.Pointer[time.Time]
}

func (s *unstableFor) FetchOffsets(ctx context.Context, group string, tps []kafka.TopicPartition) (map[kafka.TopicPartition]consumer.CommittedOffset, error) {
	if s.until.Load() == nil {
		u := time.Now().Add(s.d)
		s.until.CompareAndSwap(nil, &u)
	}
	if time.Now().Before(*s.until.Load()) {
		return nil, kafka.ErrUnstableOffsetCommit
	}
	return s.OffsetStore.FetchOffsets(ctx, group, tps)
}

// TestHeartbeatsWhileWaitingForStableOffsets: a rebalance that waits three
// session timeouts for its committed offsets to become stable keeps the
// member in the group — it heartbeats in the generation it joined — so it
// neither loses its partitions nor makes the group rebalance again.
// Before, the consumer sent no heartbeat until the offsets came, and was
// dropped.
func TestHeartbeatsWhileWaitingForStableOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t, vfs.NewMem(), partlog.GroupMinSessionTimeout(100*time.Millisecond))
		defer n.Close()
		ctx := context.Background()
		require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "in"}))
		var lost atomic.Int32
		c, err := consumer.New(n.Client(), consumer.Group("g"), consumer.Topics("in"), consumer.DisableAutoCommit(),
			consumer.SessionTimeout(500*time.Millisecond), consumer.HeartbeatInterval(50*time.Millisecond),
			consumer.RetryBackoff(20*time.Millisecond), consumer.RetryBackoffMax(50*time.Millisecond),
			consumer.Offsets(&unstableFor{OffsetStore: consumer.CoordinatorOffsets(n.Client()), d: 1500 * time.Millisecond}),
			consumer.OnPartitionsLost(func(context.Context, *consumer.Consumer, []kafka.TopicPartition) { lost.Add(1) }))
		require.NoError(t, err)
		defer c.Close()
		pollUntilAssigned(t, ctx, c)
		gen := c.GroupMetadata().Generation
		for range 40 { // 2 s
			_, err := c.Poll(ctx, 50*time.Millisecond)
			require.NoError(t, err)
		}
		require.Zero(t, lost.Load(), "the member lost its partitions")
		require.Equal(t, gen, c.GroupMetadata().Generation, "the group rebalanced again")
	})
}
