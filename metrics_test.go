package partlog_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/controller"
	"github.com/partlog/partlog/partlogtest"
	"github.com/partlog/partlog/transport"
)

// scrape fetches a node's metrics as Prometheus does, over HTTP in the
// text exposition format, and parses them.
func scrape(t *testing.T, n *partlog.Node) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(n.Metrics().Registry, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// value returns the value of family's metric whose labels are labels
// (name, value pairs): a counter's, a gauge's or a histogram's count; -1
// when there is none.
func value(families map[string]*dto.MetricFamily, family string, labels ...string) float64 {
	f, ok := families[family]
	if !ok {
		return -1
	}
	for _, m := range f.Metric {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}
			match = match && found
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestMetrics scrapes a node's metrics while franz-go produces to it and
// reads back over TCP: the records and bytes appended and fetched per
// topic, the requests per API with their times, the partitions the node
// hosts and leads, and its controller's activity, each as the load makes
// it.
func TestMetrics(t *testing.T) {
	n, err := partlog.Open(t.TempDir())
	require.NoError(t, err)
	defer n.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, n.CreateTopic(ctx, partlog.NewTopic{Name: "watched", Partitions: 3}))
	before := scrape(t, n)
	require.Equal(t, 3.0, value(before, "kafka_server_replicamanager_partitioncount"))
	require.Equal(t, 3.0, value(before, "kafka_server_replicamanager_leadercount"))
	require.Equal(t, 0.0, value(before, "kafka_server_replicamanager_underreplicatedpartitions"))
	require.Equal(t, 0.0, value(before, "kafka_controller_kafkacontroller_offlinepartitionscount"))
	require.Equal(t, 1.0, value(before, "kafka_controller_kafkacontroller_activecontrollercount"), "a node on its own runs the active controller")
	require.Equal(t, -1.0, value(before, "kafka_server_brokertopicmetrics_messagesin_total", "topic", "watched"))

	addr := serveWith(t, n.Client(), transport.ServerOptions{Observer: n.Metrics()})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("watched"),
		kgo.ConsumeTopics("watched"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cl.Close()
	const total = 500
	for i := range total {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: make([]byte, 100+i%50)}).FirstErr())
	}
	for got := 0; got < total; {
		fs := cl.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		got += fs.NumRecords()
	}
	d, err := n.DescribeTopics("watched")
	require.NoError(t, err)
	var stored int64
	for _, p := range d[0].Partitions {
		stored += p.Size
	}

	after := scrape(t, n)
	require.Equal(t, float64(total), value(after, "kafka_server_brokertopicmetrics_messagesin_total", "topic", "watched"))
	require.Equal(t, float64(stored), value(after, "kafka_server_brokertopicmetrics_bytesin_total", "topic", "watched"),
		"bytes in are the batches the partitions hold")
	require.GreaterOrEqual(t, value(after, "kafka_server_brokertopicmetrics_bytesout_total", "topic", "watched"), float64(stored),
		"every stored byte was fetched")
	produces := value(after, "kafka_network_requestmetrics_requests_total", "request", "Produce", "error", "false")
	require.GreaterOrEqual(t, produces, float64(total), "one ProduceSync a request")
	require.Equal(t, produces, value(after, "kafka_network_requestmetrics_totaltime_seconds", "request", "Produce"), "each timed")
	require.Greater(t, value(after, "kafka_network_requestmetrics_requests_total", "request", "Fetch", "error", "false"), 0.0)
	require.Greater(t, value(after, "kafka_network_requestmetrics_requests_total", "request", "Metadata", "error", "false"), 0.0)
	require.Greater(t, value(after, "go_goroutines"), 0.0, "the runtime's collector")
	require.GreaterOrEqual(t, value(after, "kafka_log_logflushstats_logflush_seconds"), 1.0,
		"the topic syncs before it acknowledges (flush.messages=1): flushes are timed")

	// A group that committed offset 10 of partition 0 lags by the rest.
	commit, err := n.Client().OffsetCommit(ctx, &transport.OffsetCommitRequest{Group: "lagging", GenerationID: -1,
		Topics: []transport.OffsetCommitTopic{{Topic: "watched", Partitions: []transport.OffsetCommitPartition{{Partition: 0, Offset: 10, LeaderEpoch: -1}}}}})
	require.NoError(t, err)
	require.NoError(t, commit.Topics[0].Partitions[0].Err)
	hw := d[0].Partitions[0].HighWatermark
	require.Greater(t, hw, int64(10))
	lagged := scrape(t, n)
	require.Equal(t, float64(hw-10), value(lagged, "kafka_consumergroup_lag", "consumergroup", "lagging", "topic", "watched", "partition", "0"))
	require.Equal(t, -1.0, value(lagged, "kafka_consumergroup_lag", "consumergroup", "lagging", "topic", "watched", "partition", "1"),
		"no lag where the group committed nothing")
}

