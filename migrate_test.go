package partlog_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/transport"
)

// TestOpenMigratesStandaloneDirectory: a data directory written by a node
// on its own before a single node became a cluster of one (testdata/
// standalone-08a3476, written by partlog at 08a3476: topic "orders" of two
// partitions with three records each and its own retention.ms, a topic
// "gone" created and deleted, group "billing" with committed offsets in a
// __consumer_offsets of two partitions, one block of producer ids handed
// out) opens: the old topic records become the in-process controller's,
// with the same topic ids and configs; every record, committed offset and
// the producer id high-water mark are kept; and it opens again, migrated
// once.
func TestOpenMigratesStandaloneDirectory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/standalone-08a3476")))
	ctx := context.Background()
	for round := range 3 {
		n, err := partlog.Open(dir)
		require.NoError(t, err, "round %d", round)
		require.Equal(t, []string{"__consumer_offsets", "orders"}, n.ListTopics(), "round %d: the deleted topic stays deleted", round)
		d, err := n.DescribeTopics("orders")
		require.NoError(t, err)
		require.Equal(t, "Ncw9gQK5BJ5SgBjKOf9JaQ", d[0].ID, "the topic id of partition.metadata")
		require.Equal(t, map[string]string{"retention.ms": "86400000000"}, d[0].Configs)
		require.Len(t, d[0].Partitions, 2)
		for _, p := range d[0].Partitions {
			require.EqualValues(t, 1, p.Leader)
			require.Equal(t, []int32{1}, p.Replicas)
		}
		want0 := []string{"orders-0-0", "orders-0-1", "orders-0-2"}
		want1 := []string{"orders-1-0", "orders-1-1", "orders-1-2"}
		for i := range round {
			want0 = append(want0, "new-"+string(rune('a'+i)))
		}
		require.Equal(t, want0, fetchAll(t, n, "orders", 0, 0), "round %d", round)
		require.Equal(t, want1, fetchAll(t, n, "orders", 1, 0))

		require.Equal(t, map[int32]int64{0: 2, 1: 3}, committedOffsets(t, n.Client(), "billing", "orders"), "the group's committed offsets")

		pid, err := n.Client().InitProducerID(ctx, &transport.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1})
		require.NoError(t, err)
		require.NoError(t, pid.Err)
		require.GreaterOrEqual(t, pid.ProducerID, int64(1000), "no producer id below the old high-water mark")

		require.EqualValues(t, 3+round, produce(t, n, "orders", 0, "new-"+string(rune('a'+round))).BaseOffset)
		require.NoError(t, n.Close())
	}
	_, err := os.Stat(filepath.Join(dir, "gone-0"))
	require.True(t, os.IsNotExist(err))
}
