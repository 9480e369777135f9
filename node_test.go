package partlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/record"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

func openNode(t *testing.T, fsys vfs.FS, opts ...partlog.Option) *partlog.Node {
	t.Helper()
	// Small indexes keep the in-memory filesystem light; groups rebalance
	// at once.
	defaults := partlog.TopicDefaults(map[string]string{"segment.index.bytes": "65536"})
	n, err := partlog.Open("/data", append([]partlog.Option{partlog.Filesystem(fsys), defaults, partlog.GroupInitialRebalanceDelay(0)}, opts...)...)
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
	resp, err := n.Client().Produce(context.Background(), &transport.ProduceRequest{Acks: kafka.AcksAll, Topics: []transport.ProduceTopic{{
		Topic: topic, Partitions: []transport.ProducePartition{{Partition: p, Records: batchOf(values...)}},
	}}})
	require.NoError(t, err)
	return resp.Topics[0].Partitions[0]
}

func fetch(t *testing.T, n *partlog.Node, topic string, p int32, offset int64, wait time.Duration) (transport.FetchPartitionResponse, []string) {
	t.Helper()
	resp, err := n.Client().Fetch(context.Background(), &transport.FetchRequest{ReplicaID: -1, MaxWait: wait, MinBytes: 1, MaxBytes: 1 << 20,
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

// fetchAll reads a partition from offset to its high watermark, fetch after
// fetch (a fetch returns batches of one segment at most).
func fetchAll(t *testing.T, n *partlog.Node, topic string, p int32, offset int64) []string {
	t.Helper()
	var all []string
	for {
		pr, values := fetch(t, n, topic, p, offset, 0)
		require.NoError(t, pr.Err)
		all = append(all, values...)
		offset += int64(len(values))
		if len(values) == 0 || offset >= pr.HighWatermark {
			return all
		}
	}
}

func TestNodeProduceFetchRestart(t *testing.T) {
	mem := vfs.NewMem()
	n := openNode(t, mem)
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study", Partitions: 2, Configs: map[string]string{"retention.ms": "3600000"}}))
	require.ErrorIs(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "study"}), kafka.ErrTopicAlreadyExists)

	r := produce(t, n, "study", 1, "a", "b")
	require.NoError(t, r.Err)
	require.EqualValues(t, 0, r.BaseOffset)
	r = produce(t, n, "study", 1, "c")
	require.EqualValues(t, 2, r.BaseOffset)
	require.ErrorIs(t, produce(t, n, "study", 2, "x").Err, kafka.ErrUnknownTopicOrPartition)
	require.ErrorIs(t, produce(t, n, "nope", 0, "x").Err, kafka.ErrUnknownTopicOrPartition)

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
	_, err = n.Client().Produce(ctx, &transport.ProduceRequest{})
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

func TestNodeBadInputChangesNothing(t *testing.T) {
	mem := vfs.NewMem()
	n := openNode(t, mem)
	defer n.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		topic partlog.NewTopic
		want  error
	}{
		{partlog.NewTopic{Name: ""}, kafka.ErrInvalidTopic},
		{partlog.NewTopic{Name: "a/b"}, kafka.ErrInvalidTopic},
		{partlog.NewTopic{Name: ".."}, kafka.ErrInvalidTopic},
		{partlog.NewTopic{Name: string(make([]byte, 250))}, kafka.ErrInvalidTopic},
		{partlog.NewTopic{Name: "__internal"}, kafka.ErrInvalidTopic},
		{partlog.NewTopic{Name: "t", Partitions: -1}, kafka.ErrInvalidPartitions},
		{partlog.NewTopic{Name: "t", ReplicationFactor: 3}, kafka.ErrInvalidReplicationFactor},
		{partlog.NewTopic{Name: "t", Configs: map[string]string{"retention.msx": "1"}}, kafka.ErrInvalidConfig},
		{partlog.NewTopic{Name: "t", Configs: map[string]string{"segment.bytes": "12"}}, kafka.ErrInvalidConfig},
		{partlog.NewTopic{Name: "t", Configs: map[string]string{"cleanup.policy": "keep"}}, kafka.ErrInvalidConfig},
		{partlog.NewTopic{Name: "t", Configs: map[string]string{"min.insync.replicas": "x"}}, kafka.ErrInvalidConfig},
	} {
		require.ErrorIs(t, n.CreateTopic(ctx, tc.topic), tc.want, "%+v", tc.topic.Name)
	}
	require.Empty(t, n.ListTopics(), "nothing was created")
	names, err := mem.List("/data")
	require.NoError(t, err)
	for _, name := range names {
		require.NotContains(t, name, "t-", "no partition directory was made")
	}

	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "my.topic"}))
	require.ErrorIs(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "my_topic"}), kafka.ErrInvalidTopic, "collides with my.topic")

	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "small", Configs: map[string]string{"max.message.bytes": "200"}}))
	big := produce(t, n, "small", 0, string(make([]byte, 500)))
	require.ErrorIs(t, big.Err, kafka.ErrMessageTooLarge)
	require.ErrorIs(t, produce(t, n, "small", 7, "x").Err, kafka.ErrUnknownTopicOrPartition)
	corrupt := batchOf("hello")
	corrupt[len(corrupt)-1] ^= 1
	resp, err := n.Client().Produce(ctx, &transport.ProduceRequest{Acks: 1, Topics: []transport.ProduceTopic{{Topic: "small", Partitions: []transport.ProducePartition{{Records: corrupt}}}}})
	require.NoError(t, err)
	require.ErrorIs(t, resp.Topics[0].Partitions[0].Err, kafka.ErrCorruptMessage)
	resp, err = n.Client().Produce(ctx, &transport.ProduceRequest{Acks: 2, Topics: []transport.ProduceTopic{{Topic: "small", Partitions: []transport.ProducePartition{{Records: batchOf("x")}}}}})
	require.NoError(t, err)
	require.ErrorIs(t, resp.Topics[0].Partitions[0].Err, kafka.ErrInvalidRequiredAcks)
	d, err := n.DescribeTopics("small")
	require.NoError(t, err)
	require.Zero(t, d[0].Partitions[0].LogEndOffset, "no bad produce appended anything")

	_, err = n.DescribeTopics("nope")
	require.ErrorIs(t, err, kafka.ErrUnknownTopicOrPartition)
	require.ErrorIs(t, n.DeleteTopic(ctx, "nope"), kafka.ErrUnknownTopicOrPartition)
	pr, _ := fetch(t, n, "small", 0, 5, 0)
	require.ErrorIs(t, pr.Err, kafka.ErrOffsetOutOfRange)
}

