package partlog_test

import (
	"context"
	"io/fs"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// TestOfflinePartition: a partition whose log cannot be opened (a segment
// the node may not read, an I/O error) used to keep the whole node from
// opening, and its topic from being deleted. Now that partition alone is
// offline: produce and fetch answer KAFKA_STORAGE_ERROR for it, Metadata
// and DescribeTopics say so, the node serves every other partition, and
// the topic can still be deleted.
func TestOfflinePartition(t *testing.T) {
	mem := vfs.NewMem()
	ctx := context.Background()
	n := openNode(t, mem)
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 2}))
	produce(t, n, "t", 0, "a")
	produce(t, n, "t", 1, "b")
	require.NoError(t, n.Close())

	faulty := vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpOpenReadWrite && strings.Contains(op.Path, "/t-1/") && strings.HasSuffix(op.Path, ".log") {
			return &fs.PathError{Op: "open", Path: op.Path, Err: syscall.EACCES}
		}
		return nil
	}))
	n = openNode(t, faulty)
	defer n.Close()

	require.Equal(t, []string{"a"}, fetchAll(t, n, "t", 0, 0), "the other partition is served")
	require.Equal(t, int64(1), produce(t, n, "t", 0, "c").BaseOffset)

	resp, err := n.Client().Produce(ctx, &transport.ProduceRequest{Acks: kafka.AcksAll, Topics: []transport.ProduceTopic{
		{Topic: "t", Partitions: []transport.ProducePartition{{Partition: 1, Records: batchOf("x")}}}}})
	require.NoError(t, err)
	require.ErrorIs(t, resp.Topics[0].Partitions[0].Err, kafka.ErrKafkaStorage)
	require.ErrorIs(t, resp.Topics[0].Partitions[0].Err, syscall.EACCES, "the error says why")

	md, err := n.Client().Metadata(ctx, &transport.MetadataRequest{Topics: []string{"t"}})
	require.NoError(t, err)
	require.NoError(t, md.Topics[0].Partitions[0].Err)
	require.ErrorIs(t, md.Topics[0].Partitions[1].Err, kafka.ErrKafkaStorage)
	require.EqualValues(t, -1, md.Topics[0].Partitions[1].Leader)

	d, err := n.DescribeTopics("t")
	require.NoError(t, err)
	require.Nil(t, d[0].Partitions[0].Offline)
	require.ErrorIs(t, d[0].Partitions[1].Offline, kafka.ErrKafkaStorage)

	require.NoError(t, n.DeleteTopic(ctx, "t"), "a topic with an offline partition can be deleted")
	require.Empty(t, n.ListTopics())
}

// TestCreateTopicRolledBack: a topic whose partitions cannot all be
// created (the disk is full when the third one's files are made) is not
// created: the error says why, no partition directory or metadata record
// is left — after a reopen too — and once there is room the same topic is
// created. It used to stay in the metadata half-made, and every later
// command on the directory failed.
func TestCreateTopicRolledBack(t *testing.T) {
	mem := vfs.NewMem()
	ctx := context.Background()
	var full atomic.Bool
	faulty := vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if full.Load() && strings.Contains(op.Path, "/t-2/") && (op.Kind == vfs.OpCreate || op.Kind == vfs.OpWrite) {
			return &fs.PathError{Op: "create", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	}))
	n := openNode(t, faulty)
	full.Store(true)
	err := n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 3})
	require.ErrorIs(t, err, kafka.ErrKafkaStorage)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Empty(t, n.ListTopics())
	require.NoError(t, n.Close())

	n = openNode(t, faulty)
	defer n.Close()
	require.Empty(t, n.ListTopics(), "no record of the topic is left")
	names, err := mem.List("/data")
	require.NoError(t, err)
	for _, name := range names {
		require.False(t, strings.HasPrefix(name, "t-"), "no partition directory is left: %s", name)
	}
	full.Store(false)
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 3}))
	require.Equal(t, int64(0), produce(t, n, "t", 2, "x").BaseOffset)
}

// TestFailedSyncTakesOnePartitionOffline: a sync of one partition's log
// fails (EIO): the append waiting on it is answered KAFKA_STORAGE_ERROR
// and never acknowledged, the partition answers KAFKA_STORAGE_ERROR from
// then on — a log whose sync failed is never trusted again, as Kafka
// takes a failed log directory offline — while the node serves the other
// partition; after a restart the partition is back with every record it
// acknowledged.
func TestFailedSyncTakesOnePartitionOffline(t *testing.T) {
	mem := vfs.NewMem()
	var armed atomic.Bool
	faulty := vfs.WithFaults(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if armed.Load() && op.Kind == vfs.OpSync && strings.Contains(op.Path, "/t-0/") {
			return &fs.PathError{Op: "sync", Path: op.Path, Err: syscall.EIO}
		}
		return nil
	}))
	ctx := context.Background()
	n := openNode(t, faulty)
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 2}))
	require.NoError(t, produce(t, n, "t", 0, "a").Err)

	armed.Store(true)
	require.ErrorIs(t, produce(t, n, "t", 0, "b").Err, kafka.ErrKafkaStorage, "the failed sync is not an acknowledgement")
	require.ErrorIs(t, produce(t, n, "t", 0, "c").Err, kafka.ErrKafkaStorage, "the partition stays offline")
	require.EqualValues(t, 0, produce(t, n, "t", 1, "x").BaseOffset, "the other partition is served")
	require.Equal(t, []string{"x"}, fetchAll(t, n, "t", 1, 0))
	require.NoError(t, n.Close())

	armed.Store(false)
	n = openNode(t, faulty)
	defer n.Close()
	got := fetchAll(t, n, "t", 0, 0)
	require.NotEmpty(t, got)
	require.Equal(t, "a", got[0], "the acknowledged record is kept")
	require.NotContains(t, got, "c", "nothing was written after the failure")
	require.Equal(t, []string{"x"}, fetchAll(t, n, "t", 1, 0))
}
