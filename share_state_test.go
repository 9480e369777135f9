package partlog_test

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/sharecoord"
)

// TestShareStateKafkaClient speaks Kafka's share coordinator calls to a
// served node as a Kafka broker does, through franz-go: FindCoordinator
// (version 6, key type 2) names the node for a share partition's key;
// InitializeShareGroupState, WriteShareGroupState, ReadShareGroupState
// and DeleteShareGroupState keep the share partition's state in
// __share_group_state, created on first use with the partitions of
// partlog.ShareStateTopicPartitions; a stale state epoch is
// FENCED_STATE_EPOCH; and the node, restarted, reads the state back.
func TestShareStateKafkaClient(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topicID := [16]byte{0xca, 0xfe, 3: 7}
	key := sharecoord.CoordinatorKey("queue", topicID, 2)

	open := func() (*partlog.Node, *kgo.Client, string) {
		t.Helper()
		n, err := partlog.Open(dir, partlog.ShareStateTopicPartitions(5))
		require.NoError(t, err)
		addr := serveNode(t, n)
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		require.NoError(t, err)
		return n, cl, addr
	}
	n, cl, addr := open()

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 2, []string{key}
	fresp, err := fc.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, fresp.Coordinators, 1)
	coord := fresp.Coordinators[0]
	require.Zero(t, coord.ErrorCode, "%v", coord.ErrorMessage)
	require.Equal(t, key, coord.Key)
	host, port, _ := net.SplitHostPort(addr)
	require.Equal(t, n.NodeID(), coord.NodeID)
	require.Equal(t, host+":"+port, net.JoinHostPort(coord.Host, strconv.Itoa(int(coord.Port))))
	descs, err := n.DescribeTopics(sharecoord.StateTopic)
	require.NoError(t, err)
	require.Len(t, descs[0].Partitions, 5, "partlog.ShareStateTopicPartitions")

	ireq := kmsg.NewPtrInitializeShareGroupStateRequest()
	ireq.GroupID = "queue"
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID, it.Partitions = topicID, []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 2, StateEpoch: 3, StartOffset: 100}}
	ireq.Topics = append(ireq.Topics, it)
	iresp, err := ireq.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, iresp.Topics[0].Partitions[0].ErrorCode)

	write := func(stateEpoch int32) int16 {
		t.Helper()
		wreq := kmsg.NewPtrWriteShareGroupStateRequest()
		wreq.GroupID = "queue"
		wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		wp.Partition, wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset = 2, stateEpoch, 1, 101
		wp.StateBatches = []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
			{FirstOffset: 101, LastOffset: 104, DeliveryState: 2, DeliveryCount: 1},
			{FirstOffset: 105, LastOffset: 105, DeliveryState: 4, DeliveryCount: 3},
		}
		wt := kmsg.NewWriteShareGroupStateRequestTopic()
		wt.TopicID, wt.Partitions = topicID, []kmsg.WriteShareGroupStateRequestTopicPartition{wp}
		wreq.Topics = append(wreq.Topics, wt)
		wresp, err := wreq.RequestWith(ctx, cl)
		require.NoError(t, err)
		return wresp.Topics[0].Partitions[0].ErrorCode
	}
	require.Zero(t, write(3))
	require.Equal(t, kafka.ErrFencedStateEpoch.Code, write(2))

	read := func(cl *kgo.Client) kmsg.ReadShareGroupStateResponseTopicPartition {
		t.Helper()
		rreq := kmsg.NewPtrReadShareGroupStateRequest()
		rreq.GroupID = "queue"
		rt := kmsg.NewReadShareGroupStateRequestTopic()
		rt.TopicID, rt.Partitions = topicID, []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 2, LeaderEpoch: 1}}
		rreq.Topics = append(rreq.Topics, rt)
		rresp, err := rreq.RequestWith(ctx, cl)
		require.NoError(t, err)
		return rresp.Topics[0].Partitions[0]
	}
	wantBatches := []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{
		{FirstOffset: 101, LastOffset: 104, DeliveryState: 2, DeliveryCount: 1},
		{FirstOffset: 105, LastOffset: 105, DeliveryState: 4, DeliveryCount: 3},
	}
	got := read(cl)
	require.Zero(t, got.ErrorCode)
	require.EqualValues(t, 3, got.StateEpoch)
	require.EqualValues(t, 101, got.StartOffset)
	require.Equal(t, wantBatches, got.StateBatches)

	cl.Close()
	require.NoError(t, n.Close())
	n, cl, _ = open()
	defer n.Close()
	defer cl.Close()
	got = read(cl)
	require.Zero(t, got.ErrorCode, "replayed from %s", sharecoord.StateTopic)
	require.Equal(t, wantBatches, got.StateBatches)

	dreq := kmsg.NewPtrDeleteShareGroupStateRequest()
	dreq.GroupID = "queue"
	dt := kmsg.NewDeleteShareGroupStateRequestTopic()
	dt.TopicID, dt.Partitions = topicID, []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 2}}
	dreq.Topics = append(dreq.Topics, dt)
	dresp, err := dreq.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, dresp.Topics[0].Partitions[0].ErrorCode)
	require.Equal(t, kafka.ErrInvalidRequest.Code, read(cl).ErrorCode, "deleted: never initialized")
}