func TestNodeMinInsyncReplicas(t *testing.T) {
	n := openNode(t, vfs.NewMem())
	defer n.Close()
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Configs: map[string]string{"min.insync.replicas": "2"}}))
	require.ErrorIs(t, produce(t, n, "t", 0, "x").Err, kafka.ErrNotEnoughReplicas, "acks=all needs 2 in-sync replicas")
	resp, err := n.Client().Produce(ctx, &transport.ProduceRequest{Acks: kafka.AcksLeader, Topics: []transport.ProduceTopic{{Topic: "t", Partitions: []transport.ProducePartition{{Records: batchOf("x")}}}}})
	require.NoError(t, err)
	require.NoError(t, resp.Topics[0].Partitions[0].Err, "acks=1 does not")
}

// TestNodeKilledKeepsAcked abandons a node without Close (kill -9, and a
// power loss keeping only synced bytes): reopened, it has every record
// acknowledged under the default sync-before-ack.
func TestNodeKilledKeepsAcked(t *testing.T) {
	for _, keep := range []vfs.KeepPolicy{vfs.KeepAll, vfs.KeepNone} {
		mem := vfs.NewMem()
		n := openNode(t, mem)
		ctx := context.Background()
		require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 3, Configs: map[string]string{"segment.bytes": "4096"}}))
		var want [3][]string
		for i := range 200 {
			p := int32(i % 3)
			v := string(rune('a'+i%26)) + string(rune('0'+i%10))
			require.NoError(t, produce(t, n, "t", p, v).Err)
			want[p] = append(want[p], v)
		}
		crashed := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: keep})
		require.NoError(t, n.Close())

		n2 := openNode(t, crashed)
		for p := range int32(3) {
			require.Equal(t, want[p], fetchAll(t, n2, "t", p, 0), "%v partition %d", keep, p)
		}
		require.NoError(t, n2.Close())
	}
}

func TestNodeSecondOpenIsRefused(t *testing.T) {
	dir := t.TempDir()
	n, err := partlog.Open(dir)
	require.NoError(t, err)
	_, err = partlog.Open(dir)
	require.ErrorIs(t, err, partlog.ErrLocked)
	require.NoError(t, n.Close())
	_, err = partlog.Open(dir, partlog.NodeID(7))
	require.ErrorIs(t, err, partlog.ErrInconsistentNode, "the directory belongs to node 1")
}

func TestNodeDeleteTopic(t *testing.T) {
	mem := vfs.NewMem()
	n := openNode(t, mem)
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "gone", Partitions: 2}))
	require.NoError(t, produce(t, n, "gone", 1, "x").Err)
	require.NoError(t, n.DeleteTopic(ctx, "gone"))
	require.Empty(t, n.ListTopics())
	_, err := mem.Stat("/data/gone-1")
	require.Error(t, err, "the partition directory is gone")
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "gone"}))
	_, values := fetch(t, n, "gone", 0, 0, 0)
	require.Empty(t, values, "a re-created topic starts empty")
	require.NoError(t, n.Close())
	n = openNode(t, mem)
	defer n.Close()
	require.Equal(t, []string{"gone"}, n.ListTopics())
}
