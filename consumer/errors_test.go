package consumer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// fixedLog is a transport.Client serving one partition, "t"-0, from a
// fixed run of batches, as a node would: a fetch gets the batches from the
// one holding its offset on, or waits up to MaxWait when there are none.
type fixedLog struct {
	batches [][]byte
	hw      int64
	// outOfRange makes every fetch fail with kafka.ErrOffsetOutOfRange,
	// contradicting ListOffsets; fetches counts them.
	outOfRange bool
	fetches    atomic.Int64
}

// newFixedLog returns a fixedLog of batches of n records each, with
// values "v<offset>".
func newFixedLog(batches, n int) *fixedLog {
	l := &fixedLog{}
	for b := range batches {
		opts := record.DefaultBatchOptions()
		opts.BaseOffset = int64(b * n)
		bl := record.NewBuilder(opts)
		for i := range n {
			bl.Append(record.Record{Timestamp: baseTime, Value: fmt.Appendf(nil, "v%d", b*n+i)})
		}
		l.batches = append(l.batches, bl.Build())
	}
	l.hw = int64(batches * n)
	return l
}

func (l *fixedLog) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	return &transport.MetadataResponse{Topics: []transport.TopicMetadata{{Topic: "t", Partitions: []transport.PartitionMetadata{{Partition: 0}}}}}, nil
}

func (l *fixedLog) Produce(ctx context.Context, req *transport.ProduceRequest) (*transport.ProduceResponse, error) {
	return nil, errors.New("fixedLog: read only")
}

func (l *fixedLog) ListOffsets(ctx context.Context, req *transport.ListOffsetsRequest) (*transport.ListOffsetsResponse, error) {
	off := int64(0)
	if req.Topics[0].Partitions[0].Timestamp == kafka.LatestTimestamp {
		off = l.hw
	}
	return &transport.ListOffsetsResponse{Topics: []transport.ListOffsetsTopicResponse{{Topic: "t",
		Partitions: []transport.ListOffsetsPartitionResponse{{Partition: 0, Offset: off}}}}}, nil
}

func (l *fixedLog) Fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	l.fetches.Add(1)
	if l.outOfRange {
		return &transport.FetchResponse{Topics: []transport.FetchTopicResponse{{Topic: "t", Partitions: []transport.FetchPartitionResponse{{
			Partition: 0, Err: kafka.ErrOffsetOutOfRange, HighWatermark: l.hw,
		}}}}}, nil
	}
	from := req.Topics[0].Partitions[0].FetchOffset
	var data []byte
	for _, b := range l.batches {
		h, _ := record.ParseHeader(b)
		if h.LastOffset() >= from {
			data = append(data, b...)
		}
	}
	if len(data) == 0 {
		t := time.NewTimer(req.MaxWait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &transport.FetchResponse{Topics: []transport.FetchTopicResponse{{Topic: "t", Partitions: []transport.FetchPartitionResponse{{
		Partition: 0, HighWatermark: l.hw, LastStableOffset: l.hw, LogStartOffset: 0, Records: data,
	}}}}}, nil
}

func TestCorruptBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFixedLog(3, 3)
		v4 := bytes.Index(l.batches[1], []byte("v4"))
		l.batches[1][v4+1] = '7' // "v4" becomes "v7": parses, fails its CRC

		c := newConsumer(t, l, consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
		recs, err := pollErr(t, c)
		require.Equal(t, []string{"v0", "v1", "v2"}, values(recs), "the records before the bad batch")
		fe := requireFetchError(t, err, tp("t", 0), record.ErrCorrupt)
		require.Equal(t, int64(3), fe.Offset)
		require.ErrorContains(t, err, "crc mismatch")

		_, err = c.Position(context.Background(), tp("t", 0))
		require.ErrorIs(t, err, record.ErrCorrupt, "stopped at the bad batch")
		fs, err := c.Poll(context.Background(), time.Second)
		require.NoError(t, err, "reported once")
		require.True(t, fs.Empty())

		require.NoError(t, c.Seek(tp("t", 0), 6)) // skip it
		require.Equal(t, []string{"v6", "v7", "v8"}, values(pollN(t, c, 3)))

		// check.crcs=false returns the damaged records.
		c2 := newConsumer(t, l, consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest),
			consumer.CheckCRCs(consumer.SkipCRC))
		require.Equal(t, []string{"v0", "v1", "v2", "v3", "v7", "v5", "v6", "v7", "v8"}, values(pollN(t, c2, 9)))
	})
}

func TestMalformedBatchFailsWithoutCRCCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFixedLog(2, 2)
		l.batches[1][record.HeaderSize] = 0x7f // the first record's length: -64
		c := newConsumer(t, l, consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest),
			consumer.CheckCRCs(consumer.SkipCRC))
		recs, err := pollErr(t, c)
		require.Equal(t, []string{"v0", "v1"}, values(recs))
		requireFetchError(t, err, tp("t", 0), record.ErrCorrupt)
	})
}

// flaky passes requests to a node, but answers fetches with an error for
// every partition while failures is above zero, counting it down.
type flaky struct {
	partlog.Client
	failures atomic.Int64
	err      error
}

func (f *flaky) Fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	if f.failures.Add(-1) < 0 {
		f.failures.Store(0)
		return f.Client.Fetch(ctx, req)
	}
	resp := &transport.FetchResponse{}
	for _, rt := range req.Topics {
		tr := transport.FetchTopicResponse{Topic: rt.Topic}
		for _, rp := range rt.Partitions {
			tr.Partitions = append(tr.Partitions, transport.FetchPartitionResponse{Partition: rp.Partition, Err: f.err, HighWatermark: -1})
		}
		resp.Topics = append(resp.Topics, tr)
	}
	return resp, nil
}

func TestRetriableErrorsAreRetriedQuietly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 1, nil)
		produceValues(t, n.Client(), "t", 0, "a")
		f := &flaky{Client: n.Client(), err: fmt.Errorf("%w: moved", kafka.ErrNotLeaderOrFollower)}
		f.failures.Store(4)
		c := newConsumer(t, f, consumer.Topics("t"), consumer.AutoOffsetReset(consumer.Earliest))
		start := time.Now()
		require.Equal(t, []string{"a"}, values(pollN(t, c, 1)))
		require.Equal(t, (100+200+400+800)*time.Millisecond, time.Since(start), "backing off, doubling")
	})
}

func TestLastingRetriableErrorsAreReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 1, nil)
		produceValues(t, n.Client(), "t", 0, "a")
		f := &flaky{Client: n.Client(), err: kafka.ErrLeaderNotAvailable}
		f.failures.Store(1 << 40)
		c := newConsumer(t, f, consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest),
			consumer.RetryTimeout(5*time.Second))
		start := time.Now()
		_, err := pollErr(t, c)
		requireFetchError(t, err, tp("t", 0), kafka.ErrLeaderNotAvailable)
		require.GreaterOrEqual(t, time.Since(start), 5*time.Second)
		require.Less(t, time.Since(start), 7*time.Second)

		f.failures.Store(0)
		require.Equal(t, []string{"a"}, values(pollN(t, c, 1)), "retried all along")
	})
}

func TestClientErrorsAreReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 1, nil)
		c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)))
		require.Equal(t, int64(0), position(t, c, tp("t", 0)))
		require.NoError(t, n.Close())
		// The fetch in flight fails for the partition; the next ones get
		// no answer at all.
		for {
			_, err := pollErr(t, c)
			require.ErrorIs(t, err, kafka.ErrClosed)
			var fe *consumer.FetchError
			if !errors.As(err, &fe) {
				require.ErrorContains(t, err, "consumer: fetch: ")
				break
			}
		}
	})
}

// limitedMetadata passes requests to a node, but shows only the first
// visible partitions of each topic in metadata.
type limitedMetadata struct {
	partlog.Client
	mu      sync.Mutex
	visible int
}

func (l *limitedMetadata) Metadata(ctx context.Context, req *transport.MetadataRequest) (*transport.MetadataResponse, error) {
	resp, err := l.Client.Metadata(ctx, req)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range resp.Topics {
		t := &resp.Topics[i]
		t.Partitions = t.Partitions[:min(l.visible, len(t.Partitions))]
	}
	return resp, nil
}

