package partlog_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/replica"
	"github.com/partlog/partlog/transport"
	"github.com/partlog/partlog/vfs"
)

// adminTarget is what the admin workflow runs against: Kafka clients
// connected to it, its replication factor, and a way to read a partition's
// log start offset on every replica.
type adminTarget struct {
	cl       *kgo.Client
	adm      *kadm.Client
	rf       int16
	startsOf func(topic string, p int32) []int64 // one per replica
	controls int32                               // the node id DescribeCluster names
}

// TestAdminSingleNode runs Kafka's admin workflow, with franz-go's kadm,
// against one served node.
func TestAdminSingleNode(t *testing.T) {
	n, err := partlog.Open(t.TempDir(), partlog.GroupInitialRebalanceDelay(0))
	require.NoError(t, err)
	t.Cleanup(func() { n.Close() })
	addr := serveNode(t, n)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	internal, err := n.Client().CreatePartitions(context.Background(), &transport.CreatePartitionsRequest{
		Topics: []transport.PartitionCount{{Topic: "__consumer_offsets", Count: 60}}})
	require.NoError(t, err)
	require.ErrorIs(t, internal.Topics[0].Err, kafka.ErrInvalidPartitions, "an internal topic's partition count is fixed")
	testAdminWorkflow(t, adminTarget{cl: cl, adm: kadm.NewClient(cl), rf: 1, controls: n.NodeID(),
		startsOf: func(topic string, p int32) []int64 {
			l, err := partlogtest.Log(n, topic, p)
			require.NoError(t, err)
			return []int64{l.LogStartOffset()}
		}})
}

// TestAdminCluster runs the same workflow against a cluster of three
// nodes on loopback: admin calls reach the controller through whichever
// node the client asks, and followers follow what the leader did.
func TestAdminCluster(t *testing.T) {
	c := newTCPCluster(t, 1, 2, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[1], c.addrs[2], c.addrs[3]), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	testAdminWorkflow(t, adminTarget{cl: cl, adm: kadm.NewClient(cl), rf: 3, controls: -2,
		startsOf: func(topic string, p int32) []int64 {
			var starts []int64
			for _, n := range c.nodes {
				if l, err := partlogtest.Log(n, topic, p); err == nil {
					starts = append(starts, l.LogStartOffset())
				}
			}
			return starts
		}})
}