// TestClusterMetrics: when a node stops, the leaders of its partitions
// count them under-replicated and their ISR shrinks, and ISR expansions
// and no under-replicated partition once it is back; no node of a cluster
// whose controller runs apart says it is the active controller.
func TestClusterMetrics(t *testing.T) {
	c := newTCPCluster(t, 1, 2, 3)
	ctx := context.Background()
	require.NoError(t, c.nodes[1].CreateTopic(ctx, partlog.NewTopic{Name: "replicated", Partitions: 3, ReplicationFactor: 3,
		Configs: map[string]string{"min.insync.replicas": "3"}}))
	for id := int32(1); id <= 3; id++ {
		s := scrape(t, c.nodes[id])
		require.Equal(t, 3.0, value(s, "kafka_server_replicamanager_partitioncount"), "node %d", id)
		require.Equal(t, 0.0, value(s, "kafka_server_replicamanager_underreplicatedpartitions"), "node %d", id)
		require.Equal(t, 0.0, value(s, "kafka_controller_kafkacontroller_activecontrollercount"), "node %d", id)
	}
	ledElsewhere := 0.0 // the partitions whose leader stays: their ISRs shrink
	for _, p := range c.ctl.State().Topics["replicated"].Partitions {
		if p.Leader != 3 {
			ledElsewhere++
		}
	}
	c.halt(3)
	c.waitFor("node 3 out of every ISR", func(s controller.ClusterState) bool {
		for _, p := range s.Topics["replicated"].Partitions {
			if slices.Contains(p.ISR, 3) {
				return false
			}
		}
		return true
	})
	led, shrinks := 0.0, 0.0
	for id := int32(1); id <= 2; id++ {
		require.NoError(t, partlogtest.SyncMetadata(ctx, c.nodes[id]))
		s := scrape(t, c.nodes[id])
		leaders := value(s, "kafka_server_replicamanager_leadercount")
		require.Equal(t, leaders, value(s, "kafka_server_replicamanager_underreplicatedpartitions"), "node %d: every partition it leads", id)
		require.Equal(t, leaders, value(s, "kafka_cluster_partition_underminisr"), "node %d: below min.insync.replicas=3", id)
		led += leaders
		shrinks += value(s, "kafka_server_replicamanager_isrshrinks_total")
	}
	require.Equal(t, 3.0, led, "nodes 1 and 2 lead the three partitions")
	require.Equal(t, ledElsewhere, shrinks, "one shrink of the ISR of each partition whose leader stayed (node 3's get new leaders)")

	// Node 3 comes back: each partition's leader takes it into the ISR.
	c.start(3, c.addrs[3])
	c.waitFor("node 3 in every ISR", func(s controller.ClusterState) bool {
		for _, p := range s.Topics["replicated"].Partitions {
			if !slices.Contains(p.ISR, 3) {
				return false
			}
		}
		return true
	})
	expands := 0.0
	for id := int32(1); id <= 2; id++ {
		require.NoError(t, partlogtest.SyncMetadata(ctx, c.nodes[id]))
		s := scrape(t, c.nodes[id])
		require.Equal(t, 0.0, value(s, "kafka_server_replicamanager_underreplicatedpartitions"), "node %d", id)
		expands += value(s, "kafka_server_replicamanager_isrexpands_total")
	}
	require.Equal(t, 3.0, expands, "one expansion of each partition's ISR")
}
