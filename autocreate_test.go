package partlog_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// TestAutoCreateTopics: a Kafka client that allows auto-creation (kgo's
// AllowAutoTopicCreation, librdkafka's producer by default) produces to a
// topic that does not exist, and the node creates it with num.partitions,
// as Kafka's auto.create.topics.enable does; every producer got
// UNKNOWN_TOPIC_OR_PARTITION before. A Metadata request that does not
// allow it, or a node that does not auto-create, leaves unknown topics
// unknown.
func TestAutoCreateTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := openNode(t, vfs.NewMem(), partlog.AutoCreateTopics(true, 3, 1))
	defer n.Close()
	addr := serveNode(t, n)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("fresh"))
	require.NoError(t, err)
	defer cl.Close()
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr())
	d, err := n.DescribeTopics("fresh")
	require.NoError(t, err)
	require.Len(t, d[0].Partitions, 3, "num.partitions")

	md, err := n.Client().Metadata(ctx, &transport.MetadataRequest{Topics: []string{"not-asked"}})
	require.NoError(t, err)
	require.ErrorIs(t, md.Topics[0].Err, kafka.ErrUnknownTopicOrPartition, "not created unless the request allows it")
	md, err = n.Client().Metadata(ctx, &transport.MetadataRequest{Topics: []string{"__internal", "bad name!"}, AllowAutoTopicCreation: true})
	require.NoError(t, err)
	require.Error(t, md.Topics[0].Err, "internal names are never auto-created")
	require.Error(t, md.Topics[1].Err)

	off := openNode(t, vfs.NewMem(), partlog.AutoCreateTopics(false, 1, 1))
	defer off.Close()
	md, err = off.Client().Metadata(ctx, &transport.MetadataRequest{Topics: []string{"fresh"}, AllowAutoTopicCreation: true})
	require.NoError(t, err)
	require.ErrorIs(t, md.Topics[0].Err, kafka.ErrUnknownTopicOrPartition, "auto.create.topics.enable=false")
}

// TestAutoCreateTopicsOnACluster: on a cluster a member auto-creates the
// topic through the controller, as it creates any topic.
func TestAutoCreateTopicsOnACluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 1, 2)
		ctx := context.Background()
		c.waitFor("two live nodes", func(s controller.ClusterState) bool { return len(s.Nodes) == 2 })
		_, err := c.nodes[1].Client().Metadata(ctx, &transport.MetadataRequest{Topics: []string{"fresh"}, AllowAutoTopicCreation: true})
		require.NoError(t, err)
		c.waitFor("fresh with a leader", func(s controller.ClusterState) bool {
			ts, ok := s.Topics["fresh"]
			return ok && len(ts.Partitions) == 1 && ts.Partitions[0].Leader != replica.NoLeader
		})
		require.Len(t, c.ctl.State().Topics["fresh"].Partitions[0].Replicas, 1, "default.replication.factor 1")
	})
}

// TestKgoTransaction: franz-go's kgo runs transactions against a node on
// its own: a committed transaction's records are followed by its COMMIT
// marker, an aborted one's by its ABORT marker, each written by the
// node's transaction coordinator after EndTxn; a read_committed kgo
// consumer reads the committed records only.
func TestKgoTransaction(t *testing.T) {
	n := openNode(t, vfs.NewMem())
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := n.Client().FindCoordinator(ctx, &transport.FindCoordinatorRequest{Key: "tx", KeyType: transport.CoordinatorTransaction})
	require.NoError(t, err)
	require.NoError(t, resp.Err)
	require.Equal(t, n.NodeID(), resp.NodeID, "a node on its own coordinates every transactional id")

	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "t"}))
	addr := serveNode(t, n)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("t"))
	require.NoError(t, err)
	defer cl.Close()
	run := func(end kgo.TransactionEndTry, values ...string) {
		t.Helper()
		require.NoError(t, cl.BeginTransaction())
		for _, v := range values {
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr())
		}
		require.NoError(t, cl.EndTransaction(ctx, end))
	}
	run(kgo.TryCommit, "a", "b")
	run(kgo.TryAbort, "c")

	got := txnLogEntries(t, n, "t", 0, 5)
	require.Equal(t, []string{"a", "b", "COMMIT", "c", "ABORT"}, got)
	require.Equal(t, []string{"a", "b"}, readValues(t, addr, kgo.ReadCommitted(), 2), "the aborted record is skipped")
}