func testAdminWorkflow(t *testing.T, tg adminTarget) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := tg.adm
	const topic = "orders"

	// Create a topic and write ten records to its one partition.
	created, err := adm.CreateTopic(ctx, 1, tg.rf, map[string]*string{"retention.ms": kadm.StringPtr("86400000")}, topic)
	require.NoError(t, err)
	require.NoError(t, created.Err)
	for i := range 10 {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "v%d", i)}
		require.NoError(t, tg.cl.ProduceSync(ctx, r).FirstErr())
	}

	// Add partitions: 1 + 2. A count never shrinks or stays.
	cp, err := adm.CreatePartitions(ctx, 2, topic)
	require.NoError(t, err)
	require.NoError(t, cp[topic].Err)
	require.Eventually(t, func() bool {
		md, err := adm.Metadata(ctx, topic)
		return err == nil && len(md.Topics[topic].Partitions) == 3
	}, 10*time.Second, 10*time.Millisecond, "the metadata shows 3 partitions")
	up, err := adm.UpdatePartitions(ctx, 2, topic)
	require.NoError(t, err)
	require.ErrorIs(t, up[topic].Err, kerr.InvalidPartitions)
	r := &kgo.Record{Topic: topic, Partition: 2, Value: []byte("new partition")}
	require.Eventually(t, func() bool {
		tg.cl.ForceMetadataRefresh()
		return tg.cl.ProduceSync(ctx, r).FirstErr() == nil
	}, 10*time.Second, 10*time.Millisecond, "the client produces to the new partition 2 once its metadata has it")
	require.Equal(t, int64(0), r.Offset)

	// Alter configs incrementally, and see them take effect at once:
	// max.message.bytes refuses a large record on the leader.
	alter, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "retention.ms", Value: kadm.StringPtr("3600000")},
		{Name: "max.message.bytes", Value: kadm.StringPtr("2000")},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kadm.StringPtr("compact")},
	}, topic)
	require.NoError(t, err)
	require.NoError(t, alter[0].Err)
	configs := describedTopicConfigsWhen(ctx, t, adm, topic, "retention.ms", "3600000")
	require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, configs["retention.ms"].Source)
	require.Equal(t, "delete,compact", *configs["cleanup.policy"].Value)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, configs["segment.bytes"].Source)
	require.Eventually(t, func() bool {
		big := &kgo.Record{Topic: topic, Partition: 1, Key: []byte("k"), Value: incompressible(5000)}
		return errors.Is(tg.cl.ProduceSync(ctx, big).FirstErr(), kerr.MessageTooLarge)
	}, 10*time.Second, 10*time.Millisecond, "the leader refuses a 5000-byte record once max.message.bytes is 2000")
	bad, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "no.such.config", Value: kadm.StringPtr("1")}}, topic)
	require.NoError(t, err)
	require.ErrorIs(t, bad[0].Err, kerr.InvalidConfig)
	// Kafka's older AlterConfigs replaces the whole set.
	state, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("7200000")}}, topic)
	require.NoError(t, err)
	require.NoError(t, state[0].Err)
	configs = describedTopicConfigsWhen(ctx, t, adm, topic, "retention.ms", "7200000")
	require.Equal(t, "1048588", *configs["max.message.bytes"].Value, "AlterConfigs dropped the configs it did not name")
	require.Equal(t, "delete", *configs["cleanup.policy"].Value)
	require.Eventually(t, func() bool {
		big := &kgo.Record{Topic: topic, Partition: 1, Key: []byte("k"), Value: incompressible(5000)}
		return tg.cl.ProduceSync(ctx, big).FirstErr() == nil
	}, 10*time.Second, 10*time.Millisecond, "max.message.bytes is back to its default")

	// The broker's own configs, by Kafka's names, read-only.
	brokers, err := adm.DescribeBrokerConfigs(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, brokers)
	require.NoError(t, brokers[0].Err)
	bc := map[string]kadm.Config{}
	for _, c := range brokers[0].Configs {
		bc[c.Key] = c
	}
	require.Equal(t, "604800000", *bc["log.retention.ms"].Value)
	require.NotNil(t, bc["node.id"].Value)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, bc["log.retention.ms"].Source)

	// Delete the records before offset 4: the log start offset moves up,
	// on every replica, and a consumer from the start begins at 4.
	del, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 4}}})
	require.NoError(t, err)
	d := del[topic][0]
	require.NoError(t, d.Err)
	require.Equal(t, int64(4), d.LowWatermark)
	starts, err := adm.ListStartOffsets(ctx, topic)
	require.NoError(t, err)
	require.Equal(t, int64(4), starts[topic][0].Offset)
	require.Eventually(t, func() bool {
		s := tg.startsOf(topic, 0)
		for _, o := range s {
			if o != 4 {
				return false
			}
		}
		return len(s) == int(tg.rf)
	}, 10*time.Second, 10*time.Millisecond, "every replica's log start offset is 4")
	beyond, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 11}}})
	require.NoError(t, err)
	require.ErrorIs(t, beyond[topic][0].Err, kerr.OffsetOutOfRange)
	cons, err := kgo.NewClient(kgo.SeedBrokers(tg.cl.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	require.NoError(t, err)
	fetches := cons.PollRecords(ctx, 1)
	require.NoError(t, fetches.Err())
	require.Equal(t, int64(4), fetches.Records()[0].Offset)
	require.Equal(t, "v4", string(fetches.Records()[0].Value))
	cons.Close()

	// The cluster, the log directories, the producers, leader epochs.
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, tg.cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), dc.ErrorCode)
	require.Len(t, dc.Brokers, int(tg.rf))
	if tg.controls >= 0 {
		require.Equal(t, tg.controls, dc.ControllerID)
	}
	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}}})
	require.NoError(t, err)
	replicas := 0
	dirs.Each(func(d kadm.DescribedLogDir) {
		require.NoError(t, d.Err)
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			require.Equal(t, topic, p.Topic)
			require.Positive(t, p.Size)
			replicas++
		})
	})
	require.Equal(t, int(tg.rf), replicas, "a log dir entry for each replica of %s-0", topic)

	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
	require.NoError(t, err)
	dp := producers[topic].Partitions[0]
	require.NoError(t, dp.Err)
	require.Len(t, dp.ActiveProducers, 1, "kgo's idempotent producer wrote partition 0")
	for _, p := range dp.ActiveProducers {
		require.Equal(t, int32(9), p.LastSequence)
	}

	var epochs kadm.OffsetForLeaderEpochRequest
	epochs.Add(topic, 0, 0)
	ends, err := adm.OffsetForLeaderEpoch(ctx, epochs)
	require.NoError(t, err)
	e := ends[topic][0]
	require.NoError(t, e.Err)
	require.Equal(t, int32(0), e.LeaderEpoch)
	require.Equal(t, int64(10), e.EndOffset, "epoch 0 is current: its end is the log end offset")

	elect, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
	require.NoError(t, err)
	require.ErrorIs(t, elect[topic][0].Err, kerr.ElectionNotNeeded, "the preferred replica leads already")

	// Delete the topic.
	deleted, err := adm.DeleteTopic(ctx, topic)
	require.NoError(t, err)
	require.NoError(t, deleted.Err)
}

