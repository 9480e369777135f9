package consumer_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

func TestAssignReadsOnlyTheAssignedPartitions(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 3, nil)
	for p := range int32(3) {
		produceValues(t, n.Client(), "t", p, seq(fmt.Sprint("p", p, "-"), 5)...)
	}
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 2), tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
	require.Equal(t, []kafka.TopicPartition{tp("t", 0), tp("t", 2)}, c.Assignment())

	recs := pollN(t, c, 10)
	byPartition := map[int32][]string{}
	for _, r := range recs {
		byPartition[r.Partition] = append(byPartition[r.Partition], string(r.Value))
	}
	require.Equal(t, map[int32][]string{0: seq("p0-", 5), 2: seq("p2-", 5)}, byPartition)

	fs, err := c.Poll(context.Background(), 0)
	require.NoError(t, err)
	require.True(t, fs.Empty(), "nothing more")
	require.Equal(t, int64(5), position(t, c, tp("t", 0)))
	_, err = c.Position(context.Background(), tp("t", 1))
	require.ErrorIs(t, err, consumer.ErrNotAssigned)
}

func TestSubscribeReadsEveryPartition(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "a", 3, nil)
	createTopic(t, n, "b", 1, nil)
	for p := range int32(3) {
		produceValues(t, n.Client(), "a", p, fmt.Sprint("a", p))
	}
	produceValues(t, n.Client(), "b", 0, "b0")
	c := newConsumer(t, n.Client(), consumer.Topics("a", "b"), consumer.AutoOffsetReset(consumer.Earliest))
	require.Empty(t, c.Assignment(), "no metadata before the first Poll")

	recs := pollN(t, c, 4)
	require.ElementsMatch(t, []string{"a0", "a1", "a2", "b0"}, values(recs))
	require.Equal(t, []kafka.TopicPartition{tp("a", 0), tp("a", 1), tp("a", 2), tp("b", 0)}, c.Assignment())
}

func TestSubscribeFindsATopicCreatedLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		c := newConsumer(t, n.Client(), consumer.Topics("later"), consumer.AutoOffsetReset(consumer.Earliest))
		fs, err := c.Poll(context.Background(), time.Second)
		require.NoError(t, err)
		require.True(t, fs.Empty())
		require.Empty(t, c.Assignment())

		createTopic(t, n, "later", 2, nil)
		produceValues(t, n.Client(), "later", 1, "x")
		recs := pollN(t, c, 1)
		require.Equal(t, "x", string(recs[0].Value))
		require.Equal(t, []kafka.TopicPartition{tp("later", 0), tp("later", 1)}, c.Assignment())
	})
}

func TestRecordFields(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	createTopic(t, n, "stamped", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	in := []record.Record{
		{Timestamp: baseTime, Key: nil, Value: []byte("null key")},
		{Timestamp: baseTime + 5, Key: []byte{}, Value: []byte{}},
		{Timestamp: baseTime - 3, Key: []byte("k"), Value: nil, Headers: []record.RecordHeader{
			{Key: "trace", Value: []byte("abc")}, {Key: "empty", Value: []byte{}}, {Key: "null", Value: nil},
		}},
	}
	produce(t, n.Client(), "t", 0, in...)
	produce(t, n.Client(), "t", 0, record.Record{Timestamp: baseTime + 100, Key: []byte("second batch"), Value: []byte("v")})
	produce(t, n.Client(), "stamped", 0, record.Record{Timestamp: baseTime, Value: []byte("s")})

	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0), tp("stamped", 0)), consumer.AutoOffsetReset(consumer.Earliest))
	recs := pollN(t, c, 5)
	byTopic := map[string][]consumer.Record{}
	for _, r := range recs {
		byTopic[r.Topic] = append(byTopic[r.Topic], r)
	}
	got := byTopic["t"]
	require.Len(t, got, 4)
	for i, r := range got {
		require.Equal(t, "t", r.Topic)
		require.Equal(t, int32(0), r.Partition)
		require.Equal(t, int64(i), r.Offset, "offset order")
		require.Equal(t, consumer.CreateTime, r.TimestampType)
		require.Equal(t, int32(0), r.LeaderEpoch)
	}
	require.Nil(t, got[0].Key)
	require.Equal(t, "null key", string(got[0].Value))
	require.NotNil(t, got[1].Key)
	require.Empty(t, got[1].Key)
	require.NotNil(t, got[1].Value)
	require.Empty(t, got[1].Value)
	require.Nil(t, got[2].Value, "tombstone")
	require.Equal(t, []consumer.RecordHeader{
		{Key: "trace", Value: []byte("abc")}, {Key: "empty", Value: []byte{}}, {Key: "null", Value: nil},
	}, got[2].Headers)
	require.NotNil(t, got[2].Headers[1].Value)
	require.Nil(t, got[2].Headers[2].Value)
	require.Nil(t, got[0].Headers)
	require.Equal(t, time.UnixMilli(baseTime), got[0].Timestamp)
	require.Equal(t, time.UnixMilli(baseTime+5), got[1].Timestamp)
	require.Equal(t, time.UnixMilli(baseTime-3), got[2].Timestamp)
	require.Equal(t, time.UnixMilli(baseTime+100), got[3].Timestamp)
	require.Equal(t, "second batch", string(got[3].Key))
	require.Equal(t, tp("t", 0), got[3].TopicPartition())

	stamped := byTopic["stamped"]
	require.Len(t, stamped, 1)
	require.Equal(t, consumer.LogAppendTime, stamped[0].TimestampType)
	require.NotEqual(t, time.UnixMilli(baseTime), stamped[0].Timestamp, "the node's time, not the producer's")
}