func TestSubscribePicksUpNewPartitions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 3, nil)
		for p := range int32(3) {
			produceValues(t, n.Client(), "t", p, fmt.Sprint("p", p))
		}
		l := &limitedMetadata{Client: n.Client(), visible: 1}
		c := newConsumer(t, l, consumer.Topics("t"), consumer.AutoOffsetReset(consumer.Earliest),
			consumer.MetadataMaxAge(time.Minute))
		start := time.Now()
		require.Equal(t, []string{"p0"}, values(pollN(t, c, 1)))
		require.Equal(t, []kafka.TopicPartition{tp("t", 0)}, c.Assignment())

		l.mu.Lock()
		l.visible = 3
		l.mu.Unlock()
		var recs []consumer.Record
		for len(recs) < 2 {
			fs, err := c.Poll(context.Background(), 2*time.Minute)
			require.NoError(t, err)
			require.False(t, fs.Empty())
			fs.EachRecord(func(r *consumer.Record) { recs = append(recs, *r) })
		}
		require.ElementsMatch(t, []string{"p1", "p2"}, values(recs))
		require.Equal(t, time.Minute, time.Since(start), "found at the next metadata refresh")
		require.Len(t, c.Assignment(), 3)
	})
}

func TestSubscribeDropsADeletedTopic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 2, nil)
		c := newConsumer(t, n.Client(), consumer.Topics("t"), consumer.MetadataMaxAge(time.Minute))
		fs, err := c.Poll(context.Background(), time.Second)
		require.NoError(t, err)
		require.True(t, fs.Empty())
		require.Len(t, c.Assignment(), 2)
		require.NoError(t, n.DeleteTopic(context.Background(), "t"))
		fs, err = c.Poll(context.Background(), 2*time.Minute)
		require.NoError(t, err, "a subscribed topic that goes away is not an error")
		require.True(t, fs.Empty())
		require.Empty(t, c.Assignment())
	})
}

func TestNewChecksOptions(t *testing.T) {
	n := openNode(t)
	p := consumer.Partitions(tp("t", 0))
	for name, opts := range map[string][]consumer.Option{
		"nothing to consume":    nil,
		"both":                  {p, consumer.Topics("t")},
		"empty topic":           {consumer.Topics("")},
		"negative partition":    {consumer.Partitions(tp("t", -1))},
		"negative start":        {consumer.PartitionsAt(map[kafka.TopicPartition]int64{tp("t", 0): -2})},
		"max poll records":      {p, consumer.MaxPollRecords(0)},
		"fetch max bytes":       {p, consumer.FetchMaxBytes(0)},
		"partition fetch bytes": {p, consumer.MaxPartitionFetchBytes(-1)},
		"fetch min bytes":       {p, consumer.FetchMinBytes(-1)},
		"fetch max wait":        {p, consumer.FetchMaxWait(-time.Second)},
		"reset":                 {p, consumer.AutoOffsetReset(7)},
		"isolation":             {p, consumer.Isolation(7)},
		"metadata max age":      {p, consumer.MetadataMaxAge(0)},
		"backoff above the max": {p, consumer.RetryBackoff(time.Minute)},
		"retry timeout":         {p, consumer.RetryTimeout(0)},
	} {
		_, err := consumer.New(n.Client(), opts...)
		require.Error(t, err, name)
		require.ErrorContains(t, err, "consumer: ", name)
	}
}

// TestNothingAboveTheHighWatermark has a client answer with batches past
// the high watermark it reports, as a node must not: the consumer still
// returns none of them.
func TestNothingAboveTheHighWatermark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFixedLog(3, 3)
		l.hw = 6
		c := newConsumer(t, l, consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
		recs := pollN(t, c, 6)
		for _, r := range recs {
			require.Less(t, r.Offset, int64(6))
		}
		fs, err := c.Poll(context.Background(), time.Second)
		require.NoError(t, err)
		require.True(t, fs.Empty())
		require.Equal(t, int64(6), position(t, c, tp("t", 0)))
	})
}

// TestContradictoryOffsetsDoNotSpin has a client whose fetches are out of
// range at every offset ListOffsets gives: the consumer resets, again and
// again, but backs off instead of spinning.
func TestContradictoryOffsetsDoNotSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFixedLog(1, 3)
		l.outOfRange = true
		c := newConsumer(t, l, consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
		fs, err := c.Poll(context.Background(), 10*time.Second)
		require.NoError(t, err)
		require.True(t, fs.Empty())
		require.LessOrEqual(t, l.fetches.Load(), int64(110), "one reset per RetryBackoff, about")
	})
}