// describedTopicConfigsWhen returns a topic's configs by name, checking
// that the config key has value: read back at once, whichever node
// answers.
func describedTopicConfigsWhen(ctx context.Context, t *testing.T, adm *kadm.Client, topic, key, value string) map[string]kadm.Config {
	t.Helper()
	rc, err := adm.DescribeTopicConfigs(ctx, topic)
	require.NoError(t, err)
	require.Len(t, rc, 1)
	require.NoError(t, rc[0].Err)
	out := map[string]kadm.Config{}
	for _, c := range rc[0].Configs {
		out[c.Key] = c
	}
	require.NotNil(t, out[key].Value, "%s described", key)
	require.Equal(t, value, *out[key].Value, "%s described", key)
	return out
}

// incompressible returns n bytes no codec shrinks much, so that a record's
// batch is larger than n.
func incompressible(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// What the admin calls change — partitions added, configs altered, records
// deleted — is on disk when they answer: a crash right after, keeping only
// synced bytes, loses none of it.
func TestAdminChangesSurviveCrash(t *testing.T) {
	mem := vfs.NewMem()
	n := openNode(t, mem)
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "orders"}))
	for i := range 10 {
		resp, err := n.Client().Produce(ctx, &transport.ProduceRequest{Acks: kafka.AcksAll, Topics: []transport.ProduceTopic{
			{Topic: "orders", Partitions: []transport.ProducePartition{{Records: batchOf(fmt.Sprint(i))}}}}})
		require.NoError(t, err)
		require.NoError(t, resp.Topics[0].Partitions[0].Err)
	}
	cp, err := n.Client().CreatePartitions(ctx, &transport.CreatePartitionsRequest{Topics: []transport.PartitionCount{{Topic: "orders", Count: 3}}})
	require.NoError(t, err)
	require.NoError(t, cp.Topics[0].Err)
	ac, err := n.Client().AlterConfigs(ctx, &transport.AlterConfigsRequest{Resources: []transport.ConfigAlteration{{
		ConfigResource: transport.ConfigResource{Type: transport.ConfigTopic, Name: "orders"},
		Changes:        []transport.ConfigChange{{Name: "retention.ms", Value: "3600000"}}}}})
	require.NoError(t, err)
	require.NoError(t, ac.Resources[0].Err)
	dr, err := n.Client().DeleteRecords(ctx, &transport.DeleteRecordsRequest{Partitions: []transport.DeleteRecordsPartition{
		{TopicPartition: kafka.TopicPartition{Topic: "orders", Partition: 0}, Offset: 4}}})
	require.NoError(t, err)
	require.NoError(t, dr.Partitions[0].Err)
	require.Equal(t, int64(4), dr.Partitions[0].LowWatermark)

	crashed := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: vfs.KeepNone})
	partlogtest.Halt(n)
	n = openNode(t, crashed)
	defer n.Close()
	d, err := n.DescribeTopics("orders")
	require.NoError(t, err)
	require.Len(t, d[0].Partitions, 3)
	require.Equal(t, map[string]string{"retention.ms": "3600000"}, d[0].Configs)
	require.Equal(t, int64(4), d[0].Partitions[0].LogStartOffset)
	require.Equal(t, int64(10), d[0].Partitions[0].LogEndOffset)
}

// A ClusterClient sends each partition's DeleteRecords to its leader, as
// Kafka's admin clients do: partlog's CLI deletes records on a cluster
// through it.
func TestClusterClientDeleteRecords(t *testing.T) {
	c := newTCPCluster(t, 1, 2, 3)
	ctx := context.Background()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "events", Partitions: 3, ReplicationFactor: 3}))
	client, err := transport.DialCluster(ctx, []string{c.addrs[1]}, transport.DialOptions{})
	require.NoError(t, err)
	defer client.Close()
	acked := produceValues(t, client, "events", clusterValues(0, 60))
	leaders := map[int32]bool{}
	req := &transport.DeleteRecordsRequest{}
	for p := range int32(3) {
		require.NotEmpty(t, acked[p], "the key hash spreads 60 records over the 3 partitions")
		req.Partitions = append(req.Partitions, transport.DeleteRecordsPartition{TopicPartition: kafka.TopicPartition{Topic: "events", Partition: p}, Offset: 1})
		leaders[c.ctl.State().Topics["events"].Partitions[p].Leader] = true
	}
	require.Len(t, leaders, 3, "each partition has its own leader, so one node cannot answer for all")
	resp, err := client.DeleteRecords(ctx, req)
	require.NoError(t, err)
	require.Len(t, resp.Partitions, 3)
	for i, r := range resp.Partitions {
		require.Equal(t, req.Partitions[i].TopicPartition, r.TopicPartition)
		require.NoError(t, r.Err)
		require.Equal(t, int64(1), r.LowWatermark)
	}
}

