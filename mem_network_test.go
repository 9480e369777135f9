package partlog_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

// TestMemNetworkClientReachesRestartedNode keeps a client of node 1's
// address, as a ClusterClient does, while node 1 closes and opens again:
// closed, the node is unreachable (ErrNetwork, which clients retry
// elsewhere); opened again, the same client reaches it, as a TCP client
// reconnects to whatever serves its address. Before, the client held the
// closed node for good, and a ClusterClient could not reach the node
// again once it led a partition.
func TestMemNetworkClientReachesRestartedNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 1, 2)
		ctx := context.Background()
		nc, err := c.net.Connect(ctx, "mem:1")
		require.NoError(t, err)
		_, err = nc.Metadata(ctx, &transport.MetadataRequest{})
		require.NoError(t, err)

		c.stop(1)
		_, err = nc.Metadata(ctx, &transport.MetadataRequest{})
		require.ErrorIs(t, err, kafka.ErrNetwork, "node 1 is closed")
		require.True(t, kafka.IsRetriable(err))
		_, err = c.net.Connect(ctx, "mem:1")
		require.ErrorIs(t, err, kafka.ErrNetwork, "node 1 is not on the network")

		c.start(1)
		resp, err := nc.Metadata(ctx, &transport.MetadataRequest{})
		require.NoError(t, err, "the client reaches node 1 opened again")
		var ids []int32
		for _, b := range resp.Brokers {
			ids = append(ids, b.NodeID)
		}
		require.Contains(t, ids, int32(1), "the answer lists node 1")
	})
}
