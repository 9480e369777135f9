package consumer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
)

func TestAutoOffsetResetEarliest(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	produceValues(t, n.Client(), "t", 0, "old")
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
	require.Equal(t, int64(0), position(t, c, tp("t", 0)))
	require.Equal(t, []string{"old"}, values(pollN(t, c, 1)))
}

func TestAutoOffsetResetLatest(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	produceValues(t, n.Client(), "t", 0, "old", "older")
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0))) // Latest by default
	require.Equal(t, int64(2), position(t, c, tp("t", 0)))
	produceValues(t, n.Client(), "t", 0, "new")
	require.Equal(t, []string{"new"}, values(pollN(t, c, 1)))
}

func TestAutoOffsetResetNone(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 2, nil)
	produceValues(t, n.Client(), "t", 0, "a", "b")
	c := newConsumer(t, n.Client(), consumer.PartitionsAt(map[kafka.TopicPartition]int64{tp("t", 1): 0}),
		consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.None))

	_, err := pollErr(t, c)
	fe := requireFetchError(t, err, tp("t", 0), consumer.ErrNoOffset)
	require.Equal(t, int64(-1), fe.Offset)
	_, err = c.Position(context.Background(), tp("t", 0))
	require.ErrorIs(t, err, consumer.ErrNoOffset, "the partition stays stopped")
	require.Equal(t, int64(0), position(t, c, tp("t", 1)), "the other partition has its offset")

	fs, err := c.Poll(context.Background(), 0)
	require.NoError(t, err, "reported once")
	require.True(t, fs.Empty())

	require.NoError(t, c.Seek(tp("t", 0), 1))
	require.Equal(t, []string{"b"}, values(pollN(t, c, 1)))
}

// retainedTopic creates a topic of one-batch segments and fills it with
// batches of 10 records, then lets retention delete all but the last few
// segments. It returns the log start offset and the high watermark.
func retainedTopic(t *testing.T, n *partlog.Node, batches int) (logStart, hw int64) {
	t.Helper()
	createTopic(t, n, "t", 1, map[string]string{"segment.bytes": "1024", "retention.bytes": "2048"})
	for b := range batches {
		produceValues(t, n.Client(), "t", 0, seq(fmt.Sprint(b, "-", strings.Repeat("x", 60), "-"), 10)...)
	}
	require.NoError(t, partlogtest.EnforceRetention(n))
	desc, err := n.DescribeTopics("t")
	require.NoError(t, err)
	p := desc[0].Partitions[0]
	require.Greater(t, p.LogStartOffset, int64(0), "retention deleted the start")
	return p.LogStartOffset, p.HighWatermark
}

func TestOutOfRangeResetsAsThePolicySays(t *testing.T) {
	for _, reset := range []consumer.OffsetReset{consumer.Earliest, consumer.Latest, consumer.None} {
		t.Run(reset.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := openNode(t)
				logStart, hw := retainedTopic(t, n, 20)
				c := newConsumer(t, n.Client(), consumer.PartitionsAt(map[kafka.TopicPartition]int64{tp("t", 0): 3}),
					consumer.AutoOffsetReset(reset))
				switch reset {
				case consumer.Earliest:
					recs := pollN(t, c, int(hw-logStart))
					require.Equal(t, logStart, recs[0].Offset)
				case consumer.Latest:
					fs, err := c.Poll(context.Background(), 0) // starts fetching
					require.NoError(t, err)
					require.True(t, fs.Empty())
					synctest.Wait() // reset, and waiting for records past the end
					require.Equal(t, hw, position(t, c, tp("t", 0)))
					produceValues(t, n.Client(), "t", 0, "new")
					require.Equal(t, []string{"new"}, values(pollN(t, c, 1)))
				case consumer.None:
					_, err := pollErr(t, c)
					fe := requireFetchError(t, err, tp("t", 0), kafka.ErrOffsetOutOfRange)
					require.Equal(t, int64(3), fe.Offset)
					require.NoError(t, c.SeekToBeginning())
					recs := pollN(t, c, int(hw-logStart))
					require.Equal(t, logStart, recs[0].Offset)
				}
			})
		})
	}
}

func TestSeek(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	produceValues(t, n.Client(), "t", 0, seq("v", 10)...) // timestamps baseTime+i
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.MaxPollRecords(3))
	p := tp("t", 0)

	require.NoError(t, c.Seek(p, 4))
	require.Equal(t, int64(4), position(t, c, p))
	require.Equal(t, []string{"v4", "v5", "v6"}, values(pollN(t, c, 3)))

	require.NoError(t, c.SeekToBeginning(p))
	require.Equal(t, int64(0), position(t, c, p))
	require.Equal(t, []string{"v0", "v1", "v2"}, values(pollN(t, c, 3)))

	require.NoError(t, c.SeekToEnd())
	require.Equal(t, int64(10), position(t, c, p))
	fs, err := c.Poll(context.Background(), 0)
	require.NoError(t, err)
	require.True(t, fs.Empty())

	require.NoError(t, c.SeekToTimestamp(context.Background(), time.UnixMilli(baseTime+7), p))
	require.Equal(t, int64(7), position(t, c, p))
	require.Equal(t, []string{"v7", "v8", "v9"}, values(pollN(t, c, 3)))

	require.NoError(t, c.SeekToTimestamp(context.Background(), time.UnixMilli(baseTime-1000)))
	require.Equal(t, int64(0), position(t, c, p))

	// No record at or after the time: the end, as Kafka.
	require.NoError(t, c.SeekToTimestamp(context.Background(), time.UnixMilli(baseTime+1000), p))
	require.Equal(t, int64(10), position(t, c, p))

	require.ErrorIs(t, c.Seek(tp("t", 1), 0), consumer.ErrNotAssigned)
	require.ErrorIs(t, c.SeekToEnd(tp("other", 0)), consumer.ErrNotAssigned)
	require.Error(t, c.Seek(p, -1))
}

// TestSeekWhileFetching moves a partition while the fetcher waits in the
// node for records past its end: the next Poll must not wait out that
// fetch.
func TestSeekWhileFetching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 1, nil)
		produceValues(t, n.Client(), "t", 0, "a", "b")
		c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.FetchMaxWait(time.Hour))
		require.Equal(t, int64(2), position(t, c, tp("t", 0)))
		fs, err := c.Poll(context.Background(), 0)
		require.NoError(t, err)
		require.True(t, fs.Empty())
		synctest.Wait() // the fetch waits in the node

		start := time.Now()
		require.NoError(t, c.Seek(tp("t", 0), 0))
		require.Equal(t, []string{"a", "b"}, values(pollN(t, c, 2)))
		require.Zero(t, time.Since(start))
	})
}

func TestPauseResume(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 2, nil)
	produceValues(t, n.Client(), "t", 0, "a")
	produceValues(t, n.Client(), "t", 1, "b")
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0), tp("t", 1)), consumer.AutoOffsetReset(consumer.Earliest))
	require.NoError(t, c.Pause(tp("t", 0)))
	require.Equal(t, []kafka.TopicPartition{tp("t", 0)}, c.Paused())
	require.Equal(t, []string{"b"}, values(pollN(t, c, 1)))
	produceValues(t, n.Client(), "t", 1, "c")
	require.Equal(t, []string{"c"}, values(pollN(t, c, 1)))

	require.NoError(t, c.Resume())
	require.Empty(t, c.Paused())
	require.Equal(t, []string{"a"}, values(pollN(t, c, 1)))
}
