package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/consumer"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// baseTime is the timestamp of the records the tests produce, in ms.
const baseTime = 1_700_000_000_000

// openNode opens a node on an in-memory filesystem, closed when the test
// ends.
func openNode(tb testing.TB, opts ...partlog.Option) *partlog.Node {
	tb.Helper()
	// Small indexes keep the in-memory filesystem light; groups rebalance
	// at once (the tests that want the initial delay ask for it).
	defaults := partlog.TopicDefaults(map[string]string{"segment.index.bytes": "65536"})
	n, err := partlog.Open("/data", append([]partlog.Option{partlog.Filesystem(vfs.NewMem()), defaults,
		partlog.GroupInitialRebalanceDelay(0)}, opts...)...)
	require.NoError(tb, err)
	tb.Cleanup(func() { n.Close() })
	return n
}

// createTopic creates a topic with partitions and configs.
func createTopic(tb testing.TB, n *partlog.Node, name string, partitions int32, configs map[string]string) {
	tb.Helper()
	require.NoError(tb, n.CreateTopic(context.Background(), partlog.NewTopic{Name: name, Partitions: partitions, Configs: configs}))
}

// produceBatch appends one batch to a partition and returns its base
// offset.
func produceBatch(tb testing.TB, n transport.Client, topic string, partition int32, batch []byte) int64 {
	tb.Helper()
	resp, err := n.Produce(context.Background(), &transport.ProduceRequest{Acks: kafka.AcksAll, Topics: []transport.ProduceTopic{{
		Topic: topic, Partitions: []transport.ProducePartition{{Partition: partition, Records: batch}},
	}}})
	require.NoError(tb, err)
	pr := resp.Topics[0].Partitions[0]
	require.NoError(tb, pr.Err)
	return pr.BaseOffset
}

// produce appends recs as one batch and returns the first one's offset.
func produce(tb testing.TB, n transport.Client, topic string, partition int32, recs ...record.Record) int64 {
	tb.Helper()
	b := record.NewBuilder(record.DefaultBatchOptions())
	for _, r := range recs {
		b.Append(r)
	}
	return produceBatch(tb, n, topic, partition, b.Build())
}

// produceValues appends one batch of records with the values given, no
// key, and timestamps baseTime, baseTime+1, ...
func produceValues(tb testing.TB, n transport.Client, topic string, partition int32, values ...string) int64 {
	tb.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Timestamp: baseTime + int64(i), Value: []byte(v)}
	}
	return produce(tb, n, topic, partition, recs...)
}

// seq returns the values prefix0, prefix1, ... prefix(n-1).
func seq(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(prefix, i)
	}
	return out
}

// newConsumer returns a consumer of n, closed when the test ends.
func newConsumer(tb testing.TB, n transport.Client, opts ...consumer.Option) *consumer.Consumer {
	tb.Helper()
	c, err := consumer.New(n, opts...)
	require.NoError(tb, err)
	tb.Cleanup(func() { c.Close() })
	return c
}

// tp names partition p of topic.
func tp(topic string, p int32) kafka.TopicPartition {
	return kafka.TopicPartition{Topic: topic, Partition: p}
}

// pollTimeout is how long test polls wait for records that are coming:
// Poll returns as soon as they do, so it only bounds a failing test.
const pollTimeout = 10 * time.Second

// pollN polls until it has n records, failing if a poll comes back empty
// or with an error, or brings more than n.
func pollN(tb testing.TB, c *consumer.Consumer, n int) []consumer.Record {
	tb.Helper()
	var out []consumer.Record
	for len(out) < n {
		fs, err := c.Poll(context.Background(), pollTimeout)
		require.NoError(tb, err)
		require.False(tb, fs.Empty(), "no records within %v; have %d of %d", pollTimeout, len(out), n)
		fs.EachRecord(func(r *consumer.Record) { out = append(out, *r) })
	}
	require.Len(tb, out, n)
	return out
}

// values returns the records' values as strings.
func values(recs []consumer.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value)
	}
	return out
}

// position waits for tp's position.
func position(tb testing.TB, c *consumer.Consumer, tp kafka.TopicPartition) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
	defer cancel()
	off, err := c.Position(ctx, tp)
	require.NoError(tb, err)
	return off
}

// pollErr polls until an error comes, and returns it. Records before it
// are returned too.
func pollErr(tb testing.TB, c *consumer.Consumer) ([]consumer.Record, error) {
	tb.Helper()
	var recs []consumer.Record
	for {
		fs, err := c.Poll(context.Background(), pollTimeout)
		if err != nil {
			return recs, err
		}
		require.False(tb, fs.Empty(), "no error within %v", pollTimeout)
		fs.EachRecord(func(r *consumer.Record) { recs = append(recs, *r) })
	}
}

// requireFetchError checks that err is a *FetchError for tp matching
// target.
func requireFetchError(tb testing.TB, err error, tp kafka.TopicPartition, target error) *consumer.FetchError {
	tb.Helper()
	var fe *consumer.FetchError
	require.True(tb, errors.As(err, &fe), "want a *FetchError, got %v", err)
	require.Equal(tb, tp.Topic, fe.Topic)
	require.Equal(tb, tp.Partition, fe.Partition)
	require.ErrorIs(tb, err, target)
	return fe
}