// ElectLeaders moves a partition's leadership back to its preferred
// replica once that replica is back in the ISR, as kafka-leader-election.sh
// does; it answers ELECTION_NOT_NEEDED once the preferred replica leads.
func TestAdminClusterPreferredElection(t *testing.T) {
	c := newTCPCluster(t, 1, 2, 3)
	ctx := context.Background()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "events", ReplicationFactor: 3}))
	preferred := c.ctl.State().Topics["events"].Partitions[0].Replicas[0]
	c.halt(preferred)
	c.waitFor("another leader of events-0", func(s controller.ClusterState) bool {
		l := s.Topics["events"].Partitions[0].Leader
		return l != preferred && l != replica.NoLeader
	})
	c.start(preferred, c.addrs[preferred])
	c.waitFor("the preferred replica back in the ISR", func(s controller.ClusterState) bool {
		return len(s.Topics["events"].Partitions[0].ISR) == 3
	})
	var seeds []string
	for _, a := range c.addrs {
		seeds = append(seeds, a)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"events": {0: {}}})
	require.NoError(t, err)
	require.NoError(t, res["events"][0].Err)
	require.Equal(t, preferred, c.ctl.State().Topics["events"].Partitions[0].Leader, "the controller elected the preferred replica")
	res, err = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"events": {0: {}}})
	require.NoError(t, err)
	require.ErrorIs(t, res["events"][0].Err, kerr.ElectionNotNeeded)
}

// Incremental config changes made through different nodes of a cluster,
// one right after the other, both stay: the controller applies each to
// the configs it has, not to the set the node last heard of.
func TestAdminClusterIncrementalAlterThroughTwoNodes(t *testing.T) {
	c := newTCPCluster(t, 1, 2, 3)
	ctx := context.Background()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "events", ReplicationFactor: 3}))
	alter := func(n *partlog.Node, key, value string) {
		t.Helper()
		resp, err := n.Client().AlterConfigs(ctx, &transport.AlterConfigsRequest{Resources: []transport.ConfigAlteration{{
			ConfigResource: transport.ConfigResource{Type: transport.ConfigTopic, Name: "events"},
			Changes:        []transport.ConfigChange{{Name: key, Op: transport.ConfigSet, Value: value}}}}})
		require.NoError(t, err)
		require.NoError(t, resp.Resources[0].Err)
	}
	alter(c.nodes[1], "retention.ms", "3600000")
	alter(c.nodes[2], "segment.ms", "60000")
	alter(c.nodes[3], "max.message.bytes", "2000")
	require.Equal(t, map[string]string{"retention.ms": "3600000", "segment.ms": "60000", "max.message.bytes": "2000"},
		c.ctl.State().Topics["events"].Configs)
}

// A DeleteRecords whose new log start offsets cannot be checkpointed is
// not answered as done: a restart could bring the records back.
func TestAdminDeleteRecordsCheckpointFails(t *testing.T) {
	var armed atomic.Bool
	fsys := vfs.WithFaults(vfs.NewMem(), vfs.InjectorFunc(func(op vfs.Op) error {
		if armed.Load() && op.Kind == vfs.OpCreate && strings.Contains(op.Path, "log-start-offset-checkpoint") {
			return syscall.ENOSPC
		}
		return nil
	}))
	n := openNode(t, fsys)
	defer n.Close()
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "orders"}))
	for i := range 3 {
		require.NoError(t, produce(t, n, "orders", 0, fmt.Sprint(i)).Err)
	}
	armed.Store(true)
	dr, err := n.Client().DeleteRecords(ctx, &transport.DeleteRecordsRequest{Partitions: []transport.DeleteRecordsPartition{
		{TopicPartition: kafka.TopicPartition{Topic: "orders", Partition: 0}, Offset: 2}}})
	armed.Store(false)
	require.NoError(t, err)
	require.ErrorIs(t, dr.Partitions[0].Err, kafka.ErrKafkaStorage)
}