func TestMaxPollRecords(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	produceValues(t, n.Client(), "t", 0, seq("a", 15)...)
	produceValues(t, n.Client(), "t", 0, seq("b", 10)...)
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest), consumer.MaxPollRecords(10))
	var sizes []int
	var all []string
	for len(all) < 25 {
		fs, err := c.Poll(context.Background(), pollTimeout)
		require.NoError(t, err)
		require.LessOrEqual(t, fs.NumRecords(), 10)
		require.False(t, fs.Empty())
		sizes = append(sizes, fs.NumRecords())
		for _, r := range fs.Records() {
			all = append(all, string(r.Value))
		}
	}
	require.Equal(t, append(seq("a", 15), seq("b", 10)...), all)
	require.Equal(t, int64(25), position(t, c, tp("t", 0)))
}

func TestPollReturnsAsSoonAsRecordsArrive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 1, nil)
		c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
		start := time.Now()
		type result struct {
			fs  consumer.Fetches
			err error
		}
		done := make(chan result)
		go func() {
			fs, err := c.Poll(context.Background(), time.Hour)
			done <- result{fs, err}
		}()
		synctest.Wait() // Poll waits, and the fetcher waits in the node
		produceValues(t, n.Client(), "t", 0, "hello")
		r := <-done
		require.NoError(t, r.err)
		require.Equal(t, []string{"hello"}, values(r.fs[0].Records))
		require.Zero(t, time.Since(start), "no time passed: woken by the append, not a timer")
	})
}

func TestPollTimesOutEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 1, nil)
		c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)))
		start := time.Now()
		fs, err := c.Poll(context.Background(), 3*time.Second)
		require.NoError(t, err)
		require.True(t, fs.Empty())
		require.Equal(t, 3*time.Second, time.Since(start))

		fs, err = c.Poll(context.Background(), 0)
		require.NoError(t, err)
		require.True(t, fs.Empty())
		require.Equal(t, 3*time.Second, time.Since(start), "a zero timeout does not wait")

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = c.Poll(ctx, time.Hour)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestRecordsBelowTheHighWatermark(t *testing.T) {
	n := openNode(t) // flush.messages=1: the high watermark is what is on disk
	createTopic(t, n, "t", 1, nil)
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
	produced, consumed := 0, 0
	for round := range 20 {
		produceValues(t, n.Client(), "t", 0, seq(fmt.Sprint(round, "-"), round%4+1)...)
		produced += round%4 + 1
		for consumed < produced {
			fs, err := c.Poll(context.Background(), pollTimeout)
			require.NoError(t, err)
			require.False(t, fs.Empty())
			for _, fp := range fs {
				for _, r := range fp.Records {
					require.Less(t, r.Offset, fp.HighWatermark)
					require.Equal(t, int64(consumed), r.Offset)
					consumed++
				}
				desc, err := n.DescribeTopics("t")
				require.NoError(t, err)
				require.LessOrEqual(t, fp.HighWatermark, desc[0].Partitions[0].HighWatermark)
			}
		}
	}
}

func TestControlBatchesAreSkipped(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	marker := func(pid int64, r transport.TxnResult) {
		t.Helper()
		resp, err := n.Client().WriteTxnMarkers(context.Background(), &transport.WriteTxnMarkersRequest{Markers: []transport.TxnMarker{
			{ProducerID: pid, Result: r, CoordinatorEpoch: 1, Partitions: []kafka.TopicPartition{tp("t", 0)}}}})
		require.NoError(t, err)
		require.NoError(t, resp.Markers[0].Partitions[0].Err)
	}
	produceValues(t, n.Client(), "t", 0, "a", "b") // 0, 1
	marker(7, transport.TxnCommit)                 // 2
	produceValues(t, n.Client(), "t", 0, "c")      // 3
	marker(8, transport.TxnAbort)                  // 4
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
	recs := pollN(t, c, 3)
	require.Equal(t, []string{"a", "b", "c"}, values(recs))
	require.Equal(t, []int64{0, 1, 3}, []int64{recs[0].Offset, recs[1].Offset, recs[2].Offset})
	require.Equal(t, int64(5), position(t, c, tp("t", 0)), "past the last marker")
}
