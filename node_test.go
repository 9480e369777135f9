package partlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

func openNode(t *testing.T, fsys vfs.FS, opts ...partlog.Option) *partlog.Node {
	t.Helper()
	n, err := partlog.Open("/data", append([]partlog.Option{partlog.Filesystem(fsys)}, opts...)...)
	require.NoError(t, err)
	return n
}

func batchOf(values ...string) []byte {
	b := record.NewBuilder(record.DefaultBatchOptions())
	for _, v := range values {
		b.Append(record.Record{Timestamp: 1700000000000, Value: []byte(v)})
	}
	return b.Build()
}

func produce(t *testing.T, n *partlog.Node, topic string, p int32, values ...string) transport.ProducePartitionResponse {
	t.Helper()
	resp, err := n.Produce(context.Background(), &transport.ProduceRequest{Acks: transport.AcksAll, Topics: []transport.ProduceTopic{{
		Topic: topic, Partitions: []transport.ProducePartition{{Partition: p, Records: batchOf(values...)}},
	}}})
	require.NoError(t, err)
	return resp.Topics[0].Partitions[0]
}

func fetch(t *testing.T, n *partlog.Node, topic string, p int32, offset int64, wait time.Duration) (transport.FetchPartitionResponse, []string) {
	t.Helper()
	resp, err := n.Fetch(context.Background(), &transport.FetchRequest{ReplicaID: -1, MaxWait: wait, MinBytes: 1, MaxBytes: 1 << 20,
		Topics: []transport.FetchTopic{{Topic: topic, Partitions: []transport.FetchPartition{{Partition: p, FetchOffset: offset, MaxBytes: 1 << 20}}}}})
	require.NoError(t, err)
	pr := resp.Topics[0].Partitions[0]
	var values []string
	for data := pr.Records; len(data) > 0; {
		h, err := record.ParseHeader(data)
		require.NoError(t, err)
		b, err := record.Decode(data[:h.Size()])
		require.NoError(t, err)
		for _, r := range b.Records {
			if r.Offset >= offset {
				values = append(values, string(r.Value))
			}
		}
		data = data[h.Size():]
	}
	return pr, values
}

func TestNodeProduceFetchRestart(t *testing.T) {
	mem := vfs.NewMem()
	n := openNode(t, mem)
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 2, Configs: map[string]string{"retention.ms": "3600000"}}))
	require.ErrorIs(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study"}), transport.ErrTopicAlreadyExists)

	r := produce(t, n, "study", 1, "a", "b")
	require.NoError(t, r.Err)
	require.EqualValues(t, 0, r.BaseOffset)
	r = produce(t, n, "study", 1, "c")
	require.EqualValues(t, 2, r.BaseOffset)
	require.ErrorIs(t, produce(t, n, "study", 2, "x").Err, transport.ErrUnknownTopicOrPartition)
	require.ErrorIs(t, produce(t, n, "nope", 0, "x").Err, transport.ErrUnknownTopicOrPartition)

	pr, values := fetch(t, n, "study", 1, 1, 0)
	require.NoError(t, pr.Err)
	require.EqualValues(t, 3, pr.HighWatermark)
	require.Equal(t, []string{"b", "c"}, values)

	desc, err := n.DescribeTopics("study")
	require.NoError(t, err)
	require.Len(t, desc[0].Partitions, 2)
	require.EqualValues(t, 3, desc[0].Partitions[1].HighWatermark)
	require.Equal(t, "3600000", desc[0].Configs["retention.ms"])
	id := desc[0].ID
	require.NoError(t, n.Close())
	_, err = n.Produce(ctx, &transport.ProduceRequest{})
	require.ErrorIs(t, err, partlog.ErrClosed)

	n = openNode(t, mem)
	defer n.Close()
	require.Equal(t, []string{"study"}, n.ListTopics())
	desc, err = n.DescribeTopics("study")
	require.NoError(t, err)
	require.Equal(t, id, desc[0].ID)
	require.Equal(t, "3600000", desc[0].Configs["retention.ms"])
	_, values = fetch(t, n, "study", 1, 0, 0)
	require.Equal(t, []string{"a", "b", "c"}, values)
}

func TestNodeLongPoll(t *testing.T) {
	n := openNode(t, vfs.NewMem())
	defer n.Close()
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t"}))

	start := time.Now()
	pr, values := fetch(t, n, "t", 0, 0, 50*time.Millisecond)
	require.NoError(t, pr.Err)
	require.Empty(t, values)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "waits MaxWait when nothing arrives")

	got := make(chan []string)
	go func() {
		_, v := fetch(t, n, "t", 0, 0, time.Hour)
		got <- v
	}()
	produce(t, n, "t", 0, "wake")
	require.Equal(t, []string{"wake"}, <-got, "an append wakes a waiting fetch")
}
