package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
)

// counting passes requests to a node and counts the fetches.
type counting struct {
	partlog.Client
	fetches atomic.Int64
}

func (c *counting) Fetch(ctx context.Context, req *transport.FetchRequest) (*transport.FetchResponse, error) {
	c.fetches.Add(1)
	return c.Client.Fetch(ctx, req)
}

func TestPollGoesRoundThePartitions(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 2, nil)
	produceValues(t, n.Client(), "t", 0, seq("a", 20)...)
	produceValues(t, n.Client(), "t", 1, seq("b", 20)...)
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0), tp("t", 1)), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.MaxPollRecords(5))
	require.Equal(t, int64(0), position(t, c, tp("t", 1)))
	got := map[int32][]string{}
	var order []int32
	for len(got[0])+len(got[1]) < 40 {
		fs, err := c.Poll(context.Background(), pollTimeout)
		require.NoError(t, err)
		require.LessOrEqual(t, fs.NumRecords(), 5)
		for _, fp := range fs {
			order = append(order, fp.Partition)
			got[fp.Partition] = append(got[fp.Partition], values(fp.Records)...)
		}
	}
	require.Equal(t, seq("a", 20), got[0])
	require.Equal(t, seq("b", 20), got[1])
	for i := 1; i < len(order); i++ {
		require.NotEqual(t, order[i-1], order[i], "a busy partition does not starve the other: %v", order)
	}
}

func TestPollAndRecordsTakeTurns(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	for b := range 5 {
		produceValues(t, n.Client(), "t", 0, seq(fmt.Sprint("v", b), 7)...)
	}
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest),
		consumer.MaxPollRecords(4))
	var all []string
	for len(all) < 35 {
		fs, err := c.Poll(context.Background(), pollTimeout)
		require.NoError(t, err)
		all = append(all, values(fs[0].Records)...)
		k := 0
		for rec, err := range c.Records(context.Background()) {
			require.NoError(t, err)
			all = append(all, string(rec.Value))
			if k++; k == 3 || len(all) == 35 {
				break
			}
		}
	}
	var want []string
	for b := range 5 {
		want = append(want, seq(fmt.Sprint("v", b), 7)...)
	}
	require.Equal(t, want, all)
	require.Equal(t, int64(35), position(t, c, tp("t", 0)))
}

func TestCompressedBatches(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 1, nil)
	var want []string
	for _, codec := range []record.Compression{record.None, record.Gzip, record.Snappy, record.LZ4, record.Zstd} {
		opts := record.DefaultBatchOptions()
		opts.Compression = codec
		b := record.NewBuilder(opts)
		for i := range 20 {
			v := fmt.Sprint(codec, "-", i)
			want = append(want, v)
			b.Append(record.Record{Timestamp: baseTime, Key: []byte("k"), Value: []byte(v),
				Headers: []record.RecordHeader{{Key: "codec", Value: []byte(codec.String())}}})
		}
		produceBatch(t, n.Client(), "t", 0, b.Build())
	}
	for _, iterate := range []bool{false, true} {
		c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
		var got []consumer.Record
		if iterate {
			for rec, err := range c.Records(context.Background()) {
				require.NoError(t, err)
				got = append(got, rec)
				if len(got) == len(want) {
					break
				}
			}
		} else {
			got = pollN(t, c, len(want))
		}
		require.Equal(t, want, values(got))
		for i, r := range got {
			require.Equal(t, int64(i), r.Offset)
			require.Equal(t, "k", string(r.Key))
			require.Len(t, r.Headers, 1)
		}
	}
}

func TestRecordsReportsACorruptBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFixedLog(3, 3)
		l.batches[1][len(l.batches[1])-2] ^= 0x01 // in the last record's value
		c := newConsumer(t, l, consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest))
		var seen []string
		errs := 0
		for rec, err := range c.Records(context.Background()) {
			if err != nil {
				fe := requireFetchError(t, err, tp("t", 0), record.ErrCorrupt)
				require.Equal(t, int64(3), fe.Offset)
				errs++
				off, perr := c.Position(context.Background(), tp("t", 0))
				require.ErrorIs(t, perr, record.ErrCorrupt)
				require.Equal(t, int64(-1), off)
				require.NoError(t, c.Seek(tp("t", 0), 6))
				continue
			}
			seen = append(seen, string(rec.Value))
			if rec.Offset == 8 {
				break
			}
		}
		require.Equal(t, 1, errs)
		require.Equal(t, []string{"v0", "v1", "v2", "v6", "v7", "v8"}, seen)
	})
}

func TestFetchMaxBytesBoundsTheBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 1, nil)
		for b := range 3 {
			produceValues(t, n.Client(), "t", 0, seq(fmt.Sprint(b, "-"), 2)...)
		}
		cn := &counting{Client: n.Client()}
		c := newConsumer(t, cn, consumer.Partitions(tp("t", 0)), consumer.AutoOffsetReset(consumer.Earliest),
			consumer.FetchMaxBytes(1), consumer.MaxPollRecords(1))
		require.Equal(t, []string{"0-0"}, values(pollN(t, c, 1)))
		synctest.Wait()
		// fetch.max.bytes of 1 brings one batch a fetch (the first batch
		// always comes whole). The poll took the first batch from the
		// buffer, so the fetcher brought the next one; that fills the
		// buffer, and it stops.
		require.Equal(t, int64(2), cn.fetches.Load(), "one fetch ahead, then the buffer is full")

		require.Equal(t, []string{"0-1", "1-0", "1-1", "2-0", "2-1"}, values(pollN(t, c, 5)))
		synctest.Wait()
		// The third batch, then one fetch waiting for records.
		require.Equal(t, int64(4), cn.fetches.Load(), "room again: one fetch, waiting for records")
	})
}

func TestAnIdleConsumerDoesNotSpin(t *testing.T) {
	for _, wait := range []time.Duration{500 * time.Millisecond, 0} {
		t.Run(fmt.Sprint(wait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := openNode(t)
				createTopic(t, n, "t", 1, nil)
				cn := &counting{Client: n.Client()}
				c := newConsumer(t, cn, consumer.Partitions(tp("t", 0)), consumer.FetchMaxWait(wait))
				fs, err := c.Poll(context.Background(), 10*time.Second)
				require.NoError(t, err)
				require.True(t, fs.Empty())
				// One fetch per FetchMaxWait, or per RetryBackoff (100ms)
				// when the node does not wait.
				require.LessOrEqual(t, cn.fetches.Load(), int64(101))
				require.GreaterOrEqual(t, cn.fetches.Load(), int64(20))
			})
		})
	}
}

func TestSeekToTimestampAcrossPartitions(t *testing.T) {
	n := openNode(t)
	createTopic(t, n, "t", 2, nil)
	produceValues(t, n.Client(), "t", 0, seq("a", 10)...) // timestamps baseTime+0..9
	produceValues(t, n.Client(), "t", 1, "b0", "b1")      // baseTime+0..1
	c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0), tp("t", 1)))
	require.NoError(t, c.SeekToTimestamp(context.Background(), time.UnixMilli(baseTime+5)))
	require.Equal(t, int64(5), position(t, c, tp("t", 0)))
	require.Equal(t, int64(2), position(t, c, tp("t", 1)), "no record that late: the end")
	require.ElementsMatch(t, seq("a", 10)[5:], values(pollN(t, c, 5)))
}

// TestResumeDoesNotWaitForTheFetchInFlight resumes a partition while the
// fetcher waits in the node for records of another: the fetch in flight
// cannot bring the resumed partition's records, so it is cancelled.
func TestResumeDoesNotWaitForTheFetchInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := openNode(t)
		createTopic(t, n, "t", 2, nil)
		produceValues(t, n.Client(), "t", 1, "b")
		c := newConsumer(t, n.Client(), consumer.Partitions(tp("t", 0), tp("t", 1)), consumer.AutoOffsetReset(consumer.Earliest),
			consumer.FetchMaxWait(time.Hour))
		require.NoError(t, c.Pause(tp("t", 1)))
		fs, err := c.Poll(context.Background(), 0)
		require.NoError(t, err)
		require.True(t, fs.Empty())
		synctest.Wait() // fetching partition 0 only, waiting in the node

		start := time.Now()
		require.NoError(t, c.Resume(tp("t", 1)))
		require.Equal(t, []string{"b"}, values(pollN(t, c, 1)))
		require.Zero(t, time.Since(start))
	})
}
