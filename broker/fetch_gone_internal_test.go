package broker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// A fetch (or ListOffsets) that found a partition, which then closed under it (deleted or
// moved away: the node drops a replica from its map before closing it, so
// only a read already past the lookup sees it closed), answers a retriable
// error for that partition, never the node's ErrClosed: a consumer that
// hears ErrClosed gives the node up.
func TestFetchOfAPartitionClosedMidRead(t *testing.T) {
	n, err := Open("/data", Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	defer n.Close()
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, NewTopic{Name: "t"}))
	h, err := n.leaderReplica("t", 0)
	require.NoError(t, err)
	h.p.Close() // as remove does, but the lookup still finds it: the window of the race

	for _, fileRecords := range []bool{false, true} {
		resp, err := n.Fetch(ctx, &transport.FetchRequest{ReplicaID: -1, MaxBytes: 1 << 20, FileRecords: fileRecords,
			Topics: []transport.FetchTopic{{Topic: "t", Partitions: []transport.FetchPartition{{Partition: 0, MaxBytes: 1 << 20}}}}})
		require.NoError(t, err, "the node is open")
		pr := resp.Topics[0].Partitions[0]
		require.NotErrorIs(t, pr.Err, kafka.ErrClosed)
		require.ErrorIs(t, pr.Err, kafka.ErrNotLeaderOrFollower)
		require.True(t, kafka.IsRetriable(pr.Err))
	}
	lo, err := n.ListOffsets(ctx, &transport.ListOffsetsRequest{ReplicaID: -1,
		Topics: []transport.ListOffsetsTopic{{Topic: "t", Partitions: []transport.ListOffsetsPartition{{Partition: 0, Timestamp: -1}}}}})
	require.NoError(t, err)
	require.ErrorIs(t, lo.Topics[0].Partitions[0].Err, kafka.ErrNotLeaderOrFollower, "ListOffsets too")
}
