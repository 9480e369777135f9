package partlog_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/producer"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
)

// TestFollowersFetchBeforeTheLeaderHostsItsReplica creates a topic whose
// leader, node 1, learns of it last: it heartbeats every 2 s, the
// followers every 20 ms. Their first fetches reach node 1 before it hosts
// a replica of the partition. They must be answered
// (NOT_LEADER_OR_FOLLOWER: the followers fetch again after FetchBackoff),
// not dropped — a follower then waited FetchTimeout
// (replica.socket.timeout.ms, 30 s by default) before fetching again, and
// every acks=all write waited with it.
func TestFollowersFetchBeforeTheLeaderHostsItsReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctl, err := partlog.OpenController(t.TempDir(), partlog.ControllerOptions{
			TickInterval: 10 * time.Millisecond, SessionTimeout: 10 * time.Second, NoAutoLeaderRebalance: true,
		})
		require.NoError(t, err)
		defer ctl.Close()
		net := partlog.NewMemNetwork()
		dir := t.TempDir()
		nodes := map[int32]*partlog.Node{}
		for id, heartbeat := range map[int32]time.Duration{1: 2 * time.Second, 2: 20 * time.Millisecond, 3: 20 * time.Millisecond} {
			n, err := partlog.Open(filepath.Join(dir, strconv.Itoa(int(id))), partlog.NodeID(id), partlog.JoinCluster(ctl, net),
				partlog.HeartbeatInterval(heartbeat),
				partlog.ReplicaOptions(replica.Options{TickInterval: 10 * time.Millisecond, ReplicaLagTimeMax: time.Minute,
					FetchWaitMax: 50 * time.Millisecond, FetchBackoff: 20 * time.Millisecond, FetchTimeout: time.Minute}))
			require.NoError(t, err)
			defer n.Close()
			nodes[id] = n
		}
		ctx := context.Background()
		require.NoError(t, nodes[2].CreateTopic(ctx, partlog.NewTopic{Name: "t", ReplicationFactor: 3}))
		s, err := ctl.Partition("t", 0)
		require.NoError(t, err)
		require.Equal(t, int32(1), s.Leader, "node 1 leads: the controller's placement starts at node 1")

		client, err := net.Client(ctx)
		require.NoError(t, err)
		defer client.Close()
		p, err := producer.New(client, producer.RetryBackoff(20*time.Millisecond),
			producer.RequestTimeout(5*time.Second), producer.DeliveryTimeout(15*time.Second))
		require.NoError(t, err)
		defer p.Close()
		start := time.Now()
		rec := &producer.Record{Topic: "t", Value: []byte("first")}
		require.NoError(t, p.ProduceSync(ctx, rec).FirstErr(), "acks=all within 15 s, though the followers' fetch timeout is a minute")
		require.Equal(t, int64(0), rec.Offset)
		t.Logf("acknowledged after %v", time.Since(start))
	})
}

// TestClusterOversizeBatchKeepsTheReplica: a batch over the topic's
// max.message.bytes is refused with MESSAGE_TOO_LARGE before the replica
// takes it; it used to reach the log write, whose error stopped the
// leader's replica for good.
func TestClusterOversizeBatchKeepsTheReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 1)
		ctx := context.Background()
		require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "t", Partitions: 1, ReplicationFactor: 1,
			Configs: map[string]string{"max.message.bytes": "200"}}))
		client, err := c.net.Client(ctx)
		require.NoError(t, err)
		defer client.Close()
		p, err := producer.New(client, producer.RetryBackoff(10*time.Millisecond), producer.RequestTimeout(5*time.Second), producer.DeliveryTimeout(10*time.Second))
		require.NoError(t, err)
		defer p.Close()
		produceOne := func(value string) (*producer.Record, error) {
			return p.ProduceSync(ctx, &producer.Record{Topic: "t", Value: []byte(value)}).First()
		}
		_, err = produceOne(strings.Repeat("x", 500))
		require.ErrorIs(t, err, kafka.ErrMessageTooLarge)
		r, err := produceOne("small")
		require.NoError(t, err, "the replica still leads")
		require.Zero(t, r.Offset)
	})
}

// TestClusterMetadataNamesAController: a cluster member's Metadata names
// a live broker as the controller, as KRaft brokers do (KIP-590), and that
// broker takes admin requests. It answered -1, and every admin client
// (kadm, sarama, confluent-kafka, kafkajs) gave up: "controller not
// available".
func TestClusterMetadataNamesAController(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCluster(t, 1, 2, 3)
		ctx := context.Background()
		c.waitFor("three live nodes", func(s controller.ClusterState) bool { return len(s.Nodes) == 3 })
		md, err := c.nodes[2].Client().Metadata(ctx, &transport.MetadataRequest{})
		require.NoError(t, err)
		require.Contains(t, []int32{1, 2, 3}, md.ControllerID)
		resp, err := c.nodes[md.ControllerID].Client().CreateTopics(ctx, &transport.CreateTopicsRequest{Topics: []transport.CreatableTopic{
			{Name: "admin", Partitions: 2, ReplicationFactor: 3}}})
		require.NoError(t, err)
		require.NoError(t, resp.Topics[0].Err)
	})
}
